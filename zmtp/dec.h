/*
 * zmtp/ internal: the frame decoder's core (RFC 23 "Framing"), for frame.c
 * (zr_zmtp_dec_feed, zr_zmtp_dec_want) and conn.c, which inlines it. Not
 * installed.
 *
 * Why inline: through the call, conn.c read back the struct zr_zmtp_frame
 * the decoder had just written field by field, and gcc merges two of those
 * 8-octet loads into one 16-octet load, which no store can forward to: the
 * load waited for the stores to retire, on every frame (perf annotate, a
 * 64 B receiver: two thirds of zr_zmtp_feed's samples on that one load).
 * Inlined, the frame's fields stay in registers.
 *
 * What it accepts and refuses: frame.c, "Decisions".
 */
#ifndef ZR_ZMTP_DEC_H
#define ZR_ZMTP_DEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring/zmtp.h>

#include "wire.h"

#define FRAME_FLAGS_KNOWN (ZR_ZMTP_MORE | ZR_ZMTP_LONG | ZR_ZMTP_COMMAND)

static inline int
dec_fail(struct zr_zmtp_dec *d, int err)
{
	d->err = err;
	return err;
}

/* Hands out the next piece of the current message frame's body. */
static inline size_t
dec_body_piece(struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, struct zr_zmtp_frame *f)
{
	uint64_t left = d->body_size - d->body_off;
	size_t n = left < len ? (size_t)left : len;

	f->data = buf;
	f->len = n;
	f->size = d->body_size;
	f->offset = d->body_off;
	f->flags = d->body_flags;
	d->body_off += n;
	if (d->body_off == d->body_size) {
		f->flags |= ZR_ZMTP_FRAME_END;
		d->state = (d->body_flags & ZR_ZMTP_MORE) ? ZR__ZMTP_DEC_HEADER_MORE
		                                          : ZR__ZMTP_DEC_HEADER;
	}
	return n;
}

/*
 * Checks what the octets present so far of a header allow: called with any
 * len >= 1. Returns the header length when it is all there and valid,
 * ZR_NEED_MORE-style 0 when more is needed, or a negative code.
 */
static inline int
dec_header_check(const struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, uint64_t *size)
{
	unsigned flags = buf[0];
	size_t hlen = (flags & ZR_ZMTP_LONG) ? 9 : 2;

	if (flags & ~FRAME_FLAGS_KNOWN)
		return -ZR_EFLAGS;
	if (flags & ZR_ZMTP_COMMAND) {
		if (flags & ZR_ZMTP_MORE)
			return -ZR_ECMDMORE;
		if (d->state == ZR__ZMTP_DEC_HEADER_MORE)
			return -ZR_ECMDINMSG;
	}
	if ((flags & ZR_ZMTP_LONG) && len >= 2 && (buf[1] & 0x80))
		return -ZR_EFRAMESIZE;
	if (len < hlen)
		return 0;
	*size = (flags & ZR_ZMTP_LONG) ? wire_get64(buf + 1) : buf[1];
	if (flags & ZR_ZMTP_COMMAND) {
		if (*size > d->max_cmd_size)
			return -ZR_ECMDSIZE;
	} else if (*size > d->max_msg_size - d->msg_total) {
		return -ZR_ETOOLARGE;
	} else if (d->msg_frames >= d->max_msg_frames) {
		/* Empty frames pass the size check for ever: count them. */
		return -ZR_ETOOMANYFRAMES;
	}
	return (int)hlen;
}

/* zr_zmtp_dec_feed (see zmtp.h). */
static inline int
dec_feed(struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, size_t *consumed,
         struct zr_zmtp_frame *f)
{
	uint64_t size = 0;
	unsigned flags;
	int hlen;

	*consumed = 0;
	if (d->err)
		return d->err;
	if (len == 0)
		return ZR_NEED_MORE;
	if (d->state == ZR__ZMTP_DEC_BODY) {
		*consumed = dec_body_piece(d, buf, len, f);
		return ZR_OK;
	}

	hlen = dec_header_check(d, buf, len, &size);
	if (hlen < 0)
		return dec_fail(d, hlen);
	if (hlen == 0)
		return ZR_NEED_MORE;
	flags = buf[0] & (ZR_ZMTP_MORE | ZR_ZMTP_COMMAND);

	if ((flags & ZR_ZMTP_COMMAND) || d->whole) {
		/* Commands (and in whole mode every frame) come out whole: the
		 * caller keeps the bytes until then (bounded by the limits checked
		 * above). */
		if (len - (size_t)hlen < size)
			return ZR_NEED_MORE;
		if (!(flags & ZR_ZMTP_COMMAND)) {
			bool more = (flags & ZR_ZMTP_MORE) != 0;

			d->state = more ? ZR__ZMTP_DEC_HEADER_MORE : ZR__ZMTP_DEC_HEADER;
			d->msg_total = more ? d->msg_total + size : 0;
			d->msg_frames = more ? d->msg_frames + 1 : 0;
		}
		f->data = buf + hlen;
		f->len = (size_t)size;
		f->size = size;
		f->offset = 0;
		f->flags = flags | ZR_ZMTP_FRAME_END;
		*consumed = (size_t)hlen + (size_t)size;
		return ZR_OK;
	}

	if (flags & ZR_ZMTP_MORE) {
		d->msg_total += size;
		d->msg_frames++;
		d->state = ZR__ZMTP_DEC_HEADER_MORE;
	} else {
		d->msg_total = 0;
		d->msg_frames = 0;
		d->state = ZR__ZMTP_DEC_HEADER;
	}
	*consumed = (size_t)hlen;
	d->body_size = size;
	d->body_off = 0;
	d->body_flags = flags;
	if (size == 0) {
		f->data = buf + hlen;
		f->len = 0;
		f->size = 0;
		f->offset = 0;
		f->flags = flags | ZR_ZMTP_FRAME_END;
		return ZR_OK;
	}
	d->state = ZR__ZMTP_DEC_BODY;
	if (len == (size_t)hlen)
		return ZR_NEED_MORE;
	*consumed += dec_body_piece(d, buf + hlen, len - (size_t)hlen, f);
	return ZR_OK;
}

#endif /* ZR_ZMTP_DEC_H */
