/*
 * The single-producer single-consumer queue between an app thread and the io
 * thread. The queue keeps each side's index on its own cache line and a
 * cached copy of the other side's, so a busy producer and consumer touch the
 * shared line only when the cached view runs out. Its storage starts small
 * and grows by doubling up to the limit (engine.h, struct zr__spsc_seg).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The first ring's slots: a handful of messages in flight between two turns
 * of the other thread; a busy queue doubles from here to its limit. */
#define SPSC_FIRST 16

static struct zr__spsc_seg *
spsc_seg_new(size_t cap)
{
	/* Slots not zeroed: one is read only after the producer wrote it, and
	 * a large ring's untouched pages stay out of RSS. */
	struct zr__spsc_seg *g = malloc(sizeof *g + cap * sizeof g->slots[0]);

	if (g == NULL)
		return NULL;
	atomic_init(&g->next, NULL);
	g->end = 0;
	return g;
}

int
zr__spsc_init(struct zr__spsc *q, size_t min_cap)
{
	return zr__spsc_init_first(q, min_cap, SPSC_FIRST);
}

int
zr__spsc_init_first(struct zr__spsc *q, size_t min_cap, size_t first_cap)
{
	size_t cap = 2, first = 2;

	while (cap < min_cap)
		cap *= 2;
	while (first < first_cap && first < cap)
		first *= 2;
	q->cseg = spsc_seg_new(first);
	if (q->cseg == NULL)
		return -ENOMEM;
	q->cslots = q->cseg->slots;
	q->cmask = first - 1;
	q->clinks = 0;
	q->links_seen = 0;
	atomic_init(&q->links, 0);
	q->pseg = q->cseg;
	q->pslots = q->cseg->slots;
	q->pmask = first - 1;
	q->limit = cap;
	q->plimit = cap;
	q->pstart = 0;
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	q->ptail = 0;
	q->head_cache = 0;
	q->tail_cache = 0;
	return 0;
}

void
zr__spsc_fini(struct zr__spsc *q)
{
	struct zr__spsc_seg *g = q->cseg;

	while (g != NULL) {
		struct zr__spsc_seg *next = atomic_load_explicit(&g->next, memory_order_relaxed);

		free(g);
		g = next;
	}
	q->cseg = NULL;
	q->pseg = NULL;
}

size_t
zr__spsc_cap(const struct zr__spsc *q)
{
	return q->limit;
}

/*
 * The producer's ring is full below the limit: links one twice its size
 * (never more than the limit, which bounds what is queued in all rings
 * together). The consumer finds the link once it has read up to end.
 */
static bool
spsc_grow(struct zr__spsc *q, size_t t)
{
	size_t cap = (q->pmask + 1) * 2;
	struct zr__spsc_seg *n;

	if (cap > q->plimit)
		return false;
	n = spsc_seg_new(cap);
	if (n == NULL)
		return false;
	q->pseg->end = t;
	atomic_store_explicit(&q->pseg->next, n, memory_order_release);
	/* A release of its own (a plain store on x86): the consumer may read
	 * this count before the tail that covers the new ring's first slot,
	 * and must then see end and next too (ThreadSanitizer found the
	 * relaxed version: end read unordered against this write). */
	atomic_store_explicit(&q->links, atomic_load_explicit(&q->links, memory_order_relaxed) + 1,
	                      memory_order_release);
	q->pseg = n;
	q->pslots = n->slots;
	q->pmask = cap - 1;
	q->pstart = t;
	return true;
}

/* see engine.h: the ring is full by the cached head (or the queue is). */
bool
zr__spsc_push_slow(struct zr__spsc *q, void *p)
{
	size_t t = q->ptail;

	if (t - q->head_cache >= q->plimit) {
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - q->head_cache >= q->plimit)
			return false;
	}
	/* What pseg holds: its entries from pstart (or head, if later) on. */
	if (t - (q->head_cache > q->pstart ? q->head_cache : q->pstart) > q->pmask) {
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - (q->head_cache > q->pstart ? q->head_cache : q->pstart) > q->pmask &&
		    !spsc_grow(q, t))
			return false;
	}
	q->pslots[t & q->pmask] = p;
	q->ptail = t + 1;
	return true;
}

/* Consumer: read to the end of an outgrown ring, on to the next, and free
 * the old one (the producer left it when it linked the next). */
static void
spsc_follow(struct zr__spsc *q, size_t h)
{
	struct zr__spsc_seg *g = q->cseg;

	/* A ring the consumer knows was linked has its end set. */
	while (q->clinks != q->links_seen && h == g->end) {
		struct zr__spsc_seg *n = atomic_load_explicit(&g->next, memory_order_acquire);

		free(g);
		g = n;
		q->cmask = q->cmask * 2 + 1;
		q->clinks++;
	}
	q->cseg = g;
	q->cslots = g->slots;
}

/* see engine.h: the consumer's cached tail is used up, or a ring was
 * linked. Acquire on tail pairs with the producer's release (which also
 * publishes any ring linked before that slot was written). */
void *
zr__spsc_peek_slow(struct zr__spsc *q)
{
	size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (h == q->tail_cache) {
		q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
		/* Every link made before that tail, maybe one after: acquire,
		 * paired with the producer's release, so a link seen has its end
		 * and next seen too. */
		q->links_seen = atomic_load_explicit(&q->links, memory_order_acquire);
		if (h == q->tail_cache)
			return NULL;
	}
	if (q->clinks != q->links_seen)
		spsc_follow(q, h);
	return q->cslots[h & q->cmask];
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
	size_t t = q->ptail;

	if (t - q->head_cache >= limit)
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
	return t - q->head_cache;
}
