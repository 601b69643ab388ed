/*
 * Engine: CURVE sockets between two zring contexts, and the key options.
 *
 * - zr_setsockopt / zr_getsockopt of the CURVE keys (32 octets, 40 Z85
 *   characters, 41 with a NUL), ZR_MECHANISM after each security option
 *   (libzmq's "the last one wins", the sequence checked against libzmq
 *   4.3.4), and zr_bind / zr_connect refusing a side without its keys.
 * - zring <-> zring: traffic (every standard payload, big multipart messages
 *   through a slow receiver, subscriptions, ipc), the authenticator (user
 *   ids, status codes, refusals as both sides see them, many clients at
 *   once), a wrong server key, a NULL peer, MAXMSGSIZE, heartbeats.
 * - An attacker in the middle: the client's connection goes through
 *   tests/interop/peers/hostile_peer.py relay, which flips one octet of,
 *   replays, or reorders one MESSAGE, alters or swallows INITIATE, replays a
 *   whole recorded stream on a new connection, or just watches for
 *   plaintext. The server must close that connection, deliver nothing
 *   altered, and go on serving others. hostile_peer.py mute is a server
 *   that greets and then never answers (handshake timeouts).
 *
 * Every wait is bounded; nothing asserts how long anything took.
 */
#include "curve_util.h"

#include <pthread.h>
#include <stdatomic.h>

static void
teardown(void)
{
	et_teardown();
}

TestSuite(engine_curve, .init = cu_setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------------ */

static int
z_int(zr_socket *s, int opt)
{
	int v = -1;
	size_t len = sizeof v;

	cr_assert_eq(zr_getsockopt(s, opt, &v, &len), 0, "getsockopt %d", opt);
	cr_assert_eq(len, sizeof v);
	return v;
}

/* A CURVE server PULL bound on tcp (context 0); its endpoint in ep. */
static zr_socket *
curve_pull(char ep[256])
{
	zr_socket *s = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_ALL), 0);
	z_curve_server(s, &srv);
	snprintf(ep, 256, "%s", et_zbind(s, false));
	return s;
}

/* A CURVE client PUSH (context 1) of the given keys, connected to ep. */
static zr_socket *
curve_push(const char *ep, const struct keys *me, const char *server_pub)
{
	zr_socket *s = et_zopen(1, ZR_PUSH);

	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_ALL), 0);
	z_curve_client(s, me, server_pub);
	cr_assert_eq(zr_connect(s, ep), 0, "connect %s", ep);
	return s;
}

/* ---- D. options --------------------------------------------------------------- */

Test(engine_curve, key_options_take_32_octets_40_z85_or_41_with_nul)
{
	zr_socket *s = et_zopen(0, ZR_PULL);
	uint8_t raw[ZR_CURVE_KEY_LEN], back[64];
	char z41[ZR_CURVE_KEY_Z85_LEN + 1];
	size_t len;

	cr_assert_eq(zr_curve_key_decode(raw, cli.pub), 0);

	/* 32 octets in, both forms out. */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_PUBLICKEY, raw, sizeof raw), 0);
	len = 32;
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_PUBLICKEY, back, &len), 0);
	cr_assert_eq(len, 32u);
	cr_assert_arr_eq(back, raw, 32);
	memset(back, 0x5c, sizeof back);
	len = 41;
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_PUBLICKEY, back, &len), 0);
	cr_assert_eq(len, 41u);
	cr_assert_eq(back[40], '\0');
	cr_assert_str_eq((char *)back, cli.pub);
	len = sizeof back; /* more room: still the Z85 text and its NUL */
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_PUBLICKEY, back, &len), 0);
	cr_assert_eq(len, 41u);
	cr_assert_str_eq((char *)back, cli.pub);
	len = 40; /* no room for the NUL */
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_PUBLICKEY, back, &len), -EINVAL);

	/* 40 Z85 characters, and 41 with a NUL. */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SECRETKEY, cli.sec, 40), 0);
	len = 32;
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_SECRETKEY, back, &len), 0);
	cr_assert_eq(zr_curve_key_decode(raw, cli.sec), 0);
	cr_assert_arr_eq(back, raw, 32);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, srv.pub, 41), 0);
	len = 41;
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_SERVERKEY, z41, &len), 0);
	cr_assert_str_eq(z41, srv.pub);

	/* Refused, and the key stays as it was. */
	char bad[64];

	memcpy(bad, srv.pub, 41);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, srv.pub, 39), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, srv.pub, 33), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, srv.pub, 31), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, srv.pub, 0), -EINVAL);
	bad[40] = 'x'; /* 41 without a NUL */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, bad, 41), -EINVAL);
	memcpy(bad, other.pub, 41);
	bad[17] = '~'; /* not a Z85 character */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, bad, 40), -EINVAL);
	bad[17] = ' ';
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, bad, 41), -EINVAL);
	memset(bad, '#', 40); /* Z85 characters, but "#####" is over 2^32 */
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, bad, 40), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVERKEY, NULL, 32), -EINVAL);
	len = 41;
	cr_assert_eq(zr_getsockopt(s, ZR_CURVE_SERVERKEY, z41, &len), 0);
	cr_assert_str_eq(z41, srv.pub, "a refused value changed the key");
}

/* The sequence and the values libzmq 4.3.4 gives for the same calls. */
Test(engine_curve, mechanism_follows_the_last_security_option_as_libzmq)
{
	zr_socket *s = et_zopen(0, ZR_PULL);
	struct {
		int opt;
		const char *val; /* key (Z85) or username; NULL: the int ival */
		int ival;
		int mech, curve_server, plain_server;
	} steps[] = {
		{0, NULL, 0, ZR_MECH_NULL, 0, 0},
		{ZR_CURVE_PUBLICKEY, cli.pub, 0, ZR_MECH_CURVE, 0, 0},
		{ZR_CURVE_SERVER, NULL, 1, ZR_MECH_CURVE, 1, 0},
		{ZR_PLAIN_USERNAME, "u", 0, ZR_MECH_PLAIN, 0, 0},
		{ZR_CURVE_SECRETKEY, cli.sec, 0, ZR_MECH_CURVE, 0, 0},
		{ZR_PLAIN_SERVER, NULL, 1, ZR_MECH_PLAIN, 0, 1},
		{ZR_CURVE_SECRETKEY, cli.sec, 0, ZR_MECH_CURVE, 1, 0}, /* keeps as_server */
		{ZR_CURVE_SERVERKEY, srv.pub, 0, ZR_MECH_CURVE, 0, 0}, /* makes a client */
		{ZR_CURVE_SERVER, NULL, 1, ZR_MECH_CURVE, 1, 0},
		{ZR_CURVE_SERVER, NULL, 0, ZR_MECH_NULL, 0, 0},
		{ZR_PLAIN_SERVER, NULL, 1, ZR_MECH_PLAIN, 0, 1},
		{ZR_PLAIN_SERVER, NULL, 0, ZR_MECH_NULL, 0, 0},
		{ZR_CURVE_SERVER, NULL, 1, ZR_MECH_CURVE, 1, 0},
		{ZR_PLAIN_PASSWORD, "pw", 0, ZR_MECH_PLAIN, 0, 0}, /* a password makes a client */
	};

	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		if (steps[i].opt == ZR_PLAIN_USERNAME || steps[i].opt == ZR_PLAIN_PASSWORD)
			cr_assert_eq(
				zr_setsockopt(s, steps[i].opt, steps[i].val, strlen(steps[i].val)),
				0);
		else if (steps[i].val != NULL)
			z_key(s, steps[i].opt, steps[i].val);
		else if (steps[i].opt != 0)
			et_zopt_int(s, steps[i].opt, steps[i].ival);
		cr_assert_eq(z_int(s, ZR_MECHANISM), steps[i].mech,
		             "step %zu: MECHANISM %d, want %d", i, z_int(s, ZR_MECHANISM),
		             steps[i].mech);
		cr_assert_eq(z_int(s, ZR_CURVE_SERVER), steps[i].curve_server,
		             "step %zu: CURVE_SERVER", i);
		cr_assert_eq(z_int(s, ZR_PLAIN_SERVER), steps[i].plain_server,
		             "step %zu: PLAIN_SERVER", i);
	}
	/* Read only. */
	int v = ZR_MECH_CURVE;

	cr_assert_eq(zr_setsockopt(s, ZR_MECHANISM, &v, sizeof v), -EINVAL);
	cr_assert_eq(z_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
	/* libzmq takes only 0 and 1 for the *_SERVER options. */
	v = 2;
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVER, &v, sizeof v), -EINVAL);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_SERVER, &v, sizeof v), -EINVAL);
	v = -1;
	cr_assert_eq(zr_setsockopt(s, ZR_CURVE_SERVER, &v, sizeof v), -EINVAL);
	cr_assert_eq(z_int(s, ZR_MECHANISM), ZR_MECH_PLAIN);
}

Test(engine_curve, bind_and_connect_refuse_a_curve_side_without_its_keys)
{
	zr_socket *s = et_zopen(0, ZR_PUSH);
	const char *ep = "tcp://127.0.0.1:9"; /* never dialled: refused before */

	/* A client with only the server's key. */
	z_key(s, ZR_CURVE_SERVERKEY, srv.pub);
	cr_assert_eq(zr_connect(s, ep), -EINVAL);
	cr_assert_eq(zr_bind(s, "tcp://127.0.0.1:0"), -EINVAL);
	/* ... and its public key: the secret key is missing. */
	z_key(s, ZR_CURVE_PUBLICKEY, cli.pub);
	cr_assert_eq(zr_connect(s, ep), -EINVAL);
	/* A key pair without the server's key. */
	zr_socket *t = et_zopen(0, ZR_PUSH);

	z_key(t, ZR_CURVE_PUBLICKEY, cli.pub);
	z_key(t, ZR_CURVE_SECRETKEY, cli.sec);
	cr_assert_eq(zr_connect(t, ep), -EINVAL);
	/* A server without its secret key. */
	zr_socket *u = et_zopen(0, ZR_PULL);

	et_zopt_int(u, ZR_CURVE_SERVER, 1);
	cr_assert_eq(zr_bind(u, "tcp://127.0.0.1:0"), -EINVAL);
	z_key(u, ZR_CURVE_PUBLICKEY, srv.pub);
	cr_assert_eq(zr_bind(u, "tcp://127.0.0.1:0"), -EINVAL);
	z_key(u, ZR_CURVE_SECRETKEY, srv.sec);
	cr_assert_eq(zr_bind(u, "tcp://127.0.0.1:0"), 0);
	/* Complete: accepted. */
	z_key(s, ZR_CURVE_SECRETKEY, cli.sec);
	cr_assert_eq(zr_connect(s, ep), 0);
}

/* ---- zring <-> zring ----------------------------------------------------------- */

struct key_auth {
	uint8_t allowed[ZR_CURVE_KEY_LEN];
	atomic_int accepted;
	atomic_int refused;
};

static int
key_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct key_auth *a = arg;

	if (req->mechanism == ZR_MECH_CURVE && req->client_key != NULL &&
	    memcmp(req->client_key, a->allowed, ZR_CURVE_KEY_LEN) == 0) {
		atomic_fetch_add(&a->accepted, 1);
		snprintf(req->user_id, sizeof req->user_id, "client-%.8s", "one");
		return 200;
	}
	atomic_fetch_add(&a->refused, 1);
	snprintf(req->text, sizeof req->text, "unknown key");
	return 400;
}

Test(engine_curve, zring_pair_carries_every_payload_with_the_user_id)
{
	static struct key_auth a;
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_curve_key_decode(a.allowed, cli.pub), 0);
	cr_assert_eq(zr_socket_set_auth(pull, key_auth_cb, &a), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = curve_push(ep, &cli, srv.pub);

	size_t n = 0;

	/* The lone empty frame has its own test (empty_frames_cross_a_curve_link). */
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		if (et_payloads[i][0] == '\0')
			continue;
		zr_msg *m = et_msg_make(et_payloads[i]);

		cr_assert_eq(zr_send(push, &m, 0), 0, "payload %zu", i);
		n++;
	}
	cr_assert_eq(n, ET_NPAYLOADS - 1);
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		if (et_payloads[i][0] == '\0')
			continue;
		zr_msg *m = z_expect_msg(pull, et_payloads[i]);
		const char *uid = zr_msg_gets(m, "user-id"); /* names match in any case */

		cr_assert(uid != NULL && strcmp(uid, "client-one") == 0, "User-Id %s",
		          uid != NULL ? uid : "(none)");
		cr_assert_str_eq(zr_msg_gets(m, "Socket-Type"), "PUSH");
		zr_msg_free(m);
	}
	cr_assert_eq(atomic_load(&a.accepted), 1);
	cr_assert_eq(atomic_load(&a.refused), 0);
	/* A message made here has no properties. */
	zr_msg *mine;

	cr_assert_eq(zr_msg_new(&mine), 0);
	cr_assert_null(zr_msg_gets(mine, "User-Id"));
	zr_msg_free(mine);
}

/* Messages with no octets at all: one empty frame, two empty frames. Such a
 * message may have no buffer; encrypting it must not touch one. */
Test(engine_curve, empty_frames_cross_a_curve_link)
{
	char ep[256];
	zr_socket *pull = curve_pull(ep);
	zr_socket *push = curve_push(ep, &cli, srv.pub);
	static const char *const msgs[] = {"", ":", "61", ""};

	for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
		zr_msg *m = et_msg_make(msgs[i]);

		cr_assert_eq(zr_send(push, &m, 0), 0, "message %zu", i);
	}
	for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++)
		zr_msg_free(z_expect_msg(pull, msgs[i]));
}

Test(engine_curve, refused_zring_client_sees_the_status_and_server_the_text)
{
	static struct key_auth a;
	struct zr_event ev;
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_curve_key_decode(a.allowed, cli.pub), 0);
	cr_assert_eq(zr_socket_set_auth(pull, key_auth_cb, &a), 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *bad = curve_push(ep, &other, srv.pub);

	(void)zr_send_bytes(bad, "evil", 4, ZR_DONTWAIT);
	cr_assert(mon_wait(bad, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS),
	          "the refused client saw no HANDSHAKE_FAILED_AUTH");
	cr_assert_eq(ev.value, 400);
	cr_assert_not_null(strstr(ev.reason, "400"), "client reason: %s", ev.reason);
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, 400);
	cr_assert_not_null(strstr(ev.reason, "unknown key"), "server reason: %s", ev.reason);

	/* ERROR is final: the refused client does not dial again and again. */
	zr_socket *good = curve_push(ep, &cli, srv.pub);

	cr_assert_eq(zr_send_bytes(good, "good", 4, 0), 0);
	zr_msg *m = z_expect_msg(pull, "676f6f64");

	zr_msg_free(m);
	cr_assert_eq(atomic_load(&a.refused), 1, "the refused client came back %d times",
	             atomic_load(&a.refused));
	cr_assert_eq(mon_count(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED), 1);
}

Test(engine_curve, wrong_server_key_names_the_failed_box_on_both_sides)
{
	struct zr_event ev;
	char ep[256];
	zr_socket *pull = curve_pull(ep);
	zr_socket *push = curve_push(ep, &cli, other.pub);

	(void)zr_send_bytes(push, "x", 1, ZR_DONTWAIT);
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_EPEERERROR, "client value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	/* The server's ERROR reason, spaces sent as '-' (RFC 23: VCHAR only). */
	for (char *c = ev.reason; *c != '\0'; c++)
		*c = *c == '-' ? ' ' : *c;
	cr_assert_not_null(strstr(ev.reason, "CURVE box did not open"), "client reason: %s",
	                   ev.reason);
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_ECURVEBOX, "server value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	cr_assert_not_null(strstr(ev.reason, "127.0.0.1"), "server reason names the peer: %s",
	                   ev.reason);
	cr_assert_eq(zr_recv_bytes(pull, (char[4]){0}, 4, ZR_DONTWAIT), -EAGAIN);
}

/* No fallback to NULL between two zring sockets either. */
Test(engine_curve, curve_and_null_zring_sockets_refuse_each_other)
{
	struct zr_event ev;
	char ep[256];
	zr_socket *pull = curve_pull(ep);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_connect(push, ep), 0);
	(void)zr_send_bytes(push, "clear", 5, ZR_DONTWAIT);
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_EMECHMISMATCH, "server value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert(ev.value == -ZR_EMECHMISMATCH || ev.value == -ZR_EPEERERROR,
	          "client value %d (%s): %s", ev.value, zr_strerror(ev.value), ev.reason);
	cr_assert_eq(zr_recv_bytes(pull, (char[8]){0}, 8, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(mon_count(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED), 0);
}

/* ---- tampering after the handshake -------------------------------------------- */

/* A relay to target_ep (see hostile_peer.py relay); its endpoint in rep. */
static struct et_peer *
relay_start(const char *target_ep, const char *mode, int n, char rep[64])
{
	char tport[16], nbuf[16];
	unsigned port;

	snprintf(tport, sizeof tport, "%s", strrchr(target_ep, ':') + 1);
	snprintf(nbuf, sizeof nbuf, "%d", n);
	const char *args[] = {"relay", tport, mode, nbuf, NULL};
	struct et_peer *r = hostile_listen(args, &port);

	snprintf(rep, 64, "tcp://127.0.0.1:%u", port);
	return r;
}

/* Reads relay lines until one starts with want (e.g. "TAMPERED 1"). */
static void
relay_expect(struct et_peer *r, const char *want)
{
	for (;;) {
		cr_assert(et_peer_readline(r, 10000), "the relay never said \"%s\"", want);
		if (strncmp(r->line, want, strlen(want)) == 0)
			return;
	}
}

/*
 * Client PUSH -> relay -> server PULL, plus a healthy PUSH connected
 * directly. The relay alters the nth MESSAGE (message "m<n-1>") of its first
 * connection. The PULL must get m0 .. m<n-2> intact and in order, close the
 * relayed connection, and never deliver an altered message; what reaches it
 * later (the client redials through the relay, unaltered) comes in order,
 * once each. The healthy PUSH keeps delivering throughout.
 */
static void
tamper(const char *mode, int n, bool altered_arrives_once)
{
	char ep[256], rep[64];
	struct zr_event ev;
	zr_socket *pull = curve_pull(ep);
	zr_socket *healthy = curve_push(ep, &other, srv.pub);

	cr_assert_eq(zr_send_bytes(healthy, "h1", 2, 0), 0);
	zr_msg_free(z_expect_msg(pull, "6831"));
	struct et_peer *r = relay_start(ep, mode, n, rep);
	zr_socket *push = curve_push(rep, &cli, srv.pub);

	for (int i = 0; i < 10; i++) {
		char b[4] = {'m', (char)('0' + i)};

		cr_assert_eq(zr_send_bytes(push, b, 2, 0), 0);
	}
	relay_expect(r, "TAMPERED 1");
	relay_expect(r, "UPSTREAM_CLOSED 1");
	cr_assert(mon_wait(pull, ZR_EVENT_DISCONNECTED, &ev, ET_WAIT_MS),
	          "the server did not report the closed connection");

	/* The healthy connection is untouched. */
	cr_assert_eq(zr_send_bytes(healthy, "h2", 2, 0), 0);
	/* A fence through the relay's next (unaltered) connection, once the
	 * client has seen the first one go (a message queued on a connection
	 * that dies is lost with it, as in libzmq). */
	cr_assert(mon_wait(push, ZR_EVENT_DISCONNECTED, &ev, ET_WAIT_MS));
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_SUCCEEDED, &ev, ET_WAIT_MS),
	          "the client did not come back through the relay");
	cr_assert_eq(zr_send_bytes(push, "end", 3, 0), 0);

	int next = 0; /* the lowest m<i> still allowed */
	bool seen_h2 = false, seen_altered = false;
	int got_before = 0;

	for (;;) {
		char b[16];
		int len = zr_recv_bytes(pull, b, sizeof b, 0);

		cr_assert_geq(len, 0, "zr_recv: %s (the fence never came)", zr_strerror(len));
		if (len == 3 && memcmp(b, "end", 3) == 0)
			break;
		if (len == 2 && memcmp(b, "h2", 2) == 0) {
			seen_h2 = true;
			continue;
		}
		cr_assert(len == 2 && b[0] == 'm' && b[1] >= '0' && b[1] <= '9',
		          "an altered or unknown message arrived (%d octets)", len);
		int i = b[1] - '0';

		cr_assert_geq(i, next, "m%d arrived again or out of order", i);
		next = i + 1;
		if (i == n - 1) {
			cr_assert(altered_arrives_once, "the altered m%d was delivered", i);
			seen_altered = true;
		}
		if (i < n - 1)
			got_before++;
	}
	cr_assert_eq(got_before, n - 1, "only %d of the %d messages before the altered one arrived",
	             got_before, n - 1);
	cr_assert_eq(seen_altered, altered_arrives_once, "m%d %s", n - 1,
	             seen_altered ? "arrived" : "never arrived");
	if (!seen_h2)
		zr_msg_free(z_expect_msg(pull, "6832"));
	/* The healthy connection still delivers after all that. */
	cr_assert_eq(zr_send_bytes(healthy, "h3", 2, 0), 0);
	zr_msg_free(z_expect_msg(pull, "6833"));
	/* No handshake failed: the tampering came after it. */
	cr_assert_eq(mon_count(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL), 0);
}

Test(engine_curve, flipped_octet_in_a_message_closes_only_that_connection)
{
	tamper("flip", 4, false);
}

Test(engine_curve, replayed_message_is_delivered_once_and_closes_the_connection)
{
	tamper("replay", 4, true);
}

Test(engine_curve, message_with_an_older_nonce_closes_the_connection)
{
	/* m3 goes after m4: m4 is fine (a nonce may skip ahead), m3 is not. */
	tamper("swap", 4, false);
}

/*
 * What crosses the wire is ciphertext: a relay watching the client's bytes
 * sees a marker in the clear without CURVE (the control) and never with it.
 */
static void
sniff(bool curve, const char *want)
{
	char ep[256], rep[64];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	if (curve)
		z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	struct et_peer *r = relay_start(ep, "sniff", 0, rep);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	if (curve)
		z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, rep), 0);
	cr_assert_eq(zr_send_bytes(push, "zring-plaintext-marker", 22, 0), 0);
	char buf[32];

	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 22);
	cr_assert_eq(zr_disconnect(push, rep), 0);
	relay_expect(r, "SNIFF ");
	cr_assert_str_eq(r->line, want);
}

Test(engine_curve, the_wire_carries_no_plaintext)
{
	sniff(true, "SNIFF clean");
}

Test(engine_curve, the_sniffer_sees_plaintext_without_curve)
{
	sniff(false, "SNIFF seen");
}

/* One octet of INITIATE altered in flight: the server refuses the handshake
 * (its box does not open) and tells the client why; nothing is delivered. */
Test(engine_curve, altered_initiate_fails_the_handshake_on_both_sides)
{
	char ep[256], rep[64];
	struct zr_event ev;
	zr_socket *pull = curve_pull(ep);
	struct et_peer *r = relay_start(ep, "flipinit", 0, rep);
	zr_socket *push = curve_push(rep, &cli, srv.pub);

	(void)zr_send_bytes(push, "m0", 2, ZR_DONTWAIT);
	relay_expect(r, "TAMPERED 1");
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_ECURVEBOX, "server value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_EPEERERROR, "client value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	cr_assert_eq(zr_recv_bytes(pull, (char[8]){0}, 8, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(mon_count(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED), 0);
}

/*
 * An eavesdropper replays a whole client stream (greeting, HELLO, INITIATE,
 * MESSAGEs) on a new connection: the server's cookie key is new for every
 * HELLO, so the old INITIATE's cookie does not open and nothing is delivered
 * twice.
 */
Test(engine_curve, replayed_handshake_on_a_new_connection_is_refused)
{
	char ep[256], rep[64];
	struct zr_event ev;
	zr_socket *pull = curve_pull(ep);
	struct et_peer *r = relay_start(ep, "replayconn", 3, rep);
	zr_socket *push = curve_push(rep, &cli, srv.pub);

	for (int i = 0; i < 5; i++) {
		char b[2] = {'m', (char)('0' + i)};

		cr_assert_eq(zr_send_bytes(push, b, 2, 0), 0);
	}
	relay_expect(r, "REPLAY_CLOSED ");
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS),
	          "the replayed handshake was not refused");
	cr_assert_eq(ev.value, -ZR_ECURVEBOX, "value %d (%s): %s", ev.value, zr_strerror(ev.value),
	             ev.reason);
	for (int i = 0; i < 5; i++) {
		char tok[8];

		snprintf(tok, sizeof tok, "6d%02x", '0' + i);
		zr_msg_free(z_expect_msg(pull, tok));
	}
	cr_assert_eq(zr_send_bytes(push, "end", 3, 0), 0);
	zr_msg_free(z_expect_msg(pull, "656e64"));
	cr_assert_eq(mon_count(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED), 0,
	             "the replayed connection completed a handshake");
}

/* ---- limits and keepalive under CURVE ------------------------------------------- */

/* MAXMSGSIZE counts the plaintext: a message of exactly the limit passes, one
 * octet more closes the connection (nothing of it delivered); the client
 * redials and goes on. */
Test(engine_curve, maxmsgsize_applies_to_the_plaintext)
{
	char ep[256];
	struct zr_event ev;
	zr_socket *pull = et_zopen(0, ZR_PULL);
	int64_t max = 1000;

	cr_assert_eq(zr_setsockopt(pull, ZR_MAXMSGSIZE, &max, sizeof max), 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = curve_push(ep, &cli, srv.pub);
	zr_msg *m = et_msg_make("g1000,1");

	cr_assert_eq(zr_send(push, &m, 0), 0);
	zr_msg_free(z_expect_msg(pull, "g1000,1"));
	m = et_msg_make("g1001,2");
	cr_assert_eq(zr_send(push, &m, 0), 0);
	cr_assert(mon_wait(pull, ZR_EVENT_DISCONNECTED, &ev, ET_WAIT_MS),
	          "an over-long MESSAGE did not close the connection");
	cr_assert(mon_wait(push, ZR_EVENT_DISCONNECTED, &ev, ET_WAIT_MS));
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_SUCCEEDED, &ev, ET_WAIT_MS),
	          "the client did not come back");
	cr_assert_eq(zr_send_bytes(push, "after", 5, 0), 0);
	zr_msg_free(z_expect_msg(pull, "6166746572"));
}

/* HEARTBEAT_IVL 100 ms on both sides, a PING unanswered for 1 s closes
 * (generous: a stalled io thread must not drop the link): after 2 s of idle,
 * twice the timeout, the one connection still carries messages. */
Test(engine_curve, heartbeats_keep_an_idle_curve_link)
{
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	et_zopt_int(pull, ZR_HEARTBEAT_IVL, 100);
	et_zopt_int(pull, ZR_HEARTBEAT_TIMEOUT, 1000);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = et_zopen(1, ZR_PUSH);

	et_zopt_int(push, ZR_HEARTBEAT_IVL, 100);
	et_zopt_int(push, ZR_HEARTBEAT_TIMEOUT, 1000);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "a", 1, 0), 0);
	zr_msg_free(z_expect_msg(pull, "61"));
	zt_sleep_ms(2000);
	cr_assert_eq(zr_send_bytes(push, "b", 1, 0), 0);
	zr_msg_free(z_expect_msg(pull, "62"));
	cr_assert_eq(mon_count(pull, ZR_EVENT_DISCONNECTED), 0);
	cr_assert_eq(mon_count(push, ZR_EVENT_DISCONNECTED), 0);
}

/* zring SUB at a zring PUB: the subscription and its cancel travel as
 * commands inside MESSAGE (RFC 26 with ZMTP 3.1). */
Test(engine_curve, zring_subscription_and_cancel_inside_message)
{
	char ep[256];
	zr_socket *pub = et_zopen(0, ZR_PUB);

	z_curve_server(pub, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pub, false));
	zr_socket *sub = et_zopen(1, ZR_SUB);

	z_curve_client(sub, &cli, srv.pub);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "a", 1), 0);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "stop", 4), 0);
	cr_assert_eq(zr_connect(sub, ep), 0);
	struct et_side p = {.name = "zring PUB", .type = ZR_PUB, .z = pub};
	struct et_side s = {.name = "zring SUB", .type = ZR_SUB, .z = sub};

	et_sync(&p, &s, "6170726f6265", "6166656e6365"); /* "aprobe", "afence" */
	et_send(&p, "62");                               /* b */
	et_send(&p, "6131");                             /* a1 */
	et_send(&p, "73746f70");                         /* stop */
	et_expect(&s, "6131");
	et_expect(&s, "73746f70");
	/* Cancel "a": once "stop" arrives after an "a2", "a2" was filtered. */
	cr_assert_eq(zr_setsockopt(sub, ZR_UNSUBSCRIBE, "a", 1), 0);
	for (int tries = 0;; tries++) {
		cr_assert_lt(tries, 100, "the cancel never took effect");
		et_send(&p, "6132"); /* a2 */
		et_send(&p, "73746f70");
		char *got = et_recv(&s, ET_WAIT_MS);

		cr_assert_not_null(got);
		bool done = strcmp(got, "73746f70") == 0;

		if (!done) {
			cr_assert_str_eq(got, "6132");
			free(got);
			got = et_recv(&s, ET_WAIT_MS);
			cr_assert(got != NULL && strcmp(got, "73746f70") == 0);
		}
		free(got);
		if (done)
			break;
	}
}

/*
 * Multipart messages of frames larger than one write batch (256 KiB), mixed
 * with small ones, to a receiver that holds at most two messages: the sender
 * encrypts across batch boundaries inside a message, the receiver's buffer
 * grows to a whole MESSAGE and shrinks back, and reading stops and resumes
 * with part of a MESSAGE buffered. Everything arrives whole and in order.
 */
struct big_sender {
	zr_socket *push;
	char text[24][96];
	int sent;
	int err;
};

/* Sends the 24 messages (the receiver reads meanwhile: they do not all fit
 * in the queues at once). */
static void *
big_sender_run(void *arg)
{
	struct big_sender *b = arg;

	for (int i = 0; i < 24; i++) {
		zr_msg *m = et_msg_make(b->text[i]);
		int rc = zr_send(b->push, &m, 0);

		if (rc != 0) {
			zr_msg_free(m);
			b->err = rc;
			break;
		}
		b->sent++;
	}
	return NULL;
}

/* A CURVE PUSH sends b's 24 messages from a thread to a PULL that holds two
 * and reads them one by one, pausing every pause_every messages (it fills up
 * and stops reading); every message must arrive whole, in order. */
static void
big_exchange(struct big_sender *b, int pause_every)
{
	char ep[256];
	pthread_t th;
	zr_socket *pull = et_zopen(0, ZR_PULL);

	et_zopt_int(pull, ZR_RCVHWM, 2);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	b->push = et_zopen(1, ZR_PUSH);
	et_zopt_int(b->push, ZR_SNDTIMEO, 20000);
	z_curve_client(b->push, &cli, srv.pub);
	cr_assert_eq(zr_connect(b->push, ep), 0);
	cr_assert_eq(pthread_create(&th, NULL, big_sender_run, b), 0);
	et_zopt_int(pull, ZR_RCVTIMEO, 20000);
	for (int i = 0; i < 24; i++) {
		if (i % pause_every == 0)
			zt_sleep_ms(20);
		zr_msg_free(z_expect_msg(pull, b->text[i]));
	}
	pthread_join(th, NULL);
	cr_assert_eq(b->err, 0, "zr_send: %s", zr_strerror(b->err));
	cr_assert_eq(b->sent, 24);
}

Test(engine_curve, big_multipart_messages_through_a_slow_receiver)
{
	static struct big_sender b;

	for (int i = 0; i < 24; i++) {
		if (i % 3 == 0)
			snprintf(b.text[i], sizeof b.text[i],
			         "g300000,%d:g70000,%d:g262144,%d:%02x", i, i + 1, i + 2, i);
		else if (i % 3 == 1)
			snprintf(b.text[i], sizeof b.text[i], "%02x", i);
		else
			snprintf(b.text[i], sizeof b.text[i], "g65536,%d:%02x:g1048576,%d", i, i,
			         i + 3);
	}
	big_exchange(&b, 4);
}

/*
 * One-frame messages from 32 KiB on are opened in the connection's buffer,
 * which then becomes the message's (no copy of the body): sizes around that
 * threshold, small ones between them, and a receiver that falls behind so
 * that reads end anywhere. Every octet is checked.
 */
Test(engine_curve, large_one_frame_messages_between_small_ones_arrive_intact)
{
	static struct big_sender b;
	static const int sizes[] = {32767, 32768, 32769, 65536, 100000, 1048576};

	for (int i = 0; i < 24; i++) {
		if (i % 2 == 0)
			snprintf(b.text[i], sizeof b.text[i], "g%d,%d", sizes[(i / 2) % 6], i);
		else if (i % 4 == 1)
			snprintf(b.text[i], sizeof b.text[i], "%02x", i);
		else /* a large frame that is not the message's only one */
			snprintf(b.text[i], sizeof b.text[i], "g40000,%d:%02x", i, i);
	}
	big_exchange(&b, 5);
}

/* CURVE over ipc: the authenticator is asked (whatever the peer address
 * reads there) and its user id reaches the messages. */
static atomic_int ipc_auth_calls;

static int
ipc_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	atomic_fetch_add(&ipc_auth_calls, 1);
	snprintf(req->user_id, sizeof req->user_id, "local");
	return req->mechanism == ZR_MECH_CURVE ? 200 : 500;
}

Test(engine_curve, curve_over_ipc_with_an_authenticator)
{
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_socket_set_auth(pull, ipc_auth_cb, NULL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, true));
	zr_socket *push = et_zopen(0, ZR_PUSH);

	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "over ipc", 8, 0), 0);
	zr_msg *m = z_expect_msg(pull, "6f76657220697063");

	cr_assert_str_eq(zr_msg_gets(m, "User-Id"), "local");
	zr_msg_free(m);
	cr_assert_eq(atomic_load(&ipc_auth_calls), 1);
}

/* ---- handshakes that never end ------------------------------------------------- */

/* A server that answers the greeting and then nothing: HANDSHAKE_IVL ends
 * it, and the event says it was a timeout (not a wrong key). */
Test(engine_curve, mute_curve_server_times_out_the_handshake)
{
	unsigned port;
	char ep[64];
	struct zr_event ev;
	const char *args[] = {"mute", NULL};

	hostile_listen(args, &port);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", port);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	et_zopt_int(push, ZR_HANDSHAKE_IVL, 300);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, ep), 0);
	(void)zr_send_bytes(push, "waiting", 7, ZR_DONTWAIT);
	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_EHANDSHAKE_TIMEOUT, "value %d (%s): %s", ev.value,
	             zr_strerror(ev.value), ev.reason);
	cr_assert_not_null(strstr(ev.reason, "timed out"), "reason: %s", ev.reason);
	/* A timeout is not final: it dials again (and times out again). */
	cr_assert(mon_wait(push, ZR_EVENT_CONNECTED, &ev, ET_WAIT_MS), "no redial after a timeout");
	/* Closing in the middle of a handshake frees it all (ASan checks). */
	et_zclose(push);
}

/* INITIATE swallowed in flight: the server, waiting for it, times out and
 * closes; the client (patient) redials through the relay, whose second
 * connection passes everything, and its message gets through. */
Test(engine_curve, swallowed_initiate_times_out_at_the_server)
{
	char ep[256], rep[64];
	struct zr_event ev;
	zr_socket *pull = et_zopen(0, ZR_PULL);

	et_zopt_int(pull, ZR_HANDSHAKE_IVL, 300);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	struct et_peer *r = relay_start(ep, "dropinit", 0, rep);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, rep), 0);
	cr_assert_eq(zr_send_bytes(push, "m0", 2, 0), 0);
	relay_expect(r, "TAMPERED 1");
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, -ZR_EHANDSHAKE_TIMEOUT, "server value %d (%s)", ev.value,
	             zr_strerror(ev.value));
	cr_assert_not_null(strstr(ev.reason, "timed out"), "reason: %s", ev.reason);
	zr_msg_free(z_expect_msg(pull, "6d30"));
}

/* ---- the authenticator's answers ------------------------------------------------ */

static atomic_int status_answer;

static int
status_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	(void)req;
	return atomic_load(&status_answer);
}

/* 300, 400 and 500 reach the client as they are; any other refusal as 500. */
static void
auth_status(int answer, int want)
{
	char ep[256];
	struct zr_event ev;
	zr_socket *pull = et_zopen(0, ZR_PULL);

	atomic_store(&status_answer, answer);
	cr_assert_eq(zr_socket_set_auth(pull, status_auth_cb, NULL), 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = curve_push(ep, &cli, srv.pub);

	cr_assert(mon_wait(push, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS), "answer %d",
	          answer);
	cr_assert_eq(ev.value, want, "answer %d: the client saw %d", answer, ev.value);
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, want, "answer %d: the server reported %d", answer, ev.value);
}

Test(engine_curve, auth_answer_300_is_sent_as_300)
{
	auth_status(300, 300);
}

Test(engine_curve, auth_answer_500_is_sent_as_500)
{
	auth_status(500, 500);
}

Test(engine_curve, auth_answer_out_of_range_counts_as_500)
{
	auth_status(999, 500);
}

Test(engine_curve, auth_answer_zero_counts_as_500)
{
	auth_status(0, 500);
}

/* The longest user id an authenticator may give reaches the messages whole. */
static int
long_id_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	memset(req->user_id, 'u', ZR_ZMTP_USER_ID_MAX);
	req->user_id[ZR_ZMTP_USER_ID_MAX] = '\0';
	return 200;
}

Test(engine_curve, longest_user_id_arrives_whole)
{
	char ep[256], want[ZR_ZMTP_USER_ID_MAX + 1];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_socket_set_auth(pull, long_id_cb, NULL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = curve_push(ep, &cli, srv.pub);

	cr_assert_eq(zr_send_bytes(push, "x", 1, 0), 0);
	zr_msg *m = z_expect_msg(pull, "78");

	memset(want, 'u', ZR_ZMTP_USER_ID_MAX);
	want[ZR_ZMTP_USER_ID_MAX] = '\0';
	cr_assert_str_eq(zr_msg_gets(m, "User-Id"), want);
	zr_msg_free(m);
}

/* PLAIN between zring sockets: the hook sees the credentials, a refused
 * client sees the status, an admitted one's messages carry its user id. */
static int
plain_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	if (req->mechanism != ZR_MECH_PLAIN || req->client_key != NULL)
		return 500;
	if (req->password_len == 2 && memcmp(req->password, "pw", 2) == 0) {
		snprintf(req->user_id, sizeof req->user_id, "%.*s", (int)req->username_len,
		         (const char *)req->username);
		return 200;
	}
	snprintf(req->text, sizeof req->text, "wrong password");
	return 400;
}

Test(engine_curve, plain_between_zring_sockets)
{
	char ep[256];
	struct zr_event ev;
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_socket_set_auth(pull, plain_cb, NULL), 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	et_zopt_int(pull, ZR_PLAIN_SERVER, 1);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *bad = et_zopen(1, ZR_PUSH), *good = et_zopen(1, ZR_PUSH);

	cr_assert_eq(zr_socket_monitor(bad, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_setsockopt(bad, ZR_PLAIN_USERNAME, "mallory", 7), 0);
	cr_assert_eq(zr_setsockopt(bad, ZR_PLAIN_PASSWORD, "guess", 5), 0);
	cr_assert_eq(zr_connect(bad, ep), 0);
	(void)zr_send_bytes(bad, "evil", 4, ZR_DONTWAIT);
	cr_assert(mon_wait(bad, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS));
	cr_assert_eq(ev.value, 400);
	cr_assert(mon_wait(pull, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, ET_WAIT_MS));
	cr_assert_not_null(strstr(ev.reason, "wrong password"), "reason: %s", ev.reason);

	cr_assert_eq(zr_setsockopt(good, ZR_PLAIN_USERNAME, "alice", 5), 0);
	cr_assert_eq(zr_setsockopt(good, ZR_PLAIN_PASSWORD, "pw", 2), 0);
	cr_assert_eq(zr_connect(good, ep), 0);
	cr_assert_eq(zr_send_bytes(good, "hi", 2, 0), 0);
	zr_msg *m = z_expect_msg(pull, "6869");

	cr_assert_str_eq(zr_msg_gets(m, "User-Id"), "alice");
	zr_msg_free(m);
}

/* ---- many clients --------------------------------------------------------------- */

static atomic_int many_calls;

static int
count_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	atomic_fetch_add(&many_calls, 1);
	/* The user id is the first 8 Z85 characters of the client's key. */
	char z85[ZR_CURVE_KEY_Z85_LEN + 1];

	zr_curve_key_encode(z85, req->client_key);
	snprintf(req->user_id, sizeof req->user_id, "%.8s", z85);
	return 200;
}

/* 24 CURVE clients handshake at once with one server and each sends 10
 * messages: all 240 arrive, each with its own sender's user id. */
Test(engine_curve, many_clients_at_once_each_with_its_user_id)
{
	enum {
		N = 24,
		PER = 10
	};
	static struct keys k[N];
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);
	zr_socket *push[N];
	zr_ctx *ctx = et_ctx_get(1);
	int next[N] = {0};

	cr_assert_eq(zr_socket_set_auth(pull, count_auth_cb, NULL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(zr_curve_keypair(k[i].pub, k[i].sec), 0);
		/* Beyond et_zopen's table: closed by zr_ctx_free at teardown. */
		cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push[i]), 0);
		et_zopt_int(push[i], ZR_LINGER, 0);
		et_zopt_int(push[i], ZR_SNDTIMEO, ET_WAIT_MS);
		z_curve_client(push[i], &k[i], srv.pub);
		cr_assert_eq(zr_connect(push[i], ep), 0);
	}
	for (int j = 0; j < PER; j++) {
		for (int i = 0; i < N; i++) {
			uint8_t b[2] = {(uint8_t)i, (uint8_t)j};

			cr_assert_eq(zr_send_bytes(push[i], b, 2, 0), 0, "client %d message %d", i,
			             j);
		}
	}
	for (int n = 0; n < N * PER; n++) {
		zr_msg *m = NULL;
		size_t len;

		cr_assert_eq(zr_recv(pull, &m, 0), 0, "after %d messages", n);
		const uint8_t *b = zr_msg_frame(m, 0, &len);

		cr_assert(len == 2 && b[0] < N, "message %d", n);
		cr_assert_eq(b[1], next[b[0]], "client %u: message %u, want %d", b[0], b[1],
		             next[b[0]]);
		next[b[0]]++;
		char want[9];

		snprintf(want, sizeof want, "%.8s", k[b[0]].pub);
		cr_assert_str_eq(zr_msg_gets(m, "User-Id"), want, "client %u", b[0]);
		zr_msg_free(m);
	}
	cr_assert_eq(atomic_load(&many_calls), N);
}

/* zr_socket_set_auth(NULL) removes the authenticator: every client is
 * admitted again (with no user id from any hook). */
static int
refuse_all_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	(void)req;
	return 400;
}

Test(engine_curve, removing_the_authenticator_admits_everyone)
{
	char ep[256];
	zr_socket *pull = et_zopen(0, ZR_PULL);

	cr_assert_eq(zr_socket_set_auth(pull, refuse_all_cb, NULL), 0);
	cr_assert_eq(zr_socket_set_auth(pull, NULL, NULL), 0);
	z_curve_server(pull, &srv);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	zr_socket *push = curve_push(ep, &cli, srv.pub);

	cr_assert_eq(zr_send_bytes(push, "in", 2, 0), 0);
	zr_msg *m = z_expect_msg(pull, "696e");
	const char *uid = zr_msg_gets(m, "User-Id");

	cr_assert(uid == NULL || uid[0] == '\0', "User-Id \"%s\" with no authenticator", uid);
	zr_msg_free(m);
}

/* An authenticator on a CURVE client is never asked (only servers judge). */
static atomic_int client_hook_calls;

static int
client_hook_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	(void)req;
	atomic_fetch_add(&client_hook_calls, 1);
	return 400;
}

Test(engine_curve, an_authenticator_on_a_client_is_not_asked)
{
	char ep[256];
	zr_socket *pull = curve_pull(ep);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	cr_assert_eq(zr_socket_set_auth(push, client_hook_cb, NULL), 0);
	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "ok", 2, 0), 0);
	zr_msg_free(z_expect_msg(pull, "6f6b"));
	cr_assert_eq(atomic_load(&client_hook_calls), 0);
}

/* zr_disconnect in the middle of a CURVE handshake ends it cleanly, and the
 * same socket then completes a handshake elsewhere. */
Test(engine_curve, disconnect_during_the_handshake_then_connect_elsewhere)
{
	unsigned port;
	char mute_ep[64], ep[256];
	struct zr_event ev;
	const char *args[] = {"mute", NULL};
	zr_socket *pull = curve_pull(ep);

	hostile_listen(args, &port);
	snprintf(mute_ep, sizeof mute_ep, "tcp://127.0.0.1:%u", port);
	zr_socket *push = et_zopen(1, ZR_PUSH);

	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	z_curve_client(push, &cli, srv.pub);
	cr_assert_eq(zr_connect(push, mute_ep), 0);
	cr_assert(mon_wait(push, ZR_EVENT_CONNECTED, &ev, ET_WAIT_MS));
	zt_sleep_ms(50); /* HELLO out, no WELCOME ever */
	cr_assert_eq(zr_disconnect(push, mute_ep), 0);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "elsewhere", 9, 0), 0);
	zr_msg_free(z_expect_msg(pull, "656c73657768657265")); /* elsewhere */
}
