/*
 * zring tools — socket options by libzmq name, for every command that takes
 * `-o NAME=VALUE` (zring cat, subscribe, publish): one table of names, the
 * parsing of values (integers, CURVE keys in Z85) and the checks of a
 * security set-up that zr_bind / zr_connect would otherwise refuse with a
 * bare -EINVAL. Built on the public API only (<zring.h>).
 */
#ifndef ZR_TOOLS_ZL_SOCKOPT_H
#define ZR_TOOLS_ZL_SOCKOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring.h>

enum zl_optkind {
	ZL_OPT_INT,    /* C int */
	ZL_OPT_INT64,  /* int64_t */
	ZL_OPT_BYTES,  /* the value's bytes */
	ZL_OPT_KEY,    /* a CURVE key in Z85, passed on as its 32 octets */
	ZL_OPT_TLSVER, /* "1.2" or "1.3", passed on as ZR_TLS_V12 / ZR_TLS_V13 (an int) */
};

struct zl_optdef {
	const char *name; /* libzmq's name without ZMQ_ */
	int option;
	enum zl_optkind kind;
};

/* One -o, checked and converted while parsing. */
struct zl_sockopt {
	const struct zl_optdef *def;
	const char *arg; /* the whole NAME=VALUE, for messages (argv) */
	const char *value;
	int64_t number;                /* ZL_OPT_INT, ZL_OPT_INT64 */
	int inumber;                   /* ZL_OPT_INT, ZL_OPT_TLSVER: what zr_setsockopt takes */
	uint8_t key[ZR_CURVE_KEY_LEN]; /* ZL_OPT_KEY; zl_sockopt_wipe clears it */
};

/* The row of a name (libzmq's, with or without ZMQ_, any case), or NULL. */
const struct zl_optdef *zl_optdef_find(const char *name, size_t len);

/*
 * Parses one NAME=VALUE (arg must outlive o) into o. Returns 0, or -EINVAL
 * with one line in err: no '=', an unknown name, a value that is not an
 * integer, a key that is not 40 Z85 characters (the text never repeats a key:
 * it may be a secret).
 */
int zl_sockopt_parse(const char *arg, struct zl_sockopt *o, char *err, size_t cap);

/* A CURVE key from its 40 Z85 characters; -EINVAL with one line in err
 * naming what (the text never repeats the key). */
int zl_sockopt_key(const char *what, const char *z85, uint8_t key[ZR_CURVE_KEY_LEN], char *err,
                   size_t cap);

/* o's value as zr_setsockopt takes it. */
void zl_sockopt_value(const struct zl_sockopt *o, const void **value, size_t *len);

/*
 * The mechanism (ZR_MECH_*) and role the options leave, by the library's rule
 * (the last of PLAIN_SERVER, PLAIN_USERNAME, CURVE_SERVER, CURVE_SERVERKEY
 * and the other CURVE keys decides, see zring.h), and the checks zr_bind and
 * zr_connect would otherwise fail with a bare -EINVAL: a CURVE server needs
 * its secret key, a client its key pair and the server's key, and a public
 * key must be the secret key's. Returns 0, or -EINVAL with one line in err.
 */
int zl_sockopt_security(const struct zl_sockopt *o, size_t n, int *mech, bool *server, char *err,
                        size_t cap);

/* Overwrites o's key in a way the compiler may not drop as a dead store. */
void zl_sockopt_wipe(struct zl_sockopt *o);

#endif /* ZR_TOOLS_ZL_SOCKOPT_H */
