/*
 * zr_socket_poll_events: ZR_POLLOUT means a send would not block now (a
 * non-blocking send then succeeds), its absence arms zr_socket_fd for the
 * moment room comes; ZR_POLLIN likewise for messages; REQ/REP states; a
 * connecter to an inproc name nobody bound has POLLOUT at once (libzmq).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zring/zring.h>

#include "ctx_fixture.h"
#include "sock_helpers.h"

CTX_SUITE(readiness, 60);

static zr_socket *
open_sock(int type, int hwm)
{
	zr_socket *s;

	cr_assert_eq(zr_socket_open(ctx, type, &s), 0);
	sopt_int(s, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(s, ZR_SNDTIMEO, WAIT_MS);
	sopt_int(s, ZR_LINGER, 0);
	if (hwm > 0) {
		sopt_int(s, ZR_SNDHWM, hwm);
		sopt_int(s, ZR_RCVHWM, hwm);
	}
	return s;
}

static bool
fd_readable(zr_socket *s, int ms)
{
	struct pollfd p = {.fd = zr_socket_fd(s), .events = POLLIN};

	return poll(&p, 1, ms) == 1;
}

/* Waits on the fd, as an event loop does, until poll_events has bit. */
static bool
wait_for(zr_socket *s, int bit)
{
	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		if (zr_socket_poll_events(s) & bit)
			return true;
		(void)fd_readable(s, 100);
	}
	return false;
}

/* The edge: after poll_events left bit out, only the fd's wake (no
 * polling loop) tells the caller it came. */
static void
expect_edge(zr_socket *s, int bit)
{
	cr_assert(fd_readable(s, WAIT_MS), "the fd did not wake for bit %d", bit);
	cr_assert(wait_for(s, bit), "woken, but bit %d did not come", bit);
}

Test(readiness, pollout_is_honest_and_its_edge_wakes)
{
	zr_socket *push = open_sock(ZR_PUSH, 4), *pull = open_sock(ZR_PULL, 4);
	int sent = 0, quiet = 0;
	char buf[16];

	cr_assert_eq(zr_bind(pull, "inproc://ready-hwm"), 0);
	cr_assert_eq(zr_connect(push, "inproc://ready-hwm"), 0);
	cr_assert(wait_for(push, ZR_POLLOUT));
	/* Every POLLOUT is a send that goes without waiting, until the pipe
	 * (handoff, sender's and receiver's queues) is full and stays so.
	 * A quiet fd only suggests it is full: an io thread starved of the
	 * CPU leaves the handoff full (no POLLOUT, no wake) before it moved
	 * anything into the pipe, and makes room later. So the test waits
	 * (WAIT_MS) for at least SNDHWM + RCVHWM, libzmq's figure, and then
	 * for a failing send with POLLOUT off; a send that goes then counts. */
	for (;;) {
		int rc;

		if (zr_socket_poll_events(push) & ZR_POLLOUT) {
			cr_assert_eq(zr_send_bytes(push, "m", 1, ZR_DONTWAIT), 0,
			             "POLLOUT, yet the send would block (after %d)", sent);
			sent++;
			quiet = 0;
			cr_assert_lt(sent, 1000, "HWM 4 never filled");
		} else if (!fd_readable(push, 200) && ++quiet >= 3) {
			cr_assert(sent >= 8 || quiet < WAIT_MS / 200,
			          "the pipe holds at least SNDHWM + RCVHWM (%d)", sent);
			if (sent < 8)
				continue;
			rc = zr_send_bytes(push, "m", 1, ZR_DONTWAIT);
			if (rc == -EAGAIN && !(zr_socket_poll_events(push) & ZR_POLLOUT))
				break;
			cr_assert(rc == 0 || rc == -EAGAIN, "send: %d", rc);
			sent += rc == 0;
			quiet = 0;
			cr_assert_lt(sent, 1000, "HWM 4 never filled");
		}
	}
	cr_assert_geq(sent, 8, "the pipe holds at least SNDHWM + RCVHWM (%d)", sent);
	/* The reader takes everything: the sender's fd wakes with POLLOUT. */
	for (int i = 0; i < sent; i++)
		cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 1, "message %d", i);
	expect_edge(push, ZR_POLLOUT);
	zr_socket_close(push);
	zr_socket_close(pull);
}

Test(readiness, inproc_connect_before_bind_has_pollout)
{
	zr_socket *push = open_sock(ZR_PUSH, 0), *pull = open_sock(ZR_PULL, 0);
	char buf[16];

	cr_assert_eq(zr_connect(push, "inproc://ready-later"), 0);
	/* libzmq: the pipe exists from the connect on. */
	cr_assert(zr_socket_poll_events(push) & ZR_POLLOUT);
	cr_assert_eq(zr_send_bytes(push, "early", 5, ZR_DONTWAIT), 0);
	cr_assert_eq(zr_bind(pull, "inproc://ready-later"), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 5);
	cr_assert_eq(memcmp(buf, "early", 5), 0);
	zr_socket_close(push);
	zr_socket_close(pull);
}

Test(readiness, bound_push_waits_for_its_first_peer)
{
	zr_socket *push = open_sock(ZR_PUSH, 0), *pull = open_sock(ZR_PULL, 0);
	char ep[128];

	cr_assert_eq(zr_bind(push, "tcp://127.0.0.1:*"), 0);
	endpoint_of(push, ep, sizeof ep);
	cr_assert_eq(zr_socket_poll_events(push), 0, "no peer: no POLLOUT");
	cr_assert_eq(zr_send_bytes(push, "x", 1, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(zr_connect(pull, ep), 0);
	expect_edge(push, ZR_POLLOUT);
	cr_assert_eq(zr_send_bytes(push, "x", 1, ZR_DONTWAIT), 0);
	zr_socket_close(push);
	zr_socket_close(pull);
}

Test(readiness, pollin_edge)
{
	zr_socket *push = open_sock(ZR_PUSH, 0), *pull = open_sock(ZR_PULL, 0);
	char buf[16];

	cr_assert_eq(zr_bind(pull, "inproc://ready-in"), 0);
	cr_assert_eq(zr_connect(push, "inproc://ready-in"), 0);
	cr_assert_eq(zr_socket_poll_events(pull), 0);
	cr_assert_eq(zr_send_bytes(push, "in", 2, 0), 0);
	expect_edge(pull, ZR_POLLIN);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT), 2);
	cr_assert_eq(zr_socket_poll_events(pull), 0);
	zr_socket_close(push);
	zr_socket_close(pull);
}

Test(readiness, req_rep_states)
{
	zr_socket *req = open_sock(ZR_REQ, 0), *rep = open_sock(ZR_REP, 0);
	char buf[16];

	cr_assert_eq(zr_bind(rep, "inproc://ready-rr"), 0);
	cr_assert_eq(zr_connect(req, "inproc://ready-rr"), 0);
	cr_assert_eq(zr_socket_poll_events(req), ZR_POLLOUT, "REQ: may ask, nothing to read");
	cr_assert_eq(zr_socket_poll_events(rep), 0, "REP: nothing to answer");
	cr_assert_eq(zr_send_bytes(req, "q", 1, 0), 0);
	cr_assert_eq(zr_socket_poll_events(req), 0, "REQ: waiting, no reply yet");
	expect_edge(rep, ZR_POLLIN);
	cr_assert_eq(zr_socket_poll_events(rep), ZR_POLLIN, "REP: no POLLOUT before the receive");
	cr_assert_eq(zr_recv_bytes(rep, buf, sizeof buf, 0), 1);
	cr_assert_eq(zr_socket_poll_events(rep), ZR_POLLOUT);
	cr_assert_eq(zr_send_bytes(rep, "a", 1, 0), 0);
	expect_edge(req, ZR_POLLIN);
	cr_assert_eq(zr_socket_poll_events(req), ZR_POLLIN, "REQ: no POLLOUT before the reply");
	cr_assert_eq(zr_recv_bytes(req, buf, sizeof buf, 0), 1);
	cr_assert_eq(zr_socket_poll_events(req), ZR_POLLOUT);
	zr_socket_close(req);
	zr_socket_close(rep);
}
