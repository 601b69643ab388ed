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

#include "dec.h"
#include "wire.h"

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

/* see zmtp.h */
int
zr_zmtp_dec_feed(struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, size_t *consumed,
                 struct zr_zmtp_frame *f)
{
	return dec_feed(d, buf, len, consumed, f);
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
