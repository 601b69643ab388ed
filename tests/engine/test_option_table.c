/*
 * Every socket option, set and read back: the defaults, what each kind of
 * value takes (the length an int, an int64 or a byte string must have),
 * the limits, the read-only and set-only ones, the ones for some socket
 * types only, and what an unknown option number gets. One call each, so a
 * change in any row of the option code shows here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ctx_fixture.h"
#include "sock_helpers.h"
#include <zring/zring.h>

CTX_SUITE(engine_option_table, 30);

static zr_socket *
open_sock(int type)
{
	zr_socket *s;

	cr_assert_eq(zr_socket_open(ctx, type, &s), 0);
	return s;
}

static int
set_i64(zr_socket *s, int opt, int64_t v)
{
	return zr_setsockopt(s, opt, &v, sizeof v);
}

/* The int options that store what they are given, whatever it is. */
static const int plain_ints[] = {
	ZR_SNDBUF,
	ZR_RCVBUF,
	ZR_LINGER,
	ZR_RECONNECT_IVL,
	ZR_RECONNECT_IVL_MAX,
	ZR_RCVTIMEO,
	ZR_SNDTIMEO,
	ZR_HANDSHAKE_IVL,
	ZR_HEARTBEAT_IVL,
	ZR_HEARTBEAT_TTL,
	ZR_HEARTBEAT_TIMEOUT,
};

static const int int64s[] = {ZR_MAXMSGSIZE, ZR_SNDBYTES, ZR_RCVBYTES, ZR_SUBS_MAXBYTES};

Test(engine_option_table, defaults)
{
	zr_socket *s = open_sock(ZR_DEALER);
	char text[64];
	uint8_t id[8];
	size_t len;

	cr_assert_eq(sget_int(s, ZR_SNDHWM), 1000);
	cr_assert_eq(sget_int(s, ZR_RCVHWM), 1000);
	cr_assert_eq(sget_int(s, ZR_SNDBUF), 0);
	cr_assert_eq(sget_int(s, ZR_RCVBUF), 0);
	cr_assert_eq(sget_int(s, ZR_LINGER), -1);
	cr_assert_eq(sget_int(s, ZR_RECONNECT_IVL), 100);
	cr_assert_eq(sget_int(s, ZR_RECONNECT_IVL_MAX), 0);
	cr_assert_eq(sget_int(s, ZR_RCVTIMEO), -1);
	cr_assert_eq(sget_int(s, ZR_SNDTIMEO), -1);
	cr_assert_eq(sget_int(s, ZR_ROUTER_MANDATORY), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSE), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSER), 0);
	cr_assert_eq(sget_int(s, ZR_IPV6), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(sget_int(s, ZR_PLAIN_SERVER), 0);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 0);
	cr_assert_eq(sget_int(s, ZR_HANDSHAKE_IVL), 30000);
	cr_assert_eq(sget_int(s, ZR_HEARTBEAT_IVL), 0);
	cr_assert_eq(sget_int(s, ZR_HEARTBEAT_TTL), 0);
	cr_assert_eq(sget_int(s, ZR_HEARTBEAT_TIMEOUT), 0);
	cr_assert_eq(sget_int(s, ZR_PUB_POLICY), ZR_PUB_DROP_NEW);
	cr_assert_eq(sget_int(s, ZR_MAXFRAMES), 65536);
	cr_assert_eq(sget_int(s, ZR_SUBS_MAX), 100000);
	cr_assert_eq(sget_int(s, ZR_CONNS_MAX), ZR_CONNS_MAX_DEFAULT);
	cr_assert_eq(sget_int(s, ZR_BUSY_POLL), 0);
	cr_assert_eq(sget_int(s, ZR_WAKE_COALESCE), 20);
	cr_assert_eq(sget_i64(s, ZR_MAXMSGSIZE), (int64_t)64 << 20);
	cr_assert_eq(sget_i64(s, ZR_SNDBYTES), (int64_t)8 << 20);
	cr_assert_eq(sget_i64(s, ZR_RCVBYTES), (int64_t)8 << 20);
	cr_assert_eq(sget_i64(s, ZR_SUBS_MAXBYTES), (int64_t)16 << 20);
	len = sizeof id;
	cr_assert_eq(zr_getsockopt(s, ZR_ROUTING_ID, id, &len), 0);
	cr_assert_eq(len, 0u);
	len = sizeof text;
	memset(text, 'x', sizeof text);
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, text, &len), 0);
	cr_assert_eq(len, 1u);
	cr_assert_eq(text[0], '\0');
	for (int opt = ZR_CURVE_PUBLICKEY; opt <= ZR_CURVE_SERVERKEY; opt++) {
		len = sizeof text;
		cr_assert_eq(zr_getsockopt(s, opt, text, &len), -EINVAL, "unset key %d", opt);
	}
	zr_socket_close(s);
}

Test(engine_option_table, an_int_option_stores_any_value_and_needs_the_length_of_an_int)
{
	zr_socket *s = open_sock(ZR_PUSH);

	for (size_t i = 0; i < sizeof plain_ints / sizeof plain_ints[0]; i++) {
		int opt = plain_ints[i], v = 0;
		int64_t wide = 7;
		size_t len;

		cr_assert_eq(sset_int(s, opt, 12345 + (int)i), 0, "option %d", opt);
		cr_assert_eq(sget_int(s, opt), 12345 + (int)i, "option %d", opt);
		cr_assert_eq(sset_int(s, opt, -7), 0, "option %d", opt);
		cr_assert_eq(sget_int(s, opt), -7, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, &wide, sizeof wide), -EINVAL, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, &v, 2), -EINVAL, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, &v, 0), -EINVAL, "option %d", opt);
		cr_assert_eq(sget_int(s, opt), -7, "option %d: a refused set changed it", opt);
		/* Read back: at least an int's room, and the length says an int. */
		len = sizeof v - 1;
		cr_assert_eq(zr_getsockopt(s, opt, &v, &len), -EINVAL, "option %d", opt);
		len = sizeof wide;
		wide = 0;
		cr_assert_eq(zr_getsockopt(s, opt, &wide, &len), 0, "option %d", opt);
		cr_assert_eq(len, sizeof(int), "option %d", opt);
	}
	zr_socket_close(s);
}

Test(engine_option_table, an_int64_option_needs_eight_octets_each_way)
{
	zr_socket *s = open_sock(ZR_PUB);

	for (size_t i = 0; i < sizeof int64s / sizeof int64s[0]; i++) {
		int opt = int64s[i], narrow = 5;
		int64_t v = ((int64_t)3 << 40) + (int64_t)i, back[2];
		size_t len;

		cr_assert_eq(set_i64(s, opt, v), 0, "option %d", opt);
		cr_assert_eq(sget_i64(s, opt), v, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, &narrow, sizeof narrow), -EINVAL, "option %d",
		             opt);
		cr_assert_eq(sget_i64(s, opt), v, "option %d: a refused set changed it", opt);
		len = sizeof(int64_t) - 1;
		cr_assert_eq(zr_getsockopt(s, opt, back, &len), -EINVAL, "option %d", opt);
		len = sizeof back;
		cr_assert_eq(zr_getsockopt(s, opt, back, &len), 0, "option %d", opt);
		cr_assert_eq(len, sizeof(int64_t), "option %d", opt);
		cr_assert_eq(set_i64(s, opt, -1), 0, "option %d", opt);
		cr_assert_eq(sget_i64(s, opt), -1, "option %d", opt);
	}
	/* Only SUBS_MAXBYTES has a floor; the byte budgets and MAXMSGSIZE take
	 * any figure (0 or less: no budget). */
	cr_assert_eq(set_i64(s, ZR_SUBS_MAXBYTES, -2), -EINVAL);
	cr_assert_eq(sget_i64(s, ZR_SUBS_MAXBYTES), -1);
	cr_assert_eq(set_i64(s, ZR_SUBS_MAXBYTES, 0), 0);
	cr_assert_eq(set_i64(s, ZR_SNDBYTES, -2), 0);
	cr_assert_eq(sget_i64(s, ZR_SNDBYTES), -2);
	cr_assert_eq(set_i64(s, ZR_MAXMSGSIZE, INT64_MIN), 0);
	cr_assert_eq(sget_i64(s, ZR_MAXMSGSIZE), INT64_MIN);
	zr_socket_close(s);
}

Test(engine_option_table, flags_read_back_as_zero_or_one)
{
	zr_socket *s = open_sock(ZR_ROUTER);

	cr_assert_eq(sset_int(s, ZR_ROUTER_MANDATORY, 7), 0);
	cr_assert_eq(sget_int(s, ZR_ROUTER_MANDATORY), 1);
	cr_assert_eq(sset_int(s, ZR_ROUTER_MANDATORY, 0), 0);
	cr_assert_eq(sget_int(s, ZR_ROUTER_MANDATORY), 0);
	cr_assert_eq(sset_int(s, ZR_IPV6, -3), 0);
	cr_assert_eq(sget_int(s, ZR_IPV6), 1);
	cr_assert_eq(sset_int(s, ZR_IPV6, 0), 0);
	cr_assert_eq(sget_int(s, ZR_IPV6), 0);

	/* VERBOSE sets or clears verbose subscribes and clears verbose
	 * cancels; VERBOSER sets or clears both (libzmq). Any socket type
	 * keeps them. */
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSE, 5), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSE), 1);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSER), 0);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSER, 9), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSE), 1);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSER), 1);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSE, 1), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSER), 0);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSER, 1), 0);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSE, 0), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSE), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSER), 0);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSER, 1), 0);
	cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSER, 0), 0);
	cr_assert_eq(sget_int(s, ZR_XPUB_VERBOSE), 0);
	zr_socket_close(s);
}

Test(engine_option_table, limits_refuse_and_keep_the_old_value)
{
	zr_socket *s = open_sock(ZR_XPUB);

	cr_assert_eq(sset_int(s, ZR_SNDHWM, -1), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_RCVHWM, -1), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_SNDHWM, 0), 0);
	cr_assert_eq(sget_int(s, ZR_SNDHWM), 0);
	cr_assert_eq(sset_int(s, ZR_RCVHWM, 77), 0);
	cr_assert_eq(sget_int(s, ZR_RCVHWM), 77);

	cr_assert_eq(sset_int(s, ZR_PUB_POLICY, -1), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_PUB_POLICY, 4), -EINVAL);
	for (int p = ZR_PUB_DROP_NEW; p <= ZR_PUB_DISCONNECT; p++) {
		cr_assert_eq(sset_int(s, ZR_PUB_POLICY, p), 0);
		cr_assert_eq(sget_int(s, ZR_PUB_POLICY), p);
	}

	cr_assert_eq(sset_int(s, ZR_CONNS_MAX, 0), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_CONNS_MAX, -2), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_CONNS_MAX, -1), 0);
	cr_assert_eq(sget_int(s, ZR_CONNS_MAX), -1);

	cr_assert_eq(sset_int(s, ZR_SUBS_MAX, -2), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_SUBS_MAX, 0), 0);
	cr_assert_eq(sget_int(s, ZR_SUBS_MAX), 0);
	cr_assert_eq(sset_int(s, ZR_SUBS_MAX, -1), 0);
	cr_assert_eq(sget_int(s, ZR_SUBS_MAX), -1);

	cr_assert_eq(sset_int(s, ZR_MAXFRAMES, 0), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_MAXFRAMES, -2), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_MAXFRAMES), 65536);
	zr_socket_close(s);
}

Test(engine_option_table, the_hwms_are_fixed_once_the_queues_exist)
{
	zr_socket *s = open_sock(ZR_PUSH);

	cr_assert_eq(sset_int(s, ZR_SNDHWM, 10), 0);
	cr_assert_eq(zr_connect(s, "tcp://127.0.0.1:1"), 0);
	cr_assert_eq(sset_int(s, ZR_SNDHWM, 20), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_RCVHWM, 20), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_SNDHWM), 10);
	cr_assert_eq(sget_int(s, ZR_RCVHWM), 1000);
	/* Other options stay settable. */
	cr_assert_eq(sset_int(s, ZR_LINGER, 0), 0);
	zr_socket_close(s);
}

Test(engine_option_table, security_flags_pick_the_mechanism)
{
	zr_socket *s = open_sock(ZR_REP);

	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 2), -EINVAL);
	cr_assert_eq(sset_int(s, ZR_CURVE_SERVER, -1), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 1), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
	cr_assert_eq(sget_int(s, ZR_PLAIN_SERVER), 1);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 0);
	cr_assert_eq(sset_int(s, ZR_CURVE_SERVER, 1), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_CURVE);
	cr_assert_eq(sget_int(s, ZR_PLAIN_SERVER), 0);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 1);
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 0), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_SERVER, "\1", 1), -EINVAL);

	/* Credentials: either makes a PLAIN client; (NULL, 0) goes back to
	 * NULL; too long is refused without a change. */
	uint8_t big[256];

	memset(big, 'a', sizeof big);
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 1), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_USERNAME, "admin", 5), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
	cr_assert_eq(sget_int(s, ZR_PLAIN_SERVER), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_PASSWORD, NULL, 0), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_PASSWORD, "", 0), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 0), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_PASSWORD, big, 256), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_USERNAME, NULL, 3), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_PASSWORD, big, 255), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
	zr_socket_close(s);
}

Test(engine_option_table, curve_keys_set_the_mechanism_and_the_server_key_the_role)
{
	zr_socket *s = open_sock(ZR_DEALER);
	char pub[41], sec[41];
	uint8_t raw[32];

	cr_assert_eq(zr_curve_keypair(pub, sec), 0);
	cr_assert_eq(zr_curve_key_decode(raw, pub), 0);
	cr_assert_eq(sset_int(s, ZR_CURVE_SERVER, 1), 0);
	cr_assert_eq(sset_int(s, ZR_CURVE_SERVER, 0), 0);
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 1), 0);
	/* Our own keys select CURVE and keep the role... */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SECRETKEY, sec, 40), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_CURVE);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 1);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_PUBLICKEY, raw, 32), 0);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 1);
	/* ...the server's key makes a client. */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, pub, 41), 0);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_CURVE);
	cr_assert_eq(sget_int(s, ZR_CURVE_SERVER), 0);
	/* A refused key changes neither. */
	cr_assert_eq(sset_int(s, ZR_PLAIN_SERVER, 0), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_PUBLICKEY, raw, 31), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	zr_socket_close(s);
}

Test(engine_option_table, the_routing_id_is_1_to_255_octets_not_starting_with_zero)
{
	zr_socket *s = open_sock(ZR_DEALER);
	uint8_t id[256], back[300];
	size_t len;

	for (size_t i = 0; i < sizeof id; i++)
		id[i] = (uint8_t)(i + 1);
	cr_assert_eq(zr_setsockopt(s, ZR_ROUTING_ID, id, 0), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_ROUTING_ID, "\0ab", 3), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_ROUTING_ID, id, 256), -EINVAL);
	len = sizeof back;
	cr_assert_eq(zr_getsockopt(s, ZR_ROUTING_ID, back, &len), 0);
	cr_assert_eq(len, 0u, "a refused id was kept");
	cr_assert_eq(zr_setsockopt(s, ZR_ROUTING_ID, id, 255), 0);
	len = sizeof back;
	cr_assert_eq(zr_getsockopt(s, ZR_ROUTING_ID, back, &len), 0);
	cr_assert_eq(len, 255u);
	cr_assert_arr_eq(back, id, 255);
	len = 254;
	cr_assert_eq(zr_getsockopt(s, ZR_ROUTING_ID, back, &len), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_ROUTING_ID, "me", 2), 0);
	len = 2;
	cr_assert_eq(zr_getsockopt(s, ZR_ROUTING_ID, back, &len), 0);
	cr_assert_eq(len, 2u);
	cr_assert_arr_eq(back, "me", 2);
	zr_socket_close(s);
}

Test(engine_option_table, read_only_and_set_only_options)
{
	zr_socket *s = open_sock(ZR_PULL);
	char text[128];
	size_t len;
	int v = 1;

	/* Read only. */
	cr_assert_eq(sset_int(s, ZR_MECHANISM, ZR_MECH_PLAIN), -EINVAL);
	cr_assert_eq(sget_int(s, ZR_MECHANISM), ZR_MECH_NULL);
	cr_assert_eq(zr_setsockopt(s, ZR_LAST_ENDPOINT, "tcp://x:1", 10), -EINVAL);
	cr_assert_eq(zr_bind(s, "tcp://127.0.0.1:*"), 0);
	len = sizeof text;
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, text, &len), 0);
	cr_assert_eq(len, strlen(text) + 1);
	cr_assert_eq(strncmp(text, "tcp://127.0.0.1:", 16), 0, "%s", text);
	len = strlen(text); /* no room for the NUL */
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, text, &len), -EINVAL);

	/* Set only. */
	static const int set_only[] = {ZR_SUBSCRIBE, ZR_UNSUBSCRIBE, ZR_PLAIN_USERNAME,
	                               ZR_PLAIN_PASSWORD};

	for (size_t i = 0; i < sizeof set_only / sizeof set_only[0]; i++) {
		len = sizeof text;
		cr_assert_eq(zr_getsockopt(s, set_only[i], text, &len), -EINVAL, "option %d",
		             set_only[i]);
	}
	len = sizeof v;
	cr_assert_eq(zr_getsockopt(s, ZR_PLAIN_USERNAME, &v, &len), -EINVAL);
	zr_socket_close(s);
}

Test(engine_option_table, subscriptions_are_for_sub_and_xsub_only)
{
	static const int types[] = {ZR_PAIR,   ZR_PUB,  ZR_SUB,  ZR_REQ,  ZR_REP, ZR_DEALER,
	                            ZR_ROUTER, ZR_PULL, ZR_PUSH, ZR_XPUB, ZR_XSUB};

	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		zr_socket *s = open_sock(types[i]);
		int want = types[i] == ZR_SUB || types[i] == ZR_XSUB ? 0 : -EINVAL;

		cr_assert_eq(zr_setsockopt(s, ZR_SUBSCRIBE, "a", 1), want, "type %d", types[i]);
		cr_assert_eq(zr_setsockopt(s, ZR_SUBSCRIBE, NULL, 0), want, "type %d", types[i]);
		cr_assert_eq(zr_setsockopt(s, ZR_UNSUBSCRIBE, "a", 1), want, "type %d", types[i]);
		cr_assert_eq(zr_setsockopt(s, ZR_UNSUBSCRIBE, "", 0), want, "type %d", types[i]);
		/* Every other option is taken by every type. */
		cr_assert_eq(sset_int(s, ZR_XPUB_VERBOSE, 1), 0, "type %d", types[i]);
		cr_assert_eq(sset_int(s, ZR_ROUTER_MANDATORY, 1), 0, "type %d", types[i]);
		cr_assert_eq(sset_int(s, ZR_PUB_POLICY, ZR_PUB_BLOCK), 0, "type %d", types[i]);
		cr_assert_eq(sset_int(s, ZR_SUBS_MAX, 3), 0, "type %d", types[i]);
		sopt_int(s, ZR_LINGER, 0);
		zr_socket_close(s);
	}
}

Test(engine_option_table, unknown_options_are_refused_both_ways)
{
	static const int unknown[] = {-1, 0,   1,   2,    3,    4,    8,        10, 13,
	                              20, 31,  34,  39,   41,   56,   65,       67, 73,
	                              79, 100, 999, 1000, 1016, 2000, INT32_MAX};
	zr_socket *s = open_sock(ZR_SUB);

	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		int opt = unknown[i], v = 1;
		int64_t w = 1;
		uint8_t buf[64];
		size_t len = sizeof buf;

		cr_assert_eq(zr_setsockopt(s, opt, &v, sizeof v), -EINVAL, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, &w, sizeof w), -EINVAL, "option %d", opt);
		cr_assert_eq(zr_setsockopt(s, opt, "abc", 3), -EINVAL, "option %d", opt);
		cr_assert_eq(zr_getsockopt(s, opt, buf, &len), -EINVAL, "option %d", opt);
		cr_assert_eq(len, sizeof buf, "option %d: the length changed", opt);
	}
	zr_socket_close(s);
}
