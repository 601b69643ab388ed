/*
 * The single-producer single-consumer ring between an app thread and the io
 * thread. The ring keeps each side's index on its own cache line and a
 * cached copy of the other side's, so a busy producer and consumer touch the
 * shared line only when the cached view runs out.
 */
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
		atomic_store_explicit(&q->head,
		                      atomic_load_explicit(&q->head, memory_order_relaxed) + 1,
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
