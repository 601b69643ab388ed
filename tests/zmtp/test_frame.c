/*
 * The frame decoder and the frame header encoder (RFC 23 "Framing"): flags
 * octet (bits 7..3 reserved, bit 2 COMMAND, bit 1 LONG, bit 0 MORE), a 1-octet
 * or 8-octet network-order size, the body. Every vector runs whole, byte by
 * byte and at every split point, and must give the same joined frames.
 */
/* Wire vectors are written as adjacent literals, one per field, the way the
 * bytes sit on the wire; the formatter would put each on a line of its own. */
/* clang-format off */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <zring/zmtp.h>

#include "feed.h"
#include "guard.h"
#include "rows.h"
#include "vectors.h"

#define MORE ZR_ZMTP_MORE
#define CMD ZR_ZMTP_COMMAND
#define DEF_MSG ZR_ZMTP_DEFAULT_MAX_MSG_SIZE
#define DEF_CMD ZR_ZMTP_DEFAULT_MAX_CMD_SIZE

struct frame_exp {
	unsigned flags;
	uint64_t size;
	struct seg body;
};

struct dec_row {
	const char *name;
	int line;
	uint64_t max_msg;
	uint32_t max_cmd;
	struct seg in[MAX_SEGS];
	int rc; /* the final result: ZR_NEED_MORE, or an error */
	size_t nout;
	struct frame_exp out[6];
};

static const struct dec_row dec_rows[] = {
	{"empty frame", __LINE__, DEF_MSG, DEF_CMD, {L("\x00\x00")}, ZR_NEED_MORE, 1, {{0, 0, L("")}}},
	{"one octet", __LINE__, DEF_MSG, DEF_CMD, {L("\x00\x01" "a")}, ZR_NEED_MORE, 1, {{0, 1, L("a")}}},
	{"255 octets, short form", __LINE__, DEF_MSG, DEF_CMD, {L("\x00\xff"), F(255)}, ZR_NEED_MORE, 1,
	 {{0, 255, F(255)}}},
	{"256 octets, long form", __LINE__, DEF_MSG, DEF_CMD, {L("\x02" "\0\0\0\0\0\0\x01\x00"), F(256)},
	 ZR_NEED_MORE, 1, {{0, 256, F(256)}}},
	{"long form for a 3-octet body", __LINE__, DEF_MSG, DEF_CMD, {L("\x02" "\0\0\0\0\0\0\0\x03" "abc")},
	 ZR_NEED_MORE, 1, {{0, 3, L("abc")}}},
	{"long form for an empty body", __LINE__, DEF_MSG, DEF_CMD, {L("\x02" Z8)}, ZR_NEED_MORE, 1,
	 {{0, 0, L("")}}},
	{"multipart with an empty middle part", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x01\x03" "abc" "\x01\x00" "\x00\x02" "de")}, ZR_NEED_MORE, 3,
	 {{MORE, 3, L("abc")}, {MORE, 0, L("")}, {0, 2, L("de")}}},
	{"MORE with long form", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x03" "\0\0\0\0\0\0\x01\x2c"), F(300), L("\x00\x01" "z")}, ZR_NEED_MORE, 2,
	 {{MORE, 300, F(300)}, {0, 1, L("z")}}},
	{"short command", __LINE__, DEF_MSG, DEF_CMD, {L("\x04\x07" "\x04" "PING" "\x00\x0a")}, ZR_NEED_MORE,
	 1, {{CMD, 7, L("\x04" "PING" "\x00\x0a")}}},
	{"empty command frame", __LINE__, DEF_MSG, DEF_CMD, {L("\x04\x00")}, ZR_NEED_MORE, 1,
	 {{CMD, 0, L("")}}},
	{"long command", __LINE__, DEF_MSG, DEF_CMD, {L("\x06" "\0\0\0\0\0\0\x01\x0a"), F(266)},
	 ZR_NEED_MORE, 1, {{CMD, 266, F(266)}}},
	{"long form command with a short body", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x06" "\0\0\0\0\0\0\0\x05" "\x04" "PONG")}, ZR_NEED_MORE, 1, {{CMD, 5, L("\x04" "PONG")}}},
	{"commands around a message", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x04\x07" "\x04" "PONG" "hi" "\x00\x03" "msg" "\x04\x05" "\x04" "PONG")}, ZR_NEED_MORE, 3,
	 {{CMD, 7, L("\x04" "PONG" "hi")}, {0, 3, L("msg")}, {CMD, 5, L("\x04" "PONG")}}},
	{"message of exactly max_msg_size", __LINE__, 10, DEF_CMD, {L("\x00\x0a"), F(10)}, ZR_NEED_MORE, 1,
	 {{0, 10, F(10)}}},
	{"multipart summing to exactly max_msg_size", __LINE__, 10, DEF_CMD,
	 {L("\x01\x04"), F(4), L("\x00\x06"), F(6)}, ZR_NEED_MORE, 2, {{MORE, 4, F(4)}, {0, 6, F(6)}}},
	{"the size limit is per message", __LINE__, 10, DEF_CMD,
	 {L("\x01\x04"), F(4), L("\x00\x06"), F(6), L("\x00\x0a"), F(10)}, ZR_NEED_MORE, 3,
	 {{MORE, 4, F(4)}, {0, 6, F(6)}, {0, 10, F(10)}}},
	{"command of exactly the command limit", __LINE__, DEF_MSG, 5, {L("\x04\x05" "\x04" "PONG")},
	 ZR_NEED_MORE, 1, {{CMD, 5, L("\x04" "PONG")}}},
	{"commands do not count toward max_msg_size", __LINE__, 4, DEF_CMD,
	 {L("\x04\x07" "\x04" "PONG" "hi" "\x00\x04" "abcd")}, ZR_NEED_MORE, 2,
	 {{CMD, 7, L("\x04" "PONG" "hi")}, {0, 4, L("abcd")}}},
	{"trailing partial header is kept", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x00\x01" "a" "\x02" "\0\0\0")}, ZR_NEED_MORE, 1, {{0, 1, L("a")}}},
	{"trailing partial command is kept", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x00\x01" "a" "\x04\x05" "\x04" "PO")}, ZR_NEED_MORE, 1, {{0, 1, L("a")}}},

	/* errors */
	{"reserved flag bit 3", __LINE__, DEF_MSG, DEF_CMD, {L("\x08\x00")}, -ZR_EFLAGS, 0, {{0}}},
	{"reserved flag bit 4", __LINE__, DEF_MSG, DEF_CMD, {L("\x10\x00")}, -ZR_EFLAGS, 0, {{0}}},
	{"reserved flag bit 5", __LINE__, DEF_MSG, DEF_CMD, {L("\x20\x00")}, -ZR_EFLAGS, 0, {{0}}},
	{"reserved flag bit 6", __LINE__, DEF_MSG, DEF_CMD, {L("\x40\x00")}, -ZR_EFLAGS, 0, {{0}}},
	{"reserved flag bit 7", __LINE__, DEF_MSG, DEF_CMD, {L("\x80\x00")}, -ZR_EFLAGS, 0, {{0}}},
	{"reserved bit after a good frame", __LINE__, DEF_MSG, DEF_CMD, {L("\x00\x01" "a" "\x09\x01" "b")},
	 -ZR_EFLAGS, 1, {{0, 1, L("a")}}},
	{"command with MORE", __LINE__, DEF_MSG, DEF_CMD, {L("\x05\x05" "\x04" "PONG")}, -ZR_ECMDMORE, 0,
	 {{0}}},
	{"long command with MORE", __LINE__, DEF_MSG, DEF_CMD, {L("\x07" "\0\0\0\0\0\0\0\x05" "\x04" "PONG")},
	 -ZR_ECMDMORE, 0, {{0}}},
	{"long size with the top bit set", __LINE__, UINT64_MAX, DEF_CMD, {L("\x02" "\x80\0\0\0\0\0\0\0")},
	 -ZR_EFRAMESIZE, 0, {{0}}},
	{"long size of all ones", __LINE__, UINT64_MAX, DEF_CMD, {L("\x03" "\xff\xff\xff\xff\xff\xff\xff\xff")},
	 -ZR_EFRAMESIZE, 0, {{0}}},
	{"frame over max_msg_size, header only", __LINE__, 10, DEF_CMD, {L("\x00\x0b")}, -ZR_ETOOLARGE, 0,
	 {{0}}},
	{"2^32 frame over the default limit, header only", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x02" "\0\0\0\x01\0\0\0\0")}, -ZR_ETOOLARGE, 0, {{0}}},
	{"multipart sum over max_msg_size", __LINE__, 10, DEF_CMD, {L("\x01\x06"), F(6), L("\x00\x05")},
	 -ZR_ETOOLARGE, 1, {{MORE, 6, F(6)}}},
	{"command over the command limit, header only", __LINE__, DEF_MSG, 5, {L("\x04\x06")},
	 -ZR_ECMDSIZE, 0, {{0}}},
	{"long command over the command limit", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x06" "\0\0\0\0\0\x01\0\x01")}, -ZR_ECMDSIZE, 0, {{0}}},
	{"command between a MORE frame and the last", __LINE__, DEF_MSG, DEF_CMD,
	 {L("\x01\x01" "a" "\x04\x05" "\x04" "PONG" "\x00\x01" "b")}, -ZR_ECMDINMSG, 1,
	 {{MORE, 1, L("a")}}},
};

static void
check_frames(const struct dec_row *row, const struct zt_run *r)
{
	cr_assert_eq(r->rc, row->rc, "line %d (%s): result %d (%s), want %d (%s)", row->line, row->name,
	             r->rc, zr_strerror(r->rc), row->rc, zr_strerror(row->rc));
	cr_assert_eq(r->nev, row->nout, "line %d (%s): %zu frames, want %zu", row->line, row->name, r->nev,
	             row->nout);
	for (size_t i = 0; i < row->nout; i++) {
		const struct frame_exp *x = &row->out[i];
		const struct zt_ev *e = &r->ev[i];
		size_t blen;
		uint8_t *body = row_build(&x->body, 1, &blen);

		cr_assert_eq(e->type, ZT_EV_DEC_FRAME);
		cr_assert(e->complete, "line %d: frame %zu incomplete", row->line, i);
		cr_assert_eq(e->flags, x->flags, "line %d: frame %zu flags 0x%x, want 0x%x", row->line, i,
		             e->flags, x->flags);
		cr_assert_eq(e->size, x->size, "line %d: frame %zu size %" PRIu64, row->line, i, e->size);
		zt_assert_bytes("frame body", e->data, e->len, body, blen, row->line);
		free(body);
	}
}

ParameterizedTestParameters(zmtp_frame, decodes_each_vector_identically_under_every_chunking)
{
	ROW_PARAMS(dec_rows);
}

ParameterizedTest(int *i, zmtp_frame, decodes_each_vector_identically_under_every_chunking)
{
	const struct dec_row *row = &dec_rows[*i];
	struct zt_target t = zt_dec_target(row->max_msg, row->max_cmd);
	struct zt_run whole;
	size_t n;
	uint8_t *in = row_build(row->in, MAX_SEGS, &n);

	cr_log_info("vector %s (line %d)", row->name, row->line);
	zt_check_splits(&t, in, n, row->line, &whole);
	check_frames(row, &whole);
	zt_run_free(&whole);
	free(in);
}

/* Feeds in[0..n) once, flush against a guard page. */
static int
dec_once(struct zr_zmtp_dec *d, const void *in, size_t n, size_t *consumed, struct zr_zmtp_frame *f)
{
	struct zt_guard g;
	int rc;

	zt_guard_init(&g, n + 1);
	memset(f, ZT_JUNK, sizeof(*f));
	rc = zr_zmtp_dec_feed(d, zt_guard_place(&g, in, n), n, consumed, f);
	zt_guard_fini(&g);
	return rc;
}

static void
dec_fresh(struct zr_zmtp_dec *d, uint64_t max_msg, uint32_t max_cmd)
{
	memset(d, ZT_JUNK, sizeof(*d));
	zr_zmtp_dec_init(d, max_msg, max_cmd);
}

Test(zmtp_frame, treats_zero_length_input_as_a_no_op)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used = 99;

	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(dec_once(&d, "", 0, &used, &f), ZR_NEED_MORE);
	cr_assert_eq(used, 0);
}

Test(zmtp_frame, hands_out_a_2_pow_32_body_in_pieces_with_offsets)
{
	static const uint8_t hdr[] = {0x02, 0, 0, 0, 1, 0, 0, 0, 0};
	uint8_t in[9 + 16];
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, (uint64_t)1 << 33, DEF_CMD);
	memcpy(in, hdr, 9);
	memset(in + 9, 'x', 16);
	cr_assert_eq(dec_once(&d, in, sizeof(in), &used, &f), ZR_OK);
	cr_assert_eq(used, 25);
	cr_assert_eq(f.size, (uint64_t)1 << 32);
	cr_assert_eq(f.offset, 0);
	cr_assert_eq(f.len, 16);
	cr_assert_eq(f.flags, 0);
	cr_assert_eq(dec_once(&d, in + 9, 16, &used, &f), ZR_OK);
	cr_assert_eq(used, 16);
	cr_assert_eq(f.offset, 16);
	cr_assert_eq(f.len, 16);
	cr_assert_eq(f.flags & ZR_ZMTP_FRAME_END, 0);
}

/* Streams a whole body of size octets through one reusable 1 MiB buffer (the
 * decoder never copies, so this costs size / 1 MiB calls) and checks every
 * piece; then checks that the next header is read. */
static void
stream_body(uint64_t size)
{
	size_t chunk = 1u << 20;
	struct zt_guard g;
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	uint8_t hdr[9] = {0x02};
	uint64_t off = 0;
	size_t used;
	uint8_t *buf;

	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)(size >> (56 - 8 * i));
	dec_fresh(&d, UINT64_MAX, DEF_CMD);
	cr_assert_eq(dec_once(&d, hdr, 9, &used, &f), ZR_NEED_MORE);
	cr_assert_eq(used, 9);
	zt_guard_init(&g, chunk);
	buf = zt_guard_place(&g, "", 0) - chunk;
	memset(buf, 'x', chunk);
	while (off < size) {
		uint64_t left = size - off;
		size_t want_len = left < chunk ? (size_t)left : chunk;

		memset(&f, ZT_JUNK, sizeof(f));
		cr_assert_eq(zr_zmtp_dec_feed(&d, buf, chunk, &used, &f), ZR_OK);
		cr_assert_eq(used, want_len);
		cr_assert_eq(f.data, buf);
		cr_assert_eq(f.len, want_len);
		cr_assert_eq(f.offset, off, "offset %" PRIu64 ", want %" PRIu64, f.offset, off);
		cr_assert_eq(f.size, size);
		cr_assert_eq(f.flags, left <= chunk ? ZR_ZMTP_FRAME_END : 0u, "at offset %" PRIu64, off);
		off += want_len;
	}
	zt_guard_fini(&g);
	cr_assert_eq(dec_once(&d, "\x00\x01" "z", 3, &used, &f), ZR_OK);
	cr_assert_eq(f.size, 1);
	cr_assert_eq(f.len, 1);
	cr_assert_eq(f.flags, ZR_ZMTP_FRAME_END);
}

Test(zmtp_frame, streams_a_2_pow_32_body_and_ends_it_exactly)
{
	stream_body((uint64_t)1 << 32);
}

Test(zmtp_frame, streams_a_2_pow_32_plus_1_body_and_ends_it_exactly)
{
	stream_body(((uint64_t)1 << 32) + 1);
}

Test(zmtp_frame, streams_a_2_pow_32_minus_1_body_and_ends_it_exactly)
{
	stream_body(((uint64_t)1 << 32) - 1);
}

Test(zmtp_frame, accepts_2_pow_32_plus_1_only_under_a_limit_that_allows_it)
{
	static const uint8_t hdr[] = {0x02, 0, 0, 0, 1, 0, 0, 0, 1};
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, ((uint64_t)1 << 32), DEF_CMD);
	cr_assert_eq(dec_once(&d, hdr, 9, &used, &f), -ZR_ETOOLARGE);
	dec_fresh(&d, ((uint64_t)1 << 32) + 1, DEF_CMD);
	cr_assert_eq(dec_once(&d, hdr, 9, &used, &f), ZR_NEED_MORE);
	cr_assert_eq(used, 9);
}

Test(zmtp_frame, accepts_the_largest_legal_long_size)
{
	static const uint8_t hdr[] = {0x02, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a'};
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, UINT64_MAX, DEF_CMD);
	cr_assert_eq(dec_once(&d, hdr, sizeof(hdr), &used, &f), ZR_OK);
	cr_assert_eq(f.size, (uint64_t)INT64_MAX);
	cr_assert_eq(f.len, 1);
}

Test(zmtp_frame, refuses_an_oversized_frame_before_any_body_octet)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used = 99;

	dec_fresh(&d, 1000, DEF_CMD);
	/* 1001 declared; only the header is there. */
	cr_assert_eq(dec_once(&d, "\x02" "\0\0\0\0\0\0\x03\xe9", 9, &used, &f), -ZR_ETOOLARGE);
	cr_assert_eq(used, 0);
	cr_assert_eq(dec_once(&d, "\x00\x00", 2, &used, &f), -ZR_ETOOLARGE, "error is sticky");
}

Test(zmtp_frame, refuses_a_top_bit_size_from_its_first_size_octet)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, UINT64_MAX, DEF_CMD);
	cr_assert_eq(dec_once(&d, "\x02" "\x80", 2, &used, &f), -ZR_EFRAMESIZE);
}

Test(zmtp_frame, rejects_reserved_flag_bits_from_the_flags_octet_alone)
{
	for (unsigned bit = 3; bit <= 7; bit++) {
		struct zr_zmtp_dec d;
		struct zr_zmtp_frame f;
		uint8_t flags = (uint8_t)(1u << bit);
		size_t used;

		dec_fresh(&d, DEF_MSG, DEF_CMD);
		cr_assert_eq(dec_once(&d, &flags, 1, &used, &f), -ZR_EFLAGS, "bit %u", bit);
		cr_assert_eq(dec_once(&d, "\x00\x00", 2, &used, &f), -ZR_EFLAGS, "bit %u sticky", bit);
	}
}

Test(zmtp_frame, raises_the_command_limit_when_told)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, DEF_MSG, 4);
	zr_zmtp_dec_set_cmd_limit(&d, 5);
	cr_assert_eq(dec_once(&d, "\x04\x05" "\x04" "PONG", 7, &used, &f), ZR_OK);
	cr_assert_eq(used, 7);
	zr_zmtp_dec_set_cmd_limit(&d, 4);
	cr_assert_eq(dec_once(&d, "\x04\x05" "\x04" "PONG", 7, &used, &f), -ZR_ECMDSIZE);
}

/* Direct placement: once a body's first piece is out, the rest can be put
 * in place by the caller; the pieces it reports continue the offsets, the
 * last ends the frame, and the next header decodes as usual. */
Test(zmtp_frame, takes_the_rest_of_a_body_placed_by_the_caller)
{
	static const uint8_t in[] = {0x01, 10, 'a', 'b', 'c', 'd'};
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(zr_zmtp_dec_body_left(&d), 0, "no body begun");
	cr_assert_eq(dec_once(&d, in, 2, &used, &f), ZR_NEED_MORE);
	cr_assert_eq(used, 2);
	cr_assert_eq(zr_zmtp_dec_body_left(&d), 0, "a header alone: no piece handed out yet");
	cr_assert_eq(zr_zmtp_dec_placed(&d, 1, &f), -EINVAL);
	cr_assert_eq(dec_once(&d, in + 2, 4, &used, &f), ZR_OK);
	cr_assert_eq(f.len, 4);
	cr_assert_eq(zr_zmtp_dec_body_left(&d), 6);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 0, &f), -EINVAL);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 7, &f), -EINVAL, "more than is left");
	cr_assert_eq(zr_zmtp_dec_body_left(&d), 6, "a refused call changes nothing");
	memset(&f, ZT_JUNK, sizeof(f));
	cr_assert_eq(zr_zmtp_dec_placed(&d, 5, &f), ZR_OK);
	cr_assert_null(f.data);
	cr_assert_eq(f.len, 5);
	cr_assert_eq(f.offset, 4);
	cr_assert_eq(f.size, 10);
	cr_assert_eq(f.flags, MORE);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 1, &f), ZR_OK);
	cr_assert_eq(f.offset, 9);
	cr_assert_eq(f.flags, MORE | ZR_ZMTP_FRAME_END);
	cr_assert_eq(zr_zmtp_dec_body_left(&d), 0);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 1, &f), -EINVAL, "no body open");
	/* The message goes on: a command here is still refused (inside a message). */
	cr_assert_eq(dec_once(&d, "\x04\x00", 2, &used, &f), -ZR_ECMDINMSG);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 1, &f), -ZR_ECMDINMSG, "the error is sticky");
	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(dec_once(&d, in, sizeof(in), &used, &f), ZR_OK);
	cr_assert_eq(zr_zmtp_dec_placed(&d, 6, &f), ZR_OK);
	cr_assert_eq(dec_once(&d, "\x00\x01" "z", 3, &used, &f), ZR_OK);
	cr_assert_eq(f.offset, 0);
	cr_assert_eq(f.len, 1);
	cr_assert_eq(f.flags, ZR_ZMTP_FRAME_END);
}

Test(zmtp_frame, says_how_many_octets_it_wants)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t used;

	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"", 0), 1);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"\x00", 1), 2);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"\x02", 1), 9);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"\x04", 1), 2);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"\x04\x05", 2), 7);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"\x06" "\0\0\0\0\0\0\x01\x00", 9), 9 + 256);
	cr_assert_eq(dec_once(&d, "\x00\x05" "ab", 4, &used, &f), ZR_OK);
	cr_assert_eq(zr_zmtp_dec_want(&d, (const uint8_t *)"", 0), 1, "inside a body");
}

/* ---------------------------------------------------------------- */
/* Header encoder. */

static void
check_header(uint64_t size, unsigned flags, struct zt_bytes want, int line)
{
	uint8_t out[ZR_ZMTP_HEADER_MAX];
	int rc;

	memset(out, ZT_JUNK, sizeof(out));
	rc = zr_zmtp_frame_header(out, size, flags);
	cr_assert_eq(rc, (int)want.n, "line %d: header length %d, want %zu", line, rc, want.n);
	zt_assert_bytes("frame header", out, (size_t)rc, want.p, want.n, line);
}

Test(zmtp_frame, encodes_short_headers_up_to_255)
{
	check_header(0, 0, ZT_LIT("\x00\x00"), __LINE__);
	check_header(1, ZR_ZMTP_MORE, ZT_LIT("\x01\x01"), __LINE__);
	check_header(255, 0, ZT_LIT("\x00\xff"), __LINE__);
	check_header(255, ZR_ZMTP_COMMAND, ZT_LIT("\x04\xff"), __LINE__);
}

Test(zmtp_frame, encodes_long_headers_from_256)
{
	check_header(256, 0, ZT_LIT("\x02" "\0\0\0\0\0\0\x01\x00"), __LINE__);
	check_header(256, ZR_ZMTP_MORE, ZT_LIT("\x03" "\0\0\0\0\0\0\x01\x00"), __LINE__);
	check_header(256, ZR_ZMTP_COMMAND, ZT_LIT("\x06" "\0\0\0\0\0\0\x01\x00"), __LINE__);
	check_header((uint64_t)1 << 32, 0, ZT_LIT("\x02" "\0\0\0\x01\0\0\0\0"), __LINE__);
	check_header(((uint64_t)1 << 32) + 1, 0, ZT_LIT("\x02" "\0\0\0\x01\0\0\0\x01"), __LINE__);
	check_header((uint64_t)INT64_MAX, 0, ZT_LIT("\x02" "\x7f\xff\xff\xff\xff\xff\xff\xff"), __LINE__);
}

/* The inline short form writes exactly what the general encoder writes, for
 * every size it takes, with MORE and without. */
Test(zmtp_frame, short_header_matches_the_encoder_at_every_size)
{
	for (unsigned size = 0; size <= ZR_ZMTP_SHORT_MAX; size++) {
		for (unsigned more = 0; more <= ZR_ZMTP_MORE; more += ZR_ZMTP_MORE) {
			uint8_t want[ZR_ZMTP_HEADER_MAX], got[ZR_ZMTP_HEADER_MAX];

			memset(got, ZT_JUNK, sizeof got);
			cr_assert_eq(zr_zmtp_frame_header(want, size, more), 2);
			zr_zmtp_short_header(got, (uint8_t)size, more);
			cr_assert(memcmp(got, want, 2) == 0, "size %u more %u: %02x %02x, want %02x %02x",
			          size, more, got[0], got[1], want[0], want[1]);
			cr_assert_eq(got[2], ZT_JUNK, "size %u: wrote past the 2 octets", size);
		}
	}
}

Test(zmtp_frame, refuses_to_encode_bad_flags_or_sizes)
{
	uint8_t out[ZR_ZMTP_HEADER_MAX];

	cr_assert_eq(zr_zmtp_frame_header(out, 1, ZR_ZMTP_MORE | ZR_ZMTP_COMMAND), -EINVAL);
	cr_assert_eq(zr_zmtp_frame_header(out, 1, ZR_ZMTP_LONG), -EINVAL);
	cr_assert_eq(zr_zmtp_frame_header(out, 1, 0x08), -EINVAL);
	cr_assert_eq(zr_zmtp_frame_header(out, 1, ZR_ZMTP_FRAME_END), -EINVAL);
	cr_assert_eq(zr_zmtp_frame_header(out, (uint64_t)INT64_MAX + 1, 0), -EINVAL);
}

/* ---------------------------------------------------------------- */
/* The frames-per-message limit: MAXMSGSIZE counts only bodies, so empty
 * frames would pass it for ever. */

struct frames_row {
	const char *name;
	int line;
	uint32_t max_frames;
	struct seg in[MAX_SEGS];
	int rc;
	size_t nout; /* frames delivered (all of them, or before the error) */
};

static const struct frames_row frames_rows[] = {
	{"message of exactly max_msg_frames empty frames", __LINE__, 3, {L("\x01\x00" "\x01\x00" "\x00\x00")},
	 ZR_NEED_MORE, 3},
	{"one frame is always a message", __LINE__, 1, {L("\x00\x01" "a" "\x00\x00" "\x00\x01" "b")}, ZR_NEED_MORE,
	 3},
	{"the frame limit is per message", __LINE__, 2,
	 {L("\x01\x01" "a" "\x00\x01" "b" "\x01\x01" "c" "\x00\x01" "d")}, ZR_NEED_MORE, 4},
	{"commands between messages do not count", __LINE__, 2,
	 {L("\x04\x05" "\x04" "PONG" "\x01\x01" "a" "\x00\x01" "b" "\x04\x05" "\x04" "PONG" "\x01\x00" "\x00\x00")},
	 ZR_NEED_MORE, 4},
	{"one empty MORE frame over max_msg_frames", __LINE__, 3,
	 {L("\x01\x00" "\x01\x00" "\x01\x00" "\x01\x00")}, -ZR_ETOOMANYFRAMES, 3},
	{"a last frame over max_msg_frames", __LINE__, 3, {L("\x01\x00" "\x01\x00" "\x01\x00" "\x00\x00")},
	 -ZR_ETOOMANYFRAMES, 3},
	{"long-form empty frames count too", __LINE__, 2, {L("\x03" Z8 "\x01\x00" "\x02" Z8)}, -ZR_ETOOMANYFRAMES,
	 2},
	{"refused on the header, before its body", __LINE__, 1, {L("\x01\x01" "a" "\x00\x05" "abcde")},
	 -ZR_ETOOMANYFRAMES, 1},
	{"a second frame over max_msg_frames 1 after a good message", __LINE__, 1,
	 {L("\x00\x01" "a" "\x01\x01" "b" "\x00\x01" "c")}, -ZR_ETOOMANYFRAMES, 2},
};

ParameterizedTestParameters(zmtp_frame, counts_frames_per_message_under_every_chunking)
{
	ROW_PARAMS(frames_rows);
}

ParameterizedTest(int *i, zmtp_frame, counts_frames_per_message_under_every_chunking)
{
	const struct frames_row *row = &frames_rows[*i];
	struct zt_target t = zt_dec_target(DEF_MSG, DEF_CMD);
	struct zt_run whole;
	size_t n, frames = 0;
	uint8_t *in = row_build(row->in, MAX_SEGS, &n);

	cr_log_info("vector %s (line %d)", row->name, row->line);
	t.max_msg_frames = row->max_frames;
	zt_check_splits(&t, in, n, row->line, &whole);
	cr_assert_eq(whole.rc, row->rc, "line %d (%s): result %d (%s), want %d (%s)", row->line,
	             row->name, whole.rc, zr_strerror(whole.rc), row->rc, zr_strerror(row->rc));
	for (size_t k = 0; k < whole.nev; k++) {
		cr_assert(whole.ev[k].complete, "line %d: frame %zu incomplete", row->line, k);
		if (!(whole.ev[k].flags & CMD))
			frames++;
	}
	cr_assert_eq(frames, row->nout, "line %d (%s): %zu frames, want %zu", row->line, row->name,
	             frames, row->nout);
	if (row->rc < 0)
		cr_assert_eq(whole.sticky_rc, row->rc, "line %d: not sticky", row->line);
	zt_run_free(&whole);
	free(in);
}

/* Feeds count empty frames (all MORE but the last if last) in one buffer;
 * returns the result of the call that stopped and the frames taken. */
static int
feed_empty_frames(struct zr_zmtp_dec *d, size_t count, bool last, size_t *taken)
{
	size_t n = 2 * count, off = 0, used;
	uint8_t *in = malloc(n);
	struct zr_zmtp_frame f;
	int rc = ZR_NEED_MORE;

	cr_assert_not_null(in);
	for (size_t k = 0; k < count; k++) {
		in[2 * k] = (last && k + 1 == count) ? 0x00 : 0x01;
		in[2 * k + 1] = 0x00;
	}
	*taken = 0;
	while (off < n) {
		rc = zr_zmtp_dec_feed(d, in + off, n - off, &used, &f);
		if (rc != ZR_OK)
			break;
		off += used;
		(*taken)++;
	}
	if (rc == ZR_OK) /* all taken: what the decoder says with nothing left */
		rc = zr_zmtp_dec_feed(d, in + off, 0, &used, &f);
	free(in);
	return rc;
}

Test(zmtp_frame, default_frame_limit_takes_65536_frames_and_refuses_one_more)
{
	struct zr_zmtp_dec d;
	size_t taken;

	cr_assert_eq(ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES, 65536u);
	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(feed_empty_frames(&d, 65536, true, &taken), ZR_NEED_MORE);
	cr_assert_eq(taken, 65536);
	dec_fresh(&d, DEF_MSG, DEF_CMD);
	cr_assert_eq(feed_empty_frames(&d, 65537, false, &taken), -ZR_ETOOMANYFRAMES);
	cr_assert_eq(taken, 65536, "every frame up to the limit came out");
}

Test(zmtp_frame, frame_limit_zero_means_the_default)
{
	struct zr_zmtp_dec d;
	size_t taken;

	dec_fresh(&d, DEF_MSG, DEF_CMD);
	zr_zmtp_dec_set_frame_limit(&d, 0);
	cr_assert_eq(feed_empty_frames(&d, 65537, false, &taken), -ZR_ETOOMANYFRAMES);
	cr_assert_eq(taken, 65536);
	dec_fresh(&d, DEF_MSG, DEF_CMD);
	zr_zmtp_dec_set_frame_limit(&d, 65537);
	cr_assert_eq(feed_empty_frames(&d, 65537, false, &taken), ZR_NEED_MORE);
	cr_assert_eq(taken, 65537, "a raised limit lets more through");
}
/* clang-format on */
