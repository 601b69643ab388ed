/*
 * The connection-codec driver shared by the connection harnesses
 * (fuzz_conn.c, fuzz_null_client.c, fuzz_null_server.c, fuzz_plain_client.c,
 * fuzz_plain_server.c). Each harness turns its input into a struct cd_params
 * (a configuration, a script of operations and the peer's byte stream) and
 * calls cd_fuzz, which runs the script twice:
 *
 *   one-shot  every DATA segment of the script is presented whole;
 *   chunked   every DATA segment is cut into pieces (sizes from the seed) and
 *             fed piece by piece at the same clock, the unconsumed rest kept;
 *             most feeds are preceded by the traffic fast path
 *             (zr_zmtp_feed_msgs, some of its messages given back with
 *             zr_zmtp_unfeed_msgs), whose messages are logged as the frames
 *             they are.
 *
 * Time, ticks and output acks happen only at script points, identical in both
 * runs, so the runs must agree exactly: both write a normalised log (frames
 * joined from their pieces, every other event with its bytes, errors, tick
 * results, deadlines, what zr_zmtp_out offered and what was acked) and the
 * logs are compared byte for byte.
 *
 * Checked on every call: consumed <= fed; every span inside the bytes the
 * call consumed, and read in full; frame pieces contiguous, within
 * max_msg_size, FRAME_END exactly at the end; no frame before READY; no
 * message longer than max_msg_frames, refused for it only at exactly that
 * many;
 * zr_zmtp_want bounded by the command limits + 9 (64 for the greeting) and
 * larger than what is held after NEED_MORE; errors sticky across feed and
 * tick, zr_zmtp_error and zr_zmtp_state consistent with them; zr_zmtp_out at
 * most ZR_ZMTP_OUT_MAX, its unacked bytes never lost, changed or moved (an
 * asynchronous send may hold their address); after a
 * clean tick the next deadline lies in the future. At the end the bytes the
 * codec wrote are decoded as a ZMTP stream and must be our greeting followed
 * by well-formed commands fit for the role (READY / HELLO / INITIATE /
 * WELCOME with our metadata and credentials, an ERROR last if any, the ZAP
 * status digits as reason when our authenticator refused, an ERROR after
 * zr_zmtp_abort once the greeting is done).
 *
 * Script (ctl bytes, one per operation: op = bits 5-7, param = bits 0-4):
 *   0  DATA  param + 1 bytes            1  DATA  seg_len[param] bytes
 *   2  DATA  the rest of the stream     3  ADVANCE the clock by dt[param]
 *   4  TICK                             5  ADVANCE by dt[param], then TICK
 *   6  OUT   take zr_zmtp_out, ack an amount picked by param
 *   7  param 31: zr_zmtp_abort; 30: zr_zmtp_touch; otherwise an empty feed
 *      and the accessors
 * After the script: the rest of the stream, then output drained, then a tick.
 */
#ifndef ZR_FUZZ_FUZZ_CONN_DRIVER_H
#define ZR_FUZZ_FUZZ_CONN_DRIVER_H

#include <errno.h>

#include <zring/zmtp.h>

#include "fuzz_common.h"

struct cd_params {
	struct zr_zmtp_config cfg; /* auth is filled in by the driver when use_auth */
	bool use_auth;
	/* The authenticator answers ZR_ZMTP_AUTH_PENDING; the driver gives its
	 * verdict with zr_zmtp_auth_reply as soon as the feed parks. */
	bool defer_auth;
	const uint8_t *verdicts; /* the authenticator's answers, 2 bits each */
	size_t n_verdicts;
	uint64_t now0;
	const uint8_t *ctl;
	size_t ctl_len;
	const uint8_t *data;
	size_t data_len;
	uint32_t seed;
	/* Chunked run: drain (and ack) the output after every piece. The output
	 * then differs from the one-shot run by design (a burst of PINGs split
	 * across pieces earns more PONGs), so it is validated but not compared. */
	bool pump_each_chunk;
};

static const int cd_verdict_codes[4] = {200, 300, 400, 500};

struct cd_auth {
	const uint8_t *verdicts;
	size_t n;
	bool defer;
	bool pending; /* answered ZR_ZMTP_AUTH_PENDING; last is the verdict to give */
	unsigned calls;
	bool inside;
	int last;
	struct fz_log *log;
	uint64_t *sum;
};

struct cd_run {
	const struct cd_params *p;
	struct zr_zmtp z;
	struct zr_zmtp_config cfg;
	struct cd_auth auth;
	bool chunked;
	struct fz_rng rng;
	struct fz_buf in;
	struct fz_log log;
	struct fz_log out; /* every byte acked, in order */
	struct fz_log cur; /* the message frame being joined */
	bool in_frame;
	uint64_t cur_size;
	unsigned cur_flags;
	uint64_t msg_total;
	uint32_t msg_frames; /* frames of the message so far (MORE frames ended) */
	bool ready;
	bool init_failed;
	bool peer_error;
	bool abort_wants_error; /* zr_zmtp_abort after the greeting promises ERROR */
	int err;
	uint64_t now, now_init;
	uint64_t consumed_total;
	uint64_t sum;
	size_t want_bound;
	unsigned zero_progress;
	/* Output handed out and not acked: it must stay put, unchanged. */
	const uint8_t *held;
	size_t held_len;
	uint8_t held_copy[ZR_ZMTP_OUT_MAX];
};

static int
cd_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct cd_auth *a = arg;
	unsigned sel;

	FZ_CHECK(!a->inside);
	a->inside = true;
	FZ_CHECK(req->mechanism == ZR_MECH_PLAIN);
	FZ_CHECK(req->username_len <= 255 && req->password_len <= 255);
	*a->sum += fz_touch(req->username, req->username_len) +
	           fz_touch(req->password, req->password_len);
	fz_log_u8(a->log, 'A');
	fz_log_u64(a->log, req->username_len);
	fz_log_bytes(a->log, req->username, req->username_len);
	fz_log_u64(a->log, req->password_len);
	fz_log_bytes(a->log, req->password, req->password_len);
	sel = a->n ? (unsigned)a->verdicts[(a->calls / 4) % a->n] >> (2 * (a->calls % 4)) : 0u;
	a->last = cd_verdict_codes[sel & 3];
	a->calls++;
	a->inside = false;
	if (a->defer) {
		FZ_CHECK(!a->pending);
		a->pending = true;
		return ZR_ZMTP_AUTH_PENDING;
	}
	return a->last;
}

static bool
cd_err_protocol(int rc)
{
	return rc <= -ZR_EBASE && rc > -ZR_ELAST;
}

static void
cd_check_consistent(struct cd_run *r)
{
	int st = zr_zmtp_state(&r->z), e = zr_zmtp_error(&r->z);

	FZ_CHECK(st >= ZR_ZMTP_GREETING && st <= ZR_ZMTP_FAILED);
	FZ_CHECK((st == ZR_ZMTP_FAILED) == (e != 0));
	FZ_CHECK(e == r->err);
	if (r->ready && st != ZR_ZMTP_FAILED)
		FZ_CHECK(st == ZR_ZMTP_TRAFFIC);
	if (!r->ready)
		FZ_CHECK(st != ZR_ZMTP_TRAFFIC);
	if (st == ZR_ZMTP_TRAFFIC)
		FZ_CHECK(zr_zmtp_peer_type(&r->z) >= 0);
	if (st == ZR_ZMTP_GREETING || st == ZR_ZMTP_HANDSHAKE)
		FZ_CHECK(zr_zmtp_peer_type(&r->z) == -1);
}

/* Called once the run has failed with r->err: everything keeps returning it. */
static void
cd_check_sticky(struct cd_run *r)
{
	struct zr_zmtp_event ev;
	size_t consumed = 0;

	FZ_CHECK(zr_zmtp_feed(&r->z, r->in.p, r->in.len, &consumed, &ev, r->now) == r->err);
	FZ_CHECK(zr_zmtp_tick(&r->z, r->now) == r->err);
	FZ_CHECK(zr_zmtp_error(&r->z) == r->err);
	FZ_CHECK(zr_zmtp_state(&r->z) == ZR_ZMTP_FAILED);
}

static void
cd_fail_seen(struct cd_run *r, int rc, char tag)
{
	FZ_CHECK(r->err == 0);
	r->err = rc;
	fz_log_u8(&r->log, (uint8_t)tag);
	fz_log_int(&r->log, rc);
	cd_check_consistent(r);
	cd_check_sticky(r);
}

static void
cd_on_ready(struct cd_run *r, const struct zr_zmtp_event *ev, size_t consumed)
{
	const uint8_t *v;
	size_t vl;
	const char *name;

	FZ_CHECK(!r->ready);
	r->ready = true;
	FZ_CHECK(zr_zmtp_state(&r->z) == ZR_ZMTP_TRAFFIC);
	FZ_CHECK(ev->peer_type >= 0 && ev->peer_type < ZR_SOCKTYPE_COUNT);
	FZ_CHECK(ev->peer_type == zr_zmtp_peer_type(&r->z));
	FZ_CHECK(zr_socktype_compatible(r->cfg.socket_type, ev->peer_type));
	FZ_CHECK(fz_within(ev->data, ev->len, r->in.p, consumed));
	FZ_CHECK(zr_zmtp_props_validate(ev->data, ev->len) == 0);
	FZ_CHECK(zr_zmtp_props_find(ev->data, ev->len, "Socket-Type", &v, &vl) == 0);
	name = zr_socktype_name(ev->peer_type);
	FZ_CHECK(name != NULL && strlen(name) == vl && memcmp(name, v, vl) == 0);
	if (ev->peer_identity != NULL) {
		FZ_CHECK(fz_within(ev->peer_identity, ev->peer_identity_len, ev->data, ev->len));
		FZ_CHECK(ev->peer_identity_len <= 255);
		FZ_CHECK(zr_zmtp_props_find(ev->data, ev->len, "Identity", &v, &vl) == 0);
		FZ_CHECK(v == ev->peer_identity && vl == ev->peer_identity_len);
	} else {
		FZ_CHECK(zr_zmtp_props_find(ev->data, ev->len, "Identity", &v, &vl) == -ENOENT);
	}
	r->sum += fz_touch(ev->data, ev->len) + fz_touch(ev->peer_identity, ev->peer_identity_len);
	fz_log_u8(&r->log, 'R');
	fz_log_int(&r->log, ev->peer_type);
	fz_log_u8(&r->log, zr_zmtp_peer_minor(&r->z));
	fz_log_u64(&r->log, ev->len);
	fz_log_bytes(&r->log, ev->data, ev->len);
	fz_log_u8(&r->log, ev->peer_identity != NULL);
}

static void
cd_on_frame(struct cd_run *r, const struct zr_zmtp_event *ev, size_t consumed)
{
	unsigned more = ev->flags & ZR_ZMTP_MORE;

	FZ_CHECK(r->ready && zr_zmtp_state(&r->z) == ZR_ZMTP_TRAFFIC);
	FZ_CHECK((ev->flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_FRAME_END)) == 0);
	FZ_CHECK(ev->len <= ev->frame_size && ev->offset <= ev->frame_size - ev->len);
	FZ_CHECK(ev->frame_size <= r->cfg.max_msg_size);
	FZ_CHECK(ev->len > 0 || ev->frame_size == 0);
	FZ_CHECK(((ev->flags & ZR_ZMTP_FRAME_END) != 0) ==
	         (ev->offset + ev->len == ev->frame_size));
	FZ_CHECK(fz_within(ev->data, ev->len, r->in.p, consumed));
	if (r->in_frame) {
		FZ_CHECK(ev->offset == r->cur.len && ev->frame_size == r->cur_size &&
		         more == r->cur_flags);
	} else {
		FZ_CHECK(ev->offset == 0);
		FZ_CHECK(ev->frame_size <= r->cfg.max_msg_size - r->msg_total);
		FZ_CHECK(r->msg_frames < fz_frame_limit(r->cfg.max_msg_frames));
		r->in_frame = true;
		r->cur_size = ev->frame_size;
		r->cur_flags = more;
		r->cur.len = 0;
	}
	r->sum += fz_touch(ev->data, ev->len);
	fz_log_bytes(&r->cur, ev->data, ev->len);
	if (ev->flags & ZR_ZMTP_FRAME_END) {
		fz_log_u8(&r->log, more ? 'M' : 'F');
		fz_log_u64(&r->log, ev->frame_size);
		fz_log_bytes(&r->log, r->cur.p, r->cur.len);
		r->in_frame = false;
		r->msg_total = more ? r->msg_total + ev->frame_size : 0;
		r->msg_frames = more ? r->msg_frames + 1 : 0;
	}
}

static void
cd_on_event(struct cd_run *r, const struct zr_zmtp_event *ev, size_t consumed)
{
	if (ev->type != ZR_ZMTP_EV_FRAME)
		FZ_CHECK(!r->in_frame); /* a frame's pieces come out together */
	switch (ev->type) {
	case ZR_ZMTP_EV_READY:
		cd_on_ready(r, ev, consumed);
		break;
	case ZR_ZMTP_EV_FRAME:
		cd_on_frame(r, ev, consumed);
		break;
	case ZR_ZMTP_EV_SUBSCRIBE:
	case ZR_ZMTP_EV_CANCEL:
		FZ_CHECK(r->ready && zr_zmtp_state(&r->z) == ZR_ZMTP_TRAFFIC);
		FZ_CHECK(fz_within(ev->data, ev->len, r->in.p, consumed));
		r->sum += fz_touch(ev->data, ev->len);
		fz_log_u8(&r->log, ev->type == ZR_ZMTP_EV_SUBSCRIBE ? 'S' : 'X');
		fz_log_u64(&r->log, ev->len);
		fz_log_bytes(&r->log, ev->data, ev->len);
		break;
	case ZR_ZMTP_EV_PEER_ERROR:
		FZ_CHECK(!r->peer_error);
		r->peer_error = true;
		FZ_CHECK(fz_within(ev->data, ev->len, r->in.p, consumed));
		FZ_CHECK(ev->len <= 255);
		r->sum += fz_touch(ev->data, ev->len);
		fz_log_u8(&r->log, 'P');
		fz_log_u64(&r->log, ev->len);
		fz_log_bytes(&r->log, ev->data, ev->len);
		/* The connection is failed from here on. */
		FZ_CHECK(zr_zmtp_error(&r->z) == -ZR_EPEERERROR);
		FZ_CHECK(zr_zmtp_state(&r->z) == ZR_ZMTP_FAILED);
		break;
	default:
		FZ_CHECK(!"unknown event type");
	}
}

/*
 * The chunked run's fast path (zr_zmtp_feed_msgs), tried before most feeds:
 * the messages it hands out must be exactly the frames zr_zmtp_feed would
 * have made of the same bytes (they go through cd_on_frame as such events,
 * so the logs of the two runs still agree), and none when no whole short
 * final frame comes next. Like a full socket, it sometimes takes only some
 * of them and gives the rest back (zr_zmtp_unfeed_msgs), to be fed again.
 */
static void
cd_feed_msgs(struct cd_run *r)
{
	struct zr_zmtp_msg batch[8];
	uint32_t x = fz_rng_next(&r->rng);
	size_t max = 1 + (x >> 2) % 8, consumed = 99, n, take, off = 0;

	if ((x & 3) == 0)
		return;
	n = zr_zmtp_feed_msgs(&r->z, r->in.p, r->in.len, &consumed, batch, max, r->now);
	FZ_CHECK(n <= max && consumed <= r->in.len && (n == 0) == (consumed == 0));
	if (n > 0)
		FZ_CHECK(r->ready && r->err == 0 && !r->in_frame && r->msg_frames == 0 &&
		         zr_zmtp_state(&r->z) == ZR_ZMTP_TRAFFIC);
	take = (x >> 5 & 3) == 0 ? (x >> 7) % (n + 1) : n;
	for (size_t i = 0; i < n; i++) {
		struct zr_zmtp_event ev = {
			.type = ZR_ZMTP_EV_FRAME,
			.data = batch[i].data,
			.len = batch[i].len,
			.frame_size = batch[i].len,
			.flags = ZR_ZMTP_FRAME_END,
		};

		/* A short final frame, whole, where the last one ended. */
		FZ_CHECK(off + 2 + batch[i].len <= consumed);
		FZ_CHECK(r->in.p[off] == 0 && r->in.p[off + 1] == batch[i].len);
		FZ_CHECK(batch[i].data == r->in.p + off + 2);
		off += 2 + batch[i].len;
		if (i < take)
			cd_on_frame(r, &ev, off);
	}
	FZ_CHECK(off == consumed);
	if (take < n) {
		off = (size_t)(batch[take].data - 2 - r->in.p);
		zr_zmtp_unfeed_msgs(&r->z, consumed - off);
		consumed = off;
	}
	if (n > 0)
		cd_check_consistent(r);
	r->consumed_total += consumed;
	fz_buf_drop(&r->in, consumed);
}

/* Feeds what r->in holds until the codec needs more or fails. */
static void
cd_feed_loop(struct cd_run *r)
{
	for (;;) {
		struct zr_zmtp_event ev;
		size_t consumed = 0, want;
		int rc;

		if (r->chunked)
			cd_feed_msgs(r);
		memset(&ev, 0xa5, sizeof ev);
		rc = zr_zmtp_feed(&r->z, r->in.p, r->in.len, &consumed, &ev, r->now);
		FZ_CHECK(consumed <= r->in.len);
		if (r->err != 0) {
			FZ_CHECK(rc == r->err);
			return;
		}
		if (rc < 0) {
			if (r->peer_error)
				FZ_CHECK(rc == -ZR_EPEERERROR);
			FZ_CHECK(cd_err_protocol(rc));
			FZ_CHECK(!(r->ready && rc == -ZR_EEARLYMSG));
			if (rc == -ZR_ETOOMANYFRAMES)
				FZ_CHECK(r->ready && !r->in_frame &&
				         r->msg_frames == fz_frame_limit(r->cfg.max_msg_frames));
			/* What a failing call reports as consumed is not specified
			 * (a message frame before READY fails after its first
			 * piece, whose length depends on the chunking), so the
			 * logs carry where an error happened only through the
			 * events before it. */
			fz_buf_drop(&r->in, consumed);
			cd_fail_seen(r, rc, 'E');
			return;
		}
		if (r->peer_error)
			FZ_CHECK(!"a call after PEER_ERROR did not fail");
		if (rc == ZR_NEED_MORE && r->auth.pending) {
			/* Parked: nothing more is taken until the answer. */
			int arc;

			FZ_CHECK(zr_zmtp_auth_pending(&r->z));
			r->consumed_total += consumed;
			fz_buf_drop(&r->in, consumed);
			memset(&ev, 0xa5, sizeof ev);
			FZ_CHECK(zr_zmtp_feed(&r->z, r->in.p, r->in.len, &consumed, &ev, r->now) ==
			         ZR_NEED_MORE);
			FZ_CHECK(consumed == 0);
			r->auth.pending = false;
			arc = zr_zmtp_auth_reply(&r->z, r->auth.last, NULL, NULL);
			FZ_CHECK(!zr_zmtp_auth_pending(&r->z));
			FZ_CHECK(zr_zmtp_auth_reply(&r->z, 200, NULL, NULL) ==
			         (arc < 0 ? arc : -EINVAL));
			fz_log_u8(&r->log, 'R');
			fz_log_int(&r->log, arc);
			if (arc < 0) {
				FZ_CHECK(arc == -ZR_EAUTH && r->auth.last != 200);
				cd_fail_seen(r, arc, 'E');
				return;
			}
			continue;
		}
		if (rc == ZR_NEED_MORE) {
			r->consumed_total += consumed;
			fz_buf_drop(&r->in, consumed);
			cd_check_consistent(r);
			want = zr_zmtp_want(&r->z, r->in.p, r->in.len);
			FZ_CHECK(want <= r->want_bound);
			FZ_CHECK(want > r->in.len);
			return;
		}
		FZ_CHECK(rc == ZR_OK);
		cd_on_event(r, &ev, consumed);
		if (!r->peer_error)
			cd_check_consistent(r);
		r->zero_progress = consumed == 0 ? r->zero_progress + 1 : 0;
		FZ_CHECK(r->zero_progress < 4);
		r->consumed_total += consumed;
		fz_buf_drop(&r->in, consumed);
	}
}

/* Takes the output, acks `ack` of it (clamped), checks nothing is lost. */
static void
cd_out(struct cd_run *r, unsigned param, bool logged)
{
	const uint8_t *d = NULL, *d2 = NULL;
	size_t n = zr_zmtp_out(&r->z, &d), n2, k;
	uint8_t keep[ZR_ZMTP_OUT_MAX];

	FZ_CHECK(n <= ZR_ZMTP_OUT_MAX);
	/* "They stay at that address, unchanged, until acked, even if the codec
	 * queues more meanwhile" (an asynchronous send may be reading them). */
	if (r->held_len > 0) {
		FZ_CHECK(d == r->held && n >= r->held_len);
		FZ_CHECK(memcmp(d, r->held_copy, r->held_len) == 0);
	}
	r->sum += fz_touch(d, n);
	if (param == 0)
		k = 0;
	else if (param >= 31)
		k = n;
	else if (param <= 8)
		k = param < n ? param : n;
	else
		k = n * param / 31;
	fz_log_bytes(&r->out, d, k);
	if (logged) {
		fz_log_u8(&r->log, 'O');
		fz_log_u64(&r->log, n);
		fz_log_u64(&r->log, k);
	}
	if (n > k)
		memcpy(keep, d + k, n - k);
	zr_zmtp_out_ack(&r->z, k);
	/* What was not acked is still there, first, in order. */
	n2 = zr_zmtp_out(&r->z, &d2);
	FZ_CHECK(n2 >= n - k && n2 <= ZR_ZMTP_OUT_MAX);
	if (n > k) {
		FZ_CHECK(d2 == d + k);
		FZ_CHECK(memcmp(d2, keep, n - k) == 0);
	}
	r->sum += fz_touch(d2, n2);
	r->held = d2;
	r->held_len = n2;
	if (n2 > 0)
		memcpy(r->held_copy, d2, n2);
}

static void
cd_drain(struct cd_run *r, bool logged)
{
	const uint8_t *d;
	int i;

	for (i = 0; i < 4 && zr_zmtp_out(&r->z, &d) > 0; i++)
		cd_out(r, 31, logged);
	FZ_CHECK(zr_zmtp_out(&r->z, &d) == 0);
}

static void
cd_tick(struct cd_run *r)
{
	int rc = zr_zmtp_tick(&r->z, r->now);
	uint64_t dl;

	if (r->err != 0) {
		FZ_CHECK(rc == r->err);
		return;
	}
	if (rc < 0) {
		FZ_CHECK(rc == -ZR_EHANDSHAKE_TIMEOUT || rc == -ZR_EHEARTBEAT_TIMEOUT);
		if (rc == -ZR_EHANDSHAKE_TIMEOUT) {
			FZ_CHECK(!r->ready && r->cfg.handshake_ivl_ms != 0);
			FZ_CHECK(r->now - r->now_init >= r->cfg.handshake_ivl_ms);
		} else {
			FZ_CHECK(r->ready);
		}
		cd_fail_seen(r, rc, 'T');
		return;
	}
	FZ_CHECK(rc == 0);
	dl = zr_zmtp_deadline(&r->z);
	/* Otherwise the caller would have to tick again at once, forever. */
	FZ_CHECK(dl > r->now);
	if (!r->ready && r->cfg.handshake_ivl_ms == 0)
		FZ_CHECK(dl == UINT64_MAX);
	fz_log_u8(&r->log, 't');
	fz_log_u64(&r->log, dl);
}

static void
cd_data(struct cd_run *r, const uint8_t *p, size_t n)
{
	size_t off = 0;

	/* Feed only when bytes arrive, in both runs: the codec counts any byte
	 * presented as traffic, also unconsumed ones presented again, so an
	 * extra call with nothing new would move the heartbeat in one run only. */
	if (n == 0)
		return;
	if (!r->chunked) {
		fz_buf_append(&r->in, p, n);
		cd_feed_loop(r);
		return;
	}
	while (off < n) {
		size_t k = fz_chunk_len(&r->rng, n - off);

		fz_buf_append(&r->in, p + off, k);
		off += k;
		cd_feed_loop(r);
		if (r->p->pump_each_chunk)
			cd_drain(r, false);
	}
}

static const uint32_t cd_seg_len[32] = {
	0,  1,  2,  3,  5,   8,   9,   10,  11,  12,  16,  17,  31,  32,  63,   64,
	65, 66, 73, 74, 100, 127, 128, 200, 255, 256, 257, 258, 265, 511, 1024, 4096,
};
static const uint64_t cd_dt[32] = {
	0,     1,     2,     9,     10,    50,    99,     100,     101,     199,      200,
	250,   500,   999,   1000,  1001,  1999,  2000,   2500,    4999,    5000,     9999,
	10000, 10001, 29999, 30000, 30001, 60000, 100000, 6553500, 6553600, 86400000,
};

static void
cd_run_init(struct cd_run *r, const struct cd_params *p, bool chunked)
{
	struct zr_zmtp_greeting g;
	const uint8_t *d;
	size_t n, cmdmax;
	int rc;

	memset(r, 0, sizeof *r);
	r->p = p;
	r->chunked = chunked;
	fz_rng_init(&r->rng, p->seed);
	r->cfg = p->cfg;
	r->auth.verdicts = p->verdicts;
	r->auth.n = p->n_verdicts;
	r->auth.defer = p->defer_auth;
	r->auth.log = &r->log;
	r->auth.sum = &r->sum;
	if (p->use_auth) {
		r->cfg.auth = cd_auth_cb;
		r->cfg.auth_arg = &r->auth;
	}
	fz_buf_init(&r->in);
	r->now = r->now_init = p->now0;
	cmdmax = r->cfg.max_cmd_size > r->cfg.max_handshake_cmd ? r->cfg.max_cmd_size
	                                                        : r->cfg.max_handshake_cmd;
	r->want_bound = cmdmax + ZR_ZMTP_HEADER_MAX;
	if (r->want_bound < ZR_ZMTP_GREETING_SIZE)
		r->want_bound = ZR_ZMTP_GREETING_SIZE;

	memset(&r->z, 0x5c, sizeof r->z);
	rc = zr_zmtp_init(&r->z, &r->cfg, r->now);
	fz_log_u8(&r->log, 'I');
	fz_log_int(&r->log, rc);
	if (rc != 0) {
		FZ_CHECK(rc == -EINVAL || rc == -ENOTSUP || rc == -EMSGSIZE);
		r->init_failed = true;
		return;
	}
	FZ_CHECK(r->cfg.socket_type != ZR_STREAM && r->cfg.socket_type != ZR_DGRAM);
	FZ_CHECK(zr_zmtp_state(&r->z) == ZR_ZMTP_GREETING && zr_zmtp_error(&r->z) == 0);
	FZ_CHECK(zr_zmtp_peer_type(&r->z) == -1);
	/* Our greeting is queued at once. */
	n = zr_zmtp_out(&r->z, &d);
	FZ_CHECK(n >= ZR_ZMTP_GREETING_SIZE && n <= ZR_ZMTP_OUT_MAX);
	FZ_CHECK(zr_zmtp_greeting_parse(d, ZR_ZMTP_GREETING_SIZE, &g) == ZR_OK);
	FZ_CHECK(g.mechanism == r->cfg.mechanism && g.minor == r->cfg.minor && g.major == 3);
	if (r->cfg.handshake_ivl_ms == 0)
		FZ_CHECK(zr_zmtp_deadline(&r->z) == UINT64_MAX);
}

static void
cd_run_free(struct cd_run *r)
{
	fz_buf_free(&r->in);
	fz_log_free(&r->log);
	fz_log_free(&r->out);
	fz_log_free(&r->cur);
}

/* ------------------------------------------------------------------------ */
/* The codec's own output, read back as a ZMTP stream. */

static bool
cd_sends_identity(int type)
{
	return type == ZR_REQ || type == ZR_DEALER || type == ZR_ROUTER;
}

static void
cd_check_our_metadata(const struct cd_run *r, const struct zr_zmtp_cmd *c)
{
	const char *name = zr_socktype_name(r->cfg.socket_type);
	const uint8_t *v;
	size_t vl, i;

	FZ_CHECK(zr_zmtp_props_find(c->value, c->value_len, "Socket-Type", &v, &vl) == 0);
	FZ_CHECK(vl == strlen(name) && memcmp(v, name, vl) == 0);
	if (cd_sends_identity(r->cfg.socket_type)) {
		FZ_CHECK(zr_zmtp_props_find(c->value, c->value_len, "Identity", &v, &vl) == 0);
		FZ_CHECK(vl == r->cfg.routing_id_len &&
		         (vl == 0 || memcmp(v, r->cfg.routing_id, vl) == 0));
	}
	for (i = 0; i < r->cfg.props_count; i++) {
		FZ_CHECK(zr_zmtp_props_find(c->value, c->value_len, r->cfg.props[i].name, &v,
		                            &vl) == 0);
		FZ_CHECK(vl == r->cfg.props[i].value_len);
	}
}

static void
cd_check_output(struct cd_run *r, bool drained)
{
	const uint8_t *s = r->out.p;
	size_t len = r->out.len, off;
	uint8_t greet[ZR_ZMTP_GREETING_SIZE];
	struct zr_zmtp_dec dec;
	bool plain = r->cfg.mechanism == ZR_MECH_PLAIN, server = plain && r->cfg.as_server;
	bool error_seen = false;
	unsigned ncmd = 0;

	if (r->init_failed) {
		FZ_CHECK(len == 0);
		return;
	}
	FZ_CHECK(zr_zmtp_greeting_encode(greet, r->cfg.minor, r->cfg.mechanism, server) ==
	         ZR_ZMTP_GREETING_SIZE);
	if (len == 0) {
		FZ_CHECK(!drained);
		return;
	}
	FZ_CHECK(memcmp(s, greet, len < sizeof greet ? len : sizeof greet) == 0);
	if (len < ZR_ZMTP_GREETING_SIZE) {
		FZ_CHECK(!drained); /* queued at init, so all out once drained */
		return;
	}

	zr_zmtp_dec_init(&dec, UINT64_MAX, UINT32_MAX);
	off = ZR_ZMTP_GREETING_SIZE;
	for (;;) {
		struct zr_zmtp_frame f;
		struct zr_zmtp_cmd c;
		size_t used = 0;
		int rc = zr_zmtp_dec_feed(&dec, s + off, len - off, &used, &f);

		FZ_CHECK(rc == ZR_OK || rc == ZR_NEED_MORE);
		off += used;
		if (rc == ZR_NEED_MORE)
			break;
		/* The codec writes commands only; messages are the caller's. */
		FZ_CHECK(f.flags & ZR_ZMTP_COMMAND);
		FZ_CHECK(!error_seen); /* nothing after ERROR */
		FZ_CHECK(zr_zmtp_cmd_parse(f.data, f.len, r->cfg.mechanism, &c) == 0);
		ncmd++;
		switch (c.type) {
		case ZR_CMD_ERROR:
			error_seen = true;
			FZ_CHECK(r->err != 0);
			if (r->err == -ZR_EAUTH) {
				char code[4];

				snprintf(code, sizeof code, "%d", r->auth.last);
				FZ_CHECK(c.value_len == 3 && memcmp(c.value, code, 3) == 0);
			}
			break;
		case ZR_CMD_READY:
			/* NULL: our first command; PLAIN: the server's answer to INITIATE. */
			FZ_CHECK(!plain || server);
			FZ_CHECK(ncmd == (server ? 2u : 1u));
			cd_check_our_metadata(r, &c);
			break;
		case ZR_CMD_HELLO:
			FZ_CHECK(plain && !server && ncmd == 1);
			FZ_CHECK(c.username_len == r->cfg.username_len &&
			         c.password_len == r->cfg.password_len);
			FZ_CHECK(c.username_len == 0 ||
			         memcmp(c.username, r->cfg.username, c.username_len) == 0);
			FZ_CHECK(c.password_len == 0 ||
			         memcmp(c.password, r->cfg.password, c.password_len) == 0);
			break;
		case ZR_CMD_WELCOME:
			FZ_CHECK(server && ncmd == 1);
			break;
		case ZR_CMD_INITIATE:
			FZ_CHECK(plain && !server && ncmd == 2);
			cd_check_our_metadata(r, &c);
			break;
		case ZR_CMD_PING:
			FZ_CHECK(r->ready);
			FZ_CHECK(c.ttl == (r->cfg.heartbeat_ttl_ms / 100 > 0xffff
			                           ? 0xffff
			                           : r->cfg.heartbeat_ttl_ms / 100));
			break;
		case ZR_CMD_PONG:
			FZ_CHECK(r->ready);
			break;
		default:
			FZ_CHECK(!"the codec wrote a command it has no business writing");
		}
	}
	if (drained)
		FZ_CHECK(off == len); /* whole frames only once the output is drained */
	/* "queueing ERROR with reason if the handshake framing is established" */
	if (drained && r->abort_wants_error)
		FZ_CHECK(error_seen);
}

/* ------------------------------------------------------------------------ */

static void
cd_run_script(struct cd_run *r)
{
	const struct cd_params *p = r->p;
	size_t data_off = 0, i;

	if (r->init_failed)
		return;
	for (i = 0; i < p->ctl_len; i++) {
		unsigned op = p->ctl[i] >> 5, param = p->ctl[i] & 31u;
		size_t n;

		switch (op) {
		case 0:
		case 1:
		case 2:
			n = op == 0   ? param + 1u
			    : op == 1 ? cd_seg_len[param]
			              : p->data_len - data_off;
			if (n > p->data_len - data_off)
				n = p->data_len - data_off;
			cd_data(r, p->data + data_off, n);
			data_off += n;
			break;
		case 3:
		case 5:
			r->now = UINT64_MAX - r->now < cd_dt[param] ? UINT64_MAX
			                                            : r->now + cd_dt[param];
			if (op == 5)
				cd_tick(r);
			break;
		case 4:
			cd_tick(r);
			break;
		case 6:
			cd_out(r, param, !p->pump_each_chunk);
			break;
		default:
			if (param == 31) {
				int was = r->err, st = zr_zmtp_state(&r->z);
				int rc = zr_zmtp_abort(&r->z, -ECONNRESET, (i & 1) ? "fuzz" : NULL);

				if (was) {
					FZ_CHECK(rc == was);
				} else {
					FZ_CHECK(rc == -ECONNRESET);
					r->err = rc;
					r->abort_wants_error =
						st == ZR_ZMTP_HANDSHAKE || st == ZR_ZMTP_TRAFFIC;
					fz_log_u8(&r->log, 'B');
					cd_check_consistent(r);
					cd_check_sticky(r);
				}
			} else if (param == 30) {
				/* Traffic without bytes (a caller paused on purpose). */
				zr_zmtp_touch(&r->z, r->now);
				cd_check_consistent(r);
				fz_log_u8(&r->log, 'H');
				fz_log_u64(&r->log, zr_zmtp_deadline(&r->z));
			} else {
				struct zr_zmtp_event ev;
				size_t consumed = 7;
				int rc = zr_zmtp_feed(&r->z, r->in.p, 0, &consumed, &ev, r->now);

				FZ_CHECK(consumed == 0);
				FZ_CHECK(rc == (r->err ? r->err : ZR_NEED_MORE));
				cd_check_consistent(r);
				fz_log_u8(&r->log, 'D');
				fz_log_u64(&r->log, zr_zmtp_deadline(&r->z));
				fz_log_int(&r->log, zr_zmtp_peer_type(&r->z));
			}
			break;
		}
	}
	cd_data(r, p->data + data_off, p->data_len - data_off);
	cd_drain(r, !p->pump_each_chunk);
	cd_tick(r);
	cd_check_consistent(r);
	if (r->in_frame) {
		fz_log_u8(&r->log, 'p');
		fz_log_u64(&r->log, r->cur_size);
		fz_log_bytes(&r->log, r->cur.p, r->cur.len);
	}
	fz_log_u8(&r->log, 'Z');
	fz_log_int(&r->log, zr_zmtp_state(&r->z));
	fz_log_int(&r->log, r->err);
	if (r->err == 0) {
		fz_log_u64(&r->log, r->consumed_total);
		fz_log_u64(&r->log, r->in.len);
	}
	fz_log_u64(&r->log, zr_zmtp_deadline(&r->z));
}

static void
cd_fuzz(const struct cd_params *p)
{
	struct cd_run *one = fz_alloc(sizeof *one), *chunked = fz_alloc(sizeof *chunked);

	cd_run_init(one, p, false);
	cd_run_script(one);
	cd_check_output(one, true);

	cd_run_init(chunked, p, true);
	cd_run_script(chunked);
	cd_check_output(chunked, true);

#ifdef FZ_TRACE
	/* -DFZ_TRACE: one line per input, to see what a seed reaches. */
	fprintf(stderr, "conn: init %s, ready %d, err %d (%s), consumed %llu of %zu, wrote %zu\n",
	        one->init_failed ? "refused" : "ok", one->ready, one->err,
	        one->err ? zr_strerror(one->err) : "-", (unsigned long long)one->consumed_total,
	        p->data_len, one->out.len);
#endif
	if (!fz_log_equal(&one->log, &chunked->log)) {
		fz_log_diff("conn events", &one->log, &chunked->log);
		FZ_CHECK(!"chunked and one-shot runs disagree");
	}
	if (!p->pump_each_chunk && !fz_log_equal(&one->out, &chunked->out)) {
		fz_log_diff("conn output", &one->out, &chunked->out);
		FZ_CHECK(!"chunked and one-shot runs wrote different bytes");
	}
	FZ_CHECK(one->err == chunked->err && one->ready == chunked->ready);
	if (!p->pump_each_chunk)
		FZ_CHECK(one->sum == chunked->sum);

	cd_run_free(one);
	cd_run_free(chunked);
	free(one);
	free(chunked);
}

/* A valid peer greeting for the stream's front: minor, mechanism, as-server;
 * libzmq-style padding (octet 8 = 1) when asked. */
static void
cd_peer_greeting(uint8_t out[ZR_ZMTP_GREETING_SIZE], uint8_t minor, int mechanism, bool as_server,
                 bool libzmq_padding)
{
	static const char *const names[3] = {"NULL", "PLAIN", "CURVE"};
	const char *name = mechanism >= 0 && mechanism < 3 ? names[mechanism] : "NULL";

	memset(out, 0, ZR_ZMTP_GREETING_SIZE);
	out[0] = 0xff;
	if (libzmq_padding)
		out[8] = 1;
	out[9] = 0x7f;
	out[10] = 3;
	out[11] = minor;
	memcpy(out + 12, name, strlen(name));
	out[32] = as_server ? 1 : 0;
}

#endif /* ZR_FUZZ_FUZZ_CONN_DRIVER_H */
