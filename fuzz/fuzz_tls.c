/*
 * The TLS adapter (engine/tls.h) where OpenSSL's record layer meets our
 * buffers. Per input: a context pair from fixed in-memory PEM (a
 * self-signed P-256 certificate the client trusts), two sessions back to
 * back, and a real handshake between them. Then the session under test (the
 * target) gets whatever the input makes of the peer's traffic: real records
 * of any size, raw bytes, flipped bytes, dropped bytes, delivered in pieces
 * of any size through either feed or the zero-copy recv span, while it reads
 * with buffers of any size and writes its own records.
 *
 * Checks, besides ASan/UBSan/LeakSanitizer:
 *   - no forged plaintext: every byte the target reads is the next byte of
 *     what the peer wrote (AEAD: nothing the fuzzer makes up can
 *     authenticate, and a dropped or flipped byte must end the session);
 *   - what the target writes reaches the honest peer exactly;
 *   - calls keep their contracts: feed takes at most what it was given,
 *     read returns at most cap, the buffered ciphertext stays within
 *     ZR__TLS_BUF_IN/_OUT;
 *   - errors are sticky, come with a failure kind and words, and are one of
 *     -EPROTO, -ESHUTDOWN, -ENOMEM.
 * OpenSSL draws its own randomness (keys, nonces), so the ciphertext differs
 * between runs; the raw bytes and edits an input describes do not, and none
 * of them can be valid ciphertext under those keys.
 *
 * Input layout: byte 0 bit 0: the target is the server (else the client).
 * Then operations of three bytes [op, a, b], n = a | b << 8:
 *   0 the peer writes 1 + n % 20000 bytes
 *   1 the peer's ciphertext moves onto the wire (a harness buffer)
 *   2 the next min(n % 512, rest) input bytes go onto the wire as they are
 *   3 the wire byte at n % len is XORed with (b | 1)
 *   4 1 + n bytes of the wire go to the target: feed when a is even, else
 *     the recv span (and with a & 2, the target reads plaintext between
 *     taking the span and acking it, as while an io_uring recv is in flight)
 *   5 the target reads with a buffer of 1 + n % 20000 bytes
 *   6 the target writes 1 + n % 20000 bytes; they go to the peer, which
 *     reads them all
 *   7 a odd: the peer queues close_notify; else the wire's first
 *     1 + n % 64 bytes are dropped
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tls.h"
#include "fuzz_common.h"

static const char fz_cert[] = "-----BEGIN CERTIFICATE-----\n"
			      "MIIBlTCCATugAwIBAgIUC3UnPa5HM7yfpro/hU6jm1HqNzAwCgYIKoZIzj0EAwIw\n"
			      "FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMjAxMDM0MFoYDzIxMjYxMTA4\n"
			      "MDEwMzQwWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
			      "PQMBBwNCAARUP/xlvMRgeUy5zyEtLYolKgTaAaE/91MCVgRxCMJfiixfAfgmfFUE\n"
			      "qN2/7VkuE4h55yn1EQnH4N5+yF5UOETAo2kwZzAdBgNVHQ4EFgQUqUTD659HJ9z9\n"
			      "YlIbcEex88NeXb8wHwYDVR0jBBgwFoAUqUTD659HJ9z9YlIbcEex88NeXb8wDwYD\n"
			      "VR0TAQH/BAUwAwEB/zAUBgNVHREEDTALgglsb2NhbGhvc3QwCgYIKoZIzj0EAwID\n"
			      "SAAwRQIgL2D4yuvMsHXyq3p/RCn692+hScj5GvedNHW6Rp4lsYACIQCRgdUuW3kj\n"
			      "iOjyZ0ra/G4goLNAxDoZwIybsjfOo9sB+A==\n"
			      "-----END CERTIFICATE-----\n";

static const char fz_key[] = "-----BEGIN PRIVATE KEY-----\n"
			     "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUGiGPGWIqS+s8x3i\n"
			     "HHSPDntZGHSafS9okicD3H8fh/6hRANCAARUP/xlvMRgeUy5zyEtLYolKgTaAaE/\n"
			     "91MCVgRxCMJfiixfAfgmfFUEqN2/7VkuE4h55yn1EQnH4N5+yF5UOETA\n"
			     "-----END PRIVATE KEY-----\n";

#define FZ_WIRE_MAX (256u * 1024u)
#define FZ_CHUNK_MAX 20000u

/* Both directions' plaintext: byte i of a stream is a function of i, so
 * the oracle needs no copy of what was sent. */
static uint8_t
fz_stream_byte(uint64_t i, uint8_t salt)
{
	return (uint8_t)(i * 31u + (i >> 8) + salt);
}

struct fz_tls {
	struct zr__tls_ctx *sc, *cc;
	struct zr__tls *target, *peer;
	uint8_t *wire; /* ciphertext on its way to the target */
	size_t wire_len;
	uint64_t peer_sent, target_got; /* peer -> target plaintext */
	uint64_t target_sent, peer_got; /* target -> peer plaintext */
	int err;                        /* the target's sticky error, once it failed */
	bool peer_closed;
	uint8_t *buf; /* FZ_CHUNK_MAX scratch */
};

static void
fz_check_err(struct fz_tls *f, ssize_t r)
{
	if (r >= 0)
		return;
	FZ_CHECK(r == -EPROTO || r == -ESHUTDOWN || r == -ENOMEM);
	FZ_CHECK(zr__tls_failure(f->target) != ZR__TLS_OK);
	FZ_CHECK(zr__tls_error(f->target)[0] != '\0');
	FZ_CHECK(!zr__tls_done(f->target));
	if (f->err == 0)
		f->err = (int)r;
	FZ_CHECK(r == f->err);
}

static void
fz_bounds(struct fz_tls *f)
{
	FZ_CHECK(zr__tls_pending(f->target) <= ZR__TLS_BUF_OUT);
	FZ_CHECK(zr__tls_pending(f->peer) <= ZR__TLS_BUF_OUT);
}

/* Moves ciphertext between honest sessions until neither has any. */
static void
fz_pump(struct zr__tls *a, struct zr__tls *b)
{
	uint8_t scratch[64];
	int idle = 0;

	for (int round = 0; round < 200 && idle < 2; round++) {
		size_t moved = 0;

		for (int dir = 0; dir < 2; dir++) {
			struct zr__tls *from = dir ? b : a, *to = dir ? a : b;
			size_t have, room;
			const uint8_t *src = zr__tls_send_buf(from, &have);
			uint8_t *dst = src != NULL ? zr__tls_recv_buf(to, &room) : NULL;

			if (dst == NULL)
				continue;
			if (have > room)
				have = room;
			memcpy(dst, src, have);
			FZ_CHECK(zr__tls_send_ack(from, have) == 0);
			(void)zr__tls_recv_ack(to, have);
			moved += have;
		}
		(void)zr__tls_read(a, scratch, sizeof(scratch));
		(void)zr__tls_read(b, scratch, sizeof(scratch));
		idle = moved != 0 ? 0 : idle + 1;
	}
}

static bool
fz_open(struct fz_tls *f, bool target_is_server)
{
	struct zr__tls_config scfg = {.server = true,
	                              .cert_pem = fz_cert,
	                              .cert_pem_len = sizeof(fz_cert) - 1,
	                              .key_pem = fz_key,
	                              .key_pem_len = sizeof(fz_key) - 1};
	struct zr__tls_config ccfg = {
		.verify = 1, .ca_pem = fz_cert, .ca_pem_len = sizeof(fz_cert) - 1};
	struct zr__tls *s = NULL, *c = NULL;

	FZ_CHECK(zr__tls_ctx_new(&f->sc, &scfg, NULL, 0) == 0);
	FZ_CHECK(zr__tls_ctx_new(&f->cc, &ccfg, NULL, 0) == 0);
	FZ_CHECK(zr__tls_new(&s, f->sc, NULL) == 0);
	FZ_CHECK(zr__tls_new(&c, f->cc, "localhost") == 0);
	fz_pump(c, s);
	/* The handshake itself is not what is fuzzed: it must succeed. */
	FZ_CHECK(zr__tls_done(c) && zr__tls_done(s));
	f->target = target_is_server ? s : c;
	f->peer = target_is_server ? c : s;
	f->wire = fz_alloc(FZ_WIRE_MAX);
	f->buf = fz_alloc(FZ_CHUNK_MAX);
	return true;
}

static void
fz_close(struct fz_tls *f)
{
	zr__tls_free(f->target);
	zr__tls_free(f->peer);
	zr__tls_ctx_free(f->sc);
	zr__tls_ctx_free(f->cc);
	free(f->wire);
	free(f->buf);
}

static void
fz_wire_add(struct fz_tls *f, const uint8_t *p, size_t n)
{
	if (n > FZ_WIRE_MAX - f->wire_len)
		n = FZ_WIRE_MAX - f->wire_len;
	memcpy(f->wire + f->wire_len, p, n);
	f->wire_len += n;
}

static void
fz_wire_drop(struct fz_tls *f, size_t n)
{
	if (n > f->wire_len)
		n = f->wire_len;
	memmove(f->wire, f->wire + n, f->wire_len - n);
	f->wire_len -= n;
}

static void
fz_peer_write(struct fz_tls *f, size_t n)
{
	if (n > FZ_CHUNK_MAX)
		n = FZ_CHUNK_MAX;
	for (size_t i = 0; i < n; i++)
		f->buf[i] = fz_stream_byte(f->peer_sent + i, 0x5a);
	/* The peer's outbound buffer bounds what it takes; the rest is not sent. */
	ssize_t w = zr__tls_write(f->peer, f->buf, n);

	FZ_CHECK(w <= (ssize_t)n);
	if (w < 0) {
		FZ_CHECK(f->peer_closed); /* OpenSSL refuses to write after close_notify */
		return;
	}
	f->peer_sent += (uint64_t)w;
}

static void
fz_peer_pull(struct fz_tls *f)
{
	size_t room = FZ_WIRE_MAX - f->wire_len;
	size_t n = zr__tls_pull(f->peer, f->wire + f->wire_len, room);

	FZ_CHECK(n <= room);
	f->wire_len += n;
}

static void fz_target_read(struct fz_tls *f, size_t cap);

static void
fz_deliver(struct fz_tls *f, size_t n, bool zero_copy, bool read_in_flight)
{
	if (n > f->wire_len)
		n = f->wire_len;
	if (n == 0)
		return;
	if (!zero_copy) {
		/* Exactly n bytes on the heap: ASan sees a read past them. */
		uint8_t *p = fz_alloc(n);
		ssize_t r;

		memcpy(p, f->wire, n);
		r = zr__tls_feed(f->target, p, n);
		free(p);
		fz_check_err(f, r);
		if (r > 0) {
			FZ_CHECK((size_t)r <= n);
			fz_wire_drop(f, (size_t)r);
		}
		return;
	}
	size_t room;
	uint8_t *dst = zr__tls_recv_buf(f->target, &room);
	int r;

	if (dst == NULL) {
		FZ_CHECK(room == 0);
		return;
	}
	FZ_CHECK(room <= ZR__TLS_BUF_IN);
	if (n > room)
		n = room;
	/* The engine reads plaintext while its recv into the span is in
	 * flight (which may rewind the ring under the span). */
	if (read_in_flight)
		fz_target_read(f, FZ_CHUNK_MAX);
	memcpy(dst, f->wire, n);
	r = zr__tls_recv_ack(f->target, n);
	fz_check_err(f, r);
	fz_wire_drop(f, n);
}

static void
fz_target_read(struct fz_tls *f, size_t cap)
{
	if (cap > FZ_CHUNK_MAX)
		cap = FZ_CHUNK_MAX;
	for (int i = 0; i < 8; i++) {
		ssize_t r = zr__tls_read(f->target, f->buf, cap);

		fz_check_err(f, r);
		if (r <= 0)
			return;
		FZ_CHECK((size_t)r <= cap);
		for (ssize_t k = 0; k < r; k++)
			FZ_CHECK(f->buf[k] == fz_stream_byte(f->target_got + (uint64_t)k, 0x5a));
		f->target_got += (uint64_t)r;
		FZ_CHECK(f->target_got <= f->peer_sent);
	}
}

static void
fz_target_write(struct fz_tls *f, size_t n)
{
	ssize_t w;

	if (n > FZ_CHUNK_MAX)
		n = FZ_CHUNK_MAX;
	for (size_t i = 0; i < n; i++)
		f->buf[i] = fz_stream_byte(f->target_sent + i, 0xa5);
	w = zr__tls_write(f->target, f->buf, n);
	fz_check_err(f, w);
	if (w < 0)
		return;
	FZ_CHECK((size_t)w <= n);
	f->target_sent += (uint64_t)w;
	(void)zr__tls_flush(f->target);
	/* The path back is honest: everything arrives, in order. */
	for (int round = 0; round < 64; round++) {
		size_t have, room;
		const uint8_t *src = zr__tls_send_buf(f->target, &have);
		uint8_t *dst;
		ssize_t r;

		if (src != NULL && (dst = zr__tls_recv_buf(f->peer, &room)) != NULL) {
			if (have > room)
				have = room;
			memcpy(dst, src, have);
			(void)zr__tls_send_ack(f->target, have);
			(void)zr__tls_recv_ack(f->peer, have);
		}
		while ((r = zr__tls_read(f->peer, f->buf, FZ_CHUNK_MAX)) > 0) {
			for (ssize_t k = 0; k < r; k++)
				FZ_CHECK(f->buf[k] ==
				         fz_stream_byte(f->peer_got + (uint64_t)k, 0xa5));
			f->peer_got += (uint64_t)r;
		}
		(void)zr__tls_flush(f->target);
		if (zr__tls_pending(f->target) == 0 && r <= 0)
			break;
	}
	FZ_CHECK(f->peer_got <= f->target_sent);
	/* The peer may have closed (op 7); otherwise nothing is lost. */
	if (zr__tls_failure(f->peer) == ZR__TLS_OK && f->err == 0)
		FZ_CHECK(f->peer_got == f->target_sent);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_tls f = {0};
	size_t i = 1;

	if (size < 1 || size > 64 * 1024)
		return 0;
	fz_open(&f, (data[0] & 1) != 0);
	while (i + 3 <= size) {
		uint8_t op = data[i] % 8, a = data[i + 1], b = data[i + 2];
		size_t n = (size_t)a | (size_t)b << 8;

		i += 3;
		switch (op) {
		case 0:
			fz_peer_write(&f, 1 + n % FZ_CHUNK_MAX);
			break;
		case 1:
			fz_peer_pull(&f);
			break;
		case 2:
			n %= 512;
			if (n > size - i)
				n = size - i;
			fz_wire_add(&f, data + i, n);
			i += n;
			break;
		case 3:
			if (f.wire_len > 0)
				f.wire[n % f.wire_len] ^= (uint8_t)(b | 1);
			break;
		case 4:
			fz_deliver(&f, 1 + n, (a & 1) != 0, (a & 2) != 0);
			break;
		case 5:
			fz_target_read(&f, 1 + n % FZ_CHUNK_MAX);
			break;
		case 6:
			fz_target_write(&f, 1 + n % FZ_CHUNK_MAX);
			break;
		default:
			if (a & 1) {
				(void)zr__tls_close(f.peer);
				f.peer_closed = true;
			} else {
				fz_wire_drop(&f, 1 + n % 64);
			}
			break;
		}
		fz_bounds(&f);
	}
	/* Sticky: a failed target answers every call with its error. */
	if (f.err != 0) {
		uint8_t one = 0;

		FZ_CHECK(zr__tls_read(f.target, &one, 1) == f.err);
		FZ_CHECK(zr__tls_feed(f.target, &one, 1) == f.err);
		FZ_CHECK(zr__tls_write(f.target, &one, 1) == f.err);
	}
	fz_close(&f);
	return 0;
}
