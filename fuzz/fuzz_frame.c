/*
 * Fuzz harness: the frame decoder, zr_zmtp_dec_feed / zr_zmtp_dec_want.
 *
 * Input layout:
 *   byte 0  limits: bits 0-2 max_msg_size (table), bits 3-5 max_cmd_size
 *           (table), bit 6 raise the command limit to 64 KiB after the first
 *           command frame (as the connection does after its handshake),
 *           bit 7 feed the chunked run one byte at a time
 *   byte 1  seed of the chunk sizes; its top 3 bits also pick max_msg_frames
 *           (fz_frame_limits: half the default, half 1, 2, 3 or 8)
 *   rest    the byte stream
 *
 * The stream is decoded twice: one-shot (all bytes presented at once) and
 * chunked (bytes appended in pieces whose sizes come from the seed, the
 * unconsumed rest kept and re-presented, as the input contract requires).
 * The chunked run now and then places a body's rest itself
 * (zr_zmtp_dec_placed) instead of feeding it, as a connection receiving
 * straight into its message does. Both runs write a normalised log (frames joined from their pieces, the
 * error and where it happened, how much was consumed in the end); the logs
 * must be identical. Along the way every piece is checked against the
 * contract (spans inside the consumed bytes, offsets contiguous, sizes within
 * the limits, no message longer than max_msg_frames frames and a refusal
 * for too many only at exactly that many, FRAME_END exactly at the end, want
 * bounded) and every byte of every piece is read.
 */
#include <errno.h>

#include <zring/zmtp.h>

#include "fuzz_common.h"

static const uint64_t frame_max_msg[8] = {
	ZR_ZMTP_DEFAULT_MAX_MSG_SIZE, 0, 1, 255, 256, 1000, 65536, UINT64_MAX,
};
static const uint32_t frame_max_cmd[8] = {
	ZR_ZMTP_DEFAULT_MAX_CMD_SIZE,      0,          1, 255, 256, 1000,
	ZR_ZMTP_DEFAULT_MAX_HANDSHAKE_CMD, UINT32_MAX,
};

struct frame_run {
	struct zr_zmtp_dec dec;
	struct fz_buf in;
	struct fz_log log;
	struct fz_log cur; /* the message frame being joined */
	bool in_frame;
	uint64_t cur_size;
	unsigned cur_flags;
	bool in_msg; /* a MORE frame ended: the message goes on */
	uint64_t msg_total;
	uint32_t msg_frames; /* frames of the message so far (MORE frames ended) */
	uint32_t max_frames;
	uint64_t max_msg;
	uint32_t cmd_limit;
	bool raise_after_cmd;
	uint64_t consumed_total;
	uint64_t sum;
	int err;
	unsigned zero_progress;
};

static void
frame_run_init(struct frame_run *r, uint8_t cfg, uint8_t seed)
{
	uint32_t frames = fz_frame_limits[seed >> 5];

	memset(r, 0, sizeof *r);
	r->max_msg = frame_max_msg[cfg & 7];
	r->cmd_limit = frame_max_cmd[cfg >> 3 & 7];
	r->raise_after_cmd = (cfg & 0x40) != 0;
	r->max_frames = fz_frame_limit(frames);
	fz_buf_init(&r->in);
	memset(&r->dec, 0x5c, sizeof r->dec);
	zr_zmtp_dec_init(&r->dec, r->max_msg, r->cmd_limit);
	if (frames != 0 || (seed & 1))
		zr_zmtp_dec_set_frame_limit(&r->dec, frames); /* 0: back to the default */
}

static void
frame_run_free(struct frame_run *r)
{
	fz_buf_free(&r->in);
	fz_log_free(&r->log);
	fz_log_free(&r->cur);
}

static void
frame_check_header_encoder(uint64_t size, unsigned flags)
{
	uint8_t h[ZR_ZMTP_HEADER_MAX];
	int n = zr_zmtp_frame_header(h, size, flags);

	if (size <= 255) {
		FZ_CHECK(n == 2 && h[0] == flags && h[1] == size);
	} else {
		FZ_CHECK(n == 9 && h[0] == (flags | ZR_ZMTP_LONG) && fz_get64(h + 1) == size);
	}
}

static void
frame_on_command(struct frame_run *r, const struct zr_zmtp_frame *f, size_t consumed)
{
	FZ_CHECK(f->flags == (ZR_ZMTP_COMMAND | ZR_ZMTP_FRAME_END));
	FZ_CHECK(!r->in_frame && !r->in_msg);
	FZ_CHECK(f->offset == 0 && f->len == f->size);
	FZ_CHECK(f->size <= r->cmd_limit);
	FZ_CHECK(fz_within(f->data, f->len, r->in.p, consumed));
	r->sum += fz_touch(f->data, f->len);
	fz_log_u8(&r->log, 'C');
	fz_log_u64(&r->log, f->size);
	fz_log_bytes(&r->log, f->data, f->len);
	frame_check_header_encoder(f->size, ZR_ZMTP_COMMAND);
	if (r->raise_after_cmd) {
		r->cmd_limit = ZR_ZMTP_DEFAULT_MAX_CMD_SIZE;
		zr_zmtp_dec_set_cmd_limit(&r->dec, r->cmd_limit);
		r->raise_after_cmd = false;
	}
}

/* placed: the octets are the caller's own (frame_run_place), not in r->in. */
static void
frame_on_piece(struct frame_run *r, const struct zr_zmtp_frame *f, size_t consumed, bool placed)
{
	unsigned more = f->flags & ZR_ZMTP_MORE;

	FZ_CHECK((f->flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_FRAME_END)) == 0);
	FZ_CHECK(f->len <= f->size && f->offset <= f->size - f->len);
	FZ_CHECK(f->size <= r->max_msg);
	FZ_CHECK(f->len > 0 || f->size == 0);
	FZ_CHECK(((f->flags & ZR_ZMTP_FRAME_END) != 0) == (f->offset + f->len == f->size));
	FZ_CHECK(placed || fz_within(f->data, f->len, r->in.p, consumed));
	if (r->in_frame) {
		FZ_CHECK(f->offset == r->cur.len && f->size == r->cur_size && more == r->cur_flags);
	} else {
		FZ_CHECK(f->offset == 0);
		/* max_msg_size limits the sum of a message's frame sizes,
		 * max_msg_frames their number. */
		FZ_CHECK(f->size <= r->max_msg - r->msg_total);
		FZ_CHECK(r->msg_frames < r->max_frames);
		r->in_frame = true;
		r->cur_size = f->size;
		r->cur_flags = more;
		r->cur.len = 0;
	}
	r->sum += fz_touch(f->data, f->len);
	fz_log_bytes(&r->cur, f->data, f->len);
	if (f->flags & ZR_ZMTP_FRAME_END) {
		fz_log_u8(&r->log, more ? 'M' : 'F');
		fz_log_u64(&r->log, f->size);
		fz_log_bytes(&r->log, r->cur.p, r->cur.len);
		frame_check_header_encoder(f->size, more);
		r->in_frame = false;
		if (more) {
			r->in_msg = true;
			r->msg_total += f->size;
			r->msg_frames++;
		} else {
			r->in_msg = false;
			r->msg_total = 0;
			r->msg_frames = 0;
		}
	}
}

static bool
frame_err_known(int rc)
{
	return rc == -ZR_EFLAGS || rc == -ZR_ECMDMORE || rc == -ZR_EFRAMESIZE ||
	       rc == -ZR_ETOOLARGE || rc == -ZR_ECMDSIZE || rc == -ZR_ECMDINMSG ||
	       rc == -ZR_ETOOMANYFRAMES;
}

/* Decodes from what r->in holds until the decoder needs more or fails. */
static void
frame_run_pump(struct frame_run *r)
{
	for (;;) {
		struct zr_zmtp_frame f;
		size_t consumed = 0;
		int rc;

		memset(&f, 0xa5, sizeof f);
		rc = zr_zmtp_dec_feed(&r->dec, r->in.p, r->in.len, &consumed, &f);
		FZ_CHECK(consumed <= r->in.len);
		if (r->err != 0) {
			FZ_CHECK(rc == r->err); /* sticky */
			return;
		}
		if (rc < 0) {
			FZ_CHECK(frame_err_known(rc));
			/* Refused for its frame count only at exactly the limit,
			 * between frames. */
			if (rc == -ZR_ETOOMANYFRAMES)
				FZ_CHECK(!r->in_frame && r->in_msg &&
				         r->msg_frames == r->max_frames);
			r->err = rc;
			r->consumed_total += consumed;
			fz_buf_drop(&r->in, consumed);
			fz_log_u8(&r->log, 'E');
			fz_log_int(&r->log, rc);
			fz_log_u64(&r->log, r->consumed_total);
			/* Sticky, whatever comes next. */
			FZ_CHECK(zr_zmtp_dec_feed(&r->dec, r->in.p, r->in.len, &consumed, &f) ==
			         rc);
			FZ_CHECK(zr_zmtp_dec_feed(&r->dec, r->in.p, 0, &consumed, &f) == rc);
			return;
		}
		if (rc == ZR_NEED_MORE) {
			size_t want;

			r->consumed_total += consumed;
			fz_buf_drop(&r->in, consumed);
			want = zr_zmtp_dec_want(&r->dec, r->in.p, r->in.len);
			FZ_CHECK(want >= 1 && want > r->in.len);
			FZ_CHECK((uint64_t)want <= (uint64_t)r->cmd_limit + ZR_ZMTP_HEADER_MAX);
			/* A second call with nothing new changes nothing. */
			consumed = 0;
			FZ_CHECK(zr_zmtp_dec_feed(&r->dec, r->in.p, r->in.len, &consumed, &f) ==
			         ZR_NEED_MORE);
			FZ_CHECK(consumed == 0);
			return;
		}
		FZ_CHECK(rc == ZR_OK);
		if (f.flags & ZR_ZMTP_COMMAND)
			frame_on_command(r, &f, consumed);
		else
			frame_on_piece(r, &f, consumed, false);
		r->zero_progress = consumed == 0 ? r->zero_progress + 1 : 0;
		FZ_CHECK(r->zero_progress < 4); /* an event loop that never consumes */
		r->consumed_total += consumed;
		fz_buf_drop(&r->in, consumed);
	}
}

/*
 * As a connection receiving a large body straight into its message does:
 * with nothing buffered, up to n octets of the body begun are placed by the
 * caller (zr_zmtp_dec_placed) instead of fed. Returns how many (0: no body
 * begun, or input buffered).
 */
static size_t
frame_run_place(struct frame_run *r, const uint8_t *p, size_t n)
{
	uint64_t left = zr_zmtp_dec_body_left(&r->dec);
	struct zr_zmtp_frame f;

	if (r->err != 0) {
		FZ_CHECK(left == 0);
		return 0;
	}
	if (left == 0 || r->in.len > 0)
		return 0;
	FZ_CHECK(r->in_frame && left <= r->cur_size - r->cur.len);
	if (n > left)
		n = (size_t)left;
	FZ_CHECK(zr_zmtp_dec_placed(&r->dec, (size_t)left + 1, &f) == -EINVAL);
	memset(&f, 0xa5, sizeof f);
	FZ_CHECK(zr_zmtp_dec_placed(&r->dec, n, &f) == ZR_OK);
	FZ_CHECK(f.data == NULL && f.len == n);
	f.data = p;
	frame_on_piece(r, &f, 0, true);
	r->consumed_total += n;
	return n;
}

static void
frame_run_finish(struct frame_run *r)
{
	if (r->in_frame) {
		fz_log_u8(&r->log, 'P');
		fz_log_u64(&r->log, r->cur_size);
		fz_log_bytes(&r->log, r->cur.p, r->cur.len);
	}
	fz_log_u8(&r->log, 'Z');
	fz_log_u64(&r->log, r->consumed_total);
	fz_log_u64(&r->log, r->in.len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_run one, chunked;
	struct fz_rng rng, place;
	const uint8_t *stream;
	size_t len, off;
	bool bytewise;

	if (size < 2)
		return 0;
	stream = data + 2;
	len = size - 2;
	bytewise = (data[0] & 0x80) != 0;

	frame_run_init(&one, data[0], data[1]);
	fz_buf_append(&one.in, stream, len);
	frame_run_pump(&one);
	frame_run_finish(&one);

	frame_run_init(&chunked, data[0], data[1]);
	fz_rng_init(&rng, data[1]);
	fz_rng_init(&place, data[1] ^ 0x5au);
	for (off = 0; off < len;) {
		size_t n = bytewise ? 1 : fz_chunk_len(&rng, len - off);

		if ((fz_rng_next(&place) & 3) == 0) {
			size_t k = frame_run_place(&chunked, stream + off, n);

			off += k;
			n -= k;
			if (n == 0)
				continue;
		}
		fz_buf_append(&chunked.in, stream + off, n);
		off += n;
		frame_run_pump(&chunked);
	}
	frame_run_finish(&chunked);

	if (!fz_log_equal(&one.log, &chunked.log)) {
		fz_log_diff("frame", &one.log, &chunked.log);
		FZ_CHECK(!"chunked and one-shot decoding disagree");
	}
	FZ_CHECK(one.sum == chunked.sum && one.err == chunked.err);

	frame_run_free(&one);
	frame_run_free(&chunked);
	return 0;
}
