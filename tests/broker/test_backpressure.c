/*
 * Backpressure behaviours 38-43 of the seed's broker (ruststream.md §8, §20):
 * read_ahead bounds how far a subscription reads ahead of its handler; a full
 * channel stops the reading, which stalls the publisher; the stalled publish
 * is kept and completes once the handler goes on.
 *
 * A handler is "not read" when it is held (kp_util.h): it records the first
 * delivery and waits, so the channel fills behind it.
 */
#include "broker/broker_util.h"
#include "kp_util.h"

#define BP_STALL_LIMIT 2000 /* the seed's bound: a send stalls well before this */
#define BP_SMALL 64         /* octets per message where only counts matter */

/* No Criterion .timeout: every wait is bounded (CTest has its own timeout). */
TestSuite(backpressure, .fini = kp_teardown);

static int
bp_publish(zr_publisher *p, const char *name, uint8_t *buf, uint64_t seq, int timeout_ms)
{
	char v[32];
	struct zr_header h = {.name = "x-seq", .value = v};

	snprintf(v, sizeof v, "%" PRIu64, seq);
	kp_payload(buf, KP_BIG, seq);
	return zr_publish(p, name, &h, 1, buf, KP_BIG, timeout_ms);
}

/* ---- 38, 39, 43: a publisher stalls on an unread subscription --------------------- */

struct bp_stall {
	zr_broker *sb; /* the subscription's (bound) broker */
	zr_subscription *sub;
	struct kp_log *log;
	zr_publisher *pub;
	const char *name; /* what is published */
	uint8_t *buf;
	unsigned taken;      /* publishes that succeeded before the stall */
	uint64_t stalled_ms; /* how long the stalled publish waited */
};

/*
 * A bound subscription with read_ahead 8 whose handler is held, and a
 * publisher of 64 KiB messages with 2 s each: queue from a connect-side
 * broker (a producer dialling the consumer), fan-out from the subscription's
 * own broker. Publishes until one times out (or BP_STALL_LIMIT succeed).
 */
static void
bp_stall(struct bp_stall *s, int pattern, bool ipc)
{
	char ep[128], addr[160];
	int rc = 0;

	memset(s, 0, sizeof *s);
	s->name = pattern == ZR_QUEUE ? "jobs" : "orders.created";
	s->buf = malloc(KP_BIG);
	cr_assert_not_null(s->buf);
	s->sb = kp_broker(pattern, kp_endpoint(ipc, ep, sizeof ep), ZR_BIND, 8);
	s->log = kp_log_new(s->name, KP_BIG, true);
	s->sub = kp_subscribe(s->sb, pattern == ZR_QUEUE ? "jobs" : "orders", s->log);
	kp_bound(s->sb, addr, sizeof addr);
	zr_broker *pb = pattern == ZR_QUEUE ? kp_broker(ZR_QUEUE, addr, ZR_CONNECT, 0) : s->sb;

	cr_assert_eq(zr_publisher_new(pb, &s->pub), 0);
	for (; s->taken < BP_STALL_LIMIT; s->taken++) {
		uint64_t t0 = zt_now_ms();

		/* The first also waits out connecting and the handshake. */
		rc = bp_publish(s->pub, s->name, s->buf, s->taken, s->taken == 0 ? 10000 : 2000);
		if (rc != 0) {
			s->stalled_ms = zt_now_ms() - t0;
			break;
		}
	}
	cr_assert_eq(rc, -ETIMEDOUT, "%u publishes of 64 KiB and none stalled (last: %d %s)",
	             s->taken, rc, zr_publisher_error(s->pub));
	cr_assert_str_neq(zr_publisher_error(s->pub), "",
	                  "a timed-out publish leaves no error text");
	fprintf(stderr, "%s over %s, read_ahead 8, 64 KiB: publish %u stalled (%" PRIu64 " ms)\n",
	        pattern == ZR_QUEUE ? "queue" : "fan-out", ipc ? "ipc" : "tcp", s->taken + 1,
	        s->stalled_ms);
}

/* 39, 43: the handler goes on; the stalled publish, kept and retried, completes
 * within 10 s and every message arrives once, in order. */
static void
bp_resume(struct bp_stall *s)
{
	uint64_t before = kp_log_count(s->log);

	cr_assert_eq(before, 1, "the held handler was called %" PRIu64 " times", before);
	kp_log_release(s->log, -1);
	/* The first delivery after the stall within 10 s. */
	cr_assert_geq(kp_log_wait(s->log, 2, 10000), 2, "no delivery within 10 s of reading again");
	int rc = bp_publish(s->pub, s->name, s->buf, s->taken, 10000);

	cr_assert_eq(rc, 0, "the stalled publish did not complete within 10 s: %d %s", rc,
	             zr_publisher_error(s->pub));
	uint64_t total = (uint64_t)s->taken + 1;

	cr_assert_eq(kp_log_wait(s->log, total, 10000), total);
	kp_log_assert_all(s->log, total);
	struct zr_sub_stats st;

	zr_subscription_stats(s->sub, &st);
	cr_assert_leq(st.peak_depth, 8);
	free(s->buf);
}

/* 38: a queue subscription with read_ahead 8 that is not read stalls a sender
 * of 64 KiB messages (> 2 s) well before 2000 sends. */
static void
bp_38(bool ipc)
{
	struct bp_stall s;
	struct zr_sub_stats st;

	bp_stall(&s, ZR_QUEUE, ipc);
	cr_assert_lt(s.taken, BP_STALL_LIMIT);
	cr_assert_geq(s.stalled_ms, 1900, "the stalled publish gave up after %" PRIu64 " ms",
	              s.stalled_ms);
	bu_stats_wait(s.sub, BU_DEPTH, 8, &st);
	cr_assert_eq(st.depth, 8, "the unread channel holds %zu", st.depth);
	cr_assert_eq(kp_log_count(s.log), 1);
	free(s.buf);
}

Test(backpressure, an_unread_queue_subscription_with_read_ahead_8_stalls_its_sender_tcp)
{
	bp_38(false);
}

Test(backpressure, an_unread_queue_subscription_with_read_ahead_8_stalls_its_sender_ipc)
{
	bp_38(true);
}

/* 39: the stalled send is kept; when the subscription reads again the first
 * delivery comes within 10 s and the stalled send completes within 10 s. */
Test(backpressure, the_stalled_send_completes_once_the_subscription_reads_again_tcp)
{
	struct bp_stall s;

	bp_stall(&s, ZR_QUEUE, false);
	bp_resume(&s);
}

Test(backpressure, the_stalled_send_completes_once_the_subscription_reads_again_ipc)
{
	struct bp_stall s;

	bp_stall(&s, ZR_QUEUE, true);
	bp_resume(&s);
}

/* 43: a fan-out subscription with read_ahead 8 that is not read stalls its
 * publisher, which resumes once reading starts. */
Test(backpressure, an_unread_fanout_subscription_stalls_the_publisher_until_it_reads_tcp)
{
	struct bp_stall s;

	bp_stall(&s, ZR_FANOUT, false);
	cr_assert_lt(s.taken, BP_STALL_LIMIT);
	bp_resume(&s);
}

Test(backpressure, an_unread_fanout_subscription_stalls_the_publisher_until_it_reads_ipc)
{
	struct bp_stall s;

	bp_stall(&s, ZR_FANOUT, true);
	cr_assert_lt(s.taken, BP_STALL_LIMIT);
	bp_resume(&s);
}

/* ---- 40, 41: the channel's capacity --------------------------------------------- */

/* A libzmq PUSH sending n small messages into the bound broker b. */
static struct kp_peer *
bp_flood_small(zr_broker *b, unsigned n)
{
	char addr[160], a_size[16];
	const char *args[] = {kp_bound(b, addr, sizeof addr), "jobs",
	                      kp_arg(a_size, sizeof a_size, "%d", BP_SMALL), NULL};
	struct kp_peer *p = kp_peer_start(KP_FLOOD_PEER, args);
	unsigned sent = 0;

	kp_tell(p, "send %u 5000", n);
	const char *r = kp_answer(p, 30000);

	cr_assert_eq(sscanf(r, "SENT sent=%u", &sent), 1, "\"%s\"", r);
	cr_assert_eq(sent, n, "the sender stopped at %u of %u", sent, n);
	return p;
}

/* A held subscription flooded with n messages holds read_ahead in its channel,
 * no more, once it settles; then everything arrives in order. */
static void
bp_capacity(zr_subscription *sub, struct kp_log *l, size_t read_ahead, unsigned n)
{
	struct zr_sub_stats st;

	bu_stats_wait(sub, BU_DEPTH, read_ahead, &st);
	sleep_ms(300); /* anything more would arrive now */
	zr_subscription_stats(sub, &st);
	cr_assert_eq(st.read_ahead, read_ahead);
	cr_assert_eq(st.depth, read_ahead, "the channel holds %zu, read_ahead is %zu", st.depth,
	             read_ahead);
	cr_assert_eq(st.peak_depth, read_ahead);
	cr_assert_eq(kp_log_count(l), 1);
	kp_log_release(l, -1);
	cr_assert_eq(kp_log_wait(l, n, 20000), n);
	kp_log_assert_all(l, n);
}

/* 40: read_ahead unset -> the channel holds 1000. */
Test(backpressure, an_unset_read_ahead_gives_a_channel_of_1000)
{
	char ep[64];
	zr_broker *b = kp_broker(ZR_QUEUE, kp_endpoint(false, ep, sizeof ep), ZR_BIND, 0);
	struct kp_log *l = kp_log_new("jobs", BP_SMALL, true);
	zr_subscription *sub = kp_subscribe(b, "jobs", l);
	struct zr_sub_stats st;

	cr_assert_eq(ZR_READ_AHEAD_DEFAULT, 1000);
	zr_subscription_stats(sub, &st);
	cr_assert_eq(st.read_ahead, 1000);
	bp_flood_small(b, 1200);
	bp_capacity(sub, l, 1000, 1200);
}

/* 41: two brokers with read_ahead 1000 and 4 keep their own bounds; a later
 * change reaches only subscriptions opened after it. */
Test(backpressure, two_brokers_with_read_ahead_1000_and_4_keep_their_own_bounds)
{
	char ep1[64], ep2[64];
	zr_broker *b1 = kp_broker(ZR_QUEUE, kp_endpoint(false, ep1, sizeof ep1), ZR_BIND, 1000);
	zr_broker *b2 = kp_broker(ZR_QUEUE, kp_endpoint(false, ep2, sizeof ep2), ZR_BIND, 4);
	struct kp_log *l1 = kp_log_new("jobs", BP_SMALL, true);
	struct kp_log *l2 = kp_log_new("jobs", BP_SMALL, true);
	zr_subscription *s1 = kp_subscribe(b1, "jobs", l1);
	zr_subscription *s2 = kp_subscribe(b2, "jobs", l2);
	struct zr_sub_stats st;

	cr_assert_eq(zr_broker_set_read_ahead(b2, 0), -EINVAL);
	cr_assert_eq(zr_broker_set_read_ahead(b2, 16), 0);
	zr_subscription_stats(s2, &st);
	cr_assert_eq(st.read_ahead, 4, "a later setting changed an open subscription");
	bp_flood_small(b1, 1100);
	bp_flood_small(b2, 1100);
	bp_capacity(s2, l2, 4, 1100);
	bp_capacity(s1, l1, 1000, 1100);
}

/* ---- 42: a full channel reads nothing more --------------------------------------- */

/* 42: given a full read_ahead channel, more data stays in the kernel: the
 * subscription reads nothing off its socket until the handler takes an item. */
static void
bp_42(bool ipc)
{
	char ep[128], addr[160], a_size[16];
	zr_broker *b = kp_broker(ZR_QUEUE, kp_endpoint(ipc, ep, sizeof ep), ZR_BIND, 8);
	struct kp_log *l = kp_log_new("jobs", 1024, true);
	zr_subscription *sub = kp_subscribe(b, "jobs", l);
	struct zr_sub_stats st;

	kp_watch_accepts(zr_subscription_socket(sub));
	const char *args[] = {kp_bound(b, addr, sizeof addr), "jobs",
	                      kp_arg(a_size, sizeof a_size, "%d", 1024), NULL};
	struct kp_peer *p = kp_peer_start(KP_FLOOD_PEER, args);
	int fd = kp_accepted_fd(zr_subscription_socket(sub), KP_WAIT_MS);
	unsigned sent = 0;

	/* One in the handler, eight in the channel: full. */
	kp_tell(p, "send 9 5000");
	cr_assert_str_eq(kp_answer(p, 10000), "SENT sent=9");
	bu_stats_wait(sub, BU_DEPTH, 8, &st);
	cr_assert_eq(st.depth, 8);
	sent = 9;
	/* More data. The one read armed while the channel still had room may
	 * take some (into the connection's input buffer); after it, bytes stay
	 * in the kernel: wait until they do and hold still for half a second. */
	int inq = 0;

	for (int round = 0;; round++) {
		cr_assert_lt(round, 100,
		             "zring kept reading its socket with a full channel: %u messages "
		             "of 1 KiB sent past it and the kernel queue is empty",
		             sent - 9);
		kp_tell(p, "send 8 5000");
		kp_answer(p, 10000);
		sent += 8;
		sleep_ms(100);
		inq = kp_inq(fd);
		if (inq == 0)
			continue;
		sleep_ms(500);
		if (kp_inq(fd) == inq)
			break;
	}
	for (int round = 0; round < 3; round++) {
		kp_tell(p, "send 8 5000");
		kp_answer(p, 10000);
		sent += 8;
		/* "SENT" is libzmq's send returning; its io thread writes after. */
		int now = kp_inq(fd);

		for (uint64_t end = zt_now_ms() + 10000;
		     now < inq + 8 * 1024 && zt_now_ms() < end;) {
			sleep_ms(10);
			now = kp_inq(fd);
		}
		cr_assert_geq(now, inq + 8 * 1024,
		              "round %d: the kernel queue went %d -> %d octets", round, inq, now);
		inq = now;
		zr_subscription_stats(sub, &st);
		cr_assert_eq(st.depth, 8);
		cr_assert_eq(st.received, 1);
		cr_assert_leq(st.peak_depth, 8);
		cr_assert_eq(kp_log_count(l), 1);
	}
	fprintf(stderr,
	        "42 (%s): channel full at 8; %u messages of 1 KiB sent, %d octets wait in "
	        "the kernel\n",
	        ipc ? "ipc" : "tcp", sent, inq);
	/* The handler takes one: the channel refills to 8 from the connection. */
	kp_log_release(l, 1);
	cr_assert_eq(kp_log_wait(l, 2, KP_WAIT_MS), 2);
	bu_stats_wait(sub, BU_DEPTH, 8, &st);
	cr_assert_eq(st.depth, 8, "after the handler took one the channel holds %zu", st.depth);
	cr_assert_eq(st.received, 2);
	/* Everything else follows, in order, and the kernel queue empties. */
	kp_log_release(l, -1);
	cr_assert_eq(kp_log_wait(l, sent, 20000), sent);
	kp_log_assert_all(l, sent);
	cr_assert_eq(kp_inq(fd), 0);
}

Test(backpressure, a_full_channel_reads_nothing_more_until_the_handler_takes_one_tcp)
{
	bp_42(false);
}

Test(backpressure, a_full_channel_reads_nothing_more_until_the_handler_takes_one_ipc)
{
	bp_42(true);
}
