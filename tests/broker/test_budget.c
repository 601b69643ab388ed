/*
 * The subscription's byte budget beside read_ahead (zr_broker_set_read_ahead_bytes):
 * with large messages the channel holds fewer than read_ahead of them, so
 * memory is bounded in bytes whatever the message size; nothing is lost.
 */
#include "broker/broker_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B_MSG (64 * 1024)
#define B_BUDGET (4 * B_MSG)

Test(budget, a_channel_holds_no_more_bytes_than_its_budget_and_loses_nothing)
{
	zr_ctx *ctx;
	zr_broker *b, *src;
	zr_subscription *sub;
	zr_publisher *p;
	struct bu_log log;
	struct zr_sub_stats st;
	char ep[128], name[32];
	char *payload = calloc(1, B_MSG);
	int rc = 0, sent;

	cr_assert_not_null(payload);
	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_broker_new(ctx, ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND, &b), 0);
	cr_assert_eq(zr_broker_set_read_ahead_bytes(b, 0), -EINVAL);
	cr_assert_eq(zr_broker_set_read_ahead_bytes(b, B_BUDGET), 0);
	cr_assert_eq(zr_broker_start(b), 0);
	sub = bu_sub(b, "jobs", &log);
	src = bu_broker(ctx, ZR_QUEUE, bu_bound(b, ep, sizeof ep), ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(src, &p), 0);
	/* The handler stalls on the first message; the sender fills everything. */
	bu_log_hold(&log, true);
	for (sent = 0; sent < 2000; sent++) {
		snprintf(name, sizeof name, "jobs");
		memcpy(payload, &sent, sizeof sent);
		/* The first also waits out connecting and the handshake. */
		rc = zr_publish(p, name, NULL, 0, payload, B_MSG, sent == 0 ? 10000 : 2000);
		if (rc == -ETIMEDOUT)
			break;
		cr_assert_eq(rc, 0, "publish %d: %d %s", sent, rc, zr_publisher_error(p));
	}
	cr_assert_eq(rc, -ETIMEDOUT, "2000 messages of 64 KiB never stalled the sender");
	bu_stats_wait(sub, BU_RECEIVED, 1, &st); /* the held handler has its message */
	cr_assert_eq(st.read_ahead, ZR_READ_AHEAD_DEFAULT);
	cr_assert_geq(st.peak_depth, 1);
	cr_assert_leq(st.peak_depth, B_BUDGET / B_MSG, "the channel held %zu messages of 64 KiB",
	              st.peak_depth);
	cr_assert_eq(st.received, 1, "taken off the channel: %llu",
	             (unsigned long long)st.received);
	/* Reading resumes: every accepted message arrives once, in order. */
	bu_log_hold(&log, false);
	cr_assert(bu_log_wait(&log, (size_t)sent, 30000), "got %zu of %d", bu_log_count(&log),
	          sent);
	zt_sleep_ms(BU_QUIET_MS);
	cr_assert_eq(bu_log_count(&log), (size_t)sent);
	for (int i = 0; i < sent; i++) {
		const struct bu_item *it = bu_log_at(&log, (size_t)i);
		int seq;

		cr_assert_eq(it->payload_len, B_MSG);
		memcpy(&seq, it->payload, sizeof seq);
		cr_assert_eq(seq, i, "message %d carried %d", i, seq);
	}
	zr_subscription_stats(sub, &st);
	cr_assert_leq(st.peak_depth, B_BUDGET / B_MSG);
	zr_broker_free(src);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
	free(payload);
}
