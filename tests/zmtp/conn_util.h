/*
 * Helpers shared by the connection suites: a codec on the heap filled with
 * junk before init, feeding literal peer bytes, checking our output bytes,
 * and two codecs wired back to back.
 */
#ifndef ZR_TESTS_ZMTP_CONN_UTIL_H
#define ZR_TESTS_ZMTP_CONN_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <zring/zmtp.h>

#include "feed.h"
#include "guard.h"

static inline struct zr_zmtp *
conn_new(const struct zr_zmtp_config *cfg, uint64_t now)
{
	struct zr_zmtp *z = malloc(sizeof(*z));
	int rc;

	cr_assert_not_null(z);
	memset(z, ZT_JUNK, sizeof(*z));
	rc = zr_zmtp_init(z, cfg, now);
	cr_assert_eq(rc, 0, "zr_zmtp_init: %d (%s)", rc, zr_strerror(rc));
	return z;
}

/* Takes everything z wants written; returns it in a fresh run (free it). */
static inline struct zt_run
conn_take_out(struct zr_zmtp *z)
{
	struct zt_run r;

	memset(&r, 0, sizeof(r));
	zt_conn_drain(z, &r);
	cr_assert(r.violation[0] == '\0', "%s", r.violation);
	return r;
}

/* Asserts that z wants to write exactly want[0..n) and takes it. */
static inline void
conn_out_is(struct zr_zmtp *z, const void *want, size_t n, int line)
{
	struct zt_run r = conn_take_out(z);

	zt_assert_bytes("codec output", r.out, r.out_len, want, n, line);
	zt_run_free(&r);
}
#define OUT_IS(z, lit) conn_out_is((z), (lit), sizeof(lit) - 1, __LINE__)
#define OUT_NONE(z) conn_out_is((z), "", 0, __LINE__)

/* Feeds in[0..n) whole (flush against a guard page), appending to r.
 * Returns the last result. Leftover bytes must be none unless allowed. */
static inline int
conn_feed(struct zr_zmtp *z, uint64_t now, const void *in, size_t n, struct zt_run *r, int line)
{
	size_t leftover;

	zt_conn_feed_cuts(z, now, in, n, NULL, 0, r, &leftover);
	cr_assert(r->violation[0] == '\0', "line %d: %s", line, r->violation);
	if (r->rc >= 0)
		cr_assert_eq(leftover, 0, "line %d: %zu octets left unconsumed", line, leftover);
	return r->rc;
}
#define FEED(z, now, lit, r) conn_feed((z), (now), (lit), sizeof(lit) - 1, (r), __LINE__)

/* Asserts that the run holds exactly nev events, then returns the i-th. */
static inline const struct zt_ev *
conn_ev(const struct zt_run *r, size_t i, int type)
{
	cr_assert_lt(i, r->nev, "event %zu of %zu", i, r->nev);
	cr_assert_eq(r->ev[i].type, type, "event %zu: type %d, want %d", i, r->ev[i].type, type);
	return &r->ev[i];
}

/* ---------------------------------------------------------------- */
/* Two codecs back to back. */

struct side {
	struct zr_zmtp *z;
	struct zt_run ev; /* everything this side's codec produced */
	uint8_t *in;      /* bytes from the other side not yet consumed */
	size_t in_len;
};

static inline void
side_init(struct side *s, const struct zr_zmtp_config *cfg, uint64_t now)
{
	memset(s, 0, sizeof(*s));
	s->z = conn_new(cfg, now);
}

static inline void
side_fini(struct side *s)
{
	free(s->z);
	free(s->in);
	zt_run_free(&s->ev);
}

static inline void
side_append(struct side *s, const void *p, size_t n)
{
	s->in = realloc(s->in, s->in_len + n + 1);
	cr_assert_not_null(s->in);
	if (n > 0)
		memcpy(s->in + s->in_len, p, n);
	s->in_len += n;
}

/* Moves from's pending output into to's input. Returns the octets moved. */
static inline size_t
side_transfer(struct side *from, struct side *to)
{
	struct zt_run out = conn_take_out(from->z);
	size_t n = out.out_len;

	side_append(to, out.out, out.out_len);
	zt_run_free(&out);
	return n;
}

/* Feeds s everything it has received so far (unless it failed). */
static inline void
side_feed(struct side *s, uint64_t now)
{
	size_t leftover;

	if (s->in_len == 0 || zr_zmtp_error(s->z) != 0)
		return;
	zt_conn_feed_cuts(s->z, now, s->in, s->in_len, NULL, 0, &s->ev, &leftover);
	cr_assert(s->ev.violation[0] == '\0', "%s", s->ev.violation);
	if (s->ev.rc < 0)
		leftover = 0;
	memmove(s->in, s->in + s->in_len - leftover, leftover);
	s->in_len = leftover;
}

/* Pumps both ways until nothing moves. */
static inline void
link_pump(struct side *a, struct side *b, uint64_t now)
{
	for (int i = 0; i < 32; i++) {
		size_t moved = side_transfer(a, b) + side_transfer(b, a);

		side_feed(a, now);
		side_feed(b, now);
		if (moved == 0)
			return;
	}
	cr_assert_fail("link never went quiet");
}

/* The application writes a message on from: codec output first, then it. */
static inline void
link_send(struct side *from, struct side *to, const void *frames, size_t n)
{
	side_transfer(from, to);
	side_append(to, frames, n);
}

#endif /* ZR_TESTS_ZMTP_CONN_UTIL_H */
