/*
 * zring tools — peer data escaped for a terminal (see zl_text.h).
 */
#include <stdint.h>
#include <string.h>

#include "zl_text.h"

/* The length of the valid UTF-8 sequence at p (at most n octets), or 0. */
static size_t
text_utf8_len(const uint8_t *p, size_t n)
{
	size_t len;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* The escape for the octet c, or NULL when it prints as itself. */
static const char *
text_short(uint8_t c)
{
	switch (c) {
	case '\t':
		return "\\t";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\0':
		return "\\0";
	case '\\':
		return "\\\\";
	default:
		return NULL;
	}
}

/*
 * Walks data, handing each piece to put: a run of octets that print as
 * themselves, or one escape. Returns false when put refused (out of room).
 */
static bool
text_walk(const void *data, size_t len, bool (*put)(void *arg, const char *s, size_t n), void *arg)
{
	static const char hex[] = "0123456789abcdef";

	if (len == 0)
		return true; /* data may be NULL (an empty payload) */
	const uint8_t *p = data, *end = p + len, *run = p;

	while (p < end) {
		size_t n = text_utf8_len(p, (size_t)(end - p));
		/* C0, DEL, C1 (U+0080..U+009F is 0xc2 0x80..0x9f) and invalid octets */
		bool bad = n == 0 || p[0] < 0x20 || p[0] == 0x7f || p[0] == '\\' ||
		           (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);

		if (!bad) {
			p += n;
			continue;
		}
		if (p > run && !put(arg, (const char *)run, (size_t)(p - run)))
			return false;
		if (n == 0)
			n = 1;
		for (size_t i = 0; i < n; i++) {
			const char *sh = text_short(p[i]);
			char esc[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};

			if (sh != NULL ? !put(arg, sh, 2) : !put(arg, esc, sizeof esc))
				return false;
		}
		p += n;
		run = p;
	}
	return p <= run || put(arg, (const char *)run, (size_t)(p - run));
}

static bool
text_put_file(void *arg, const char *s, size_t n)
{
	fwrite(s, 1, n, arg);
	return true;
}

/* see zl_text.h */
void
zl_text_write(FILE *f, const void *data, size_t len, bool raw)
{
	if (raw) {
		if (len > 0)
			fwrite(data, 1, len, f);
		return;
	}
	text_walk(data, len, text_put_file, f);
}

/* see zl_text.h */
void
zl_text_puts(FILE *f, const char *s, bool raw)
{
	zl_text_write(f, s, strlen(s), raw);
}

struct text_buf {
	char *out;
	size_t cap, len;
};

static bool
text_put_buf(void *arg, const char *s, size_t n)
{
	struct text_buf *b = arg;

	if (b->len + n + 1 > b->cap) {
		/* A run may be cut anywhere a UTF-8 sequence starts; an escape
		 * not at all. */
		if (s[0] == '\\')
			return false;
		while (n > 0 && b->len + n + 1 > b->cap)
			n--;
		while (n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80)
			n--;
		memcpy(b->out + b->len, s, n);
		b->len += n;
		return false;
	}
	memcpy(b->out + b->len, s, n);
	b->len += n;
	return true;
}

/* see zl_text.h */
size_t
zl_text_escape(char *out, size_t cap, const void *data, size_t len)
{
	struct text_buf b = {out, cap, 0};

	text_walk(data, len, text_put_buf, &b);
	out[b.len] = '\0';
	return b.len;
}
