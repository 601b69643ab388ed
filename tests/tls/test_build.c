/*
 * What a build with or without TLS (cmake -DZR_TLS=ON/OFF; the tests are
 * compiled with ZR_TEST_TLS 1 or 0) does for a program that never uses
 * tls://, and with one that tries: the only test of tests/tls/ that runs in
 * both builds (the others are registered as skipped without TLS).
 *
 * Without TLS, libssl is not even mapped (that mapping is what costs every
 * process about 1.7 MB: docs/tls.md) and tls:// is -EPROTONOSUPPORT with
 * words that name the build. With TLS, nothing of OpenSSL's state is made
 * before the first tls:// use: a process that only uses tcp:// pays the
 * mapping and nothing more.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <zring.h>

#include "engine/tls.h"

#ifndef ZR_TEST_TLS
#error "tests/CMakeLists.txt defines ZR_TEST_TLS for tests/tls/"
#endif

/* Whether a mapping of this process names lib (e.g. "/libssl.so"). */
static bool
mapped(const char *lib)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, lib) != NULL;
	fclose(f);
	return found;
}

Test(tls_build, libssl_is_mapped_only_in_a_build_with_tls)
{
	/* Criterion itself maps libcrypto (through its own dependencies), so
	 * only libssl tells whether zring linked OpenSSL. */
	cr_assert_eq(mapped("/libssl.so"), ZR_TEST_TLS == 1, "libssl mapped: %d, ZR_TEST_TLS %d",
	             mapped("/libssl.so"), ZR_TEST_TLS);
}

Test(tls_build, tls_endpoints_in_this_build)
{
	zr_ctx *ctx;
	zr_socket *pull, *push;
	int rc;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	/* tcp:// is the same either way. */
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:*"), 0);

	rc = zr_bind(pull, "tls://127.0.0.1:*");
	if (ZR_TEST_TLS) {
		/* A server without a certificate: the options' error, not the
		 * build's. */
		cr_assert_eq(rc, -EINVAL, "%d", rc);
		cr_assert_eq(zr_connect(push, "tls://127.0.0.1:9"), 0);
	} else {
		cr_assert_eq(rc, -EPROTONOSUPPORT, "%d", rc);
		cr_assert_str_eq(zr_strerror(rc), "protocol not supported (an unknown transport, "
		                                  "or tls:// in a build without TLS)");
		cr_assert_eq(zr_connect(push, "tls://127.0.0.1:9"), -EPROTONOSUPPORT);
	}
	zr_socket_close(push);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

/* The adapter of a build without TLS refuses with words; the two helpers
 * that need no OpenSSL work in both builds. */
Test(tls_build, adapter_in_this_build)
{
	static const uint8_t hello[] = {0x16, 0x03, 0x01};
	struct zr__tls_config cfg = {.server = false, .verify = 0};
	struct zr__tls_ctx *c = NULL;
	char err[ZR__TLS_ERR_MAX] = "";
	int rc = zr__tls_ctx_new(&c, &cfg, err, sizeof err);

	if (ZR_TEST_TLS) {
		cr_assert_eq(rc, 0, "%d %s", rc, err);
	} else {
		cr_assert_eq(rc, -EPROTONOSUPPORT);
		cr_assert_null(c);
		cr_assert_str_eq(err, "TLS: this zring was built without TLS (cmake -DZR_TLS=OFF)");
		cr_assert(!zr__tls_ktls_openssl());
	}
	zr__tls_ctx_free(c);
	cr_assert_eq(zr__tls_sniff(hello, sizeof hello), 1);
	rc = zr__tls_ktls_kernel(NULL);
	cr_assert(rc == 0 || rc == 1 || rc == -ENOENT, "%d", rc);
}
