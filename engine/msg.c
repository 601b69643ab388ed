/*
 * Messages: one byte buffer holding every frame back to back, and a table of
 * (offset, length) spans, inline for up to four frames. A received message is
 * assembled straight into its buffer (the frame size is known from the header
 * and bounded by MAXMSGSIZE, so the buffer is sized once per frame).
 */
#define _GNU_SOURCE /* liburing.h (through engine.h) needs sigset_t */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* see zring.h */
int
zr_msg_new(zr_msg **msg)
{
	zr_msg *m = calloc(1, sizeof *m);

	if (m == NULL)
		return -ENOMEM;
	m->frames = m->inl;
	m->frame_cap = ZR__MSG_INLINE_FRAMES;
	m->refs = 1;
	*msg = m;
	return 0;
}

/* see zring.h */
void
zr_msg_free(zr_msg *m)
{
	if (m == NULL)
		return;
	if (m->frames != m->inl)
		free(m->frames);
	free(m->data);
	free(m);
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

	if (extra <= m->cap - m->len)
		return 0;
	if (extra > SIZE_MAX / 2 - m->len)
		return -ENOMEM;
	want = m->len + extra;
	cap = m->cap ? m->cap : 64;
	while (cap < want)
		cap *= 2;
	d = realloc(m->data, cap);
	if (d == NULL)
		return -ENOMEM;
	m->data = d;
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
	cap = m->frame_cap * 2;
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

/* see zring.h */
int
zr_msg_add(zr_msg *m, const void *data, size_t len)
{
	int rc = zr__msg_frame_begin(m, len);

	if (rc < 0)
		return rc;
	zr__msg_frame_append(m, data, len);
	return 0;
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
