/*
 * The single-producer single-consumer ring between an app thread and the io
 * thread, and the subscription sets. The ring keeps each side's index on its
 * own cache line and a cached copy of the other side's, so a busy producer
 * and consumer touch the shared line only when the cached view runs out.
 */
#define _GNU_SOURCE /* liburing.h (through engine.h) needs sigset_t */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int
zr__spsc_init(struct zr__spsc *q, size_t min_cap)
{
	size_t cap = 2;

	while (cap < min_cap)
		cap *= 2;
	/* Not zeroed: a slot is read only after the producer wrote it, and an
	 * idle ring keeps its untouched pages out of RSS. */
	q->slots = malloc(cap * sizeof *q->slots);
	if (q->slots == NULL)
		return -ENOMEM;
	q->mask = cap - 1;
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	q->head_cache = 0;
	q->tail_cache = 0;
	return 0;
}

void
zr__spsc_fini(struct zr__spsc *q)
{
	free(q->slots);
	q->slots = NULL;
}

size_t
zr__spsc_cap(const struct zr__spsc *q)
{
	return q->mask + 1;
}

/* Producer. Release on tail publishes the slot's contents to the consumer. */
bool
zr__spsc_push(struct zr__spsc *q, void *p)
{
	size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (t - q->head_cache > q->mask) {
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - q->head_cache > q->mask)
			return false;
	}
	q->slots[t & q->mask] = p;
	atomic_store_explicit(&q->tail, t + 1, memory_order_release);
	return true;
}

/* Consumer. Acquire on tail pairs with the producer's release. */
void *
zr__spsc_peek(struct zr__spsc *q)
{
	size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (h == q->tail_cache) {
		q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (h == q->tail_cache)
			return NULL;
	}
	return q->slots[h & q->mask];
}

void *
zr__spsc_pop(struct zr__spsc *q)
{
	void *p = zr__spsc_peek(q);

	if (p != NULL)
		atomic_store_explicit(&q->head, atomic_load_explicit(&q->head, memory_order_relaxed) + 1,
		                      memory_order_release);
	return p;
}

size_t
zr__spsc_count(struct zr__spsc *q)
{
	return atomic_load_explicit(&q->tail, memory_order_acquire) -
	       atomic_load_explicit(&q->head, memory_order_acquire);
}

size_t
zr__spsc_count_upto(struct zr__spsc *q, size_t limit)
{
	size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (t - q->head_cache >= limit)
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
	return t - q->head_cache;
}

/* ---- subscriptions ------------------------------------------------------ */

static struct zr__sub *
subs_find(const struct zr__subs *s, const uint8_t *t, size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].len == len && (len == 0 || memcmp(s->v[i].topic, t, len) == 0))
			return &s->v[i];
	}
	return NULL;
}

int
zr__subs_add(struct zr__subs *s, const uint8_t *t, size_t len)
{
	struct zr__sub *e = subs_find(s, t, len);

	if (e != NULL) {
		e->count++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct zr__sub *v = realloc(s->v, cap * sizeof *v);

		if (v == NULL)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	e = &s->v[s->n];
	e->topic = malloc(len ? len : 1);
	if (e->topic == NULL)
		return -ENOMEM;
	if (len)
		memcpy(e->topic, t, len);
	e->len = len;
	e->count = 1;
	s->n++;
	return 1;
}

int
zr__subs_remove(struct zr__subs *s, const uint8_t *t, size_t len)
{
	struct zr__sub *e = subs_find(s, t, len);

	if (e == NULL)
		return 0;
	if (--e->count > 0)
		return 0;
	free(e->topic);
	*e = s->v[--s->n];
	return 1;
}

bool
zr__subs_match(const struct zr__subs *s, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].len <= len && (s->v[i].len == 0 || memcmp(s->v[i].topic, data, s->v[i].len) == 0))
			return true;
	}
	return false;
}

void
zr__subs_fini(struct zr__subs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].topic);
	free(s->v);
	memset(s, 0, sizeof *s);
}
