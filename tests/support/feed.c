#define _POSIX_C_SOURCE 200809L
#include "feed.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"

/* ------------------------------------------------------------------ */
/* Recording. */

static void feed_violation(struct zt_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
feed_violation(struct zt_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->violation[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(r->violation, sizeof(r->violation), fmt, ap);
	va_end(ap);
}

static void *
feed_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n == 0 ? 1 : n);

	cr_assert(q != NULL, "out of memory");
	return q;
}

static uint8_t *
feed_dup(const uint8_t *p, size_t n)
{
	uint8_t *q = feed_xrealloc(NULL, n);

	if (n > 0)
		memcpy(q, p, n);
	return q;
}

static struct zt_ev *
feed_ev_add(struct zt_run *r)
{
	struct zt_ev *e;

	if (r->nev == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->ev = feed_xrealloc(r->ev, r->cap * sizeof(*r->ev));
	}
	e = &r->ev[r->nev++];
	memset(e, 0, sizeof(*e));
	return e;
}

static bool
feed_in_span(const uint8_t *buf, size_t len, const uint8_t *p, size_t n)
{
	if (n == 0)
		return true;
	return p != NULL && p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

/* One piece of a frame: start a record at offset 0, else extend the last. */
static void
feed_piece(struct zt_run *r, int type, const uint8_t *buf, size_t len, const uint8_t *data,
           size_t dlen, uint64_t size, uint64_t offset, unsigned flags)
{
	struct zt_ev *e;
	bool end = (flags & ZR_ZMTP_FRAME_END) != 0;
	unsigned keep = flags & (ZR_ZMTP_MORE | ZR_ZMTP_COMMAND);

	if (!feed_in_span(buf, len, data, dlen))
		feed_violation(r, "frame piece (offset %" PRIu64 ", len %zu) outside the buffer",
		               offset, dlen);
	if (dlen > size || offset > size - dlen)
		feed_violation(r, "piece offset %" PRIu64 " + len %zu beyond frame size %" PRIu64,
		               offset, dlen, size);
	else if (end != (offset + dlen == size))
		feed_violation(r,
		               "FRAME_END %s on piece offset %" PRIu64 " len %zu of size %" PRIu64,
		               end ? "set" : "missing", offset, dlen, size);
	if (dlen == 0 && size != 0)
		feed_violation(r, "empty piece of a %" PRIu64 "-octet frame", size);
	if (flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_COMMAND | ZR_ZMTP_FRAME_END))
		feed_violation(r, "unknown event flags 0x%x", flags);

	if (offset == 0) {
		if (r->nev > 0 && (r->ev[r->nev - 1].type == type) && !r->ev[r->nev - 1].complete)
			feed_violation(r, "new frame before the previous one ended");
		e = feed_ev_add(r);
		e->type = type;
		e->flags = keep;
		e->size = size;
	} else {
		e = r->nev > 0 ? &r->ev[r->nev - 1] : NULL;
		if (e == NULL || e->type != type || e->complete || e->len != offset ||
		    e->size != size || e->flags != keep) {
			feed_violation(r, "piece at offset %" PRIu64 " does not continue a frame",
			               offset);
			return;
		}
	}
	if (dlen > 0) {
		e->data = feed_xrealloc(e->data, e->len + dlen);
		memcpy(e->data + e->len, data, dlen);
		e->len += dlen;
	}
	e->complete = end;
}

static void
feed_conn_event(struct zt_run *r, const uint8_t *buf, size_t len, const struct zr_zmtp_event *ev)
{
	struct zt_ev *e;

	if (ev->type == ZR_ZMTP_EV_FRAME) {
		feed_piece(r, ev->type, buf, len, ev->data, ev->len, ev->frame_size, ev->offset,
		           ev->flags);
		if (ev->flags & ZR_ZMTP_COMMAND)
			feed_violation(r, "connection frame event with COMMAND set");
		return;
	}
	if (ev->type < ZR_ZMTP_EV_READY || ev->type > ZR_ZMTP_EV_PEER_ERROR)
		feed_violation(r, "unknown event type %d", ev->type);
	if (!feed_in_span(buf, len, ev->data, ev->len))
		feed_violation(r, "event %d data outside the buffer", ev->type);
	e = feed_ev_add(r);
	e->type = ev->type;
	e->data = feed_dup(ev->data, ev->len);
	e->len = ev->len;
	e->complete = true;
	if (ev->type == ZR_ZMTP_EV_READY) {
		e->peer_type = ev->peer_type;
		e->has_identity = ev->peer_identity != NULL;
		if (e->has_identity) {
			if (!feed_in_span(buf, len, ev->peer_identity, ev->peer_identity_len))
				feed_violation(r, "READY identity outside the buffer");
			e->identity = feed_dup(ev->peer_identity, ev->peer_identity_len);
			e->identity_len = ev->peer_identity_len;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Driving. */

struct feed_drv {
	struct zr_zmtp *z;
	struct zr_zmtp_dec *d;
	uint64_t now_ms;
};

static int
feed_call(struct feed_drv *drv, struct zt_run *r, uint8_t *buf, size_t len, size_t *consumed)
{
	int rc;

	*consumed = SIZE_MAX;
	r->calls++;
	if (drv->z != NULL) {
		struct zr_zmtp_event ev;

		memset(&ev, ZT_JUNK, sizeof(ev));
		rc = zr_zmtp_feed(drv->z, buf, len, consumed, &ev, drv->now_ms);
		if (rc == ZR_OK && *consumed <= len)
			feed_conn_event(r, buf, len, &ev);
	} else {
		struct zr_zmtp_frame f;

		memset(&f, ZT_JUNK, sizeof(f));
		rc = zr_zmtp_dec_feed(drv->d, buf, len, consumed, &f);
		if (rc == ZR_OK && *consumed <= len) {
			feed_piece(r, ZT_EV_DEC_FRAME, buf, len, f.data, f.len, f.size, f.offset,
			           f.flags);
			if ((f.flags & ZR_ZMTP_COMMAND) && !(f.flags & ZR_ZMTP_FRAME_END))
				feed_violation(r, "command frame handed out in pieces");
		}
	}
	if (rc >= 0 && *consumed > len) {
		feed_violation(r, "consumed %zu of %zu", *consumed, len);
		*consumed = len;
	}
	if (rc < 0)
		*consumed = 0; /* not specified on error; nothing more is used */
	if (rc != ZR_OK && rc != ZR_NEED_MORE && rc >= 0)
		feed_violation(r, "feed returned %d", rc);
	return rc;
}

static size_t
feed_want(struct feed_drv *drv, const uint8_t *buf, size_t len)
{
	if (drv->z != NULL)
		return zr_zmtp_want(drv->z, buf, len);
	return zr_zmtp_dec_want(drv->d, buf, len);
}

static void
feed_drive(struct feed_drv *drv, const uint8_t *in, size_t n, const size_t *cuts, size_t ncuts,
           struct zt_run *r, size_t *leftover)
{
	struct zt_guard g;
	uint8_t *pending = feed_xrealloc(NULL, n);
	size_t npending = 0;
	size_t pos = 0;
	size_t max_calls = r->calls + 8 * n + 64; /* r may carry calls from earlier feeds */

	zt_guard_init(&g, n + 1);
	r->rc = ZR_NEED_MORE;
	for (size_t c = 0; c <= ncuts && r->rc >= 0; c++) {
		size_t stop = c < ncuts ? cuts[c] : n;
		uint8_t *buf;
		size_t avail, off = 0;

		if (stop < pos || stop > n) {
			feed_violation(r, "bad chunking: cut %zu at %zu", c, stop);
			break;
		}
		memcpy(pending + npending, in + pos, stop - pos);
		npending += stop - pos;
		pos = stop;
		buf = zt_guard_place(&g, pending, npending);
		avail = npending;
		for (;;) {
			size_t used;
			int rc;

			if (r->calls >= max_calls) {
				feed_violation(r, "no progress after %zu calls",
				               r->calls - (max_calls - 8 * n - 64));
				r->rc = -1;
				break;
			}
			rc = feed_call(drv, r, buf + off, avail - off, &used);
			r->rc = rc;
			if (rc < 0)
				break;
			off += used;
			r->consumed += used;
			if (rc == ZR_NEED_MORE) {
				size_t want = feed_want(drv, buf + off, avail - off);

				if (want <= avail - off)
					feed_violation(
						r, "NEED_MORE with %zu bytes left but want() = %zu",
						avail - off, want);
				break;
			}
		}
		if (r->rc < 0) {
			/* Sticky: one more call, on what is left (or one junk byte). */
			static const uint8_t junk[1] = {0};
			size_t used, left = avail - off;
			uint8_t *again = left > 0 ? buf + off : zt_guard_place(&g, junk, 1);
			size_t nev = r->nev;

			r->sticky_rc = feed_call(drv, r, again, left > 0 ? left : 1, &used);
			if (r->nev != nev)
				feed_violation(r, "an event came after error %d", r->rc);
			if (r->sticky_rc != r->rc)
				feed_violation(r, "error not sticky: %d then %d", r->rc,
				               r->sticky_rc);
			if (drv->z != NULL && zr_zmtp_error(drv->z) != r->rc)
				feed_violation(r, "zr_zmtp_error %d, feed %d",
				               zr_zmtp_error(drv->z), r->rc);
			npending = left;
			break;
		}
		memmove(pending, buf + off, avail - off);
		npending = avail - off;
	}
	*leftover = npending + (n - pos);
	free(pending);
	zt_guard_fini(&g);
}

void
zt_conn_drain(struct zr_zmtp *z, struct zt_run *r)
{
	for (int i = 0; i < 64; i++) {
		const uint8_t *data = NULL;
		size_t n = zr_zmtp_out(z, &data);

		if (n == 0)
			return;
		r->out = feed_xrealloc(r->out, r->out_len + n);
		memcpy(r->out + r->out_len, data, n);
		r->out_len += n;
		zr_zmtp_out_ack(z, n);
	}
	feed_violation(r, "zr_zmtp_out never ran dry");
}

void
zt_conn_feed_cuts(struct zr_zmtp *z, uint64_t now_ms, const uint8_t *in, size_t n,
                  const size_t *cuts, size_t ncuts, struct zt_run *r, size_t *leftover)
{
	struct feed_drv drv = {.z = z, .now_ms = now_ms};

	feed_drive(&drv, in, n, cuts, ncuts, r, leftover);
	r->state = zr_zmtp_state(z);
}

void
zt_dec_feed_cuts(struct zr_zmtp_dec *d, const uint8_t *in, size_t n, const size_t *cuts,
                 size_t ncuts, struct zt_run *r, size_t *leftover)
{
	struct feed_drv drv = {.d = d};

	feed_drive(&drv, in, n, cuts, ncuts, r, leftover);
}

struct zt_target
zt_conn_target(const struct zr_zmtp_config *cfg)
{
	struct zt_target t;

	memset(&t, 0, sizeof(t));
	t.kind = ZT_CONN;
	t.cfg = *cfg;
	t.now_ms = 1000;
	return t;
}

struct zt_target
zt_dec_target(uint64_t max_msg_size, uint32_t max_cmd_size)
{
	struct zt_target t;

	memset(&t, 0, sizeof(t));
	t.kind = ZT_DEC;
	t.max_msg_size = max_msg_size;
	t.max_cmd_size = max_cmd_size;
	return t;
}

void
zt_run_cuts(const struct zt_target *t, const uint8_t *in, size_t n, const size_t *cuts,
            size_t ncuts, struct zt_run *r)
{
	size_t leftover;

	memset(r, 0, sizeof(*r));
	if (t->kind == ZT_CONN) {
		struct zr_zmtp *z = malloc(sizeof(*z));
		int rc;

		cr_assert(z != NULL);
		memset(z, ZT_JUNK, sizeof(*z));
		rc = zr_zmtp_init(z, &t->cfg, t->now_ms);
		cr_assert_eq(rc, 0, "zr_zmtp_init failed: %d", rc);
		zt_conn_feed_cuts(z, t->now_ms, in, n, cuts, ncuts, r, &leftover);
		zt_conn_drain(z, r);
		free(z);
	} else {
		struct zr_zmtp_dec d;

		memset(&d, ZT_JUNK, sizeof(d));
		zr_zmtp_dec_init(&d, t->max_msg_size, t->max_cmd_size);
		if (t->max_msg_frames != 0)
			zr_zmtp_dec_set_frame_limit(&d, t->max_msg_frames);
		zt_dec_feed_cuts(&d, in, n, cuts, ncuts, r, &leftover);
	}
}

void
zt_run_free(struct zt_run *r)
{
	for (size_t i = 0; i < r->nev; i++) {
		free(r->ev[i].data);
		free(r->ev[i].identity);
	}
	free(r->ev);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------------ */
/* Comparing. */

const char *
zt_hex(const void *p, size_t n)
{
	static char s[64 * 3 + 8];
	const uint8_t *b = p;
	size_t i, k = 0;

	for (i = 0; i < n && i < 64; i++)
		k += (size_t)snprintf(s + k, sizeof(s) - k, "%02x ", b[i]);
	if (i < n)
		snprintf(s + k, sizeof(s) - k, "...");
	else if (k > 0)
		s[k - 1] = '\0';
	else
		s[0] = '\0';
	return s;
}

static bool
feed_bytes_eq(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

bool
zt_run_same(const struct zt_run *a, const struct zt_run *b, char *why, size_t why_len)
{
	if (a->rc != b->rc) {
		snprintf(why, why_len, "result %d vs %d", a->rc, b->rc);
		return false;
	}
	if (a->rc < 0 && a->sticky_rc != b->sticky_rc) {
		snprintf(why, why_len, "sticky result %d vs %d", a->sticky_rc, b->sticky_rc);
		return false;
	}
	/* What a failing call consumed is unspecified, so only compare it on success. */
	if (a->rc >= 0 && a->consumed != b->consumed) {
		snprintf(why, why_len, "consumed %zu vs %zu", a->consumed, b->consumed);
		return false;
	}
	if (a->nev != b->nev) {
		snprintf(why, why_len, "%zu events vs %zu", a->nev, b->nev);
		return false;
	}
	for (size_t i = 0; i < a->nev; i++) {
		const struct zt_ev *x = &a->ev[i], *y = &b->ev[i];

		if (x->type != y->type || x->flags != y->flags || x->size != y->size ||
		    x->complete != y->complete || x->peer_type != y->peer_type ||
		    x->has_identity != y->has_identity ||
		    !feed_bytes_eq(x->data, x->len, y->data, y->len) ||
		    !feed_bytes_eq(x->identity, x->identity_len, y->identity, y->identity_len)) {
			snprintf(why, why_len,
			         "event %zu: type %d/%d flags %x/%x size %" PRIu64 "/%" PRIu64
			         " len %zu/%zu complete %d/%d peer_type %d/%d",
			         i, x->type, y->type, x->flags, y->flags, x->size, y->size, x->len,
			         y->len, x->complete, y->complete, x->peer_type, y->peer_type);
			return false;
		}
	}
	if (!feed_bytes_eq(a->out, a->out_len, b->out, b->out_len)) {
		snprintf(why, why_len, "output %zu bytes vs %zu", a->out_len, b->out_len);
		return false;
	}
	if (a->state != b->state) {
		snprintf(why, why_len, "state %d vs %d", a->state, b->state);
		return false;
	}
	return true;
}

static const char *
feed_cuts_str(const size_t *cuts, size_t ncuts)
{
	static char s[256];
	size_t k = 0;

	if (ncuts == 0)
		return "{whole}";
	k += (size_t)snprintf(s, sizeof(s), "{");
	for (size_t i = 0; i < ncuts && k < sizeof(s) - 16; i++)
		k += (size_t)snprintf(s + k, sizeof(s) - k, "%s%zu", i ? "," : "", cuts[i]);
	if (k < sizeof(s) - 16)
		snprintf(s + k, sizeof(s) - k, "}");
	return s;
}

/*
 * A crash (the guard page, or a wild pointer) ends the test process before any
 * assertion can name the chunking, so a fault handler prints the run in
 * progress first, then puts the previous handler back (ASan's, if any) and
 * returns, so the fault repeats and is reported as usual.
 */
static char feed_current[384];
static struct sigaction feed_old_segv, feed_old_bus;

static void
feed_fault_cb(int sig)
{
	static const char head[] = "\n[zt] fault while running ";
	size_t n = strlen(feed_current);

	(void)!write(2, head, sizeof(head) - 1);
	(void)!write(2, feed_current, n);
	(void)!write(2, "\n", 1);
	sigaction(SIGSEGV, &feed_old_segv, NULL);
	sigaction(SIGBUS, &feed_old_bus, NULL);
	(void)sig;
}

static void
feed_fault_arm(void)
{
	static bool armed;
	struct sigaction sa;

	if (armed)
		return;
	armed = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = feed_fault_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &feed_old_segv);
	sigaction(SIGBUS, &sa, &feed_old_bus);
}

static void
feed_check_one(const struct zt_target *t, const uint8_t *in, size_t n, int line, const size_t *cuts,
               size_t ncuts, const struct zt_run *whole, const char *label)
{
	struct zt_run r;
	char why[256];
	bool same;

	snprintf(feed_current, sizeof(feed_current), "vector at line %d, %s chunking %s", line,
	         label, feed_cuts_str(cuts, ncuts));
	zt_run_cuts(t, in, n, cuts, ncuts, &r);
	cr_assert(r.violation[0] == '\0', "vector at line %d, %s chunking %s: %s", line, label,
	          feed_cuts_str(cuts, ncuts), r.violation);
	same = zt_run_same(whole, &r, why, sizeof(why));
	zt_run_free(&r);
	cr_assert(same, "vector at line %d, %s chunking %s differs from whole: %s", line, label,
	          feed_cuts_str(cuts, ncuts), why);
}

void
zt_check_splits(const struct zt_target *t, const uint8_t *in, size_t n, int line,
                struct zt_run *whole)
{
	size_t *cuts;
	uint32_t seed = 0x5eed0000u ^ (uint32_t)line;

	feed_fault_arm();
	snprintf(feed_current, sizeof(feed_current), "vector at line %d, whole", line);
	zt_run_cuts(t, in, n, NULL, 0, whole);
	cr_assert(whole->violation[0] == '\0', "vector at line %d, whole: %s", line,
	          whole->violation);
	if (n < 2)
		return;

	cuts = feed_xrealloc(NULL, n * sizeof(*cuts));
	for (size_t i = 1; i < n; i++)
		cuts[i - 1] = i;
	feed_check_one(t, in, n, line, cuts, n - 1, whole, "byte-by-byte");

	for (size_t i = 1; i < n; i++) {
		cuts[0] = i;
		feed_check_one(t, in, n, line, cuts, 1, whole, "2-piece");
	}

	if (n >= 3) {
		if (n <= 48) {
			for (size_t i = 1; i < n; i++)
				for (size_t j = i + 1; j < n; j++) {
					cuts[0] = i;
					cuts[1] = j;
					feed_check_one(t, in, n, line, cuts, 2, whole, "3-piece");
				}
		} else {
			for (int k = 0; k < 300; k++) {
				size_t i, j;

				seed = seed * 1103515245u + 12345u;
				i = 1 + (seed >> 8) % (n - 1);
				seed = seed * 1103515245u + 12345u;
				j = 1 + (seed >> 8) % (n - 1);
				if (i == j)
					continue;
				cuts[0] = i < j ? i : j;
				cuts[1] = i < j ? j : i;
				feed_check_one(t, in, n, line, cuts, 2, whole, "3-piece (sampled)");
			}
		}
	}
	free(cuts);
}

void
zt_assert_bytes(const char *what, const uint8_t *got, size_t got_len, const void *want,
                size_t want_len, int line)
{
	const uint8_t *w = want;
	size_t i;

	for (i = 0; i < got_len && i < want_len; i++)
		if (got[i] != w[i])
			break;
	if (i == got_len && i == want_len)
		return;
	{
		char g[64 * 3 + 8];

		snprintf(g, sizeof(g), "%s", zt_hex(got + i, got_len - i));
		cr_assert_fail("line %d: %s: %zu vs %zu octets, first difference at octet %zu:\n "
		               "got  %s\n want %s",
		               line, what, got_len, want_len, i, g, zt_hex(w + i, want_len - i));
	}
}
