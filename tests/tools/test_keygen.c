/*
 * `zring keygen`: the built tool run as a child. Its output is exactly two
 * lines, "public: " and "secret: " each followed by 40 Z85 characters; two
 * runs give different pairs; the public key is the one libzmq derives from
 * the secret (zmq.curve_public through pyzmq, in a separate process) and the
 * one we derive; --help and a bad argument behave as every zring command.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <zring/zmtp.h>

#ifndef ZR_BINARY_DIR
#error "tests/CMakeLists.txt defines ZR_BINARY_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define ZRING ZR_BINARY_DIR "/tools/zring"
#define OUT_MAX 8192

/* Runs a shell command; returns its exit status and its whole stdout. */
static int
run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, got;
	int status;

	cr_assert_not_null(p, "popen %s: %s", cmd, strerror(errno));
	while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	status = pclose(p);
	cr_assert(WIFEXITED(status), "%s did not exit normally (%d)", cmd, status);
	return WEXITSTATUS(status);
}

struct pair {
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];
	char sec[ZR_CURVE_KEY_Z85_LEN + 1];
};

/* Runs `zring keygen` and checks the exact shape of what it printed. */
static struct pair
keygen(void)
{
	char out[OUT_MAX];
	struct pair k;
	uint8_t key[ZR_CURVE_KEY_LEN];

	cr_assert_eq(run("'" ZRING "' keygen 2>/dev/null", out, sizeof(out)), 0);
	/* "public: " 40 "\n" "secret: " 40 "\n" and nothing else */
	cr_assert_eq(strlen(out), 2 * (8 + 40 + 1), "output: '%s'", out);
	cr_assert_eq(strncmp(out, "public: ", 8), 0, "output: '%s'", out);
	cr_assert_eq(out[48], '\n');
	cr_assert_eq(strncmp(out + 49, "secret: ", 8), 0, "output: '%s'", out);
	cr_assert_eq(out[97], '\n');
	memcpy(k.pub, out + 8, 40);
	k.pub[40] = '\0';
	memcpy(k.sec, out + 57, 40);
	k.sec[40] = '\0';
	cr_assert_eq(zr_curve_key_decode(key, k.pub), 0, "public '%s' is not Z85", k.pub);
	cr_assert_eq(zr_curve_key_decode(key, k.sec), 0, "secret '%s' is not Z85", k.sec);
	return k;
}

Test(tools_keygen, prints_a_public_and_a_secret_key_line_in_z85)
{
	struct pair k = keygen();
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];

	cr_assert_eq(zr_curve_public(pub, k.sec), 0);
	cr_assert_str_eq(pub, k.pub);
}

Test(tools_keygen, prints_a_different_pair_each_run)
{
	struct pair a = keygen(), b = keygen();

	cr_assert_str_neq(a.pub, b.pub);
	cr_assert_str_neq(a.sec, b.sec);
}

Test(tools_keygen, prints_the_public_key_libzmq_derives_from_the_secret, .timeout = 60)
{
	struct pair k = keygen();
	char cmd[512], out[OUT_MAX];

	/* Z85 has no single quote, so the key can sit inside one. */
	snprintf(cmd, sizeof(cmd),
	         "'%s' -c 'import sys, zmq; "
	         "print(zmq.curve_public(sys.argv[1].encode()).decode())' '%s'",
	         ZR_PYTHON, k.sec);
	cr_assert_eq(run(cmd, out, sizeof(out)), 0, "pyzmq failed (install Debian python3-zmq): %s",
	             out);
	out[strcspn(out, "\n")] = '\0';
	cr_assert_str_eq(out, k.pub, "libzmq says %s for secret %s", out, k.sec);
}

Test(tools_keygen, help_prints_the_usage_on_stdout_and_exits_0)
{
	char out[OUT_MAX];

	cr_assert_eq(run("'" ZRING "' keygen --help 2>/dev/null", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "usage: zring keygen"), "stdout: '%s'", out);
}

Test(tools_keygen, an_unknown_argument_prints_the_usage_on_stderr_and_exits_1)
{
	static const char *const args[] = {"--bogus", "extra", "--help extra", "-h -h"};
	char cmd[256], out[OUT_MAX];

	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' keygen %s 2>/dev/null", ZRING, args[i]);
		cr_assert_eq(run(cmd, out, sizeof(out)), 1, "%s", args[i]);
		cr_assert_str_empty(out, "%s wrote to stdout: '%s'", args[i], out);
		snprintf(cmd, sizeof(cmd), "'%s' keygen %s 2>&1 >/dev/null", ZRING, args[i]);
		cr_assert_eq(run(cmd, out, sizeof(out)), 1, "%s", args[i]);
		cr_assert_not_null(strstr(out, "usage: zring keygen"), "%s: stderr '%s'", args[i],
		                   out);
	}
}
