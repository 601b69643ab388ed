/*
 * Messages: one byte buffer holding every frame back to back, and a table of
 * (offset, length) spans, inline for up to four frames. A received message is
 * assembled straight into its buffer (the frame size is known from the header
 * and bounded by MAXMSGSIZE, so the buffer is sized once per frame).
 *
 * The buffer starts as the ZR__MSG_OWN_BYTES that follow the struct in its
 * allocation (zr__msg_own), and moves to the heap only for more: a small
 * message is one malloc, not two, and one block of memory.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"

/* see zring.h */
int
zr_msg_new(zr_msg **msg)
{
	zr_msg *m = malloc(sizeof *m + ZR__MSG_OWN_BYTES);

	if (m == NULL)
		return -ENOMEM;
	*m = (zr_msg){.frames = m->inl,
	              .frame_cap = ZR__MSG_INLINE_FRAMES,
	              .data = zr__msg_own(m),
	              .cap = ZR__MSG_OWN_BYTES,
	              .refs = 1};
	*msg = m;
	return 0;
}

/* Frees m's buffer if it is a heap one (never its own bytes). */
static void
msg_free_data(zr_msg *m)
{
	if (m->data != zr__msg_own(m))
		free(m->data);
}

/* The buffer back to m's own bytes (what was in a heap one is not kept). */
static void
msg_own_again(zr_msg *m)
{
	msg_free_data(m);
	m->data = zr__msg_own(m);
	m->cap = ZR__MSG_OWN_BYTES;
}

/* A buffer of cap octets holding m's len: the heap's, grown in place once
 * it is there. NULL (m unchanged) when there is no memory. */
static uint8_t *
msg_grow(zr_msg *m, size_t cap)
{
	uint8_t *d;

	if (m->data != zr__msg_own(m))
		return realloc(m->data, cap);
	d = malloc(cap);
	if (d != NULL && m->len > 0)
		memcpy(d, m->data, m->len);
	return d;
}

/*
 * A message's free callback (zr_msg_new_data, zr_msg_set_free). It takes the
 * place of cap in the message (only this file reads either), so the message
 * stays 120 octets; cap lives here while the callback is set.
 */
struct zr__msg_hook {
	zr_free_fn *ffn;
	void *hint;
	void *data; /* what ffn is given */
	size_t cap; /* own: the size of the message's buffer */
	bool own;   /* the bytes are zring's (zr_msg_set_free), not the caller's */
};

static size_t
msg_cap(const zr_msg *m)
{
	return m->hooked ? (m->hook->own ? m->hook->cap : m->len) : m->cap;
}

/* Runs the callback and goes back to a plain message: own bytes stay, the
 * caller's go (data NULL). */
static void
msg_unhook(zr_msg *m)
{
	struct zr__msg_hook *h = m->hook;

	if (!m->hooked)
		return;
	m->hooked = false;
	if (h->own) {
		m->cap = h->cap;
	} else {
		m->data = zr__msg_own(m);
		m->cap = ZR__MSG_OWN_BYTES;
	}
	if (h->ffn != NULL)
		h->ffn(h->data, h->hint);
	free(h);
}

static int
msg_hook(zr_msg *m, bool own, void *data, zr_free_fn *ffn, void *hint)
{
	struct zr__msg_hook *h;

	if (m->hooked)
		return -EBUSY;
	h = malloc(sizeof *h);
	if (h == NULL)
		return -ENOMEM;
	*h = (struct zr__msg_hook){
		.ffn = ffn, .hint = hint, .data = data, .own = own, .cap = m->cap};
	m->hook = h;
	m->hooked = true;
	return 0;
}

/* see zring.h */
int
zr_msg_new_data(zr_msg **msg, void *data, size_t len, zr_free_fn *ffn, void *hint)
{
	zr_msg *m;
	int rc;

	if (data == NULL && len > 0)
		return -EINVAL;
	rc = zr_msg_new(&m);
	if (rc < 0)
		return rc;
	rc = msg_hook(m, false, data, ffn, hint);
	if (rc < 0) {
		zr_msg_free(m);
		return rc;
	}
	m->data = data;
	m->len = len;
	m->frames[0] = (struct zr__span){.off = 0, .len = len};
	m->nframes = 1;
	*msg = m;
	return 0;
}

/* see zring.h */
int
zr_msg_set_free(zr_msg *msg, zr_free_fn *ffn, void *hint)
{
	return msg_hook(msg, true, NULL, ffn, hint);
}

/* see zring.h */
void
zr_msg_free(zr_msg *m)
{
	if (m == NULL)
		return;
	msg_unhook(m);
	if (m->frames != m->inl)
		free(m->frames);
	zr__meta_unref(m->meta);
	msg_free_data(m);
	free(m);
}

/* Appends "name\0value\0" at kv + *off (room was counted by the caller). */
static void
meta_put(char *kv, size_t *off, const char *name, size_t nlen, const void *value, size_t vlen)
{
	const char *v = value;

	/* A value holding a NUL reads as cut there: keep the pair well formed. */
	vlen = v != NULL ? strnlen(v, vlen) : 0;
	memcpy(kv + *off, name, nlen);
	kv[*off + nlen] = '\0';
	*off += nlen + 1;
	if (vlen > 0)
		memcpy(kv + *off, v, vlen);
	kv[*off + vlen] = '\0';
	*off += vlen + 1;
}

/* The names this side vouches for: a peer's own "User-Id" must never pass
 * for the authenticator's. */
static bool
meta_reserved(const uint8_t *name, size_t nlen)
{
	return (nlen == strlen("User-Id") &&
	        strncasecmp((const char *)name, "User-Id", nlen) == 0) ||
	       (nlen == strlen("Peer-Address") &&
	        strncasecmp((const char *)name, "Peer-Address", nlen) == 0);
}

struct zr__meta *
zr__meta_new(const uint8_t *props, size_t props_len, const char *peer_address, const char *user_id)
{
	struct zr_zmtp_prop_iter it = {props, props + props_len};
	const uint8_t *name, *value;
	size_t nlen, vlen, len = 0, off = 0;
	struct zr__meta *m;

	while (zr_zmtp_props_next(&it, &name, &nlen, &value, &vlen) == 1)
		if (!meta_reserved(name, nlen))
			len += nlen + vlen + 2;
	if (peer_address != NULL && peer_address[0] != '\0')
		len += sizeof "Peer-Address" + strlen(peer_address) + 1;
	if (user_id != NULL && user_id[0] != '\0')
		len += sizeof "User-Id" + strlen(user_id) + 1;
	m = malloc(sizeof *m + len);
	if (m == NULL)
		return NULL;
	atomic_init(&m->refs, 1);
	/* Ours first: a peer cannot shadow User-Id or Peer-Address with its
	 * own metadata, lookups take the first match. */
	if (user_id != NULL && user_id[0] != '\0')
		meta_put(m->kv, &off, "User-Id", strlen("User-Id"), user_id, strlen(user_id));
	if (peer_address != NULL && peer_address[0] != '\0')
		meta_put(m->kv, &off, "Peer-Address", strlen("Peer-Address"), peer_address,
		         strlen(peer_address));
	it.p = props;
	while (zr_zmtp_props_next(&it, &name, &nlen, &value, &vlen) == 1)
		if (!meta_reserved(name, nlen))
			meta_put(m->kv, &off, (const char *)name, nlen, value, vlen);
	m->len = off;
	return m;
}

struct zr__meta *
zr__meta_ref(struct zr__meta *m)
{
	if (m != NULL)
		atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
	return m;
}

void
zr__meta_unref(struct zr__meta *m)
{
	zr__meta_unref_n(m, 1);
}

void
zr__meta_ref_n(struct zr__meta *m, uint32_t n)
{
	if (m != NULL && n > 0)
		atomic_fetch_add_explicit(&m->refs, n, memory_order_relaxed);
}

void
zr__meta_unref_n(struct zr__meta *m, uint32_t n)
{
	if (m != NULL && n > 0 && atomic_fetch_sub_explicit(&m->refs, n, memory_order_acq_rel) == n)
		free(m);
}

/* see zring.h */
const char *
zr_msg_gets(const zr_msg *msg, const char *property)
{
	const struct zr__meta *m = msg != NULL ? msg->meta : NULL;
	size_t off = 0;

	if (m == NULL || property == NULL)
		return NULL;
	while (off < m->len) {
		const char *name = m->kv + off;
		const char *value = name + strlen(name) + 1;

		if (strcasecmp(name, property) == 0)
			return value;
		off = (size_t)(value - m->kv) + strlen(value) + 1;
	}
	return NULL;
}

bool
zr__msg_recycle(zr_msg *m)
{
	return zr__msg_recycle_keep(m, ZR__MSG_SPARE_SMALL);
}

size_t
zr__msg_keep_cap(const zr_msg *m)
{
	/* msg_unhook keeps our own bytes only */
	return m->hooked ? (m->hook->own ? m->hook->cap : 0) : m->cap;
}

void
zr__msg_drop_data(zr_msg *m)
{
	if (m->hooked)
		return;
	msg_own_again(m);
}

bool
zr__msg_recycle_keep(zr_msg *m, size_t keep)
{
	msg_unhook(m);
	if (m->frames != m->inl) {
		free(m->frames);
		m->frames = m->inl;
		m->frame_cap = ZR__MSG_INLINE_FRAMES;
	}
	zr__meta_unref(m->meta);
	m->meta = NULL;
	if (m->cap > ZR__MSG_SPARE_SMALL && m->cap > keep)
		zr__msg_drop_data(m);
	m->nframes = 0;
	m->len = 0;
	m->refs = 1;
	m->raw = false;
	return true;
}

bool
zr__msg_small(const zr_msg *m)
{
	return m->len <= ZR__MSG_SPARE_SMALL && m->frames == m->inl && !m->raw && !m->hooked;
}

int
zr__msg_take_small(zr_msg *dst, zr_msg *src)
{
	if (dst->cap < src->len) {
		/* A whole spare's size: the next small message fits as well. */
		uint8_t *d = msg_grow(dst, ZR__MSG_SPARE_SMALL);

		if (d == NULL)
			return -ENOMEM;
		dst->data = d;
		dst->cap = ZR__MSG_SPARE_SMALL;
	}
	if (src->len > 0)
		memcpy(dst->data, src->data, src->len);
	memcpy(dst->frames, src->frames, src->nframes * sizeof *src->frames);
	dst->nframes = src->nframes;
	dst->len = src->len;
	dst->meta = src->meta;
	src->meta = NULL;
	return 0;
}

bool
zr__msg_move_small(zr_msg *dst, zr_msg *src)
{
	/* What zr__msg_recycle would do nothing to on either side, and a dst
	 * buffer big enough: four calls (recycle, small, take, recycle) and
	 * their repeated checks were ~6% of a 64 B zmq_msg_recv loop (perf). */
	if (dst->hooked || dst->frames != dst->inl || dst->meta != NULL ||
	    dst->cap > ZR__MSG_SPARE_SMALL || dst->cap < src->len || !zr__msg_small(src) ||
	    src->cap > ZR__MSG_SPARE_SMALL)
		return false;
	if (src->len > 0)
		memcpy(dst->data, src->data, src->len);
	/* One frame, the common case, without the call the loop became. */
	if (src->nframes == 1)
		dst->inl[0] = src->inl[0];
	else
		memcpy(dst->inl, src->inl, src->nframes * sizeof src->inl[0]);
	dst->nframes = src->nframes;
	dst->len = src->len;
	dst->meta = src->meta;
	dst->refs = 1;
	dst->raw = false;
	src->meta = NULL;
	src->nframes = 0;
	src->len = 0;
	src->refs = 1;
	return true;
}

void
zr__msg_swap(zr_msg *a, zr_msg *b)
{
	zr_msg t = *a;

	*a = *b;
	*b = t;
	/* An inline span table stays in its struct: each points at its own. */
	if (a->frames == b->inl)
		a->frames = a->inl;
	if (b->frames == a->inl)
		b->frames = b->inl;
	/* So do own bytes: they trade places, and each points at its own. */
	if (a->data == zr__msg_own(b) || b->data == zr__msg_own(a)) {
		uint8_t own[ZR__MSG_OWN_BYTES];

		memcpy(own, zr__msg_own(a), sizeof own);
		memcpy(zr__msg_own(a), zr__msg_own(b), sizeof own);
		memcpy(zr__msg_own(b), own, sizeof own);
		if (a->data == zr__msg_own(b))
			a->data = zr__msg_own(a);
		if (b->data == zr__msg_own(a))
			b->data = zr__msg_own(b);
	}
}

void
zr__msg_unref(zr_msg *m)
{
	if (m != NULL && --m->refs == 0)
		zr_msg_free(m);
}

int
zr__msg_reserve(zr_msg *m, size_t extra)
{
	size_t want, cap;
	uint8_t *d;

	if (extra <= msg_cap(m) - m->len)
		return 0;
	if (extra > SIZE_MAX / 2 - m->len)
		return -ENOMEM;
	want = m->len + extra;
	cap = msg_cap(m) ? msg_cap(m) : 64;
	while (cap < want)
		cap *= 2;
	if (m->hooked && !m->hook->own) {
		/* The caller's bytes cannot grow: a copy of them can (their
		 * callback runs now), in the message's own bytes if they fit. */
		if (want <= ZR__MSG_OWN_BYTES) {
			if (m->len > 0)
				memcpy(zr__msg_own(m), m->data, m->len);
			msg_unhook(m);
			return 0;
		}
		d = malloc(cap);
		if (d == NULL)
			return -ENOMEM;
		if (m->len > 0)
			memcpy(d, m->data, m->len);
		msg_unhook(m);
		m->data = d;
		m->cap = cap;
		return 0;
	}
	d = msg_grow(m, cap);
	if (d == NULL)
		return -ENOMEM;
	m->data = d;
	if (m->hooked)
		m->hook->cap = cap;
	else
		m->cap = cap;
	return 0;
}

static int
msg_frames_grow(zr_msg *m)
{
	uint32_t cap;
	struct zr__span *f;

	if (m->nframes < m->frame_cap)
		return 0;
	if (m->frame_cap > UINT32_MAX / 2)
		return -ENOMEM;
	/* Never below the inline table's size (what every message starts
	 * with), which the static analyzer cannot know. */
	cap = m->frame_cap < ZR__MSG_INLINE_FRAMES ? 2 * ZR__MSG_INLINE_FRAMES : m->frame_cap * 2;
	if (m->frames == m->inl) {
		f = malloc(cap * sizeof *f);
		if (f != NULL)
			memcpy(f, m->inl, sizeof m->inl);
	} else {
		f = realloc(m->frames, cap * sizeof *f);
	}
	if (f == NULL)
		return -ENOMEM;
	m->frames = f;
	m->frame_cap = cap;
	return 0;
}

int
zr__msg_frame_begin(zr_msg *m, size_t size)
{
	int rc = msg_frames_grow(m);

	if (rc == 0)
		rc = zr__msg_reserve(m, size);
	if (rc < 0)
		return rc;
	m->frames[m->nframes].off = m->len;
	m->frames[m->nframes].len = 0;
	m->nframes++;
	return 0;
}

void
zr__msg_frame_append(zr_msg *m, const void *data, size_t len)
{
	if (len == 0)
		return;
	memcpy(m->data + m->len, data, len);
	m->len += len;
	m->frames[m->nframes - 1].len += len;
}

uint8_t *
zr__msg_frame_tail(zr_msg *m)
{
	return m->data + m->len;
}

void
zr__msg_frame_placed(zr_msg *m, size_t len)
{
	m->len += len;
	m->frames[m->nframes - 1].len += len;
}

/* see zring.h */
int
zr_msg_add(zr_msg *m, const void *data, size_t len)
{
	int rc;

	/* The usual case in one step. The general way's three calls were ~85
	 * instructions of a 1 B message's send and again of its receive
	 * (callgrind). */
	if (zr__msg_put_first(m, data, len))
		return 0;
	rc = zr__msg_frame_begin(m, len);

	if (rc < 0)
		return rc;
	zr__msg_frame_append(m, data, len);
	return 0;
}

bool
zr__msg_adopt(zr_msg *m, uint8_t *buf, size_t cap, size_t off, size_t len)
{
	if (m->nframes != 0 || m->hooked || off > cap || len > cap - off)
		return false;
	zr__msg_give_buf(m, buf, cap);
	m->len = off + len;
	m->frames[0].off = off;
	m->frames[0].len = len;
	m->nframes = 1;
	return true;
}

uint8_t *
zr__msg_take_buf(zr_msg *m, size_t *cap)
{
	uint8_t *d = m->data;

	if (m->hooked || d == zr__msg_own(m))
		return NULL;
	*cap = m->cap;
	m->data = zr__msg_own(m);
	m->cap = ZR__MSG_OWN_BYTES;
	m->len = 0;
	m->nframes = 0;
	return d;
}

void
zr__msg_give_buf(zr_msg *m, uint8_t *buf, size_t cap)
{
	msg_free_data(m);
	m->data = buf;
	m->cap = cap;
}

void
zr__msg_drop_front(zr_msg *m, uint32_t n)
{
	if (n > m->nframes)
		n = m->nframes;
	memmove(m->frames, m->frames + n, (m->nframes - n) * sizeof *m->frames);
	m->nframes -= n;
}

int
zr__msg_push_front(zr_msg *m, const void *data, size_t len)
{
	int rc = zr__msg_frame_begin(m, len);

	if (rc < 0)
		return rc;
	zr__msg_frame_append(m, data, len);
	/* Rotate the new span to the front; the bytes stay where they are. */
	struct zr__span last = m->frames[m->nframes - 1];

	memmove(m->frames + 1, m->frames, (m->nframes - 1) * sizeof *m->frames);
	m->frames[0] = last;
	return 0;
}

/* see zring.h */
size_t
zr_msg_frames(const zr_msg *m)
{
	return m->nframes;
}

/* see zring.h */
const void *
zr_msg_frame(const zr_msg *m, size_t i, size_t *len)
{
	if (i >= m->nframes) {
		if (len != NULL)
			*len = 0;
		return NULL;
	}
	if (len != NULL)
		*len = m->frames[i].len;
	return m->data != NULL ? m->data + m->frames[i].off : (const void *)"";
}

/* see zring.h */
size_t
zr_msg_size(const zr_msg *m)
{
	size_t n = 0;

	for (uint32_t i = 0; i < m->nframes; i++)
		n += m->frames[i].len;
	return n;
}
