/*
 * zring tools — `zring keygen` (see zl_keygen.h). The key pair comes from
 * zr_curve_keypair (libsodium's crypto_box_keypair); the secret key goes to
 * stdout only, and our copy of it is wiped before we return.
 */
#include <stdio.h>
#include <string.h>

#include <zring.h>

#include "zl_keygen.h"

static const char keygen_usage_text[] =
	"usage: zring keygen\n"
	"\n"
	"Prints a new CURVE key pair (CurveZMQ, RFC 26) as two lines of Z85 text\n"
	"(RFC 32), the form libzmq's ZMQ_CURVE_PUBLICKEY / ZMQ_CURVE_SECRETKEY and\n"
	"pyzmq's curve_server / curve_publickey options take:\n"
	"  public: <40 characters>\n"
	"  secret: <40 characters>\n"
	"Keep the secret key secret: give only the public key to peers.\n";

/* Overwrites a secret in a way the compiler may not drop as a dead store. */
static void
keygen_wipe(char *p, size_t n)
{
	volatile char *v = p;

	while (n-- > 0)
		*v++ = 0;
}

int
zl_keygen_main(int argc, char **argv)
{
	char pub[ZR_CURVE_KEY_Z85_LEN + 1], sec[ZR_CURVE_KEY_Z85_LEN + 1];
	int rc, status = 0;

	if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
		fputs(keygen_usage_text, stdout);
		return 0;
	}
	if (argc != 0) {
		fprintf(stderr, "zring keygen: unexpected argument '%s'\n\n", argv[0]);
		fputs(keygen_usage_text, stderr);
		return 1;
	}
	rc = zr_curve_keypair(pub, sec);
	if (rc < 0) {
		fprintf(stderr, "zring keygen: no key pair: %s\n", zr_strerror(rc));
		return 1;
	}
	if (printf("public: %s\nsecret: %s\n", pub, sec) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "zring keygen: could not write the keys\n");
		status = 1;
	}
	keygen_wipe(sec, sizeof(sec));
	return status;
}
