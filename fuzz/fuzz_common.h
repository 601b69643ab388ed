/*
 * Helpers shared by the fuzz harnesses (fuzz/fuzz_*.c). Header-only, every
 * function static: each harness is one translation unit, links only the
 * codec, and keeps no global mutable state (all state lives on the stack or
 * in buffers freed before LLVMFuzzerTestOneInput returns).
 *
 * What the helpers give the harnesses:
 *   - FZ_CHECK: an invariant check that prints what failed and aborts. Only
 *     for invariants of the codec's contract, never for protocol errors
 *     (a peer sending garbage is normal input).
 *   - struct fz_buf: the caller side of the input contract. It holds the
 *     unconsumed bytes in a heap block of EXACTLY their length, so ASan flags
 *     any read past what was presented.
 *   - struct fz_log: a growable byte log. Each run writes its normalised
 *     event stream into one; the chunked and one-shot runs must produce
 *     identical logs (the differential oracle).
 *   - struct fz_rng: a tiny deterministic generator, seeded from the input,
 *     that picks chunk sizes so partial delivery is explored.
 *   - fz_touch: reads every byte of a span (ASan catches a bad span) and
 *     folds them into an order-independent sum, which the runs compare.
 */
#ifndef ZR_FUZZ_FUZZ_COMMON_H
#define ZR_FUZZ_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Frames-per-message limits the harnesses pick (0: the codec's default), and
 * the limit a given setting means. */
static const uint32_t fz_frame_limits[8] = {0, 0, 0, 0, 1, 2, 3, 8};

static inline uint32_t
fz_frame_limit(uint32_t configured)
{
	return configured != 0 ? configured : 65536u; /* ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES */
}

#define FZ_CHECK(cond)                                      \
	do {                                                \
		if (!(cond))                                \
			fz_fail(#cond, __FILE__, __LINE__); \
	} while (0)

_Noreturn static inline void
fz_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: invariant violated: %s\n", file, line, what);
	fflush(stderr);
	abort();
}

static inline void *
fz_alloc(size_t n)
{
	/* A zero-byte block stays zero bytes (ASan flags any access to it); only
	 * if this libc returns NULL for it does the harness take one byte. */
	void *p = malloc(n);

	if (p == NULL && n == 0)
		p = malloc(1);

	if (p == NULL)
		fz_fail("out of memory in the harness", __FILE__, __LINE__);
	return p;
}

/* ------------------------------------------------------------------------ */

/* Reads every byte of [p, p + n) and returns their sum. */
static inline uint64_t
fz_touch(const uint8_t *p, size_t n)
{
	uint64_t s = 0;
	size_t i;

	if (n > 0)
		FZ_CHECK(p != NULL);
	for (i = 0; i < n; i++)
		s += p[i];
	return s;
}

/* Whether [p, p + n) lies inside [base, base + len). */
static inline bool
fz_within(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	if (n == 0 && p == NULL)
		return true;
	return a >= b && a - b <= len && n <= len - (a - b);
}

/* ------------------------------------------------------------------------ */

struct fz_log {
	uint8_t *p;
	size_t len, cap;
};

static inline void
fz_log_bytes(struct fz_log *l, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (l->cap - l->len < n) {
		size_t cap = l->cap ? l->cap : 256;
		uint8_t *q;

		while (cap - l->len < n)
			cap *= 2;
		q = realloc(l->p, cap);
		if (q == NULL)
			fz_fail("out of memory in the harness", __FILE__, __LINE__);
		l->p = q;
		l->cap = cap;
	}
	memcpy(l->p + l->len, p, n);
	l->len += n;
}

static inline void
fz_log_u8(struct fz_log *l, uint8_t v)
{
	fz_log_bytes(l, &v, 1);
}

static inline void
fz_log_u64(struct fz_log *l, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	fz_log_bytes(l, b, sizeof b);
}

static inline void
fz_log_int(struct fz_log *l, int v)
{
	fz_log_u64(l, (uint64_t)(int64_t)v);
}

static inline void
fz_log_free(struct fz_log *l)
{
	free(l->p);
	l->p = NULL;
	l->len = l->cap = 0;
}

static inline bool
fz_log_equal(const struct fz_log *a, const struct fz_log *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* Prints where two logs first differ: a crash report then says what diverged. */
static inline void
fz_log_diff(const char *what, const struct fz_log *a, const struct fz_log *b)
{
	size_t i = 0;

	while (i < a->len && i < b->len && a->p[i] == b->p[i])
		i++;
	fprintf(stderr, "%s: logs differ at byte %zu (one-shot %zu bytes, chunked %zu bytes)\n",
	        what, i, a->len, b->len);
#ifdef FZ_TRACE
	for (size_t k = 0; k < a->len || k < b->len; k++)
		fprintf(stderr, "%4zu %c %02x %02x\n", k, k == i ? '*' : ' ',
		        k < a->len ? a->p[k] : 0, k < b->len ? b->p[k] : 0);
#endif
}

/* ------------------------------------------------------------------------ */

/*
 * The unconsumed input, in a block of exactly len bytes. Every append or drop
 * reallocates to the exact size: slower than a ring, but an over-read by the
 * codec by even one byte lands outside the block.
 */
struct fz_buf {
	uint8_t *p;
	size_t len;
};

static inline void
fz_buf_set(struct fz_buf *b, const uint8_t *keep, size_t keep_len, const uint8_t *add,
           size_t add_len)
{
	uint8_t *q = fz_alloc(keep_len + add_len);

	if (keep_len > 0)
		memcpy(q, keep, keep_len);
	if (add_len > 0)
		memcpy(q + keep_len, add, add_len);
	free(b->p);
	b->p = q;
	b->len = keep_len + add_len;
}

/* Empty, but with a real pointer: the codec is never handed NULL. */
static inline void
fz_buf_init(struct fz_buf *b)
{
	b->p = NULL;
	b->len = 0;
	fz_buf_set(b, NULL, 0, NULL, 0);
}

static inline void
fz_buf_append(struct fz_buf *b, const uint8_t *p, size_t n)
{
	if (n > 0)
		fz_buf_set(b, b->p, b->len, p, n);
}

static inline void
fz_buf_drop(struct fz_buf *b, size_t n)
{
	FZ_CHECK(n <= b->len);
	if (n > 0)
		fz_buf_set(b, b->p + n, b->len - n, NULL, 0);
}

static inline void
fz_buf_free(struct fz_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

/* ------------------------------------------------------------------------ */

struct fz_rng {
	uint32_t s;
};

static inline void
fz_rng_init(struct fz_rng *r, uint32_t seed)
{
	r->s = seed * 2654435761u + 0x9e3779b9u;
	if (r->s == 0)
		r->s = 1;
}

static inline uint32_t
fz_rng_next(struct fz_rng *r)
{
	uint32_t x = r->s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	r->s = x;
	return x;
}

/*
 * The next chunk length, 1..remaining: often a single byte, often a few,
 * sometimes around the 64-octet greeting or the 255/256 short/long frame
 * boundary, sometimes large.
 */
static inline size_t
fz_chunk_len(struct fz_rng *r, size_t remaining)
{
	uint32_t x = fz_rng_next(r);
	size_t n;

	switch (x & 7) {
	case 0:
	case 1:
		n = 1;
		break;
	case 2:
	case 3:
		n = 1 + (x >> 3) % 9;
		break;
	case 4:
		n = 60 + (x >> 3) % 8;
		break;
	case 5:
		n = 1 + (x >> 3) % 70;
		break;
	case 6:
		n = 250 + (x >> 3) % 12;
		break;
	default:
		n = 1 + (x >> 3) % 1024;
		break;
	}
	return n < remaining ? n : remaining;
}

/* Network-order readers for the harnesses' own reference parsing. */
static inline uint32_t
fz_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
fz_get64(const uint8_t *p)
{
	return (uint64_t)fz_get32(p) << 32 | fz_get32(p + 4);
}

#endif /* ZR_FUZZ_FUZZ_COMMON_H */
