/*
 * CurveZMQ mechanism core (zmtp/curve.h; RFC 26, libzmq 4.3 layouts).
 *
 * Two zr__curve instances, a client and a server, with fixed long-term keys
 * and fixed randomness (libsodium's randombytes_buf_deterministic on a
 * counter), talk to each other. Every command is checked for its exact size
 * and layout, and every box is opened again here with libsodium directly,
 * with the keys the RFC says it is made with. Peer bodies are placed flush
 * against a guard page. Then hostile variants: tampered boxes, replayed
 * nonces, wrong sizes, versions, cookies and keys, each with its exact code.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <sodium.h>
#include <zring/zmtp.h>

#include "curve.h"
#include "guard.h"

/* Deterministic randomness: one seed, a counter mixed into it per call. */
struct fixed_random {
	uint8_t seed[randombytes_SEEDBYTES];
	uint32_t calls;
};

static void
fixed_random_fill(void *arg, uint8_t *buf, size_t len)
{
	struct fixed_random *r = arg;
	uint8_t seed[randombytes_SEEDBYTES];
	memcpy(seed, r->seed, sizeof seed);
	r->calls++;
	memcpy(seed, &r->calls, sizeof r->calls);
	randombytes_buf_deterministic(buf, len, seed);
}

static struct fixed_random rnd_client, rnd_server;
static uint8_t client_pk[32], client_sk[32], server_pk[32], server_sk[32];
static struct zr__curve cl, sv;
static struct zt_guard guard;

static const uint8_t client_meta[] = "\x0bSocket-Type\x00\x00\x00\x06"
				     "DEALER";
static const uint8_t server_meta[] = "\x0bSocket-Type\x00\x00\x00\x06ROUTER"
				     "\x08Identity\x00\x00\x00\x00";
#define CLIENT_META_LEN (sizeof client_meta - 1)
#define SERVER_META_LEN (sizeof server_meta - 1)

/* The transcript of the last handshake. */
static uint8_t hello[ZR__CURVE_HELLO_SIZE];
static uint8_t welcome[ZR__CURVE_WELCOME_SIZE];
static uint8_t initiate[512];
static size_t initiate_len;
static uint8_t ready[512];
static size_t ready_len;
static uint8_t plain[1 << 17];
static const uint8_t *meta;
static size_t meta_len;

static void
keys_make(uint8_t pk[32], uint8_t sk[32], uint8_t tag)
{
	uint8_t seed[crypto_box_SEEDBYTES];
	memset(seed, tag, sizeof seed);
	crypto_box_seed_keypair(pk, sk, seed);
}

static void
curve_open(struct zr__curve *c, bool as_server, const uint8_t *server_key, struct fixed_random *r,
           uint8_t tag)
{
	struct zr__curve_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.as_server = as_server;
	memcpy(cfg.public_key, as_server ? server_pk : client_pk, 32);
	memcpy(cfg.secret_key, as_server ? server_sk : client_sk, 32);
	if (server_key != NULL)
		memcpy(cfg.server_key, server_key, 32);
	memset(r, 0, sizeof *r);
	memset(r->seed, tag, sizeof r->seed);
	cfg.random = fixed_random_fill;
	cfg.random_arg = r;
	memset(c, ZT_JUNK, sizeof *c);
	cr_assert_eq(zr__curve_init(c, &cfg), 0);
}

static void
setup(void)
{
	cr_assert_geq(sodium_init(), 0);
	keys_make(client_pk, client_sk, 0xc1);
	keys_make(server_pk, server_sk, 0x5e);
	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	zt_guard_init(&guard, sizeof plain + 64);
}

static void
teardown(void)
{
	zr__curve_fini(&cl);
	zr__curve_fini(&sv);
	zt_guard_fini(&guard);
}

/* A peer body flush against the guard page. */
static const uint8_t *
g(const uint8_t *p, size_t n)
{
	return zt_guard_place(&guard, p, n);
}

static void
do_hello(void)
{
	cr_assert_eq(zr__curve_client_hello(&cl, hello, sizeof hello), (int)ZR__CURVE_HELLO_SIZE);
}

static void
do_welcome(uint64_t now_ms)
{
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, sizeof hello), sizeof hello, now_ms,
	                                       welcome, sizeof welcome),
	             (int)ZR__CURVE_WELCOME_SIZE);
}

static void
do_initiate(void)
{
	int n = zr__curve_client_on_welcome(&cl, g(welcome, sizeof welcome), sizeof welcome,
	                                    client_meta, CLIENT_META_LEN, initiate,
	                                    sizeof initiate);
	cr_assert_eq(n, (int)(ZR__CURVE_INITIATE_MIN + CLIENT_META_LEN));
	initiate_len = (size_t)n;
}

static int
server_initiate(uint64_t now_ms)
{
	return zr__curve_server_on_initiate(&sv, g(initiate, initiate_len), initiate_len, now_ms,
	                                    plain, sizeof plain, &meta, &meta_len);
}

static void
do_ready(void)
{
	int n = zr__curve_server_ready(&sv, server_meta, SERVER_META_LEN, ready, sizeof ready);
	cr_assert_eq(n, (int)(ZR__CURVE_READY_MIN + SERVER_META_LEN));
	ready_len = (size_t)n;
}

static int
client_ready(void)
{
	return zr__curve_client_on_ready(&cl, g(ready, ready_len), ready_len, plain, sizeof plain,
	                                 &meta, &meta_len);
}

static uint8_t cl_cn_secret[32], sv_cn_secret[32];

static void
handshake(void)
{
	do_hello();
	do_welcome(1000);
	do_initiate();
	cr_assert_eq(server_initiate(2000), 0);
	/* READY ends each side's need for its transient secret (it is wiped):
	 * keep copies to check the boxes against libsodium. */
	memcpy(cl_cn_secret, cl.cn_secret, 32);
	memcpy(sv_cn_secret, sv.cn_secret, 32);
	do_ready();
	cr_assert_eq(client_ready(), 0);
}

static uint64_t
be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
nonce_make(uint8_t n[24], const char *prefix, size_t plen, const uint8_t *tail)
{
	memcpy(n, prefix, plen);
	memcpy(n + plen, tail, 24 - plen);
}

TestSuite(zmtp_curve, .init = setup, .fini = teardown);

/* ---- the good path --------------------------------------------------------- */

Test(zmtp_curve, handshake_completes_with_libzmq_command_sizes_and_metadata)
{
	do_hello();
	cr_assert_eq(zr__curve_state(&cl), ZR__CURVE_CLIENT_WELCOME);
	do_welcome(1000);
	cr_assert_eq(zr__curve_state(&sv), ZR__CURVE_SERVER_INITIATE);
	do_initiate();
	cr_assert_eq(initiate_len, 257 + CLIENT_META_LEN);
	cr_assert_eq(server_initiate(2000), 0);
	cr_assert_eq(zr__curve_state(&sv), ZR__CURVE_SERVER_ACCEPT);
	cr_assert_eq(meta_len, CLIENT_META_LEN);
	cr_assert_arr_eq(meta, client_meta, CLIENT_META_LEN);
	cr_assert_not_null(zr__curve_peer_key(&sv));
	cr_assert_arr_eq(zr__curve_peer_key(&sv), client_pk, 32);
	do_ready();
	cr_assert_eq(ready_len, 30 + SERVER_META_LEN);
	cr_assert_eq(client_ready(), 0);
	cr_assert_eq(meta_len, SERVER_META_LEN);
	cr_assert_arr_eq(meta, server_meta, SERVER_META_LEN);
	cr_assert_eq(zr__curve_state(&cl), ZR__CURVE_TRAFFIC);
	cr_assert_eq(zr__curve_state(&sv), ZR__CURVE_TRAFFIC);
	cr_assert_eq(zr__curve_error(&cl), 0);
	cr_assert_arr_eq(cl.precom, sv.precom, 32);
}

Test(zmtp_curve, handshake_with_empty_metadata_has_minimum_sizes)
{
	do_hello();
	do_welcome(0);
	int n = zr__curve_client_on_welcome(&cl, g(welcome, sizeof welcome), sizeof welcome, NULL,
	                                    0, initiate, sizeof initiate);
	cr_assert_eq(n, 257);
	initiate_len = 257;
	cr_assert_eq(server_initiate(0), 0);
	cr_assert_eq(meta_len, 0);
	n = zr__curve_server_ready(&sv, NULL, 0, ready, sizeof ready);
	cr_assert_eq(n, 30);
	ready_len = 30;
	cr_assert_eq(client_ready(), 0);
	cr_assert_eq(meta_len, 0);
}

Test(zmtp_curve, hello_is_200_octets_and_its_box_opens_with_libsodium_to_64_zeros)
{
	do_hello();
	cr_assert_arr_eq(hello, "\x05HELLO\x01\x00", 8);
	static const uint8_t zeros[72];
	cr_assert_arr_eq(hello + 8, zeros, 72, "padding is 72 zero octets");
	cr_assert_arr_eq(hello + 80, cl.cn_public, 32, "C' at octet 80");
	cr_assert_eq(be64(hello + 112), 1, "the first short nonce is 1, as libzmq");
	uint8_t n[24], out[64];
	nonce_make(n, "CurveZMQHELLO---", 16, hello + 112);
	cr_assert_eq(crypto_box_open_easy(out, hello + 120, 80, n, hello + 80, server_sk), 0);
	cr_assert_arr_eq(out, zeros, 64);
	uint8_t pk[32];
	crypto_scalarmult_base(pk, cl.cn_secret);
	cr_assert_arr_eq(pk, cl.cn_public, 32, "C' is the public half of c'");
}

Test(zmtp_curve, welcome_is_168_octets_with_s_prime_and_a_cookie_of_c_prime_and_s_prime)
{
	do_hello();
	do_welcome(5);
	cr_assert_arr_eq(welcome, "\x07WELCOME", 8);
	uint8_t n[24], out[128];
	nonce_make(n, "WELCOME-", 8, welcome + 8);
	cr_assert_eq(crypto_box_open_easy(out, welcome + 24, 144, n, server_pk, cl.cn_secret), 0);
	cr_assert_arr_eq(out, sv.cn_public, 32, "S' first");
	uint8_t pk[32];
	crypto_scalarmult_base(pk, sv.cn_secret);
	cr_assert_arr_eq(pk, out, 32);
	/* cookie: 16-octet nonce + secretbox[C' + s'](K) */
	uint8_t cn[24], cookie[64];
	nonce_make(cn, "COOKIE--", 8, out + 32);
	cr_assert_eq(crypto_secretbox_open_easy(cookie, out + 48, 80, cn, sv.cookie_key), 0);
	cr_assert_arr_eq(cookie, cl.cn_public, 32);
	cr_assert_arr_eq(cookie + 32, sv.cn_secret, 32);
}

Test(zmtp_curve, initiate_carries_cookie_client_key_and_vouch_of_c_prime_and_s)
{
	do_hello();
	do_welcome(5);
	uint8_t s_prime_secret[32], s_prime[32];
	memcpy(s_prime_secret, sv.cn_secret, 32);
	memcpy(s_prime, sv.cn_public, 32);
	do_initiate();
	cr_assert_arr_eq(initiate, "\x08INITIATE", 9);
	cr_assert_arr_eq(initiate + 9, cl.cookie, 96, "the cookie as WELCOME gave it");
	cr_assert_eq(be64(initiate + 105), 2, "INITIATE takes the client's second nonce");
	uint8_t n[24], out[256];
	nonce_make(n, "CurveZMQINITIATE", 16, initiate + 105);
	size_t clen = initiate_len - 113;
	cr_assert_eq(crypto_box_open_easy(out, initiate + 113, clen, n, s_prime, cl.cn_secret), 0);
	cr_assert_arr_eq(out, client_pk, 32, "C first");
	uint8_t vn[24], vouch[64];
	nonce_make(vn, "VOUCH---", 8, out + 32);
	cr_assert_eq(crypto_box_open_easy(vouch, out + 48, 80, vn, client_pk, s_prime_secret), 0);
	cr_assert_arr_eq(vouch, cl.cn_public, 32, "vouch: C'");
	cr_assert_arr_eq(vouch + 32, server_pk, 32, "vouch: S");
	cr_assert_arr_eq(out + 128, client_meta, CLIENT_META_LEN);
}

Test(zmtp_curve, secrets_are_wiped_once_ready_leaves_only_the_shared_key)
{
	static const uint8_t zero[32];

	handshake();
	cr_assert_arr_eq(cl.secret_key, zero, 32, "client long-term secret");
	cr_assert_arr_eq(cl.cn_secret, zero, 32, "client transient secret");
	cr_assert_arr_eq(sv.secret_key, zero, 32, "server long-term secret");
	cr_assert_arr_eq(sv.cn_secret, zero, 32, "server transient secret");
	cr_assert_arr_eq(sv.cookie_key, zero, 32, "cookie key");
	cr_assert(memcmp(cl.precom, zero, 32) != 0 && memcmp(cl.precom, sv.precom, 32) == 0,
	          "both sides keep the same shared key");
}

Test(zmtp_curve, ready_box_opens_with_libsodium_to_the_server_metadata)
{
	handshake();
	cr_assert_arr_eq(ready, "\x05READY", 6);
	cr_assert_eq(be64(ready + 6), 1, "READY is the server's first short nonce");
	uint8_t n[24], out[128];
	nonce_make(n, "CurveZMQREADY---", 16, ready + 6);
	cr_assert_eq(crypto_box_open_easy(out, ready + 14, ready_len - 14, n, sv.cn_public,
	                                  cl_cn_secret),
	             0);
	cr_assert_arr_eq(out, server_meta, SERVER_META_LEN);
}

Test(zmtp_curve, messages_flow_both_ways_with_flags_and_libsodium_opens_them)
{
	handshake();
	static uint8_t big[100000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 7u);
	static uint8_t wire[sizeof big + 64];
	struct {
		struct zr__curve *from, *to;
		uint8_t flags;
		const uint8_t *data;
		size_t len;
		const char *prefix;
		uint64_t nonce;
	} rows[] = {
		{&cl, &sv, 0x01, (const uint8_t *)"frame one", 9, "CurveZMQMESSAGEC", 3},
		{&cl, &sv, 0x00, (const uint8_t *)"", 0, "CurveZMQMESSAGEC", 4},
		{&sv, &cl, 0x00, (const uint8_t *)"reply", 5, "CurveZMQMESSAGES", 2},
		{&sv, &cl, 0x02, (const uint8_t *)"\x04PING\x00\x64", 7, "CurveZMQMESSAGES", 3},
		{&cl, &sv, 0x02, (const uint8_t *)"\x09SUBSCRIBEtopic", 15, "CurveZMQMESSAGEC", 5},
		{&cl, &sv, 0x00, big, sizeof big, "CurveZMQMESSAGEC", 6},
		{&sv, &cl, 0x01, big, sizeof big, "CurveZMQMESSAGES", 4},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int n = zr__curve_encode_message(rows[i].from, rows[i].flags, rows[i].data,
		                                 rows[i].len, wire, sizeof wire);
		cr_assert_eq(n, (int)(33 + rows[i].len), "row %zu", i);
		cr_assert_arr_eq(wire, "\x07MESSAGE", 8);
		cr_assert_eq(be64(wire + 8), rows[i].nonce, "row %zu nonce", i);
		/* libsodium, with the transient keys */
		uint8_t nn[24];
		nonce_make(nn, rows[i].prefix, 16, wire + 8);
		const uint8_t *sk = rows[i].from == &cl ? cl_cn_secret : sv_cn_secret;
		const uint8_t *pk = rows[i].to->cn_public;
		cr_assert_eq(crypto_box_open_easy(plain, wire + 16, (size_t)n - 16, nn, pk, sk), 0,
		             "row %zu", i);
		cr_assert_eq(plain[0], rows[i].flags);
		cr_assert_arr_eq(plain + 1, rows[i].data, rows[i].len);
		/* and the peer */
		uint8_t flags = 0xee;
		memset(plain, 0, rows[i].len + 1);
		int got = zr__curve_decode_message(rows[i].to, g(wire, (size_t)n), (size_t)n, plain,
		                                   sizeof plain, &flags);
		cr_assert_eq(got, (int)rows[i].len, "row %zu", i);
		cr_assert_eq(flags, rows[i].flags);
		cr_assert_arr_eq(plain, rows[i].data, rows[i].len);
	}
}

Test(zmtp_curve, message_encodes_without_copy_and_decodes_in_place)
{
	handshake();
	uint8_t wire[64 + 33];
	memcpy(wire + ZR__CURVE_MESSAGE_DATA_OFFSET, "placed already", 14);
	int n = zr__curve_encode_message(&cl, 0x01, wire + ZR__CURVE_MESSAGE_DATA_OFFSET, 14, wire,
	                                 sizeof wire);
	cr_assert_eq(n, 47);
	uint8_t flags = 0;
	/* decode into the body itself */
	int got = zr__curve_decode_message(&sv, wire, (size_t)n, wire, (size_t)n, &flags);
	cr_assert_eq(got, 14);
	cr_assert_eq(flags, 0x01);
	cr_assert_arr_eq(wire, "placed already", 14);
}

/*
 * The MESSAGE boxes skip crypto_box's per-box HSalsa20 (done once per
 * direction), make the plaintext's first block once, and make short tails
 * block by block (from 256 octets after the first block, one stream call):
 * the bytes must still be crypto_box_easy_afternm's at every length around
 * the 32-octet first-block boundary, the 64-octet Salsa20 blocks and the
 * switch to the stream call (lengths 286-288), both ways; and the
 * in-place open must give back the data where it lay.
 */
Test(zmtp_curve, message_boxes_equal_crypto_box_easy_afternm_at_every_length)
{
	handshake();
	static uint8_t data[70000], wire[sizeof data + 64], ref[sizeof data + 64];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 31u + 5u);
	size_t lens[300];
	size_t nl = 0;
	for (size_t l = 0; l <= 260; l++)
		lens[nl++] = l;
	const size_t big[] = {286, 287, 288, 1023, 1024, 4095, 4096, 65535, 65536, 65537, 69999};
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
		lens[nl++] = big[i];
	for (size_t i = 0; i < nl; i++) {
		for (int dir = 0; dir < 2; dir++) {
			struct zr__curve *from = dir ? &sv : &cl, *to = dir ? &cl : &sv;
			uint8_t flags = (uint8_t)(i & 3u);
			size_t len = lens[i];
			int n = zr__curve_encode_message(from, flags, data, len, wire, sizeof wire);
			cr_assert_eq(n, (int)(33 + len), "len %zu", len);
			uint8_t nn[24];
			nonce_make(nn, dir ? "CurveZMQMESSAGES" : "CurveZMQMESSAGEC", 16, wire + 8);
			ref[0] = flags;
			memcpy(ref + 1, data, len);
			cr_assert_eq(crypto_box_easy_afternm(ref, ref, 1 + len, nn, from->precom),
			             0);
			cr_assert_arr_eq(wire + 16, ref, 17 + len,
			                 "len %zu dir %d: not crypto_box's", len, dir);
			uint8_t *body = zt_guard_place(&guard, wire, (size_t)n);
			uint8_t got_flags = 0xee;
			cr_assert_eq(zr__curve_open_message(to, body, (size_t)n, &got_flags),
			             (int)len, "len %zu dir %d", len, dir);
			cr_assert_eq(got_flags, flags);
			cr_assert_arr_eq(body + ZR__CURVE_MESSAGE_DATA_OFFSET, data, len, "len %zu",
			                 len);
		}
	}
}

Test(zmtp_curve, message_encodes_in_place_as_from_elsewhere)
{
	handshake();
	static uint8_t a[3000], b[3000];
	for (size_t len = 0; len < 2900; len += 97) {
		for (size_t i = 0; i < len; i++)
			b[ZR__CURVE_MESSAGE_DATA_OFFSET + i] = (uint8_t)(i ^ len);
		struct zr__curve copy = cl; /* the same nonce for both */
		int n = zr__curve_encode_message(&cl, 0x01, b + ZR__CURVE_MESSAGE_DATA_OFFSET, len,
		                                 a, sizeof a);
		int m = zr__curve_encode_message(&copy, 0x01, b + ZR__CURVE_MESSAGE_DATA_OFFSET,
		                                 len, b, sizeof b);
		cr_assert_eq(n, m);
		cr_assert_arr_eq(a, b, (size_t)n, "len %zu", len);
		zr__curve_fini(&copy);
	}
}

Test(zmtp_curve, message_open_in_place_refuses_every_tampered_octet_and_leaves_the_body)
{
	static const size_t lens[] = {0, 20, 31, 32, 100, 5000};
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		size_t len = lens[li];
		size_t total = 33 + len;
		size_t ats[] = {16, 31, 32, 33, 47, 63, 64, 65, 97, total - 1};
		for (size_t ai = 0; ai < sizeof ats / sizeof ats[0]; ai++) {
			if (ats[ai] >= total)
				continue;
			curve_open(&cl, false, server_pk, &rnd_client, 0x11);
			curve_open(&sv, true, NULL, &rnd_server, 0x22);
			handshake();
			static uint8_t data[5000], wire[5100], before[5100];
			memset(data, 0xa5, len);
			int n = zr__curve_encode_message(&cl, 0, data, len, wire, sizeof wire);
			cr_assert_eq(n, (int)total);
			wire[ats[ai]] ^= 0x40;
			memcpy(before, wire, total);
			uint8_t *body = zt_guard_place(&guard, wire, total);
			uint8_t flags = 0xee;
			cr_assert_eq(zr__curve_open_message(&sv, body, total, &flags),
			             ZR__CURVE_EBOX, "len %zu octet %zu", len, ats[ai]);
			cr_assert_arr_eq(body, before, total, "len %zu octet %zu: body changed",
			                 len, ats[ai]);
			cr_assert_eq(flags, 0xee);
			cr_assert_eq(zr__curve_error(&sv), ZR__CURVE_EBOX);
		}
	}
}

/* ---- tampering: every box --------------------------------------------------- */

Test(zmtp_curve, hello_with_a_flipped_box_octet_fails_on_the_server_as_a_box_error)
{
	for (size_t at = 120; at < 200; at += 13) {
		curve_open(&cl, false, server_pk, &rnd_client, 0x11);
		curve_open(&sv, true, NULL, &rnd_server, 0x22);
		do_hello();
		hello[at] ^= 0x01;
		cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome,
		                                       sizeof welcome),
		             ZR__CURVE_EBOX, "octet %zu", at);
	}
}

Test(zmtp_curve, hello_with_a_changed_nonce_or_client_key_fails_as_a_box_error)
{
	do_hello();
	hello[119] ^= 0x01;
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, sizeof welcome),
	             ZR__CURVE_EBOX);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	hello[119] ^= 0x01;
	hello[80] ^= 0x01;
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, sizeof welcome),
	             ZR__CURVE_EBOX);
}

Test(zmtp_curve, welcome_with_a_flipped_octet_fails_on_the_client_as_a_box_error)
{
	do_hello();
	do_welcome(0);
	welcome[100] ^= 0x80;
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(welcome, 168), 168, NULL, 0, initiate,
	                                         sizeof initiate),
	             ZR__CURVE_EBOX);
	cr_assert_eq(zr__curve_state(&cl), ZR__CURVE_FAILED);
}

Test(zmtp_curve, initiate_with_a_flipped_cookie_box_or_vouch_octet_fails_as_a_box_error)
{
	/* 20: cookie nonce; 60: cookie box; 106: short nonce; 130 and 200: the box */
	size_t spots[] = {20, 60, 106, 130, 200, 257 + CLIENT_META_LEN - 1};
	for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++) {
		curve_open(&cl, false, server_pk, &rnd_client, 0x11);
		curve_open(&sv, true, NULL, &rnd_server, 0x22);
		do_hello();
		do_welcome(0);
		do_initiate();
		initiate[spots[i]] ^= 0x04;
		cr_assert_eq(server_initiate(0), ZR__CURVE_EBOX, "octet %zu", spots[i]);
		cr_assert_null(zr__curve_peer_key(&sv));
	}
}

Test(zmtp_curve, ready_with_a_flipped_octet_fails_on_the_client_as_a_box_error)
{
	do_hello();
	do_welcome(0);
	do_initiate();
	cr_assert_eq(server_initiate(0), 0);
	do_ready();
	ready[20] ^= 0x10;
	cr_assert_eq(client_ready(), ZR__CURVE_EBOX);
}

Test(zmtp_curve, message_with_a_flipped_octet_fails_as_a_box_error_and_stays_failed)
{
	handshake();
	uint8_t wire[64];
	int n = zr__curve_encode_message(&cl, 0, (const uint8_t *)"abc", 3, wire, sizeof wire);
	wire[34] ^= 0x01;
	uint8_t flags;
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_EBOX);
	wire[34] ^= 0x01;
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_EBOX, "the failure is sticky");
	cr_assert_eq(zr__curve_error(&sv), ZR__CURVE_EBOX);
	cr_assert_eq(zr__curve_encode_message(&sv, 0, NULL, 0, wire, sizeof wire), ZR__CURVE_EBOX);
}

Test(zmtp_curve, message_from_the_wrong_direction_does_not_open)
{
	handshake();
	uint8_t wire[64];
	/* a client MESSAGE reflected back at the client: prefix ...C, not ...S */
	int n = zr__curve_encode_message(&cl, 0, (const uint8_t *)"echo", 4, wire, sizeof wire);
	uint8_t flags;
	cr_assert_eq(zr__curve_decode_message(&cl, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_EBOX);
}

/* ---- nonces ------------------------------------------------------------------ */

Test(zmtp_curve, replayed_message_is_refused_as_a_nonce_error)
{
	handshake();
	uint8_t wire[64];
	int n = zr__curve_encode_message(&cl, 0, (const uint8_t *)"once", 4, wire, sizeof wire);
	uint8_t flags;
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             4);
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_ENONCE);
}

Test(zmtp_curve, older_message_after_a_newer_one_is_refused_and_gaps_are_allowed)
{
	handshake();
	uint8_t a[64], b[64], c[64];
	int na = zr__curve_encode_message(&sv, 0, (const uint8_t *)"a", 1, a, sizeof a);
	int nb = zr__curve_encode_message(&sv, 0, (const uint8_t *)"b", 1, b, sizeof b);
	int nc = zr__curve_encode_message(&sv, 0, (const uint8_t *)"c", 1, c, sizeof c);
	uint8_t flags;
	/* b skipped (a gap is fine: strictly increasing, not contiguous) */
	cr_assert_eq(zr__curve_decode_message(&cl, g(a, (size_t)na), (size_t)na, plain,
	                                      sizeof plain, &flags),
	             1);
	cr_assert_eq(zr__curve_decode_message(&cl, g(c, (size_t)nc), (size_t)nc, plain,
	                                      sizeof plain, &flags),
	             1);
	cr_assert_eq(zr__curve_decode_message(&cl, g(b, (size_t)nb), (size_t)nb, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_ENONCE);
}

Test(zmtp_curve, initiate_whose_nonce_is_not_above_the_hello_nonce_is_refused)
{
	do_hello();
	do_welcome(0);
	cl.nonce = 1; /* the client reuses HELLO's nonce for INITIATE */
	do_initiate();
	cr_assert_eq(be64(initiate + 105), 1);
	cr_assert_eq(server_initiate(0), ZR__CURVE_ENONCE);
}

Test(zmtp_curve, first_message_must_be_above_the_initiate_and_ready_nonces)
{
	handshake();
	/* the client's MESSAGE nonces start at 3, after HELLO 1 and INITIATE 2 */
	cl.nonce = 2;
	uint8_t wire[64];
	int n = zr__curve_encode_message(&cl, 0, (const uint8_t *)"x", 1, wire, sizeof wire);
	uint8_t flags;
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, (size_t)n), (size_t)n, plain,
	                                      sizeof plain, &flags),
	             ZR__CURVE_ENONCE);
}

/* ---- sizes, names, versions ------------------------------------------------------ */

Test(zmtp_curve, hello_of_199_or_201_octets_is_malformed)
{
	do_hello();
	uint8_t big[201];
	memcpy(big, hello, 200);
	big[200] = 0;
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 199), 199, 0, welcome, sizeof welcome),
	             ZR__CURVE_EMALFORMED);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(big, 201), 201, 0, welcome, sizeof welcome),
	             ZR__CURVE_EMALFORMED);
}

Test(zmtp_curve, welcome_of_167_or_169_octets_is_malformed)
{
	do_hello();
	do_welcome(0);
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(welcome, 167), 167, NULL, 0, initiate,
	                                         sizeof initiate),
	             ZR__CURVE_EMALFORMED);
	uint8_t big[169];
	memcpy(big, welcome, 168);
	big[168] = 0;
	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	do_hello();
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(big, 169), 169, NULL, 0, initiate,
	                                         sizeof initiate),
	             ZR__CURVE_EMALFORMED);
}

Test(zmtp_curve, initiate_under_257_octets_is_malformed_and_a_longer_one_fails_its_box)
{
	do_hello();
	do_welcome(0);
	do_initiate();
	uint8_t saved[512];
	memcpy(saved, initiate, initiate_len);
	size_t full = initiate_len;
	initiate_len = 256;
	cr_assert_eq(server_initiate(0), ZR__CURVE_EMALFORMED);

	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	do_hello();
	do_welcome(0);
	do_initiate();
	cr_assert_arr_eq(initiate, saved, full, "fixed randomness: same INITIATE");
	initiate[full] = 0x00;
	initiate_len = full + 1;
	cr_assert_eq(server_initiate(0), ZR__CURVE_EBOX);
}

Test(zmtp_curve, ready_under_30_and_message_under_33_octets_are_malformed)
{
	do_hello();
	do_welcome(0);
	do_initiate();
	cr_assert_eq(server_initiate(0), 0);
	do_ready();
	ready_len = 29;
	cr_assert_eq(client_ready(), ZR__CURVE_EMALFORMED);

	uint8_t wire[33] = "\x07MESSAGE";
	uint8_t flags;
	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	handshake();
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, 32), 32, plain, sizeof plain, &flags),
	             ZR__CURVE_EMALFORMED);
}

Test(zmtp_curve, a_name_length_past_the_body_or_an_empty_body_is_malformed)
{
	cr_assert_eq(zr__curve_server_on_hello(&sv, g((const uint8_t *)"\x09HELLO", 6), 6, 0,
	                                       welcome, sizeof welcome),
	             ZR__CURVE_EMALFORMED);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 0), 0, 0, welcome, sizeof welcome),
	             ZR__CURVE_EMALFORMED);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	cr_assert_eq(zr__curve_server_on_hello(&sv, g((const uint8_t *)"\x00", 1), 1, 0, welcome,
	                                       sizeof welcome),
	             ZR__CURVE_EMALFORMED);
}

Test(zmtp_curve, a_command_other_than_the_expected_one_is_unexpected)
{
	do_hello();
	/* the server gets INITIATE-shaped bytes first */
	uint8_t body[257] = "\x08INITIATE";
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(body, sizeof body), sizeof body, 0, welcome,
	                                       sizeof welcome),
	             ZR__CURVE_EUNEXPECTED);
	/* the client gets READY where WELCOME belongs */
	uint8_t rd[30] = "\x05READY";
	cr_assert_eq(
		zr__curve_client_on_welcome(&cl, g(rd, 30), 30, NULL, 0, initiate, sizeof initiate),
		ZR__CURVE_EUNEXPECTED);
}

Test(zmtp_curve, hello_with_a_version_other_than_1_0_is_refused)
{
	static const uint8_t versions[][2] = {{1, 1}, {2, 0}, {0, 1}, {0, 0}};
	for (size_t i = 0; i < 4; i++) {
		curve_open(&cl, false, server_pk, &rnd_client, 0x11);
		curve_open(&sv, true, NULL, &rnd_server, 0x22);
		do_hello();
		hello[6] = versions[i][0];
		hello[7] = versions[i][1];
		cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome,
		                                       sizeof welcome),
		             ZR__CURVE_EVERSION, "version %u.%u", versions[i][0], versions[i][1]);
	}
}

Test(zmtp_curve, hello_with_nonzero_padding_is_accepted_as_libzmq_does)
{
	do_hello();
	memset(hello + 8, 0xa5, 72);
	do_welcome(0);
	do_initiate();
	cr_assert_eq(server_initiate(0), 0);
}

Test(zmtp_curve, hello_whose_signature_box_opens_to_nonzero_octets_is_malformed)
{
	do_hello();
	uint8_t n[24], sig[64];
	memset(sig, 0, sizeof sig);
	sig[63] = 1;
	nonce_make(n, "CurveZMQHELLO---", 16, hello + 112);
	cr_assert_eq(crypto_box_easy(hello + 120, sig, 64, n, server_pk, cl.cn_secret), 0);
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, sizeof welcome),
	             ZR__CURVE_EMALFORMED);
}

/* ---- cookies ------------------------------------------------------------------------ */

Test(zmtp_curve, initiate_60_s_after_welcome_is_accepted_and_later_is_a_stale_cookie)
{
	do_hello();
	do_welcome(1000);
	do_initiate();
	cr_assert_eq(server_initiate(1000 + ZR__CURVE_COOKIE_TTL_MS), 0);

	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	do_hello();
	do_welcome(1000);
	do_initiate();
	cr_assert_eq(server_initiate(1000 + ZR__CURVE_COOKIE_TTL_MS + 1), ZR__CURVE_ECOOKIE);
	static const uint8_t zeros[32];
	cr_assert_arr_eq(sv.cookie_key, zeros, 32, "the cookie key is wiped");
}

Test(zmtp_curve, cookie_key_is_fresh_per_hello_and_wiped_after_initiate)
{
	do_hello();
	do_welcome(0);
	uint8_t k1[32];
	memcpy(k1, sv.cookie_key, 32);
	do_initiate();
	cr_assert_eq(server_initiate(0), 0);
	static const uint8_t zeros[32];
	cr_assert_arr_eq(sv.cookie_key, zeros, 32);

	struct zr__curve sv2;
	struct fixed_random r2;
	curve_open(&sv2, true, NULL, &r2, 0x33);
	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	do_hello();
	cr_assert_eq(
		zr__curve_server_on_hello(&sv2, g(hello, 200), 200, 0, welcome, sizeof welcome),
		168);
	cr_assert_arr_neq(sv2.cookie_key, k1, 32);
	zr__curve_fini(&sv2);
}

Test(zmtp_curve, initiate_with_a_cookie_from_another_hello_fails_as_a_box_error)
{
	/* connection A: client A (randomness 0x11) to server A (0x22) */
	do_hello();
	do_welcome(0);
	do_initiate();
	uint8_t cookie_a[96];
	memcpy(cookie_a, initiate + 9, 96);

	/* connection B: another client and server with the same long-term keys */
	curve_open(&cl, false, server_pk, &rnd_client, 0x44);
	curve_open(&sv, true, NULL, &rnd_server, 0x55);
	do_hello();
	do_welcome(0);
	do_initiate();
	memcpy(initiate + 9, cookie_a, 96);
	cr_assert_eq(server_initiate(0), ZR__CURVE_EBOX);
}

Test(zmtp_curve, initiate_whose_vouch_names_another_server_is_a_key_error)
{
	do_hello();
	do_welcome(0);
	do_initiate();
	/* Rebuild the INITIATE box by hand with a vouch of C' + (not S). */
	uint8_t n[24], p[128 + CLIENT_META_LEN];
	nonce_make(n, "CurveZMQINITIATE", 16, initiate + 105);
	cr_assert_eq(
		crypto_box_open_easy_afternm(p, initiate + 113, initiate_len - 113, n, cl.precom),
		0);
	uint8_t vouch[64], vn[24];
	memcpy(vouch, cl.cn_public, 32);
	memset(vouch + 32, 0x77, 32);
	nonce_make(vn, "VOUCH---", 8, p + 32);
	cr_assert_eq(crypto_box_easy(p + 48, vouch, 64, vn, cl.cn_peer, client_sk), 0);
	cr_assert_eq(crypto_box_easy_afternm(initiate + 113, p, sizeof p, n, cl.precom), 0);
	cr_assert_eq(server_initiate(0), ZR__CURVE_EKEY);
}

/* ---- keys and ERROR --------------------------------------------------------------------- */

Test(zmtp_curve, client_with_the_wrong_server_key_fails_at_the_server_hello_box)
{
	uint8_t other_pk[32], other_sk[32];
	keys_make(other_pk, other_sk, 0x99);
	curve_open(&cl, false, other_pk, &rnd_client, 0x11);
	do_hello();
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, sizeof welcome),
	             ZR__CURVE_EBOX);
}

Test(zmtp_curve, client_detects_a_welcome_from_a_server_with_another_key_as_a_box_error)
{
	/* An impostor server with its own key answers a HELLO made for it by a
	 * client with the same transient key (fixed randomness); the real client,
	 * which expects server_pk, gets that WELCOME. */
	uint8_t other_pk[32], other_sk[32];
	keys_make(other_pk, other_sk, 0x99);
	struct zr__curve fake_client, impostor;
	struct fixed_random r1, r2;
	curve_open(&fake_client, false, other_pk, &r1, 0x11);
	struct zr__curve_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.as_server = true;
	memcpy(cfg.public_key, other_pk, 32);
	memcpy(cfg.secret_key, other_sk, 32);
	cfg.random = fixed_random_fill;
	memset(&r2, 0, sizeof r2);
	cfg.random_arg = &r2;
	cr_assert_eq(zr__curve_init(&impostor, &cfg), 0);
	uint8_t h[200];
	cr_assert_eq(zr__curve_client_hello(&fake_client, h, sizeof h), 200);
	do_hello();
	cr_assert_arr_eq(h + 80, hello + 80, 32, "same C'");
	cr_assert_eq(
		zr__curve_server_on_hello(&impostor, g(h, 200), 200, 0, welcome, sizeof welcome),
		168);
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(welcome, 168), 168, NULL, 0, initiate,
	                                         sizeof initiate),
	             ZR__CURVE_EBOX);
	zr__curve_fini(&fake_client);
	zr__curve_fini(&impostor);
}

Test(zmtp_curve, error_from_the_server_instead_of_welcome_or_ready_gives_its_reason)
{
	do_hello();
	static const uint8_t err[] = "\x05"
				     "ERROR\x0fnot authorised!";
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(err, sizeof err - 1), sizeof err - 1, NULL,
	                                         0, initiate, sizeof initiate),
	             ZR__CURVE_EPEERERROR);
	cr_assert_str_eq(zr__curve_error_reason(&cl), "not authorised!");

	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	do_hello();
	do_welcome(0);
	do_initiate();
	static const uint8_t err2[] = "\x05"
				      "ERROR\x03"
				      "400";
	cr_assert_eq(zr__curve_client_on_ready(&cl, g(err2, sizeof err2 - 1), sizeof err2 - 1,
	                                       plain, sizeof plain, &meta, &meta_len),
	             ZR__CURVE_EPEERERROR);
	cr_assert_str_eq(zr__curve_error_reason(&cl), "400");
}

Test(zmtp_curve, error_whose_reason_runs_past_the_body_is_malformed)
{
	do_hello();
	static const uint8_t err[] = "\x05"
				     "ERROR\x10short";
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(err, sizeof err - 1), sizeof err - 1, NULL,
	                                         0, initiate, sizeof initiate),
	             ZR__CURVE_EMALFORMED);
}

/* ---- caller errors ---------------------------------------------------------------------- */

Test(zmtp_curve, calls_in_the_wrong_role_or_state_are_einval_and_change_nothing)
{
	uint8_t out[256];
	cr_assert_eq(zr__curve_server_on_hello(&cl, hello, 200, 0, out, sizeof out), -EINVAL);
	cr_assert_eq(zr__curve_client_hello(&sv, out, sizeof out), -EINVAL);
	cr_assert_eq(zr__curve_encode_message(&cl, 0, NULL, 0, out, sizeof out), -EINVAL);
	cr_assert_eq(zr__curve_server_ready(&sv, NULL, 0, out, sizeof out), -EINVAL);
	cr_assert_null(zr__curve_peer_key(&sv));
	handshake(); /* still fine */
}

Test(zmtp_curve, a_too_small_output_buffer_is_enobufs_and_not_sticky)
{
	cr_assert_eq(zr__curve_client_hello(&cl, hello, 199), -ENOBUFS);
	do_hello();
	cr_assert_eq(zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, 167), -ENOBUFS);
	do_welcome(0);
	cr_assert_eq(zr__curve_client_on_welcome(&cl, g(welcome, 168), 168, client_meta,
	                                         CLIENT_META_LEN, initiate, 256 + CLIENT_META_LEN),
	             -ENOBUFS);
	do_initiate();
	cr_assert_eq(zr__curve_server_on_initiate(&sv, g(initiate, initiate_len), initiate_len, 0,
	                                          plain, 127 + CLIENT_META_LEN, &meta, &meta_len),
	             -ENOBUFS);
	cr_assert_eq(server_initiate(0), 0);
	do_ready();
	cr_assert_eq(zr__curve_client_on_ready(&cl, g(ready, ready_len), ready_len, plain,
	                                       SERVER_META_LEN - 1, &meta, &meta_len),
	             -ENOBUFS);
	cr_assert_eq(client_ready(), 0);
	uint8_t wire[40];
	cr_assert_eq(zr__curve_encode_message(&cl, 0, (const uint8_t *)"12345678", 8, wire, 40),
	             -ENOBUFS);
	int n = zr__curve_encode_message(&cl, 0, (const uint8_t *)"1234567", 7, wire, 40);
	cr_assert_eq(n, 40);
	uint8_t flags;
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, 40), 40, plain, 7, &flags), -ENOBUFS);
	cr_assert_eq(zr__curve_decode_message(&sv, g(wire, 40), 40, plain, 8, &flags), 7);
}

Test(zmtp_curve, fini_wipes_every_key)
{
	handshake();
	zr__curve_fini(&cl);
	static const uint8_t zeros[sizeof cl];
	cr_assert_arr_eq(&cl, zeros, sizeof cl);
}

Test(zmtp_curve, handshake_works_with_the_zmq_curve_7_test_keys_given_in_z85)
{
	/* The test key pairs of libzmq's zmq_curve(7) page, through RFC 32. */
	cr_assert_eq(zr_curve_key_decode(client_pk, "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"), 0);
	cr_assert_eq(zr_curve_key_decode(client_sk, "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"), 0);
	cr_assert_eq(zr_curve_key_decode(server_pk, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"), 0);
	cr_assert_eq(zr_curve_key_decode(server_sk, "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"), 0);
	uint8_t pk[32];
	crypto_scalarmult_base(pk, client_sk);
	cr_assert_arr_eq(pk, client_pk, 32);
	curve_open(&cl, false, server_pk, &rnd_client, 0x11);
	curve_open(&sv, true, NULL, &rnd_server, 0x22);
	handshake();
	cr_assert_arr_eq(zr__curve_peer_key(&sv), client_pk, 32);
}

Test(zmtp_curve, failures_carry_the_curve_protocol_codes_and_a_box_failure_reads_as_eacces)
{
	cr_assert_eq(ZR__CURVE_EMALFORMED, -ZR_ECURVECMD);
	cr_assert_eq(ZR__CURVE_EBOX, -ZR_ECURVEBOX);
	cr_assert_eq(ZR__CURVE_ENONCE, -ZR_ECURVENONCE);
	cr_assert_eq(ZR__CURVE_EVERSION, -ZR_ECURVEVERSION);
	cr_assert_eq(ZR__CURVE_ECOOKIE, -ZR_ECURVECOOKIE);
	cr_assert_eq(ZR__CURVE_EKEY, -ZR_ECURVEKEY);
	uint8_t other_pk[32], other_sk[32];
	keys_make(other_pk, other_sk, 0x99);
	curve_open(&cl, false, other_pk, &rnd_client, 0x11);
	do_hello();
	int rc = zr__curve_server_on_hello(&sv, g(hello, 200), 200, 0, welcome, sizeof welcome);
	cr_assert_eq(rc, -ZR_ECURVEBOX);
	cr_assert_eq(zr_errno(rc), -EACCES, "a wrong key is an authentication failure");
}
