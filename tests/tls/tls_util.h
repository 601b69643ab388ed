/*
 * Helpers for the TLS adapter tests: certificates (tls_test.h), contexts built
 * from them, and a pump that moves ciphertext between two sessions
 * held back to back in memory.
 */
#ifndef ZR_TESTS_TLS_TLS_UTIL_H
#define ZR_TESTS_TLS_TLS_UTIL_H

#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base.h"
#include "engine/tls.h"
#include "tls_test.h"

static inline struct zr__tls_ctx *
tt_ctx(const struct zr__tls_config *cfg)
{
	struct zr__tls_ctx *ctx = NULL;
	char err[256];
	int r = zr__tls_ctx_new(&ctx, cfg, err, sizeof(err));

	cr_assert_eq(r, 0, "zr__tls_ctx_new: %d %s", r, err);
	return ctx;
}

/* A server with NAME.pem/.key; with a CA it requires client certificates. */
static inline struct zr__tls_ctx *
tt_server(const struct tt_certs *c, const char *name, bool ca)
{
	char cert[128], key[128];
	struct zr__tls_config cfg = {.server = true};

	snprintf(cert, sizeof(cert), "%s/%s.pem", c->dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", c->dir, name);
	cfg.cert_file = cert;
	cfg.key_file = key;
	cfg.ca_file = ca ? tt_path(c, "ca.pem") : NULL;
	return tt_ctx(&cfg);
}

/* A client trusting the test CA, offering NAME.pem when NAME is not NULL. */
static inline struct zr__tls_ctx *
tt_client(const struct tt_certs *c, const char *name)
{
	char cert[128], key[128];
	struct zr__tls_config cfg = {.verify = -1, .ca_file = tt_path(c, "ca.pem")};

	if (name != NULL) {
		snprintf(cert, sizeof(cert), "%s/%s.pem", c->dir, name);
		snprintf(key, sizeof(key), "%s/%s.key", c->dir, name);
		cfg.cert_file = cert;
		cfg.key_file = key;
	}
	return tt_ctx(&cfg);
}

static inline struct zr__tls *
tt_session(struct zr__tls_ctx *ctx, const char *name)
{
	struct zr__tls *t = NULL;
	int r = zr__tls_new(&t, ctx, name);

	cr_assert_eq(r, 0, "zr__tls_new: %d", r);
	return t;
}

/*
 * Moves at most `chunk` bytes of ciphertext from `from` to `to` through the
 * zero-copy calls (send_buf/ack on one side, recv_buf/ack on the other).
 * Returns the bytes moved.
 */
static inline size_t
tt_move(struct zr__tls *from, struct zr__tls *to, size_t chunk)
{
	size_t have, room, n;
	const uint8_t *src = zr__tls_send_buf(from, &have);
	uint8_t *dst;

	if (src == NULL)
		return 0;
	dst = zr__tls_recv_buf(to, &room);
	if (dst == NULL)
		return 0;
	n = have < room ? have : room;
	if (n > chunk)
		n = chunk;
	memcpy(dst, src, n);
	cr_assert_eq(zr__tls_send_ack(from, n), 0);
	(void)zr__tls_recv_ack(to, n);
	return n;
}

/* The same through the copying calls (pull, then feed). Bytes feed does not
 * take are kept in *carry (a buffer of ZR__TLS_BUF_OUT). */
static inline size_t
tt_move_copy(struct zr__tls *from, struct zr__tls *to, uint8_t *carry, size_t *carry_len,
             size_t chunk)
{
	ssize_t f;
	size_t n = 0;

	if (*carry_len == 0)
		*carry_len = zr__tls_pull(from, carry,
		                          chunk < ZR__TLS_BUF_OUT ? chunk : ZR__TLS_BUF_OUT);
	if (*carry_len == 0)
		return 0;
	f = zr__tls_feed(to, carry, *carry_len);
	if (f > 0) {
		n = (size_t)f;
		memmove(carry, carry + n, *carry_len - n);
		*carry_len -= n;
	}
	return n;
}

/* Runs the handshake to its end: until neither side has anything to move.
 * Reads (into a scratch buffer that must stay empty: no application data
 * here) so that a post-handshake alert is seen too. */
static inline void
tt_pump(struct zr__tls *a, struct zr__tls *b)
{
	uint8_t scratch[64];
	int rounds, idle = 0;

	for (rounds = 0; rounds < 1000; rounds++) {
		size_t moved = tt_move(a, b, SIZE_MAX) + tt_move(b, a, SIZE_MAX);
		ssize_t ra = zr__tls_read(a, scratch, sizeof(scratch));
		ssize_t rb = zr__tls_read(b, scratch, sizeof(scratch));

		cr_assert_leq(ra, 0, "unexpected application data");
		cr_assert_leq(rb, 0, "unexpected application data");
		/* A read may have queued an alert: settled only after a second
		 * round with nothing to move. */
		if (moved != 0)
			idle = 0;
		else if (++idle == 2)
			return;
	}
	cr_assert_fail("handshake did not settle in 1000 rounds");
}

#endif /* ZR_TESTS_TLS_TLS_UTIL_H */
