/*
 * XPUB hands subscriptions to the app, and when a subscriber goes away it
 * hands over a cancel for each subscription it held (RFC 29). A topic is
 * announced when it gets its first holder and cancelled when its last one
 * goes (libzmq's rule; XPUB_VERBOSER: every time); a cancel for a topic the
 * peer never held is ignored; no notice is lost to a full receive queue.
 * Hand-written peers (raw_peer.h) send the exact SUBSCRIBE / CANCEL
 * commands (ZMTP 3.1) and 0x01 / 0x00 messages (3.0).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/zring.h>

Test(engine_xpub, hands_over_subscriptions_and_a_cancel_for_each_when_the_subscriber_leaves)
{
	zr_ctx *ctx;
	zr_socket *x, *sub;
	char ep[128];
	size_t len = sizeof ep;
	int t = 5000, zero = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_XPUB, &x), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub), 0);
	cr_assert_eq(zr_setsockopt(x, ZR_RCVTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zr_bind(x, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(x, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "B", 1), 0);
	cr_assert_eq(zr_connect(sub, ep), 0);

	/* Order between topics is not promised; collect both. */
	char seen[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char buf[8];
		int n = zr_recv_bytes(x, buf, sizeof buf, 0);

		cr_assert_eq(n, 2, "subscription %d: %d (%s)", i, n, n < 0 ? zr_strerror(n) : "");
		cr_assert_eq(buf[0], 1);
		cr_assert(buf[1] == 'A' || buf[1] == 'B');
		seen[buf[1] - 'A'] = 1;
	}
	cr_assert(seen[0] && seen[1]);

	/* A second subscription to A is counted on the SUB side: no new wire
	 * message (the set did not change), so the XPUB sees nothing new. */
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_recv_bytes(x, (char[8]){0}, 8, ZR_DONTWAIT), -EAGAIN);

	zr_setsockopt(sub, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(sub);
	char cancelled[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char buf[8];
		int n = zr_recv_bytes(x, buf, sizeof buf, 0);

		cr_assert_eq(n, 2, "cancel %d: %d (%s)", i, n, n < 0 ? zr_strerror(n) : "");
		cr_assert_eq(buf[0], 0, "a cancel starts with 0x00");
		cancelled[buf[1] - 'A'] = 1;
	}
	cr_assert(cancelled[0] && cancelled[1]);
	zr_setsockopt(x, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(x);
	zr_ctx_free(ctx);
}

/* ---- notices: once per topic, never for what was not held, never lost ---- */

#include "raw_peer.h"

#define WAIT 20000

static zr_socket *
xpub_open(zr_ctx **ctx, char *ep, size_t cap, int rcvhwm)
{
	zr_socket *x;
	int t = WAIT;
	size_t len = cap;

	cr_assert_eq(zr_ctx_new(ctx), 0);
	cr_assert_eq(zr_socket_open(*ctx, ZR_XPUB, &x), 0);
	cr_assert_eq(zr_setsockopt(x, ZR_RCVTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zr_setsockopt(x, ZR_RCVHWM, &rcvhwm, sizeof rcvhwm), 0);
	cr_assert_eq(zr_bind(x, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(x, ZR_LAST_ENDPOINT, ep, &len), 0);
	return x;
}

static void
xpub_close(zr_ctx *ctx, zr_socket *x)
{
	int zero = 0;

	zr_setsockopt(x, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(x);
	zr_ctx_free(ctx);
}

/* The next notice must be flag + topic. */
static void
expect_notice(zr_socket *x, int flag, const char *topic)
{
	char buf[64];
	int n = zr_recv_bytes(x, buf, sizeof buf - 1, 0);

	cr_assert_gt(n, 0, "no notice (want %d%s): %s", flag, topic, n < 0 ? zr_strerror(n) : "");
	buf[n] = '\0';
	cr_assert(buf[0] == flag && strcmp(buf + 1, topic) == 0, "notice %d'%s', want %d'%s'",
	          buf[0], buf + 1, flag, topic);
}

static void
expect_no_notice(zr_socket *x)
{
	char buf[64];

	cr_assert_eq(zr_recv_bytes(x, buf, sizeof buf, ZR_DONTWAIT), -EAGAIN);
}

Test(engine_xpub, a_cancel_for_a_topic_the_peer_never_subscribed_is_not_passed_on)
{
	zr_ctx *ctx;
	char ep[128];
	zr_socket *x = xpub_open(&ctx, ep, sizeof ep, 1000);
	int fd = rp_connect(ep, 1), old = rp_connect(ep, 0);

	rp_sub(fd, 1, false, "never");
	rp_sub(old, 0, false, "never either");
	rp_sub(fd, 1, true, "a");
	/* A connection is read in order: had the cancel made a notice, it
	 * would come first. */
	expect_notice(x, 1, "a");
	rp_sub(old, 0, true, "b");
	expect_notice(x, 1, "b");
	/* Cancelled once, the second cancel is for something no longer held. */
	rp_sub(fd, 1, false, "a");
	rp_sub(fd, 1, false, "a");
	rp_sub(fd, 1, true, "c");
	expect_notice(x, 0, "a");
	expect_notice(x, 1, "c");
	expect_no_notice(x);
	close(fd);
	close(old);
	xpub_close(ctx, x);
}

Test(engine_xpub, two_peers_on_one_topic_make_one_subscribe_and_the_last_cancel_one_cancel)
{
	zr_ctx *ctx;
	char ep[128];
	zr_socket *x = xpub_open(&ctx, ep, sizeof ep, 1000);
	int p1 = rp_connect(ep, 1), p2 = rp_connect(ep, 0);

	rp_sub(p1, 1, true, "A");
	expect_notice(x, 1, "A");
	rp_sub(p2, 0, true, "A");
	rp_sub(p2, 0, true, "M2");
	expect_notice(x, 1, "M2"); /* no second \x01A before it */
	rp_sub(p1, 1, false, "A");
	rp_sub(p1, 1, true, "M1");
	expect_notice(x, 1, "M1"); /* p2 still holds A: no cancel */
	rp_sub(p2, 0, false, "A");
	expect_notice(x, 0, "A");

	/* A lost peer: only what it held alone is cancelled. */
	rp_sub(p1, 1, true, "S");
	expect_notice(x, 1, "S");
	rp_sub(p2, 0, true, "S");
	rp_sub(p2, 0, true, "M3");
	expect_notice(x, 1, "M3");
	close(p1);
	expect_notice(x, 0, "M1");
	rp_sub(p2, 0, true, "M4");
	expect_notice(x, 1, "M4"); /* S: p2 still holds it */
	expect_no_notice(x);
	close(p2);
	xpub_close(ctx, x);
}

Test(engine_xpub, verboser_passes_on_every_subscribe_and_every_cancel_of_a_held_topic)
{
	zr_ctx *ctx;
	char ep[128];
	zr_socket *x = xpub_open(&ctx, ep, sizeof ep, 1000);
	int on = 1, v = -1;
	size_t len = sizeof v;

	cr_assert_eq(zr_setsockopt(x, ZR_XPUB_VERBOSER, &on, sizeof on), 0);
	cr_assert_eq(zr_getsockopt(x, ZR_XPUB_VERBOSE, &v, &len), 0);
	cr_assert_eq(v, 1);
	int p1 = rp_connect(ep, 1), p2 = rp_connect(ep, 1);

	rp_sub(p1, 1, true, "A");
	expect_notice(x, 1, "A");
	rp_sub(p2, 1, true, "A");
	expect_notice(x, 1, "A");
	rp_sub(p1, 1, false, "A");
	expect_notice(x, 0, "A");
	rp_sub(p1, 1, false, "A"); /* no longer held: still nothing */
	rp_sub(p2, 1, false, "A");
	expect_notice(x, 0, "A");
	expect_no_notice(x);
	close(p1);
	close(p2);
	xpub_close(ctx, x);
}

Test(engine_xpub, verbose_passes_on_every_subscribe_but_only_the_last_cancel)
{
	zr_ctx *ctx;
	char ep[128];
	zr_socket *x = xpub_open(&ctx, ep, sizeof ep, 1000);
	int on = 1, v = -1;
	size_t len = sizeof v;

	cr_assert_eq(zr_setsockopt(x, ZR_XPUB_VERBOSE, &on, sizeof on), 0);
	cr_assert_eq(zr_getsockopt(x, ZR_XPUB_VERBOSER, &v, &len), 0);
	cr_assert_eq(v, 0);
	int p1 = rp_connect(ep, 1), p2 = rp_connect(ep, 0);

	rp_sub(p1, 1, true, "A");
	expect_notice(x, 1, "A");
	rp_sub(p2, 0, true, "A");
	expect_notice(x, 1, "A");
	rp_sub(p1, 1, true, "A"); /* the same peer again: still passed on */
	expect_notice(x, 1, "A");
	rp_sub(p1, 1, false, "A");
	rp_sub(p1, 1, false, "A");
	rp_sub(p1, 1, true, "M");
	expect_notice(x, 1, "M"); /* p2 holds A: no cancel yet */
	rp_sub(p2, 0, false, "A");
	expect_notice(x, 0, "A");
	expect_no_notice(x);
	close(p1);
	close(p2);
	xpub_close(ctx, x);
}

static void
count_notices(zr_socket *x, int total, int *subs, int *cancels)
{
	for (int i = 0; i < total; i++) {
		char buf[64];
		int n = zr_recv_bytes(x, buf, sizeof buf, 0);

		cr_assert_gt(n, 1, "notice %d of %d: %s", i, total, n < 0 ? zr_strerror(n) : "");
		(buf[0] == 1 ? subs : cancels)[0]++;
	}
	expect_no_notice(x);
}

Test(engine_xpub, notices_wait_for_room_in_a_full_receive_queue_and_none_is_lost)
{
	zr_ctx *ctx;
	char ep[128], t[16];
	zr_socket *x = xpub_open(&ctx, ep, sizeof ep, 10);
	int p1 = rp_connect(ep, 1), p2 = rp_connect(ep, 0), subs = 0, cancels = 0;
	struct timespec pause = {0, 300 * 1000 * 1000};

	/* 200 notices for a queue of 10, in both forms, with a cancel each. */
	for (int i = 0; i < 100; i++) {
		snprintf(t, sizeof t, "c%03d", i);
		rp_sub(p1, 1, true, t);
		snprintf(t, sizeof t, "m%03d", i);
		rp_sub(p2, 0, true, t);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(t, sizeof t, "c%03d", i);
		rp_sub(p1, 1, false, t);
		snprintf(t, sizeof t, "m%03d", i);
		rp_sub(p2, 0, false, t);
	}
	nanosleep(&pause, NULL); /* the queue fills; the app reads later */
	count_notices(x, 300, &subs, &cancels);
	cr_assert_eq(subs, 200);
	cr_assert_eq(cancels, 100);

	/* A lost peer cannot wait: its cancels queue behind the full rx. */
	for (int i = 0; i < 10; i++) {
		snprintf(t, sizeof t, "q%03d", i);
		rp_sub(p2, 0, true, t);
	}
	nanosleep(&pause, NULL);
	close(p1); /* it held c050..c099 */
	for (int i = 10; i < 20; i++) {
		snprintf(t, sizeof t, "q%03d", i);
		rp_sub(p2, 0, true, t);
	}
	nanosleep(&pause, NULL);
	subs = cancels = 0;
	count_notices(x, 70, &subs, &cancels);
	cr_assert_eq(subs, 20);
	cr_assert_eq(cancels, 50);
	close(p2);
	xpub_close(ctx, x);
}
