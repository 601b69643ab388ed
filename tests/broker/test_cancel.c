/*
 * Cancelling a queue publish (ruststream.md §11.2, §20 behaviours 44-47).
 *
 * ruststream drops a publish future; in C another thread calls
 * zr_publisher_cancel(p) and the waiting zr_publish returns -ECANCELED with
 * nothing of its message taken. A message is handed to the socket whole or
 * not at all, so the seed's "half-sent, parked until the next publish" state
 * does not exist here: a cancelled publish sent nothing, and everything the
 * publisher published before it still arrives, in order, exactly once.
 *
 * §20 46 (a parked half-sent publish whose completion fails is logged by the
 * next publish) has no C meaning: nothing is ever parked. §20 47 (a clone of
 * P completes P's parked send first) has none either - publishers are not
 * cloned - and is ported as: a second publisher of the same broker is not
 * affected by a cancel aimed at the first.
 *
 * zr_publisher_cancel does nothing when no publish waits, so the tests call
 * it every 50 ms until the publishing thread returns (bounded), which cannot
 * race with the thread's start.
 */
#include "broker/broker_util.h"
#include "engine/engine_util.h"
#include "engine/sock_helpers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define BIG (1u << 20) /* 1 MiB payloads fill the buffers in a few dozen messages */
#define MAX_SENDS 4096

/* A thread publishing "jobs" messages with a "seq: <i>" header, from 0 on,
 * until one fails (or max are sent). */
struct pub_loop {
	zr_publisher *p;
	const char *name;
	size_t len;   /* payload length */
	unsigned max; /* messages to send */
	char *payload;
	unsigned ok; /* publishes that returned 0 */
	int rc;      /* the failing publish's code, 0 if all succeeded */
	char err[ZR_ERRTEXT_MAX];
	atomic_bool done;
	pthread_t th;
};

static void *
pub_loop_main(void *arg)
{
	struct pub_loop *l = arg;

	for (unsigned i = 0; i < l->max; i++) {
		char seq[32];
		struct zr_header h = {"seq", seq};
		int rc;

		snprintf(seq, sizeof seq, "%u", i);
		rc = zr_publish(l->p, l->name, &h, 1, l->payload, l->len, -1);
		if (rc != 0) {
			l->rc = rc;
			snprintf(l->err, sizeof l->err, "%s", zr_publisher_error(l->p));
			break;
		}
		l->ok++;
	}
	atomic_store(&l->done, true);
	return NULL;
}

static void
pub_loop_start(struct pub_loop *l, zr_publisher *p, const char *name, size_t len, unsigned max)
{
	memset(l, 0, sizeof *l);
	l->p = p;
	l->name = name;
	l->len = len;
	l->max = max;
	l->payload = malloc(len > 0 ? len : 1);
	cr_assert_not_null(l->payload);
	for (size_t i = 0; i < len; i++)
		l->payload[i] = (char)et_gen_byte(i, 7);
	atomic_init(&l->done, false);
	cr_assert_eq(pthread_create(&l->th, NULL, pub_loop_main, l), 0);
}

/* Cancels p every 50 ms until l's thread returns; false if it still runs
 * after timeout_ms. */
static bool
cancel_until_done(struct pub_loop *l, int timeout_ms)
{
	uint64_t until = zt_now_ms() + (uint64_t)timeout_ms;

	while (!atomic_load(&l->done) && zt_now_ms() < until) {
		zr_publisher_cancel(l->p);
		zt_sleep_ms(50);
	}
	if (!atomic_load(&l->done))
		return false;
	pthread_join(l->th, NULL);
	return true;
}

static bool
wait_done(struct pub_loop *l, int timeout_ms)
{
	uint64_t until = zt_now_ms() + (uint64_t)timeout_ms;

	while (!atomic_load(&l->done) && zt_now_ms() < until)
		zt_sleep_ms(10);
	if (!atomic_load(&l->done))
		return false;
	pthread_join(l->th, NULL);
	return true;
}

/* Waits until l's publish has been blocked for room for at least ms. */
static void
wait_blocked(struct pub_loop *l, uint64_t ms)
{
	struct zr_pub_stats st = {0};
	uint64_t until = zt_now_ms() + 60000;

	while (zt_now_ms() < until && !atomic_load(&l->done)) {
		zr_publisher_stats(l->p, &st);
		if (st.blocked_now_ms >= ms)
			return;
		zt_sleep_ms(20);
	}
	cr_assert_fail("the publisher never blocked: %u sent, rc %d %s, blocked_now %llu ms", l->ok,
	               l->rc, l->err, (unsigned long long)st.blocked_now_ms);
}

/* §20 44 */
Test(cancel,
     a_publish_cancelled_during_the_no_peer_retry_wait_returns_ECANCELED_and_is_never_delivered)
{
	zr_ctx *ctx;
	zr_broker *b, *peer;
	zr_publisher *p;
	struct pub_loop l;
	struct bu_log log;
	char ep[64];
	const struct bu_item *it;
	int rc;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_QUEUE, ep, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	pub_loop_start(&l, p, "jobs", 4, 1);
	zt_sleep_ms(200); /* well inside the 5 s window */
	cr_assert(cancel_until_done(&l, 4000), "a cancelled publish still waits after 4 s");
	cr_assert_eq(l.ok, 0);
	cr_assert_eq(l.rc, -ECANCELED, "cancelled publish: %d %s", l.rc, l.err);
	cr_assert_not_null(strstr(l.err, "jobs"), "text \"%s\" does not name the destination",
	                   l.err);

	/* A peer shows up: the cancelled message never reaches it. */
	peer = bu_broker(ctx, ZR_QUEUE, ep, ZR_BIND);
	bu_sub(peer, "jobs", &log);
	cr_assert(!bu_log_wait(&log, 1, 1500), "the cancelled message was delivered: \"%s\"",
	          bu_log_at(&log, 0)->payload);
	rc = zr_publish(p, "jobs", NULL, 0, "after", 5, BU_WAIT_MS);
	cr_assert_eq(rc, 0, "the next publish: %d %s", rc, zr_publisher_error(p));
	cr_assert(bu_log_wait(&log, 1, BU_WAIT_MS), "the next publish never arrived");
	cr_assert(!bu_log_wait(&log, 2, BU_QUIET_MS), "more than the next publish arrived");
	it = bu_log_at(&log, 0);
	cr_assert_str_eq(it->payload, "after");
	free(l.payload);
	zr_broker_free(b);
	zr_broker_free(peer);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/* §20 45 against a zring subscription whose handler is stalled. */
Test(cancel,
     a_publish_cancelled_under_backpressure_returns_ECANCELED_and_only_the_accepted_ones_arrive_in_order)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	struct pub_loop l;
	struct bu_log log;
	int rc;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_broker_new(ctx, ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND, &b), 0);
	cr_assert_eq(zr_broker_set_read_ahead(b, 2), 0);
	cr_assert_eq(zr_broker_start(b), 0);
	bu_log_hold(&log, true);
	bu_sub(b, "jobs", &log);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	pub_loop_start(&l, p, "jobs", BIG, MAX_SENDS);
	wait_blocked(&l, 300);
	cr_assert(cancel_until_done(&l, 10000), "a cancelled publish still waits after 10 s");
	cr_assert_eq(l.rc, -ECANCELED, "cancelled publish #%u: %d %s", l.ok, l.rc, l.err);
	cr_assert_gt(l.ok, 0);
	cr_assert_lt(l.ok, MAX_SENDS, "the subscription never held the publisher back");

	/* The reader resumes: every accepted message once, in order; then the
	 * next publish succeeds and arrives after them. */
	bu_log_hold(&log, false);
	rc = zr_publish(p, "jobs", NULL, 0, "last", 4, 30000);
	cr_assert_eq(rc, 0, "the next publish: %d %s", rc, zr_publisher_error(p));
	cr_assert(bu_log_wait(&log, l.ok + 1, 30000), "%zu of %u accepted + 1 arrived",
	          bu_log_count(&log), l.ok);
	cr_assert(!bu_log_wait(&log, l.ok + 2, BU_QUIET_MS), "the cancelled message arrived too");
	for (unsigned i = 0; i < l.ok; i++) {
		const struct bu_item *it = bu_log_at(&log, i);
		const char *seq = bu_item_header(it, "seq");
		char want[32];

		snprintf(want, sizeof want, "%u", i);
		cr_assert_not_null(seq, "delivery %u has no seq", i);
		cr_assert_str_eq(seq, want, "delivery %u is seq %s", i, seq);
		cr_assert_eq(it->payload_len, BIG);
		cr_assert(memcmp(it->payload, l.payload, BIG) == 0, "delivery %u: payload differs",
		          i);
	}
	cr_assert_str_eq(bu_log_at(&log, l.ok)->payload, "last");
	free(l.payload);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/* The seq header of a libzmq peer's "MSG name:headers:payload" line. */
static unsigned
peer_seq(const char *line, bool *last)
{
	char *h_jobs = et_hex("jobs"), hdr[64] = {0};
	const char *p = line + 4, *colon;
	size_t n;
	unsigned seq = 0;

	cr_assert(strncmp(line, "MSG ", 4) == 0, "the PULL peer got: %.80s", line);
	cr_assert(strncmp(p, h_jobs, strlen(h_jobs)) == 0 && p[strlen(h_jobs)] == ':',
	          "frame 0 is not \"jobs\": %.80s", line);
	p += strlen(h_jobs) + 1;
	free(h_jobs);
	colon = strchr(p, ':');
	cr_assert_not_null(colon, "%.80s", line);
	n = (size_t)(colon - p) / 2;
	cr_assert_lt(n, sizeof hdr);
	for (size_t i = 0; i < n; i++)
		hdr[i] = (char)(et_hexval(p[2 * i]) << 4 | et_hexval(p[2 * i + 1]));
	if (n == 0) { /* the "last" message: no headers */
		*last = true;
		cr_assert_str_eq(colon + 1, "6c617374", "%.80s", line);
		return 0;
	}
	*last = false;
	cr_assert_eq(sscanf(hdr, "seq: %u", &seq), 1, "header frame \"%s\"", hdr);
	cr_assert_str_eq(colon + 1, "g1048576,7", "payload of seq %u", seq);
	return seq;
}

/* One publish of "last" (no headers) on a thread. */
struct one_pub {
	zr_publisher *p;
	int rc;
	char err[ZR_ERRTEXT_MAX];
	atomic_bool done;
	pthread_t th;
};

static void *
one_pub_main(void *arg)
{
	struct one_pub *o = arg;

	o->rc = zr_publish(o->p, "jobs", NULL, 0, "last", 4, 30000);
	snprintf(o->err, sizeof o->err, "%s", o->rc != 0 ? zr_publisher_error(o->p) : "");
	atomic_store(&o->done, true);
	return NULL;
}

/* §20 45 against a libzmq PULL peer that stops reading (the seed's test). */
Test(cancel, a_publish_cancelled_while_a_libzmq_pull_peer_stopped_reading_sends_nothing_of_it)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	struct pub_loop l;
	struct et_peer *pull;
	const char *ans;
	bool last = false;
	int rc;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	pull = et_peer_start("PULL", "bind", "tcp://127.0.0.1:*",
	                     (const char *const[]){"rcvhwm=1", NULL});
	b = bu_broker(ctx, ZR_QUEUE, pull->line + 9, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	/* One message proves the handshake. */
	rc = zr_publish(p, "jobs", NULL, 0, "last", 4, BU_WAIT_MS);
	cr_assert_eq(rc, 0, "first publish: %d %s", rc, zr_publisher_error(p));
	ans = et_peer_ask(pull, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	peer_seq(ans, &last);
	cr_assert(last);

	pub_loop_start(&l, p, "jobs", BIG, MAX_SENDS);
	wait_blocked(&l, 300);
	cr_assert(cancel_until_done(&l, 10000), "a cancelled publish still waits after 10 s");
	cr_assert_eq(l.rc, -ECANCELED, "cancelled publish #%u: %d %s", l.ok, l.rc, l.err);
	cr_assert_gt(l.ok, 0);

	/* The peer reads again; the next publish (made while the peer is still
	 * full, on a thread) completes and comes after. */
	struct one_pub next = {.p = p};

	atomic_init(&next.done, false);
	cr_assert_eq(pthread_create(&next.th, NULL, one_pub_main, &next), 0);
	for (unsigned i = 0; i < l.ok; i++) {
		ans = et_peer_ask(pull, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
		cr_assert_neq(strcmp(ans, "TIMEOUT"), 0, "only %u of %u accepted messages arrived",
		              i, l.ok);
		cr_assert_eq(peer_seq(ans, &last), i, "message %u out of order", i);
		cr_assert(!last, "\"last\" overtook accepted message %u of %u", i, l.ok);
	}
	ans = et_peer_ask(pull, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	peer_seq(ans, &last);
	cr_assert(last, "after the %u accepted messages came %.80s", l.ok, ans);
	{
		uint64_t until = zt_now_ms() + BU_WAIT_MS;

		while (!atomic_load(&next.done) && zt_now_ms() < until)
			zt_sleep_ms(10);
	}
	cr_assert(atomic_load(&next.done), "the next publish never returned");
	pthread_join(next.th, NULL);
	cr_assert_eq(next.rc, 0, "the next publish: %d %s", next.rc, next.err);
	ans = et_peer_ask(pull, BU_QUIET_MS, "recv %d", BU_QUIET_MS);
	cr_assert_str_eq(ans, "TIMEOUT", "more arrived: %.80s", ans);
	free(l.payload);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	et_peers_stop();
}

/* §20 47, ported: publishers are not cloned in C; a cancel aimed at one
 * publisher leaves another publisher of the same broker waiting and
 * delivering. */
Test(cancel, a_second_publisher_of_the_same_broker_is_not_affected_by_a_cancel_on_the_first)
{
	zr_ctx *ctx;
	zr_broker *b, *peer;
	zr_publisher *pa, *pb;
	struct pub_loop la, lb;
	struct bu_log log;
	char ep[64];

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_QUEUE, ep, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(b, &pa), 0);
	cr_assert_eq(zr_publisher_new(b, &pb), 0);
	pub_loop_start(&la, pa, "a-lost", 4, 1);
	pub_loop_start(&lb, pb, "b-kept", 4, 1);
	zt_sleep_ms(200);
	cr_assert(cancel_until_done(&la, 3000), "a cancelled publish still waits after 3 s");
	cr_assert_eq(la.rc, -ECANCELED, "cancelled publish: %d %s", la.rc, la.err);
	cr_assert(!atomic_load(&lb.done), "the other publisher's publish ended: %d %s", lb.rc,
	          lb.err);

	peer = bu_broker(ctx, ZR_QUEUE, ep, ZR_BIND);
	bu_sub(peer, "jobs", &log);
	cr_assert(wait_done(&lb, BU_WAIT_MS), "the other publisher's publish never returned");
	cr_assert_eq(lb.rc, 0, "the other publisher: %d %s", lb.rc, lb.err);
	cr_assert_eq(lb.ok, 1);
	cr_assert(bu_log_wait(&log, 1, BU_WAIT_MS));
	cr_assert(!bu_log_wait(&log, 2, BU_QUIET_MS), "the cancelled message arrived too");
	cr_assert_str_eq(bu_log_at(&log, 0)->name, "b-kept");
	free(la.payload);
	free(lb.payload);
	zr_broker_free(b);
	zr_broker_free(peer);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}
