/*
 * The fan-out pattern (PUB/SUB; ruststream.md §6, §20 behaviours 31-37):
 * prefix filtering, unmatched messages dropped and counted, the local
 * subscription's filter awaited before the first publish (and what happens
 * when it never comes), slow joiners, and back-pressure from the slowest
 * *matching* subscriber only. As the seed says, that subscriber holds back
 * the publisher's one ordered stream, so the messages for all of them: a
 * fast subscriber gets every message later, never fewer; a subscriber that
 * matches nothing never holds the publisher back.
 */
#include "broker/broker_util.h"
#include "engine/engine_util.h"
#include "engine/sock_helpers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define F_LOOPBACK "tcp://127.0.0.1:0"

/*
 * Counts numbered deliveries "<prefix><n>" (n from 0, in order) without
 * keeping payloads; other names (probes) are counted apart. Can hold its
 * handler like a bu_log.
 */
struct f_count {
	struct bu_log gate; /* its mutex, condition and hold only */
	const char *prefix;
	size_t numbered, others;
	long next;
	int disorder; /* a number out of sequence came */
};

static void
f_count_init(struct f_count *c, const char *prefix)
{
	memset(c, 0, sizeof *c);
	bu_log_init(&c->gate);
	c->prefix = prefix;
}

static void
f_count_handler(const struct zr_delivery *d, void *arg)
{
	struct f_count *c = arg;
	size_t pl = strlen(c->prefix);

	pthread_mutex_lock(&c->gate.mu);
	c->gate.waiting++;
	while (c->gate.hold)
		pthread_cond_wait(&c->gate.cv, &c->gate.mu);
	c->gate.waiting--;
	if (d->error == 0 && strncmp(d->name, c->prefix, pl) == 0) {
		long n = strtol(d->name + pl, NULL, 10);

		c->disorder |= n != c->next;
		c->next = n + 1;
		c->numbered++;
	} else {
		c->others++;
	}
	pthread_cond_broadcast(&c->gate.cv);
	pthread_mutex_unlock(&c->gate.mu);
}

/* Waits until numbered + others >= n (bounded); returns whether. */
static bool
f_count_wait(struct f_count *c, size_t numbered, size_t others, int timeout_ms)
{
	uint64_t until = zt_now_ms() + (uint64_t)timeout_ms;
	bool ok;

	for (;;) {
		pthread_mutex_lock(&c->gate.mu);
		ok = c->numbered >= numbered && c->others >= others;
		pthread_mutex_unlock(&c->gate.mu);
		if (ok || zt_now_ms() >= until)
			return ok;
		zt_sleep_ms(10);
	}
}

static void
f_count_get(struct f_count *c, size_t *numbered, size_t *others, int *disorder)
{
	pthread_mutex_lock(&c->gate.mu);
	*numbered = c->numbered;
	*others = c->others;
	*disorder = c->disorder;
	pthread_mutex_unlock(&c->gate.mu);
}

/* Waits (bounded) until p's unmatched count reaches want; returns it. */
static uint64_t
f_unmatched(zr_publisher *p, uint64_t want)
{
	uint64_t until = zt_now_ms() + BU_WAIT_MS;
	struct zr_pub_stats st;

	for (;;) {
		zr_publisher_stats(p, &st);
		if (st.unmatched >= want || zt_now_ms() >= until)
			return st.unmatched;
		zt_sleep_ms(10);
	}
}

/* A started dialling fan-out broker with read_ahead, and its subscription. */
static zr_broker *
f_watcher(zr_ctx *ctx, const char *ep, unsigned read_ahead, const char *name, struct f_count *c)
{
	zr_broker *b;
	zr_subscription *sub;
	struct zr_sub_opts o = {.handler = f_count_handler, .arg = c};

	cr_assert_eq(zr_broker_new(ctx, ZR_FANOUT, ep, ZR_CONNECT, &b), 0);
	cr_assert_eq(zr_broker_set_read_ahead(b, read_ahead), 0);
	cr_assert_eq(zr_broker_start(b), 0, "%s", zr_broker_error(b));
	cr_assert_eq(zr_subscribe(b, name, &o, &sub), 0, "%s", zr_broker_error(b));
	return b;
}

/* Publishes probe every 100 ms until every counter in cs saw one (its
 * "others" grew) or, with waiting, until its handler is held on it. */
static void
f_probe(zr_publisher *p, const char *probe, struct f_count **cs, size_t n, bool waiting)
{
	uint64_t until = zt_now_ms() + BU_WAIT_MS;

	for (;;) {
		bool all = true;

		for (size_t i = 0; i < n; i++) {
			size_t got = waiting ? bu_log_waiting(&cs[i]->gate) : 0;

			if (!waiting) {
				pthread_mutex_lock(&cs[i]->gate.mu);
				got = cs[i]->others;
				pthread_mutex_unlock(&cs[i]->gate.mu);
			}
			all = all && got > 0;
		}
		if (all)
			return;
		cr_assert_lt(zt_now_ms(), until, "a subscriber never received \"%s\"", probe);
		int rc = zr_publish(p, probe, NULL, 0, "p", 1, 10000);

		cr_assert_eq(rc, 0, "probe: %d %s", rc, zr_publisher_error(p));
		zt_sleep_ms(100);
	}
}

/* §20 #31 */
Test(fanout, a_subscription_receives_only_names_its_own_name_prefixes)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	struct bu_log log;
	struct zr_pub_stats st;
	const char *names[] = {"orders.us.1", "orders.eu.1", "ordersX", "orders", "orders.eu.2"};

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	b = bu_broker(ctx, ZR_FANOUT, F_LOOPBACK, ZR_BIND);
	bu_sub(b, "orders.eu", &log);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	for (size_t i = 0; i < 5; i++) {
		int rc = zr_publish(p, names[i], NULL, 0, names[i], strlen(names[i]), 10000);

		cr_assert_eq(rc, 0, "publish %s: %d %s", names[i], rc, zr_publisher_error(p));
	}
	/* One publisher, one connection: in order, so the last one closes the
	 * window for anything wrongly let through. */
	cr_assert(bu_log_wait(&log, 2, BU_WAIT_MS), "got %zu", bu_log_count(&log));
	cr_assert(!bu_log_wait(&log, 3, BU_QUIET_MS), "a third delivery: %s",
	          bu_log_at(&log, 2)->name);
	cr_assert_str_eq(bu_log_at(&log, 0)->name, "orders.eu.1");
	cr_assert_str_eq(bu_log_at(&log, 1)->name, "orders.eu.2");
	zr_publisher_stats(p, &st);
	cr_assert_eq(st.published, 5);
	cr_assert_eq(f_unmatched(p, 3), 3);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/* §20 #32 */
Test(fanout, a_publish_nobody_subscribes_to_succeeds_and_is_counted_unmatched)
{
	zr_ctx *ctx;
	zr_broker *bound, *dialling;
	zr_publisher *p, *q;
	struct zr_pub_stats st;
	char ep[64];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	/* Bound, no subscription: the publisher listens, nobody comes. */
	bound = bu_broker(ctx, ZR_FANOUT, F_LOOPBACK, ZR_BIND);
	cr_assert_eq(zr_publisher_new(bound, &p), 0);
	for (int i = 0; i < 3; i++) {
		int rc = zr_publish(p, "news", NULL, 0, "n", 1, 3000);

		cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
	}
	zr_publisher_stats(p, &st);
	cr_assert_eq(st.published, 3, "published %llu", (unsigned long long)st.published);
	cr_assert_eq(f_unmatched(p, 3), 3);
	/* Dialling an address nobody listens on: PUB never reports "no peer". */
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	dialling = bu_broker(ctx, ZR_FANOUT, ep, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(dialling, &q), 0);
	int rc = zr_publish(q, "news", NULL, 0, "n", 1, 3000);

	cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(q));
	cr_assert_eq(f_unmatched(q, 1), 1);
	zr_broker_free(dialling);
	zr_broker_free(bound);
	zr_ctx_free(ctx);
}

/* §20 #33 */
Test(fanout, the_first_publish_to_a_local_bound_subscription_is_delivered)
{
	zr_ctx *ctx;
	zr_broker *b;
	struct bu_log log;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	b = bu_broker(ctx, ZR_FANOUT, F_LOOPBACK, ZR_BIND);
	bu_sub(b, "events", &log);
	/* Every new publisher pays the wait once: none loses its first message. */
	for (int k = 0; k < 5; k++) {
		zr_publisher *p;
		char name[32];

		snprintf(name, sizeof name, "events.%d", k);
		cr_assert_eq(zr_publisher_new(b, &p), 0);
		int rc = zr_publish(p, name, NULL, 0, "e", 1, 10000);

		cr_assert_eq(rc, 0, "publisher %d: %d %s", k, rc, zr_publisher_error(p));
		cr_assert(bu_log_wait(&log, (size_t)k + 1, BU_WAIT_MS),
		          "publisher %d's first message was lost", k);
		cr_assert_str_eq(bu_log_at(&log, (size_t)k)->name, name);
		zr_publisher_free(p);
	}
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/*
 * §20 #34. Through the public API a local subscription always sends its
 * filter; one that never does is made by taking its ipc path over: the
 * subscription keeps listening on the unlinked socket, and the path now
 * leads to a plain Unix listener that accepts and never speaks ZMTP.
 */
Test(fanout, a_local_subscription_that_never_sends_its_filter_fails_the_first_publish_after_5_s)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	struct bu_log log;
	char ep[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	bu_log_init(&log);
	snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/zr-broker-f34-%d.ipc", (int)getpid());
	snprintf(ep, sizeof ep, "ipc://%s", sa.sun_path);
	unlink(sa.sun_path);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	b = bu_broker(ctx, ZR_FANOUT, ep, ZR_BIND);
	bu_sub(b, "events", &log);
	cr_assert_eq(unlink(sa.sun_path), 0, "the subscription did not bind %s", sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(fd, 8), 0);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	uint64_t t0 = zt_now_ms();
	int rc = zr_publish(p, "events.x", NULL, 0, "e", 1, 30000);
	uint64_t took = zt_now_ms() - t0;

	cr_assert(rc == -ETIMEDOUT || rc == -ENOTCONN, "publish returned %d after %llu ms", rc,
	          (unsigned long long)took);
	cr_assert_geq(took, 4500, "gave up after %llu ms", (unsigned long long)took);
	cr_assert_lt(took, 15000, "gave up after %llu ms", (unsigned long long)took);
	cr_assert(strstr(zr_publisher_error(p), sa.sun_path) != NULL,
	          "\"%s\" does not name the endpoint", zr_publisher_error(p));
	cr_assert_eq(bu_log_count(&log), 0);
	close(fd);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	unlink(sa.sun_path);
	bu_log_fini(&log);
}

/* §20 #35 */
Test(fanout, a_remote_sub_connecting_late_misses_what_was_published_before)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	char ep[64];
	const char *opts[] = {"sub=6e657773", NULL}; /* "news" */
	char *late = et_hex("news.late"), *early = et_hex("news.early");
	int rc;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_FANOUT, ep, ZR_BIND);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	for (int i = 0; i < 3; i++) {
		rc = zr_publish(p, "news.early", NULL, 0, "e", 1, 10000);
		cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
	}
	struct et_peer *sub = et_peer_start("SUB", "connect", ep, opts);
	uint64_t until = zt_now_ms() + BU_WAIT_MS;
	const char *got;

	for (;;) {
		cr_assert_lt(zt_now_ms(), until, "the late SUB never received anything");
		rc = zr_publish(p, "news.late", NULL, 0, "l", 1, 10000);
		cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
		got = et_peer_ask(sub, ET_WAIT_MS, "recv 200");
		if (strcmp(got, "TIMEOUT") != 0)
			break;
	}
	/* Its first message, and everything after, is a late one. */
	for (;;) {
		cr_assert(strncmp(got, "MSG ", 4) == 0, "peer said \"%s\"", got);
		cr_assert(strncmp(got + 4, late, strlen(late)) == 0, "the late SUB received \"%s\"",
		          got);
		cr_assert(strncmp(got + 4, early, strlen(early)) != 0);
		got = et_peer_ask(sub, ET_WAIT_MS, "recv %d", BU_QUIET_MS);
		if (strcmp(got, "TIMEOUT") == 0)
			break;
	}
	cr_assert_geq(f_unmatched(p, 3), 3);
	free(late);
	free(early);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	et_peers_stop();
}

#define F_BIG (64 * 1024)

/* §20 #36 */
Test(fanout, an_unread_matching_subscriber_holds_the_publisher_back_until_it_reads)
{
	zr_ctx *ctx;
	zr_broker *b, *fast_b, *slow_b;
	zr_publisher *p;
	struct f_count fast, slow;
	struct f_count *both[] = {&fast, &slow};
	struct zr_pub_stats st;
	char ep[64], name[32];
	char *payload = calloc(1, F_BIG);
	long sent = 0;
	int rc = 0;

	cr_assert_not_null(payload);
	f_count_init(&fast, "ticks.n.");
	f_count_init(&slow, "ticks.n.");
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_FANOUT, ep, ZR_BIND);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	fast_b = f_watcher(ctx, ep, ZR_READ_AHEAD_DEFAULT, "ticks", &fast);
	slow_b = f_watcher(ctx, ep, 8, "ticks", &slow);
	f_probe(p, "ticks.probe", both, 2, false);
	bu_log_hold(&slow.gate, true);
	/* Publish until a publish times out waiting for the slow one. */
	for (sent = 0; sent < 20000; sent++) {
		snprintf(name, sizeof name, "ticks.n.%ld", sent);
		rc = zr_publish(p, name, NULL, 0, payload, F_BIG, 2000);
		if (rc == -ETIMEDOUT)
			break;
		cr_assert_eq(rc, 0, "publish %ld: %d %s", sent, rc, zr_publisher_error(p));
	}
	cr_assert_eq(rc, -ETIMEDOUT, "%ld messages of 64 KiB never held the publisher back", sent);
	zr_publisher_stats(p, &st);
	cr_assert_geq(st.blocked_ms, 1000, "blocked_ms %llu after a 2 s wait",
	              (unsigned long long)st.blocked_ms);
	/* The seed: "one slow subscriber holds back the messages for all of
	 * them". The fast one got a prefix of what was published, in order, and
	 * nothing more arrives while the slow one does not read. */
	size_t n, n_later, others;
	int disorder;

	/* What was taken before the hold may still be on its way on a loaded
	 * machine: wait until the count stops moving (a fast subscriber that
	 * is not held back never stops, and fails the check below). */
	f_count_get(&fast, &n, &others, &disorder);
	for (uint64_t end = zt_now_ms() + BU_WAIT_MS;;) {
		zt_sleep_ms(BU_QUIET_MS);
		f_count_get(&fast, &n_later, &others, &disorder);
		if (n_later == n || zt_now_ms() >= end)
			break;
		n = n_later;
	}
	cr_assert_leq(n, (size_t)sent, "fast got %zu, only %ld were published", n, sent);
	cr_assert_eq(disorder, 0);
	zt_sleep_ms(1000);
	f_count_get(&fast, &n_later, &others, &disorder);
	cr_assert_eq(n_later, n,
	             "the fast subscriber went on (%zu -> %zu) while the publisher was held", n,
	             n_later);
	/* The slow one reads again: the publisher resumes. */
	bu_log_hold(&slow.gate, false);
	for (long k = 0; k < 3; k++, sent++) {
		snprintf(name, sizeof name, "ticks.n.%ld", sent);
		rc = zr_publish(p, name, NULL, 0, payload, F_BIG, 20000);
		cr_assert_eq(rc, 0, "publish %ld after the release: %d %s", sent, rc,
		             zr_publisher_error(p));
	}
	cr_assert(f_count_wait(&slow, (size_t)sent, 0, 30000), "slow got %zu of %ld", slow.numbered,
	          sent);
	cr_assert(f_count_wait(&fast, (size_t)sent, 0, BU_WAIT_MS));
	f_count_get(&slow, &n, &others, &disorder);
	cr_assert_eq(n, (size_t)sent);
	cr_assert_eq(disorder, 0, "the slow subscriber got a gap or a repeat");
	/* Later, never dropped: the fast one has every message too. */
	f_count_get(&fast, &n, &others, &disorder);
	cr_assert_eq(n, (size_t)sent, "fast got %zu of %ld", n, sent);
	cr_assert_eq(disorder, 0, "the fast subscriber got a gap or a repeat");
	zr_broker_free(b);
	zr_broker_free(fast_b);
	zr_broker_free(slow_b);
	zr_ctx_free(ctx);
	bu_log_fini(&fast.gate);
	bu_log_fini(&slow.gate);
	free(payload);
}

/* §20 #37: a libzmq SUB that never reads (RCVHWM 1), matching none of it. */
Test(fanout, an_unread_subscriber_never_holds_back_messages_it_does_not_match)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	char ep[64], name[32];
	const char *opts[] = {"sub=736c6f77", "rcvhwm=1", "rcvbuf=4096", NULL}; /* "slow" */
	char *payload = calloc(1, F_BIG);
	int rc = 0, filled;

	cr_assert_not_null(payload);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_FANOUT, ep, ZR_BIND);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	rc = zr_publish(p, "slow.probe", NULL, 0, "p", 1, 10000); /* binds */
	cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
	struct et_peer *sub = et_peer_start("SUB", "connect", ep, opts);
	uint64_t until = zt_now_ms() + BU_WAIT_MS;

	/* Its filter arrived once it receives a probe; from then on it never
	 * reads again. */
	for (;;) {
		cr_assert_lt(zt_now_ms(), until, "the SUB never received a probe");
		rc = zr_publish(p, "slow.probe", NULL, 0, "p", 1, 10000);
		cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
		if (strcmp(et_peer_ask(sub, ET_WAIT_MS, "recv 200"), "TIMEOUT") != 0)
			break;
	}
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof name, "fast.%d", i);
		rc = zr_publish(p, name, NULL, 0, payload, 1024, 2000);
		cr_assert_eq(rc, 0, "publish %d: %d %s", i, rc, zr_publisher_error(p));
	}
	/* The control: what it matches does hold the publisher back. */
	for (filled = 0; filled < 4000; filled++) {
		snprintf(name, sizeof name, "slow.%d", filled);
		rc = zr_publish(p, name, NULL, 0, payload, F_BIG, 2000);
		if (rc == -ETIMEDOUT)
			break;
		cr_assert_eq(rc, 0, "fill %d: %d %s", filled, rc, zr_publisher_error(p));
	}
	cr_assert_eq(rc, -ETIMEDOUT, "the unread SUB never held matching messages back");
	zr_broker_free(b);
	zr_ctx_free(ctx);
	et_peers_stop();
	free(payload);
}
