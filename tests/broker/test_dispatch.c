/*
 * Dispatch concurrency (ruststream.md §9, §14; §20 behaviours 70-73):
 * workers(n) runs at most n handlers side by side and reads no further while
 * all are busy; workers(n, by_key) rotates lanes 1, 2, ..., 0 with each lane
 * in order, and a busy lane blocks the dispatch rather than reorder;
 * shutdown stops reading, lets the handlers in flight finish and reports a
 * drain timeout.
 *
 * Handlers wrap bu_log_handler (tests/broker/broker_util.h) to count how many
 * run at once, in all and per lane; bu_log_hold stalls them.
 */
#include "broker/broker_util.h"
#include "engine/engine_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define MAX_LANES 8

struct conc {
	struct bu_log log;
	atomic_int active, max_active;
	atomic_int lane_active[MAX_LANES];
	atomic_int lane_overlap; /* a lane ran two handlers at once */
	atomic_int bad_lane;     /* a lane index >= MAX_LANES was reported */
	int sleep_ms;            /* each handler call takes this long */
	const char *gate;        /* a payload whose handler waits for the gate */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool gate_open;
};

static void
conc_handler(const struct zr_delivery *d, void *arg)
{
	struct conc *c = arg;
	int now = atomic_fetch_add(&c->active, 1) + 1;
	int max = atomic_load(&c->max_active);

	while (now > max && !atomic_compare_exchange_weak(&c->max_active, &max, now))
		;
	if (d->lane >= MAX_LANES) {
		atomic_store(&c->bad_lane, 1);
	} else if (atomic_fetch_add(&c->lane_active[d->lane], 1) != 0) {
		atomic_store(&c->lane_overlap, 1);
	}
	if (c->gate != NULL && d->payload_len == strlen(c->gate) &&
	    memcmp(d->payload, c->gate, d->payload_len) == 0) {
		pthread_mutex_lock(&c->mu);
		while (!c->gate_open)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
	}
	if (c->sleep_ms > 0)
		zt_sleep_ms(c->sleep_ms);
	bu_log_handler(d, &c->log); /* waits while the log is held */
	if (d->lane < MAX_LANES)
		atomic_fetch_sub(&c->lane_active[d->lane], 1);
	atomic_fetch_sub(&c->active, 1);
}

static void
conc_open_gate(struct conc *c)
{
	pthread_mutex_lock(&c->mu);
	c->gate_open = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

struct dt {
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub;
	zr_publisher *p;
	struct conc c;
	char addr[256];
};

static void
dt_open(struct dt *t, unsigned read_ahead, unsigned workers, int by_key)
{
	struct zr_sub_opts o = {
		.handler = conc_handler, .arg = &t->c, .workers = workers, .by_key = by_key};
	int rc;

	memset(t, 0, sizeof *t);
	bu_log_init(&t->c.log);
	pthread_mutex_init(&t->c.mu, NULL);
	pthread_cond_init(&t->c.cv, NULL);
	cr_assert_eq(zr_ctx_new(&t->ctx), 0);
	cr_assert_eq(zr_broker_new(t->ctx, ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND, &t->b), 0);
	cr_assert_eq(zr_broker_set_read_ahead(t->b, read_ahead), 0);
	cr_assert_eq(zr_broker_start(t->b), 0);
	rc = zr_subscribe(t->b, "jobs", &o, &t->sub);
	cr_assert_eq(rc, 0, "zr_subscribe workers %u by_key %d: %d %s", workers, by_key, rc,
	             zr_broker_error(t->b));
	bu_bound(t->b, t->addr, sizeof t->addr);
	cr_assert_eq(zr_publisher_new(t->b, &t->p), 0);
}

static void
dt_close(struct dt *t)
{
	bu_log_hold(&t->c.log, false);
	conc_open_gate(&t->c);
	zr_broker_free(t->b);
	zr_ctx_free(t->ctx);
	bu_log_fini(&t->c.log);
	pthread_cond_destroy(&t->c.cv);
	pthread_mutex_destroy(&t->c.mu);
	et_peers_stop();
}

static void
dt_pub(struct dt *t, const char *payload)
{
	int rc = zr_publish(t->p, "jobs", NULL, 0, payload, strlen(payload), BU_WAIT_MS);

	cr_assert_eq(rc, 0, "publish \"%s\": %d %s", payload, rc, zr_publisher_error(t->p));
}

/* The logged item whose payload is s, or NULL. */
static const struct bu_item *
dt_find(struct dt *t, const char *s)
{
	size_t n = bu_log_count(&t->c.log);

	for (size_t i = 0; i < n; i++) {
		const struct bu_item *it = bu_log_at(&t->c.log, i);

		if (strcmp(it->payload, s) == 0)
			return it;
	}
	return NULL;
}

static size_t
dt_index(struct dt *t, const char *s)
{
	size_t n = bu_log_count(&t->c.log);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(bu_log_at(&t->c.log, i)->payload, s) == 0)
			return i;
	}
	cr_assert_fail("\"%s\" was never delivered", s);
	return 0;
}

/* Waits until the stats count what reaches n, or fails saying what. */
static void
wait_stats(struct dt *t, struct zr_sub_stats *st, enum bu_stat what, uint64_t n, const char *why)
{
	cr_assert(bu_stats_wait(t->sub, what, n, st), "%s: received %llu depth %zu in_flight %zu",
	          why, (unsigned long long)st->received, st->depth, st->in_flight);
}

/* §20 70 */
Test(dispatch, workers_4_run_exactly_4_handlers_at_once_and_do_not_read_past_read_ahead_while_busy)
{
	struct dt t;
	struct zr_sub_stats st;
	char buf[8];
	uint64_t until;

	dt_open(&t, 2, 4, 0);
	bu_log_hold(&t.c.log, true);
	for (int i = 0; i < 8; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		dt_pub(&t, buf);
	}
	until = zt_now_ms() + BU_WAIT_MS;
	while (bu_log_waiting(&t.c.log) < 4 && zt_now_ms() < until)
		zt_sleep_ms(10);
	cr_assert_eq(bu_log_waiting(&t.c.log), 4, "%zu handlers run at once, want 4",
	             bu_log_waiting(&t.c.log));
	wait_stats(&t, &st, BU_DEPTH, 2, "the channel never filled to read_ahead 2");
	zt_sleep_ms(BU_QUIET_MS); /* room for a wrong fifth handler or read */
	zr_subscription_stats(t.sub, &st);
	cr_assert_eq(bu_log_waiting(&t.c.log), 4, "%zu handlers run at once",
	             bu_log_waiting(&t.c.log));
	cr_assert_eq(atomic_load(&t.c.max_active), 4);
	cr_assert_eq(st.in_flight, 4, "in flight %zu", st.in_flight);
	cr_assert_eq(st.received, 4, "%llu taken off the channel while 4 workers are busy",
	             (unsigned long long)st.received);
	cr_assert_eq(st.depth, 2, "channel depth %zu with read_ahead 2", st.depth);
	cr_assert_leq(st.peak_depth, 2, "peak depth %zu with read_ahead 2", st.peak_depth);
	cr_assert_eq(st.read_ahead, 2);
	cr_assert_eq(st.handled, 0);

	bu_log_hold(&t.c.log, false);
	cr_assert(bu_log_wait(&t.c.log, 8, BU_WAIT_MS), "%zu of 8 handled", bu_log_count(&t.c.log));
	cr_assert(!bu_log_wait(&t.c.log, 9, BU_QUIET_MS));
	for (int i = 0; i < 8; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		cr_assert_not_null(dt_find(&t, buf), "%s never handled", buf);
	}
	cr_assert_eq(atomic_load(&t.c.max_active), 4, "%d handlers ran at once",
	             atomic_load(&t.c.max_active));
	cr_assert_eq(atomic_load(&t.c.bad_lane), 0);
	wait_stats(&t, &st, BU_HANDLED, 8, "the 8 handlers never all returned");
	cr_assert_eq(st.handled, 8);
	cr_assert_leq(st.peak_depth, 2);
	dt_close(&t);
}

/* §20 71 */
Test(dispatch, workers_3_by_key_assign_lanes_1_2_0_1_2_0_and_each_lane_runs_in_order)
{
	struct dt t;
	char buf[8];

	dt_open(&t, 1000, 3, 1);
	t.c.sleep_ms = 30; /* lanes overlap in time, a lane never with itself */
	for (int i = 0; i < 9; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		dt_pub(&t, buf);
	}
	cr_assert(bu_log_wait(&t.c.log, 9, BU_WAIT_MS), "%zu of 9 handled", bu_log_count(&t.c.log));
	for (int i = 0; i < 9; i++) {
		const struct bu_item *it;

		snprintf(buf, sizeof buf, "m%d", i);
		it = dt_find(&t, buf);
		cr_assert_not_null(it, "%s never handled", buf);
		cr_assert_eq(it->lane, (unsigned)(i + 1) % 3, "%s ran on lane %u, want %d", buf,
		             it->lane, (i + 1) % 3);
		cr_assert_eq(it->seq, (uint64_t)i + 1, "%s has seq %llu", buf,
		             (unsigned long long)it->seq);
	}
	/* Each lane in publish order, one at a time. */
	for (int i = 3; i < 9; i++) {
		char prev[8];

		snprintf(prev, sizeof prev, "m%d", i - 3);
		snprintf(buf, sizeof buf, "m%d", i);
		cr_assert_lt(dt_index(&t, prev), dt_index(&t, buf), "%s ran before %s on one lane",
		             buf, prev);
	}
	cr_assert_eq(atomic_load(&t.c.lane_overlap), 0, "a lane ran two handlers at once");
	cr_assert_eq(atomic_load(&t.c.bad_lane), 0);
	dt_close(&t);
}

/* §20 72: workers(2, by_key) rotates lanes 1, 0, 1, 0, ...; m0 (lane 1)
 * stalls. m2 waits in lane 1's inbox; m4 is for lane 1 too, whose inbox is
 * full, so the dispatch waits there: m1 and m3 (lane 0) run, m5 must not. */
Test(dispatch, a_busy_lane_blocks_the_dispatch_rather_than_reorder)
{
	struct dt t;
	char buf[8];

	dt_open(&t, 1000, 2, 1);
	t.c.gate = "m0";
	for (int i = 0; i < 6; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		dt_pub(&t, buf);
	}
	cr_assert(bu_log_wait(&t.c.log, 2, BU_WAIT_MS), "lane 0 did not run m1 and m3: %zu handled",
	          bu_log_count(&t.c.log));
	cr_assert(!bu_log_wait(&t.c.log, 3, BU_QUIET_MS),
	          "\"%s\" ran while its lane's dispatch was blocked",
	          bu_log_at(&t.c.log, 2)->payload);
	cr_assert_str_eq(bu_log_at(&t.c.log, 0)->payload, "m1");
	cr_assert_str_eq(bu_log_at(&t.c.log, 1)->payload, "m3");

	conc_open_gate(&t.c);
	cr_assert(bu_log_wait(&t.c.log, 6, BU_WAIT_MS), "%zu of 6 handled", bu_log_count(&t.c.log));
	cr_assert_lt(dt_index(&t, "m0"), dt_index(&t, "m2"));
	cr_assert_lt(dt_index(&t, "m2"), dt_index(&t, "m4"));
	cr_assert_lt(dt_index(&t, "m3"), dt_index(&t, "m5"));
	cr_assert_eq(dt_find(&t, "m0")->lane, 1);
	cr_assert_eq(dt_find(&t, "m4")->lane, 1);
	cr_assert_eq(dt_find(&t, "m5")->lane, 0);
	cr_assert_eq(atomic_load(&t.c.lane_overlap), 0);
	dt_close(&t);
}

struct shutdown_call {
	zr_broker *b;
	int rc;
	uint64_t t0, t1;
	atomic_bool done;
	pthread_t th;
};

static void *
shutdown_main(void *arg)
{
	struct shutdown_call *c = arg;

	c->t0 = zt_now_ms();
	c->rc = zr_broker_shutdown(c->b);
	c->t1 = zt_now_ms();
	atomic_store(&c->done, true);
	return NULL;
}

static void
shutdown_start(struct shutdown_call *c, zr_broker *b)
{
	memset(c, 0, sizeof *c);
	c->b = b;
	atomic_init(&c->done, false);
	cr_assert_eq(pthread_create(&c->th, NULL, shutdown_main, c), 0);
}

static bool
shutdown_join(struct shutdown_call *c, int timeout_ms)
{
	return bu_join_within(c->th, &c->done, timeout_ms);
}

/* §20 73, draining within the timeout */
Test(dispatch, shutdown_with_busy_workers_reads_no_more_lets_the_handlers_finish_and_returns_0)
{
	struct dt t;
	struct shutdown_call sc;
	struct et_peer *push;
	struct zr_sub_stats st;
	char *h_jobs = et_hex("jobs"), *h_late = et_hex("late"), *h_warm = et_hex("warm");
	const char *ans;
	char buf[8];
	uint64_t until;
	int rc;

	dt_open(&t, 8, 2, 0);
	cr_assert_eq(zr_broker_set_drain_timeout(t.b, 20000), 0);
	push = et_peer_start("PUSH", "connect", t.addr, NULL);
	ans = et_peer_ask(push, ET_WAIT_MS, "send %s::%s", h_jobs, h_warm);
	cr_assert_str_eq(ans, "SENT");
	cr_assert(bu_log_wait(&t.c.log, 1, BU_WAIT_MS), "the libzmq PUSH never got through");

	bu_log_hold(&t.c.log, true);
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		dt_pub(&t, buf);
	}
	until = zt_now_ms() + BU_WAIT_MS;
	while (bu_log_waiting(&t.c.log) < 2 && zt_now_ms() < until)
		zt_sleep_ms(10);
	cr_assert_eq(bu_log_waiting(&t.c.log), 2, "%zu handlers busy, want 2",
	             bu_log_waiting(&t.c.log));
	wait_stats(&t, &st, BU_ACCEPTED, 5, "the 4 messages never reached the subscription");

	shutdown_start(&sc, t.b);
	zt_sleep_ms(300);
	cr_assert(!atomic_load(&sc.done), "shutdown returned with 2 handlers still running");
	/* Published after reading stopped: never read. */
	rc = zr_publish(t.p, "jobs", NULL, 0, "after", 5, 1000);
	cr_assert_eq(rc, -ENOTCONN, "publish during shutdown: %d %s", rc, zr_publisher_error(t.p));
	ans = et_peer_ask(push, ET_WAIT_MS, "send %s::%s", h_jobs, h_late);
	cr_assert_str_eq(ans, "SENT");
	zt_sleep_ms(300);
	bu_log_hold(&t.c.log, false);
	cr_assert(shutdown_join(&sc, BU_WAIT_MS), "shutdown never returned after the handlers did");
	cr_assert_eq(sc.rc, 0, "shutdown: %d", sc.rc);
	/* The two in flight and the two queued were all handled; "late" never. */
	cr_assert_eq(bu_log_count(&t.c.log), 5, "%zu handled, want warm + 4",
	             bu_log_count(&t.c.log));
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof buf, "m%d", i);
		cr_assert_not_null(dt_find(&t, buf), "%s was accepted but never handled", buf);
	}
	cr_assert_null(dt_find(&t, "late"), "a message sent after shutdown began was read");
	zr_subscription_stats(t.sub, &st);
	cr_assert_eq(st.handled, 5);
	cr_assert_eq(st.discarded, 0);
	cr_assert_eq(st.in_flight, 0);
	free(h_jobs);
	free(h_late);
	free(h_warm);
	dt_close(&t);
}

/* §20 73, a handler that outlives the drain timeout */
Test(dispatch, shutdown_returns_ETIMEDOUT_when_a_handler_outlives_the_drain_timeout)
{
	struct dt t;
	struct shutdown_call sc;
	struct zr_sub_stats st;
	uint64_t until;

	dt_open(&t, 8, 1, 0);
	cr_assert_eq(zr_broker_set_drain_timeout(t.b, 300), 0);
	bu_log_hold(&t.c.log, true);
	dt_pub(&t, "stuck");
	dt_pub(&t, "queued");
	until = zt_now_ms() + BU_WAIT_MS;
	while (bu_log_waiting(&t.c.log) < 1 && zt_now_ms() < until)
		zt_sleep_ms(10);
	cr_assert_eq(bu_log_waiting(&t.c.log), 1, "the first message never reached the handler");
	wait_stats(&t, &st, BU_ACCEPTED, 2, "the second message never reached the subscription");
	shutdown_start(&sc, t.b);
	cr_assert(shutdown_join(&sc, BU_WAIT_MS), "shutdown with a 300 ms drain still waits");
	cr_assert_eq(sc.rc, -ETIMEDOUT, "shutdown with a handler past the drain timeout: %d",
	             sc.rc);
	cr_assert_geq(sc.t1 - sc.t0, 250, "shutdown gave up after %llu ms of 300",
	              (unsigned long long)(sc.t1 - sc.t0));
	cr_assert_eq(bu_log_count(&t.c.log), 0);
	bu_log_hold(&t.c.log, false); /* the handler returns; "queued" is discarded */
	cr_assert(bu_log_wait(&t.c.log, 1, BU_WAIT_MS));
	cr_assert(!bu_log_wait(&t.c.log, 2, BU_QUIET_MS),
	          "a message was handled after the drain timeout");
	cr_assert_str_eq(bu_log_at(&t.c.log, 0)->payload, "stuck");
	/* "messages still queued are discarded and counted" (zring.h) */
	bu_stats_wait(t.sub, BU_DISCARDED, 1, &st);
	cr_assert_eq(st.discarded, 1,
	             "discarded %llu (depth %zu, handled %llu), want the queued one",
	             (unsigned long long)st.discarded, st.depth, (unsigned long long)st.handled);
	dt_close(&t);
}
