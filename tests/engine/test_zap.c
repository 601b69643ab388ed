/*
 * ZAP (RFC 27) in the engine: a handler written against the zring API (a
 * REP bound at inproc://zeromq.zap.01 on a thread of its own) decides
 * about PLAIN, CURVE and NULL-with-domain clients; its User-Id and
 * metadata reach the messages; a handler that sits on a request stalls
 * only that handshake; a client that leaves while its request waits is
 * forgotten (the late reply is dropped; ASan checks nothing leaks).
 */
#include "curve_util.h"

#include <pthread.h>
#include <stdatomic.h>

static void
zap_setup(void)
{
	cu_setup();
}

static void
zap_teardown(void)
{
	et_teardown();
}

TestSuite(engine_zap, .init = zap_setup, .fini = zap_teardown);

#define WAIT_MS 10000

struct handler {
	zr_socket *rep;
	pthread_t th;
	atomic_int stop;
	atomic_int requests;
	atomic_int held;    /* a "slow" request is being held */
	atomic_int release; /* ... until this is set */
	uint8_t curve_ok[ZR_CURVE_KEY_LEN];
	char last[6][64]; /* version, id, domain, address, identity, mechanism */
	pthread_mutex_t lock;
};

static bool
frame_is(const zr_msg *m, size_t i, const char *s)
{
	size_t n;
	const void *p = zr_msg_frame(m, i, &n);

	return p != NULL && n == strlen(s) && memcmp(p, s, n) == 0;
}

static void
frame_text(const zr_msg *m, size_t i, char *out, size_t cap)
{
	size_t n = 0;
	const void *p = zr_msg_frame(m, i, &n);

	if (p == NULL || n >= cap)
		n = 0;
	if (n > 0)
		memcpy(out, p, n);
	out[n] = '\0';
}

/* The decision: status, user id. */
static int
decide(struct handler *h, const zr_msg *m, const char **user)
{
	size_t n;
	const void *key;

	*user = "";
	if (frame_is(m, 5, "PLAIN")) {
		if (frame_is(m, 6, "admin") && frame_is(m, 7, "secret")) {
			*user = "admin";
			return 200;
		}
		if (frame_is(m, 6, "bogus"))
			return 999; /* not a ZAP status: a malformed reply */
		if (frame_is(m, 6, "slow")) {
			atomic_store(&h->held, 1);
			while (!atomic_load(&h->release) && !atomic_load(&h->stop))
				zt_sleep_ms(1);
			*user = "slow";
			return 200;
		}
		return 400;
	}
	if (frame_is(m, 5, "CURVE")) {
		key = zr_msg_frame(m, 6, &n);
		if (key != NULL && n == ZR_CURVE_KEY_LEN && memcmp(key, h->curve_ok, n) == 0) {
			*user = "curve-user";
			return 200;
		}
		return 400;
	}
	if (frame_is(m, 5, "NULL") && frame_is(m, 2, "ok-domain")) {
		*user = "anon";
		return 200;
	}
	return 400;
}

static void *
handler_main(void *arg)
{
	struct handler *h = arg;

	while (!atomic_load(&h->stop)) {
		zr_msg *m = NULL, *r = NULL;
		const char *user;
		char code[4];
		uint8_t meta[64];
		int status, mlen;
		size_t idlen;
		const void *id;

		if (zr_recv(h->rep, &m, 0) != 0)
			continue; /* RCVTIMEO: look at stop */
		atomic_fetch_add(&h->requests, 1);
		pthread_mutex_lock(&h->lock);
		for (size_t i = 0; i < 6; i++)
			frame_text(m, i, h->last[i], sizeof h->last[i]);
		pthread_mutex_unlock(&h->lock);
		status = frame_is(m, 0, "1.0") ? decide(h, m, &user) : 500;
		if (atomic_load(&h->stop)) {
			zr_msg_free(m); /* stopped while holding one: no answer */
			break;
		}
		if (status != 200)
			user = "";
		snprintf(code, sizeof code, "%d", status % 1000);
		mlen = status == 200 ? zr_zmtp_prop_encode(meta, sizeof meta, "X-Zap",
		                                           (const uint8_t *)"yes", 3)
		                     : 0;
		id = zr_msg_frame(m, 1, &idlen);
		if (zr_msg_new(&r) == 0 && zr_msg_add(r, "1.0", 3) == 0 &&
		    zr_msg_add(r, id, idlen) == 0 && zr_msg_add(r, code, 3) == 0 &&
		    zr_msg_add(r, status == 200 ? "OK" : "no", 2) == 0 &&
		    zr_msg_add(r, user, strlen(user)) == 0 &&
		    zr_msg_add(r, meta, mlen > 0 ? (size_t)mlen : 0) == 0) {
			if (zr_send(h->rep, &r, 0) != 0)
				zr_msg_free(r);
		} else {
			zr_msg_free(r);
		}
		zr_msg_free(m);
	}
	return NULL;
}

static struct handler H;

static void
handler_start(zr_ctx *ctx)
{
	memset(&H, 0, sizeof H);
	pthread_mutex_init(&H.lock, NULL);
	cr_assert_eq(zr_curve_key_decode(H.curve_ok, cli.pub), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_REP, &H.rep), 0);
	et_zopt_int(H.rep, ZR_LINGER, 0);
	et_zopt_int(H.rep, ZR_RCVTIMEO, 50);
	cr_assert_eq(zr_bind(H.rep, "inproc://zeromq.zap.01"), 0);
	cr_assert_eq(pthread_create(&H.th, NULL, handler_main, &H), 0);
}

static void
handler_stop(void)
{
	atomic_store(&H.stop, 1);
	pthread_join(H.th, NULL);
	zr_socket_close(H.rep);
	pthread_mutex_destroy(&H.lock);
}

static zr_socket *
sock(zr_ctx *ctx, int type)
{
	zr_socket *s;

	cr_assert_eq(zr_socket_open(ctx, type, &s), 0);
	et_zopt_int(s, ZR_LINGER, 0);
	et_zopt_int(s, ZR_SNDTIMEO, WAIT_MS);
	et_zopt_int(s, ZR_RCVTIMEO, WAIT_MS);
	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_ALL), 0);
	return s;
}

static void
plain_client(zr_socket *s, const char *user, const char *pass)
{
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_USERNAME, user, strlen(user)), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_PLAIN_PASSWORD, pass, strlen(pass)), 0);
}

/* server binds tcp, client connects; returns the endpoint. */
static void
link_up(zr_socket *server, zr_socket *client)
{
	char ep[128];
	size_t len = sizeof ep;

	cr_assert_eq(zr_bind(server, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(server, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert_eq(zr_connect(client, ep), 0);
}

/* client sends text; server receives it with the user id (and X-Zap). */
static void
expect_through(zr_socket *client, zr_socket *server, const char *text, const char *user)
{
	zr_msg *m = NULL;
	const char *v;

	cr_assert_eq(zr_send_bytes(client, text, strlen(text), 0), 0);
	cr_assert_eq(zr_recv(server, &m, 0), 0, "no message from the accepted client");
	cr_assert(frame_is(m, 0, text));
	v = zr_msg_gets(m, "User-Id");
	cr_assert_not_null(v, "no User-Id");
	cr_assert_str_eq(v, user);
	v = zr_msg_gets(m, "X-Zap");
	cr_assert_not_null(v, "the ZAP reply's metadata is not a property");
	cr_assert_str_eq(v, "yes");
	zr_msg_free(m);
}

static void
expect_refused(zr_socket *server, zr_socket *client, int status)
{
	struct zr_event ev;

	cr_assert(mon_wait(server, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, WAIT_MS),
	          "the server saw no HANDSHAKE_FAILED_AUTH");
	cr_assert_eq(ev.value, status);
	cr_assert(mon_wait(client, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, WAIT_MS),
	          "the client was not told");
	cr_assert_eq(ev.value, status);
}

Test(engine_zap, plain_clients_are_accepted_or_refused_by_the_handler)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *good, *bad;

	handler_start(ctx);
	srv_s = sock(ctx, ZR_PULL);
	et_zopt_int(srv_s, ZR_PLAIN_SERVER, 1);
	good = sock(ctx, ZR_PUSH);
	plain_client(good, "admin", "secret");
	link_up(srv_s, good);
	expect_through(good, srv_s, "hello", "admin");
	pthread_mutex_lock(&H.lock);
	cr_assert_str_eq(H.last[0], "1.0");
	cr_assert_str_eq(H.last[2], "", "no ZAP_DOMAIN set");
	cr_assert_str_eq(H.last[3], "127.0.0.1");
	cr_assert_str_eq(H.last[5], "PLAIN");
	pthread_mutex_unlock(&H.lock);

	bad = sock(ctx, ZR_PUSH);
	plain_client(bad, "admin", "wrong");
	link_up(srv_s, bad);
	expect_refused(srv_s, bad, 400);
	cr_assert_eq(atomic_load(&H.requests), 2);
	zr_socket_close(good);
	zr_socket_close(bad);
	zr_socket_close(srv_s);
	handler_stop();
}

Test(engine_zap, curve_clients_are_accepted_or_refused_by_their_key)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *good, *bad;

	handler_start(ctx);
	srv_s = sock(ctx, ZR_PULL);
	z_curve_server(srv_s, &srv);
	good = sock(ctx, ZR_PUSH);
	z_curve_client(good, &cli, srv.pub);
	link_up(srv_s, good);
	expect_through(good, srv_s, "boxed", "curve-user");

	bad = sock(ctx, ZR_PUSH);
	z_curve_client(bad, &other, srv.pub);
	link_up(srv_s, bad);
	expect_refused(srv_s, bad, 400);
	pthread_mutex_lock(&H.lock);
	cr_assert_str_eq(H.last[5], "CURVE");
	pthread_mutex_unlock(&H.lock);
	zr_socket_close(good);
	zr_socket_close(bad);
	zr_socket_close(srv_s);
	handler_stop();
}

Test(engine_zap, null_peers_are_asked_only_with_a_zap_domain)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *a, *b, *c, *d, *e, *f;

	handler_start(ctx);
	/* No domain: never asked (libzmq), accepted. */
	a = sock(ctx, ZR_PULL);
	b = sock(ctx, ZR_PUSH);
	link_up(a, b);
	cr_assert_eq(zr_send_bytes(b, "plain", 5, 0), 0);
	{
		zr_msg *m = NULL;

		cr_assert_eq(zr_recv(a, &m, 0), 0);
		cr_assert_null(zr_msg_gets(m, "User-Id"));
		zr_msg_free(m);
	}
	cr_assert_eq(atomic_load(&H.requests), 0);
	/* The handler's domain: accepted with its user id. */
	c = sock(ctx, ZR_PULL);
	cr_assert_eq(zr_setsockopt(c, ZR_ZAP_DOMAIN, "ok-domain", 9), 0);
	d = sock(ctx, ZR_PUSH);
	link_up(c, d);
	expect_through(d, c, "null", "anon");
	pthread_mutex_lock(&H.lock);
	cr_assert_str_eq(H.last[2], "ok-domain");
	cr_assert_str_eq(H.last[5], "NULL");
	pthread_mutex_unlock(&H.lock);
	/* Another domain: refused. */
	e = sock(ctx, ZR_PULL);
	cr_assert_eq(zr_setsockopt(e, ZR_ZAP_DOMAIN, "elsewhere", 9), 0);
	f = sock(ctx, ZR_PUSH);
	link_up(e, f);
	expect_refused(e, f, 400);
	{
		char v[64];
		size_t n = sizeof v;

		cr_assert_eq(zr_getsockopt(e, ZR_ZAP_DOMAIN, v, &n), 0);
		cr_assert_eq(n, 9);
		cr_assert_eq(memcmp(v, "elsewhere", 9), 0);
	}
	zr_socket_close(a);
	zr_socket_close(b);
	zr_socket_close(c);
	zr_socket_close(d);
	zr_socket_close(e);
	zr_socket_close(f);
	handler_stop();
}

static bool
wait_flag(atomic_int *f)
{
	for (int i = 0; i < WAIT_MS; i++) {
		if (atomic_load(f))
			return true;
		zt_sleep_ms(1);
	}
	return false;
}

/* A PLAIN server PULL and a client PUSH ("slow") whose ZAP request the
 * handler (started here) now holds unanswered. */
static void
held_client(zr_ctx *ctx, zr_socket **srv_s, zr_socket **slow)
{
	handler_start(ctx);
	*srv_s = sock(ctx, ZR_PULL);
	et_zopt_int(*srv_s, ZR_PLAIN_SERVER, 1);
	*slow = sock(ctx, ZR_PUSH);
	plain_client(*slow, "slow", "x");
	link_up(*srv_s, *slow);
	cr_assert(wait_flag(&H.held), "the handler never got the request");
}

Test(engine_zap, a_handler_holding_a_request_stalls_no_other_connection)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *slow, *pull, *push;
	zr_msg *m = NULL;

	held_client(ctx, &srv_s, &slow);
	cr_assert_eq(zr_send_bytes(slow, "late", 4, 0), 0); /* queued: not yet READY */

	/* Meanwhile another connection of the same context (same io thread)
	 * carries its traffic. */
	pull = sock(ctx, ZR_PULL);
	push = sock(ctx, ZR_PUSH);
	link_up(pull, push);
	for (int i = 0; i < 200; i++) {
		char b[16];

		snprintf(b, sizeof b, "m%d", i);
		cr_assert_eq(zr_send_bytes(push, b, strlen(b), 0), 0);
	}
	for (int i = 0; i < 200; i++) {
		char b[16];

		snprintf(b, sizeof b, "m%d", i);
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %d stalled", i);
		cr_assert(frame_is(m, 0, b));
		zr_msg_free(m);
	}
	cr_assert(atomic_load(&H.held), "still held: the handshake is still pending");
	cr_assert_eq(zr_recv(srv_s, &m, ZR_DONTWAIT), -EAGAIN, "delivered before the answer");
	atomic_store(&H.release, 1);
	cr_assert_eq(zr_recv(srv_s, &m, 0), 0, "the held client never got in");
	cr_assert(frame_is(m, 0, "late"));
	cr_assert_str_eq(zr_msg_gets(m, "User-Id"), "slow");
	zr_msg_free(m);
	zr_socket_close(slow);
	zr_socket_close(push);
	zr_socket_close(pull);
	zr_socket_close(srv_s);
	handler_stop();
}

Test(engine_zap, a_client_leaving_while_its_request_waits_is_forgotten)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *slow, *good;
	struct zr_event ev;

	held_client(ctx, &srv_s, &slow);
	zr_socket_close(slow);
	cr_assert(mon_wait(srv_s, ZR_EVENT_DISCONNECTED, &ev, WAIT_MS),
	          "the server did not see the client go");
	/* The late reply finds nobody; the handler and the pipe go on. */
	atomic_store(&H.release, 1);
	good = sock(ctx, ZR_PUSH);
	plain_client(good, "admin", "secret");
	{
		char ep[128];
		size_t len = sizeof ep;

		cr_assert_eq(zr_getsockopt(srv_s, ZR_LAST_ENDPOINT, ep, &len), 0);
		cr_assert_eq(zr_connect(good, ep), 0);
	}
	expect_through(good, srv_s, "after", "admin");
	cr_assert_eq(atomic_load(&H.requests), 2);
	zr_socket_close(good);
	zr_socket_close(srv_s);
	handler_stop();
}

Test(engine_zap, without_a_handler_clients_get_in_unless_the_domain_is_enforced)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *a, *b, *c, *d;
	zr_msg *m = NULL;

	a = sock(ctx, ZR_PULL);
	et_zopt_int(a, ZR_PLAIN_SERVER, 1);
	b = sock(ctx, ZR_PUSH);
	plain_client(b, "anyone", "any");
	link_up(a, b);
	cr_assert_eq(zr_send_bytes(b, "in", 2, 0), 0);
	cr_assert_eq(zr_recv(a, &m, 0), 0);
	zr_msg_free(m);

	c = sock(ctx, ZR_PULL);
	et_zopt_int(c, ZR_PLAIN_SERVER, 1);
	et_zopt_int(c, ZR_ZAP_ENFORCE_DOMAIN, 1);
	d = sock(ctx, ZR_PUSH);
	plain_client(d, "anyone", "any");
	link_up(c, d);
	expect_refused(c, d, 500);
	zr_socket_close(a);
	zr_socket_close(b);
	zr_socket_close(c);
	zr_socket_close(d);
}

Test(engine_zap, a_malformed_reply_fails_the_handshake_as_a_protocol_error)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *bogus;
	struct zr_event ev;

	handler_start(ctx);
	srv_s = sock(ctx, ZR_PULL);
	et_zopt_int(srv_s, ZR_PLAIN_SERVER, 1);
	bogus = sock(ctx, ZR_PUSH);
	plain_client(bogus, "bogus", "x");
	link_up(srv_s, bogus);
	cr_assert(mon_wait(srv_s, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, &ev, WAIT_MS),
	          "a status of 999 was taken");
	cr_assert_eq(ev.value, -EPROTO);
	cr_assert_eq(mon_count(srv_s, ZR_EVENT_HANDSHAKE_SUCCEEDED), 0);
	zr_socket_close(bogus);
	zr_socket_close(srv_s);
	handler_stop();
}

Test(engine_zap, a_handler_closing_refuses_what_it_held_and_a_new_one_takes_over)
{
	zr_ctx *ctx = et_ctx_get(0);
	zr_socket *srv_s, *slow, *good;
	struct zr_event ev;

	held_client(ctx, &srv_s, &slow);
	handler_stop(); /* closes the handler with the request unanswered */
	cr_assert(mon_wait(srv_s, ZR_EVENT_HANDSHAKE_FAILED_AUTH, &ev, WAIT_MS),
	          "the held handshake was not refused");
	cr_assert_eq(ev.value, 500);

	handler_start(ctx);
	good = sock(ctx, ZR_PUSH);
	plain_client(good, "admin", "secret");
	{
		char ep[128];
		size_t len = sizeof ep;

		cr_assert_eq(zr_getsockopt(srv_s, ZR_LAST_ENDPOINT, ep, &len), 0);
		cr_assert_eq(zr_connect(good, ep), 0);
	}
	expect_through(good, srv_s, "again", "admin");
	zr_socket_close(slow);
	zr_socket_close(good);
	zr_socket_close(srv_s);
	handler_stop();
}
