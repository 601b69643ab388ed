/*
 * One context per test, for the engine tests whose sockets all live in one:
 * CTX_SUITE(name, seconds) declares the Criterion suite; each test finds its
 * fresh context in `ctx`, and the context's end closes whatever sockets a
 * failed test left open. WAIT_MS is the receive/send timeout those tests
 * give their sockets (ctx_open).
 */
#ifndef ZR_TESTS_ENGINE_CTX_FIXTURE_H
#define ZR_TESTS_ENGINE_CTX_FIXTURE_H

#include <criterion/criterion.h>

#include <zring/zring.h>

#include "sock_helpers.h"

#define WAIT_MS 10000 /* generous: ASan and a loaded machine */

static zr_ctx *ctx;

static void
ctx_setup(void)
{
	cr_assert_eq(zr_ctx_new(&ctx), 0);
}

static void
ctx_teardown(void)
{
	zr_ctx_free(ctx);
	ctx = NULL;
}

/* A socket of the test's context that waits WAIT_MS at most and does not
 * linger. */
static inline zr_socket *
ctx_open(int type)
{
	zr_socket *s;

	cr_assert_eq(zr_socket_open(ctx, type, &s), 0);
	sopt_int(s, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(s, ZR_SNDTIMEO, WAIT_MS);
	sopt_int(s, ZR_LINGER, 0);
	return s;
}

#define CTX_SUITE(name, seconds) \
	TestSuite(name, .init = ctx_setup, .fini = ctx_teardown, .timeout = (seconds))

#endif
