/*
 * ZR_MAXFRAMES, the frames-per-message limit on receive, and the per-frame
 * cost the byte budgets count: a message of empty frames is not free.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "engine/engine.h"
#include "rx_queued.h"
#include "sock_helpers.h"

#define WAIT_MS 10000

static zr_msg *
empty_frames(size_t n)
{
	zr_msg *m;

	cr_assert_eq(zr_msg_new(&m), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(zr_msg_add(m, "", 0), 0);
	return m;
}

static void
send_frames(zr_socket *s, size_t n)
{
	zr_msg *m = empty_frames(n);

	cr_assert_eq(zr_send(s, &m, 0), 0);
}

Test(engine_maxframes, defaults_to_65536_and_takes_minus_1_but_not_0)
{
	zr_ctx *ctx;
	zr_socket *s;
	size_t len = sizeof(int);
	int v = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &s), 0);
	cr_assert_eq(zr_getsockopt(s, ZR_MAXFRAMES, &v, &len), 0);
	cr_assert_eq(v, 65536);
	cr_assert_eq(len, sizeof(int));
	v = 0;
	cr_assert_eq(zr_setsockopt(s, ZR_MAXFRAMES, &v, sizeof v), -EINVAL);
	v = -2;
	cr_assert_eq(zr_setsockopt(s, ZR_MAXFRAMES, &v, sizeof v), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_MAXFRAMES, &v, 2), -EINVAL);
	sopt_int(s, ZR_MAXFRAMES, -1);
	cr_assert_eq(zr_getsockopt(s, ZR_MAXFRAMES, &v, &len), 0);
	cr_assert_eq(v, -1);
	sopt_int(s, ZR_MAXFRAMES, 1);
	cr_assert_eq(zr_getsockopt(s, ZR_MAXFRAMES, &v, &len), 0);
	cr_assert_eq(v, 1);
	zr_socket_close(s);
	zr_ctx_free(ctx);
}

/* The next event of that type, skipping others. */
static bool
next_event(zr_socket *s, int type, struct zr_event *ev)
{
	for (;;) {
		if (zr_monitor_recv(s, ev, WAIT_MS) < 0)
			return false;
		if (ev->type == type)
			return true;
	}
}

Test(engine_maxframes, a_message_over_the_limit_closes_the_link_and_one_at_it_passes)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	struct zr_event ev;
	char ep[128];
	zr_msg *m = NULL;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_MAXFRAMES, 4);
	sopt_int(pull, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(push, ZR_SNDTIMEO, WAIT_MS);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);

	send_frames(push, 4);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 4);
	zr_msg_free(m);

	cr_assert(next_event(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED, &ev));
	send_frames(push, 5);
	cr_assert(next_event(pull, ZR_EVENT_DISCONNECTED, &ev),
	          "the link over the limit was not closed");
	cr_assert_str_eq(ev.reason, "message has more frames than the limit");

	/* The PUSH reconnects (a message sent before it noticed would be lost
	 * with the old link); nothing of the refused message arrives, the next
	 * one within the limit does. */
	cr_assert(next_event(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED, &ev),
	          "the PUSH did not come back");
	send_frames(push, 3);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 3);
	zr_msg_free(m);
	cr_assert_eq(zr_recv(pull, &m, ZR_DONTWAIT), -EAGAIN);
	sock_pair_free(ctx, push, pull);
}

Test(engine_maxframes, rcvbytes_counts_16_octets_per_frame)
{
	enum {
		FRAMES = 1024,
		SENT = 40,
		BUDGET = 4 * FRAMES * 16
	};
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	size_t queued;
	zr_msg *m;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_i64(pull, ZR_RCVBYTES, BUDGET); /* four messages of 1024 empty frames */
	sopt_int(pull, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(push, ZR_SNDTIMEO, WAIT_MS);
	sock_bind_connect(pull, "ipc://@zring-maxframes-budget", push, ep, sizeof ep);

	/* 2 KiB each on the wire: all fit in the kernel and SNDHWM, so they
	 * reach the receiver's side, which stops at its budget. Without the
	 * frame cost they would count 0 octets and all 40 would queue. */
	for (int i = 0; i < SENT; i++)
		send_frames(push, FRAMES);
	queued = rx_queued_settled(pull, 1, WAIT_MS, 300);
	cr_assert_leq(queued, 4u, "%zu messages of %d frames queued past a %d octet budget", queued,
	              FRAMES, BUDGET);
	cr_assert_geq(queued, 1u);
	cr_assert_leq(pull->rx_given - atomic_load(&pull->rx_taken), (size_t)BUDGET);

	for (int i = 0; i < SENT; i++) {
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %d", i);
		cr_assert_eq(zr_msg_frames(m), FRAMES);
		zr_msg_free(m);
	}
	sock_pair_free(ctx, push, pull);
}

/* A sender whose receiver stalls holds its SNDBYTES budget twice (its own
 * queue and the peer's) plus what the kernel and the stalled receiver hold:
 * a few dozen messages of 1024 empty frames. Without the frame cost those
 * messages count 0 octets, and only SNDHWM (1000) would stop it. */
Test(engine_maxframes, sndbytes_counts_16_octets_per_frame)
{
	enum {
		FRAMES = 1024,
		BUDGET = 4 * FRAMES * 16,
		TRIES = 1500
	};
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	zr_msg *m = NULL;
	int sent = 0, rc = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_i64(push, ZR_SNDBYTES, BUDGET);
	sopt_int(push, ZR_SNDBUF, 4096);
	sopt_int(pull, ZR_RCVBUF, 4096);
	sopt_int(pull, ZR_RCVHWM, 1);
	sopt_int(pull, ZR_RCVTIMEO, WAIT_MS);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	/* One through first: the link is up, so the sends below only queue. */
	send_frames(push, 1);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	zr_msg_free(m);

	while (sent < TRIES) {
		m = empty_frames(FRAMES);
		rc = zr_send(push, &m, ZR_DONTWAIT);
		if (rc < 0) {
			/* The io thread may still be moving the last ones on: a
			 * few more tries after a pause, then it is full. */
			sleep_ms(50);
			rc = zr_send(push, &m, ZR_DONTWAIT);
			if (rc < 0)
				break;
		}
		sent++;
	}
	cr_assert_eq(rc, -EAGAIN, "%d sent", sent);
	zr_msg_free(m);
	cr_log_info("%d messages of %d empty frames queued", sent, FRAMES);
	cr_assert_lt(sent, 200, "%d messages of %d frames queued past two %d octet budgets", sent,
	             FRAMES, BUDGET);
	sock_pair_free(ctx, push, pull);
}
