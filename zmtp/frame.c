/*
 * Frames (RFC 23 "Framing"): a flags octet (bit 2 COMMAND, bit 1 LONG, bit 0
 * MORE, bits 7..3 reserved), then a 1-octet or 8-octet network-order size,
 * then the body.
 *
 * Decisions (checklist B2): reserved flag bits set are a protocol error (libzmq
 * ignores them, but no known sender sets them, and accepting them would let
 * a future meaning pass unnoticed); a command with MORE, a command inside a
 * multipart message and a long size above 2^63-1 are errors; a long-form size
 * for a small body is accepted (libzmq does); sizes, and the frame count of a
 * message, are checked against the limits as soon as the header octets are
 * there, before a body byte is taken.
 */
#include <errno.h>

#include <zring/zmtp.h>

#include "wire.h"

#define FRAME_FLAGS_KNOWN (ZR_ZMTP_MORE | ZR_ZMTP_LONG | ZR_ZMTP_COMMAND)
#define FRAME_SIZE_MAX ((uint64_t)INT64_MAX)

/* see zmtp.h */
int
zr_zmtp_frame_header(uint8_t out[ZR_ZMTP_HEADER_MAX], uint64_t size, unsigned flags)
{
	if ((flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_COMMAND)) != 0)
		return -EINVAL;
	if ((flags & ZR_ZMTP_COMMAND) && (flags & ZR_ZMTP_MORE))
		return -EINVAL;
	if (size > FRAME_SIZE_MAX)
		return -EINVAL;
	if (size <= 255) {
		out[0] = (uint8_t)flags;
		out[1] = (uint8_t)size;
		return 2;
	}
	out[0] = (uint8_t)(flags | ZR_ZMTP_LONG);
	wire_put64(out + 1, size);
	return 9;
}

/* see zmtp.h */
void
zr_zmtp_dec_init(struct zr_zmtp_dec *d, uint64_t max_msg_size, uint32_t max_cmd_size)
{
	d->max_msg_size = max_msg_size;
	d->max_cmd_size = max_cmd_size;
	d->msg_total = 0;
	d->max_msg_frames = ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES;
	d->msg_frames = 0;
	d->body_size = 0;
	d->body_off = 0;
	d->body_flags = 0;
	d->state = ZR__ZMTP_DEC_HEADER;
	d->whole = false;
	d->err = 0;
}

/* see zmtp.h */
void
zr_zmtp_dec_set_whole(struct zr_zmtp_dec *d, bool whole)
{
	d->whole = whole;
}

/* see zmtp.h */
void
zr_zmtp_dec_set_frame_limit(struct zr_zmtp_dec *d, uint32_t max_msg_frames)
{
	d->max_msg_frames = max_msg_frames ? max_msg_frames : ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES;
}

/* see zmtp.h */
void
zr_zmtp_dec_set_cmd_limit(struct zr_zmtp_dec *d, uint32_t max_cmd_size)
{
	d->max_cmd_size = max_cmd_size;
}

static int
dec_fail(struct zr_zmtp_dec *d, int err)
{
	d->err = err;
	return err;
}

/* Hands out the next piece of the current message frame's body. */
static size_t
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
static int
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

/* see zmtp.h */
int
zr_zmtp_dec_feed(struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, size_t *consumed,
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

/* see zmtp.h */
uint64_t
zr_zmtp_dec_body_left(const struct zr_zmtp_dec *d)
{
	if (d->err || d->state != ZR__ZMTP_DEC_BODY || d->body_off == 0)
		return 0;
	return d->body_size - d->body_off;
}

/* see zmtp.h */
int
zr_zmtp_dec_placed(struct zr_zmtp_dec *d, size_t n, struct zr_zmtp_frame *f)
{
	if (d->err)
		return d->err;
	if (n == 0 || n > zr_zmtp_dec_body_left(d))
		return -EINVAL;
	(void)dec_body_piece(d, NULL, n, f);
	return ZR_OK;
}

/* see zmtp.h */
size_t
zr_zmtp_dec_want(const struct zr_zmtp_dec *d, const uint8_t *buf, size_t len)
{
	uint64_t size = 0;
	int hlen;

	if (d->state == ZR__ZMTP_DEC_BODY || len == 0)
		return 1;
	hlen = dec_header_check(d, buf, len, &size);
	if (hlen < 0)
		return 0;
	if (hlen == 0)
		return (buf[0] & ZR_ZMTP_LONG) ? 9 : 2;
	if ((buf[0] & ZR_ZMTP_COMMAND) || d->whole)
		return (size_t)hlen + (size_t)size;
	return (size_t)hlen;
}
