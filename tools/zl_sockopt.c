/*
 * Socket options by libzmq name (zl_sockopt.h): `zring cat`, `zring
 * subscribe` and `zring publish` share this table, so an option added here
 * is taken by all three.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "zl_args.h"
#include "zl_sockopt.h"

static const struct zl_optdef zl_optdefs[] = {
	{"SNDHWM", ZR_SNDHWM, ZL_OPT_INT},
	{"RCVHWM", ZR_RCVHWM, ZL_OPT_INT},
	{"LINGER", ZR_LINGER, ZL_OPT_INT},
	{"RECONNECT_IVL", ZR_RECONNECT_IVL, ZL_OPT_INT},
	{"RECONNECT_IVL_MAX", ZR_RECONNECT_IVL_MAX, ZL_OPT_INT},
	{"MAXMSGSIZE", ZR_MAXMSGSIZE, ZL_OPT_INT64},
	{"SNDBUF", ZR_SNDBUF, ZL_OPT_INT},
	{"RCVBUF", ZR_RCVBUF, ZL_OPT_INT},
	{"RCVTIMEO", ZR_RCVTIMEO, ZL_OPT_INT},
	{"SNDTIMEO", ZR_SNDTIMEO, ZL_OPT_INT},
	{"ROUTING_ID", ZR_ROUTING_ID, ZL_OPT_BYTES},
	{"ROUTER_MANDATORY", ZR_ROUTER_MANDATORY, ZL_OPT_INT},
	{"HANDSHAKE_IVL", ZR_HANDSHAKE_IVL, ZL_OPT_INT},
	{"HEARTBEAT_IVL", ZR_HEARTBEAT_IVL, ZL_OPT_INT},
	{"HEARTBEAT_TTL", ZR_HEARTBEAT_TTL, ZL_OPT_INT},
	{"HEARTBEAT_TIMEOUT", ZR_HEARTBEAT_TIMEOUT, ZL_OPT_INT},
	{"XPUB_VERBOSE", ZR_XPUB_VERBOSE, ZL_OPT_INT},
	{"XPUB_VERBOSER", ZR_XPUB_VERBOSER, ZL_OPT_INT},
	{"XPUB_NODROP", ZR_XPUB_NODROP, ZL_OPT_INT},
	{"XPUB_MANUAL", ZR_XPUB_MANUAL, ZL_OPT_INT},
	{"XPUB_WELCOME_MSG", ZR_XPUB_WELCOME_MSG, ZL_OPT_BYTES},
	{"PROBE_ROUTER", ZR_PROBE_ROUTER, ZL_OPT_INT},
	{"REQ_CORRELATE", ZR_REQ_CORRELATE, ZL_OPT_INT},
	{"REQ_RELAXED", ZR_REQ_RELAXED, ZL_OPT_INT},
	{"CONFLATE", ZR_CONFLATE, ZL_OPT_INT},
	{"INVERT_MATCHING", ZR_INVERT_MATCHING, ZL_OPT_INT},
	{"SUBS_MAX", ZR_SUBS_MAX, ZL_OPT_INT},
	{"SUBS_MAXBYTES", ZR_SUBS_MAXBYTES, ZL_OPT_INT64},
	{"PLAIN_SERVER", ZR_PLAIN_SERVER, ZL_OPT_INT},
	{"PLAIN_USERNAME", ZR_PLAIN_USERNAME, ZL_OPT_BYTES},
	{"PLAIN_PASSWORD", ZR_PLAIN_PASSWORD, ZL_OPT_BYTES},
	{"CURVE_SERVER", ZR_CURVE_SERVER, ZL_OPT_INT},
	{"CURVE_PUBLICKEY", ZR_CURVE_PUBLICKEY, ZL_OPT_KEY},
	{"CURVE_SECRETKEY", ZR_CURVE_SECRETKEY, ZL_OPT_KEY},
	{"CURVE_SERVERKEY", ZR_CURVE_SERVERKEY, ZL_OPT_KEY},
	{"ZAP_DOMAIN", ZR_ZAP_DOMAIN, ZL_OPT_BYTES},
	{"ZAP_ENFORCE_DOMAIN", ZR_ZAP_ENFORCE_DOMAIN, ZL_OPT_INT},
	{"MAXFRAMES", ZR_MAXFRAMES, ZL_OPT_INT},
	{"CONNS_MAX", ZR_CONNS_MAX, ZL_OPT_INT},
	{"BUSY_POLL", ZR_BUSY_POLL, ZL_OPT_INT},
	{"TLS_CERT", ZR_TLS_CERT, ZL_OPT_BYTES},
	{"TLS_KEY", ZR_TLS_KEY, ZL_OPT_BYTES},
	{"TLS_CA", ZR_TLS_CA, ZL_OPT_BYTES},
	{"TLS_VERIFY", ZR_TLS_VERIFY, ZL_OPT_INT},
	{"TLS_SERVER_NAME", ZR_TLS_SERVER_NAME, ZL_OPT_BYTES},
	{"TLS_VERSION_MIN", ZR_TLS_VERSION_MIN, ZL_OPT_TLSVER},
};

/* see zl_sockopt.h */
const struct zl_optdef *
zl_optdef_find(const char *name, size_t len)
{
	if (len >= 4 && strncasecmp(name, "ZMQ_", 4) == 0) {
		name += 4;
		len -= 4;
	}
	for (size_t i = 0; i < sizeof zl_optdefs / sizeof zl_optdefs[0]; i++)
		if (strlen(zl_optdefs[i].name) == len &&
		    strncasecmp(zl_optdefs[i].name, name, len) == 0)
			return &zl_optdefs[i];
	return NULL;
}

/* see zl_sockopt.h */
void
zl_sockopt_wipe(struct zl_sockopt *o)
{
	volatile uint8_t *v = o->key;

	for (size_t n = sizeof o->key; n > 0; n--)
		*v++ = 0;
}

/* see zl_sockopt.h */
int
zl_sockopt_key(const char *what, const char *z85, uint8_t key[ZR_CURVE_KEY_LEN], char *err,
               size_t cap)
{
	size_t n = strlen(z85);

	if (n != ZR_CURVE_KEY_Z85_LEN) {
		snprintf(err, cap,
		         "%s wants a key of %d Z85 characters (as zring keygen prints), not %zu "
		         "characters",
		         what, ZR_CURVE_KEY_Z85_LEN, n);
		return -EINVAL;
	}
	if (zr_curve_key_decode(key, z85) < 0) {
		snprintf(err, cap, "%s: not a key: the %d characters are not valid Z85", what,
		         ZR_CURVE_KEY_Z85_LEN);
		return -EINVAL;
	}
	return 0;
}

/* see zl_sockopt.h */
int
zl_sockopt_parse(const char *arg, struct zl_sockopt *o, char *err, size_t cap)
{
	const char *eq = strchr(arg, '=');

	memset(o, 0, sizeof *o);
	o->arg = arg;
	if (eq == NULL || eq == arg) {
		snprintf(err, cap, "-o wants NAME=VALUE, not '%s'", arg);
		return -EINVAL;
	}
	o->def = zl_optdef_find(arg, (size_t)(eq - arg));
	if (o->def == NULL) {
		snprintf(err, cap, "unknown socket option '%.*s'", (int)(eq - arg), arg);
		return -EINVAL;
	}
	o->value = eq + 1;
	if (o->def->kind == ZL_OPT_KEY)
		return zl_sockopt_key(o->def->name, o->value, o->key, err, cap);
	if (o->def->kind == ZL_OPT_TLSVER) {
		if (strcmp(o->value, "1.2") == 0) {
			o->inumber = ZR_TLS_V12;
		} else if (strcmp(o->value, "1.3") == 0) {
			o->inumber = ZR_TLS_V13;
		} else {
			snprintf(err, cap, "socket option %s wants 1.2 or 1.3, not '%s'",
			         o->def->name, o->value);
			return -EINVAL;
		}
		o->number = o->inumber;
		return 0;
	}
	if (o->def->kind != ZL_OPT_BYTES) {
		long long v;
		bool ok = o->def->kind == ZL_OPT_INT
		                  ? zl_parse_int(o->value, INT_MIN, INT_MAX, &v)
		                  : zl_parse_int(o->value, INT64_MIN, INT64_MAX, &v);

		if (!ok) {
			snprintf(err, cap, "socket option %s wants an integer, not '%s'",
			         o->def->name, o->value);
			return -EINVAL;
		}
		o->number = (int64_t)v;
		o->inumber = o->def->kind == ZL_OPT_INT ? (int)v : 0;
	}
	return 0;
}

/* see zl_sockopt.h */
void
zl_sockopt_value(const struct zl_sockopt *o, const void **value, size_t *len)
{
	switch (o->def->kind) {
	case ZL_OPT_INT:
	case ZL_OPT_TLSVER:
		*value = &o->inumber;
		*len = sizeof o->inumber;
		break;
	case ZL_OPT_INT64:
		*value = &o->number;
		*len = sizeof o->number;
		break;
	case ZL_OPT_KEY:
		*value = o->key;
		*len = sizeof o->key;
		break;
	default:
		*value = o->value;
		*len = strlen(o->value);
		break;
	}
}

/* see zl_sockopt.h */
int
zl_sockopt_security(const struct zl_sockopt *opts, size_t n, int *mech_out, bool *server_out,
                    char *err, size_t cap)
{
	int mech = ZR_MECH_NULL;
	bool server = false;
	const struct zl_sockopt *pub = NULL, *sec = NULL, *srv = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct zl_sockopt *o = &opts[i];

		switch (o->def->option) {
		case ZR_PLAIN_SERVER:
		case ZR_CURVE_SERVER:
			server = o->number != 0;
			mech = !server                             ? ZR_MECH_NULL
			       : o->def->option == ZR_PLAIN_SERVER ? ZR_MECH_PLAIN
			                                           : ZR_MECH_CURVE;
			break;
		case ZR_PLAIN_USERNAME:
			server = false;
			mech = o->value[0] != '\0' ? ZR_MECH_PLAIN : ZR_MECH_NULL;
			break;
		case ZR_CURVE_SERVERKEY:
			server = false;
			srv = o;
			mech = ZR_MECH_CURVE;
			break;
		case ZR_CURVE_PUBLICKEY:
		case ZR_CURVE_SECRETKEY:
			*(o->def->option == ZR_CURVE_PUBLICKEY ? &pub : &sec) = o;
			mech = ZR_MECH_CURVE;
			break;
		default:
			break;
		}
	}
	*mech_out = mech;
	*server_out = server;
	if (mech == ZR_MECH_CURVE && sec == NULL) {
		snprintf(err, cap,
		         "CURVE needs -o CURVE_SECRETKEY=KEY (zring keygen makes a key pair)");
		return -EINVAL;
	}
	if (mech == ZR_MECH_CURVE && !server && srv == NULL) {
		snprintf(err, cap,
		         "CURVE keys alone: add -o CURVE_SERVER=1 to be a server, or "
		         "-o CURVE_SERVERKEY=KEY to be a client");
		return -EINVAL;
	}
	if (mech == ZR_MECH_CURVE && !server && pub == NULL) {
		snprintf(err, cap,
		         "a CURVE client needs -o CURVE_PUBLICKEY=KEY as well (the public half of "
		         "CURVE_SECRETKEY)");
		return -EINVAL;
	}
	if (mech == ZR_MECH_CURVE && pub != NULL) {
		/* A public key that is not the secret key's would fail every
		 * handshake with a box that does not open: say it here. */
		char sec_z85[ZR_CURVE_KEY_Z85_LEN + 1], derived[ZR_CURVE_KEY_Z85_LEN + 1];
		uint8_t key[ZR_CURVE_KEY_LEN];
		volatile char *w = sec_z85;
		int rc;

		zr_curve_key_encode(sec_z85, sec->key);
		rc = zr_curve_public(derived, sec_z85);
		for (size_t i = 0; i < sizeof sec_z85; i++)
			w[i] = 0;
		if (rc == 0)
			rc = zr_curve_key_decode(key, derived);
		if (rc == 0 && memcmp(key, pub->key, sizeof key) != 0) {
			snprintf(err, cap,
			         "CURVE_PUBLICKEY is not the public key of CURVE_SECRETKEY");
			return -EINVAL;
		}
	}
	return 0;
}
