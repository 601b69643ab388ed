/*
 * zmtp/curve.c — the CurveZMQ mechanism core (RFC 26), sans-IO. See curve.h
 * for the layouts, the call sequence and the choices made.
 *
 * Every box is libsodium's "easy" form (MAC first), which is exactly what
 * libzmq puts on the wire after dropping crypto_box's 16 leading zero octets.
 */
#include "curve.h"

#include <string.h>

#include <sodium.h>

#define CURVE_MAC crypto_box_MACBYTES     /* 16 */
#define CURVE_NONCE crypto_box_NONCEBYTES /* 24 */

/* Offsets inside the bodies (name-length octet and name included). */
#define HELLO_VERSION 6
#define HELLO_CN_PUBLIC 80
#define HELLO_NONCE 112
#define HELLO_BOX 120
#define HELLO_PADDING 8
#define HELLO_BOX_PLAIN 64

#define WELCOME_NONCE 8
#define WELCOME_BOX 24
#define WELCOME_PLAIN 128 /* S' + cookie */

#define COOKIE_SIZE 96 /* long nonce + secretbox[C' + s'] */
#define COOKIE_PLAIN 64

#define INITIATE_COOKIE 9
#define INITIATE_NONCE 105
#define INITIATE_BOX 113

#define VOUCH_PLAIN 64
#define VOUCH_BOX 80

#define READY_NONCE 6
#define READY_BOX 14

#define MESSAGE_NONCE 8
#define MESSAGE_BOX 16

static const uint8_t curve_hello_name[] = "\x05HELLO";
static const uint8_t curve_welcome_name[] = "\x07WELCOME";
static const uint8_t curve_initiate_name[] = "\x08INITIATE";
static const uint8_t curve_ready_name[] = "\x05READY";
static const uint8_t curve_message_name[] = "\x07MESSAGE";
static const uint8_t curve_error_name[] = "\x05"
					  "ERROR";

static void
curve_random_default(void *arg, uint8_t *buf, size_t len)
{
	(void)arg;
	randombytes_buf(buf, len);
}

static void
curve_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)(v & 0xffu);
		v >>= 8;
	}
}

static uint64_t
curve_get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
curve_wipe_secrets(struct zr__curve *c)
{
	sodium_memzero(c->secret_key, sizeof c->secret_key);
	sodium_memzero(c->cn_secret, sizeof c->cn_secret);
	sodium_memzero(c->cookie_key, sizeof c->cookie_key);
	sodium_memzero(c->precom, sizeof c->precom);
	sodium_memzero(c->tx_key, sizeof c->tx_key);
	sodium_memzero(c->rx_key, sizeof c->rx_key);
}

/* Peer-caused failure: sticky. */
static int
curve_fail(struct zr__curve *c, int err)
{
	c->state = ZR__CURVE_FAILED;
	c->err = err;
	curve_wipe_secrets(c);
	return err;
}

/*
 * The name at the front of body: returns 1 if it is `name` (a length-prefixed
 * string), 0 if it is another well-formed name, or ZR__CURVE_EMALFORMED if the
 * name-length octet is 0 or runs past the body.
 */
static int
curve_name_is(const uint8_t *body, size_t len, const uint8_t *name)
{
	if (len < 1 || body[0] == 0 || (size_t)body[0] + 1 > len)
		return ZR__CURVE_EMALFORMED;
	return body[0] == name[0] && memcmp(body + 1, name + 1, name[0]) == 0;
}

/* A short nonce from the peer must be above every one accepted before it. */
static bool
curve_peer_nonce_ok(const struct zr__curve *c, uint64_t n)
{
	return !c->peer_nonce_seen || n > c->peer_nonce;
}

static void
curve_peer_nonce_take(struct zr__curve *c, uint64_t n)
{
	c->peer_nonce = n;
	c->peer_nonce_seen = true;
}

/* Our next short nonce; false once exhausted (never sends the same twice). */
static bool
curve_nonce_next(struct zr__curve *c, uint64_t *n)
{
	if (c->nonce == UINT64_MAX)
		return false;
	*n = c->nonce++;
	return true;
}

static void
curve_nonce_make(uint8_t nonce[CURVE_NONCE], const char *prefix16, uint64_t n)
{
	memcpy(nonce, prefix16, 16);
	curve_put_u64(nonce + 16, n);
}

/* A transient key pair from our random source: crypto_box_keypair's recipe. */
static int
curve_keypair_make(struct zr__curve *c, uint8_t pk[ZR__CURVE_KEY], uint8_t sk[ZR__CURVE_KEY])
{
	c->random(c->random_arg, sk, ZR__CURVE_KEY);
	return crypto_scalarmult_base(pk, sk) == 0 ? 0 : -EIO;
}

/*
 * ERROR while a client waits: RFC 23 layout, reason length within the body.
 * Returns the sticky ZR__CURVE_EPEERERROR, or ZR__CURVE_EMALFORMED.
 */
static int
curve_client_on_error(struct zr__curve *c, const uint8_t *body, size_t len)
{
	if (len < 7 || (size_t)body[6] > len - 7)
		return curve_fail(c, ZR__CURVE_EMALFORMED);
	memcpy(c->reason, body + 7, body[6]);
	c->reason[body[6]] = '\0';
	c->reason_len = body[6];
	return curve_fail(c, ZR__CURVE_EPEERERROR);
}

/*
 * MESSAGE boxes. crypto_box_easy_afternm is XSalsa20-Poly1305 and starts each
 * box with HSalsa20(shared key, nonce[0..16)); a MESSAGE nonce's first 16
 * octets are the fixed "CurveZMQMESSAGEC" or "...S", so that step gives the
 * same subkey for every MESSAGE one way. It is done once per direction when
 * traffic starts (at 64 B it was a sixth of each side's CPU), and the boxes
 * below are crypto_secretbox_detached / _open_detached with it taken out,
 * byte for byte the same (tests compare them with crypto_box_easy_afternm).
 */
static void
curve_traffic_keys(struct zr__curve *c)
{
	static const uint8_t to_server[16] = "CurveZMQMESSAGEC";
	static const uint8_t to_client[16] = "CurveZMQMESSAGES";

	crypto_core_hsalsa20(c->tx_key, c->as_server ? to_client : to_server, c->precom, NULL);
	crypto_core_hsalsa20(c->rx_key, c->as_server ? to_server : to_client, c->precom, NULL);
}

/* Salsa20's first 64-octet block: 32 octets of Poly1305 key, then the
 * keystream for the first (up to) 32 octets of the plaintext. */
#define CURVE_BLOCK0_TEXT 32u
/*
 * Below this many octets after the first block, the rest is made one block
 * at a time with crypto_core_salsa20: libsodium's stream call goes one block
 * at a time there too, and costs more per block (its multi-block path only
 * starts at 256 octets). A 64 B message needs two blocks; this took an
 * eighth off each box.
 */
#define CURVE_BLOCKWISE_MAX 256u

/* Keystream block `block` of Salsa20(key, n8) into ks. */
static void
curve_block(uint8_t ks[64], const uint8_t n8[8], uint64_t block, const uint8_t *key)
{
	uint8_t in[16];

	memcpy(in, n8, 8);
	for (int i = 0; i < 8; i++) /* the block counter, little-endian */
		in[8 + i] = (uint8_t)(block >> (8 * i));
	crypto_core_salsa20(ks, in, key, NULL);
}

static void
curve_xor(uint8_t *out, const uint8_t *in, const uint8_t *ks, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t a, b;
		memcpy(&a, in + i, 8);
		memcpy(&b, ks + i, 8);
		a ^= b;
		memcpy(out + i, &a, 8);
	}
	for (; i < n; i++)
		out[i] = in[i] ^ ks[i];
}

/*
 * out = in ^ keystream from block 1 on (n octets; out == in allowed, or
 * apart). Short tails block by block, long ones with the stream call.
 */
static void
curve_xor_rest(uint8_t *out, const uint8_t *in, size_t n, const uint8_t n8[8], const uint8_t *key)
{
	uint8_t ks[64];

	if (n >= CURVE_BLOCKWISE_MAX) {
		crypto_stream_salsa20_xor_ic(out, in, n, n8, 1, key);
		return;
	}
	for (uint64_t b = 1; n > 0; b++) {
		size_t t = n < sizeof ks ? n : sizeof ks;
		curve_block(ks, n8, b, key);
		curve_xor(out, in, ks, t);
		out += t;
		in += t;
		n -= t;
	}
	sodium_memzero(ks, sizeof ks);
}

/*
 * Seals flags || data (1 + len octets, never assembled: data is read where
 * it lies) into ct with the tag in mac. data may be ct + 1 or outside ct.
 */
static void
curve_seal(const uint8_t key[ZR__CURVE_KEY], const uint8_t n8[8], uint8_t flags,
           const uint8_t *data, size_t len, uint8_t mac[CURVE_MAC], uint8_t *ct)
{
	uint8_t block0[64];
	size_t mlen = 1 + len;
	size_t mlen0 = mlen < CURVE_BLOCK0_TEXT ? mlen : CURVE_BLOCK0_TEXT;

	curve_block(block0, n8, 0, key);
	/* In place (data == ct + 1) this overwrites only data already read:
	 * ct[i] takes data[i - 1]. */
	ct[0] = flags ^ block0[CURVE_BLOCK0_TEXT];
	curve_xor(ct + 1, data, block0 + CURVE_BLOCK0_TEXT + 1, mlen0 - 1);
	if (mlen > mlen0)
		curve_xor_rest(ct + mlen0, data + (mlen0 - 1), mlen - mlen0, n8, key);
	crypto_onetimeauth_poly1305(mac, ct, mlen, block0);
	sodium_memzero(block0, sizeof block0);
}

/*
 * Opens ct (mlen octets, tag mac) in place. One keystream block gives both
 * the Poly1305 key and the first plaintext octets (libsodium's open makes
 * that block twice). Nothing is written unless the tag is right.
 */
static int
curve_open(const uint8_t key[ZR__CURVE_KEY], const uint8_t n8[8], const uint8_t mac[CURVE_MAC],
           uint8_t *ct, size_t mlen)
{
	uint8_t block0[64];
	size_t mlen0 = mlen < CURVE_BLOCK0_TEXT ? mlen : CURVE_BLOCK0_TEXT;
	int rc;

	curve_block(block0, n8, 0, key);
	rc = crypto_onetimeauth_poly1305_verify(mac, ct, mlen, block0);
	if (rc == 0) {
		curve_xor(ct, ct, block0 + CURVE_BLOCK0_TEXT, mlen0);
		if (mlen > mlen0)
			curve_xor_rest(ct + mlen0, ct + mlen0, mlen - mlen0, n8, key);
	}
	sodium_memzero(block0, sizeof block0);
	return rc == 0 ? 0 : -1;
}

int
zr__curve_init(struct zr__curve *c, const struct zr__curve_config *cfg)
{
	if (c == NULL || cfg == NULL)
		return -EINVAL;
	if (sodium_init() < 0)
		return -ENOSYS;
	memset(c, 0, sizeof *c);
	c->as_server = cfg->as_server;
	c->state = cfg->as_server ? ZR__CURVE_SERVER_HELLO : ZR__CURVE_CLIENT_START;
	c->nonce = 1; /* libzmq's first short nonce */
	c->random = cfg->random != NULL ? cfg->random : curve_random_default;
	c->random_arg = cfg->random_arg;
	memcpy(c->public_key, cfg->public_key, ZR__CURVE_KEY);
	memcpy(c->secret_key, cfg->secret_key, ZR__CURVE_KEY);
	if (cfg->as_server)
		memcpy(c->server_key, cfg->public_key, ZR__CURVE_KEY);
	else
		memcpy(c->server_key, cfg->server_key, ZR__CURVE_KEY);
	return 0;
}

void
zr__curve_fini(struct zr__curve *c)
{
	if (c != NULL)
		sodium_memzero(c, sizeof *c);
}

int
zr__curve_state(const struct zr__curve *c)
{
	return c->state;
}

int
zr__curve_error(const struct zr__curve *c)
{
	return c->state == ZR__CURVE_FAILED ? c->err : 0;
}

const uint8_t *
zr__curve_peer_key(const struct zr__curve *c)
{
	if (!c->as_server || (c->state != ZR__CURVE_SERVER_ACCEPT && c->state != ZR__CURVE_TRAFFIC))
		return NULL;
	return c->peer_key;
}

const char *
zr__curve_error_reason(const struct zr__curve *c)
{
	return c->reason;
}

/* Caller-side checks shared by every step: sticky failure, role and state. */
static int
curve_expect(const struct zr__curve *c, int state)
{
	if (c->state == ZR__CURVE_FAILED)
		return c->err;
	return c->state == state ? 0 : -EINVAL;
}

/*
 * The checks every command from the peer starts with: its name, and its size
 * (exactly size, or at least size). An ERROR where the client may read one
 * gives 1 (the caller hands it on); else 0 or the failure.
 */
static int
curve_command(struct zr__curve *c, const uint8_t *body, size_t len, const uint8_t *name,
              size_t size, bool exact, bool error_ok)
{
	int rc = curve_name_is(body, len, name);
	if (rc < 0)
		return curve_fail(c, rc);
	if (rc == 0) {
		if (error_ok && curve_name_is(body, len, curve_error_name) == 1)
			return 1;
		return curve_fail(c, ZR__CURVE_EUNEXPECTED);
	}
	if (exact ? len != size : len < size)
		return curve_fail(c, ZR__CURVE_EMALFORMED);
	return 0;
}

int
zr__curve_client_hello(struct zr__curve *c, uint8_t *out, size_t cap)
{
	int rc = curve_expect(c, ZR__CURVE_CLIENT_START);
	if (rc != 0)
		return rc;
	if (cap < ZR__CURVE_HELLO_SIZE)
		return -ENOBUFS;
	uint64_t n;
	if (!curve_nonce_next(c, &n))
		return curve_fail(c, ZR__CURVE_EEXHAUSTED);
	if (curve_keypair_make(c, c->cn_public, c->cn_secret) != 0)
		return curve_fail(c, -EIO);

	memset(out, 0, ZR__CURVE_HELLO_SIZE);
	memcpy(out, curve_hello_name, 6);
	out[HELLO_VERSION] = 1;
	out[HELLO_VERSION + 1] = 0;
	/* out[8..80): 72 octets of zero padding */
	memcpy(out + HELLO_CN_PUBLIC, c->cn_public, ZR__CURVE_KEY);
	curve_put_u64(out + HELLO_NONCE, n);

	uint8_t nonce[CURVE_NONCE];
	uint8_t zeros[HELLO_BOX_PLAIN] = {0};
	curve_nonce_make(nonce, "CurveZMQHELLO---", n);
	if (crypto_box_easy(out + HELLO_BOX, zeros, sizeof zeros, nonce, c->server_key,
	                    c->cn_secret) != 0)
		return curve_fail(c, -EIO);
	c->state = ZR__CURVE_CLIENT_WELCOME;
	return (int)ZR__CURVE_HELLO_SIZE;
}

int
zr__curve_client_on_welcome(struct zr__curve *c, const uint8_t *body, size_t len,
                            const uint8_t *meta, size_t meta_len, uint8_t *out, size_t cap)
{
	int rc = curve_expect(c, ZR__CURVE_CLIENT_WELCOME);
	if (rc != 0)
		return rc;
	if (meta_len > SIZE_MAX - ZR__CURVE_INITIATE_MIN || (meta_len > 0 && meta == NULL) ||
	    ZR__CURVE_INITIATE_MIN + meta_len > (size_t)INT32_MAX)
		return -EINVAL;
	size_t total = ZR__CURVE_INITIATE_MIN + meta_len;
	if (cap < total)
		return -ENOBUFS;

	rc = curve_command(c, body, len, curve_welcome_name, ZR__CURVE_WELCOME_SIZE, true, true);
	if (rc == 1)
		return curve_client_on_error(c, body, len);
	if (rc < 0)
		return rc;

	uint8_t nonce[CURVE_NONCE];
	uint8_t plain[WELCOME_PLAIN];
	memcpy(nonce, "WELCOME-", 8);
	memcpy(nonce + 8, body + WELCOME_NONCE, 16);
	if (crypto_box_open_easy(plain, body + WELCOME_BOX, WELCOME_PLAIN + CURVE_MAC, nonce,
	                         c->server_key, c->cn_secret) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	memcpy(c->cn_peer, plain, ZR__CURVE_KEY);
	memcpy(c->cookie, plain + ZR__CURVE_KEY, COOKIE_SIZE);
	sodium_memzero(plain, sizeof plain);
	if (crypto_box_beforenm(c->precom, c->cn_peer, c->cn_secret) != 0)
		return curve_fail(c, ZR__CURVE_EKEY); /* S' is a low-order point */

	/* INITIATE. The plaintext is built in place, then boxed in place. */
	uint64_t n;
	if (!curve_nonce_next(c, &n))
		return curve_fail(c, ZR__CURVE_EEXHAUSTED);
	uint8_t *plain_out = out + INITIATE_BOX + CURVE_MAC;
	/* meta may be anywhere, even inside out: move it first. */
	if (meta_len > 0)
		memmove(plain_out + ZR__CURVE_INITIATE_PLAIN_MIN, meta, meta_len);
	memcpy(out, curve_initiate_name, 9);
	memcpy(out + INITIATE_COOKIE, c->cookie, COOKIE_SIZE);
	curve_put_u64(out + INITIATE_NONCE, n);

	/* vouch = box[C' + S](C->S'), nonce "VOUCH---" + 16 random */
	uint8_t vouch_plain[VOUCH_PLAIN];
	uint8_t vouch_nonce[CURVE_NONCE];
	memcpy(vouch_plain, c->cn_public, ZR__CURVE_KEY);
	memcpy(vouch_plain + ZR__CURVE_KEY, c->server_key, ZR__CURVE_KEY);
	memcpy(vouch_nonce, "VOUCH---", 8);
	c->random(c->random_arg, vouch_nonce + 8, 16);
	memcpy(plain_out, c->public_key, ZR__CURVE_KEY);
	memcpy(plain_out + ZR__CURVE_KEY, vouch_nonce + 8, 16);
	if (crypto_box_easy(plain_out + 48, vouch_plain, VOUCH_PLAIN, vouch_nonce, c->cn_peer,
	                    c->secret_key) != 0)
		return curve_fail(c, -EIO);

	curve_nonce_make(nonce, "CurveZMQINITIATE", n);
	if (crypto_box_easy_afternm(out + INITIATE_BOX, plain_out,
	                            ZR__CURVE_INITIATE_PLAIN_MIN + meta_len, nonce, c->precom) != 0)
		return curve_fail(c, -EIO);
	c->state = ZR__CURVE_CLIENT_READY;
	return (int)total;
}

int
zr__curve_client_on_ready(struct zr__curve *c, const uint8_t *body, size_t len, uint8_t *out,
                          size_t cap, const uint8_t **meta, size_t *meta_len)
{
	int rc = curve_expect(c, ZR__CURVE_CLIENT_READY);
	if (rc != 0)
		return rc;
	rc = curve_command(c, body, len, curve_ready_name, ZR__CURVE_READY_MIN, false, true);
	if (rc == 1)
		return curve_client_on_error(c, body, len);
	if (rc < 0)
		return rc;
	size_t plen = len - ZR__CURVE_READY_MIN;
	if (cap < plen)
		return -ENOBUFS;
	uint64_t n = curve_get_u64(body + READY_NONCE);
	if (!curve_peer_nonce_ok(c, n))
		return curve_fail(c, ZR__CURVE_ENONCE);
	uint8_t nonce[CURVE_NONCE];
	curve_nonce_make(nonce, "CurveZMQREADY---", n);
	if (crypto_box_open_easy_afternm(out, body + READY_BOX, plen + CURVE_MAC, nonce,
	                                 c->precom) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	curve_peer_nonce_take(c, n);
	/* From here on only the shared key is needed. */
	sodium_memzero(c->cookie, sizeof c->cookie);
	sodium_memzero(c->secret_key, sizeof c->secret_key);
	sodium_memzero(c->cn_secret, sizeof c->cn_secret);
	*meta = out;
	*meta_len = plen;
	curve_traffic_keys(c);
	c->state = ZR__CURVE_TRAFFIC;
	return 0;
}

int
zr__curve_server_on_hello(struct zr__curve *c, const uint8_t *body, size_t len, uint64_t now_ms,
                          uint8_t *out, size_t cap)
{
	int rc = curve_expect(c, ZR__CURVE_SERVER_HELLO);
	if (rc != 0)
		return rc;
	if (cap < ZR__CURVE_WELCOME_SIZE)
		return -ENOBUFS;
	rc = curve_command(c, body, len, curve_hello_name, ZR__CURVE_HELLO_SIZE, true, false);
	if (rc < 0)
		return rc;
	if (body[HELLO_VERSION] != 1 || body[HELLO_VERSION + 1] != 0)
		return curve_fail(c, ZR__CURVE_EVERSION);
	/* Padding body[8..80) deliberately unchecked, as libzmq (curve.h). */

	uint64_t n = curve_get_u64(body + HELLO_NONCE);
	uint8_t nonce[CURVE_NONCE];
	uint8_t plain[HELLO_BOX_PLAIN];
	curve_nonce_make(nonce, "CurveZMQHELLO---", n);
	memcpy(c->cn_peer, body + HELLO_CN_PUBLIC, ZR__CURVE_KEY);
	if (crypto_box_open_easy(plain, body + HELLO_BOX, HELLO_BOX_PLAIN + CURVE_MAC, nonce,
	                         c->cn_peer, c->secret_key) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	static const uint8_t zeros[HELLO_BOX_PLAIN];
	if (sodium_memcmp(plain, zeros, sizeof plain) != 0)
		return curve_fail(c, ZR__CURVE_EMALFORMED);
	curve_peer_nonce_take(c, n);

	/* Fresh S'/s' and cookie key K for this HELLO. */
	if (curve_keypair_make(c, c->cn_public, c->cn_secret) != 0)
		return curve_fail(c, -EIO);
	c->random(c->random_arg, c->cookie_key, sizeof c->cookie_key);
	c->cookie_ms = now_ms;

	/* cookie = long nonce + secretbox[C' + s'](K), nonce "COOKIE--" + 16 */
	uint8_t cookie_nonce[CURVE_NONCE];
	uint8_t cookie_plain[COOKIE_PLAIN];
	uint8_t welcome_plain[WELCOME_PLAIN];
	memcpy(cookie_nonce, "COOKIE--", 8);
	c->random(c->random_arg, cookie_nonce + 8, 16);
	memcpy(cookie_plain, c->cn_peer, ZR__CURVE_KEY);
	memcpy(cookie_plain + ZR__CURVE_KEY, c->cn_secret, ZR__CURVE_KEY);
	memcpy(welcome_plain, c->cn_public, ZR__CURVE_KEY);
	memcpy(welcome_plain + ZR__CURVE_KEY, cookie_nonce + 8, 16);
	rc = crypto_secretbox_easy(welcome_plain + 48, cookie_plain, COOKIE_PLAIN, cookie_nonce,
	                           c->cookie_key);
	sodium_memzero(cookie_plain, sizeof cookie_plain);
	if (rc != 0)
		return curve_fail(c, -EIO);

	memcpy(out, curve_welcome_name, 8);
	memcpy(nonce, "WELCOME-", 8);
	c->random(c->random_arg, nonce + 8, 16);
	memcpy(out + WELCOME_NONCE, nonce + 8, 16);
	if (crypto_box_easy(out + WELCOME_BOX, welcome_plain, WELCOME_PLAIN, nonce, c->cn_peer,
	                    c->secret_key) != 0)
		return curve_fail(c, -EIO);
	c->state = ZR__CURVE_SERVER_INITIATE;
	return (int)ZR__CURVE_WELCOME_SIZE;
}

int
zr__curve_server_on_initiate(struct zr__curve *c, const uint8_t *body, size_t len, uint64_t now_ms,
                             uint8_t *out, size_t cap, const uint8_t **meta, size_t *meta_len)
{
	int rc = curve_expect(c, ZR__CURVE_SERVER_INITIATE);
	if (rc != 0)
		return rc;
	rc = curve_command(c, body, len, curve_initiate_name, ZR__CURVE_INITIATE_MIN, false, false);
	if (rc < 0)
		return rc;
	size_t plen = len - INITIATE_BOX - CURVE_MAC; /* 128 + metadata */
	if (cap < plen)
		return -ENOBUFS;

	/* The cookie key lives at most ZR__CURVE_COOKIE_TTL_MS, and is used once. */
	if (now_ms > c->cookie_ms && now_ms - c->cookie_ms > ZR__CURVE_COOKIE_TTL_MS)
		return curve_fail(c, ZR__CURVE_ECOOKIE);
	uint8_t nonce[CURVE_NONCE];
	uint8_t cookie_plain[COOKIE_PLAIN];
	memcpy(nonce, "COOKIE--", 8);
	memcpy(nonce + 8, body + INITIATE_COOKIE, 16);
	rc = crypto_secretbox_open_easy(cookie_plain, body + INITIATE_COOKIE + 16,
	                                COOKIE_PLAIN + CURVE_MAC, nonce, c->cookie_key);
	sodium_memzero(c->cookie_key, sizeof c->cookie_key);
	if (rc != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	bool same = sodium_memcmp(cookie_plain, c->cn_peer, ZR__CURVE_KEY) == 0 &&
	            sodium_memcmp(cookie_plain + ZR__CURVE_KEY, c->cn_secret, ZR__CURVE_KEY) == 0;
	sodium_memzero(cookie_plain, sizeof cookie_plain);
	if (!same)
		return curve_fail(c, ZR__CURVE_EKEY);

	uint64_t n = curve_get_u64(body + INITIATE_NONCE);
	if (!curve_peer_nonce_ok(c, n))
		return curve_fail(c, ZR__CURVE_ENONCE);
	if (crypto_box_beforenm(c->precom, c->cn_peer, c->cn_secret) != 0)
		return curve_fail(c, ZR__CURVE_EKEY);
	curve_nonce_make(nonce, "CurveZMQINITIATE", n);
	if (crypto_box_open_easy_afternm(out, body + INITIATE_BOX, plen + CURVE_MAC, nonce,
	                                 c->precom) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	curve_peer_nonce_take(c, n);

	/* vouch: box[C' + S](C->S'), nonce "VOUCH---" + the 16 octets after C */
	uint8_t vouch_plain[VOUCH_PLAIN];
	memcpy(c->peer_key, out, ZR__CURVE_KEY);
	memcpy(nonce, "VOUCH---", 8);
	memcpy(nonce + 8, out + ZR__CURVE_KEY, 16);
	if (crypto_box_open_easy(vouch_plain, out + 48, VOUCH_BOX, nonce, c->peer_key,
	                         c->cn_secret) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	if (sodium_memcmp(vouch_plain, c->cn_peer, ZR__CURVE_KEY) != 0 ||
	    sodium_memcmp(vouch_plain + ZR__CURVE_KEY, c->public_key, ZR__CURVE_KEY) != 0)
		return curve_fail(c, ZR__CURVE_EKEY);

	*meta = out + ZR__CURVE_INITIATE_PLAIN_MIN;
	*meta_len = plen - ZR__CURVE_INITIATE_PLAIN_MIN;
	c->state = ZR__CURVE_SERVER_ACCEPT;
	return 0;
}

int
zr__curve_server_ready(struct zr__curve *c, const uint8_t *meta, size_t meta_len, uint8_t *out,
                       size_t cap)
{
	int rc = curve_expect(c, ZR__CURVE_SERVER_ACCEPT);
	if (rc != 0)
		return rc;
	if (meta_len > (size_t)INT32_MAX - ZR__CURVE_READY_MIN || (meta_len > 0 && meta == NULL))
		return -EINVAL;
	if (cap < ZR__CURVE_READY_MIN + meta_len)
		return -ENOBUFS;
	uint64_t n;
	if (!curve_nonce_next(c, &n))
		return curve_fail(c, ZR__CURVE_EEXHAUSTED);
	if (meta_len > 0)
		memmove(out + READY_BOX + CURVE_MAC, meta, meta_len);
	memcpy(out, curve_ready_name, 6);
	curve_put_u64(out + READY_NONCE, n);
	uint8_t nonce[CURVE_NONCE];
	curve_nonce_make(nonce, "CurveZMQREADY---", n);
	if (crypto_box_easy_afternm(out + READY_BOX, out + READY_BOX + CURVE_MAC, meta_len, nonce,
	                            c->precom) != 0)
		return curve_fail(c, -EIO);
	/* From here on only the shared key is needed. */
	sodium_memzero(c->secret_key, sizeof c->secret_key);
	sodium_memzero(c->cn_secret, sizeof c->cn_secret);
	curve_traffic_keys(c);
	c->state = ZR__CURVE_TRAFFIC;
	return (int)(ZR__CURVE_READY_MIN + meta_len);
}

int
zr__curve_encode_message(struct zr__curve *c, uint8_t flags, const uint8_t *data, size_t len,
                         uint8_t *out, size_t cap)
{
	int rc = curve_expect(c, ZR__CURVE_TRAFFIC);
	if (rc != 0)
		return rc;
	if (len > (size_t)INT32_MAX - ZR__CURVE_MESSAGE_MIN || (len > 0 && data == NULL))
		return -EINVAL;
	if (cap < ZR__CURVE_MESSAGE_MIN + len)
		return -ENOBUFS;
	uint64_t n;
	if (!curve_nonce_next(c, &n))
		return curve_fail(c, ZR__CURVE_EEXHAUSTED);
	memcpy(out, curve_message_name, 8);
	curve_put_u64(out + MESSAGE_NONCE, n);
	curve_seal(c->tx_key, out + MESSAGE_NONCE, flags, data, len, out + MESSAGE_BOX,
	           out + MESSAGE_BOX + CURVE_MAC);
	return (int)(ZR__CURVE_MESSAGE_MIN + len);
}

/* What both ways of opening a MESSAGE check first: the state, the command,
 * the size and the nonce (into *n; taken only once the box opened). */
static int
curve_message_check(struct zr__curve *c, const uint8_t *body, size_t len, uint64_t *n)
{
	int rc = curve_expect(c, ZR__CURVE_TRAFFIC);
	if (rc != 0)
		return rc;
	rc = curve_command(c, body, len, curve_message_name, ZR__CURVE_MESSAGE_MIN, false, false);
	if (rc < 0)
		return rc;
	if (len - ZR__CURVE_MESSAGE_MIN > (size_t)INT32_MAX)
		return -EMSGSIZE;
	*n = curve_get_u64(body + MESSAGE_NONCE);
	if (!curve_peer_nonce_ok(c, *n))
		return curve_fail(c, ZR__CURVE_ENONCE);
	return 0;
}

int
zr__curve_open_message(struct zr__curve *c, uint8_t *body, size_t len, uint8_t *flags)
{
	uint64_t n;
	int rc = curve_message_check(c, body, len, &n);
	if (rc != 0)
		return rc;
	if (curve_open(c->rx_key, body + MESSAGE_NONCE, body + MESSAGE_BOX,
	               body + MESSAGE_BOX + CURVE_MAC, len - MESSAGE_BOX - CURVE_MAC) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	curve_peer_nonce_take(c, n);
	*flags = body[MESSAGE_BOX + CURVE_MAC];
	return (int)(len - ZR__CURVE_MESSAGE_MIN);
}

int
zr__curve_decode_message(struct zr__curve *c, const uint8_t *body, size_t len, uint8_t *out,
                         size_t cap, uint8_t *flags)
{
	uint64_t n;
	int rc = curve_message_check(c, body, len, &n);
	if (rc != 0)
		return rc;
	size_t plen = len - MESSAGE_BOX - CURVE_MAC; /* flags + data */
	if (cap < plen)
		return -ENOBUFS; /* nothing taken: the same call with room opens it */
	/* The copying form (body stays as it is unless out overlaps it): the
	 * ciphertext moves to out, opens there, the data moves down past flags. */
	uint8_t n8[8], mac[CURVE_MAC];
	memcpy(n8, body + MESSAGE_NONCE, sizeof n8);
	memcpy(mac, body + MESSAGE_BOX, sizeof mac);
	memmove(out, body + MESSAGE_BOX + CURVE_MAC, plen);
	if (curve_open(c->rx_key, n8, mac, out, plen) != 0)
		return curve_fail(c, ZR__CURVE_EBOX);
	curve_peer_nonce_take(c, n);
	*flags = out[0];
	memmove(out, out + 1, plen - 1);
	return (int)(plen - 1);
}
