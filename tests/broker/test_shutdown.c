/*
 * Broker shutdown (ruststream.md §14, §20 behaviour 83): an idle broker shuts
 * down at once and without error, and every handle that survives it -
 * publishers of all three patterns, the broker itself for new subscriptions -
 * then fails with -ENOTCONN. (The drain of busy handlers is behaviour 73, in
 * test_dispatch.c; requests waiting at shutdown, behaviour 61, in
 * test_rpc.c.)
 *
 * "At once" is bounded loosely: well under the 5 s default drain timeout, so
 * a shutdown that waited out the drain on an idle broker fails.
 */
#include "broker/broker_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* An idle started broker of pattern with a bound subscription "jobs" that
 * has handled one message from its own publisher. */
struct idle {
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub;
	zr_publisher *p;
	struct bu_log log;
};

static void
responder(const struct zr_delivery *d, void *arg)
{
	struct idle *t = arg;
	zr_publisher *rp = NULL;

	bu_log_handler(d, &t->log);
	/* One reply publisher per call keeps the handler free of shared state. */
	if (zr_publisher_new(t->b, &rp) == 0) {
		zr_reply(rp, d, NULL, 0, "pong", 4);
		zr_publisher_free(rp);
	}
}

static void
idle_open(struct idle *t, int pattern)
{
	struct zr_sub_opts o = {.handler = pattern == ZR_RPC ? responder : bu_log_handler,
	                        .arg = pattern == ZR_RPC ? (void *)t : (void *)&t->log};
	int rc;

	memset(t, 0, sizeof *t);
	bu_log_init(&t->log);
	cr_assert_eq(zr_ctx_new(&t->ctx), 0);
	t->b = bu_broker(t->ctx, pattern, "tcp://127.0.0.1:0", ZR_BIND);
	rc = zr_subscribe(t->b, "jobs", &o, &t->sub);
	cr_assert_eq(rc, 0, "zr_subscribe: %d %s", rc, zr_broker_error(t->b));
	cr_assert_eq(zr_publisher_new(t->b, &t->p), 0);
	if (pattern == ZR_RPC) {
		struct zr_delivery *reply = NULL;

		rc = zr_request(t->p, "jobs", NULL, 0, "ping", 4, BU_WAIT_MS, &reply);
		cr_assert_eq(rc, 0, "request before shutdown: %d %s", rc, zr_publisher_error(t->p));
		cr_assert_str_eq(reply->name, "reply");
		zr_delivery_free(reply);
	} else {
		rc = zr_publish(t->p, "jobs", NULL, 0, "before", 6, BU_WAIT_MS);
		cr_assert_eq(rc, 0, "publish before shutdown: %d %s", rc, zr_publisher_error(t->p));
	}
	cr_assert(bu_log_wait(&t->log, 1, BU_WAIT_MS), "the message before shutdown never arrived");
}

static void
idle_close(struct idle *t)
{
	zr_broker_free(t->b);
	zr_ctx_free(t->ctx);
	bu_log_fini(&t->log);
}

static void
shutdown_case(int pattern)
{
	struct idle t;
	struct zr_delivery *reply = NULL;
	zr_subscription *sub2 = NULL;
	struct zr_sub_opts o;
	zr_publisher *fresh = NULL;
	uint64_t t0, dt;
	int rc;

	idle_open(&t, pattern);
	cr_assert_eq(zr_publisher_new(t.b, &fresh), 0);
	t0 = zt_now_ms();
	rc = zr_broker_shutdown(t.b);
	dt = zt_now_ms() - t0;
	cr_assert_eq(rc, 0, "shutdown of an idle broker (pattern %d): %d", pattern, rc);
	cr_assert_lt(dt, ZR_DRAIN_DEFAULT_MS - 1000, "an idle shutdown took %llu ms",
	             (unsigned long long)dt);

	/* Surviving handles fail at once with -ENOTCONN. */
	t0 = zt_now_ms();
	if (pattern == ZR_RPC) {
		rc = zr_request(t.p, "jobs", NULL, 0, "ping", 4, 30000, &reply);
		cr_assert_eq(rc, -ENOTCONN, "request after shutdown: %d %s", rc,
		             zr_publisher_error(t.p));
		cr_assert_null(reply);
		rc = zr_publish(t.p, "zmq-reply:00", NULL, 0, "x", 1, 30000);
	} else {
		rc = zr_publish(t.p, "jobs", NULL, 0, "after", 5, 30000);
	}
	cr_assert_eq(rc, -ENOTCONN, "publish after shutdown: %d %s", rc, zr_publisher_error(t.p));
	cr_assert_neq(zr_publisher_error(t.p)[0], '\0', "no error text");
	cr_assert_lt(zt_now_ms() - t0, ZR_SEND_RETRY_WINDOW_MS, "the refusal waited");
	o = (struct zr_sub_opts){.handler = bu_log_handler, .arg = &t.log};
	rc = zr_subscribe(t.b, "more", &o, &sub2);
	cr_assert_eq(rc, -ENOTCONN, "subscribe after shutdown: %d %s", rc, zr_broker_error(t.b));
	cr_assert_null(sub2);
	/* A publisher made before shutdown but never used fails the same way. */
	rc = pattern == ZR_RPC ? zr_request(fresh, "jobs", NULL, 0, "x", 1, 30000, &reply)
	                       : zr_publish(fresh, "jobs", NULL, 0, "x", 1, 30000);
	cr_assert_eq(rc, -ENOTCONN, "an unused publisher after shutdown: %d %s", rc,
	             zr_publisher_error(fresh));
	/* Shutting down again changes nothing. */
	cr_assert_eq(zr_broker_shutdown(t.b), 0);
	cr_assert(!bu_log_wait(&t.log, 2, BU_QUIET_MS), "something was delivered after shutdown");
	idle_close(&t);
}

/* §20 83 */
Test(shutdown, an_idle_queue_broker_shuts_down_at_once_and_surviving_handles_fail_with_ENOTCONN)
{
	shutdown_case(ZR_QUEUE);
}

/* §20 83 */
Test(shutdown, an_idle_fanout_broker_shuts_down_at_once_and_surviving_handles_fail_with_ENOTCONN)
{
	shutdown_case(ZR_FANOUT);
}

/* §20 83 */
Test(shutdown, an_idle_rpc_broker_shuts_down_at_once_and_surviving_handles_fail_with_ENOTCONN)
{
	shutdown_case(ZR_RPC);
}

/* §20 83: a dialling broker with nothing attached shuts down at once too. */
Test(shutdown, a_dialling_broker_never_used_shuts_down_at_once)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	uint64_t t0;
	int rc;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	b = bu_broker(ctx, ZR_QUEUE, "tcp://127.0.0.1:9", ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	t0 = zt_now_ms();
	cr_assert_eq(zr_broker_shutdown(b), 0);
	cr_assert_lt(zt_now_ms() - t0, ZR_DRAIN_DEFAULT_MS - 1000);
	rc = zr_publish(p, "jobs", NULL, 0, "x", 1, 30000);
	cr_assert_eq(rc, -ENOTCONN, "publish after shutdown: %d %s", rc, zr_publisher_error(p));
	cr_assert_lt(zt_now_ms() - t0, ZR_SEND_RETRY_WINDOW_MS, "the refusal waited");
	zr_broker_free(b);
	zr_ctx_free(ctx);
}
