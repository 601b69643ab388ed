/*
 * Socket options as one table: a row per option says how its value is
 * passed (an int, an int64, bytes, a CURVE key), where it is kept in
 * struct zr__options, the range it takes, whether it can be set and read,
 * and which socket types take it. zr_setsockopt and zr_getsockopt walk the
 * table; the few options whose meaning goes beyond storing a value (the
 * security role, subscriptions, the bound endpoint) name a handler in their
 * row. Every refusal is -EINVAL, as libzmq's: an unknown option, one this
 * type does not take, a wrong length, a value out of range.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/base.h"
#include "engine.h"
#include "sock.h"

enum opt_kind {
	OPT_INT,   /* int, stored as is */
	OPT_BOOL,  /* int in, stored as bool, read back 0 or 1 */
	OPT_LEVEL, /* int in: non-zero stores the row's level, 0 stores 0; read
	              back 1 when the stored level reaches the row's */
	OPT_INT64, /* int64_t, stored as is */
	OPT_BYTES, /* octets, with their length beside them */
	OPT_KEY,   /* a CURVE key: 32 octets or Z85, with a "set" flag beside it */
	OPT_TEXT,  /* read only, NUL-terminated (the row's get handler) */
};

/* access */
#define OPT_SET 1u
#define OPT_GET 2u
#define OPT_RW (OPT_SET | OPT_GET)
/* Refused once the queues are sized (the first bind, connect, send or
 * receive). */
#define OPT_BEFORE_QUEUES 4u
#define OPT_NOT_ZERO 8u /* 0 is out of range though min <= 0 <= max */

#define OPT_TYPE(t) (1u << (t))
#define OPT_ALL_TYPES                                                                       \
	(OPT_TYPE(ZR_PAIR) | OPT_TYPE(ZR_PUB) | OPT_TYPE(ZR_SUB) | OPT_TYPE(ZR_REQ) |       \
	 OPT_TYPE(ZR_REP) | OPT_TYPE(ZR_DEALER) | OPT_TYPE(ZR_ROUTER) | OPT_TYPE(ZR_PULL) | \
	 OPT_TYPE(ZR_PUSH) | OPT_TYPE(ZR_XPUB) | OPT_TYPE(ZR_XSUB))

/* A value as zr_setsockopt got it, checked against its row. */
struct opt_val {
	const void *p;
	size_t len;
	int i;     /* OPT_INT, OPT_BOOL, OPT_LEVEL */
	int64_t w; /* OPT_INT64 */
};

struct opt_row;
typedef int opt_set_fn(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v);
typedef int opt_get_fn(struct zr_socket *s, const struct opt_row *r, void *v, size_t *len);

struct opt_row {
	int option;
	enum opt_kind kind;
	unsigned access;
	unsigned types;   /* OPT_TYPE bits of the socket types that take it */
	size_t off;       /* the value in struct zr__options */
	size_t aux_off;   /* OPT_BYTES: its size_t length; OPT_KEY: its bool "set" */
	int64_t min, max; /* OPT_INT, OPT_INT64: the range; OPT_BYTES: the length's */
	int arg;          /* OPT_LEVEL: the level; the role handlers: the mechanism */
	opt_set_fn *set;  /* instead of storing the checked value */
	opt_get_fn *get;  /* instead of reading it by its kind */
};

/* ---- handlers ------------------------------------------------------------- */

static int opt_store(struct zr__options *o, const struct opt_row *r, const struct opt_val *v);

/* RFC 37 reserves routing ids that start with 0x00 for generated ones. */
static int
opt_set_routing_id(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	if (((const uint8_t *)v->p)[0] == 0)
		return -EINVAL;
	return opt_store(&s->opt, r, v);
}

/* SUB, XSUB: a filter. XPUB with XPUB_MANUAL: a subscription applied to
 * the peer whose notice the app received last (its serial goes first). */
static int
opt_set_subscribe(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	uint64_t serial = s->ps.xpub_last;
	uint8_t *buf;
	int rc;

	if (s->type != ZR_XPUB)
		return zr__sock_subscribe(s, r->option == ZR_SUBSCRIBE, v->p, v->len);
	if (!s->opt.xpub_manual || v->len > SIZE_MAX - sizeof serial)
		return -EINVAL;
	buf = malloc(sizeof serial + v->len);
	if (buf == NULL)
		return -ENOMEM;
	memcpy(buf, &serial, sizeof serial);
	if (v->len > 0)
		memcpy(buf + sizeof serial, v->p, v->len);
	rc = zr__sock_subscribe(s, r->option == ZR_SUBSCRIBE, buf, sizeof serial + v->len);
	free(buf);
	return rc;
}

/* libzmq: either credential makes a PLAIN client; (NULL, 0) goes back to NULL. */
static int
opt_set_plain(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	int rc = opt_store(&s->opt, r, v);

	if (rc < 0)
		return rc;
	s->opt.mechanism = v->p == NULL && v->len == 0 ? ZR_MECH_NULL : ZR_MECH_PLAIN;
	s->opt.as_server = false;
	return 0;
}

/* Setting a key selects CURVE; the server's key also makes a client
 * (libzmq's rule). */
static int
opt_set_curve_key(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	int rc = opt_store(&s->opt, r, v);

	if (rc < 0)
		return rc;
	s->opt.mechanism = ZR_MECH_CURVE;
	if (r->option == ZR_CURVE_SERVERKEY)
		s->opt.as_server = false;
	return 0;
}

/* PLAIN_SERVER, CURVE_SERVER (libzmq): 1 makes a server of the row's
 * mechanism, 0 goes back to NULL. */
static int
opt_set_role(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	s->opt.as_server = v->i != 0;
	s->opt.mechanism = v->i != 0 ? r->arg : ZR_MECH_NULL;
	return 0;
}

/* An int the io thread reads too: stored, and copied where it reads it. */
static int
opt_store_mirrored(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v,
                   atomic_int *mirror)
{
	int rc = opt_store(&s->opt, r, v);

	if (rc >= 0)
		atomic_store_explicit(mirror, v->i, memory_order_relaxed);
	return rc;
}

static int
opt_set_busy_poll(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	int rc = opt_store_mirrored(s, r, v, &s->busy_poll_us);

	if (rc >= 0)
		zr__ctx_busy_poll(s->ctx, v->i);
	return rc;
}

static int
opt_set_wake_coalesce(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	return opt_store_mirrored(s, r, v, &s->wake_coalesce_us);
}

/* XPUB_NODROP is PUB_POLICY's BLOCK (1) or DROP_NEW (0). */
static int
opt_set_nodrop(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	(void)r;
	s->opt.pub_policy = v->i != 0 ? ZR_PUB_BLOCK : ZR_PUB_DROP_NEW;
	return 0;
}

static int
opt_get_nodrop(struct zr_socket *s, const struct opt_row *r, void *v, size_t *len)
{
	int i = s->opt.pub_policy == ZR_PUB_BLOCK;

	(void)r;
	if (*len < sizeof i)
		return -EINVAL;
	memcpy(v, &i, sizeof i);
	*len = sizeof i;
	return 0;
}

static int
opt_get_role(struct zr_socket *s, const struct opt_row *r, void *v, size_t *len)
{
	int i = s->opt.as_server && s->opt.mechanism == r->arg;

	if (*len < sizeof i)
		return -EINVAL;
	memcpy(v, &i, sizeof i);
	*len = sizeof i;
	return 0;
}

static int
opt_get_last_endpoint(struct zr_socket *s, const struct opt_row *r, void *v, size_t *len)
{
	size_t n = strlen(s->last_endpoint) + 1;

	(void)r;
	if (*len < n)
		return -EINVAL;
	memcpy(v, s->last_endpoint, n);
	*len = n;
	return 0;
}

/* TLS_CERT, TLS_KEY, TLS_CA, TLS_SERVER_NAME: a copy on the heap, with a NUL
 * after it (a path, or PEM text); (NULL, 0) unsets. A replaced key is wiped. */
static int
opt_set_tls_text(struct zr_socket *s, const struct opt_row *r, const struct opt_val *v)
{
	char **at = (char **)(void *)((char *)&s->opt + r->off);
	size_t *len = (size_t *)(void *)((char *)&s->opt + r->aux_off);
	char *p = NULL;

	if (v->len > 0) {
		if (memchr(v->p, '\0', v->len) != NULL && ((const char *)v->p)[v->len - 1] != '\0')
			return -EINVAL; /* a NUL inside the text */
		p = malloc(v->len + 1);
		if (p == NULL)
			return -ENOMEM;
		memcpy(p, v->p, v->len);
		p[v->len] = '\0';
	}
	if (*at != NULL) {
		sodium_memzero(*at, *len);
		free(*at);
	}
	*at = p;
	*len = p != NULL ? strlen(p) : 0;
	return 0;
}

static int
opt_get_tls_text(struct zr_socket *s, const struct opt_row *r, void *v, size_t *len)
{
	const char *at;
	size_t n;

	memcpy(&at, (const char *)&s->opt + r->off, sizeof at);
	n = at != NULL ? strlen(at) + 1 : 1;
	if (*len < n)
		return -EINVAL;
	memcpy(v, at != NULL ? at : "", n);
	*len = n;
	return 0;
}

/* ---- the table -------------------------------------------------------------- */

#define OFF(field) offsetof(struct zr__options, field)

/* One macro per kind of row, so that each row is one line. */
#define ROW_INT(opt, field, lo, hi, acc)                                                   \
	{                                                                                  \
		.option = (opt), .kind = OPT_INT, .access = (acc), .types = OPT_ALL_TYPES, \
		.off = OFF(field), .min = (lo), .max = (hi)                                \
	}
#define ROW_INT64(opt, field, lo)                                                             \
	{                                                                                     \
		.option = (opt), .kind = OPT_INT64, .access = OPT_RW, .types = OPT_ALL_TYPES, \
		.off = OFF(field), .min = (lo), .max = INT64_MAX                              \
	}
#define ROW_BOOL(opt, field)                                                                 \
	{                                                                                    \
		.option = (opt), .kind = OPT_BOOL, .access = OPT_RW, .types = OPT_ALL_TYPES, \
		.off = OFF(field)                                                            \
	}
#define ROW_LEVEL(opt, field, level)                                                          \
	{                                                                                     \
		.option = (opt), .kind = OPT_LEVEL, .access = OPT_RW, .types = OPT_ALL_TYPES, \
		.off = OFF(field), .arg = (level)                                             \
	}
/* Bytes kept in field[], their length in field_len. */
#define ROW_BYTES(opt, field, lo, acc, handler)                                                  \
	{                                                                                        \
		.option = (opt), .kind = OPT_BYTES, .access = (acc), .types = OPT_ALL_TYPES,     \
		.off = OFF(field), .aux_off = OFF(field##_len), .min = (lo), .max = ZR__SUB_MAX, \
		.set = (handler)                                                                 \
	}
/* A key kept in curve_name[], set or not in curve_name_set. */
#define ROW_KEY(opt, name)                                                                  \
	{                                                                                   \
		.option = (opt), .kind = OPT_KEY, .access = OPT_RW, .types = OPT_ALL_TYPES, \
		.off = OFF(curve_##name), .aux_off = OFF(curve_##name##_set),               \
		.set = opt_set_curve_key                                                    \
	}
/* PLAIN_SERVER, CURVE_SERVER: 0 or 1, for the mechanism mech. */
#define ROW_ROLE(opt, mech)                                                                 \
	{                                                                                   \
		.option = (opt), .kind = OPT_INT, .access = OPT_RW, .types = OPT_ALL_TYPES, \
		.min = 0, .max = 1, .arg = (mech), .set = opt_set_role, .get = opt_get_role \
	}
#define ROW_SUBSCRIBE(opt)                                                         \
	{                                                                          \
		.option = (opt), .kind = OPT_BYTES, .access = OPT_SET,             \
		.types = OPT_TYPE(ZR_SUB) | OPT_TYPE(ZR_XSUB) | OPT_TYPE(ZR_XPUB), \
		.max = INT64_MAX, .set = opt_set_subscribe                         \
	}
#define ROW_TEXT(opt, handler)                                                                \
	{                                                                                     \
		.option = (opt), .kind = OPT_TEXT, .access = OPT_GET, .types = OPT_ALL_TYPES, \
		.get = (handler)                                                              \
	}

/* A TLS text kept in field (char *), its length in field_len. */
#define ROW_TLS_TEXT(opt, field, acc)                                                        \
	{                                                                                    \
		.option = (opt), .kind = OPT_BYTES, .access = (acc), .types = OPT_ALL_TYPES, \
		.off = OFF(field), .aux_off = OFF(field##_len), .max = (int64_t)1 << 20,     \
		.set = opt_set_tls_text, .get = opt_get_tls_text                             \
	}

static const struct opt_row opt_table[] = {
	ROW_BYTES(ZR_ROUTING_ID, routing_id, 1, OPT_RW, opt_set_routing_id),
	/* Pattern-specific: the socket queues them for its io thread. */
	ROW_SUBSCRIBE(ZR_SUBSCRIBE),
	ROW_SUBSCRIBE(ZR_UNSUBSCRIBE),
	ROW_INT(ZR_SNDBUF, sndbuf, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_RCVBUF, rcvbuf, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_LINGER, linger_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_RECONNECT_IVL, reconnect_ivl_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_RECONNECT_IVL_MAX, reconnect_ivl_max_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT64(ZR_MAXMSGSIZE, maxmsgsize, INT64_MIN),
	/* The queues are sized at the first bind, connect, send or receive. */
	ROW_INT(ZR_SNDHWM, sndhwm, 0, INT_MAX, OPT_RW | OPT_BEFORE_QUEUES),
	ROW_INT(ZR_RCVHWM, rcvhwm, 0, INT_MAX, OPT_RW | OPT_BEFORE_QUEUES),
	ROW_INT(ZR_RCVTIMEO, rcvtimeo_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_SNDTIMEO, sndtimeo_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_TEXT(ZR_LAST_ENDPOINT, opt_get_last_endpoint),
	ROW_BOOL(ZR_ROUTER_MANDATORY, router_mandatory),
	/* libzmq's rule: VERBOSE sets or clears verbose subscribes (and clears
	 * verbose cancels), VERBOSER sets or clears both. */
	ROW_LEVEL(ZR_XPUB_VERBOSE, xpub_verbose, 1),
	ROW_BOOL(ZR_IPV6, ipv6),
	ROW_INT(ZR_MECHANISM, mechanism, INT_MIN, INT_MAX, OPT_GET),
	ROW_ROLE(ZR_PLAIN_SERVER, ZR_MECH_PLAIN),
	ROW_BYTES(ZR_PLAIN_USERNAME, username, 0, OPT_SET, opt_set_plain),
	ROW_BYTES(ZR_PLAIN_PASSWORD, password, 0, OPT_SET, opt_set_plain),
	ROW_ROLE(ZR_CURVE_SERVER, ZR_MECH_CURVE),
	ROW_KEY(ZR_CURVE_PUBLICKEY, public),
	ROW_KEY(ZR_CURVE_SECRETKEY, secret),
	ROW_KEY(ZR_CURVE_SERVERKEY, server),
	ROW_INT(ZR_HANDSHAKE_IVL, handshake_ivl_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_HEARTBEAT_IVL, heartbeat_ivl_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_HEARTBEAT_TTL, heartbeat_ttl_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_INT(ZR_HEARTBEAT_TIMEOUT, heartbeat_timeout_ms, INT_MIN, INT_MAX, OPT_RW),
	ROW_LEVEL(ZR_XPUB_VERBOSER, xpub_verbose, 2),
	/* libzmq takes these three on every type; the types they act on are in
	 * zring.h. The XPUB options are PUB's and XPUB's only, as libzmq's. */
	ROW_BOOL(ZR_PROBE_ROUTER, probe_router),
	ROW_BOOL(ZR_REQ_CORRELATE, req_correlate),
	ROW_BOOL(ZR_REQ_RELAXED, req_relaxed),
	/* Fixes how the queues work: before they are made. */
	{.option = ZR_CONFLATE,
         .kind = OPT_BOOL,
         .access = OPT_RW | OPT_BEFORE_QUEUES,
         .types = OPT_ALL_TYPES,
         .off = OFF(conflate)},
	{.option = ZR_XPUB_NODROP,
         .kind = OPT_INT,
         .access = OPT_RW,
         .types = OPT_TYPE(ZR_PUB) | OPT_TYPE(ZR_XPUB),
         .min = INT_MIN,
         .max = INT_MAX,
         .set = opt_set_nodrop,
         .get = opt_get_nodrop},
	/* Fixes what its notices carry: before the queues are made. */
	{.option = ZR_XPUB_MANUAL,
         .kind = OPT_BOOL,
         .access = OPT_RW | OPT_BEFORE_QUEUES,
         .types = OPT_TYPE(ZR_PUB) | OPT_TYPE(ZR_XPUB),
         .off = OFF(xpub_manual)},
	{.option = ZR_XPUB_WELCOME_MSG,
         .kind = OPT_BYTES,
         .access = OPT_RW,
         .types = OPT_TYPE(ZR_PUB) | OPT_TYPE(ZR_XPUB),
         .off = OFF(xpub_welcome_msg),
         .aux_off = OFF(xpub_welcome_msg_len),
         .max = ZR__SUB_MAX},
	ROW_BOOL(ZR_INVERT_MATCHING, invert_matching),
	ROW_BYTES(ZR_ZAP_DOMAIN, zap_domain, 0, OPT_RW, NULL),
	ROW_BOOL(ZR_ZAP_ENFORCE_DOMAIN, zap_enforce_domain),
	/* zring's own */
	ROW_INT64(ZR_SNDBYTES, sndbytes, INT64_MIN),
	ROW_INT64(ZR_RCVBYTES, rcvbytes, INT64_MIN),
	ROW_INT(ZR_PUB_POLICY, pub_policy, ZR_PUB_DROP_NEW, ZR_PUB_DISCONNECT, OPT_RW),
	/* A message has at least one frame: 0 would refuse them all. */
	ROW_INT(ZR_MAXFRAMES, maxframes, -1, INT_MAX, OPT_RW | OPT_NOT_ZERO),
	ROW_INT(ZR_SUBS_MAX, subs_max, -1, INT_MAX, OPT_RW),
	ROW_INT64(ZR_SUBS_MAXBYTES, subs_maxbytes, -1),
	/* -1: no limit, as SUBS_MAX; 0 would refuse every peer. */
	ROW_INT(ZR_CONNS_MAX, conns_max, -1, INT_MAX, OPT_RW | OPT_NOT_ZERO),
	/* The app side reads the stored value; the io thread is told. */
	{.option = ZR_BUSY_POLL,
         .kind = OPT_INT,
         .access = OPT_RW,
         .types = OPT_ALL_TYPES,
         .off = OFF(busy_poll_us),
         .min = 0,
         .max = ZR__BUSY_POLL_MAX,
         .set = opt_set_busy_poll},
	/* Likewise: the io thread reads the socket's copy (ctx.c). */
	{.option = ZR_WAKE_COALESCE,
         .kind = OPT_INT,
         .access = OPT_RW,
         .types = OPT_ALL_TYPES,
         .off = OFF(wake_coalesce_us),
         .min = 0,
         .max = ZR__WAKE_COALESCE_MAX,
         .set = opt_set_wake_coalesce},
	/* tls:// (read at the first tls:// bind or connect) */
	ROW_TLS_TEXT(ZR_TLS_CERT, tls_cert, OPT_RW),
	ROW_TLS_TEXT(ZR_TLS_KEY, tls_key, OPT_SET), /* a secret: not read back */
	ROW_TLS_TEXT(ZR_TLS_CA, tls_ca, OPT_RW),
	ROW_INT(ZR_TLS_VERIFY, tls_verify, 0, 1, OPT_RW),
	ROW_TLS_TEXT(ZR_TLS_SERVER_NAME, tls_server_name, OPT_RW),
	/* 12..13 is the set: ZR_TLS_V12, ZR_TLS_V13. */
	ROW_INT(ZR_TLS_VERSION_MIN, tls_version_min, ZR_TLS_V12, ZR_TLS_V13, OPT_RW),
};

/* ---- walking it ----------------------------------------------------------------- */

static const struct opt_row *
opt_find(const struct zr_socket *s, int option, unsigned access)
{
	for (size_t i = 0; i < ZR_ARRAY_LEN(opt_table); i++) {
		const struct opt_row *r = &opt_table[i];

		if (r->option != option)
			continue;
		if (!(r->access & access) || !(r->types & OPT_TYPE(s->type)))
			return NULL;
		return r;
	}
	return NULL;
}

/* The value's length and range, as its kind and row want them. */
static int
opt_check(const struct zr_socket *s, const struct opt_row *r, const void *p, size_t len,
          struct opt_val *v)
{
	*v = (struct opt_val){.p = p, .len = len};
	switch (r->kind) {
	case OPT_INT:
	case OPT_BOOL:
	case OPT_LEVEL:
		if (len != sizeof v->i)
			return -EINVAL;
		memcpy(&v->i, p, sizeof v->i);
		if (r->kind == OPT_INT &&
		    (v->i < r->min || v->i > r->max || (v->i == 0 && (r->access & OPT_NOT_ZERO))))
			return -EINVAL;
		break;
	case OPT_INT64:
		if (len != sizeof v->w)
			return -EINVAL;
		memcpy(&v->w, p, sizeof v->w);
		if (v->w < r->min || v->w > r->max)
			return -EINVAL;
		break;
	case OPT_BYTES:
		if ((uint64_t)len < (uint64_t)r->min || (uint64_t)len > (uint64_t)r->max ||
		    (len > 0 && p == NULL))
			return -EINVAL;
		break;
	case OPT_KEY:
		if (p == NULL)
			return -EINVAL;
		break; /* the length: opt_store, which knows the two forms */
	case OPT_TEXT:
		return -EINVAL;
	}
	if ((r->access & OPT_BEFORE_QUEUES) && s->queues_ready)
		return -EINVAL;
	return 0;
}

/* A CURVE key: 32 octets, or 40 Z85 characters (and a NUL, as libzmq
 * allows). */
static int
opt_store_key(uint8_t key[ZR_CURVE_KEY_LEN], const struct opt_val *v)
{
	char z85[ZR_CURVE_KEY_Z85_LEN + 1];

	if (v->len == ZR_CURVE_KEY_LEN) {
		memcpy(key, v->p, ZR_CURVE_KEY_LEN);
		return 0;
	}
	if (v->len != ZR_CURVE_KEY_Z85_LEN && (v->len != ZR_CURVE_KEY_Z85_LEN + 1 ||
	                                       ((const char *)v->p)[ZR_CURVE_KEY_Z85_LEN] != '\0'))
		return -EINVAL;
	memcpy(z85, v->p, ZR_CURVE_KEY_Z85_LEN);
	z85[ZR_CURVE_KEY_Z85_LEN] = '\0';
	return zr_curve_key_decode(key, z85) < 0 ? -EINVAL : 0;
}

static int
opt_store(struct zr__options *o, const struct opt_row *r, const struct opt_val *v)
{
	char *at = (char *)o + r->off;

	if (!ZR_INVARIANT(r->kind != OPT_TEXT)) /* opt_check refuses a text */
		return -EINVAL;
	switch (r->kind) {
	case OPT_INT:
		memcpy(at, &v->i, sizeof v->i);
		return 0;
	case OPT_BOOL: {
		bool b = v->i != 0;

		memcpy(at, &b, sizeof b);
		return 0;
	}
	case OPT_LEVEL: {
		int level = v->i != 0 ? r->arg : 0;

		memcpy(at, &level, sizeof level);
		return 0;
	}
	case OPT_INT64:
		memcpy(at, &v->w, sizeof v->w);
		return 0;
	case OPT_BYTES:
		if (v->len > 0)
			memcpy(at, v->p, v->len);
		memcpy((char *)o + r->aux_off, &v->len, sizeof v->len);
		return 0;
	case OPT_KEY: {
		bool set = true;

		if (opt_store_key((uint8_t *)at, v) < 0)
			return -EINVAL;
		memcpy((char *)o + r->aux_off, &set, sizeof set);
		return 0;
	}
	case OPT_TEXT:
		break;
	}
	return 0;
}

/* Reads a CURVE key back: 32 octets when *len is 32, else Z85 and a NUL. */
static int
opt_load_key(const uint8_t *key, bool set, void *v, size_t *len)
{
	char z85[ZR_CURVE_KEY_Z85_LEN + 1];

	if (!set)
		return -EINVAL;
	if (*len == ZR_CURVE_KEY_LEN) {
		memcpy(v, key, ZR_CURVE_KEY_LEN);
		return 0;
	}
	if (*len < sizeof z85)
		return -EINVAL;
	zr_curve_key_encode(z85, key);
	memcpy(v, z85, sizeof z85);
	*len = sizeof z85;
	return 0;
}

static int
opt_load(const struct zr__options *o, const struct opt_row *r, void *v, size_t *len)
{
	const char *at = (const char *)o + r->off;
	size_t n;
	int i = 0;

	if (!ZR_INVARIANT(r->kind != OPT_TEXT)) /* a text row reads through its handler */
		return -EINVAL;
	switch (r->kind) {
	case OPT_INT:
		memcpy(&i, at, sizeof i);
		break;
	case OPT_BOOL: {
		bool b;

		memcpy(&b, at, sizeof b);
		i = b;
		break;
	}
	case OPT_LEVEL:
		memcpy(&i, at, sizeof i);
		i = i >= r->arg;
		break;
	case OPT_INT64:
		if (*len < sizeof(int64_t))
			return -EINVAL;
		memcpy(v, at, sizeof(int64_t));
		*len = sizeof(int64_t);
		return 0;
	case OPT_BYTES:
		memcpy(&n, (const char *)o + r->aux_off, sizeof n);
		if (*len < n)
			return -EINVAL;
		memcpy(v, at, n);
		*len = n;
		return 0;
	case OPT_KEY: {
		bool set;

		memcpy(&set, (const char *)o + r->aux_off, sizeof set);
		return opt_load_key((const uint8_t *)at, set, v, len);
	}
	case OPT_TEXT:
		break;
	}
	if (*len < sizeof i)
		return -EINVAL;
	memcpy(v, &i, sizeof i);
	*len = sizeof i;
	return 0;
}

/* see zring.h */
int
zr_setsockopt(zr_socket *s, int option, const void *v, size_t len)
{
	const struct opt_row *r = opt_find(s, option, OPT_SET);
	struct opt_val val;
	int rc;

	if (r == NULL)
		return -EINVAL;
	rc = opt_check(s, r, v, len, &val);
	if (rc < 0)
		return rc;
	return r->set != NULL ? r->set(s, r, &val) : opt_store(&s->opt, r, &val);
}

/* see zring.h */
int
zr_getsockopt(zr_socket *s, int option, void *v, size_t *len)
{
	const struct opt_row *r = opt_find(s, option, OPT_GET);

	if (r == NULL)
		return -EINVAL;
	return r->get != NULL ? r->get(s, r, v, len) : opt_load(&s->opt, r, v, len);
}

/* see zring.h */
int
zr_socket_set_auth(zr_socket *s, zr_zmtp_auth_cb *cb, void *arg)
{
	s->auth = cb;
	s->auth_arg = arg;
	return 0;
}
