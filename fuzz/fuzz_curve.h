/*
 * The CurveZMQ core (zmtp/curve.h) under a fuzzer, structure-aware.
 *
 * A real client and a real server zr__curve, with fixed long-term keys and
 * fixed randomness (libsodium's randombytes_buf_deterministic on a counter),
 * run the whole dialogue. The input does not replace the protocol; it steers
 * it: before every command reaches the side under test (the server for
 * fuzz_curve_server, the client for fuzz_curve_client) the input picks one
 * mutation of its bytes, so inputs reach past HELLO and into MESSAGE
 * traffic. Input layout, read front to back (missing bytes read as 0, so a
 * short input means "no mutations"):
 *
 *   1 octet   metadata length (mod 65) for INITIATE; that many octets
 *   per command toward the target: a mutation (see fc_mutate)
 *   2 octets  INITIATE delay after WELCOME (x 4 ms, crosses the 60 s TTL)
 *   then, until the input ends, one MESSAGE toward the target each:
 *   1 octet   op: bit 0-1 flags, bit 2 replay the previous body, bit 3 skip
 *             one of the sender's nonces
 *   2 octets  data length (mod 1024), then the data, then a mutation
 *
 * Oracles (FC_CHECK aborts): an unmutated command is always accepted with
 * its exact output size; an INITIATE after the cookie TTL is exactly
 * ZR__CURVE_ECOOKIE; whatever is accepted decrypts to exactly what the
 * sender meant (no mutation gets through a box); a replayed body is exactly
 * ZR__CURVE_ENONCE; every failure is sticky and reported by
 * zr__curve_error; no call writes past cap (ASan; buffers are heap blocks of
 * exactly cap octets) or reads past len (peer bodies are heap copies of
 * exactly len octets).
 */
#ifndef ZR_FUZZ_FUZZ_CURVE_H
#define ZR_FUZZ_FUZZ_CURVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../zmtp/curve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FC_CHECK(cond)                                                                         \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, \
			        #cond);                                                        \
			abort();                                                               \
		}                                                                              \
	} while (0)

#define FC_CAP 4096u

struct fc_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t
fc_byte(struct fc_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static size_t
fc_u16(struct fc_in *in)
{
	size_t hi = fc_byte(in);
	return (hi << 8) | fc_byte(in);
}

/* Copies n octets of input into out, zeros where the input ran out. */
static void
fc_bytes(struct fc_in *in, uint8_t *out, size_t n)
{
	size_t k = n < in->n ? n : in->n;
	memcpy(out, in->p, k);
	memset(out + k, 0, n - k);
	in->p += k;
	in->n -= k;
}

struct fc_rand {
	uint8_t tag;
	uint32_t calls;
};

static void
fc_random(void *arg, uint8_t *buf, size_t len)
{
	struct fc_rand *r = arg;
	uint8_t seed[randombytes_SEEDBYTES];
	memset(seed, r->tag, sizeof seed);
	r->calls++;
	memcpy(seed, &r->calls, sizeof r->calls);
	randombytes_buf_deterministic(buf, len, seed);
}

static void
fc_keys(uint8_t pk[32], uint8_t sk[32], uint8_t tag)
{
	uint8_t seed[crypto_box_SEEDBYTES];
	memset(seed, tag, sizeof seed);
	crypto_box_seed_keypair(pk, sk, seed);
}

/*
 * One mutation of the command in buf (len octets, room for cap). op % 8:
 * 0-3 none (the common case keeps inputs deep), 4 xor one octet, 5 truncate,
 * 6 append up to 63 octets, 7 replace the whole body with up to cap octets.
 * Returns the new length; *changed says whether the bytes differ.
 */
static size_t
fc_mutate(struct fc_in *in, uint8_t *buf, size_t len, size_t cap, bool *changed)
{
	*changed = false;
	switch (fc_byte(in) % 8) {
	case 4: {
		if (len == 0)
			return len;
		size_t at = fc_u16(in) % len;
		uint8_t x = fc_byte(in);
		buf[at] ^= x;
		*changed = x != 0;
		return len;
	}
	case 5: {
		size_t n = fc_u16(in) % (len + 1);
		*changed = n != len;
		return n;
	}
	case 6: {
		size_t k = fc_byte(in) % 64;
		if (len + k > cap)
			k = cap - len;
		fc_bytes(in, buf + len, k);
		*changed = k > 0;
		return len + k;
	}
	case 7: {
		uint8_t old[FC_CAP];
		memcpy(old, buf, len);
		size_t n = fc_u16(in) % (cap + 1);
		fc_bytes(in, buf, n);
		*changed = n != len || memcmp(old, buf, len) != 0;
		return n;
	}
	default:
		return len;
	}
}

/* A peer body in a heap block of exactly len octets (ASan sees an overread). */
static uint8_t *
fc_exact(const uint8_t *p, size_t len)
{
	uint8_t *b = malloc(len > 0 ? len : 1);
	FC_CHECK(b != NULL);
	if (len > 0)
		memcpy(b, p, len);
	return b; /* for len 0 a 1-octet block, never read */
}

/* A failure must be sticky and reported. */
static void
fc_failed(struct zr__curve *c, int rc)
{
	FC_CHECK(rc < 0);
	FC_CHECK(rc != -ENOBUFS && rc != -EINVAL);
	FC_CHECK(zr__curve_state(c) == ZR__CURVE_FAILED);
	FC_CHECK(zr__curve_error(c) == rc);
	uint8_t out[64];
	uint8_t flags;
	FC_CHECK(zr__curve_decode_message(c, out, 0, out, sizeof out, &flags) == rc);
	FC_CHECK(zr__curve_encode_message(c, 0, NULL, 0, out, sizeof out) == rc);
}

/* Delivers a command toward the target after the input's mutation. */
struct fc_cmd {
	uint8_t *buf; /* FC_CAP octets */
	size_t len;
	bool changed;
	/* Some command so far was changed. A changed command may still be
	 * accepted (X25519 ignores a public key's top bit, so HELLO's C' with
	 * bit 255 flipped opens the same boxes), and then a later step may
	 * rightly fail (INITIATE's vouch names the real C'): only an untouched
	 * exchange must succeed. */
	bool tampered;
	uint8_t *exact; /* the mutated body, heap, exactly len */
};

static void
fc_cmd_deliver(struct fc_in *in, struct fc_cmd *m, bool mutate)
{
	m->changed = false;
	if (mutate)
		m->len = fc_mutate(in, m->buf, m->len, FC_CAP, &m->changed);
	m->tampered |= m->changed;
	m->exact = fc_exact(m->buf, m->len);
}

static void
fc_run(const uint8_t *data, size_t size, bool target_server)
{
	struct fc_in in = {data, size};
	uint8_t client_pk[32], client_sk[32], server_pk[32], server_sk[32];
	fc_keys(client_pk, client_sk, 0xc1);
	fc_keys(server_pk, server_sk, 0x5e);
	struct fc_rand rc_rand = {0x11, 0}, rs_rand = {0x22, 0};
	struct zr__curve_config cfg;
	struct zr__curve cl, sv;

	memset(&cfg, 0, sizeof cfg);
	memcpy(cfg.public_key, client_pk, 32);
	memcpy(cfg.secret_key, client_sk, 32);
	memcpy(cfg.server_key, server_pk, 32);
	cfg.random = fc_random;
	cfg.random_arg = &rc_rand;
	FC_CHECK(zr__curve_init(&cl, &cfg) == 0);
	memset(&cfg, 0, sizeof cfg);
	cfg.as_server = true;
	memcpy(cfg.public_key, server_pk, 32);
	memcpy(cfg.secret_key, server_sk, 32);
	cfg.random = fc_random;
	cfg.random_arg = &rs_rand;
	FC_CHECK(zr__curve_init(&sv, &cfg) == 0);

	uint8_t *buf = malloc(FC_CAP);
	uint8_t *out = malloc(FC_CAP);
	uint8_t *plain = malloc(FC_CAP);
	uint8_t *last = malloc(FC_CAP);
	uint8_t meta[64];
	FC_CHECK(buf != NULL && out != NULL && plain != NULL && last != NULL);
	struct fc_cmd m = {buf, 0, false, false, NULL};
	const uint8_t *pm;
	size_t pm_len;
	int rc;

	size_t meta_len = fc_byte(&in) % 65;
	fc_bytes(&in, meta, meta_len);

	/* HELLO -> server */
	rc = zr__curve_client_hello(&cl, buf, FC_CAP);
	FC_CHECK(rc == (int)ZR__CURVE_HELLO_SIZE);
	m.len = (size_t)rc;
	fc_cmd_deliver(&in, &m, target_server);
	uint8_t *wbuf = malloc(ZR__CURVE_WELCOME_SIZE);
	FC_CHECK(wbuf != NULL);
	rc = zr__curve_server_on_hello(&sv, m.exact, m.len, 1000, wbuf, ZR__CURVE_WELCOME_SIZE);
	free(m.exact);
	if (!m.tampered)
		FC_CHECK(rc == (int)ZR__CURVE_WELCOME_SIZE);
	if (rc < 0) {
		fc_failed(&sv, rc);
		free(wbuf);
		goto done;
	}
	FC_CHECK(rc == (int)ZR__CURVE_WELCOME_SIZE);
	FC_CHECK(zr__curve_state(&sv) == ZR__CURVE_SERVER_INITIATE);

	/* WELCOME -> client */
	memcpy(buf, wbuf, ZR__CURVE_WELCOME_SIZE);
	free(wbuf);
	m.len = ZR__CURVE_WELCOME_SIZE;
	fc_cmd_deliver(&in, &m, !target_server);
	uint8_t *ibuf = malloc(ZR__CURVE_INITIATE_MIN + meta_len);
	FC_CHECK(ibuf != NULL);
	rc = zr__curve_client_on_welcome(&cl, m.exact, m.len, meta, meta_len, ibuf,
	                                 ZR__CURVE_INITIATE_MIN + meta_len);
	free(m.exact);
	if (!m.tampered)
		FC_CHECK(rc == (int)(ZR__CURVE_INITIATE_MIN + meta_len));
	if (rc < 0) {
		fc_failed(&cl, rc);
		free(ibuf);
		goto done;
	}
	FC_CHECK(rc == (int)(ZR__CURVE_INITIATE_MIN + meta_len));

	/* INITIATE -> server, some time later */
	memcpy(buf, ibuf, (size_t)rc);
	free(ibuf);
	m.len = (size_t)rc;
	fc_cmd_deliver(&in, &m, target_server);
	uint64_t delay = (uint64_t)fc_u16(&in) * 4u;
	size_t pcap = m.len >= 129 ? m.len - 129 : 0;
	uint8_t *pbuf = malloc(pcap > 0 ? pcap : 1);
	FC_CHECK(pbuf != NULL);
	rc = zr__curve_server_on_initiate(&sv, m.exact, m.len, 1000 + delay, pbuf, pcap, &pm,
	                                  &pm_len);
	free(m.exact);
	if (!m.tampered)
		FC_CHECK(rc == (delay > ZR__CURVE_COOKIE_TTL_MS ? ZR__CURVE_ECOOKIE : 0));
	if (rc == 0) {
		/* nothing forged gets through the boxes */
		FC_CHECK(pm_len == meta_len && memcmp(pm, meta, meta_len) == 0);
		FC_CHECK(memcmp(zr__curve_peer_key(&sv), client_pk, 32) == 0);
	}
	free(pbuf);
	if (rc < 0) {
		if (rc != -ENOBUFS)
			fc_failed(&sv, rc);
		goto done;
	}

	/* READY -> client (the server's metadata: the client's, reversed) */
	for (size_t i = 0; i < meta_len; i++)
		last[i] = meta[meta_len - 1 - i];
	rc = zr__curve_server_ready(&sv, last, meta_len, buf, FC_CAP);
	FC_CHECK(rc == (int)(ZR__CURVE_READY_MIN + meta_len));
	m.len = (size_t)rc;
	fc_cmd_deliver(&in, &m, !target_server);
	rc = zr__curve_client_on_ready(&cl, m.exact, m.len, plain, FC_CAP, &pm, &pm_len);
	free(m.exact);
	if (!m.tampered)
		FC_CHECK(rc == 0);
	if (rc == 0) {
		FC_CHECK(pm_len == meta_len && memcmp(pm, last, meta_len) == 0);
		FC_CHECK(zr__curve_state(&cl) == ZR__CURVE_TRAFFIC);
	} else {
		fc_failed(&cl, rc);
		goto done;
	}

	/* MESSAGEs toward the target */
	struct zr__curve *from = target_server ? &cl : &sv;
	struct zr__curve *to = target_server ? &sv : &cl;
	size_t last_len = 0;
	bool have_last = false;
	while (in.n > 0) {
		uint8_t op = fc_byte(&in);
		if (op & 0x04 && have_last) {
			uint8_t *e = fc_exact(last, last_len);
			uint8_t flags;
			rc = zr__curve_decode_message(to, e, last_len, plain, FC_CAP, &flags);
			free(e);
			FC_CHECK(rc == ZR__CURVE_ENONCE);
			fc_failed(to, rc);
			break;
		}
		if (op & 0x08)
			from->nonce++; /* a gap in the sender's nonces is allowed */
		uint8_t flags = op & 0x03;
		size_t dlen = fc_u16(&in) % 1024;
		uint8_t msg[1024];
		fc_bytes(&in, msg, dlen);
		rc = zr__curve_encode_message(from, flags, msg, dlen, buf, FC_CAP);
		FC_CHECK(rc == (int)(ZR__CURVE_MESSAGE_MIN + dlen));
		m.len = (size_t)rc;
		fc_cmd_deliver(&in, &m, true);
		uint8_t got_flags = 0xff;
		size_t ocap = m.len > 32 ? m.len - 32 : 0;
		uint8_t *o = malloc(ocap > 0 ? ocap : 1);
		FC_CHECK(o != NULL);
		rc = zr__curve_decode_message(to, m.exact, m.len, o, ocap, &got_flags);
		if (!m.tampered)
			FC_CHECK(rc == (int)dlen);
		if (rc >= 0) {
			FC_CHECK(rc == (int)dlen && got_flags == flags);
			FC_CHECK(dlen == 0 || memcmp(o, msg, dlen) == 0);
			memcpy(last, m.exact, m.len);
			last_len = m.len;
			have_last = true;
		}
		free(o);
		free(m.exact);
		if (rc < 0) {
			fc_failed(to, rc);
			break;
		}
	}
done:
	free(buf);
	free(out);
	free(plain);
	free(last);
	zr__curve_fini(&cl);
	zr__curve_fini(&sv);
}

#endif /* ZR_FUZZ_FUZZ_CURVE_H */
