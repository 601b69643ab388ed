/*
 * Heartbeats against a real libzmq peer: a peer frozen with SIGSTOP answers
 * no PING, so the connection is dropped about HEARTBEAT_TIMEOUT (plus one
 * interval) later; after SIGCONT the connecter comes back and traffic flows.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

#include "pyspawn.h"
#include "sock_helpers.h"
#include "zt_clock.h"

/* A pyzmq REP on a given port that answers "pong" to anything, polling so
 * libzmq keeps processing its commands. */
static const char peer_script[] =
	"import sys, zmq\n"
	"c = zmq.Context(); s = c.socket(zmq.REP); s.bind('tcp://127.0.0.1:' + sys.argv[1])\n"
	"print('up', flush=True)\n"
	"while True:\n"
	"    if s.poll(50):\n"
	"        s.recv(); s.send(b'pong')\n";

static pid_t
peer_start(int port)
{
	char p[16];

	snprintf(p, sizeof p, "%d", port);
	return pyspawn(peer_script, p);
}

static int
next_event(zr_socket *s, int type, int timeout_ms)
{
	struct zr_event ev;
	uint64_t end = zt_now_ms() + (uint64_t)timeout_ms;

	while (zt_now_ms() < end) {
		if (zr_monitor_recv(s, &ev, (int)(end - zt_now_ms())) == 0 && ev.type == type)
			return 0;
	}
	return -ETIMEDOUT;
}

Test(engine_heartbeat, a_frozen_libzmq_peer_is_dropped_within_the_timeout_and_comes_back,
     .timeout = 60)
{
	zr_ctx *ctx;
	zr_socket *req;
	char ep[64], buf[8];
	/* A generous timeout: a stall of either process must not drop the link
	 * while the peer runs. */
	int port = (int)free_tcp_port(), ivl = 100, timeout = 1000, rto = 10000, zero = 0;
	pid_t peer = peer_start(port);
	uint64_t t0, dt;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_REQ, &req), 0);
	cr_assert_eq(zr_setsockopt(req, ZR_HEARTBEAT_IVL, &ivl, sizeof ivl), 0);
	cr_assert_eq(zr_setsockopt(req, ZR_HEARTBEAT_TIMEOUT, &timeout, sizeof timeout), 0);
	cr_assert_eq(zr_setsockopt(req, ZR_RCVTIMEO, &rto, sizeof rto), 0);
	cr_assert_eq(zr_socket_monitor(req, ZR_EVENT_HANDSHAKE_SUCCEEDED | ZR_EVENT_DISCONNECTED),
	             0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
	cr_assert_eq(zr_connect(req, ep), 0);
	cr_assert_eq(next_event(req, ZR_EVENT_HANDSHAKE_SUCCEEDED, 10000), 0);
	cr_assert_eq(zr_send_bytes(req, "ping", 4, 0), 0);
	cr_assert_eq(zr_recv_bytes(req, buf, sizeof buf, 0), 4);

	/* Alive and answering PONGs: no disconnect over twice the timeout. */
	cr_assert_eq(next_event(req, ZR_EVENT_DISCONNECTED, 2 * timeout), -ETIMEDOUT);

	cr_assert_eq(kill(peer, SIGSTOP), 0);
	t0 = zt_now_ms();
	cr_assert_eq(next_event(req, ZR_EVENT_DISCONNECTED, 15000), 0,
	             "the frozen peer was never dropped");
	dt = zt_now_ms() - t0;
	/* Detected after the first unanswered PING times out: one interval to
	 * send it plus the timeout, and a loaded machine may add to that; the
	 * bound only says the timeout, not some later failure, dropped it. */
	cr_assert_leq(dt, (uint64_t)(ivl + timeout + 3000), "took %llu ms", (unsigned long long)dt);

	cr_assert_eq(kill(peer, SIGCONT), 0);
	cr_assert_eq(next_event(req, ZR_EVENT_HANDSHAKE_SUCCEEDED, 10000), 0,
	             "no reconnect after SIGCONT");

	pykill(peer);
	zr_setsockopt(req, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(req);
	zr_ctx_free(ctx);
}
