/*
 * Broker security (zr_broker_setsockopt, zr_broker_set_auth): queue, fan-out
 * and RPC over CURVE between two brokers, PLAIN with an authenticator that
 * refuses a bad password, a wrong server key failing with its reason, the
 * option checks at the call, a broker publishing to its own CURVE
 * subscription; `zring subscribe` / `zring publish` with -o and
 * --allow-plain; and a libzmq
 * CURVE PUSH and PUB (pyzmq, tests/broker/peers/curve_sender.py) into a
 * CURVE broker subscription.
 *
 * Every test asserts what arrived (names, headers, payload bytes, counts) and
 * what was refused, never a duration.
 */
#include "broker_util.h" /* first: _GNU_SOURCE */
#include "secure_util.h"

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define SENDER ZR_SOURCE_DIR "/tests/broker/peers/curve_sender.py"

struct keys {
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];
	char sec[ZR_CURVE_KEY_Z85_LEN + 1];
};

static struct zl_proc sender;

static void
setup(void)
{
	sec_open();
}

static void
teardown(void)
{
	zl_proc_stop(&sender, 2000);
	sec_close();
}

TestSuite(broker_security, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static void
keypair(struct keys *k)
{
	cr_assert_eq(zr_curve_keypair(k->pub, k->sec), 0);
}

static void
curve_server(zr_broker *b, const struct keys *srv)
{
	set_int(b, ZR_CURVE_SERVER, 1);
	set_str(b, ZR_CURVE_SECRETKEY, srv->sec);
}

static void
curve_client(zr_broker *b, const char *server_pub, const struct keys *cli)
{
	set_str(b, ZR_CURVE_SERVERKEY, server_pub);
	set_str(b, ZR_CURVE_PUBLICKEY, cli->pub);
	set_str(b, ZR_CURVE_SECRETKEY, cli->sec);
}

static int
mechanism_of(zr_socket *s)
{
	int mech = -1;
	size_t len = sizeof mech;

	cr_assert_eq(zr_getsockopt(s, ZR_MECHANISM, &mech, &len), 0);
	return mech;
}

/* An authenticator that records the CURVE keys it saw and admits PLAIN user
 * "alice" with password "s3cret" only (every CURVE client is admitted). */
struct auth_rec {
	pthread_mutex_t lock;
	int calls, refused;
	uint8_t last_key[ZR_CURVE_KEY_LEN];
};

static int
auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct auth_rec *r = arg;
	int status = 200;

	pthread_mutex_lock(&r->lock);
	r->calls++;
	if (req->mechanism == ZR_MECH_CURVE) {
		memcpy(r->last_key, req->client_key, ZR_CURVE_KEY_LEN);
		snprintf(req->user_id, sizeof req->user_id, "curve-client");
	} else if (req->username_len == 5 && memcmp(req->username, "alice", 5) == 0 &&
	           req->password_len == 6 && memcmp(req->password, "s3cret", 6) == 0) {
		snprintf(req->user_id, sizeof req->user_id, "alice");
	} else {
		status = 400;
		r->refused++;
		snprintf(req->text, sizeof req->text, "bad user or password");
	}
	pthread_mutex_unlock(&r->lock);
	return status;
}

static int
auth_calls(struct auth_rec *r, int *refused)
{
	pthread_mutex_lock(&r->lock);
	int n = r->calls;
	if (refused != NULL)
		*refused = r->refused;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- the option checks ---- */

Test(broker_security, options_checked_at_the_call)
{
	zr_broker *b = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	uint8_t short_key[10] = {0};
	int hwm = 5, one = 1;

	cr_assert_eq(zr_broker_setsockopt(b, 9999, &one, sizeof one), -EINVAL);
	cr_assert(strstr(zr_broker_error(b), "9999") != NULL, "%s", zr_broker_error(b));
	cr_assert_eq(zr_broker_setsockopt(b, ZR_CURVE_SECRETKEY, short_key, sizeof short_key),
	             -EINVAL);
	cr_assert(strstr(zr_broker_error(b), "do not take") != NULL, "%s", zr_broker_error(b));
	cr_assert_eq(zr_broker_setsockopt(b, ZR_CURVE_SERVER, &one, 2), -EINVAL);
	/* The broker's own, named with the call that sets it. */
	cr_assert_eq(zr_broker_setsockopt(b, ZR_RCVHWM, &hwm, sizeof hwm), -EINVAL);
	cr_assert(strstr(zr_broker_error(b), "zr_broker_set_read_ahead") != NULL, "%s",
	          zr_broker_error(b));
	cr_assert_eq(zr_broker_setsockopt(b, ZR_SUBSCRIBE, "x", 1), -EINVAL);
	cr_assert_eq(zr_broker_setsockopt(NULL, ZR_CURVE_SERVER, &one, sizeof one), -EINVAL);
	/* A good one clears the text. */
	set_int(b, ZR_HANDSHAKE_IVL, 5000);
	cr_assert_str_eq(zr_broker_error(b), "");
	cr_assert_eq(zr_broker_setsockopt(b, ZR_HANDSHAKE_IVL, &hwm, 2), -EINVAL);
	start(b);
	cr_assert_eq(zr_broker_setsockopt(b, ZR_HANDSHAKE_IVL, &hwm, sizeof hwm), -EINVAL);
	cr_assert(strstr(zr_broker_error(b), "before zr_broker_start") != NULL, "%s",
	          zr_broker_error(b));
	cr_assert_eq(zr_broker_set_auth(b, auth_cb, NULL), -EINVAL);
	zr_broker_free(b);
}

Test(broker_security, incomplete_curve_set_fails_at_subscribe)
{
	zr_broker *b = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	struct zr_sub_opts o = {.handler = bu_log_handler};
	zr_subscription *sub = NULL;
	struct bu_log log;

	bu_log_init(&log);
	o.arg = &log;
	set_int(b, ZR_CURVE_SERVER, 1); /* no secret key */
	start(b);
	cr_assert_eq(zr_subscribe(b, "jobs", &o, &sub), -EINVAL);
	cr_assert(strstr(zr_broker_error(b), "CURVE_SECRETKEY") != NULL, "%s", zr_broker_error(b));
	zr_broker_free(b);
	bu_log_fini(&log);
}

/* ---- CURVE between two brokers ---- */

Test(broker_security, queue_over_curve)
{
	struct keys srv, cli;
	struct auth_rec rec = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct bu_log log;
	char addr[256];
	uint8_t cli_key[ZR_CURVE_KEY_LEN];

	keypair(&srv);
	keypair(&cli);
	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(s, &srv);
	cr_assert_eq(zr_broker_set_auth(s, auth_cb, &rec), 0);
	start(s);
	zr_subscription *sub = bu_sub(s, "jobs", &log);
	bu_bound(s, addr, sizeof addr);
	cr_assert_eq(mechanism_of(zr_subscription_socket(sub)), ZR_MECH_CURVE);

	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	curve_client(c, srv.pub, &cli);
	start(c);
	zr_publisher *p = publisher(c);
	publish_n(p, "jobs", "job-", N_MSGS);
	cr_assert_eq(mechanism_of(zr_publisher_socket(p)), ZR_MECH_CURVE);
	expect_sequence_at(&log, 0, "jobs", "job-", N_MSGS);
	expect_no_more(&log, N_MSGS);

	/* The server's authenticator saw the client's long-term key: the
	 * messages came through a CURVE handshake with these keys. */
	cr_assert_eq(auth_calls(&rec, NULL), 1);
	cr_assert_eq(zr_curve_key_decode(cli_key, cli.pub), 0);
	cr_assert_eq(memcmp(rec.last_key, cli_key, sizeof cli_key), 0);

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_broker_free(s);
	bu_log_fini(&log);
}

Test(broker_security, fanout_over_curve)
{
	struct keys srv, cli;
	struct bu_log log;
	char addr[256];

	keypair(&srv);
	keypair(&cli);
	bu_log_init(&log);
	/* The publishing broker binds (its PUB is the CURVE server); the
	 * subscribing one dials. */
	zr_broker *s = broker_new(ZR_FANOUT, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(s, &srv);
	start(s);
	zr_publisher *p = publisher(s);
	/* The first publish binds; a probe name nobody matches. */
	cr_assert_eq(zr_publish(p, "none", NULL, 0, "x", 1, BU_WAIT_MS), 0, "%s",
	             zr_publisher_error(p));
	size_t len = sizeof addr;
	cr_assert_eq(zr_getsockopt(zr_publisher_socket(p), ZR_LAST_ENDPOINT, addr, &len), 0);

	zr_broker *c = broker_new(ZR_FANOUT, addr, ZR_CONNECT);
	curve_client(c, srv.pub, &cli);
	start(c);
	zr_subscription *sub = bu_sub(c, "orders.", &log);
	cr_assert_eq(mechanism_of(zr_subscription_socket(sub)), ZR_MECH_CURVE);

	size_t first = fanout_orders(p, &log, "CURVE");
	expect_sequence_at(&log, first, "orders.eu", "order-", N_MSGS);
	expect_no_more(&log, first + N_MSGS);
	cr_assert_eq(bu_log_count_named(&log, "other.eu"), 0);

	zr_broker_free(c);
	zr_publisher_free(p);
	zr_broker_free(s);
	bu_log_fini(&log);
}

Test(broker_security, rpc_over_curve)
{
	struct keys srv, cli;
	struct responder r;
	char addr[256];

	keypair(&srv);
	keypair(&cli);
	zr_broker *s = broker_new(ZR_RPC, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(s, &srv);
	start(s);
	r.p = publisher(s);
	struct zr_sub_opts o = {.handler = respond_cb, .arg = &r};
	zr_subscription *sub = NULL;
	cr_assert_eq(zr_subscribe(s, "echo", &o, &sub), 0, "%s", zr_broker_error(s));
	bu_bound(s, addr, sizeof addr);

	zr_broker *c = broker_new(ZR_RPC, addr, ZR_CONNECT);
	curve_client(c, srv.pub, &cli);
	start(c);
	zr_publisher *p = publisher(c);
	expect_echo(p, 20);
	cr_assert_eq(mechanism_of(zr_subscription_socket(sub)), ZR_MECH_CURVE);

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_publisher_free(r.p); /* every request was answered: no handler runs */
	zr_broker_free(s);
}

Test(broker_security, own_publisher_on_curve_subscription)
{
	struct keys srv;
	struct bu_log log;

	keypair(&srv);
	bu_log_init(&log);
	zr_broker *b = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(b, &srv);
	start(b);
	bu_sub(b, "jobs", &log);
	zr_publisher *p = publisher(b);
	publish_n(p, "jobs", "own-", 20);
	cr_assert_eq(mechanism_of(zr_publisher_socket(p)), ZR_MECH_CURVE);
	expect_sequence_at(&log, 0, "jobs", "own-", 20);
	zr_publisher_free(p);
	zr_broker_free(b);
	bu_log_fini(&log);
}

Test(broker_security, wrong_server_key_fails_with_reason)
{
	struct keys srv, other, cli;
	struct bu_log log;
	char addr[256];

	keypair(&srv);
	keypair(&other);
	keypair(&cli);
	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(s, &srv);
	start(s);
	zr_subscription *sub = bu_sub(s, "jobs", &log);
	cr_assert_eq(
		zr_socket_monitor(zr_subscription_socket(sub), ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL),
		0);
	bu_bound(s, addr, sizeof addr);

	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	curve_client(c, other.pub, &cli); /* not the server's key */
	start(c);
	zr_publisher *p = publisher(c);
	int rc = zr_publish(p, "jobs", NULL, 0, "secret", 6, BU_WAIT_MS);
	cr_assert_eq(rc, -EPROTO, "publish with a wrong server key: %d %s", rc,
	             zr_publisher_error(p));
	cr_assert(strstr(zr_publisher_error(p), "handshake") != NULL &&
	                  strstr(zr_publisher_error(p), addr) != NULL &&
	                  strstr(zr_publisher_error(p), "box") != NULL,
	          "%s", zr_publisher_error(p));

	/* The server saw why too. */
	struct zr_event ev;
	cr_assert_eq(zr_monitor_recv(zr_subscription_socket(sub), &ev, BU_WAIT_MS), 0);
	cr_assert_eq(ev.type, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL);
	cr_assert(strstr(ev.reason, "CURVE box did not open") != NULL, "%s", ev.reason);
	expect_no_more(&log, 0);

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_broker_free(s);
	bu_log_fini(&log);
}

/* ---- PLAIN and the authenticator ---- */

static zr_broker *
plain_client(const char *addr, const char *user, const char *pass)
{
	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);

	set_str(c, ZR_PLAIN_USERNAME, user);
	set_str(c, ZR_PLAIN_PASSWORD, pass);
	start(c);
	return c;
}

Test(broker_security, plain_authenticator_refuses_bad_password)
{
	struct auth_rec rec = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct bu_log log;
	char addr[256];
	int refused = 0;

	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND);
	set_int(s, ZR_PLAIN_SERVER, 1);
	cr_assert_eq(zr_broker_set_auth(s, auth_cb, &rec), 0);
	start(s);
	zr_subscription *sub = bu_sub(s, "jobs", &log);
	bu_bound(s, addr, sizeof addr);
	cr_assert_eq(mechanism_of(zr_subscription_socket(sub)), ZR_MECH_PLAIN);

	/* The refused publisher: its publish fails with the refusal, and none
	 * of its messages arrives. */
	zr_broker *bad = plain_client(addr, "alice", "guess");
	zr_publisher *pb = publisher(bad);
	int rc = zr_publish(pb, "jobs", NULL, 0, "bad-0", 5, BU_WAIT_MS);
	cr_assert_eq(rc, -EACCES, "refused publish: %d %s", rc, zr_publisher_error(pb));
	cr_assert(strstr(zr_publisher_error(pb), "400") != NULL, "%s", zr_publisher_error(pb));
	cr_assert_eq(zr_publish(pb, "jobs", NULL, 0, "bad-1", 5, BU_WAIT_MS), -EACCES);

	zr_broker *good = plain_client(addr, "alice", "s3cret");
	zr_publisher *pg = publisher(good);
	publish_n(pg, "jobs", "good-", 50);
	expect_sequence_at(&log, 0, "jobs", "good-", 50);
	expect_no_more(&log, 50);
	cr_assert_geq(auth_calls(&rec, &refused), 3);
	cr_assert_geq(refused, 2);

	zr_publisher_free(pb);
	zr_publisher_free(pg);
	zr_broker_free(bad);
	zr_broker_free(good);
	zr_broker_free(s);
	bu_log_fini(&log);
}

/* ---- a libzmq CURVE client into a CURVE broker subscription ---- */

static void
sender_start(const char *type, const char *addr, const char *server_pub, int n)
{
	char count[16], line[256];
	char *argv[] = {(char *)ZR_PYTHON,  (char *)SENDER, (char *)type, (char *)addr,
	                (char *)server_pub, count,          NULL};
	int rc;

	snprintf(count, sizeof count, "%d", n);
	cr_assert(access(ZR_PYTHON, X_OK) == 0, "%s not found (python3-zmq)", ZR_PYTHON);
	rc = zl_proc_spawn(&sender, argv);
	cr_assert_eq(rc, 0, "cannot start %s: %s", SENDER, strerror(-rc));
	rc = zl_proc_readline(&sender, line, sizeof line, WAIT_MS);
	cr_assert(rc >= 0 && strcmp(line, "READY") == 0, "sender: %d %s", rc, rc >= 0 ? line : "");
}

/* The sender's messages, byte for byte (curve_sender.py). */
static void
expect_sender_messages(struct bu_log *log, int n)
{
	cr_assert(bu_log_wait(log, (size_t)n, WAIT_MS), "got %zu of %d", bu_log_count(log), n);
	for (int i = 0; i < n; i++) {
		const struct bu_item *it = bu_log_at(log, (size_t)i);
		uint8_t want[64];
		char seq[16];
		int len;

		want[0] = (uint8_t)(i % 256);
		want[1] = 0;
		want[2] = 255;
		len = 3 + snprintf((char *)want + 3, sizeof want - 3, "payload-%d", i);
		snprintf(seq, sizeof seq, "%d", i);
		cr_assert_str_eq(it->name, "sensor.t");
		cr_assert_eq(it->nheaders, 2, "item %d", i);
		cr_assert_str_eq(bu_item_header(it, "seq"), seq);
		cr_assert_str_eq(bu_item_header(it, "kind"), "bin");
		cr_assert_eq(it->payload_len, (size_t)len, "item %d", i);
		cr_assert_eq(memcmp(it->payload, want, (size_t)len), 0, "item %d", i);
	}
	expect_no_more(log, (size_t)n);
}

static void
pyzmq_into_curve_subscription(int pattern, const char *type, const char *name)
{
	struct keys srv;
	struct bu_log log;
	char addr[256], line[64], want[32];

	keypair(&srv);
	bu_log_init(&log);
	zr_broker *s = broker_new(pattern, "tcp://127.0.0.1:0", ZR_BIND);
	curve_server(s, &srv);
	start(s);
	bu_sub(s, name, &log);
	bu_bound(s, addr, sizeof addr);
	sender_start(type, addr, srv.pub, N_MSGS);
	cr_assert_geq(zl_proc_readline(&sender, line, sizeof line, WAIT_MS), 0);
	snprintf(want, sizeof want, "SENT %d", N_MSGS);
	cr_assert_str_eq(line, want);
	expect_sender_messages(&log, N_MSGS);
	cr_assert_eq(zl_proc_stop(&sender, WAIT_MS), 0);
	zr_broker_free(s);
	bu_log_fini(&log);
}

Test(broker_security, pyzmq_curve_push_into_queue)
{
	pyzmq_into_curve_subscription(ZR_QUEUE, "PUSH", "sensors");
}

Test(broker_security, pyzmq_curve_pub_into_fanout)
{
	pyzmq_into_curve_subscription(ZR_FANOUT, "PUB", "sensor.");
}

/* ---- the command line ---- */

Test(broker_security, cli_queue_over_curve)
{
	struct keys srv, cli;
	char sk[64], ss[64], cp[64], cs[64], addr[256];

	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
	keypair(&srv);
	keypair(&cli);
	snprintf(sk, sizeof sk, "CURVE_SERVERKEY=%s", srv.pub);
	snprintf(ss, sizeof ss, "CURVE_SECRETKEY=%s", srv.sec);
	snprintf(cp, sizeof cp, "CURVE_PUBLICKEY=%s", cli.pub);
	snprintf(cs, sizeof cs, "CURVE_SECRETKEY=%s", cli.sec);

	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:*", "-b", "-n", "3",
	                              O("CURVE_SERVER=1"), O(ss), NULL);
	tool_stderr_after(sub, "zring: bound to ", addr, sizeof addr, WAIT_MS);

	/* A wrong server key: one line with the reason, exit 2, and the
	 * subscriber says why too. */
	char wrong[64];
	snprintf(wrong, sizeof wrong, "CURVE_SERVERKEY=%s", cli.pub);
	struct tool *pub = tool_start(1, "publish", "queue", addr, "-c", "--name", "jobs", O(wrong),
	                              O(cp), O(cs), NULL);
	expect_cli_refused(pub, sub, "CURVE", "CURVE box did not open");

	/* The right keys: three messages, printed exactly. */
	pub = tool_start(2, "publish", "queue", addr, "-c", "--name", "jobs", O(sk), O(cp), O(cs),
	                 NULL);
	expect_cli_three(pub, sub);
}

Test(broker_security, cli_rpc_over_plain)
{
	char addr[256];

	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
	struct tool *sub = tool_start(0, "subscribe", "rpc", "tcp://127.0.0.1:*", "-b", "-n", "2",
	                              O("PLAIN_SERVER=1"), NULL);
	tool_stderr_after(sub, "zring: bound to ", addr, sizeof addr, WAIT_MS);
	struct tool *pub =
		tool_start(1, "publish", "rpc", addr, "-c", "--name", "echo", "--timeout", "15000",
	                   O("PLAIN_USERNAME=bob"), O("PLAIN_PASSWORD=pw"), NULL);
	tool_input(pub, "ping\npong\n", 10);
	int rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, pub->err);
	cr_assert_str_eq(pub->out, "re:ping\nre:pong\n");
	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
}

Test(broker_security, cli_usage_errors)
{
	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
	/* A client without its own keys; an option the broker owns. */
	struct tool *t =
		tool_start(0, "publish", "queue", "tcp://127.0.0.1:1", "-c", "--name", "x",
	                   O("CURVE_SERVERKEY=rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"), NULL);
	int rc = tool_wait(t, WAIT_MS);
	cr_assert_eq(rc, 1, "exit %d; stderr: %s", rc, t->err);
	cr_assert(strstr(t->err, "CURVE_SECRETKEY") != NULL, "stderr: %s", t->err);
	t = tool_start(1, "subscribe", "queue", "tcp://127.0.0.1:*", "-b", O("LINGER=5"), NULL);
	rc = tool_wait(t, WAIT_MS);
	cr_assert_eq(rc, 1, "exit %d; stderr: %s", rc, t->err);
	cr_assert(strstr(t->err, "-o LINGER=5") != NULL && strstr(t->err, "drain") != NULL,
	          "stderr: %s", t->err);
	/* --allow-plain without a PLAIN server. */
	t = tool_start(2, "subscribe", "queue", "tcp://127.0.0.1:*", "-b", "--allow-plain", "a:b",
	               NULL);
	rc = tool_wait(t, WAIT_MS);
	cr_assert_eq(rc, 1, "exit %d; stderr: %s", rc, t->err);
	cr_assert(strstr(t->err, "PLAIN_SERVER=1") != NULL, "stderr: %s", t->err);
}

Test(broker_security, cli_queue_plain_allow_list)
{
	char addr[256], why[512];

	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:*", "-b", "-n", "2",
	                              O("PLAIN_SERVER=1"), "--allow-plain", "alice:s3cret", NULL);
	tool_stderr_after(sub, "zring: bound to ", addr, sizeof addr, WAIT_MS);

	/* A wrong password: refused at once, and nothing of it is printed. */
	struct tool *pub = tool_start(1, "publish", "queue", addr, "-c", "--name", "jobs",
	                              O("PLAIN_USERNAME=alice"), O("PLAIN_PASSWORD=guess"), NULL);
	tool_input(pub, "intruder\n", 9);
	int rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 2, "exit %d; stderr: %s", rc, pub->err);
	cr_assert(strstr(pub->err, "the handshake with") != NULL && strstr(pub->err, "400") != NULL,
	          "stderr: %s", pub->err);
	tool_stderr_after(sub, "zring: handshake failed on ", why, sizeof why, WAIT_MS);
	cr_assert(strstr(why, "wrong username or password") != NULL, "%s", why);

	pub = tool_start(2, "publish", "queue", addr, "-c", "--name", "jobs",
	                 O("PLAIN_USERNAME=alice"), O("PLAIN_PASSWORD=s3cret"), NULL);
	tool_input(pub, "one\ntwo\n", 8);
	rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, pub->err);
	rc = tool_wait(sub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, sub->err);
	cr_assert_str_eq(sub->out, "jobs\t\tone\njobs\t\ttwo\n");
	cr_assert(strstr(sub->out, "intruder") == NULL);
}
