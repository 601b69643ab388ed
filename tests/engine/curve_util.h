/*
 * CURVE test helpers shared by tests/engine/test_curve_engine.c and
 * tests/interop/test_curve_sockets.c (static, on top of engine_util.h):
 * key pairs as Z85, the security options of a zring side, monitor waits,
 * and the peers in tests/interop/peers/ (secure_peer.py, a libzmq socket
 * with CURVE or PLAIN; hostile_peer.py, peers without zmq).
 */
#ifndef ZR_TESTS_ENGINE_CURVE_UTIL_H
#define ZR_TESTS_ENGINE_CURVE_UTIL_H

#include "engine_util.h"

#define CU_SECURE_PEER ZR_SOURCE_DIR "/tests/interop/peers/secure_peer.py"
#define CU_HOSTILE_PEER ZR_SOURCE_DIR "/tests/interop/peers/hostile_peer.py"

struct keys {
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];
	char sec[ZR_CURVE_KEY_Z85_LEN + 1];
};

/* Fresh per test (the suites' .init): a server, a client, another client. */
static struct keys srv, cli, other;

static inline void
cu_setup(void)
{
	cr_assert_eq(zr_curve_keypair(srv.pub, srv.sec), 0);
	cr_assert_eq(zr_curve_keypair(cli.pub, cli.sec), 0);
	cr_assert_eq(zr_curve_keypair(other.pub, other.sec), 0);
}

/* ---- zring sides ---------------------------------------------------------------- */

static inline void
z_key(zr_socket *s, int opt, const char *z85)
{
	cr_assert_eq(zr_setsockopt(s, opt, z85, ZR_CURVE_KEY_Z85_LEN), 0, "key option %d", opt);
}

static inline void
z_curve_server(zr_socket *s, const struct keys *k)
{
	et_zopt_int(s, ZR_CURVE_SERVER, 1);
	z_key(s, ZR_CURVE_SECRETKEY, k->sec);
}

static inline void
z_curve_client(zr_socket *s, const struct keys *me, const char *server_pub)
{
	z_key(s, ZR_CURVE_PUBLICKEY, me->pub);
	z_key(s, ZR_CURVE_SECRETKEY, me->sec);
	z_key(s, ZR_CURVE_SERVERKEY, server_pub);
}

/* Waits for a monitor event of the type (others are skipped). */
static inline bool
mon_wait(zr_socket *s, int type, struct zr_event *ev, int timeout_ms)
{
	uint64_t deadline = zt_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		uint64_t now = zt_now_ms();

		if (now >= deadline)
			return false;
		if (zr_monitor_recv(s, ev, (int)(deadline - now)) != 0)
			return false;
		if (ev->type == type)
			return true;
	}
}

/* Events of the type waiting now (reads them all). */
static inline int
mon_count(zr_socket *s, int type)
{
	struct zr_event ev;
	int n = 0;

	while (zr_monitor_recv(s, &ev, 0) == 0)
		n += ev.type == type;
	return n;
}

/* Receives one message and checks its tokens (see engine_util.h); returns
 * it (free it). */
static inline zr_msg *
z_expect_msg(zr_socket *s, const char *want)
{
	zr_msg *m = NULL;
	int rc = zr_recv(s, &m, 0);

	cr_assert_eq(rc, 0, "zr_recv: %s (want [%.80s])", zr_strerror(rc), want);
	char *got = et_msg_text(m), *w = et_canon(want);

	cr_assert_str_eq(got, w, "received [%.200s], want [%.200s]", got, w);
	free(got);
	free(w);
	return m;
}

/* ---- peers ---------------------------------------------------------------------- */

/* Options for secure_peer.py: NAME=VALUE strings, NULL-terminated in v. */
struct opts {
	const char *v[24];
	size_t n;
	char buf[23][128];
};

static inline void __attribute__((format(printf, 2, 3)))
opts_add(struct opts *o, const char *fmt, ...)
{
	va_list ap;

	cr_assert_lt(o->n, 23u);
	va_start(ap, fmt);
	vsnprintf(o->buf[o->n], sizeof o->buf[o->n], fmt, ap);
	va_end(ap);
	o->v[o->n] = o->buf[o->n];
	o->n++;
	o->v[o->n] = NULL;
}

/* A libzmq CURVE client's options: its keys and the server's public key. */
static inline void
opts_curve_client(struct opts *o, const struct keys *me, const char *server_pub)
{
	opts_add(o, "curve_serverkey=%s", server_pub);
	opts_add(o, "curve_public=%s", me->pub);
	opts_add(o, "curve_secret=%s", me->sec);
}

/* A libzmq CURVE server's options. */
static inline void
opts_curve_server(struct opts *o, const struct keys *k)
{
	opts_add(o, "curve_server=1");
	opts_add(o, "curve_secret=%s", k->sec);
}

/* secure_peer.py TYPE bind|connect EP [opts]; its endpoint in ep_out. */
static inline struct et_peer *
secure_peer(const char *type, const char *how, const char *ep, const struct opts *o,
            char ep_out[256])
{
	const char *args[32] = {CU_SECURE_PEER, type, how, ep};
	size_t n = 4;

	for (size_t i = 0; o != NULL && i < o->n && n < 31; i++)
		args[n++] = o->v[i];
	args[n] = NULL;
	struct et_peer *p = et_peer_spawn(args);

	cr_assert(et_peer_readline(p, 15000), "no first line from the pyzmq peer (%s %s %s)", type,
	          how, ep);
	cr_assert(strncmp(p->line, "ENDPOINT ", 9) == 0, "peer said \"%s\"", p->line);
	if (ep_out != NULL)
		snprintf(ep_out, 256, "%s", p->line + 9);
	return p;
}

/* hostile_peer.py with args (NULL-terminated). */
static inline struct et_peer *
hostile_spawn(const char *const *args)
{
	const char *all[16] = {CU_HOSTILE_PEER};
	size_t n = 1;

	for (size_t i = 0; args[i] != NULL && n < 15; i++)
		all[n++] = args[i];
	all[n] = NULL;
	return et_peer_spawn(all);
}

/* The same, for the modes that listen: reads their "PORT <port>" line. */
static inline struct et_peer *
hostile_listen(const char *const *args, unsigned *port)
{
	struct et_peer *p = hostile_spawn(args);

	cr_assert(et_peer_readline(p, 15000), "no first line from hostile_peer.py %s", args[0]);
	cr_assert_eq(sscanf(p->line, "PORT %u", port), 1, "hostile_peer.py %s said \"%s\"", args[0],
	             p->line);
	return p;
}

#endif /* ZR_TESTS_ENGINE_CURVE_UTIL_H */
