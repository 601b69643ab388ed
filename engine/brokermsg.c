/*
 * The broker's message layout: encode on publish, decode on delivery (brokermsg.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "brokermsg.h"
#include "engine.h"

void
zr__brokermsg_scratch_fini(struct zr__brokermsg_scratch *sc)
{
	free(sc->buf);
	free(sc->hv);
	sc->buf = NULL;
	sc->hv = NULL;
	sc->cap = sc->hcap = 0;
}

bool
zr__utf8_valid(const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;

	while (p < end) {
		uint8_t c = *p;
		size_t n;
		uint32_t cp, min;

		if (c < 0x80) {
			p++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1, cp = c & 0x1fu, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, cp = c & 0x0fu, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, cp = c & 0x07u, min = 0x10000;
		} else {
			return false;
		}
		if ((size_t)(end - p) <= n)
			return false;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3fu);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

/* ---- encode ---------------------------------------------------------------- */

static int
brokermsg_check_header(const struct zr_header *h, char *err, size_t errcap)
{
	const char *bad = NULL;
	int rc = -EINVAL;

	if (h->name == NULL || h->value == NULL || h->name[0] == '\0')
		bad = "has no name or no value";
	else if (!zr__utf8_valid(h->name, strlen(h->name)))
		bad = "has a name that is not UTF-8", rc = -EILSEQ;
	else if (!zr__utf8_valid(h->value, strlen(h->value)))
		bad = "has a value that is not UTF-8", rc = -EILSEQ;
	else if (strpbrk(h->name, ":\r\n") != NULL)
		bad = "has ':' or a line break in its name";
	else if (strpbrk(h->value, "\r\n") != NULL)
		bad = "has a line break in its value";
	if (bad == NULL)
		return 0;
	/* A name that is not UTF-8 is still named, as far as it prints. */
	snprintf(err, errcap, "header '%.64s' %s", h->name != NULL ? h->name : "(null)", bad);
	return rc;
}

int
zr__brokermsg_encode(zr_msg *m, const char *name, const struct zr_header *h, size_t nh,
                     const struct zr_header *extra, const void *payload, size_t len, char *err,
                     size_t errcap)
{
	size_t hlen = 0, name_len = strlen(name);
	size_t total = nh + (extra != NULL);
	int rc;

	for (size_t i = 0; i < total; i++) {
		const struct zr_header *x = i < nh ? &h[i] : extra;

		rc = brokermsg_check_header(x, err, errcap);
		if (rc < 0)
			return rc;
		hlen += strlen(x->name) + 2 + strlen(x->value) + (i + 1 < total);
	}
	if (zr__msg_reserve(m, name_len + hlen + len) < 0)
		return -ENOMEM;
	if (zr__msg_frame_begin(m, name_len) < 0)
		return -ENOMEM;
	zr__msg_frame_append(m, name, name_len);
	if (zr__msg_frame_begin(m, hlen) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < total; i++) {
		const struct zr_header *x = i < nh ? &h[i] : extra;

		zr__msg_frame_append(m, x->name, strlen(x->name));
		zr__msg_frame_append(m, ": ", 2);
		zr__msg_frame_append(m, x->value, strlen(x->value));
		if (i + 1 < total)
			zr__msg_frame_append(m, "\n", 1);
	}
	if (zr__msg_frame_begin(m, len) < 0)
		return -ENOMEM;
	zr__msg_frame_append(m, payload, len);
	return 0;
}

/* ---- decode ---------------------------------------------------------------- */

static bool
brokermsg_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Trims [*s, *e) in place of surrounding whitespace. */
static void
brokermsg_trim(char **s, char **e)
{
	while (*s < *e && brokermsg_space(**s))
		(*s)++;
	while (*e > *s && brokermsg_space((*e)[-1]))
		(*e)--;
}

static int
brokermsg_fail(struct zr__brokermsg_scratch *sc, struct zr_delivery *d, const char *text)
{
	if (text != sc->err)
		snprintf(sc->err, sizeof sc->err, "%s", text);
	d->error = -EPROTO;
	d->error_text = sc->err;
	return -EPROTO;
}

static int
brokermsg_grow(struct zr__brokermsg_scratch *sc, size_t bytes, size_t headers)
{
	if (bytes > sc->cap) {
		size_t cap = sc->cap ? sc->cap : 256;
		char *b;

		while (cap < bytes)
			cap *= 2;
		b = realloc(sc->buf, cap);
		if (b == NULL)
			return -ENOMEM;
		sc->buf = b;
		sc->cap = cap;
	}
	if (headers > sc->hcap) {
		size_t cap = sc->hcap ? sc->hcap : 8;
		struct zr_header *v;

		while (cap < headers)
			cap *= 2;
		v = realloc(sc->hv, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		sc->hv = v;
		sc->hcap = cap;
	}
	return 0;
}

/* The frames of the layout, or an error text. */
static const char *
brokermsg_frames(const zr_msg *m, size_t first, const uint8_t **name, size_t *name_len,
                 const uint8_t **hdr, size_t *hdr_len, const void **payload, size_t *payload_len)
{
	size_t n = m->nframes > first ? m->nframes - first : 0;

	*hdr = NULL, *hdr_len = 0, *payload = NULL, *payload_len = 0;
	if (n == 0)
		return "a message needs at least a name frame";
	*name = zr_msg_frame(m, first, name_len);
	if (!zr__utf8_valid(*name, *name_len))
		return "the name frame is not UTF-8";
	if (n == 2) {
		*payload = zr_msg_frame(m, first + 1, payload_len); /* a minimal peer */
	} else if (n >= 3) {
		*hdr = zr_msg_frame(m, first + 1, hdr_len);
		*payload = zr_msg_frame(m, first + 2, payload_len);
		if (!zr__utf8_valid(*hdr, *hdr_len))
			return "the header frame is not UTF-8";
	}
	return NULL;
}

bool
zr__brokermsg_ok(const zr_msg *m, size_t first, struct zr__brokermsg_scratch *sc)
{
	struct zr_delivery d = {0};

	return zr__brokermsg_decode(m, first, NULL, sc, &d) == 0;
}

int
zr__brokermsg_decode(const zr_msg *m, size_t first, const char *reply_to,
                     struct zr__brokermsg_scratch *sc, struct zr_delivery *d)
{
	const uint8_t *name, *hdr;
	size_t name_len = 0, hdr_len, lines = 1, rlen = reply_to ? strlen(reply_to) + 1 : 0, nh = 0;
	const char *bad = brokermsg_frames(m, first, &name, &name_len, &hdr, &hdr_len, &d->payload,
	                                   &d->payload_len);
	char *p, *end;

	d->error = 0;
	d->error_text = NULL;
	d->reply_to = NULL;
	d->headers = NULL;
	d->nheaders = 0;
	d->name = "";
	if (bad != NULL)
		return brokermsg_fail(sc, d, bad);
	for (size_t i = 0; i < hdr_len; i++)
		lines += hdr[i] == '\n';
	if (brokermsg_grow(sc, name_len + 1 + hdr_len + 1 + rlen, lines + 1) < 0)
		return -ENOMEM;
	memcpy(sc->buf, name, name_len);
	sc->buf[name_len] = '\0';
	d->name = sc->buf;
	p = sc->buf + name_len + 1;
	if (hdr_len > 0)
		memcpy(p, hdr, hdr_len);
	end = p + hdr_len;
	*end = '\0';
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p)), *colon, *ns, *ne, *vs, *ve;

		if (eol == NULL)
			eol = end;
		ns = p, ve = eol;
		brokermsg_trim(&ns, &ve);
		if (ns == ve) { /* a blank line */
			p = eol + 1;
			continue;
		}
		colon = memchr(ns, ':', (size_t)(ve - ns));
		if (colon == NULL) {
			snprintf(sc->err, sizeof sc->err, "a header line has no ':': '%.*s'",
			         (int)((ve - ns) > 160 ? 160 : (ve - ns)), ns);
			return brokermsg_fail(sc, d, sc->err);
		}
		ne = colon, vs = colon + 1;
		brokermsg_trim(&ns, &ne);
		brokermsg_trim(&vs, &ve);
		*ne = '\0';
		*ve = '\0';
		p = eol + 1;
		/* The broker sets reply-to itself, from the routing id the peer
		 * came in on: a peer's own would be found first by
		 * zr_delivery_header and could name another requester. */
		if (reply_to != NULL && strcasecmp(ns, "reply-to") == 0)
			continue;
		sc->hv[nh].name = ns;
		sc->hv[nh].value = vs;
		nh++;
	}
	if (reply_to != NULL) {
		char *r = sc->buf + name_len + 1 + hdr_len + 1;

		memcpy(r, reply_to, rlen);
		sc->hv[nh].name = "reply-to";
		sc->hv[nh].value = r;
		nh++;
		d->reply_to = r;
	}
	d->headers = sc->hv;
	d->nheaders = nh;
	return 0;
}

/* see zring.h */
const char *
zr_delivery_header(const struct zr_delivery *d, const char *name)
{
	if (d == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < d->nheaders; i++) {
		if (strcasecmp(d->headers[i].name, name) == 0)
			return d->headers[i].value;
	}
	return NULL;
}
