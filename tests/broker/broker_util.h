/*
 * Broker tests: a thread-safe log of deliveries (static inline, included by
 * tests/broker/test_*.c; read-only for everyone but its owner).
 *
 * A handler runs on the broker's threads and everything a delivery points to
 * lives only until the handler returns, so bu_log_handler copies each
 * delivery into a bu_item appended to a bu_log under its mutex, and wakes
 * whoever waits in bu_log_wait. Items never move or change once logged (the
 * log holds pointers to them), so a test may keep a pointer from bu_log_at
 * while handlers keep appending.
 *
 *   struct bu_log log;
 *   bu_log_init(&log);
 *   struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &log};
 *   ... zr_subscribe(b, "jobs", &o, &sub) ...
 *   cr_assert(bu_log_wait(&log, 3, BU_WAIT_MS), "got %zu", bu_log_count(&log));
 *   cr_assert_str_eq(bu_log_at(&log, 0)->name, "jobs");
 *   ... free the broker first (no handler may run any more), then:
 *   bu_log_fini(&log);
 *
 * Batches: bu_log_batch_handler logs each member as an item and numbers the
 * batch calls from 1 (item->batch; 0 for single deliveries), with
 * item->batch_size the size of the batch it came in.
 *
 * Holding handlers back: after bu_log_hold(&log, true) every handler call
 * waits (before logging) until bu_log_hold(&log, false); log->waiting counts
 * the calls waiting now (bu_log_waiting). Release before freeing the broker,
 * or its shutdown waits for the held handlers.
 *
 * Brokers: bu_broker (new + start), bu_sub (a logging subscription) and
 * bu_bound (the bound subscription's address) assert instead of returning
 * codes, for the set-up lines of a test.
 */
#ifndef ZR_TESTS_BROKER_BROKER_UTIL_H
#define ZR_TESTS_BROKER_BROKER_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, condattr_setclock: include this header first */
#endif
#include "zt_clock.h"
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zring/zring.h>

#define BU_WAIT_MS 10000 /* any single expected delivery (a loaded machine) */
#define BU_QUIET_MS 500  /* "nothing more arrives" windows */

/* One logged delivery: a deep copy, NUL-terminated strings. */
struct bu_item {
	char *name;
	struct zr_header *headers; /* name/value strings owned by the item */
	size_t nheaders;
	char *payload; /* payload_len bytes plus a NUL, so text compares easily */
	size_t payload_len;
	char *reply_to; /* NULL when the delivery had none */
	uint64_t seq;
	unsigned lane;
	int error;         /* d->error */
	char *error_text;  /* NULL when the delivery had none */
	size_t batch;      /* the batch call (from 1) it came in; 0: single delivery */
	size_t batch_size; /* that batch's size; 0: single delivery */
	uint64_t at_ms;    /* CLOCK_MONOTONIC when it was logged */
};

struct bu_log {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an item was logged, or the hold was released */
	struct bu_item **items;
	size_t n, cap;
	size_t batches; /* batch calls so far */
	bool hold;
	size_t waiting; /* handler calls waiting on the hold */
};

static inline void
bu_log_init(struct bu_log *log)
{
	pthread_condattr_t ca;

	memset(log, 0, sizeof *log);
	pthread_mutex_init(&log->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&log->cv, &ca);
	pthread_condattr_destroy(&ca);
}

static inline char *
bu__dup(const void *p, size_t len)
{
	char *s = malloc(len + 1);

	if (s == NULL)
		abort(); /* a handler thread cannot cr_assert */
	if (len > 0)
		memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

static inline char *
bu__dupstr(const char *s)
{
	return s != NULL ? bu__dup(s, strlen(s)) : NULL;
}

static inline void
bu__item_free(struct bu_item *it)
{
	free(it->name);
	for (size_t i = 0; i < it->nheaders; i++) {
		free((char *)it->headers[i].name);
		free((char *)it->headers[i].value);
	}
	free(it->headers);
	free(it->payload);
	free(it->reply_to);
	free(it->error_text);
	free(it);
}

static inline void
bu_log_fini(struct bu_log *log)
{
	for (size_t i = 0; i < log->n; i++)
		bu__item_free(log->items[i]);
	free(log->items);
	pthread_cond_destroy(&log->cv);
	pthread_mutex_destroy(&log->mu);
}

static inline struct bu_item *
bu__item_new(const struct zr_delivery *d)
{
	struct bu_item *it = calloc(1, sizeof *it);

	if (it == NULL)
		abort();
	it->name = bu__dupstr(d->name);
	if (d->nheaders > 0) {
		it->headers = calloc(d->nheaders, sizeof *it->headers);
		if (it->headers == NULL)
			abort();
		for (size_t i = 0; i < d->nheaders; i++) {
			it->headers[i].name = bu__dupstr(d->headers[i].name);
			it->headers[i].value = bu__dupstr(d->headers[i].value);
		}
	}
	it->nheaders = d->nheaders;
	it->payload = bu__dup(d->payload, d->payload_len);
	it->payload_len = d->payload_len;
	it->reply_to = bu__dupstr(d->reply_to);
	it->seq = d->seq;
	it->lane = d->lane;
	it->error = d->error;
	it->error_text = bu__dupstr(d->error_text);
	it->at_ms = zt_now_ms();
	return it;
}

/* Waits while the log is held; called with the mutex held. */
static inline void
bu__hold_wait(struct bu_log *log)
{
	log->waiting++;
	while (log->hold)
		pthread_cond_wait(&log->cv, &log->mu);
	log->waiting--;
}

static inline void
bu__append(struct bu_log *log, struct bu_item *it)
{
	if (log->n == log->cap) {
		size_t cap = log->cap > 0 ? log->cap * 2 : 64;
		struct bu_item **items = realloc(log->items, cap * sizeof *items);

		if (items == NULL)
			abort();
		log->items = items;
		log->cap = cap;
	}
	log->items[log->n++] = it;
}

/* A zr_handler_fn: arg is a struct bu_log *. */
static inline void
bu_log_handler(const struct zr_delivery *d, void *arg)
{
	struct bu_log *log = arg;
	struct bu_item *it = bu__item_new(d);

	pthread_mutex_lock(&log->mu);
	bu__hold_wait(log);
	bu__append(log, it);
	pthread_cond_broadcast(&log->cv);
	pthread_mutex_unlock(&log->mu);
}

/* A zr_batch_fn: arg is a struct bu_log *. */
static inline void
bu_log_batch_handler(const struct zr_delivery *const *batch, size_t n, void *arg)
{
	struct bu_log *log = arg;

	pthread_mutex_lock(&log->mu);
	bu__hold_wait(log);
	log->batches++;
	for (size_t i = 0; i < n; i++) {
		struct bu_item *it = bu__item_new(batch[i]);

		it->batch = log->batches;
		it->batch_size = n;
		bu__append(log, it);
	}
	pthread_cond_broadcast(&log->cv);
	pthread_mutex_unlock(&log->mu);
}

static inline size_t
bu_log_count(struct bu_log *log)
{
	size_t n;

	pthread_mutex_lock(&log->mu);
	n = log->n;
	pthread_mutex_unlock(&log->mu);
	return n;
}

/* Waits until the log holds at least n items, for at most timeout_ms.
 * Returns whether it does. */
static inline bool
bu_log_wait(struct bu_log *log, size_t n, int timeout_ms)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&log->mu);
	while (log->n < n) {
		if (pthread_cond_timedwait(&log->cv, &log->mu, &until) == ETIMEDOUT)
			break;
	}
	ok = log->n >= n;
	pthread_mutex_unlock(&log->mu);
	return ok;
}

/* A count of a subscription's stats that bu_stats_wait waits for. */
enum bu_stat {
	BU_DEPTH,     /* in the channel now */
	BU_RECEIVED,  /* taken off the channel */
	BU_ACCEPTED,  /* received + depth: every message the subscription took in */
	BU_HANDLED,   /* handler calls returned */
	BU_DISCARDED, /* dropped by unsubscribe or shutdown */
};

static inline uint64_t
bu_stat_of(const struct zr_sub_stats *st, enum bu_stat what)
{
	switch (what) {
	case BU_DEPTH:
		return st->depth;
	case BU_RECEIVED:
		return st->received;
	case BU_ACCEPTED:
		return st->received + st->depth;
	case BU_HANDLED:
		return st->handled;
	case BU_DISCARDED:
		return st->discarded;
	}
	return 0;
}

/* Polls sub's stats until the count what reaches n, for at most BU_WAIT_MS;
 * *st holds the last read. Returns whether it got there. */
static inline bool
bu_stats_wait(zr_subscription *sub, enum bu_stat what, uint64_t n, struct zr_sub_stats *st)
{
	uint64_t until = zt_now_ms() + BU_WAIT_MS;

	for (;;) {
		zr_subscription_stats(sub, st);
		if (bu_stat_of(st, what) >= n)
			return true;
		if (zt_now_ms() >= until)
			return false;
		zt_sleep_ms(10);
	}
}

/* Item i (asserts it exists). The pointer stays valid until bu_log_fini. */
static inline const struct bu_item *
bu_log_at(struct bu_log *log, size_t i)
{
	const struct bu_item *it = NULL;

	pthread_mutex_lock(&log->mu);
	if (i < log->n)
		it = log->items[i];
	pthread_mutex_unlock(&log->mu);
	cr_assert_not_null(it, "no delivery #%zu (the log holds %zu)", i, bu_log_count(log));
	return it;
}

/* While held, handler calls wait before logging; releasing wakes them. */
static inline void
bu_log_hold(struct bu_log *log, bool hold)
{
	pthread_mutex_lock(&log->mu);
	log->hold = hold;
	pthread_cond_broadcast(&log->cv);
	pthread_mutex_unlock(&log->mu);
}

/* How many handler calls are waiting on the hold now. */
static inline size_t
bu_log_waiting(struct bu_log *log)
{
	size_t n;

	pthread_mutex_lock(&log->mu);
	n = log->waiting;
	pthread_mutex_unlock(&log->mu);
	return n;
}

/* The value of the item's first header called name (ASCII case-insensitive),
 * or NULL. */
static inline const char *
bu_item_header(const struct bu_item *it, const char *name)
{
	for (size_t i = 0; i < it->nheaders; i++) {
		const char *a = it->headers[i].name, *b = name;

		while (*a != '\0' && (*a | (*a >= 'A' && *a <= 'Z' ? 0x20 : 0)) ==
		                             (*b | (*b >= 'A' && *b <= 'Z' ? 0x20 : 0))) {
			a++;
			b++;
		}
		if (*a == '\0' && *b == '\0')
			return it->headers[i].value;
	}
	return NULL;
}

/* How many items are called name. */
static inline size_t
bu_log_count_named(struct bu_log *log, const char *name)
{
	size_t k = 0;

	pthread_mutex_lock(&log->mu);
	for (size_t i = 0; i < log->n; i++)
		k += strcmp(log->items[i]->name != NULL ? log->items[i]->name : "", name) == 0;
	pthread_mutex_unlock(&log->mu);
	return k;
}

/* Joins th if it sets *done within timeout_ms (a call that must end in
 * time); false, leaving it running, if not. */
static inline bool
bu_join_within(pthread_t th, atomic_bool *done, int timeout_ms)
{
	uint64_t until = zt_now_ms() + (uint64_t)timeout_ms;

	while (!atomic_load(done) && zt_now_ms() < until)
		zt_sleep_ms(10);
	if (!atomic_load(done))
		return false;
	pthread_join(th, NULL);
	return true;
}

/* ---- brokers (assert on failure) ---- */

/* A new started broker of pattern on ep (ZR_BIND or ZR_CONNECT). */
static inline zr_broker *
bu_broker(zr_ctx *ctx, int pattern, const char *ep, int side)
{
	zr_broker *b = NULL;
	int rc = zr_broker_new(ctx, pattern, ep, side, &b);

	cr_assert_eq(rc, 0, "zr_broker_new(%s): %d", ep, rc);
	rc = zr_broker_start(b);
	cr_assert_eq(rc, 0, "zr_broker_start(%s): %d %s", ep, rc, zr_broker_error(b));
	return b;
}

/* A subscription on name whose handler logs into log (one at a time). */
static inline zr_subscription *
bu_sub(zr_broker *b, const char *name, struct bu_log *log)
{
	struct zr_sub_opts o = {.handler = bu_log_handler, .arg = log};
	zr_subscription *sub = NULL;
	int rc = zr_subscribe(b, name, &o, &sub);

	cr_assert_eq(rc, 0, "zr_subscribe(%s): %d %s", name, rc, zr_broker_error(b));
	cr_assert_not_null(sub);
	return sub;
}

/* The address b's bound subscription listens on, into buf. */
static inline const char *
bu_bound(zr_broker *b, char *buf, size_t cap)
{
	int n = zr_broker_bound_address(b, buf, cap);

	cr_assert_gt(n, 0, "zr_broker_bound_address: %d", n);
	return buf;
}

#endif /* ZR_TESTS_BROKER_BROKER_UTIL_H */
