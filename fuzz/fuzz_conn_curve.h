/*
 * The connection codec (zmtp/conn.c) under CURVE, fed a peer's stream that
 * a real CURVE codec of the other role encrypts: fuzz_conn_curve_server.c
 * (the codec under test is the server, the peer a client) and
 * fuzz_conn_curve_client.c (the other way round).
 *
 * Per input, a real client codec and a reference server (fixed long-term
 * keys, fixed stateless randomness: a fresh codec of a role draws the same
 * octets every time) complete the handshake, so the peer ends in traffic
 * holding keys that match what a fresh codec under test derives from the
 * same commands. The stream the codec under test gets starts with the
 * peer's honest greeting and two handshake commands (HELLO and INITIATE, or
 * WELCOME and READY), or a part of them, as the input says; the input then
 * steers the peer to encrypt frames, commands and MESSAGEs with any inner
 * flags octet, to inject plaintext, to flip octets in, replay or re-flag
 * what it wrote, to skip nonces, and to move the clock (an INITIATE may come
 * after the 60 s cookie lifetime). So inputs reach the last handshake
 * command, the authenticator and MESSAGE traffic, not only the first box.
 *
 * Input layout (missing octets read as 0):
 *   byte 0  bits 0-1 client/server types (PUSH/PULL, SUB/XPUB, DEALER/ROUTER,
 *           REQ/REP); bit 2 max_msg_size 64 for the codec under test (else
 *           the default); bit 3 it sends PING every 1 s; bits 4-5 the honest
 *           prefix: 0 greeting + both handshake commands, 1 greeting + the
 *           first, 2 greeting, 3 nothing; bit 6 the client sends an
 *           Identity; bit 7 the server's authenticator refuses (400): the
 *           server under test's, or the reference server's, which then
 *           answers the client with ERROR instead of READY
 *   byte 1  bits 0-4 delay of the second handshake command: index into
 *           fcs_dt; bits 5-7 max_msg_frames of the codec under test
 *           (fz_frame_limits: half the default, half 1, 2, 3 or 8)
 *   byte 2  seed of the chunk sizes; bit 7 also: the server's authenticator
 *           answers later (ZR_ZMTP_AUTH_PENDING; the INITIATE stays parked
 *           until zr_zmtp_auth_reply, given as soon as the feed parks)
 *   then operations, op = one octet, kind = op & 7, arg = op >> 3:
 *     0 frame: len (1 octet, 2 if arg bit 0), data; MORE if arg bit 1
 *     1 MESSAGE with the inner flags octet given next, then len, data
 *     2 a command inside a MESSAGE (SUBSCRIBE, CANCEL, PING, PONG, ERROR,
 *       READY, JOIN, PING with a context: arg % 8), then len, payload
 *     3 plaintext injected: len, bytes
 *     4 xor the octet at (u16 % length) of the last unit with the next octet
 *     5 the unit arg % 4 back written again (a replay)
 *     6 arg < 16: the peer encodes a frame that is never sent (a nonce gap);
 *       else the last unit's flags octet becomes arg & 7 (LONG kept)
 *     7 a new segment: the clock moves by fcs_dt[arg], then the codec ticks
 *       and its output is taken
 *   (The peer encrypts nothing when it is not in traffic: refused.)
 *
 * Checks. The stream is fed twice, whole per segment and in pieces (sizes
 * from the seed, the unconsumed rest presented again), into fresh codecs:
 * the two logs (events with their bytes, errors, tick results, output) must
 * be identical. On every call: consumed <= len; event spans inside the
 * consumed bytes (the buffer is a heap block of exactly its length, ASan sees
 * an over-read); a frame comes out whole (CURVE), within max_msg_size, no
 * message longer than max_msg_frames (refused for it at exactly that many);
 * errors are sticky, are protocol codes, and leave no key behind.
 * Soundness: every event after READY is the plaintext of a unit the peer
 * encrypted, in the order it encrypted them (no tampered, replayed or
 * injected byte gets through a box); READY carries exactly the peer's
 * metadata and comes only after the whole honest handshake (for a server:
 * within the cookie's lifetime, and accepted by its authenticator, whose
 * refusal gives -ZR_EAUTH). The output: our greeting; our handshake commands
 * byte-equal to the reference codec's; a plaintext ERROR only from a server,
 * only before READY, last; after READY only MESSAGE data frames, which the
 * peer opens without an event or an error.
 */
#ifndef ZR_FUZZ_FUZZ_CONN_CURVE_H
#define ZR_FUZZ_FUZZ_CONN_CURVE_H

#include <errno.h>

#include <sodium.h>
#include <zring/zmtp.h>

#include "../zmtp/curve.h"
#include "fuzz_common.h"

#define FCS_MAX_SEGS 64
#define FCS_MAX_UNITS 256
#define FCS_NOW0 1000u

struct fcs_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t
fcs_byte(struct fcs_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static size_t
fcs_u16(struct fcs_in *in)
{
	size_t hi = fcs_byte(in);

	return hi << 8 | fcs_byte(in);
}

/* Copies n octets of input into out, zeros where the input ran out. */
static void
fcs_bytes(struct fcs_in *in, uint8_t *out, size_t n)
{
	size_t k = n < in->n ? n : in->n;

	if (k > 0)
		memcpy(out, in->p, k);
	if (n > k)
		memset(out + k, 0, n - k);
	in->p += k;
	in->n -= k;
}

static const uint64_t fcs_dt[32] = {
	0,     0,     0,     0,     0,     0,      0,    0,    1,    10,    99,
	100,   500,   999,   1000,  1001,  1999,   2000, 4999, 5000, 10000, 29999,
	30000, 59999, 60000, 60001, 61000, 100000, 0,    0,    0,    0,
};

static const int fcs_types[4][2] = {
	{ZR_PUSH, ZR_PULL},
	{ZR_SUB, ZR_XPUB},
	{ZR_DEALER, ZR_ROUTER},
	{ZR_REQ, ZR_REP},
};

/* Stateless fixed randomness: the octets depend on the tag and the length
 * only, so every fresh codec of a role draws the same ones. */
static void
fcs_random(void *arg, uint8_t *buf, size_t len)
{
	const uint8_t *tag = arg;
	uint8_t seed[randombytes_SEEDBYTES];

	memset(seed, *tag, sizeof seed);
	seed[0] = (uint8_t)len;
	seed[1] = (uint8_t)(len >> 8);
	randombytes_buf_deterministic(buf, len, seed);
}

static const uint8_t fcs_tag_client = 0xa1, fcs_tag_server = 0xb2;

struct fcs_auth {
	int status;
	bool defer, pending;
	unsigned calls;
	bool key_ok;
	const uint8_t *client_pk;
};

static int
fcs_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct fcs_auth *a = arg;

	a->calls++;
	FZ_CHECK(req->mechanism == ZR_MECH_CURVE);
	FZ_CHECK(req->client_key != NULL);
	a->key_ok = memcmp(req->client_key, a->client_pk, ZR_CURVE_KEY_LEN) == 0;
	if (a->defer) {
		FZ_CHECK(!a->pending);
		a->pending = true;
		return ZR_ZMTP_AUTH_PENDING;
	}
	return a->status;
}

/* ------------------------------------------------------------------------ */
/* The plan: what the peer writes, in segments, and what it meant. */

struct fcs_seg {
	struct fz_log bytes;
	uint64_t now;
};

struct fcs_unit {
	size_t seg, off, len;
};

struct fcs_exp {
	uint8_t flags; /* the inner flags octet */
	uint8_t *data;
	size_t len;
};

struct fcs_plan {
	bool server; /* the codec under test is the server */
	uint8_t client_pk[32], client_sk[32], server_pk[32], server_sk[32];
	struct zr_zmtp_config ccfg, scfg;
	struct zr_zmtp *peer;         /* the other role, in traffic after the reference handshake */
	bool peer_in_traffic;         /* not when the reference server refused the client */
	struct fz_log c_sent, s_sent; /* the reference transcripts */
	struct fz_log ready_meta;     /* what the codec under test's READY must carry */
	size_t c_hs[3], s_hs[3];      /* unit ends: greeting, HELLO/WELCOME, INITIATE/READY */
	struct fcs_seg seg[FCS_MAX_SEGS];
	size_t nseg;
	struct fcs_unit unit[FCS_MAX_UNITS];
	size_t nunit;
	struct fcs_exp *exp;
	size_t nexp;
	bool honest_initiate; /* the peer's whole honest handshake is in the stream */
	bool initiate_in_time;
	bool refuse;
	bool defer_auth; /* the authenticator answers later */
};

/* Moves what `from` wants written into to_in (and its transcript). */
static size_t
fcs_flush(struct zr_zmtp *from, struct fz_buf *to_in, struct fz_log *sent)
{
	size_t total = 0;

	for (int i = 0; i < 8; i++) {
		const uint8_t *d;
		size_t n = zr_zmtp_out(from, &d);

		if (n == 0)
			break;
		fz_buf_append(to_in, d, n);
		fz_log_bytes(sent, d, n);
		zr_zmtp_out_ack(from, n);
		total += n;
	}
	return total;
}

/* Feeds a reference codec; records a READY event's metadata if asked. */
static void
fcs_feed_ref(struct zr_zmtp *z, struct fz_buf *in, struct fz_log *ready_meta)
{
	for (;;) {
		struct zr_zmtp_event ev;
		size_t used = 0;
		int rc = zr_zmtp_feed(z, in->p, in->len, &used, &ev, FCS_NOW0);

		/* The reference handshake is honest; only a refusal ends it. */
		if (rc < 0) {
			FZ_CHECK(rc == -ZR_EAUTH || rc == -ZR_EPEERERROR);
			fz_buf_drop(in, in->len);
			return;
		}
		if (rc == ZR_OK && ev.type == ZR_ZMTP_EV_READY && ready_meta != NULL)
			fz_log_bytes(ready_meta, ev.data, ev.len);
		fz_buf_drop(in, used);
		if (rc == ZR_NEED_MORE)
			return;
	}
}

static void
fcs_frame_ends(const uint8_t *p, size_t n, size_t ends[3])
{
	size_t off = ZR_ZMTP_GREETING_SIZE;

	FZ_CHECK(n >= off);
	ends[0] = off;
	for (int k = 1; k < 3; k++) {
		size_t h = (p[off] & ZR_ZMTP_LONG) ? 9 : 2;
		uint64_t body = h == 9 ? fz_get64(p + off + 1) : p[off + 1];

		off += h + (size_t)body;
		FZ_CHECK(off <= n);
		ends[k] = off;
	}
	FZ_CHECK(ends[2] == n);
}

static int
fcs_refuse_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	(void)req;
	return 400;
}

/* The reference handshake between a real client and a reference server.
 * For a server under test the reference server accepts (the client must
 * reach traffic); for a client under test it refuses when the input says. */
static void
fcs_handshake(struct fcs_plan *pl)
{
	struct zr_zmtp_config ref = pl->scfg;
	struct zr_zmtp *c = fz_alloc(sizeof *c), *s = fz_alloc(sizeof *s);
	struct fz_buf cin, sin;

	ref.auth = !pl->server && pl->refuse ? fcs_refuse_cb : NULL;
	FZ_CHECK(zr_zmtp_init(c, &pl->ccfg, FCS_NOW0) == 0);
	FZ_CHECK(zr_zmtp_init(s, &ref, FCS_NOW0) == 0);
	fz_buf_init(&cin);
	fz_buf_init(&sin);
	for (int i = 0; i < 8; i++) {
		size_t moved = fcs_flush(c, &sin, &pl->c_sent) + fcs_flush(s, &cin, &pl->s_sent);

		fcs_feed_ref(c, &cin, pl->server ? NULL : &pl->ready_meta);
		fcs_feed_ref(s, &sin, pl->server ? &pl->ready_meta : NULL);
		if (moved == 0)
			break;
	}
	pl->peer_in_traffic = pl->server || !pl->refuse;
	FZ_CHECK((zr_zmtp_state(c) == ZR_ZMTP_TRAFFIC) == pl->peer_in_traffic);
	FZ_CHECK((zr_zmtp_state(s) == ZR_ZMTP_TRAFFIC) == pl->peer_in_traffic);
	fcs_frame_ends(pl->c_sent.p, pl->c_sent.len, pl->c_hs);
	fcs_frame_ends(pl->s_sent.p, pl->s_sent.len, pl->s_hs);
	pl->peer = pl->server ? c : s;
	zr_zmtp_fini(pl->server ? s : c);
	free(pl->server ? s : c);
	fz_buf_free(&cin);
	fz_buf_free(&sin);
}

static struct fcs_seg *
fcs_cur(struct fcs_plan *pl)
{
	return &pl->seg[pl->nseg - 1];
}

static void
fcs_new_seg(struct fcs_plan *pl, uint64_t now)
{
	if (pl->nseg == FCS_MAX_SEGS)
		return; /* the rest goes into the last segment */
	memset(&pl->seg[pl->nseg], 0, sizeof pl->seg[0]);
	pl->seg[pl->nseg].now = now;
	pl->nseg++;
}

/* Appends one wire unit to the current segment. */
static void
fcs_unit_add(struct fcs_plan *pl, const uint8_t *p, size_t n)
{
	struct fcs_seg *s = fcs_cur(pl);

	if (pl->nunit < FCS_MAX_UNITS) {
		pl->unit[pl->nunit] = (struct fcs_unit){pl->nseg - 1, s->bytes.len, n};
		pl->nunit++;
	}
	fz_log_bytes(&s->bytes, p, n);
}

static void
fcs_exp_add(struct fcs_plan *pl, uint8_t flags, const uint8_t *data, size_t len)
{
	struct fcs_exp *e;

	pl->exp = realloc(pl->exp, (pl->nexp + 1) * sizeof *pl->exp);
	FZ_CHECK(pl->exp != NULL);
	e = &pl->exp[pl->nexp++];
	e->flags = flags;
	e->len = len;
	e->data = fz_alloc(len);
	if (len > 0)
		memcpy(e->data, data, len);
}

/* The peer encrypts one frame (zr_zmtp_encode_frame) or one MESSAGE with
 * any flags octet (the core under it); send: whether it goes on the wire. */
static void
fcs_encrypt(struct fcs_plan *pl, bool raw, uint8_t flags, const uint8_t *data, size_t len,
            bool send)
{
	size_t need = 9 + ZR__CURVE_MESSAGE_MIN + len;
	uint8_t *w;
	int n;

	if (!pl->peer_in_traffic)
		return;
	w = fz_alloc(need);
	if (raw) {
		struct zr__curve *c = (struct zr__curve *)(void *)pl->peer->mech.bytes;
		int h = zr_zmtp_frame_header(w, ZR__CURVE_MESSAGE_MIN + len, 0);

		n = zr__curve_encode_message(c, flags, data, len, w + h, need - (size_t)h);
		FZ_CHECK(n == (int)(ZR__CURVE_MESSAGE_MIN + len));
		n += h;
	} else {
		unsigned f = (flags & 1 ? ZR_ZMTP_MORE : 0) | (flags & 2 ? ZR_ZMTP_COMMAND : 0);

		FZ_CHECK(zr_zmtp_frame_wire_size(pl->peer, len) <= need);
		n = zr_zmtp_encode_frame(pl->peer, f, data, len, w, need);
		FZ_CHECK(n == (int)zr_zmtp_frame_wire_size(pl->peer, len));
		/* libzmq's form: a data frame, MORE and COMMAND inside the box. */
		FZ_CHECK((w[0] & ~ZR_ZMTP_LONG) == 0);
	}
	if (send) {
		fcs_unit_add(pl, w, (size_t)n);
		fcs_exp_add(pl, flags, data, len);
	}
	free(w);
}

static const struct {
	const char *name;
	uint8_t len;
} fcs_cmds[8] = {
	{"SUBSCRIBE", 9}, {"CANCEL", 6}, {"PING", 4}, {"PONG", 4},
	{"ERROR", 5},     {"READY", 5},  {"JOIN", 4}, {"PING", 4},
};

static void
fcs_plan_build(struct fcs_plan *pl, const uint8_t *data, size_t size, bool server)
{
	struct fcs_in in = {data, size};
	uint8_t b0 = fcs_byte(&in), delay = fcs_byte(&in), *buf = fz_alloc(65536 + 512);
	const uint8_t *c = NULL;
	const size_t *hs;
	int prefix = b0 >> 4 & 3;
	uint8_t seed[crypto_box_SEEDBYTES];

	(void)fcs_byte(&in); /* the chunk seed, read by the runner */
	pl->server = server;
	memset(seed, 0xc1, sizeof seed);
	crypto_box_seed_keypair(pl->client_pk, pl->client_sk, seed);
	memset(seed, 0x5e, sizeof seed);
	crypto_box_seed_keypair(pl->server_pk, pl->server_sk, seed);

	zr_zmtp_config_default(&pl->ccfg, fcs_types[b0 & 3][0]);
	pl->ccfg.mechanism = ZR_MECH_CURVE;
	pl->ccfg.curve_public_key = pl->client_pk;
	pl->ccfg.curve_secret_key = pl->client_sk;
	pl->ccfg.curve_server_key = pl->server_pk;
	pl->ccfg.random = fcs_random;
	pl->ccfg.random_arg = (void *)(uintptr_t)&fcs_tag_client;
	if (b0 & 0x40) {
		pl->ccfg.routing_id = (const uint8_t *)"fuzz-id";
		pl->ccfg.routing_id_len = 7;
	}
	zr_zmtp_config_default(&pl->scfg, fcs_types[b0 & 3][1]);
	pl->scfg.mechanism = ZR_MECH_CURVE;
	pl->scfg.as_server = true;
	pl->scfg.curve_secret_key = pl->server_sk;
	pl->scfg.random = fcs_random;
	pl->scfg.random_arg = (void *)(uintptr_t)&fcs_tag_server;
	pl->scfg.handshake_ivl_ms = 0;
	pl->ccfg.handshake_ivl_ms = 0;
	{
		struct zr_zmtp_config *t = server ? &pl->scfg : &pl->ccfg;

		if (b0 & 0x04)
			t->max_msg_size = 64;
		t->max_msg_frames = fz_frame_limits[delay >> 5];
		if (b0 & 0x08) {
			t->heartbeat_ivl_ms = 1000;
			t->heartbeat_timeout_ms = 3000;
		}
	}
	pl->refuse = (b0 & 0x80) != 0;
	fcs_handshake(pl);

	/* The peer's honest prefix: segment 0 at NOW0, its second handshake
	 * command (INITIATE, READY or the refusal) in segment 1, later. */
	fcs_new_seg(pl, FCS_NOW0);
	c = server ? pl->c_sent.p : pl->s_sent.p;
	hs = server ? pl->c_hs : pl->s_hs;
	if (prefix <= 2)
		fcs_unit_add(pl, c, hs[0]);
	if (prefix <= 1)
		fcs_unit_add(pl, c + hs[0], hs[1] - hs[0]);
	fcs_new_seg(pl, FCS_NOW0 + fcs_dt[delay & 31]);
	if (prefix == 0) {
		fcs_unit_add(pl, c + hs[1], hs[2] - hs[1]);
		pl->honest_initiate = true;
		pl->initiate_in_time = fcs_dt[delay & 31] <= ZR__CURVE_COOKIE_TTL_MS;
	}

	while (in.n > 0) {
		uint8_t op = fcs_byte(&in), kind = op & 7, arg = op >> 3;
		size_t len;

		switch (kind) {
		case 0:
			len = (arg & 1) ? fcs_u16(&in) : fcs_byte(&in);
			fcs_bytes(&in, buf, len);
			fcs_encrypt(pl, false, (arg & 2) ? 1 : 0, buf, len, true);
			break;
		case 1: {
			uint8_t flags = fcs_byte(&in);

			len = fcs_byte(&in);
			fcs_bytes(&in, buf, len);
			fcs_encrypt(pl, true, flags, buf, len, true);
			break;
		}
		case 2: {
			size_t nl = fcs_cmds[arg % 8].len;

			buf[0] = (uint8_t)nl;
			memcpy(buf + 1, fcs_cmds[arg % 8].name, nl);
			len = fcs_byte(&in);
			fcs_bytes(&in, buf + 1 + nl, len);
			fcs_encrypt(pl, false, 2, buf, 1 + nl + len, true);
			break;
		}
		case 3:
			len = fcs_byte(&in);
			fcs_bytes(&in, buf, len);
			fcs_unit_add(pl, buf, len);
			break;
		case 4: {
			size_t at = fcs_u16(&in);
			uint8_t x = fcs_byte(&in);

			if (pl->nunit > 0) {
				struct fcs_unit *u = &pl->unit[pl->nunit - 1];

				if (u->len > 0)
					pl->seg[u->seg].bytes.p[u->off + at % u->len] ^= x;
			}
			break;
		}
		case 5:
			if (pl->nunit > (size_t)(arg % 4)) {
				struct fcs_unit u = pl->unit[pl->nunit - 1 - arg % 4];

				FZ_CHECK(u.len <= 65536 + 512);
				if (u.len > 0) {
					memcpy(buf, pl->seg[u.seg].bytes.p + u.off, u.len);
					fcs_unit_add(pl, buf, u.len);
				}
			}
			break;
		case 6:
			if (arg < 16) {
				fcs_encrypt(pl, false, 0, (const uint8_t *)"gap", 3, false);
			} else if (pl->nunit > 0) {
				struct fcs_unit *u = &pl->unit[pl->nunit - 1];

				if (u->len > 0) {
					uint8_t *f = &pl->seg[u->seg].bytes.p[u->off];

					*f = (uint8_t)((*f & ZR_ZMTP_LONG) | (arg & 7));
				}
			}
			break;
		default:
			fcs_new_seg(pl, fcs_cur(pl)->now + fcs_dt[arg]);
			break;
		}
	}
	free(buf);
}

static void
fcs_plan_free(struct fcs_plan *pl)
{
	for (size_t i = 0; i < pl->nseg; i++)
		fz_log_free(&pl->seg[i].bytes);
	for (size_t i = 0; i < pl->nexp; i++)
		free(pl->exp[i].data);
	free(pl->exp);
	zr_zmtp_fini(pl->peer);
	free(pl->peer);
	fz_log_free(&pl->c_sent);
	fz_log_free(&pl->s_sent);
	fz_log_free(&pl->ready_meta);
}

/* ------------------------------------------------------------------------ */
/* One run of the server under test. */

/* The configuration of the codec under test. */
static const struct zr_zmtp_config *
fcs_tested_cfg(const struct fcs_plan *pl)
{
	return pl->server ? &pl->scfg : &pl->ccfg;
}

struct fcs_run {
	const struct fcs_plan *pl;
	struct zr_zmtp z;
	struct fcs_auth auth;
	bool chunked;
	struct fz_rng rng;
	struct fz_buf in;
	struct fz_log log;
	struct fz_log out;
	bool ready;
	int err;
	uint32_t msg_frames; /* frames of the message so far (MORE frames ended) */
	size_t next_exp;     /* events must match plan->exp from here on */
	uint64_t now;
};

/* The first expected unit at or after r->next_exp that e matches. */
static void
fcs_match(struct fcs_run *r, bool command, uint8_t more, const uint8_t *data, size_t len,
          const char *name, size_t name_len)
{
	const struct fcs_plan *pl = r->pl;

	for (size_t i = r->next_exp; i < pl->nexp; i++) {
		const struct fcs_exp *e = &pl->exp[i];

		if (!command) {
			if ((e->flags & 2) || (e->flags & 1) != more || e->len != len ||
			    (len > 0 && memcmp(e->data, data, len) != 0))
				continue;
		} else {
			/* body = name-length, name, then the value: the topic, or
			 * ERROR's reason behind its own length octet. */
			const uint8_t *v;
			size_t vlen;

			if (!(e->flags & 2) || e->len < 1 + name_len || e->data[0] != name_len ||
			    memcmp(e->data + 1, name, name_len) != 0)
				continue;
			v = e->data + 1 + name_len;
			vlen = e->len - 1 - name_len;
			if (name_len == 5 && memcmp(name, "ERROR", 5) == 0) {
				if (vlen < 1 || v[0] > vlen - 1)
					continue;
				vlen = v[0];
				v++;
			}
			if (vlen != len || (len > 0 && memcmp(v, data, len) != 0))
				continue;
		}
		r->next_exp = i + 1;
		return;
	}
	FZ_CHECK(!"an event the peer never encrypted got through a box");
}

static void
fcs_event(struct fcs_run *r, const struct zr_zmtp_event *ev, size_t consumed)
{
	FZ_CHECK(fz_within(ev->data, ev->len, r->in.p, consumed));
	fz_touch(ev->data, ev->len);
	fz_log_u8(&r->log, (uint8_t)ev->type);
	fz_log_u64(&r->log, ev->len);
	fz_log_bytes(&r->log, ev->data, ev->len);
	switch (ev->type) {
	case ZR_ZMTP_EV_READY:
		FZ_CHECK(!r->ready);
		r->ready = true;
		FZ_CHECK(r->pl->honest_initiate && !r->pl->refuse);
		if (r->pl->server)
			FZ_CHECK(r->pl->initiate_in_time);
		FZ_CHECK(ev->peer_type ==
		         (r->pl->server ? r->pl->ccfg.socket_type : r->pl->scfg.socket_type));
		FZ_CHECK(ev->len == r->pl->ready_meta.len &&
		         memcmp(ev->data, r->pl->ready_meta.p, ev->len) == 0);
		FZ_CHECK(ev->user_id != NULL && ev->user_id[0] == '\0');
		break;
	case ZR_ZMTP_EV_FRAME:
		FZ_CHECK(r->ready);
		FZ_CHECK((ev->flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_FRAME_END)) == 0);
		FZ_CHECK((ev->flags & ZR_ZMTP_FRAME_END) && ev->offset == 0 &&
		         ev->frame_size == ev->len);
		FZ_CHECK(ev->len <= r->pl->scfg.max_msg_size);
		FZ_CHECK(r->msg_frames < fz_frame_limit(fcs_tested_cfg(r->pl)->max_msg_frames));
		r->msg_frames = (ev->flags & ZR_ZMTP_MORE) ? r->msg_frames + 1 : 0;
		fz_log_u8(&r->log, (uint8_t)(ev->flags & ZR_ZMTP_MORE));
		fcs_match(r, false, (ev->flags & ZR_ZMTP_MORE) ? 1 : 0, ev->data, ev->len, NULL, 0);
		break;
	case ZR_ZMTP_EV_SUBSCRIBE:
		FZ_CHECK(r->ready);
		fcs_match(r, true, 0, ev->data, ev->len, "SUBSCRIBE", 9);
		break;
	case ZR_ZMTP_EV_CANCEL:
		FZ_CHECK(r->ready);
		fcs_match(r, true, 0, ev->data, ev->len, "CANCEL", 6);
		break;
	case ZR_ZMTP_EV_PEER_ERROR:
		/* A server reads ERROR only inside a box; a client also in the
		 * handshake (the refusal, or one the input injects). */
		FZ_CHECK(r->ready || !r->pl->server);
		if (r->ready)
			fcs_match(r, true, 0, ev->data, ev->len, "ERROR", 5);
		FZ_CHECK(zr_zmtp_error(&r->z) == -ZR_EPEERERROR);
		break;
	default:
		FZ_CHECK(!"unknown event type");
	}
}

static void
fcs_failed(struct fcs_run *r, int rc)
{
	struct zr_zmtp_event ev;
	size_t used = 0;

	FZ_CHECK(rc <= -ZR_EBASE && rc > -ZR_ELAST);
	FZ_CHECK(r->err == 0);
	r->err = rc;
	fz_log_u8(&r->log, 'E');
	fz_log_int(&r->log, rc);
	FZ_CHECK(zr_zmtp_state(&r->z) == ZR_ZMTP_FAILED && zr_zmtp_error(&r->z) == rc);
	FZ_CHECK(zr_zmtp_feed(&r->z, r->in.p, r->in.len, &used, &ev, r->now) == rc);
	FZ_CHECK(zr_zmtp_tick(&r->z, r->now) == rc);
	if (rc == -ZR_EAUTH)
		FZ_CHECK(r->pl->server && r->pl->refuse && r->auth.calls == 1 && r->auth.key_ok);
	if (rc == -ZR_ETOOMANYFRAMES) /* only at exactly the limit */
		FZ_CHECK(r->ready &&
		         r->msg_frames == fz_frame_limit(fcs_tested_cfg(r->pl)->max_msg_frames));
	if (rc == -ZR_ECURVECOOKIE) /* HELLO came at NOW0 at the earliest */
		FZ_CHECK(r->pl->server && r->now > FCS_NOW0 + ZR__CURVE_COOKIE_TTL_MS);
	/* Every key is gone once the connection failed. */
	for (size_t i = 0; i < sizeof r->z.mech.bytes; i++)
		FZ_CHECK(r->z.mech.bytes[i] == 0);
}

static void
fcs_feed_loop(struct fcs_run *r)
{
	while (r->err == 0) {
		struct zr_zmtp_event ev;
		size_t used = SIZE_MAX;
		int rc;

		memset(&ev, 0xa5, sizeof ev);
		rc = zr_zmtp_feed(&r->z, r->in.p, r->in.len, &used, &ev, r->now);
		if (rc < 0) {
			fz_buf_drop(&r->in, r->in.len);
			fcs_failed(r, rc);
			return;
		}
		FZ_CHECK(used <= r->in.len);
		if (rc == ZR_OK) {
			fcs_event(r, &ev, used);
			if (ev.type == ZR_ZMTP_EV_PEER_ERROR) {
				/* Failed: what is left is never read (and depends on the chunking). */
				fz_buf_drop(&r->in, r->in.len);
				fcs_failed(r, -ZR_EPEERERROR);
				return;
			}
		}
		fz_buf_drop(&r->in, used);
		if (rc == ZR_NEED_MORE && r->auth.pending) {
			/* Parked on INITIATE, which stays in the input: a feed
			 * takes nothing until the answer, which completes it. */
			int arc;

			FZ_CHECK(zr_zmtp_auth_pending(&r->z) && r->in.len > 0);
			FZ_CHECK(zr_zmtp_feed(&r->z, r->in.p, r->in.len, &used, &ev, r->now) ==
			         ZR_NEED_MORE);
			FZ_CHECK(used == 0);
			r->auth.pending = false;
			arc = zr_zmtp_auth_reply(&r->z, r->auth.status, NULL, NULL);
			if (arc < 0) {
				FZ_CHECK(arc == -ZR_EAUTH);
				fz_buf_drop(&r->in, r->in.len);
				fcs_failed(r, arc);
				return;
			}
			continue;
		}
		if (rc == ZR_NEED_MORE) {
			FZ_CHECK(zr_zmtp_want(&r->z, r->in.p, r->in.len) > r->in.len);
			return;
		}
		FZ_CHECK(rc == ZR_OK);
	}
}

static void
fcs_take_out(struct fcs_run *r)
{
	for (int i = 0; i < 8; i++) {
		const uint8_t *d;
		size_t n = zr_zmtp_out(&r->z, &d);

		FZ_CHECK(n <= ZR_ZMTP_OUT_MAX);
		if (n == 0)
			return;
		fz_log_bytes(&r->out, d, n);
		zr_zmtp_out_ack(&r->z, n);
	}
	FZ_CHECK(!"zr_zmtp_out never ran dry");
}

static void
fcs_run(struct fcs_run *r, const struct fcs_plan *pl, bool chunked, uint32_t seed)
{
	struct zr_zmtp_config cfg = pl->server ? pl->scfg : pl->ccfg;

	memset(r, 0, sizeof *r);
	r->pl = pl;
	r->chunked = chunked;
	fz_rng_init(&r->rng, seed);
	fz_buf_init(&r->in);
	r->auth.status = pl->refuse ? 400 : 200;
	r->auth.client_pk = pl->client_pk;
	r->auth.defer = pl->defer_auth;
	if (pl->server) {
		cfg.auth = fcs_auth_cb;
		cfg.auth_arg = &r->auth;
	}
	memset(&r->z, 0x5c, sizeof r->z);
	FZ_CHECK(zr_zmtp_init(&r->z, &cfg, FCS_NOW0) == 0);
	for (size_t s = 0; s < pl->nseg; s++) {
		const struct fz_log *b = &pl->seg[s].bytes;
		size_t off = 0;
		int rc;

		r->now = pl->seg[s].now;
		while (off < b->len && r->err == 0) {
			size_t k = chunked ? fz_chunk_len(&r->rng, b->len - off) : b->len - off;

			fz_buf_append(&r->in, b->p + off, k);
			off += k;
			fcs_feed_loop(r);
		}
		rc = zr_zmtp_tick(&r->z, r->now);
		if (r->err == 0 && rc < 0) {
			FZ_CHECK(rc == -ZR_EHEARTBEAT_TIMEOUT && r->ready);
			fcs_failed(r, rc);
		}
		fz_log_u8(&r->log, 't');
		fz_log_int(&r->log, rc);
		fz_log_u64(&r->log, zr_zmtp_deadline(&r->z));
		fcs_take_out(r);
	}
	fz_log_u8(&r->log, 'Z');
	fz_log_int(&r->log, r->err);
	fz_log_u8(&r->log, r->ready);
	fz_log_u64(&r->log, r->in.len);
}

static void
fcs_run_free(struct fcs_run *r)
{
	zr_zmtp_fini(&r->z);
	fz_buf_free(&r->in);
	fz_log_free(&r->log);
	fz_log_free(&r->out);
}

/* The output: our greeting and handshake commands as the reference wrote
 * them; ERROR only from a server, only before READY, last; after READY
 * MESSAGEs the peer opens without an event. */
static void
fcs_check_output(const struct fcs_run *r, struct zr_zmtp *peer)
{
	const struct fcs_plan *pl = r->pl;
	const uint8_t *o = r->out.p, *ref = pl->server ? pl->s_sent.p : pl->c_sent.p;
	const size_t *hs = pl->server ? pl->s_hs : pl->c_hs;
	size_t n = r->out.len, off = ZR_ZMTP_GREETING_SIZE;
	uint8_t greet[ZR_ZMTP_GREETING_SIZE];
	struct fz_buf pin;

	FZ_CHECK(zr_zmtp_greeting_encode(greet, 1, ZR_MECH_CURVE, pl->server) ==
	         ZR_ZMTP_GREETING_SIZE);
	FZ_CHECK(n >= off && memcmp(o, greet, off) == 0);
	FZ_CHECK(memcmp(o, ref, off) == 0);
	/* WELCOME and READY, or HELLO and INITIATE, as far as the handshake
	 * went, byte for byte. */
	for (int k = 1; k < 3 && off < n; k++) {
		size_t len = hs[k] - hs[k - 1];

		if (o[off] == ZR_ZMTP_COMMAND && off + 8 <= n &&
		    memcmp(o + off + 2,
		           "\x05"
		           "ERROR",
		           6) == 0)
			break;
		if (k == 2 && pl->server)
			FZ_CHECK(r->ready);
		FZ_CHECK(n - off >= len && memcmp(o + off, ref + hs[k - 1], len) == 0);
		off += len;
		if (k == 2 && r->ready)
			goto traffic;
	}
	/* Before READY: nothing, or (a server) one ERROR that ends the output. */
	if (off < n) {
		struct zr_zmtp_cmd cmd;

		FZ_CHECK(pl->server && !r->ready && r->err != 0);
		FZ_CHECK(o[off] == ZR_ZMTP_COMMAND && o[off + 1] == n - off - 2);
		FZ_CHECK(zr_zmtp_cmd_parse(o + off + 2, n - off - 2, ZR_MECH_CURVE, &cmd) == 0);
		FZ_CHECK(cmd.type == ZR_CMD_ERROR);
		if (r->err == -ZR_EAUTH)
			FZ_CHECK(cmd.value_len == 3 && memcmp(cmd.value, "400", 3) == 0);
	}
	FZ_CHECK(!r->ready);
	return;

traffic:
	/* After READY: MESSAGE data frames only (PING, PONG); the peer opens them. */
	FZ_CHECK(pl->peer_in_traffic);
	for (size_t at = off; at < n;) {
		size_t h = (o[at] & ZR_ZMTP_LONG) ? 9 : 2;

		FZ_CHECK((o[at] & ~ZR_ZMTP_LONG) == 0);
		FZ_CHECK(memcmp(o + at + h,
		                "\x07"
		                "MESSAGE",
		                8) == 0);
		at += h + (size_t)(h == 9 ? fz_get64(o + at + 1) : o[at + 1]);
		FZ_CHECK(at <= n);
	}
	fz_buf_init(&pin);
	fz_buf_append(&pin, o + off, n - off);
	while (pin.len > 0) {
		struct zr_zmtp_event ev;
		size_t used = 0;
		int rc = zr_zmtp_feed(peer, pin.p, pin.len, &used, &ev, FCS_NOW0);

		FZ_CHECK(rc == ZR_NEED_MORE); /* a PING or PONG: no event, no error */
		FZ_CHECK(used == pin.len);
		fz_buf_drop(&pin, used);
	}
	fz_buf_free(&pin);
}

/* One input against a fresh codec of the role under test (server or client). */
static void
fcs_fuzz(const uint8_t *data, size_t size, bool server)
{
	struct fcs_plan *pl = fz_alloc(sizeof *pl);
	struct fcs_run *one = fz_alloc(sizeof *one), *chunked = fz_alloc(sizeof *chunked);

	if (sodium_init() < 0)
		abort();
	memset(pl, 0, sizeof *pl);
	fcs_plan_build(pl, data, size, server);
	pl->defer_auth = size > 2 && (data[2] & 0x80) != 0;

	fcs_run(one, pl, false, 0);
	fcs_run(chunked, pl, true, size > 2 ? data[2] : 0);
	if (!fz_log_equal(&one->log, &chunked->log)) {
		fz_log_diff("curve events", &one->log, &chunked->log);
		FZ_CHECK(!"chunked and one-shot runs disagree");
	}
	if (!fz_log_equal(&one->out, &chunked->out)) {
		fz_log_diff("curve output", &one->out, &chunked->out);
		FZ_CHECK(!"chunked and one-shot runs wrote different bytes");
	}
	fcs_check_output(one, pl->peer);
#ifdef FZ_TRACE
	/* -DFZ_TRACE: one line per input, to see what a seed reaches. */
	fprintf(stderr,
	        "curve %s: ready %d, err %d (%s), %zu of %zu encrypted units delivered, wrote "
	        "%zu\n",
	        server ? "server" : "client", one->ready, one->err,
	        one->err ? zr_strerror(one->err) : "-", one->next_exp, pl->nexp, one->out.len);
#endif

	fcs_run_free(one);
	fcs_run_free(chunked);
	fcs_plan_free(pl);
	free(one);
	free(chunked);
	free(pl);
}

#endif /* ZR_FUZZ_FUZZ_CONN_CURVE_H */
