/*
 * The app <-> io thread queue (engine/queue.c): it starts with a few slots
 * and grows by doubling up to its limit, so what it holds, in what order,
 * and when it refuses must not depend on where the growth happened.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#include "engine/engine.h"

static void *
tag(size_t i)
{
	return (void *)(uintptr_t)(i + 1); /* never NULL: NULL means empty */
}

Test(engine_queue, starts_small_and_holds_exactly_its_limit)
{
	struct zr__spsc q;

	cr_assert_eq(zr__spsc_init(&q, 1000), 0);
	cr_assert_eq(zr__spsc_cap(&q), 1024);
	cr_assert_lt(q.pmask + 1, 1024, "an idle queue holds few slots, not its limit's");
	for (size_t i = 0; i < 1024; i++)
		cr_assert(zr__spsc_push(&q, tag(i)), "push %zu of 1024", i);
	cr_assert_not(zr__spsc_push(&q, tag(1024)), "the limit holds across the growth");
	cr_assert_eq(zr__spsc_count(&q), 1024);
	for (size_t i = 0; i < 1024; i++)
		cr_assert_eq(zr__spsc_pop(&q), tag(i), "FIFO across rings at %zu", i);
	cr_assert_null(zr__spsc_pop(&q));
	/* Room again, in the largest ring. */
	cr_assert(zr__spsc_push(&q, tag(7)));
	cr_assert_eq(zr__spsc_peek(&q), tag(7));
	cr_assert_eq(zr__spsc_pop(&q), tag(7));
	zr__spsc_fini(&q);
}

/* Growth while the consumer is mid-ring (its head not at a ring's start),
 * with wrap-around in every ring size. */
Test(engine_queue, keeps_order_when_it_grows_behind_a_reader)
{
	struct zr__spsc q;
	size_t in = 0, out = 0;

	cr_assert_eq(zr__spsc_init(&q, 256), 0);
	for (size_t round = 1; round < 40; round++) {
		for (size_t k = 0; k < round * 3 && zr__spsc_count(&q) < 256; k++)
			cr_assert(zr__spsc_push(&q, tag(in++)));
		for (size_t k = 0; k < round * 2 && out < in; k++)
			cr_assert_eq(zr__spsc_pop(&q), tag(out++), "at %zu", out);
	}
	while (out < in)
		cr_assert_eq(zr__spsc_pop(&q), tag(out++));
	cr_assert_null(zr__spsc_pop(&q));
	cr_assert_eq(zr__spsc_count(&q), 0);
	zr__spsc_fini(&q);
}

/* A quiet push is the producer's until published: the consumer sees
 * nothing of it, the limit counts it, and a publish across a growth shows
 * every ring's entries in order. */
Test(engine_queue, quiet_pushes_show_only_when_published)
{
	struct zr__spsc q;

	cr_assert_eq(zr__spsc_init(&q, 64), 0);
	cr_assert(zr__spsc_push(&q, tag(0)));
	for (size_t i = 1; i < 64; i++)
		cr_assert(zr__spsc_push_quiet(&q, tag(i)), "quiet push %zu of 64", i);
	cr_assert_not(zr__spsc_push_quiet(&q, tag(64)), "unpublished entries count");
	cr_assert_eq(zr__spsc_count(&q), 1, "only the published entry is queued");
	cr_assert_eq(zr__spsc_pop(&q), tag(0));
	cr_assert_null(zr__spsc_pop(&q), "nothing published after the first");
	zr__spsc_publish(&q);
	cr_assert_eq(zr__spsc_count(&q), 63);
	for (size_t i = 1; i < 64; i++)
		cr_assert_eq(zr__spsc_pop(&q), tag(i), "FIFO across rings at %zu", i);
	cr_assert_null(zr__spsc_pop(&q));
	zr__spsc_publish(&q); /* nothing new: no change */
	cr_assert_null(zr__spsc_pop(&q));
	zr__spsc_fini(&q);
}

/* peek_cached shows only what the consumer's cached view holds, in order,
 * and never what lies past a ring it has not followed yet: no read of the
 * producer's line, so no entry it cannot vouch for. */
Test(engine_queue, peek_cached_shows_only_the_cached_view)
{
	struct zr__spsc q;

	cr_assert_eq(zr__spsc_init(&q, 256), 0);
	cr_assert_null(zr__spsc_peek_cached(&q, 0), "empty");
	cr_assert(zr__spsc_push(&q, tag(0)));
	cr_assert(zr__spsc_push(&q, tag(1)));
	cr_assert(zr__spsc_push(&q, tag(2)));
	cr_assert_null(zr__spsc_peek_cached(&q, 0), "pushed, but the consumer has not looked");
	cr_assert_eq(zr__spsc_pop(&q), tag(0));
	cr_assert_eq(zr__spsc_peek_cached(&q, 0), tag(1));
	cr_assert_eq(zr__spsc_peek_cached(&q, 1), tag(2));
	cr_assert_null(zr__spsc_peek_cached(&q, 2), "past the cached tail");
	cr_assert(zr__spsc_push(&q, tag(3)));
	cr_assert_null(zr__spsc_peek_cached(&q, 2), "a later push waits for the next look");
	cr_assert_eq(zr__spsc_peek_cached(&q, 0), tag(1), "peeking takes nothing");
	/* Grow the queue past its first ring: entries in a ring the consumer
	 * has not followed stay hidden until a pop follows the link. */
	size_t in = 4, shown = 0;
	while (in < 200)
		cr_assert(zr__spsc_push(&q, tag(in++)));
	for (size_t out = 1; out < in; out++) {
		void *next = zr__spsc_peek_cached(&q, 1);

		cr_assert_eq(zr__spsc_pop(&q), tag(out), "FIFO at %zu", out);
		if (next != NULL)
			cr_assert_eq(next, tag(out + 1), "peek_cached(1) was the entry after %zu",
			             out);
		/* Once in the last ring (every link followed), each pop but the
		 * last shows the one after next. */
		if (out >= in - 50 && out < in - 2 && next != NULL)
			shown++;
	}
	cr_assert_eq(shown, 48, "the last ring's entries were shown ahead (%zu of 48)", shown);
	cr_assert_null(zr__spsc_pop(&q));
	cr_assert_null(zr__spsc_peek_cached(&q, 0));
	zr__spsc_fini(&q);
}

/* fini frees rings the consumer never reached. */
Test(engine_queue, frees_every_ring_with_messages_still_queued)
{
	struct zr__spsc q;

	cr_assert_eq(zr__spsc_init(&q, 512), 0);
	for (size_t i = 0; i < 300; i++)
		cr_assert(zr__spsc_push(&q, tag(i)));
	cr_assert_eq(zr__spsc_pop(&q), tag(0));
	zr__spsc_fini(&q); /* ASan: no leak */
}

#define XFER 200000

static void *
producer(void *arg)
{
	struct zr__spsc *q = arg;

	for (size_t i = 0; i < XFER;) {
		if (zr__spsc_push(q, tag(i)))
			i++;
		else
			sched_yield();
	}
	return NULL;
}

/* The same in batches of quiet pushes, each published as one (the
 * io thread's rx), the last batch short. */
static void *
producer_batched(void *arg)
{
	struct zr__spsc *q = arg;

	for (size_t i = 0; i < XFER;) {
		if (zr__spsc_push_quiet(q, tag(i))) {
			i++;
			if (i % 37 == 0 || i == XFER)
				zr__spsc_publish(q);
		} else {
			zr__spsc_publish(q);
			sched_yield();
		}
	}
	return NULL;
}

/* One producer thread, one consumer thread, the queue growing under both. */
static void
two_threads(void *(*fn)(void *))
{
	struct zr__spsc q;
	pthread_t t;
	size_t got = 0;

	cr_assert_eq(zr__spsc_init(&q, 1024), 0);
	cr_assert_eq(pthread_create(&t, NULL, fn, &q), 0);
	while (got < XFER) {
		void *p = zr__spsc_pop(&q);

		if (p == NULL) {
			sched_yield();
			continue;
		}
		if (p != tag(got))
			cr_assert_fail("got %p, want %p", p, tag(got));
		got++;
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_null(zr__spsc_pop(&q));
	zr__spsc_fini(&q);
}

Test(engine_queue, two_threads_see_every_pointer_once_in_order, .timeout = 120)
{
	two_threads(producer);
}

Test(engine_queue, two_threads_see_every_batched_pointer_once_in_order, .timeout = 120)
{
	two_threads(producer_batched);
}
