/*
 * zring probe — the probe as the server of a client under test (--listen).
 *
 * CURVE: the CurveZMQ server (RFC 26) run by hand with libsodium, so that
 * any step can be made wrong on purpose: HELLO opened with our long-term
 * secret key, WELCOME (S' and a cookie, boxed from S to C'), INITIATE
 * opened and its vouch checked (C' and our S), READY, then MESSAGE boxes
 * with nonces of our choosing. The codec's own server role (pr_handshake)
 * runs the opening handshake of the run; this one runs the cases and the
 * fuzzer, which need the short-term keys.
 *
 * PLAIN: the RFC 24 server likewise by hand (HELLO, WELCOME, INITIATE,
 * READY), each step replaceable.
 *
 * A client refused by a case may never connect again (libzmq gives up after
 * a failed handshake), so no oracle runs after these cases, and a client
 * that does not come back skips the rest instead of waiting each out.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <zring/error.h>

#include "probe.h"

#define LIMIT(c) ((c)->o->limit_ms)
/* How long a case waits for the client under test to connect again. */
#define ACCEPT_MS 10000u

static void
nonce_make(uint8_t n[24], const char *prefix16, uint64_t v)
{
	memcpy(n, prefix16, 16);
	for (int i = 0; i < 8; i++)
		n[16 + i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int
pr_cv_seal(uint8_t *out, const char *prefix16, uint64_t n, const uint8_t *plain, size_t plen,
           const uint8_t *pk, const uint8_t *sk)
{
	uint8_t nonce[24];

	nonce_make(nonce, prefix16, n);
	memcpy(out, nonce + 16, 8);
	return crypto_box_easy(out + 8, plain, plen, nonce, pk, sk) == 0 ? 0 : -EINVAL;
}

int
pr_cv_message(const struct pr_cv *s, uint64_t n, const uint8_t *plain, size_t plen, uint8_t *body,
              size_t cap)
{
	if (plen > (size_t)INT32_MAX - 64 || cap < 16 + crypto_box_MACBYTES + plen)
		return -ENOBUFS;
	memcpy(body, "\x07MESSAGE", 8);
	if (pr_cv_seal(body + 8, s->server ? "CurveZMQMESSAGES" : "CurveZMQMESSAGEC", n, plain,
	               plen, s->peer_pk, s->my_sk) < 0)
		return -EINVAL;
	return (int)(16 + crypto_box_MACBYTES + plen);
}

int
pr_cv_open(const struct pr_cv *s, const uint8_t *body, size_t len, uint8_t *plain, size_t cap)
{
	uint8_t nonce[24];

	if (len < 16 + crypto_box_MACBYTES || memcmp(body, "\x07MESSAGE", 8) != 0 ||
	    cap < len - 16 - crypto_box_MACBYTES)
		return -EBADMSG;
	nonce_make(nonce, s->server ? "CurveZMQMESSAGEC" : "CurveZMQMESSAGES", get_u64(body + 8));
	if (crypto_box_open_easy(plain, body + 16, len - 16, nonce, s->peer_pk, s->my_sk) != 0)
		return -EBADMSG;
	return (int)(len - 16 - crypto_box_MACBYTES);
}

/* ---- frames --------------------------------------------------------------------- */

static int
put_cmd(struct pr_conn *k, const char *name, const uint8_t *data, size_t len)
{
	uint8_t b[1024];
	int n = zr_zmtp_cmd_encode(b, sizeof(b), name, data, len);

	return n < 0 ? n : pr_write(k, b, (size_t)n, 2000);
}

/* The whole frame at the start of p (n octets), or 0 while it is not all
 * there. */
static size_t
frame_at(const uint8_t *p, size_t n, const uint8_t **body, size_t *len, uint8_t *flags)
{
	size_t hdr = (p[0] & ZR_ZMTP_LONG) ? 9 : 2;
	uint64_t l = 0;

	if (n < hdr)
		return 0;
	if (hdr == 9)
		for (int i = 1; i < 9; i++)
			l = (l << 8) | p[i];
	else
		l = p[1];
	if (l > n - hdr)
		return 0;
	*flags = p[0];
	*body = p + hdr;
	*len = (size_t)l;
	return hdr + (size_t)l;
}

/* Waits for the command whose length-prefixed name is name ("\x05HELLO"). */
static int
expect_cmd(struct pr_ctx *c, struct pr_conn *k, const char *name, const uint8_t **body,
           size_t *flen)
{
	int rc = pr_cmd_wait(c, k, body, flen);
	size_t nl = (size_t)name[0] + 1;

	if (rc >= 0 && ((size_t)rc < nl || memcmp(*body, name, nl) != 0))
		return -EPROTO;
	return rc;
}

static const char *
err_text(int rc)
{
	switch (rc) {
	case -EPIPE:
		return "closed";
	case -ETIMEDOUT:
		return "timeout";
	case -EPROTO:
		return "not the expected command";
	case -EBADMSG:
		return "a box that does not open";
	case -EACCES:
		return "a vouch that does not match";
	default:
		return zr_strerror(rc);
	}
}

/* Waits for the client under test; -1 when it connected, else a verdict. */
static int
srv_accept(struct pr_ctx *c, struct pr_conn *k)
{
	int rc;

	if (c->client_gone) {
		pr_obs(c, "skipped: the client stopped connecting after an earlier case");
		return PR_SKIP;
	}
	rc = pr_open(c, k, ACCEPT_MS);
	if (rc == 0)
		return -1;
	if (c->o->pid > 0 && !pr_pid_alive(c->o->pid)) {
		pr_obs(c, "process %d is gone", (int)c->o->pid);
		return PR_CRASH;
	}
	c->client_gone = true;
	pr_obs(c,
	       "skipped: no client connected within %u ms (%s); a client that gives up after a "
	       "refused handshake takes one case per run",
	       ACCEPT_MS, strerror(-rc));
	return PR_SKIP;
}

/* Our greeting as the server of mech, and the client's. */
static int
srv_greet(struct pr_ctx *c, struct pr_conn *k, int mech)
{
	uint8_t g[ZR_ZMTP_GREETING_SIZE];
	struct zr_zmtp_greeting pg;
	uint64_t end = zl_now_ms() + LIMIT(c);
	int rc;

	zr_zmtp_greeting_encode(g, 1, mech, true);
	rc = pr_write(k, g, sizeof(g), LIMIT(c));
	if (rc < 0)
		return rc;
	while (k->in_len < ZR_ZMTP_GREETING_SIZE) {
		if (zl_now_ms() >= end)
			return -ETIMEDOUT;
		if (pr_read(k, 100) < 0)
			return -EPIPE;
	}
	rc = zr_zmtp_greeting_parse(k->in, ZR_ZMTP_GREETING_SIZE, &pg);
	if (rc < 0)
		return rc;
	if (pg.mechanism != mech)
		return -EPROTO;
	k->peer_major = pg.major;
	k->peer_minor = pg.major > 3 || pg.minor >= 1 ? 1 : 0;
	pr_consume(k, ZR_ZMTP_GREETING_SIZE);
	return 0;
}

/* ---- the CurveZMQ server by hand -------------------------------------------------- */

struct cs {
	struct pr_cv s; /* s' and C' */
	uint8_t sn_pk[32];
	uint8_t cookie[96];
};

/* Greeting and HELLO: st gets C'. */
static int
cs_hello(struct pr_ctx *c, struct pr_conn *k, struct cs *st)
{
	uint8_t nonce[24], zero[64];
	const uint8_t *body;
	size_t flen;
	int rc = srv_greet(c, k, ZR_MECH_CURVE);

	if (rc < 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->s.server = true;
	st->s.nonce = 1;
	/* "\x05HELLO", version, 72 octets of padding, C', short nonce, box */
	rc = expect_cmd(c, k, "\x05HELLO", &body, &flen);
	if (rc < 0)
		return rc;
	if (rc != 200)
		return -EPROTO;
	memcpy(st->s.peer_pk, body + 80, 32);
	memcpy(nonce, "CurveZMQHELLO---", 16);
	memcpy(nonce + 16, body + 112, 8);
	rc = crypto_box_open_easy(zero, body + 120, 80, nonce, st->s.peer_pk, c->o->secret_key);
	pr_consume(k, flen);
	return rc == 0 ? 0 : -EBADMSG;
}

/* WELCOME: nonce, box[S' + cookie](S -> C'), made wrong as how says. */
static int
cs_welcome(struct pr_ctx *c, struct pr_conn *k, struct cs *st, long how)
{
	uint8_t plain[128], nonce[24], d[160], other_pk[32], other_sk[32];
	const uint8_t *sk = c->o->secret_key;
	int rc;

	crypto_box_keypair(st->sn_pk, st->s.my_sk);
	/* We keep the state, so the cookie need not be sealed: any 96 octets
	 * the client must send back unchanged. */
	randombytes_buf(st->cookie, sizeof(st->cookie));
	memcpy(plain, st->sn_pk, 32);
	memcpy(plain + 32, st->cookie, 96);
	memcpy(nonce, "WELCOME-", 8);
	randombytes_buf(nonce + 8, 16);
	memcpy(d, nonce + 8, 16);
	crypto_box_keypair(other_pk, other_sk);
	if (how == CS_WELCOME_OTHER_KEY)
		sk = other_sk;
	rc = crypto_box_easy(d + 16, plain, sizeof(plain), nonce, st->s.peer_pk, sk);
	sodium_memzero(other_sk, sizeof(other_sk));
	if (rc != 0)
		return -EINVAL;
	if (how == CS_WELCOME_BAD_BOX)
		d[16 + 40] ^= 0x01;
	return put_cmd(k, "WELCOME", d, how == CS_WELCOME_SHORT ? sizeof(d) - 1 : sizeof(d));
}

/* The client's INITIATE: our cookie back, C and a vouch for C' and our S,
 * metadata. Sets k->peer_type. */
static int
cs_initiate(struct pr_ctx *c, struct pr_conn *k, struct cs *st)
{
	uint8_t nonce[24], vnonce[24], vouch[64], *plain;
	const uint8_t *body, *v;
	size_t flen, blen, vl;
	int rc = expect_cmd(c, k, "\x08INITIATE", &body, &flen);

	if (rc < 0)
		return rc;
	/* name 9, cookie 96, short nonce 8, box of C 32 + vouch 96 + metadata */
	if ((size_t)rc < 9 + 96 + 8 + crypto_box_MACBYTES + 128 ||
	    memcmp(body + 9, st->cookie, 96) != 0)
		return -EPROTO;
	blen = (size_t)rc - 113;
	plain = malloc(blen);
	if (plain == NULL)
		return -ENOMEM;
	nonce_make(nonce, "CurveZMQINITIATE", get_u64(body + 105));
	rc = crypto_box_open_easy(plain, body + 113, blen, nonce, st->s.peer_pk, st->s.my_sk);
	pr_consume(k, flen);
	if (rc != 0) {
		free(plain);
		return -EBADMSG;
	}
	blen -= crypto_box_MACBYTES;
	memcpy(vnonce, "VOUCH---", 8);
	memcpy(vnonce + 8, plain + 32, 16);
	rc = crypto_box_open_easy(vouch, plain + 48, 80, vnonce, plain, st->s.my_sk);
	if (rc != 0 || memcmp(vouch, st->s.peer_pk, 32) != 0 ||
	    memcmp(vouch + 32, c->o->public_key, 32) != 0)
		rc = -EACCES;
	else if (zr_zmtp_props_find(plain + 128, blen - 128, "Socket-Type", &v, &vl) == 0)
		k->peer_type = zr_socktype_parse(v, vl);
	free(plain);
	return rc;
}

/* READY: short nonce, box[metadata](S' -> C'), made wrong as how says. */
static int
cs_ready(struct pr_ctx *c, struct pr_conn *k, struct cs *st, long how)
{
	uint8_t meta[64], d[8 + crypto_box_MACBYTES + 64];
	const char *t = zr_socktype_name(c->o->our_type);
	int ml = 0;

	if (how != CS_READY_NO_TYPE)
		ml = zr_zmtp_prop_encode(meta, sizeof(meta), "Socket-Type", (const uint8_t *)t,
		                         strlen(t));
	if (ml < 0)
		return ml;
	if (pr_cv_seal(d, "CurveZMQREADY---", st->s.nonce++, meta, (size_t)ml, st->s.peer_pk,
	               st->s.my_sk) < 0)
		return -EINVAL;
	if (how == CS_READY_BAD_BOX)
		d[8] ^= 0x80;
	return put_cmd(k, "READY", d,
	               how == CS_READY_SHORT ? 8 : 8 + crypto_box_MACBYTES + (size_t)ml);
}

/* A PING (the plaintext of a command: flags 0x02, as libzmq boxes them)
 * boxed with short nonce n; the frame goes to out, its length returned. */
static int
cs_ping(const struct pr_cv *s, uint64_t n, uint8_t *out, size_t cap)
{
	static const uint8_t ping[] = {0x02, 4, 'P', 'I', 'N', 'G', 0, 0, 'p', 'r', 'o', 'b', 'e'};
	uint8_t body[128];
	int bl = pr_cv_message(s, n, ping, sizeof(ping), body, sizeof(body));
	int hl;

	if (bl < 0)
		return bl;
	/* libzmq's form: MESSAGE travels in a data frame. */
	hl = zr_zmtp_frame_header(out, (uint64_t)bl, 0);
	if (hl < 0 || cap < (size_t)hl + (size_t)bl)
		return -ENOBUFS;
	memcpy(out + hl, body, (size_t)bl);
	return hl + bl;
}

static int
cs_send_ping(struct pr_conn *k, const struct pr_cv *s, uint64_t n, bool damage)
{
	uint8_t f[160];
	int fl = cs_ping(s, n, f, sizeof(f));

	if (fl < 0)
		return fl;
	if (damage)
		f[fl - 3] ^= 0x01;
	return pr_write(k, f, (size_t)fl, 2000);
}

enum {
	W_QUIET,  /* nothing within the time */
	W_CLOSED, /* the client closed */
	W_PONG,   /* a PONG came (in a MESSAGE box that opened) */
	W_CMD,    /* another frame came: name says which */
};

/* What the client does within ms. With a session s, MESSAGE boxes are
 * opened and a PONG reported. */
static int
cs_watch(struct pr_ctx *c, struct pr_conn *k, const struct pr_cv *s, unsigned ms, char *name,
         size_t cap)
{
	uint64_t end = zl_now_ms() + ms;

	(void)c;
	name[0] = '\0';
	for (;;) {
		const uint8_t *body;
		size_t len, flen;
		uint8_t flags;

		while (k->in_len > 0 &&
		       (flen = frame_at(k->in, k->in_len, &body, &len, &flags)) > 0) {
			/* MESSAGE comes in a data frame (libzmq) or a command frame
			 * (RFC 26); anything else in a data frame is clear text. */
			bool message = len >= 8 && memcmp(body, "\x07MESSAGE", 8) == 0;
			if (!(flags & ZR_ZMTP_COMMAND) && (s == NULL || !message)) {
				snprintf(name, cap, "a clear-text message frame");
				pr_consume(k, flen);
				return W_CMD;
			}
			if (s != NULL && message) {
				uint8_t plain[512];
				int pl = len <= sizeof(plain)
				                 ? pr_cv_open(s, body, len, plain, sizeof(plain))
				                 : -EBADMSG;
				pr_consume(k, flen);
				if (pl >= 6 && (plain[0] & 0x02) &&
				    memcmp(plain + 1, "\x04PONG", 5) == 0)
					return W_PONG;
				continue;
			}
			if (len >= 1 && (size_t)body[0] + 1 <= len)
				pr_escape(name, cap, body + 1, body[0]);
			else
				snprintf(name, cap, "a malformed command");
			pr_consume(k, flen);
			return W_CMD;
		}
		uint64_t now = zl_now_ms();
		if (k->closed)
			return W_CLOSED;
		if (now >= end)
			return W_QUIET;
		if (pr_read(k, (unsigned)(end - now)) < 0)
			return W_CLOSED;
	}
}

static void
obs_closed(struct pr_ctx *c, const struct pr_conn *k, uint64_t t0)
{
	pr_obs(c, "closed after %llu ms (%s)",
	       (unsigned long long)(k->closed_ms > t0 ? k->closed_ms - t0 : 0),
	       k->reset ? "reset" : "EOF");
}

/* The server's whole handshake by hand on a connection already accepted. */
static int
cs_server(struct pr_ctx *c, struct pr_conn *k, struct cs *st)
{
	int rc = cs_hello(c, k, st);

	if (rc == 0)
		rc = cs_welcome(c, k, st, -1);
	if (rc == 0)
		rc = cs_initiate(c, k, st);
	if (rc == 0)
		rc = cs_ready(c, k, st, -1);
	return rc;
}

int
pr_cv_handshake(struct pr_ctx *c, struct pr_conn *k, struct pr_cv *s)
{
	struct cs st;
	int rc;

	if (!c->o->listen)
		return pr_cv_client(c, k, s);
	rc = pr_open(c, k, ACCEPT_MS);
	if (rc < 0)
		return rc;
	rc = cs_server(c, k, &st);
	if (rc == 0)
		*s = st.s;
	sodium_memzero(&st, sizeof(st));
	return rc;
}

/* The control: the same hand-built server, unaltered, must reach READY and
 * get a PONG to a boxed PING; so a pass means the client refused the
 * alteration, not a mistake of the probe's. -1 when it did, else a verdict. */
static int
cs_control(struct pr_ctx *c)
{
	struct pr_conn k;
	struct cs st;
	char name[64];
	int v = srv_accept(c, &k), rc, w = W_QUIET;

	if (v >= 0)
		return v;
	rc = cs_server(c, &k, &st);
	if (rc == 0)
		rc = cs_send_ping(&k, &st.s, st.s.nonce++, false);
	if (rc == 0)
		w = cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name));
	sodium_memzero(&st, sizeof(st));
	if (rc == 0 && w == W_PONG) {
		pr_close(&k);
		return -1;
	}
	pr_obs(c, "skipped: the probe's own unaltered handshake was not answered (%s%s)",
	       rc < 0          ? err_text(rc)
	       : w == W_CLOSED ? "closed after READY"
	       : w == W_CMD    ? "after READY: "
	                       : "no PONG to a PING after READY",
	       rc == 0 && w == W_CMD ? name : "");
	pr_close(&k);
	return PR_SKIP;
}

int
pr_case_curve_server(struct pr_ctx *c, const struct pr_case *kc)
{
	static const uint8_t error400[] = {3, '4', '0', '0'};
	struct pr_conn k;
	struct cs st;
	char name[64];
	uint64_t t0, top;
	int v, rc, w;

	v = cs_control(c);
	if (v >= 0)
		return v;
	v = srv_accept(c, &k);
	if (v >= 0)
		return v;
	rc = cs_hello(c, &k, &st);
	if (rc == 0 && kc->arg == CS_ERROR_WELCOME) {
		rc = put_cmd(&k, "ERROR", error400, sizeof(error400));
	} else if (rc == 0) {
		rc = cs_welcome(c, &k, &st, kc->arg <= CS_WELCOME_OTHER_KEY ? kc->arg : (long)-1);
	}
	if (rc < 0) {
		pr_obs(c, "skipped: the client's second handshake failed before WELCOME (%s)",
		       err_text(rc));
		v = PR_SKIP;
		goto out;
	}
	t0 = zl_now_ms();
	if (kc->arg <= CS_ERROR_WELCOME) {
		/* The client must not answer with INITIATE. */
		w = cs_watch(c, &k, NULL, LIMIT(c), name, sizeof(name));
		if (w == W_CLOSED) {
			obs_closed(c, &k, t0);
			v = PR_PASS;
		} else if (w == W_CMD) {
			pr_obs(c, "answered with %s", name);
			v = kc->accepted;
		} else {
			pr_obs(c, "still open %u ms later, nothing sent", LIMIT(c));
			v = PR_LENIENT;
		}
		goto out;
	}
	rc = cs_initiate(c, &k, &st);
	if (rc < 0) {
		pr_obs(c, "skipped: the client's INITIATE failed (%s)", err_text(rc));
		v = PR_SKIP;
		goto out;
	}
	if (kc->arg <= CS_ERROR_READY) {
		if (kc->arg == CS_ERROR_READY)
			rc = put_cmd(&k, "ERROR", error400, sizeof(error400));
		else
			rc = cs_ready(c, &k, &st, kc->arg);
		/* Whether the client took the READY: a boxed PING after it. */
		if (rc == 0 && kc->arg != CS_ERROR_READY)
			cs_send_ping(&k, &st.s, st.s.nonce++, false);
		t0 = zl_now_ms();
		w = cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name));
		if (w == W_CLOSED) {
			obs_closed(c, &k, t0);
			v = PR_PASS;
		} else if (w == W_PONG) {
			pr_obs(c, "served: PONG to a PING after it");
			v = kc->accepted;
		} else if (w == W_CMD) {
			pr_obs(c, "answered with %s", name);
			v = kc->accepted;
		} else {
			pr_obs(c, "still open %u ms later, no answer", LIMIT(c));
			v = PR_LENIENT;
		}
		goto out;
	}

	/* MESSAGE cases: READY, then PINGs in boxes. */
	rc = cs_ready(c, &k, &st, -1);
	if (rc < 0) {
		pr_obs(c, "skipped: our READY could not be sent (%s)", err_text(rc));
		v = PR_SKIP;
		goto out;
	}
	top = st.s.nonce; /* above every nonce used: set per case below */
	if (kc->arg != CS_MSG_READY_NONCE) {
		/* A PING that must be answered first: the session works. */
		rc = cs_send_ping(&k, &st.s, st.s.nonce, false);
		w = rc == 0 ? cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name)) : W_CLOSED;
		if (w != W_PONG) {
			pr_obs(c, "skipped: no PONG to the probe's first PING on this connection");
			v = PR_SKIP;
			goto out;
		}
	}
	switch (kc->arg) {
	case CS_MSG_REPLAY: /* the same nonce again */
		top = st.s.nonce + 1;
		rc = cs_send_ping(&k, &st.s, st.s.nonce, false);
		break;
	case CS_MSG_BACKWARDS: /* N+2 (answered), then N+1 */
		rc = cs_send_ping(&k, &st.s, st.s.nonce + 2, false);
		w = rc == 0 ? cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name)) : W_CLOSED;
		if (w != W_PONG) {
			pr_obs(c, "skipped: no PONG to a PING whose nonce skipped one");
			v = PR_SKIP;
			goto out;
		}
		top = st.s.nonce + 3;
		rc = cs_send_ping(&k, &st.s, st.s.nonce + 1, false);
		break;
	case CS_MSG_READY_NONCE: /* READY's nonce once more */
		top = st.s.nonce;
		rc = cs_send_ping(&k, &st.s, st.s.nonce - 1, false);
		break;
	default: /* CS_MSG_BAD_BOX */
		top = st.s.nonce + 2;
		rc = cs_send_ping(&k, &st.s, st.s.nonce + 1, true);
		break;
	}
	t0 = zl_now_ms();
	w = rc == 0 ? cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name)) : W_CLOSED;
	if (w == W_PONG) {
		pr_obs(c, "accepted: PONG to the PING inside it");
		v = kc->accepted;
	} else if (w == W_CLOSED) {
		obs_closed(c, &k, t0);
		v = PR_PASS;
	} else {
		/* Dropped, or stuck: a fresh PING above every nonce tells. */
		rc = cs_send_ping(&k, &st.s, top, false);
		w = rc == 0 ? cs_watch(c, &k, &st.s, LIMIT(c), name, sizeof(name)) : W_CLOSED;
		if (w == W_PONG) {
			pr_obs(c, "dropped without closing: a later PING is still answered");
			v = PR_LENIENT;
		} else if (w == W_CLOSED) {
			obs_closed(c, &k, t0);
			v = PR_PASS;
		} else {
			pr_obs(c, "open, no PONG within %u ms", LIMIT(c));
			v = PR_HANG;
		}
	}
out:
	sodium_memzero(&st, sizeof(st));
	pr_close(&k);
	return v;
}

/* ---- a PLAIN client under test ------------------------------------------------------ */

int
pr_case_plain_client(struct pr_ctx *c, const struct pr_case *kc)
{
	/* "\x05ERROR", a reason length of 200, then only "400" */
	static const uint8_t overrun[] = {5, 'E', 'R', 'R', 'O', 'R', 200, '4', '0', '0'};
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	struct pr_conn k;
	const uint8_t *body;
	size_t flen;
	uint8_t meta[64];
	int ml = 0, rc, v = srv_accept(c, &k);

	if (v >= 0)
		return v;
	rc = srv_greet(c, &k, ZR_MECH_PLAIN);
	if (rc == 0)
		rc = expect_cmd(c, &k, "\x05HELLO", &body, &flen);
	if (rc < 0) {
		pr_obs(c, "skipped: no HELLO from the client (%s)", err_text(rc));
		pr_close(&k);
		return PR_SKIP;
	}
	pr_consume(&k, flen);
	if (kc->arg != PC_READY_NO_TYPE) {
		const char *t = zr_socktype_name(c->o->our_type);
		ml = zr_zmtp_prop_encode(meta, sizeof(meta), "Socket-Type", (const uint8_t *)t,
		                         strlen(t));
	}
	switch (kc->arg) {
	case PC_WELCOME_GARBAGE:
		rc = put_cmd(&k, "WELCOME", NULL, 0);
		if (rc == 0)
			rc = pr_write(&k, garbage, sizeof(garbage), LIMIT(c));
		break;
	case PC_ERROR_OVERRUN:
		rc = pr_send_frame(&k, ZR_ZMTP_COMMAND, overrun, sizeof(overrun));
		break;
	case PC_READY_NO_TYPE:
		rc = put_cmd(&k, "WELCOME", NULL, 0);
		if (rc == 0)
			rc = expect_cmd(c, &k, "\x08INITIATE", &body, &flen);
		if (rc < 0) {
			pr_obs(c, "skipped: no INITIATE after our WELCOME (%s)", err_text(rc));
			pr_close(&k);
			return PR_SKIP;
		}
		pr_consume(&k, flen);
		rc = put_cmd(&k, "READY", NULL, 0);
		pr_mark_ready(&k);
		break;
	default: /* PC_READY_BEFORE_WELCOME */
		rc = ml < 0 ? ml : put_cmd(&k, "READY", meta, (size_t)ml);
		pr_mark_ready(&k);
		break;
	}
	(void)rc; /* a write that failed on a close is judged as the close */
	/* After a READY the PING of pr_judge tells whether the client took it;
	 * before one, only a close counts. */
	v = pr_judge(c, &k, EXP_CLOSE, kc->accepted, LIMIT(c));
	pr_close(&k);
	return v;
}
