/*
 * zring tools — `zring keygen` (see zl_keygen.h). The key pair comes from
 * zr_curve_keypair (libsodium's crypto_box_keypair); the secret key goes to
 * stdout only, and our copy of it is wiped before we return.
 */
#include <stdio.h>
#include <string.h>

#include <zring.h>

#include "zl_args.h"
#include "zl_keygen.h"

static const char keygen_usage_text[] =
	"usage: zring keygen\n"
	"\n"
	"Prints a new CURVE key pair (CurveZMQ, RFC 26) as two lines of Z85 text\n"
	"(RFC 32), the form libzmq's ZMQ_CURVE_PUBLICKEY / ZMQ_CURVE_SECRETKEY and\n"
	"pyzmq's curve_server / curve_publickey options take:\n"
	"  public: <40 characters>\n"
	"  secret: <40 characters>\n"
	"Keep the secret key secret: give only the public key to peers.\n"
	"\n"
	"options:\n";

enum keygen_opt {
	KEYGEN_ARG_HELP,
};

static const struct zl_opt keygen_opts[] = {
	{KEYGEN_ARG_HELP, "help", 'h', NULL, "print this help (and nothing else)"},
};

static void
keygen_usage(FILE *f)
{
	fputs(keygen_usage_text, f);
	zl_args_help(f, ZL_OPTS(keygen_opts));
}

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
	struct zl_args p;
	const char *v;
	int rc, status = 0;

	/* Only a lone --help: anything beside it is a mistake worth saying. */
	zl_args_init(&p, ZL_OPTS(keygen_opts), argc, argv);
	rc = zl_args_next(&p, &v);
	if (rc == KEYGEN_ARG_HELP && argc == 1) {
		keygen_usage(stdout);
		return 0;
	}
	if (rc != ZL_ARG_END) {
		if (rc == ZL_ARG_ERROR)
			fprintf(stderr, "zring keygen: %s\n\n", p.error);
		else
			fprintf(stderr, "zring keygen: unexpected argument '%s'\n\n",
			        rc == KEYGEN_ARG_HELP ? argv[1] : v);
		keygen_usage(stderr);
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
