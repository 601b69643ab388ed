/*
 * The connection codec under CURVE (RFC 26, as zmtp/conn.c drives zmtp/curve.c).
 *
 * Two codecs with fixed long-term keys and fixed randomness talk to each
 * other through their public API: the handshake for several socket-type
 * pairs, the exact size of every command on the wire, frames both ways
 * through zr_zmtp_encode_frame, heartbeats and subscriptions inside MESSAGE,
 * the plaintext limit. Then hostile peers: the honest transcript of one side,
 * recorded once, is mutated (a bit flipped in a box, a size changed, a command
 * replayed, a plaintext frame slipped in, a vouch or a key forged with
 * libsodium) and fed to a fresh codec of the other side under every chunking
 * (whole, byte by byte, every split point, sampled double splits) against a
 * guard page; the error must be the specific one, sticky, with no event it
 * should not have, and ERROR queued exactly when conn.c says so (by a server
 * in the handshake, never by a client, never in traffic).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>
#include <zring/zmtp.h>

#include "conn_util.h"
#include "curve.h"
#include "feed.h"
#include "rows.h"
#include "vectors.h"

#define T0 1000 /* the feeders' clock (zt_conn_target) */
#define PEER_ADDR "tcp://192.0.2.7:5555"
#define KEY ZR_CURVE_KEY_LEN

/* ---------------------------------------------------------------- */
/* Keys, randomness, authenticator. */

static uint8_t client_pk[KEY], client_sk[KEY], server_pk[KEY], server_sk[KEY];
static uint8_t other_pk[KEY], other_sk[KEY];

static void
keys_make(uint8_t pk[KEY], uint8_t sk[KEY], uint8_t tag)
{
	uint8_t seed[crypto_box_SEEDBYTES];

	memset(seed, tag, sizeof seed);
	cr_assert_eq(crypto_box_seed_keypair(pk, sk, seed), 0);
}

static void
suite_init(void)
{
	cr_assert_geq(sodium_init(), 0);
	keys_make(client_pk, client_sk, 0xc1);
	keys_make(server_pk, server_sk, 0x5e);
	keys_make(other_pk, other_sk, 0x07);
}

TestSuite(zmtp_conn_curve, .init = suite_init);

/*
 * Fixed randomness without state: the octets depend only on the role's tag
 * and the length asked for. A fresh codec draws exactly what the previous
 * one drew, so a transcript recorded from one pair replays into fresh codecs
 * under every chunking, and the test can recompute a client's transient
 * secret to forge commands. (A server draws its transient secret and its
 * cookie key with the same length, so here they are equal; nothing on the
 * wire can tell.)
 */
struct fixed_rnd {
	uint8_t tag;
};
static struct fixed_rnd rnd_client = {0xa1}, rnd_server = {0xb2};

static void
rnd_fill(void *arg, uint8_t *buf, size_t len)
{
	const struct fixed_rnd *r = arg;
	uint8_t seed[randombytes_SEEDBYTES];

	memset(seed, r->tag, sizeof seed);
	seed[0] = (uint8_t)len;
	seed[1] = (uint8_t)(len >> 8);
	randombytes_buf_deterministic(buf, len, seed);
}

struct auth_seen {
	int status;          /* the answer */
	const char *user_id; /* the answer on accept (NULL: none) */
	const char *text;    /* the answer's text (NULL: none) */
	int calls;
	int mechanism;
	bool has_key;
	uint8_t key[KEY];
	char addr[64];
};

static int
auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct auth_seen *a = arg;

	a->calls++;
	a->mechanism = req->mechanism;
	a->has_key = req->client_key != NULL;
	if (a->has_key)
		memcpy(a->key, req->client_key, KEY);
	snprintf(a->addr, sizeof a->addr, "%s", req->peer_address ? req->peer_address : "(null)");
	if (a->user_id != NULL)
		snprintf(req->user_id, sizeof req->user_id, "%s", a->user_id);
	if (a->text != NULL)
		snprintf(req->text, sizeof req->text, "%s", a->text);
	return a->status;
}

static struct zr_zmtp_config
cfg_client(int type)
{
	struct zr_zmtp_config c;

	zr_zmtp_config_default(&c, type);
	c.mechanism = ZR_MECH_CURVE;
	c.curve_public_key = client_pk;
	c.curve_secret_key = client_sk;
	c.curve_server_key = server_pk;
	c.random = rnd_fill;
	c.random_arg = &rnd_client;
	return c;
}

static struct zr_zmtp_config
cfg_server(int type, struct auth_seen *a)
{
	struct zr_zmtp_config c;

	zr_zmtp_config_default(&c, type);
	c.mechanism = ZR_MECH_CURVE;
	c.as_server = true;
	c.curve_public_key = server_pk;
	c.curve_secret_key = server_sk;
	c.random = rnd_fill;
	c.random_arg = &rnd_server;
	c.peer_address = PEER_ADDR;
	if (a != NULL) {
		c.auth = auth_cb;
		c.auth_arg = a;
	}
	return c;
}

/* ---------------------------------------------------------------- */
/* Two codecs back to back, fed directly (writable heap buffers), every
 * event recorded with its READY fields and user id. */

struct rec {
	int type;
	unsigned flags; /* ZR_ZMTP_MORE */
	uint8_t *data;
	size_t len;
	int peer_type;
	bool has_id;
	uint8_t id[256];
	size_t id_len;
	char user_id[ZR_ZMTP_USER_ID_MAX + 1];
};

struct end {
	struct zr_zmtp *z;
	struct rec *ev;
	size_t nev;
	uint8_t *in;
	size_t in_len;
	uint8_t *sent; /* everything this end wrote */
	size_t sent_len;
	int rc;
};

static void
bytes_append(uint8_t **p, size_t *n, const void *d, size_t k)
{
	*p = realloc(*p, *n + k + 1);
	cr_assert_not_null(*p);
	if (k > 0)
		memcpy(*p + *n, d, k);
	*n += k;
}

static void
end_open(struct end *e, const struct zr_zmtp_config *cfg, uint64_t now)
{
	memset(e, 0, sizeof *e);
	e->z = conn_new(cfg, now);
	e->rc = ZR_NEED_MORE;
}

static void
end_close(struct end *e)
{
	zr_zmtp_fini(e->z);
	free(e->z);
	for (size_t i = 0; i < e->nev; i++)
		free(e->ev[i].data);
	free(e->ev);
	free(e->in);
	free(e->sent);
	memset(e, 0, sizeof *e);
}

static void
end_record(struct end *e, const struct zr_zmtp_event *ev)
{
	struct rec *r;

	e->ev = realloc(e->ev, (e->nev + 1) * sizeof *e->ev);
	cr_assert_not_null(e->ev);
	r = &e->ev[e->nev++];
	memset(r, 0, sizeof *r);
	r->type = ev->type;
	r->len = ev->len;
	r->data = malloc(ev->len + 1);
	cr_assert_not_null(r->data);
	if (ev->len > 0)
		memcpy(r->data, ev->data, ev->len);
	if (ev->type == ZR_ZMTP_EV_FRAME) {
		/* Under CURVE every frame comes out whole. */
		cr_assert(ev->flags & ZR_ZMTP_FRAME_END, "a CURVE frame handed out in pieces");
		cr_assert_eq(ev->offset, 0);
		cr_assert_eq(ev->frame_size, ev->len);
		r->flags = ev->flags & ZR_ZMTP_MORE;
	}
	if (ev->type == ZR_ZMTP_EV_READY) {
		r->peer_type = ev->peer_type;
		r->has_id = ev->peer_identity != NULL;
		if (r->has_id) {
			cr_assert_leq(ev->peer_identity_len, 255);
			memcpy(r->id, ev->peer_identity, ev->peer_identity_len);
			r->id_len = ev->peer_identity_len;
		}
		cr_assert_not_null(ev->user_id);
		snprintf(r->user_id, sizeof r->user_id, "%s", ev->user_id);
	}
}

/* Moves from's pending output to to's input. Returns the octets moved. */
static size_t
end_flush(struct end *from, struct end *to)
{
	size_t total = 0;

	for (int i = 0; i < 16; i++) {
		const uint8_t *d = NULL;
		size_t n = zr_zmtp_out(from->z, &d);

		if (n == 0)
			return total;
		bytes_append(&to->in, &to->in_len, d, n);
		bytes_append(&from->sent, &from->sent_len, d, n);
		zr_zmtp_out_ack(from->z, n);
		total += n;
	}
	cr_assert_fail("zr_zmtp_out never ran dry");
	return total;
}

static void
end_feed(struct end *e, uint64_t now)
{
	while (e->in_len > 0 && e->rc >= 0) {
		struct zr_zmtp_event ev;
		size_t used = SIZE_MAX;
		int rc;

		memset(&ev, ZT_JUNK, sizeof ev);
		rc = zr_zmtp_feed(e->z, e->in, e->in_len, &used, &ev, now);
		e->rc = rc;
		if (rc < 0) {
			e->in_len = 0;
			return;
		}
		cr_assert_leq(used, e->in_len);
		if (rc == ZR_OK)
			end_record(e, &ev);
		memmove(e->in, e->in + used, e->in_len - used);
		e->in_len -= used;
		if (rc == ZR_NEED_MORE)
			return;
	}
}

static void
pump(struct end *a, struct end *b, uint64_t now)
{
	for (int i = 0; i < 32; i++) {
		size_t moved = end_flush(a, b) + end_flush(b, a);

		end_feed(a, now);
		end_feed(b, now);
		if (moved == 0)
			return;
	}
	cr_assert_fail("the link never went quiet");
}

/* The application sends one frame from `from`: the codec's own output first
 * (the contract), then the encoded frame. Returns the wire frame (free it). */
static uint8_t *
send_frame(struct end *from, struct end *to, unsigned flags, const void *data, size_t len,
           size_t *wire_len)
{
	size_t need = zr_zmtp_frame_wire_size(from->z, len);
	uint8_t *w = malloc(need);
	int n;

	cr_assert_not_null(w);
	end_flush(from, to);
	n = zr_zmtp_encode_frame(from->z, flags, data, len, w, need);
	cr_assert_eq(n, (int)need, "encode_frame: %d (%s), want %zu", n, zr_strerror(n), need);
	bytes_append(&to->in, &to->in_len, w, need);
	bytes_append(&from->sent, &from->sent_len, w, need);
	if (wire_len != NULL)
		*wire_len = need;
	return w;
}
#define SEND(from, to, flags, lit) \
	free(send_frame((from), (to), (flags), (lit), sizeof(lit) - 1, NULL))

static void
rec_frame_is(const struct end *e, size_t i, unsigned flags, const void *body, size_t n, int line)
{
	cr_assert_lt(i, e->nev, "line %d: event %zu of %zu", line, i, e->nev);
	cr_assert_eq(e->ev[i].type, ZR_ZMTP_EV_FRAME, "line %d: event %zu type %d", line, i,
	             e->ev[i].type);
	cr_assert_eq(e->ev[i].flags, flags, "line %d: flags 0x%x", line, e->ev[i].flags);
	zt_assert_bytes("frame", e->ev[i].data, e->ev[i].len, body, n, line);
}
#define REC_FRAME_IS(e, i, flags, lit) \
	rec_frame_is((e), (i), (flags), (lit), sizeof(lit) - 1, __LINE__)

/* A client and a server, handshake pumped at T0. */
struct pair {
	struct end c, s;
	struct auth_seen auth;
};

static void
pair_open_cfg(struct pair *p, const struct zr_zmtp_config *cc, const struct zr_zmtp_config *cs)
{
	end_open(&p->c, cc, T0);
	end_open(&p->s, cs, T0);
	pump(&p->c, &p->s, T0);
}

static void
pair_open(struct pair *p, int ctype, int stype)
{
	struct zr_zmtp_config cc = cfg_client(ctype), cs;

	memset(&p->auth, 0, sizeof p->auth);
	p->auth.status = 200;
	p->auth.user_id = "alice";
	cs = cfg_server(stype, &p->auth);
	pair_open_cfg(p, &cc, &cs);
}

static void
pair_ready(const struct pair *p)
{
	cr_assert_eq(zr_zmtp_state(p->c.z), ZR_ZMTP_TRAFFIC, "client: %d (%s)",
	             zr_zmtp_error(p->c.z), zr_strerror(zr_zmtp_error(p->c.z)));
	cr_assert_eq(zr_zmtp_state(p->s.z), ZR_ZMTP_TRAFFIC, "server: %d (%s)",
	             zr_zmtp_error(p->s.z), zr_strerror(zr_zmtp_error(p->s.z)));
}

static void
pair_close(struct pair *p)
{
	end_close(&p->c);
	end_close(&p->s);
}

/* ---------------------------------------------------------------- */
/* Wire units: the greeting, then one frame each. */

struct span {
	const uint8_t *p;
	size_t n;
};

static size_t
frame_header_len(const uint8_t *f)
{
	return (f[0] & ZR_ZMTP_LONG) ? 9 : 2;
}

static uint64_t
frame_body_len(const uint8_t *f)
{
	uint64_t v = 0;

	if (!(f[0] & ZR_ZMTP_LONG))
		return f[1];
	for (int i = 1; i < 9; i++)
		v = (v << 8) | f[i];
	return v;
}

static size_t
units_split(const uint8_t *p, size_t n, struct span *u, size_t max)
{
	size_t k = 0, off;

	if (n < ZR_ZMTP_GREETING_SIZE)
		return 0;
	u[k++] = (struct span){p, ZR_ZMTP_GREETING_SIZE};
	off = ZR_ZMTP_GREETING_SIZE;
	while (off < n && k < max) {
		size_t h = frame_header_len(p + off);
		size_t len = h + (size_t)frame_body_len(p + off);

		cr_assert_leq(off + len, n, "a unit runs past the transcript");
		u[k++] = (struct span){p + off, len};
		off += len;
	}
	return k;
}

/* Our metadata block size for a type without identity or extra properties. */
static size_t
meta_size(const char *type)
{
	return 1 + strlen("Socket-Type") + 4 + strlen(type);
}

static bool
contains(const void *hay, size_t n, const void *needle, size_t k)
{
	const uint8_t *h = hay;

	for (size_t i = 0; k <= n && i <= n - k; i++)
		if (memcmp(h + i, needle, k) == 0)
			return true;
	return false;
}

static bool
all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* ---------------------------------------------------------------- */
/* Handshake. */

static bool
sends_identity(int type)
{
	return type == ZR_REQ || type == ZR_DEALER || type == ZR_ROUTER;
}

Test(zmtp_conn_curve, completes_the_handshake_for_every_socket_type_pair)
{
	static const struct {
		int client, server;
	} pairs[] = {
		{ZR_PUSH, ZR_PULL}, {ZR_PULL, ZR_PUSH},     {ZR_DEALER, ZR_ROUTER},
		{ZR_REQ, ZR_REP},   {ZR_SUB, ZR_PUB},       {ZR_XSUB, ZR_XPUB},
		{ZR_PAIR, ZR_PAIR}, {ZR_ROUTER, ZR_DEALER},
	};

	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		int ct = pairs[i].client, st = pairs[i].server;
		struct zr_zmtp_config cc = cfg_client(ct), cs;
		struct pair p;
		const struct rec *rc, *rs;
		const uint8_t *v;
		size_t vlen;
		const char *text = NULL;

		cr_log_info("%s client, %s server", zr_socktype_name(ct), zr_socktype_name(st));
		memset(&p.auth, 0, sizeof p.auth);
		p.auth.status = 200;
		p.auth.user_id = "alice";
		cs = cfg_server(st, &p.auth);
		cc.routing_id = (const uint8_t *)"client-7";
		cc.routing_id_len = 8;
		pair_open_cfg(&p, &cc, &cs);
		pair_ready(&p);
		cr_assert(zr_zmtp_encrypts(p.c.z));
		cr_assert(zr_zmtp_encrypts(p.s.z));
		cr_assert_eq(zr_zmtp_peer_type(p.c.z), st);
		cr_assert_eq(zr_zmtp_peer_type(p.s.z), ct);

		/* The authenticator: asked once, about this client, from this address. */
		cr_assert_eq(p.auth.calls, 1);
		cr_assert_eq(p.auth.mechanism, ZR_MECH_CURVE);
		cr_assert(p.auth.has_key);
		cr_assert_arr_eq(p.auth.key, client_pk, KEY);
		cr_assert_str_eq(p.auth.addr, PEER_ADDR);
		cr_assert_eq(zr_zmtp_auth_status(p.s.z, &text), 200);
		cr_assert_str_eq(text, "");
		cr_assert_eq(zr_zmtp_auth_status(p.c.z, NULL), 0, "a client asks no authenticator");

		/* The client: one READY from the server, no user id. */
		cr_assert_eq(p.c.nev, 1);
		rc = &p.c.ev[0];
		cr_assert_eq(rc->type, ZR_ZMTP_EV_READY);
		cr_assert_eq(rc->peer_type, st);
		cr_assert_eq(rc->has_id, sends_identity(st));
		cr_assert_eq(rc->id_len, 0);
		cr_assert_str_eq(rc->user_id, "");
		cr_assert_eq(zr_zmtp_props_find(rc->data, rc->len, "Socket-Type", &v, &vlen), 0);
		zt_assert_bytes("Socket-Type", v, vlen, zr_socktype_name(st),
		                strlen(zr_socktype_name(st)), __LINE__);

		/* The server: one READY with the client's identity and the user id. */
		cr_assert_eq(p.s.nev, 1);
		rs = &p.s.ev[0];
		cr_assert_eq(rs->type, ZR_ZMTP_EV_READY);
		cr_assert_eq(rs->peer_type, ct);
		cr_assert_eq(rs->has_id, sends_identity(ct));
		if (rs->has_id)
			zt_assert_bytes("identity", rs->id, rs->id_len, "client-7", 8, __LINE__);
		cr_assert_str_eq(rs->user_id, "alice");
		cr_assert_eq(zr_zmtp_props_find(rs->data, rs->len, "Socket-Type", &v, &vlen), 0);
		zt_assert_bytes("Socket-Type", v, vlen, zr_socktype_name(ct),
		                strlen(zr_socktype_name(ct)), __LINE__);
		pair_close(&p);
	}
}

Test(zmtp_conn_curve, writes_each_command_with_its_exact_size)
{
	struct pair p;
	struct span cu[8], su[8];
	struct zr_zmtp_greeting g;
	size_t nc, ns;
	const uint8_t *b;
	static const uint8_t one[8] = {0, 0, 0, 0, 0, 0, 0, 1}, two[8] = {0, 0, 0, 0, 0, 0, 0, 2};

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	nc = units_split(p.c.sent, p.c.sent_len, cu, 8);
	ns = units_split(p.s.sent, p.s.sent_len, su, 8);
	cr_assert_eq(nc, 3, "client wrote %zu units", nc);
	cr_assert_eq(ns, 3, "server wrote %zu units", ns);

	/* Greetings: CURVE, as-server 1 only for the server. */
	cr_assert_eq(zr_zmtp_greeting_parse(cu[0].p, 64, &g), ZR_OK);
	cr_assert_eq(g.mechanism, ZR_MECH_CURVE);
	cr_assert_not(g.as_server);
	zt_assert_bytes("client greeting", cu[0].p, 64, GREETING("\x03\x01", MECH_CURVE, "\x00"),
	                64, __LINE__);
	cr_assert_eq(zr_zmtp_greeting_parse(su[0].p, 64, &g), ZR_OK);
	cr_assert_eq(g.mechanism, ZR_MECH_CURVE);
	cr_assert(g.as_server);
	zt_assert_bytes("server greeting", su[0].p, 64, GREETING("\x03\x01", MECH_CURVE, "\x01"),
	                64, __LINE__);

	/* HELLO: 200 octets, version 1.0, 72 zero octets of padding, nonce 1. */
	cr_assert_eq(cu[1].n, 2 + 200);
	cr_assert_eq(cu[1].p[0], 0x04);
	cr_assert_eq(cu[1].p[1], 200);
	b = cu[1].p + 2;
	zt_assert_bytes("HELLO name and version", b, 8,
	                "\x05"
	                "HELLO"
	                "\x01\x00",
	                8, __LINE__);
	cr_assert(all_zero(b + 8, 72));
	cr_assert_arr_eq(b + 112, one, 8);

	/* WELCOME: 168 octets. */
	cr_assert_eq(su[1].n, 2 + 168);
	cr_assert_eq(su[1].p[0], 0x04);
	cr_assert_eq(su[1].p[1], 168);
	zt_assert_bytes("WELCOME name", su[1].p + 2, 8,
	                "\x07"
	                "WELCOME",
	                8, __LINE__);

	/* INITIATE: 257 + metadata, so a long command frame; nonce 2. */
	cr_assert_eq(cu[2].p[0], 0x06);
	cr_assert_eq(frame_body_len(cu[2].p), 257 + meta_size("PUSH"));
	cr_assert_eq(cu[2].n, 9 + 257 + meta_size("PUSH"));
	b = cu[2].p + 9;
	zt_assert_bytes("INITIATE name", b, 9,
	                "\x08"
	                "INITIATE",
	                9, __LINE__);
	cr_assert_arr_eq(b + 105, two, 8);

	/* READY: 30 + metadata; the server's first short nonce. */
	cr_assert_eq(su[2].p[0], 0x04);
	cr_assert_eq(su[2].p[1], 30 + meta_size("PULL"));
	cr_assert_eq(su[2].n, 2 + 30 + meta_size("PULL"));
	zt_assert_bytes("READY name", su[2].p + 2, 6,
	                "\x05"
	                "READY",
	                6, __LINE__);
	cr_assert_arr_eq(su[2].p + 2 + 6, one, 8);

	/* The metadata travels only inside boxes. */
	cr_assert_not(contains(p.c.sent, p.c.sent_len, "Socket-Type", 11));
	cr_assert_not(contains(p.s.sent, p.s.sent_len, "Socket-Type", 11));
	pair_close(&p);
}

Test(zmtp_conn_curve, sizes_initiate_and_ready_by_the_metadata_they_carry)
{
	static const struct zr_zmtp_prop props[] = {{"X-Colour", (const uint8_t *)"teal", 4}};
	struct zr_zmtp_config cc = cfg_client(ZR_DEALER), cs = cfg_server(ZR_ROUTER, NULL);
	struct pair p;
	struct span cu[8], su[8];
	/* DEALER: Socket-Type, Identity "d-1", X-Colour; ROUTER: Socket-Type, empty Identity. */
	size_t cmeta = meta_size("DEALER") + (1 + 8 + 4 + 3) + (1 + 8 + 4 + 4);
	size_t smeta = meta_size("ROUTER") + (1 + 8 + 4);

	cc.routing_id = (const uint8_t *)"d-1";
	cc.routing_id_len = 3;
	cc.props = props;
	cc.props_count = 1;
	pair_open_cfg(&p, &cc, &cs);
	pair_ready(&p);
	cr_assert_eq(units_split(p.c.sent, p.c.sent_len, cu, 8), 3);
	cr_assert_eq(units_split(p.s.sent, p.s.sent_len, su, 8), 3);
	cr_assert_eq(frame_body_len(cu[2].p), 257 + cmeta);
	cr_assert_eq(frame_body_len(su[2].p), 30 + smeta);
	cr_assert_eq(p.s.nev, 1);
	cr_assert_eq(p.s.ev[0].len, cmeta);
	cr_assert_eq(p.c.ev[0].len, smeta);
	pair_close(&p);
}

/* ---------------------------------------------------------------- */
/* Traffic. */

static void
message_wire_is(const uint8_t *w, size_t n, size_t plain_len, int line)
{
	size_t body = 33 + plain_len;

	if (body <= 255) {
		cr_assert_eq(w[0], 0x00, "line %d: flags 0x%02x", line, w[0]);
		cr_assert_eq(w[1], body, "line %d", line);
		cr_assert_eq(n, 2 + body, "line %d", line);
	} else {
		cr_assert_eq(w[0], 0x02, "line %d: flags 0x%02x", line, w[0]);
		cr_assert_eq(frame_body_len(w), body, "line %d", line);
		cr_assert_eq(n, 9 + body, "line %d", line);
	}
	zt_assert_bytes("MESSAGE name", w + frame_header_len(w), 8,
	                "\x07"
	                "MESSAGE",
	                8, line);
}

Test(zmtp_conn_curve, carries_frames_both_ways_with_more_empty_and_large_ones)
{
	const size_t big_len = 100 * 1024;
	uint8_t *big = malloc(big_len), *w;
	struct pair p;
	size_t n;

	cr_assert_not_null(big);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (uint8_t)(i * 7 + 1);
	pair_open(&p, ZR_DEALER, ZR_ROUTER);
	pair_ready(&p);

	w = send_frame(&p.c, &p.s, ZR_ZMTP_MORE, "", 0, &n);
	message_wire_is(w, n, 0, __LINE__);
	free(w);
	w = send_frame(&p.c, &p.s, ZR_ZMTP_MORE, "req", 3, &n);
	message_wire_is(w, n, 3, __LINE__);
	cr_assert_not(contains(w, n, "req", 3));
	free(w);
	w = send_frame(&p.c, &p.s, 0, big, big_len, &n);
	message_wire_is(w, n, big_len, __LINE__);
	cr_assert_not(contains(w, n, big, 64), "the plaintext is on the wire");
	free(w);
	SEND(&p.s, &p.c, ZR_ZMTP_MORE, "");
	SEND(&p.s, &p.c, 0, "reply");
	pump(&p.c, &p.s, T0);

	cr_assert_eq(p.s.nev, 4);
	REC_FRAME_IS(&p.s, 1, ZR_ZMTP_MORE, "");
	REC_FRAME_IS(&p.s, 2, ZR_ZMTP_MORE, "req");
	rec_frame_is(&p.s, 3, 0, big, big_len, __LINE__);
	cr_assert_eq(p.c.nev, 3);
	REC_FRAME_IS(&p.c, 1, ZR_ZMTP_MORE, "");
	REC_FRAME_IS(&p.c, 2, 0, "reply");
	cr_assert_eq(zr_zmtp_error(p.c.z), 0);
	cr_assert_eq(zr_zmtp_error(p.s.z), 0);
	pair_close(&p);
	free(big);
}

Test(zmtp_conn_curve, sizes_the_wire_frame_with_the_box_and_the_header)
{
	struct pair p;
	uint8_t body[300] = {0}, w[400];

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	cr_assert_eq(zr_zmtp_frame_wire_size(p.c.z, 0), 2 + 33);
	cr_assert_eq(zr_zmtp_frame_wire_size(p.c.z, 222), 2 + 255);
	cr_assert_eq(zr_zmtp_frame_wire_size(p.c.z, 223), 9 + 256);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0, body, 222, w, sizeof w), 2 + 255);
	cr_assert_eq(w[0], 0x00);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0, body, 223, w, sizeof w), 9 + 256);
	cr_assert_eq(w[0], 0x02);
	pair_close(&p);
}

Test(zmtp_conn_curve, refuses_to_encode_out_of_traffic_or_with_bad_arguments)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&cc, T0);
	struct pair p;
	uint8_t w[64];

	/* Before the handshake nothing is encrypted and nothing may be encoded. */
	cr_assert_not(zr_zmtp_encrypts(z));
	cr_assert_eq(zr_zmtp_frame_wire_size(z, 5), 2 + 5);
	cr_assert_eq(zr_zmtp_encode_frame(z, 0, (const uint8_t *)"hello", 5, w, sizeof w), -EINVAL);
	zr_zmtp_fini(z);
	free(z);

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, ZR_ZMTP_MORE | ZR_ZMTP_COMMAND,
	                                  (const uint8_t *)"\x04PING\0\0", 7, w, sizeof w),
	             -EINVAL);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0x08, (const uint8_t *)"x", 1, w, sizeof w),
	             -EINVAL);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0, NULL, 1, w, sizeof w), -EINVAL);
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0, (const uint8_t *)"hello", 5, w, 2 + 33 + 4),
	             -ENOBUFS);
	/* None of these failures is sticky, and the frames that follow still open. */
	cr_assert_eq(zr_zmtp_error(p.c.z), 0);
	SEND(&p.c, &p.s, 0, "hello");
	pump(&p.c, &p.s, T0);
	cr_assert_eq(p.s.nev, 2);
	REC_FRAME_IS(&p.s, 1, 0, "hello");
	pair_close(&p);
}

Test(zmtp_conn_curve, heartbeats_travel_inside_messages_and_leak_no_event)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	const uint8_t *d;
	struct pair p;
	size_t n;

	cc.heartbeat_ivl_ms = 1000;
	cc.heartbeat_timeout_ms = 3000;
	cc.heartbeat_ttl_ms = 5000;
	pair_open_cfg(&p, &cc, &cs);
	pair_ready(&p);
	cr_assert_eq(zr_zmtp_deadline(p.c.z), T0 + 1000);
	cr_assert_eq(zr_zmtp_tick(p.c.z, T0 + 1000), 0);

	/* PING (name 5, TTL 2) in a MESSAGE: a data frame, never a plaintext command. */
	n = zr_zmtp_out(p.c.z, &d);
	cr_assert_eq(n, 2 + 33 + 7);
	message_wire_is(d, n, 7, __LINE__);
	cr_assert_not(contains(d, n, "PING", 4));
	end_flush(&p.c, &p.s);
	end_feed(&p.s, T0 + 1000);
	cr_assert_eq(p.s.rc, ZR_NEED_MORE);
	cr_assert_eq(p.s.nev, 1, "the PING leaked an event");

	/* PONG (name 5, no context) in a MESSAGE. */
	n = zr_zmtp_out(p.s.z, &d);
	cr_assert_eq(n, 2 + 33 + 5);
	message_wire_is(d, n, 5, __LINE__);
	cr_assert_not(contains(d, n, "PONG", 4));
	end_flush(&p.s, &p.c);
	end_feed(&p.c, T0 + 1000);
	cr_assert_eq(p.c.rc, ZR_NEED_MORE);
	cr_assert_eq(p.c.nev, 1, "the PONG leaked an event");

	/* The PONG was traffic: no timeout where the PING's would have been. */
	cr_assert_eq(zr_zmtp_tick(p.c.z, T0 + 1000 + 3000 - 1), 0);
	/* The server read the TTL inside the box: 5 s of silence end it. */
	cr_assert_eq(zr_zmtp_tick(p.s.z, T0 + 1000 + 5000 - 1), 0);
	cr_assert_eq(zr_zmtp_tick(p.s.z, T0 + 1000 + 5000), -ZR_EHEARTBEAT_TIMEOUT);
	pair_close(&p);
}

Test(zmtp_conn_curve, subscribe_and_cancel_travel_inside_messages)
{
	static const int pubs[] = {ZR_XPUB, ZR_PUB};

	for (size_t i = 0; i < 2; i++) {
		struct pair p;
		uint8_t *w;
		size_t n;

		pair_open(&p, ZR_SUB, pubs[i]);
		pair_ready(&p);
		w = send_frame(&p.c, &p.s, ZR_ZMTP_COMMAND,
		               "\x09"
		               "SUBSCRIBE"
		               "topic",
		               15, &n);
		message_wire_is(w, n, 15, __LINE__); /* a data frame: COMMAND is inside the box */
		free(w);
		SEND(&p.c, &p.s, ZR_ZMTP_COMMAND,
		     "\x06"
		     "CANCEL"
		     "topic");
		SEND(&p.c, &p.s, ZR_ZMTP_COMMAND,
		     "\x09"
		     "SUBSCRIBE");
		SEND(&p.s, &p.c, 0, "topic news");
		pump(&p.c, &p.s, T0);
		cr_assert_eq(p.s.nev, 4);
		cr_assert_eq(p.s.ev[1].type, ZR_ZMTP_EV_SUBSCRIBE);
		zt_assert_bytes("topic", p.s.ev[1].data, p.s.ev[1].len, "topic", 5, __LINE__);
		cr_assert_eq(p.s.ev[2].type, ZR_ZMTP_EV_CANCEL);
		zt_assert_bytes("topic", p.s.ev[2].data, p.s.ev[2].len, "topic", 5, __LINE__);
		cr_assert_eq(p.s.ev[3].type, ZR_ZMTP_EV_SUBSCRIBE);
		cr_assert_eq(p.s.ev[3].len, 0);
		cr_assert_eq(p.c.nev, 2);
		REC_FRAME_IS(&p.c, 1, 0, "topic news");
		pair_close(&p);
	}
}

Test(zmtp_conn_curve, applies_max_msg_size_to_the_plaintext)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	uint8_t body[101];
	struct pair p;
	size_t sent;

	memset(body, 'm', sizeof body);
	cs.max_msg_size = 100;
	pair_open_cfg(&p, &cc, &cs);
	pair_ready(&p);
	free(send_frame(&p.c, &p.s, 0, body, 100, NULL));
	free(send_frame(&p.c, &p.s, ZR_ZMTP_MORE, body, 60, NULL));
	free(send_frame(&p.c, &p.s, 0, body, 40, NULL));
	pump(&p.c, &p.s, T0);
	cr_assert_eq(p.s.nev, 4, "every frame up to the limit is delivered");
	cr_assert_eq(zr_zmtp_error(p.s.z), 0);

	sent = p.s.sent_len;
	free(send_frame(&p.c, &p.s, 0, body, 101, NULL));
	pump(&p.c, &p.s, T0);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_ETOOLARGE);
	cr_assert_eq(p.s.nev, 4);
	cr_assert_eq(p.s.sent_len, sent, "ERROR in traffic");
	pair_close(&p);
}

/* Empty MORE boxes pass the size check for ever: the frame count stops them.
 * The same bytes replayed into a fresh server under every chunking give the
 * same verdict. */
Test(zmtp_conn_curve, applies_max_msg_frames_to_the_boxes_of_a_message)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct zt_target ts;
	struct zt_run r;
	struct pair p;
	size_t sent;

	cs.max_msg_frames = 3;
	pair_open_cfg(&p, &cc, &cs);
	pair_ready(&p);
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	SEND(&p.c, &p.s, 0, "");
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "a");
	SEND(&p.c, &p.s, 0, "b");
	pump(&p.c, &p.s, T0);
	cr_assert_eq(zr_zmtp_error(p.s.z), 0);
	cr_assert_eq(p.s.nev, 6, "READY and every frame up to the limit");

	sent = p.s.sent_len;
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	SEND(&p.c, &p.s, ZR_ZMTP_MORE, "");
	pump(&p.c, &p.s, T0);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_ETOOMANYFRAMES);
	cr_assert_eq(p.s.nev, 9, "the three frames within the limit came out");
	cr_assert_eq(p.s.sent_len, sent, "no ERROR in traffic (as for ETOOLARGE)");

	ts = zt_conn_target(&cs);
	zt_check_splits(&ts, p.c.sent, p.c.sent_len, __LINE__, &r);
	cr_assert_eq(r.rc, -ZR_ETOOMANYFRAMES, "%d (%s)", r.rc, zr_strerror(r.rc));
	cr_assert_eq(r.sticky_rc, -ZR_ETOOMANYFRAMES);
	cr_assert_eq(r.nev, 9);
	for (size_t k = 1; k < r.nev; k++)
		cr_assert_eq(r.ev[k].type, ZR_ZMTP_EV_FRAME);
	cr_assert_eq(r.ev[8].flags, ZR_ZMTP_MORE);
	zt_run_free(&r);
	pair_close(&p);
}

Test(zmtp_conn_curve, wants_a_whole_message_box_before_it_opens_one)
{
	struct pair p;
	uint8_t *w;
	size_t n, used;
	struct zr_zmtp_event ev;

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	w = send_frame(&p.c, &p.s, 0, "hello", 5, &n);
	/* Everything but the last octet: nothing consumed, want() the whole frame. */
	cr_assert_eq(zr_zmtp_feed(p.s.z, w, n - 1, &used, &ev, T0), ZR_NEED_MORE);
	cr_assert_eq(used, 0);
	cr_assert_eq(zr_zmtp_want(p.s.z, w, n - 1), n);
	cr_assert_eq(zr_zmtp_feed(p.s.z, w, n, &used, &ev, T0), ZR_OK);
	cr_assert_eq(used, n);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_FRAME);
	cr_assert(ev.data >= w && ev.data + ev.len <= w + n,
	          "the plaintext is in place, inside buf");
	zt_assert_bytes("frame", ev.data, ev.len, "hello", 5, __LINE__);
	free(w);
	pair_close(&p);
}

/* ---------------------------------------------------------------- */
/* Refusals between two codecs. */

Test(zmtp_conn_curve, refusal_by_the_authenticator_reaches_the_client_as_error_400)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs;
	struct auth_seen a = {.status = 400, .user_id = "never", .text = "unknown key"};
	struct span cu[8], su[8];
	const char *text = NULL;
	struct pair p;

	cs = cfg_server(ZR_PULL, &a);
	pair_open_cfg(&p, &cc, &cs);
	cr_assert_eq(a.calls, 1);
	cr_assert_arr_eq(a.key, client_pk, KEY);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_EAUTH);
	cr_assert_eq(zr_zmtp_auth_status(p.s.z, &text), 400);
	cr_assert_str_eq(text, "unknown key");
	cr_assert_eq(p.s.nev, 0, "a refused client must not be READY");
	/* The server: greeting, WELCOME, then a plaintext ERROR "400". */
	cr_assert_eq(units_split(p.s.sent, p.s.sent_len, su, 8), 3);
	zt_assert_bytes("ERROR", su[2].p, su[2].n, ERROR_400, sizeof ERROR_400 - 1, __LINE__);
	/* The client: PEER_ERROR "400", and it sent no ERROR of its own. */
	cr_assert_eq(zr_zmtp_error(p.c.z), -ZR_EPEERERROR);
	cr_assert_eq(p.c.nev, 1);
	cr_assert_eq(p.c.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	zt_assert_bytes("reason", p.c.ev[0].data, p.c.ev[0].len, "400", 3, __LINE__);
	cr_assert_eq(units_split(p.c.sent, p.c.sent_len, cu, 8), 3,
	             "greeting, HELLO, INITIATE only");
	cr_assert_eq(zr_zmtp_peer_type(p.c.z), -1);
	pair_close(&p);
}

/* ERROR's reason as conn.c writes it: zr_strerror, spaces and controls as '-'. */
static void
vchar_reason(char *out, size_t cap, int err)
{
	snprintf(out, cap, "%s", zr_strerror(err));
	for (char *c = out; *c != '\0'; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			*c = '-';
}

Test(zmtp_conn_curve, a_client_with_another_server_key_is_told_the_box_did_not_open)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs;
	struct auth_seen a = {.status = 200};
	struct span cu[8], su[8];
	char reason[128];
	struct pair p;

	cc.curve_server_key = other_pk;
	cs = cfg_server(ZR_PULL, &a);
	pair_open_cfg(&p, &cc, &cs);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_ECURVEBOX);
	cr_assert_eq(p.s.nev, 0);
	cr_assert_eq(a.calls, 0, "the authenticator is asked only after INITIATE");
	vchar_reason(reason, sizeof reason, -ZR_ECURVEBOX);
	cr_assert_eq(units_split(p.s.sent, p.s.sent_len, su, 8), 2, "greeting and ERROR only");
	cr_assert_eq(su[1].p[0], 0x04);
	zt_assert_bytes("ERROR", su[1].p + 2, 6,
	                "\x05"
	                "ERROR",
	                6, __LINE__);
	zt_assert_bytes("reason", su[1].p + 9, su[1].p[8], reason, strlen(reason), __LINE__);

	cr_assert_eq(zr_zmtp_error(p.c.z), -ZR_EPEERERROR);
	cr_assert_eq(p.c.nev, 1);
	cr_assert_eq(p.c.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	zt_assert_bytes("reason", p.c.ev[0].data, p.c.ev[0].len, reason, strlen(reason), __LINE__);
	cr_assert_eq(units_split(p.c.sent, p.c.sent_len, cu, 8), 2, "greeting and HELLO only");
	pair_close(&p);
}

Test(zmtp_conn_curve, incompatible_types_fail_in_initiate_and_nothing_is_delivered)
{
	struct pair p;

	pair_open(&p, ZR_PUSH, ZR_PUB);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_EINCOMPATIBLE);
	cr_assert_eq(p.s.nev, 0);
	cr_assert_eq(zr_zmtp_error(p.c.z), -ZR_EPEERERROR);
	cr_assert_eq(p.c.nev, 1);
	cr_assert_eq(p.c.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	pair_close(&p);
}

/* ---------------------------------------------------------------- */
/* Key material. */

static bool
holds(const struct zr_zmtp *z, const uint8_t key[KEY])
{
	return contains(z, sizeof *z, key, KEY);
}

Test(zmtp_conn_curve, keeps_no_secret_key_once_in_traffic)
{
	uint8_t cn_sk[KEY], sn_sk[KEY];
	struct pair p;

	rnd_fill(&rnd_client, cn_sk, KEY);
	rnd_fill(&rnd_server, sn_sk, KEY);
	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	cr_assert_not(holds(p.c.z, client_sk), "the client still holds its long-term secret key");
	cr_assert_not(holds(p.c.z, cn_sk), "the client still holds its transient secret key");
	cr_assert_not(holds(p.s.z, server_sk), "the server still holds its long-term secret key");
	cr_assert_not(holds(p.s.z, sn_sk), "the server still holds its transient secret key");
	pair_close(&p);
}

Test(zmtp_conn_curve, holds_its_secret_key_during_the_handshake)
{
	struct zr_zmtp_config cs = cfg_server(ZR_PULL, NULL);
	struct zr_zmtp *z = conn_new(&cs, T0);

	cr_assert(holds(z, server_sk), "control: the search finds a key that is there");
	zr_zmtp_fini(z);
	cr_assert_not(holds(z, server_sk));
	free(z);
}

Test(zmtp_conn_curve, fini_wipes_the_mechanism_state)
{
	struct pair p;

	pair_open(&p, ZR_DEALER, ZR_ROUTER);
	pair_ready(&p);
	cr_assert_not(all_zero(p.c.z->mech.bytes, sizeof p.c.z->mech.bytes));
	zr_zmtp_fini(p.c.z);
	zr_zmtp_fini(p.s.z);
	cr_assert(all_zero(p.c.z->mech.bytes, sizeof p.c.z->mech.bytes));
	cr_assert(all_zero(p.s.z->mech.bytes, sizeof p.s.z->mech.bytes));
	zr_zmtp_fini(p.c.z); /* idempotent */
	cr_assert(all_zero(p.c.z->mech.bytes, sizeof p.c.z->mech.bytes));
	pair_close(&p);
}

Test(zmtp_conn_curve, a_failed_handshake_wipes_the_mechanism_state)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct pair p;

	cc.curve_server_key = other_pk;
	pair_open_cfg(&p, &cc, &cs);
	cr_assert_eq(zr_zmtp_state(p.s.z), ZR_ZMTP_FAILED);
	cr_assert_eq(zr_zmtp_state(p.c.z), ZR_ZMTP_FAILED);
	cr_assert(all_zero(p.s.z->mech.bytes, sizeof p.s.z->mech.bytes));
	cr_assert(all_zero(p.c.z->mech.bytes, sizeof p.c.z->mech.bytes));
	pair_close(&p);
}

Test(zmtp_conn_curve, copies_the_keys_at_init)
{
	uint8_t cpk[KEY], csk[KEY], spk[KEY], ssk[KEY], srv[KEY];
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct pair p;

	memcpy(cpk, client_pk, KEY);
	memcpy(csk, client_sk, KEY);
	memcpy(srv, server_pk, KEY);
	memcpy(spk, server_pk, KEY);
	memcpy(ssk, server_sk, KEY);
	cc.curve_public_key = cpk;
	cc.curve_secret_key = csk;
	cc.curve_server_key = srv;
	cs.curve_public_key = spk;
	cs.curve_secret_key = ssk;
	end_open(&p.c, &cc, T0);
	end_open(&p.s, &cs, T0);
	memset(cpk, 0xee, KEY);
	memset(csk, 0xee, KEY);
	memset(srv, 0xee, KEY);
	memset(spk, 0xee, KEY);
	memset(ssk, 0xee, KEY);
	pump(&p.c, &p.s, T0);
	pair_ready(&p);
	pair_close(&p);
}

Test(zmtp_conn_curve, a_server_derives_its_public_key_from_the_secret_one)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct pair p;

	cs.curve_public_key = NULL;
	pair_open_cfg(&p, &cc, &cs);
	pair_ready(&p);
	pair_close(&p);
}

Test(zmtp_conn_curve, refuses_a_configuration_without_its_keys)
{
	struct zr_zmtp_config c;
	struct zr_zmtp *z = malloc(sizeof *z);

	cr_assert_not_null(z);
	c = cfg_client(ZR_PUSH);
	c.curve_server_key = NULL;
	cr_assert_eq(zr_zmtp_init(z, &c, T0), -EINVAL);
	c = cfg_client(ZR_PUSH);
	c.curve_public_key = NULL;
	cr_assert_eq(zr_zmtp_init(z, &c, T0), -EINVAL);
	c = cfg_server(ZR_PULL, NULL);
	c.curve_secret_key = NULL;
	cr_assert_eq(zr_zmtp_init(z, &c, T0), -EINVAL);
	free(z);
}

/* ---------------------------------------------------------------- */
/* abort: a server may say why in the handshake; a client never sends ERROR. */

Test(zmtp_conn_curve, abort_in_the_handshake_queues_error_only_on_a_server)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct end c, s;
	const uint8_t *d;
	size_t n;

	end_open(&c, &cc, T0);
	end_open(&s, &cs, T0);
	end_flush(&c, &s);
	end_flush(&s, &c);
	end_feed(&c, T0); /* the client is in the handshake: HELLO queued */
	end_feed(&s, T0);
	cr_assert_eq(zr_zmtp_state(c.z), ZR_ZMTP_HANDSHAKE);
	cr_assert_eq(zr_zmtp_state(s.z), ZR_ZMTP_HANDSHAKE);
	end_flush(&c, &s);

	cr_assert_eq(zr_zmtp_abort(s.z, -ETIMEDOUT, "bye"), -ETIMEDOUT);
	n = zr_zmtp_out(s.z, &d);
	zt_assert_bytes("server ERROR", d, n,
	                "\x04\x0a"
	                "\x05"
	                "ERROR"
	                "\x03"
	                "bye",
	                12, __LINE__);

	cr_assert_eq(zr_zmtp_abort(c.z, -ETIMEDOUT, "bye"), -ETIMEDOUT);
	n = zr_zmtp_out(c.z, &d);
	cr_assert_eq(n, 0, "a CURVE client queued %zu octets: %s", n, zt_hex(d, n));
	end_close(&c);
	end_close(&s);
}

Test(zmtp_conn_curve, abort_in_traffic_queues_nothing)
{
	struct pair p;
	const uint8_t *d;

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	cr_assert_eq(zr_zmtp_abort(p.s.z, -ETIMEDOUT, NULL), -ETIMEDOUT);
	cr_assert_eq(zr_zmtp_out(p.s.z, &d), 0);
	cr_assert_eq(zr_zmtp_abort(p.c.z, -ETIMEDOUT, NULL), -ETIMEDOUT);
	cr_assert_eq(zr_zmtp_out(p.c.z, &d), 0);
	cr_assert(all_zero(p.c.z->mech.bytes, sizeof p.c.z->mech.bytes));
	pair_close(&p);
}

/* ---------------------------------------------------------------- */
/* Transcripts: what an honest PUSH client and PULL server write, recorded
 * once (fixed keys and randomness make every run write the same), cut into
 * units: the greeting, two handshake commands, then five traffic frames each
 * side encodes without delivering them:
 *   T1 "hello" MORE, T2 "world", T3 "a" MORE, T4 PING (a command inside the
 *   box), T5 PONG flagged COMMAND and MORE inside the box, T6 a command
 *   with name length 0 inside the box, T7 a PING one octet short inside it. */

enum unit {
	U_END = 0,
	U_G,
	U_HS1,
	U_HS2,
	U_T1,
	U_T2,
	U_T3,
	U_T4,
	U_T5,
	U_T6,
	U_T7,
	U_COUNT,
	U_LIT,
	U_FORGED
};
enum script_kind {
	SC_HONEST = 1,
	SC_WRONG_KEY
};

struct script {
	uint8_t *c_sent, *s_sent;
	size_t c_len, s_len;
	struct span cu[U_COUNT], su[U_COUNT]; /* indexed by enum unit */
};

/*
 * T4 cannot come out of zr_zmtp_encode_frame, which refuses MORE with
 * COMMAND as it should; to see what a receiver does with one, it is written
 * with the CurveZMQ core under the sender's codec.
 */
static void
send_crafted(struct end *from, struct end *to, uint8_t flags, const void *data, size_t len)
{
	uint8_t w[2 + ZR__CURVE_MESSAGE_MIN + 64];
	struct zr__curve *c = (struct zr__curve *)(void *)from->z->mech.bytes;
	int n;

	cr_assert_leq(len, 64);
	end_flush(from, to);
	w[0] = 0x00;
	w[1] = (uint8_t)(ZR__CURVE_MESSAGE_MIN + len);
	n = zr__curve_encode_message(c, flags, data, len, w + 2, sizeof w - 2);
	cr_assert_eq(n, (int)(ZR__CURVE_MESSAGE_MIN + len));
	bytes_append(&from->sent, &from->sent_len, w, 2 + (size_t)n);
}

static void
script_traffic(struct end *from, struct end *to)
{
	SEND(from, to, ZR_ZMTP_MORE, "hello");
	SEND(from, to, 0, "world");
	SEND(from, to, ZR_ZMTP_MORE, "a");
	SEND(from, to, ZR_ZMTP_COMMAND,
	     "\x04"
	     "PING"
	     "\x00\x00");
	send_crafted(from, to, 0x03,
	             "\x04"
	             "PONG",
	             5);
	SEND(from, to, ZR_ZMTP_COMMAND, "\x00");
	SEND(from, to, ZR_ZMTP_COMMAND,
	     "\x04"
	     "PING"
	     "\x00");
}

static void
script_units(const uint8_t *p, size_t n, struct span *u)
{
	struct span tmp[U_COUNT];
	size_t k = units_split(p, n, tmp, U_COUNT - 1);

	memset(u, 0, U_COUNT * sizeof *u);
	for (size_t i = 0; i < k; i++)
		u[U_G + i] = tmp[i];
}

static void
script_make(struct script *sc, int kind)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct pair p;

	memset(sc, 0, sizeof *sc);
	if (kind == SC_WRONG_KEY)
		cc.curve_server_key = other_pk;
	pair_open_cfg(&p, &cc, &cs);
	if (kind == SC_HONEST) {
		pair_ready(&p);
		script_traffic(&p.c, &p.s);
		script_traffic(&p.s, &p.c);
	}
	bytes_append(&sc->c_sent, &sc->c_len, p.c.sent, p.c.sent_len);
	bytes_append(&sc->s_sent, &sc->s_len, p.s.sent, p.s.sent_len);
	pair_close(&p);
	script_units(sc->c_sent, sc->c_len, sc->cu);
	script_units(sc->s_sent, sc->s_len, sc->su);
	if (kind == SC_HONEST)
		cr_assert(sc->cu[U_T7].n > 0 && sc->su[U_T7].n > 0, "a transcript is short");
}

static void
script_free(struct script *sc)
{
	free(sc->c_sent);
	free(sc->s_sent);
	memset(sc, 0, sizeof *sc);
}

/* The client's metadata (PUSH) as INITIATE carries it. */
#define META_PUSH PROP_ST("\x04", "PUSH")

/*
 * An INITIATE forged with libsodium from the honest WELCOME: the client's
 * transient secret is what the fixed randomness gives, so the cookie and S'
 * can be read back. The vouch names vouch_server as the server (the real
 * one, or another) and is boxed with vouch_secret (the client's, or one
 * that does not go with the client's public key). Returns the wire frame's
 * length.
 */
static size_t
forge_initiate(const struct script *sc, const uint8_t vouch_server[KEY],
               const uint8_t vouch_secret[KEY], uint8_t *out, size_t cap)
{
	const uint8_t *w = sc->su[U_HS1].p + 2;
	static const uint8_t meta[] = META_PUSH;
	uint8_t cn_sk[KEY], cn_pk[KEY], nonce[24], wplain[128], vplain[64];
	uint8_t inner[128 + sizeof meta - 1], body[113 + 16 + sizeof inner];
	int h;

	rnd_fill(&rnd_client, cn_sk, KEY);
	cr_assert_eq(crypto_scalarmult_base(cn_pk, cn_sk), 0);
	cr_assert_arr_eq(cn_pk, sc->cu[U_HS1].p + 2 + 80, KEY,
	                 "C' is not what the randomness gives");
	memcpy(nonce, "WELCOME-", 8);
	memcpy(nonce + 8, w + 8, 16);
	cr_assert_eq(crypto_box_open_easy(wplain, w + 24, 144, nonce, server_pk, cn_sk), 0);

	/* vouch = box[C' + S](C -> S') */
	memcpy(vplain, cn_pk, KEY);
	memcpy(vplain + KEY, vouch_server, KEY);
	memcpy(nonce, "VOUCH---", 8);
	memset(nonce + 8, 0x77, 16);
	memcpy(inner, client_pk, KEY);
	memcpy(inner + KEY, nonce + 8, 16);
	cr_assert_eq(
		crypto_box_easy(inner + 48, vplain, sizeof vplain, nonce, wplain, vouch_secret), 0);
	memcpy(inner + 128, meta, sizeof meta - 1);

	/* INITIATE = name, cookie, short nonce 2, box[C + vouch + metadata](C' -> S') */
	memcpy(body,
	       "\x08"
	       "INITIATE",
	       9);
	memcpy(body + 9, wplain + KEY, 96);
	memset(body + 105, 0, 8);
	body[112] = 2;
	memcpy(nonce, "CurveZMQINITIATE", 16);
	memcpy(nonce + 16, body + 105, 8);
	cr_assert_eq(crypto_box_easy(body + 113, inner, sizeof inner, nonce, wplain, cn_sk), 0);

	h = zr_zmtp_frame_header(out, sizeof body, ZR_ZMTP_COMMAND);
	cr_assert_leq((size_t)h + sizeof body, cap);
	memcpy(out + h, body, sizeof body);
	return (size_t)h + sizeof body;
}

/* A HELLO whose signature box opens but holds octets other than zeros. */
static size_t
forge_hello_not_zeros(uint8_t *out, size_t cap)
{
	uint8_t cn_sk[KEY], cn_pk[KEY], plain[64], nonce[24], *b = out + 2;

	cr_assert_geq(cap, 2 + 200);
	memset(cn_sk, 0x42, KEY);
	cr_assert_eq(crypto_scalarmult_base(cn_pk, cn_sk), 0);
	memset(plain, 0, sizeof plain);
	plain[63] = 1;
	out[0] = 0x04;
	out[1] = 200;
	memset(b, 0, 200);
	memcpy(b,
	       "\x05"
	       "HELLO"
	       "\x01\x00",
	       8);
	memcpy(b + 80, cn_pk, KEY);
	b[119] = 1;
	memcpy(nonce, "CurveZMQHELLO---", 16);
	memcpy(nonce + 16, b + 112, 8);
	cr_assert_eq(crypto_box_easy(b + 120, plain, sizeof plain, nonce, server_pk, cn_sk), 0);
	return 2 + 200;
}

/* A WELCOME from the real server key whose S' is the all-zero point, which
 * no shared key can be computed with. */
static size_t
forge_welcome_low_order(const struct script *sc, uint8_t *out, size_t cap)
{
	const uint8_t *cn_pk = sc->cu[U_HS1].p + 2 + 80;
	uint8_t plain[128] = {0}, nonce[24];

	cr_assert_geq(cap, 2 + 168);
	out[0] = 0x04;
	out[1] = 168;
	memcpy(out + 2,
	       "\x07"
	       "WELCOME",
	       8);
	memcpy(nonce, "WELCOME-", 8);
	memset(nonce + 8, 0x33, 16);
	memcpy(out + 2 + 8, nonce + 8, 16);
	cr_assert_eq(crypto_box_easy(out + 2 + 24, plain, sizeof plain, nonce, cn_pk, server_sk),
	             0);
	return 2 + 168;
}

/* ---------------------------------------------------------------- */
/* Hostile rows. */

enum mut {
	M_NONE = 0,
	M_XOR,             /* body[at] ^= val (the greeting: octet at) */
	M_SET,             /* body[at] = val */
	M_BODYLEN,         /* the body cut or zero-padded to `at` octets, header rewritten */
	M_FLAGS,           /* the flags octet becomes val (LONG kept) */
	M_LIT,             /* the unit is the literal */
	M_VOUCH_OK,        /* a forged INITIATE, vouch for the real server */
	M_VOUCH_OTHER,     /* a forged INITIATE, vouch for another server */
	M_LOW_ORDER,       /* a forged WELCOME with S' = 0 */
	M_VOUCH_FOREIGN,   /* a forged INITIATE, vouch boxed with a secret not C's */
	M_HELLO_NOT_ZEROS, /* a forged HELLO, its box holding a non-zero octet */
};

struct step {
	int unit;
	int mut;
	size_t at;
	uint8_t val;
	const char *lit;
	size_t lit_len;
};
#define U(u)                               \
	{                                  \
		(u), M_NONE, 0, 0, NULL, 0 \
	}
#define XOR(u, at, v)                          \
	{                                      \
		(u), M_XOR, (at), (v), NULL, 0 \
	}
#define SET(u, at, v)                          \
	{                                      \
		(u), M_SET, (at), (v), NULL, 0 \
	}
#define BODYLEN(u, n)                           \
	{                                       \
		(u), M_BODYLEN, (n), 0, NULL, 0 \
	}
#define FLAGS(u, v)                           \
	{                                     \
		(u), M_FLAGS, 0, (v), NULL, 0 \
	}
#define LIT(s)                                         \
	{                                              \
		U_LIT, M_LIT, 0, 0, (s), sizeof(s) - 1 \
	}
#define FORGED(m)                            \
	{                                    \
		U_FORGED, (m), 0, 0, NULL, 0 \
	}
#define MAX_STEPS 8

enum target {
	T_SERVER = 1,   /* PULL server, accepts every client */
	T_SERVER_400,   /* its authenticator refuses with 400 */
	T_SERVER_PUB,   /* a PUB server: no PUSH client may talk to it */
	T_SERVER_SMALL, /* max_msg_size 8 */
	T_SERVER_HS,    /* max_handshake_cmd 276: one below our INITIATE */
	T_CLIENT,       /* PUSH client */
	T_CLIENT_HS,    /* max_handshake_cmd 167: one below WELCOME */
};

static struct auth_seen auth_400 = {.status = 400};

static struct zr_zmtp_config
target_cfg(int target)
{
	struct zr_zmtp_config c;

	switch (target) {
	case T_SERVER:
		return cfg_server(ZR_PULL, NULL);
	case T_SERVER_400:
		return cfg_server(ZR_PULL, &auth_400);
	case T_SERVER_PUB:
		return cfg_server(ZR_PUB, NULL);
	case T_SERVER_SMALL:
		c = cfg_server(ZR_PULL, NULL);
		c.max_msg_size = 8;
		return c;
	case T_SERVER_HS:
		c = cfg_server(ZR_PULL, NULL);
		c.max_handshake_cmd = 276;
		return c;
	case T_CLIENT:
		return cfg_client(ZR_PUSH);
	case T_CLIENT_HS:
		c = cfg_client(ZR_PUSH);
		c.max_handshake_cmd = 167;
		return c;
	default:
		break;
	}
	cr_assert_fail("bad target %d", target);
	return cfg_client(ZR_PUSH); /* not reached */
}

static bool
target_is_server(int target)
{
	return target < T_CLIENT;
}

struct hrow {
	const char *name;
	int line;
	int script;
	int target;
	struct step in[MAX_STEPS];
	int code;           /* the error, or ZR_NEED_MORE for an input that must be accepted */
	bool error_queued;  /* a plaintext ERROR follows our own units */
	const char *reason; /* if not NULL: that ERROR's exact reason */
	size_t nev;         /* events before the error */
	int nout;           /* our own honest units written before it (U_G = 1) */
};

#define H_TRAFFIC U(U_G), U(U_HS1), U(U_HS2)

/* clang-format off */
static const struct hrow hrows[] = {
	/* -- to a server: HELLO -- */
	{"HELLO box tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), XOR(U_HS1, 150, 0x01)}, -ZR_ECURVEBOX, true,
	 NULL, 0, 1},
	{"HELLO box MAC tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), XOR(U_HS1, 120, 0x80)}, -ZR_ECURVEBOX,
	 true, NULL, 0, 1},
	{"HELLO transient key tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), XOR(U_HS1, 80, 0x01)},
	 -ZR_ECURVEBOX, true, NULL, 0, 1},
	{"HELLO short nonce changed", __LINE__, SC_HONEST, T_SERVER, {U(U_G), XOR(U_HS1, 119, 0x02)},
	 -ZR_ECURVEBOX, true, NULL, 0, 1},
	{"HELLO from a client that has another server key", __LINE__, SC_WRONG_KEY, T_SERVER,
	 {U(U_G), U(U_HS1)}, -ZR_ECURVEBOX, true, NULL, 0, 1},
	{"HELLO version 2.0", __LINE__, SC_HONEST, T_SERVER, {U(U_G), SET(U_HS1, 6, 2)}, -ZR_ECURVEVERSION, true,
	 NULL, 0, 1},
	{"HELLO version 1.1", __LINE__, SC_HONEST, T_SERVER, {U(U_G), SET(U_HS1, 7, 1)}, -ZR_ECURVEVERSION, true,
	 NULL, 0, 1},
	{"HELLO truncated to 199 octets", __LINE__, SC_HONEST, T_SERVER, {U(U_G), BODYLEN(U_HS1, 199)},
	 -ZR_ECURVECMD, true, NULL, 0, 1},
	{"HELLO oversized to 201 octets", __LINE__, SC_HONEST, T_SERVER, {U(U_G), BODYLEN(U_HS1, 201)},
	 -ZR_ECURVECMD, true, NULL, 0, 1},
	{"HELLO name length past the body", __LINE__, SC_HONEST, T_SERVER, {U(U_G), SET(U_HS1, 0, 250)},
	 -ZR_ECURVECMD, true, NULL, 0, 1},
	{"HELLO whose box holds a non-zero octet", __LINE__, SC_HONEST, T_SERVER, {U(U_G), FORGED(M_HELLO_NOT_ZEROS)},
	 -ZR_ECURVECMD, true, NULL, 0, 1},
	{"plaintext READY instead of HELLO", __LINE__, SC_HONEST, T_SERVER, {U(U_G), LIT(READY_PUSH)},
	 -ZR_EUNEXPECTED, true, NULL, 0, 1},
	{"ERROR from a client", __LINE__, SC_HONEST, T_SERVER, {U(U_G), LIT(ERROR_400)}, -ZR_EUNEXPECTED, true,
	 NULL, 0, 1},
	{"reserved flag bits in the handshake", __LINE__, SC_HONEST, T_SERVER, {U(U_G), LIT("\x0c\x00")},
	 -ZR_EFLAGS, true, NULL, 0, 1},
	{"NULL greeting to a CURVE server (no downgrade)", __LINE__, SC_HONEST, T_SERVER,
	 {LIT(G_NULL_31 READY_PUSH)}, -ZR_EMECHMISMATCH, false, NULL, 0, 1},
	{"PLAIN greeting to a CURVE server (no downgrade)", __LINE__, SC_HONEST, T_SERVER,
	 {LIT(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET)}, -ZR_EMECHMISMATCH, false, NULL, 0, 1},

	/* -- to a server: INITIATE -- */
	{"message frame before INITIATE", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), LIT("\x00\x01" "x")},
	 -ZR_EEARLYMSG, true, NULL, 0, 2},
	{"second HELLO instead of INITIATE", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), U(U_HS1)},
	 -ZR_EUNEXPECTED, true, NULL, 0, 2},
	{"INITIATE cookie tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), XOR(U_HS2, 30, 0x01)},
	 -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE cookie nonce tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), XOR(U_HS2, 11, 0x01)},
	 -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE box tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), XOR(U_HS2, 153, 0x10)},
	 -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE box MAC tampered", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), XOR(U_HS2, 113, 0x01)},
	 -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE replaying HELLO's short nonce", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), U(U_HS1), SET(U_HS2, 112, 1)}, -ZR_ECURVENONCE, true, NULL, 0, 2},
	{"INITIATE truncated to 256 octets", __LINE__, SC_HONEST, T_SERVER, {U(U_G), U(U_HS1), BODYLEN(U_HS2, 256)},
	 -ZR_ECURVECMD, true, NULL, 0, 2},
	{"INITIATE one octet longer", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), U(U_HS1), BODYLEN(U_HS2, 257 + 20 + 1)}, -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE over the handshake command limit", __LINE__, SC_HONEST, T_SERVER_HS, {H_TRAFFIC}, -ZR_ECMDSIZE,
	 true, NULL, 0, 2},
	{"INITIATE whose vouch names another server", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), U(U_HS1), FORGED(M_VOUCH_OTHER)}, -ZR_ECURVEKEY, true, NULL, 0, 2},
	{"INITIATE whose vouch box does not open", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), U(U_HS1), FORGED(M_VOUCH_FOREIGN)}, -ZR_ECURVEBOX, true, NULL, 0, 2},
	{"INITIATE forged with a good vouch is accepted (control)", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), U(U_HS1), FORGED(M_VOUCH_OK)}, ZR_NEED_MORE, false, NULL, 1, 3},
	{"INITIATE from an incompatible socket type", __LINE__, SC_HONEST, T_SERVER_PUB, {H_TRAFFIC},
	 -ZR_EINCOMPATIBLE, true, NULL, 0, 2},
	{"authenticator refuses with 400", __LINE__, SC_HONEST, T_SERVER_400, {H_TRAFFIC}, -ZR_EAUTH, true, "400",
	 0, 2},
	{"HELLO padding is not checked (libzmq does not)", __LINE__, SC_HONEST, T_SERVER,
	 {U(U_G), XOR(U_HS1, 20, 0xff), U(U_HS2)}, ZR_NEED_MORE, false, NULL, 1, 3},

	/* -- to a server: traffic (no ERROR; the READY was delivered) -- */
	{"honest traffic is accepted (control)", __LINE__, SC_HONEST, T_SERVER,
	 {H_TRAFFIC, U(U_T1), U(U_T2)}, ZR_NEED_MORE, false, NULL, 3, 3},
	{"MESSAGE in a command frame (RFC 26's form) is accepted", __LINE__, SC_HONEST, T_SERVER,
	 {H_TRAFFIC, FLAGS(U_T1, 0x04), U(U_T2)}, ZR_NEED_MORE, false, NULL, 3, 3},
	{"MESSAGE box tampered", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, XOR(U_T1, 20, 0x01)}, -ZR_ECURVEBOX,
	 false, NULL, 1, 3},
	{"MESSAGE box MAC tampered", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, XOR(U_T1, 16, 0x01)},
	 -ZR_ECURVEBOX, false, NULL, 1, 3},
	{"MESSAGE replayed", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, U(U_T1), U(U_T1)}, -ZR_ECURVENONCE, false,
	 NULL, 2, 3},
	{"MESSAGEs out of order", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, U(U_T2), U(U_T1)}, -ZR_ECURVENONCE,
	 false, NULL, 2, 3},
	{"MESSAGE replaying INITIATE's short nonce", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, SET(U_T1, 15, 2)},
	 -ZR_ECURVENONCE, false, NULL, 1, 3},
	{"MESSAGE with the wire MORE flag", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, FLAGS(U_T1, 0x01)},
	 -ZR_ECURVECMD, false, NULL, 1, 3},
	{"MESSAGE truncated below 33 octets", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, BODYLEN(U_T1, 32)},
	 -ZR_ECURVECMD, false, NULL, 1, 3},
	{"MESSAGE under another name", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, SET(U_T1, 7, 'F')},
	 -ZR_EUNEXPECTED, false, NULL, 1, 3},
	{"plaintext message frame in traffic", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, LIT("\x00\x05" "hello")},
	 -ZR_ECURVECMD, false, NULL, 1, 3},
	{"plaintext PING command in traffic", __LINE__, SC_HONEST, T_SERVER,
	 {H_TRAFFIC, LIT("\x04\x07" "\x04" "PING" "\x00\x00")}, -ZR_EUNEXPECTED, false, NULL, 1, 3},
	{"plaintext ERROR in traffic", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, LIT(ERROR_400)},
	 -ZR_EUNEXPECTED, false, NULL, 1, 3},
	{"COMMAND with MORE inside the box", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, U(U_T5)}, -ZR_ECMDMORE,
	 false, NULL, 1, 3},
	{"command with name length 0 inside the box", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, U(U_T6)},
	 -ZR_ECMDNAME, false, NULL, 1, 3},
	{"PING one octet short inside the box", __LINE__, SC_HONEST, T_SERVER, {H_TRAFFIC, U(U_T7)}, -ZR_EPING,
	 false, NULL, 1, 3},
	{"command inside the box between frames of a message", __LINE__, SC_HONEST, T_SERVER,
	 {H_TRAFFIC, U(U_T3), U(U_T4)}, -ZR_ECMDINMSG, false, NULL, 2, 3},
	{"plaintext over max_msg_size across a message", __LINE__, SC_HONEST, T_SERVER_SMALL,
	 {H_TRAFFIC, U(U_T1), U(U_T2)}, -ZR_ETOOLARGE, false, NULL, 2, 3},
	{"MESSAGE over max_msg_size, header only", __LINE__, SC_HONEST, T_SERVER_SMALL,
	 {H_TRAFFIC, LIT("\x00\x2a")}, -ZR_ETOOLARGE, false, NULL, 1, 3},

	/* -- to a client: it never sends ERROR -- */
	{"WELCOME box tampered", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), XOR(U_HS1, 74, 0x01)}, -ZR_ECURVEBOX,
	 false, NULL, 0, 2},
	{"WELCOME long nonce tampered", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), XOR(U_HS1, 8, 0x01)},
	 -ZR_ECURVEBOX, false, NULL, 0, 2},
	{"WELCOME truncated to 167 octets", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), BODYLEN(U_HS1, 167)},
	 -ZR_ECURVECMD, false, NULL, 0, 2},
	{"WELCOME oversized to 169 octets", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), BODYLEN(U_HS1, 169)},
	 -ZR_ECURVECMD, false, NULL, 0, 2},
	{"WELCOME over the handshake command limit", __LINE__, SC_HONEST, T_CLIENT_HS, {U(U_G), U(U_HS1)},
	 -ZR_ECMDSIZE, false, NULL, 0, 2},
	{"WELCOME with a low-order transient key", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), FORGED(M_LOW_ORDER)},
	 -ZR_ECURVEKEY, false, NULL, 0, 2},
	{"READY instead of WELCOME", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS2)}, -ZR_EUNEXPECTED, false,
	 NULL, 0, 2},
	{"server ERROR without a reason length", __LINE__, SC_HONEST, T_CLIENT,
	 {U(U_G), LIT("\x04\x06" "\x05" "ERROR")}, -ZR_ECURVECMD, false, NULL, 0, 2},
	{"server ERROR with its reason past the body", __LINE__, SC_HONEST, T_CLIENT,
	 {U(U_G), LIT("\x04\x08" "\x05" "ERROR" "\x05" "x")}, -ZR_ECURVECMD, false, NULL, 0, 2},
	{"server ERROR instead of WELCOME", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), LIT(ERROR_400)},
	 -ZR_EPEERERROR, false, NULL, 1, 2},
	{"message frame before WELCOME", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), LIT("\x00\x01" "x")},
	 -ZR_EEARLYMSG, false, NULL, 0, 2},
	{"reserved flag bits before WELCOME", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), LIT("\x0c\x00")}, -ZR_EFLAGS,
	 false, NULL, 0, 2},
	{"malformed command before WELCOME", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), LIT("\x04\x01" "\x00")},
	 -ZR_ECURVECMD, false, NULL, 0, 2},
	{"READY box tampered", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS1), XOR(U_HS2, 24, 0x01)},
	 -ZR_ECURVEBOX, false, NULL, 0, 3},
	{"READY truncated below 30 octets", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS1), BODYLEN(U_HS2, 29)},
	 -ZR_ECURVECMD, false, NULL, 0, 3},
	{"READY one octet longer", __LINE__, SC_HONEST, T_CLIENT,
	 {U(U_G), U(U_HS1), BODYLEN(U_HS2, 30 + 20 + 1)}, -ZR_ECURVEBOX, false, NULL, 0, 3},
	{"server ERROR instead of READY", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS1), LIT(ERROR_400)},
	 -ZR_EPEERERROR, false, NULL, 1, 3},
	{"message frame before READY", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS1), LIT("\x00\x01" "x")},
	 -ZR_EEARLYMSG, false, NULL, 0, 3},
	{"second WELCOME instead of READY", __LINE__, SC_HONEST, T_CLIENT, {U(U_G), U(U_HS1), U(U_HS1)},
	 -ZR_EUNEXPECTED, false, NULL, 0, 3},
	{"NULL greeting to a CURVE client (no downgrade)", __LINE__, SC_HONEST, T_CLIENT,
	 {LIT(G_NULL_31 READY_PULL)}, -ZR_EMECHMISMATCH, false, NULL, 0, 1},
	{"PLAIN greeting to a CURVE client (no downgrade)", __LINE__, SC_HONEST, T_CLIENT,
	 {LIT(G_PLAIN_31_SERVER WELCOME)}, -ZR_EMECHMISMATCH, false, NULL, 0, 1},

	/* -- to a client: traffic -- */
	{"honest server traffic is accepted (control)", __LINE__, SC_HONEST, T_CLIENT,
	 {H_TRAFFIC, U(U_T1), U(U_T2)}, ZR_NEED_MORE, false, NULL, 3, 3},
	{"server MESSAGE replayed", __LINE__, SC_HONEST, T_CLIENT, {H_TRAFFIC, U(U_T1), U(U_T1)}, -ZR_ECURVENONCE,
	 false, NULL, 2, 3},
	{"server MESSAGE replaying READY's short nonce", __LINE__, SC_HONEST, T_CLIENT,
	 {H_TRAFFIC, SET(U_T1, 15, 1)}, -ZR_ECURVENONCE, false, NULL, 1, 3},
	{"server MESSAGE box tampered", __LINE__, SC_HONEST, T_CLIENT, {H_TRAFFIC, XOR(U_T2, 30, 0x40)},
	 -ZR_ECURVEBOX, false, NULL, 1, 3},
	{"server MESSAGE with the wire MORE flag", __LINE__, SC_HONEST, T_CLIENT, {H_TRAFFIC, FLAGS(U_T1, 0x01)},
	 -ZR_ECURVECMD, false, NULL, 1, 3},
	{"plaintext message frame from the server in traffic", __LINE__, SC_HONEST, T_CLIENT,
	 {H_TRAFFIC, LIT("\x00\x05" "hello")}, -ZR_ECURVECMD, false, NULL, 1, 3},
	{"plaintext PING from the server in traffic", __LINE__, SC_HONEST, T_CLIENT,
	 {H_TRAFFIC, LIT("\x04\x07" "\x04" "PING" "\x00\x00")}, -ZR_EUNEXPECTED, false, NULL, 1, 3},
};
/* clang-format on */

static size_t
hrow_unit(const struct step *st, const struct script *sc, bool to_server, uint8_t *u, size_t cap)
{
	const struct span *units = to_server ? sc->cu : sc->su;
	struct span s;
	size_t h, n;

	if (st->unit == U_LIT) {
		cr_assert_leq(st->lit_len, cap);
		memcpy(u, st->lit, st->lit_len);
		return st->lit_len;
	}
	if (st->unit == U_FORGED) {
		if (st->mut == M_LOW_ORDER)
			return forge_welcome_low_order(sc, u, cap);
		if (st->mut == M_HELLO_NOT_ZEROS)
			return forge_hello_not_zeros(u, cap);
		if (st->mut == M_VOUCH_FOREIGN)
			return forge_initiate(sc, server_pk, other_sk, u, cap);
		return forge_initiate(sc, st->mut == M_VOUCH_OK ? server_pk : other_pk, client_sk,
		                      u, cap);
	}
	cr_assert(st->unit > U_END && st->unit < U_COUNT);
	s = units[st->unit];
	cr_assert(s.n > 0 && s.n <= cap, "unit %d missing from the transcript", st->unit);
	memcpy(u, s.p, s.n);
	n = s.n;
	h = st->unit == U_G ? 0 : frame_header_len(u);
	switch (st->mut) {
	case M_NONE:
		break;
	case M_XOR:
	case M_SET:
		cr_assert_lt(h + st->at, n);
		if (st->mut == M_XOR)
			u[h + st->at] ^= st->val;
		else
			u[h + st->at] = st->val;
		break;
	case M_BODYLEN: {
		uint8_t body[1024] = {0};
		size_t old = n - h;
		int nh;

		cr_assert_leq(st->at, sizeof body);
		memcpy(body, u + h, old < st->at ? old : st->at);
		nh = zr_zmtp_frame_header(u, st->at, u[0] & ZR_ZMTP_COMMAND);
		cr_assert_leq((size_t)nh + st->at, cap);
		memcpy(u + nh, body, st->at);
		n = (size_t)nh + st->at;
		break;
	}
	case M_FLAGS:
		u[0] = (uint8_t)((u[0] & ZR_ZMTP_LONG) | st->val);
		break;
	default:
		cr_assert_fail("bad mutation %d", st->mut);
	}
	return n;
}

static uint8_t *
hrow_input(const struct hrow *row, const struct script *sc, size_t *len)
{
	uint8_t *in = NULL, u[1024];

	*len = 0;
	for (size_t k = 0; k < MAX_STEPS && row->in[k].unit != U_END; k++) {
		size_t n = hrow_unit(&row->in[k], sc, target_is_server(row->target), u, sizeof u);

		bytes_append(&in, len, u, n);
	}
	return in;
}

ParameterizedTestParameters(zmtp_conn_curve, hostile_peers_fail_with_the_specific_code)
{
	ROW_PARAMS(hrows);
}

ParameterizedTest(int *i, zmtp_conn_curve, hostile_peers_fail_with_the_specific_code)
{
	const struct hrow *row = &hrows[*i];
	struct zr_zmtp_config cfg = target_cfg(row->target);
	struct zt_target t = zt_conn_target(&cfg);
	const struct span *own;
	struct script sc;
	struct zt_run r;
	size_t n, off;
	uint8_t *in;

	cr_log_info("row \"%s\" (line %d)", row->name, row->line);
	script_make(&sc, row->script);
	own = target_is_server(row->target) ? sc.su : sc.cu;
	in = hrow_input(row, &sc, &n);
	zt_check_splits(&t, in, n, row->line, &r);

	cr_assert_eq(r.rc, row->code, "line %d (%s): got %d (%s), want %d (%s)", row->line,
	             row->name, r.rc, zr_strerror(r.rc), row->code, zr_strerror(row->code));
	cr_assert_eq(r.nev, row->nev, "line %d (%s): %zu events, want %zu", row->line, row->name,
	             r.nev, row->nev);
	for (size_t k = 0; k < r.nev; k++) {
		int want = k == 0 ? ZR_ZMTP_EV_READY : ZR_ZMTP_EV_FRAME;

		if (row->code == -ZR_EPEERERROR && k == r.nev - 1)
			want = ZR_ZMTP_EV_PEER_ERROR;
		cr_assert_eq(r.ev[k].type, want, "line %d: event %zu is %d, want %d", row->line, k,
		             r.ev[k].type, want);
		if (r.ev[k].type == ZR_ZMTP_EV_FRAME)
			cr_assert(r.ev[k].complete, "line %d: a partial frame", row->line);
	}
	if (row->code < 0) {
		cr_assert_eq(r.sticky_rc, row->code, "line %d: not sticky", row->line);
		cr_assert_eq(r.state, ZR_ZMTP_FAILED, "line %d", row->line);
	} else {
		cr_assert_eq(r.state, ZR_ZMTP_TRAFFIC, "line %d", row->line);
	}

	/* Our own honest units first, then ERROR or nothing. */
	off = (size_t)(own[row->nout].p + own[row->nout].n - own[U_G].p);
	cr_assert_geq(r.out_len, off, "line %d (%s): wrote %zu octets, want at least %zu",
	              row->line, row->name, r.out_len, off);
	zt_assert_bytes("our output before the error", r.out, off, own[U_G].p, off, row->line);
	if (row->error_queued) {
		size_t rlen;

		cr_assert_geq(r.out_len, off + 9, "line %d (%s): no ERROR queued", row->line,
		              row->name);
		cr_assert_eq(r.out[off], 0x04, "line %d: ERROR flags", row->line);
		zt_assert_bytes("ERROR name", r.out + off + 2, 6,
		                "\x05"
		                "ERROR",
		                6, row->line);
		rlen = r.out[off + 8];
		cr_assert_eq(r.out[off + 1], 7 + rlen, "line %d: ERROR size", row->line);
		cr_assert_eq(r.out_len, off + 9 + rlen, "line %d: octets after ERROR", row->line);
		if (row->reason != NULL)
			zt_assert_bytes("ERROR reason", r.out + off + 9, rlen, row->reason,
			                strlen(row->reason), row->line);
	} else {
		cr_assert_eq(r.out_len, off,
		             "line %d (%s): %zu unexpected octets after our output: %s", row->line,
		             row->name, r.out_len - off, zt_hex(r.out + off, r.out_len - off));
	}
	zt_run_free(&r);
	free(in);
	script_free(&sc);
}

Test(zmtp_conn_curve, has_a_hostile_row_for_every_curve_code_bytes_can_produce)
{
	bool seen[ZR_ELAST - ZR_EBASE] = {false};

	cr_assert_geq(sizeof hrows / sizeof hrows[0], 40);
	for (size_t i = 0; i < sizeof hrows / sizeof hrows[0]; i++)
		if (hrows[i].code < 0)
			seen[-hrows[i].code - ZR_EBASE] = true;
	/* The cookie's age needs two clocks, which a row's single feed clock
	 * cannot give: refuses_an_initiate_after_the_cookie_expired has it. */
	seen[ZR_ECURVECOOKIE - ZR_EBASE] = true;
	for (int c = ZR_ECURVECMD; c <= ZR_ECURVEKEY; c++)
		cr_expect(seen[c - ZR_EBASE], "no hostile row produces %d (%s)", c,
		          zr_strerror(-c));
}

/* ---------------------------------------------------------------- */
/* The cookie expires 60 s after WELCOME. */

static void
cookie_run(const struct script *sc, uint64_t later, const size_t *cuts, size_t ncuts,
           struct zt_run *r)
{
	struct zr_zmtp_config cfg = cfg_server(ZR_PULL, NULL);
	struct zr_zmtp *z;
	uint8_t *hs = NULL;
	size_t hs_len = 0, left;

	memset(r, 0, sizeof *r);
	cfg.handshake_ivl_ms = 0;
	z = conn_new(&cfg, T0);
	bytes_append(&hs, &hs_len, sc->cu[U_G].p, sc->cu[U_G].n + sc->cu[U_HS1].n);
	zt_conn_feed_cuts(z, T0, hs, hs_len, NULL, 0, r, &left);
	cr_assert_eq(r->rc, ZR_NEED_MORE);
	cr_assert_eq(left, 0);
	zt_conn_feed_cuts(z, T0 + later, sc->cu[U_HS2].p, sc->cu[U_HS2].n, cuts, ncuts, r, &left);
	cr_assert(r->violation[0] == '\0', "%s", r->violation);
	zt_conn_drain(z, r);
	zr_zmtp_fini(z);
	free(z);
	free(hs);
}

Test(zmtp_conn_curve, refuses_an_initiate_after_the_cookie_expired)
{
	struct script sc;
	struct zt_run whole, r;
	char reason[128], why[256];
	size_t n, cut;

	script_make(&sc, SC_HONEST);
	n = sc.cu[U_HS2].n;

	cookie_run(&sc, 60000, NULL, 0, &whole);
	cr_assert_eq(whole.rc, ZR_NEED_MORE, "60 s: %d (%s)", whole.rc, zr_strerror(whole.rc));
	cr_assert_eq(whole.nev, 1, "accepted at exactly 60 s");
	zt_run_free(&whole);

	cookie_run(&sc, 61000, NULL, 0, &whole);
	cr_assert_eq(whole.rc, -ZR_ECURVECOOKIE);
	cr_assert_eq(whole.sticky_rc, -ZR_ECURVECOOKIE);
	cr_assert_eq(whole.nev, 0);
	vchar_reason(reason, sizeof reason, -ZR_ECURVECOOKIE);
	{
		size_t off = sc.su[U_G].n + sc.su[U_HS1].n;

		cr_assert_eq(whole.out_len, off + 9 + strlen(reason));
		zt_assert_bytes("greeting and WELCOME", whole.out, off, sc.s_sent, off, __LINE__);
		zt_assert_bytes("ERROR reason", whole.out + off + 9, strlen(reason), reason,
		                strlen(reason), __LINE__);
	}
	/* INITIATE in two pieces at every split point, and byte by byte: the same. */
	for (cut = 1; cut < n; cut++) {
		cookie_run(&sc, 61000, &cut, 1, &r);
		cr_assert(zt_run_same(&whole, &r, why, sizeof why), "cut at %zu: %s", cut, why);
		zt_run_free(&r);
	}
	{
		size_t *cuts = malloc(n * sizeof *cuts);

		cr_assert_not_null(cuts);
		for (size_t k = 1; k < n; k++)
			cuts[k - 1] = k;
		cookie_run(&sc, 61000, cuts, n - 1, &r);
		cr_assert(zt_run_same(&whole, &r, why, sizeof why), "byte by byte: %s", why);
		zt_run_free(&r);
		free(cuts);
	}
	zt_run_free(&whole);
	script_free(&sc);
}

/* ---------------------------------------------------------------- */
/* Every chunking, both directions, whole transcripts. */

Test(zmtp_conn_curve, every_chunking_gives_the_same_events_and_output)
{
	struct script sc;
	struct zr_zmtp_config cs = cfg_server(ZR_PULL, NULL), cc = cfg_client(ZR_PUSH);
	struct zt_target ts = zt_conn_target(&cs), tc = zt_conn_target(&cc);
	struct zt_run r;
	size_t n, own;
	uint8_t *in;

	script_make(&sc, SC_HONEST);

	/* To the server: handshake, "hello" MORE, "world", PING (T3 left out). */
	n = (size_t)(sc.cu[U_T3].p - sc.c_sent);
	in = malloc(n + sc.cu[U_T4].n);
	cr_assert_not_null(in);
	memcpy(in, sc.c_sent, n);
	memcpy(in + n, sc.cu[U_T4].p, sc.cu[U_T4].n);
	n += sc.cu[U_T4].n;
	zt_check_splits(&ts, in, n, __LINE__, &r);
	free(in);
	cr_assert_eq(r.rc, ZR_NEED_MORE, "%d (%s)", r.rc, zr_strerror(r.rc));
	cr_assert_eq(r.nev, 3);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_READY);
	cr_assert_eq(r.ev[0].peer_type, ZR_PUSH);
	cr_assert_eq(r.ev[1].flags, ZR_ZMTP_MORE);
	zt_assert_bytes("frame", r.ev[1].data, r.ev[1].len, "hello", 5, __LINE__);
	cr_assert_eq(r.ev[2].flags, 0);
	zt_assert_bytes("frame", r.ev[2].data, r.ev[2].len, "world", 5, __LINE__);
	/* Its output: greeting, WELCOME, READY as recorded, then the PONG in a MESSAGE. */
	own = (size_t)(sc.su[U_HS2].p + sc.su[U_HS2].n - sc.s_sent);
	cr_assert_eq(r.out_len, own + 2 + 33 + 5);
	zt_assert_bytes("handshake", r.out, own, sc.s_sent, own, __LINE__);
	message_wire_is(r.out + own, r.out_len - own, 5, __LINE__);
	zt_run_free(&r);

	/* To the client: handshake, "hello" MORE, "world". */
	n = (size_t)(sc.su[U_T2].p + sc.su[U_T2].n - sc.s_sent);
	zt_check_splits(&tc, sc.s_sent, n, __LINE__, &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE, "%d (%s)", r.rc, zr_strerror(r.rc));
	cr_assert_eq(r.nev, 3);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_READY);
	cr_assert_eq(r.ev[0].peer_type, ZR_PULL);
	zt_assert_bytes("frame", r.ev[1].data, r.ev[1].len, "hello", 5, __LINE__);
	zt_assert_bytes("frame", r.ev[2].data, r.ev[2].len, "world", 5, __LINE__);
	own = (size_t)(sc.cu[U_HS2].p + sc.cu[U_HS2].n - sc.c_sent);
	cr_assert_eq(r.out_len, own);
	zt_assert_bytes("handshake", r.out, own, sc.c_sent, own, __LINE__);
	zt_run_free(&r);
	script_free(&sc);
}

Test(zmtp_conn_curve, every_flipped_bit_of_a_message_box_fails_it_and_delivers_nothing)
{
	struct script sc;
	struct zr_zmtp_config cs = cfg_server(ZR_PULL, NULL);
	struct zt_target t = zt_conn_target(&cs);
	size_t hs, n, own;
	uint8_t *in;

	script_make(&sc, SC_HONEST);
	/* The transcript up to and with T1 ("hello", 33 + 5 octets after a 2-octet header). */
	hs = (size_t)(sc.cu[U_T1].p - sc.c_sent);
	n = hs + sc.cu[U_T1].n;
	own = (size_t)(sc.su[U_HS2].p + sc.su[U_HS2].n - sc.s_sent);
	in = malloc(n);
	cr_assert_not_null(in);
	for (size_t at = 8; at < 33 + 5; at++) {
		for (int bit = 0; bit < 8; bit++) {
			struct zt_run r;

			memcpy(in, sc.c_sent, n);
			in[hs + 2 + at] ^= (uint8_t)(1u << bit);
			zt_run_cuts(&t, in, n, NULL, 0, &r);
			/* The short nonce (8..16) may come out lower (a replay) or higher
			 * (the box does not open); the box itself (16..) never opens. */
			if (at >= 16)
				cr_assert_eq(r.rc, -ZR_ECURVEBOX, "octet %zu bit %d: %d (%s)", at,
				             bit, r.rc, zr_strerror(r.rc));
			else
				cr_assert(r.rc == -ZR_ECURVEBOX || r.rc == -ZR_ECURVENONCE,
				          "octet %zu bit %d: %d (%s)", at, bit, r.rc,
				          zr_strerror(r.rc));
			cr_assert_eq(r.nev, 1, "octet %zu bit %d: only READY", at, bit);
			cr_assert_eq(r.out_len, own, "octet %zu bit %d: ERROR in traffic", at, bit);
			zt_run_free(&r);
		}
	}
	free(in);
	script_free(&sc);
}

/* zr_zmtp_out lays PING and PONG out when asked, each with the next nonce:
 * a frame encoded before that call must go on the wire before them. */
Test(zmtp_conn_curve, writes_pong_and_frames_in_the_order_they_were_produced)
{
	struct pair p, q;
	uint8_t *frame, *pong;
	const uint8_t *d;
	size_t flen, plen;

	for (int wrong = 0; wrong < 2; wrong++) {
		struct pair *x = wrong ? &q : &p;

		pair_open(x, ZR_PUSH, ZR_PULL);
		pair_ready(x);
		frame = send_frame(&x->s, &x->c, 0, "first", 5, &flen);
		x->c.in_len = 0; /* delivered below, in the order under test */
		SEND(&x->c, &x->s, ZR_ZMTP_COMMAND,
		     "\x04"
		     "PING"
		     "\x00\x00");
		pump(&x->c, &x->s, T0);
		plen = zr_zmtp_out(x->s.z, &d);
		cr_assert_eq(plen, 2 + 33 + 5, "the PONG");
		pong = malloc(plen);
		cr_assert_not_null(pong);
		memcpy(pong, d, plen);
		zr_zmtp_out_ack(x->s.z, plen);
		if (wrong) {
			bytes_append(&x->c.in, &x->c.in_len, pong, plen);
			bytes_append(&x->c.in, &x->c.in_len, frame, flen);
		} else {
			bytes_append(&x->c.in, &x->c.in_len, frame, flen);
			bytes_append(&x->c.in, &x->c.in_len, pong, plen);
		}
		end_feed(&x->c, T0);
		if (wrong) {
			cr_assert_eq(x->c.rc, -ZR_ECURVENONCE);
		} else {
			cr_assert_eq(x->c.rc, ZR_NEED_MORE);
			cr_assert_eq(x->c.nev, 2);
			REC_FRAME_IS(&x->c, 1, 0, "first");
		}
		free(frame);
		free(pong);
		pair_close(x);
	}
}

Test(zmtp_conn_curve, fails_at_the_handshake_deadline_without_error_and_wipes_the_keys)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs = cfg_server(ZR_PULL, NULL);
	struct end c, s;
	const uint8_t *d;

	cc.handshake_ivl_ms = 500;
	cs.handshake_ivl_ms = 500;
	end_open(&c, &cc, T0);
	end_open(&s, &cs, T0);
	end_flush(&c, &s);
	end_flush(&s, &c);
	end_feed(&c, T0);
	end_feed(&s, T0);
	end_flush(&c, &s);
	end_feed(&s, T0); /* the server has sent WELCOME; the client never reads it */
	end_flush(&s, &c);
	cr_assert_eq(zr_zmtp_deadline(s.z), T0 + 500);
	cr_assert_eq(zr_zmtp_tick(s.z, T0 + 499), 0);
	cr_assert_eq(zr_zmtp_tick(s.z, T0 + 500), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_eq(zr_zmtp_out(s.z, &d), 0, "no ERROR for a timeout");
	cr_assert(all_zero(s.z->mech.bytes, sizeof s.z->mech.bytes));
	cr_assert_eq(zr_zmtp_tick(c.z, T0 + 500), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_eq(zr_zmtp_out(c.z, &d), 0);
	cr_assert(all_zero(c.z->mech.bytes, sizeof c.z->mech.bytes));
	end_close(&c);
	end_close(&s);
}

Test(zmtp_conn_curve, refuses_a_frame_too_large_for_a_box)
{
	struct pair p;
	uint8_t w[64];

	pair_open(&p, ZR_PUSH, ZR_PULL);
	pair_ready(&p);
	/* Never read: the length alone is refused. */
	cr_assert_eq(zr_zmtp_encode_frame(p.c.z, 0, w, (size_t)INT32_MAX, w, sizeof w), -EINVAL);
	cr_assert_eq(zr_zmtp_error(p.c.z), 0);
	pair_close(&p);
}

/* ---------------------------------------------------------------- */
/* An authenticator that answers later (ZR_ZMTP_AUTH_PENDING). */

Test(zmtp_conn_curve, a_pending_answer_parks_initiate_and_the_reply_completes_it)
{
	struct zr_zmtp_config cc = cfg_client(ZR_DEALER), cs;
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	struct pair p;
	size_t held;

	cs = cfg_server(ZR_ROUTER, &a);
	pair_open_cfg(&p, &cc, &cs);
	cr_assert_eq(a.calls, 1);
	cr_assert_arr_eq(a.key, client_pk, KEY);
	cr_assert(zr_zmtp_auth_pending(p.s.z));
	cr_assert_eq(zr_zmtp_state(p.s.z), ZR_ZMTP_HANDSHAKE);
	cr_assert_eq(p.s.nev, 0);
	/* The INITIATE stays in the server's input, opened in place. */
	held = p.s.in_len;
	cr_assert_gt(held, 0);
	/* Feeding again, or a tick before the deadline, changes nothing. */
	end_feed(&p.s, T0 + 1);
	cr_assert_eq(p.s.in_len, held);
	cr_assert_eq(zr_zmtp_tick(p.s.z, T0 + 1), 0);
	OUT_NONE(p.s.z);
	cr_assert_eq(zr_zmtp_auth_reply(p.s.z, 200, "bob", NULL), 0);
	cr_assert_not(zr_zmtp_auth_pending(p.s.z));
	cr_assert_eq(zr_zmtp_auth_reply(p.s.z, 200, "bob", NULL), -EINVAL, "a second reply");
	p.s.rc = ZR_NEED_MORE;
	end_feed(&p.s, T0 + 2); /* the parked INITIATE: READY out, the event */
	pump(&p.c, &p.s, T0 + 2);
	pair_ready(&p);
	cr_assert_eq(a.calls, 1, "asked once");
	cr_assert_eq(p.s.nev, 1);
	cr_assert_eq(p.s.ev[0].type, ZR_ZMTP_EV_READY);
	cr_assert_str_eq(p.s.ev[0].user_id, "bob");
	SEND(&p.c, &p.s, 0, "after");
	end_feed(&p.s, T0 + 3);
	REC_FRAME_IS(&p.s, 1, 0, "after");
	pair_close(&p);
}

Test(zmtp_conn_curve, a_pending_answer_that_refuses_sends_error_with_its_status)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs;
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	const char *text = NULL;
	struct span su[8];
	struct pair p;

	cs = cfg_server(ZR_PULL, &a);
	pair_open_cfg(&p, &cc, &cs);
	cr_assert(zr_zmtp_auth_pending(p.s.z));
	cr_assert_eq(zr_zmtp_auth_reply(p.s.z, 400, NULL, "no such key"), -ZR_EAUTH);
	cr_assert_eq(zr_zmtp_error(p.s.z), -ZR_EAUTH);
	cr_assert_eq(zr_zmtp_auth_status(p.s.z, &text), 400);
	cr_assert_str_eq(text, "no such key");
	pump(&p.c, &p.s, T0 + 1);
	cr_assert_eq(units_split(p.s.sent, p.s.sent_len, su, 8), 3);
	zt_assert_bytes("ERROR", su[2].p, su[2].n, ERROR_400, sizeof ERROR_400 - 1, __LINE__);
	cr_assert_eq(zr_zmtp_error(p.c.z), -ZR_EPEERERROR);
	cr_assert_eq(p.s.nev, 0);
	pair_close(&p);
}

Test(zmtp_conn_curve, the_handshake_deadline_runs_while_the_answer_is_pending)
{
	struct zr_zmtp_config cc = cfg_client(ZR_PUSH), cs;
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	struct pair p;

	cs = cfg_server(ZR_PULL, &a);
	cs.handshake_ivl_ms = 1000;
	pair_open_cfg(&p, &cc, &cs);
	cr_assert(zr_zmtp_auth_pending(p.s.z));
	cr_assert_eq(zr_zmtp_deadline(p.s.z), T0 + 1000);
	cr_assert_eq(zr_zmtp_tick(p.s.z, T0 + 1000), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_not(zr_zmtp_auth_pending(p.s.z));
	cr_assert_eq(zr_zmtp_auth_reply(p.s.z, 200, NULL, NULL), -ZR_EHANDSHAKE_TIMEOUT,
	             "a late answer is dropped");
	pair_close(&p);
}
