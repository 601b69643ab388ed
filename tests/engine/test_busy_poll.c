/*
 * ZR_BUSY_POLL: the option is stored, read back and range-checked; a
 * REQ/REP exchange and a PUSH/PULL stream through a tiny handoff work with
 * it set on both sides, with the app threads spinning as well as the io
 * threads (the context's busy_app is forced on: on fewer than four CPUs a
 * context spins its io thread only); and an idle socket does not go on
 * spinning: the process's CPU time over an idle second stays far below a
 * second (a resource measurement, never a duration).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "engine/engine.h"
#include "sock_helpers.h"

#define BP_US 20000 /* 20 ms windows: long enough to show an unbounded spin */
#define BP_TRIPS 500
#define BP_STREAM 20000
#define BP_WAIT_MS 15000

static zr_ctx *
ctx_spinning_apps(void)
{
	zr_ctx *ctx;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	ctx->busy_app = true; /* set before any socket exists: app threads only read it */
	return ctx;
}

Test(engine_busy_poll, option_stored_read_validated)
{
	zr_ctx *ctx;
	zr_socket *s;
	long wide = 5;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_REQ, &s), 0);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), 0, "off by default");
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, 50), 0);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), 50);
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, -1), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, INT32_MIN), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, ZR__BUSY_POLL_MAX + 1), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_BUSY_POLL, &wide, sizeof wide), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), 50, "a refused value leaves the old one");
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, ZR__BUSY_POLL_MAX), 0);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), ZR__BUSY_POLL_MAX);
	cr_assert_eq(sset_int(s, ZR_BUSY_POLL, 0), 0);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), 0);
	/* Every type takes it. */
	zr_socket *p;
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &p), 0);
	cr_assert_eq(sset_int(p, ZR_BUSY_POLL, 7), 0);
	cr_assert_eq(sget_int(p, ZR_BUSY_POLL), 7);
	sock_pair_free(ctx, s, p);
}

/* REQ and REP in contexts of their own (an io thread each), both spinning. */
static void
reqrep_trips(zr_socket *req, zr_socket *rep, int trips)
{
	char buf[64], got[65];

	for (int i = 0; i < trips; i++) {
		int n = snprintf(buf, sizeof buf, "request %d", i);

		cr_assert_eq(zr_send_bytes(req, buf, (size_t)n, 0), 0, "send %d", i);
		cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, 0), n, "request %d", i);
		cr_assert_eq(memcmp(got, buf, (size_t)n), 0);
		buf[0] = 'R';
		cr_assert_eq(zr_send_bytes(rep, buf, (size_t)n, 0), 0, "reply %d", i);
		cr_assert_eq(zr_recv_bytes(req, got, sizeof got, 0), n, "reply %d", i);
		cr_assert_eq(memcmp(got, buf, (size_t)n), 0);
	}
}

Test(engine_busy_poll, reqrep_exchange_then_idle_does_not_spin)
{
	zr_ctx *cr = ctx_spinning_apps(), *cq = ctx_spinning_apps();
	zr_socket *rep, *req;
	char ep[128], got[8];

	cr_assert_eq(zr_socket_open(cr, ZR_REP, &rep), 0);
	cr_assert_eq(zr_socket_open(cq, ZR_REQ, &req), 0);
	cr_assert_eq(sset_int(rep, ZR_BUSY_POLL, BP_US), 0);
	cr_assert_eq(sset_int(req, ZR_BUSY_POLL, BP_US), 0);
	sopt_int(rep, ZR_RCVTIMEO, BP_WAIT_MS);
	sopt_int(req, ZR_RCVTIMEO, BP_WAIT_MS);
	sock_bind_connect(rep, "tcp://127.0.0.1:0", req, ep, sizeof ep);
	reqrep_trips(req, rep, BP_TRIPS);

	/* Idle: REP waits a second for a request that never comes. Bounded
	 * spins cost a few 20 ms windows (the app thread's, one per io thread
	 * turn); a spin that never ended would cost about a second per thread
	 * (and more than a third of one under heavy load). */
	sopt_int(rep, ZR_RCVTIMEO, 1000);
	double c0 = cpu_s();
	cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, 0), -EAGAIN);
	double idle = cpu_s() - c0;
	cr_assert_lt(idle, 0.3, "an idle second cost %.3f s of CPU", idle);

	/* A non-blocking receive never spins. */
	cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, ZR_DONTWAIT), -EAGAIN);
	/* And the pair still works after the idle spell. */
	sopt_int(rep, ZR_RCVTIMEO, BP_WAIT_MS);
	reqrep_trips(req, rep, 10);
	sopt_int(rep, ZR_LINGER, 0);
	sopt_int(req, ZR_LINGER, 0);
	zr_socket_close(rep);
	zr_socket_close(req);
	zr_ctx_free(cr);
	zr_ctx_free(cq);
}

/* The send side's spin: a 4-slot handoff that is full most of the time. */
Test(engine_busy_poll, push_waits_for_room_spinning)
{
	zr_ctx *cp = ctx_spinning_apps(), *cs = ctx_spinning_apps();
	zr_socket *pull, *push;
	char ep[128];
	uint32_t v;

	cr_assert_eq(zr_socket_open(cp, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(cs, ZR_PUSH, &push), 0);
	sopt_int(push, ZR_SNDHWM, 4);
	sopt_int(pull, ZR_RCVHWM, 4);
	cr_assert_eq(sset_int(push, ZR_BUSY_POLL, BP_US), 0);
	cr_assert_eq(sset_int(pull, ZR_BUSY_POLL, BP_US), 0);
	sopt_int(push, ZR_SNDTIMEO, BP_WAIT_MS);
	sopt_int(pull, ZR_RCVTIMEO, BP_WAIT_MS);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	uint32_t next = 0;
	for (uint32_t i = 0; i < BP_STREAM; i++) {
		cr_assert_eq(zr_send_bytes(push, &i, sizeof i, 0), 0, "send %u", i);
		if (i % 2 == 1) { /* the reader lags, so the sender meets a full queue */
			cr_assert_eq(zr_recv_bytes(pull, &v, sizeof v, 0), (int)sizeof v);
			cr_assert_eq(v, next, "message %u", next);
			next++;
		}
	}
	for (; next < BP_STREAM; next++) {
		cr_assert_eq(zr_recv_bytes(pull, &v, sizeof v, 0), (int)sizeof v, "message %u",
		             next);
		cr_assert_eq(v, next);
	}
	zr_socket_close(pull);
	zr_socket_close(push);
	zr_ctx_free(cp);
	zr_ctx_free(cs);
}
