/*
 * The broker over tls:// (zr_broker_setsockopt with the ZR_TLS_* options):
 * queue, fan-out and RPC between two brokers; mutual TLS, where the bound
 * side's authenticator (PLAIN inside TLS) sees the publisher's certificate
 * subject and a publisher without a certificate is refused; a publisher
 * trusting the wrong CA failing with OpenSSL's reason; and `zring subscribe`
 * / `zring publish` with -o TLS_CERT/TLS_KEY/TLS_CA.
 *
 * Certificates come from tests/tls/make_certs.sh (the openssl command), in a
 * fresh directory per test: server.pem (CN=localhost, IP:127.0.0.1, by
 * ca.pem), client.pem (CN=client one,O=zring test, by ca.pem), and rogue.pem
 * (self-signed), which as a trust anchor is "the wrong CA".
 *
 * A handler's zr_delivery carries no User-Id (the broker does not expose
 * message properties), so the certificate subject is asserted through the
 * authenticator, which zr_broker_set_auth installs on the bound socket.
 */
#include "broker_util.h" /* first: _GNU_SOURCE */

#include <signal.h>
#include <stdio.h>

#include "tools/tool_proc.h"

#define N_MSGS 200

static zr_ctx *ctx;
static struct tool tools[3];
static char certs[64];

/* A path inside the certificate directory; 8 slots live at once. */
static const char *
cert(const char *name)
{
	static char slot[8][128];
	static unsigned next;
	char *p = slot[next++ % 8];

	snprintf(p, 128, "%s/%s", certs, name);
	return p;
}

static void
setup(void)
{
	char cmd[512];

	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 3; i++)
		tool_reset(&tools[i]);
	snprintf(certs, sizeof certs, "/tmp/zr-btls-XXXXXX");
	cr_assert_not_null(mkdtemp(certs));
	snprintf(cmd, sizeof cmd, "sh '%s/tests/tls/make_certs.sh' '%s' 2>'%s/make.log'",
	         ZR_SOURCE_DIR, certs, certs);
	cr_assert_eq(system(cmd), 0, "make_certs.sh failed, see %s/make.log", certs);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
}

static void
teardown(void)
{
	char cmd[128];

	for (int i = 0; i < 3; i++)
		tool_kill(&tools[i]);
	zr_ctx_free(ctx);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", certs);
	(void)!system(cmd);
}

TestSuite(broker_tls, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static zr_broker *
broker_new(int pattern, const char *ep, int side)
{
	zr_broker *b = NULL;

	cr_assert_eq(zr_broker_new(ctx, pattern, ep, side, &b), 0);
	return b;
}

static void
set_int(zr_broker *b, int option, int v)
{
	int rc = zr_broker_setsockopt(b, option, &v, sizeof v);

	cr_assert_eq(rc, 0, "option %d: %d %s", option, rc, zr_broker_error(b));
}

static void
set_str(zr_broker *b, int option, const char *v)
{
	int rc = zr_broker_setsockopt(b, option, v, strlen(v));

	cr_assert_eq(rc, 0, "option %d: %d %s", option, rc, zr_broker_error(b));
}

/* The bound side: server.pem; with mutual, it requires a client
 * certificate that chains to ca.pem. */
static void
tls_server(zr_broker *b, bool mutual)
{
	set_str(b, ZR_TLS_CERT, cert("server.pem"));
	set_str(b, ZR_TLS_KEY, cert("server.key"));
	if (mutual)
		set_str(b, ZR_TLS_CA, cert("ca.pem"));
}

/* The dialing side: trusts ca_name, offers NAME.pem when name is set. */
static void
tls_client(zr_broker *b, const char *ca_name, const char *name)
{
	char c[32], k[32];

	set_str(b, ZR_TLS_CA, cert(ca_name));
	if (name != NULL) {
		snprintf(c, sizeof c, "%s.pem", name);
		snprintf(k, sizeof k, "%s.key", name);
		set_str(b, ZR_TLS_CERT, cert(c));
		set_str(b, ZR_TLS_KEY, cert(k));
	}
}

static void
start(zr_broker *b)
{
	int rc = zr_broker_start(b);

	cr_assert_eq(rc, 0, "start: %d %s", rc, zr_broker_error(b));
}

static zr_publisher *
publisher(zr_broker *b)
{
	zr_publisher *p = NULL;

	cr_assert_eq(zr_publisher_new(b, &p), 0);
	return p;
}

/* A bound address that is tls:// (LAST_ENDPOINT reads back the scheme). */
static void
bound_tls(zr_broker *b, char *addr, size_t cap)
{
	bu_bound(b, addr, cap);
	cr_assert(strncmp(addr, "tls://127.0.0.1:", 16) == 0, "bound to %s", addr);
}

/* Publishes "<prefix><i>" for i in [0, n), each with a "seq: i" header. */
static void
publish_n(zr_publisher *p, const char *name, const char *prefix, int n)
{
	for (int i = 0; i < n; i++) {
		char payload[64], seq[16];
		struct zr_header h = {"seq", seq};
		int rc;

		snprintf(payload, sizeof payload, "%s%d", prefix, i);
		snprintf(seq, sizeof seq, "%d", i);
		rc = zr_publish(p, name, &h, 1, payload, strlen(payload), BU_WAIT_MS);
		cr_assert_eq(rc, 0, "publish %d: %d %s", i, rc, zr_publisher_error(p));
	}
}

/* The log holds exactly "<prefix><i>", i = 0..n-1, in order, named name,
 * from index first on. */
static void
expect_sequence_at(struct bu_log *log, size_t first, const char *name, const char *prefix, int n)
{
	cr_assert(bu_log_wait(log, first + (size_t)n, BU_WAIT_MS), "got %zu of %zu",
	          bu_log_count(log), first + (size_t)n);
	for (int i = 0; i < n; i++) {
		const struct bu_item *it = bu_log_at(log, first + (size_t)i);
		char payload[64], seq[16];

		snprintf(payload, sizeof payload, "%s%d", prefix, i);
		snprintf(seq, sizeof seq, "%d", i);
		cr_assert_str_eq(it->name, name);
		cr_assert_eq(it->payload_len, strlen(payload), "item %d", i);
		cr_assert_eq(memcmp(it->payload, payload, it->payload_len), 0, "item %d", i);
		cr_assert_str_eq(bu_item_header(it, "seq"), seq);
	}
}

static void
expect_no_more(struct bu_log *log, size_t n)
{
	cr_assert(!bu_log_wait(log, n + 1, BU_QUIET_MS), "got %zu, want %zu", bu_log_count(log), n);
}

/* Waits for a HANDSHAKE_FAILED_PROTOCOL event on s; its reason into why. */
static void
expect_handshake_failed(zr_socket *s, char *why, size_t cap)
{
	long long deadline = tool_now_ms() + BU_WAIT_MS;
	struct zr_event ev;

	for (;;) {
		int left = (int)(deadline - tool_now_ms());
		int rc;

		cr_assert_gt(left, 0, "no handshake failure");
		rc = zr_monitor_recv(s, &ev, left);
		cr_assert(rc == 0 || rc == -EAGAIN, "zr_monitor_recv %d", rc);
		if (rc != 0)
			continue;
		cr_assert_neq(ev.type, ZR_EVENT_HANDSHAKE_SUCCEEDED, "the handshake succeeded");
		if (ev.type == ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
			snprintf(why, cap, "%s", ev.reason);
			return;
		}
	}
}

/* ---- queue, fan-out, RPC ---- */

Test(broker_tls, queue_over_tls)
{
	struct bu_log log;
	char addr[256];

	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tls://127.0.0.1:0", ZR_BIND);
	tls_server(s, false);
	start(s);
	bu_sub(s, "jobs", &log);
	bound_tls(s, addr, sizeof addr);

	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	tls_client(c, "ca.pem", NULL);
	start(c);
	zr_publisher *p = publisher(c);
	publish_n(p, "jobs", "job-", N_MSGS);
	expect_sequence_at(&log, 0, "jobs", "job-", N_MSGS);
	expect_no_more(&log, N_MSGS);

	/* A large payload crosses many TLS records intact. */
	size_t big_len = 1u << 20;
	char *big = malloc(big_len);
	cr_assert_not_null(big);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)(i * 131u + 7u);
	cr_assert_eq(zr_publish(p, "jobs", NULL, 0, big, big_len, BU_WAIT_MS), 0, "%s",
	             zr_publisher_error(p));
	cr_assert(bu_log_wait(&log, N_MSGS + 1, BU_WAIT_MS));
	const struct bu_item *it = bu_log_at(&log, N_MSGS);
	cr_assert_eq(it->payload_len, big_len);
	cr_assert_eq(memcmp(it->payload, big, big_len), 0);
	free(big);

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_broker_free(s);
	bu_log_fini(&log);
}

Test(broker_tls, fanout_over_tls)
{
	struct bu_log log;
	char addr[256];

	bu_log_init(&log);
	/* The publishing broker binds (its PUB is the TLS server). */
	zr_broker *s = broker_new(ZR_FANOUT, "tls://127.0.0.1:0", ZR_BIND);
	tls_server(s, false);
	start(s);
	zr_publisher *p = publisher(s);
	cr_assert_eq(zr_publish(p, "none", NULL, 0, "x", 1, BU_WAIT_MS), 0, "%s",
	             zr_publisher_error(p));
	size_t len = sizeof addr;
	cr_assert_eq(zr_getsockopt(zr_publisher_socket(p), ZR_LAST_ENDPOINT, addr, &len), 0);
	cr_assert(strncmp(addr, "tls://127.0.0.1:", 16) == 0, "bound to %s", addr);

	zr_broker *c = broker_new(ZR_FANOUT, addr, ZR_CONNECT);
	tls_client(c, "ca.pem", NULL);
	start(c);
	bu_sub(c, "orders.", &log);

	/* Past the slow joiner: warm-up messages until one arrives. */
	long long deadline = tool_now_ms() + BU_WAIT_MS;
	while (bu_log_count(&log) == 0) {
		cr_assert(tool_now_ms() < deadline, "no warm-up message arrived over TLS");
		cr_assert_eq(zr_publish(p, "orders.warm", NULL, 0, "w", 1, BU_WAIT_MS), 0);
		bu_log_wait(&log, 1, 50);
	}
	publish_n(p, "orders.eu", "order-", N_MSGS);
	publish_n(p, "other.eu", "not-", 5); /* filtered out */
	deadline = tool_now_ms() + BU_WAIT_MS;
	while (bu_log_count_named(&log, "orders.eu") < N_MSGS) {
		cr_assert(tool_now_ms() < deadline, "got %zu orders of %d",
		          bu_log_count_named(&log, "orders.eu"), N_MSGS);
		bu_log_wait(&log, bu_log_count(&log) + 1, 100);
	}
	size_t first = 0;
	while (strcmp(bu_log_at(&log, first)->name, "orders.warm") == 0)
		first++;
	expect_sequence_at(&log, first, "orders.eu", "order-", N_MSGS);
	expect_no_more(&log, first + N_MSGS);
	cr_assert_eq(bu_log_count_named(&log, "other.eu"), 0);

	zr_broker_free(c);
	zr_publisher_free(p);
	zr_broker_free(s);
	bu_log_fini(&log);
}

struct responder {
	zr_publisher *p;
};

static void
respond_cb(const struct zr_delivery *d, void *arg)
{
	struct responder *r = arg;
	char buf[128];
	int n = snprintf(buf, sizeof buf, "re:%.*s", (int)d->payload_len, (const char *)d->payload);

	zr_reply(r->p, d, NULL, 0, buf, (size_t)n);
}

Test(broker_tls, rpc_over_mutual_tls)
{
	struct responder r;
	char addr[256];

	zr_broker *s = broker_new(ZR_RPC, "tls://127.0.0.1:0", ZR_BIND);
	tls_server(s, true);
	start(s);
	r.p = publisher(s);
	struct zr_sub_opts o = {.handler = respond_cb, .arg = &r};
	zr_subscription *sub = NULL;
	cr_assert_eq(zr_subscribe(s, "echo", &o, &sub), 0, "%s", zr_broker_error(s));
	bound_tls(s, addr, sizeof addr);

	zr_broker *c = broker_new(ZR_RPC, addr, ZR_CONNECT);
	tls_client(c, "ca.pem", "client");
	start(c);
	zr_publisher *p = publisher(c);
	for (int i = 0; i < 20; i++) {
		struct zr_delivery *reply = NULL;
		char req[32], want[40];
		int rc;

		snprintf(req, sizeof req, "ping-%d", i);
		snprintf(want, sizeof want, "re:ping-%d", i);
		rc = zr_request(p, "echo", NULL, 0, req, strlen(req), BU_WAIT_MS, &reply);
		cr_assert_eq(rc, 0, "request %d: %d %s", i, rc, zr_publisher_error(p));
		cr_assert_str_eq(reply->name, "reply");
		cr_assert_eq(reply->payload_len, strlen(want));
		cr_assert_eq(memcmp(reply->payload, want, reply->payload_len), 0);
		zr_delivery_free(reply);
	}

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_publisher_free(r.p);
	zr_broker_free(s);
}

/* ---- mutual TLS: who is admitted, and what the authenticator sees ---- */

struct auth_rec {
	pthread_mutex_t lock;
	int calls;
	char subject[300];
};

static int
auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct auth_rec *r = arg;

	pthread_mutex_lock(&r->lock);
	r->calls++;
	snprintf(r->subject, sizeof r->subject, "%s",
	         req->tls_subject != NULL ? req->tls_subject : "(none)");
	pthread_mutex_unlock(&r->lock);
	return 200;
}

Test(broker_tls, mutual_tls_authenticator_sees_subject)
{
	struct auth_rec rec = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct bu_log log;
	char addr[256], why[512];

	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tls://127.0.0.1:0", ZR_BIND);
	tls_server(s, true);
	/* No authenticator runs for NULL inside TLS (the CA is the admission
	 * check); PLAIN inside mutual TLS gives it the certificate's subject. */
	set_int(s, ZR_PLAIN_SERVER, 1);
	cr_assert_eq(zr_broker_set_auth(s, auth_cb, &rec), 0);
	start(s);
	zr_subscription *sub = bu_sub(s, "jobs", &log);
	cr_assert_eq(zr_socket_monitor(zr_subscription_socket(sub), ZR_EVENT_ALL), 0);
	bound_tls(s, addr, sizeof addr);

	/* Without a client certificate: refused in the TLS handshake, before
	 * any authenticator runs. */
	zr_broker *anon = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	tls_client(anon, "ca.pem", NULL);
	set_str(anon, ZR_PLAIN_USERNAME, "alice");
	set_str(anon, ZR_PLAIN_PASSWORD, "pw");
	start(anon);
	zr_publisher *pa = publisher(anon);
	int rc = zr_publish(pa, "jobs", NULL, 0, "anon", 4, BU_WAIT_MS);
	cr_assert_eq(rc, -EPROTO, "publish without a certificate: %d %s", rc,
	             zr_publisher_error(pa));
	cr_assert(strstr(zr_publisher_error(pa), "certificate required") != NULL, "%s",
	          zr_publisher_error(pa));
	expect_handshake_failed(zr_subscription_socket(sub), why, sizeof why);
	cr_assert(strstr(why, "no client certificate") != NULL, "%s", why);
	pthread_mutex_lock(&rec.lock);
	cr_assert_eq(rec.calls, 0);
	pthread_mutex_unlock(&rec.lock);

	/* With client.pem: admitted, the authenticator saw its subject. */
	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	tls_client(c, "ca.pem", "client");
	set_str(c, ZR_PLAIN_USERNAME, "alice");
	set_str(c, ZR_PLAIN_PASSWORD, "pw");
	start(c);
	zr_publisher *p = publisher(c);
	publish_n(p, "jobs", "m-", 50);
	expect_sequence_at(&log, 0, "jobs", "m-", 50);
	expect_no_more(&log, 50);
	pthread_mutex_lock(&rec.lock);
	cr_assert_eq(rec.calls, 1);
	cr_assert_str_eq(rec.subject, "CN=client one,O=zring test");
	pthread_mutex_unlock(&rec.lock);

	zr_publisher_free(pa);
	zr_publisher_free(p);
	zr_broker_free(anon);
	zr_broker_free(c);
	zr_broker_free(s);
	bu_log_fini(&log);
}

/* A publisher that trusts another CA: the publish fails with OpenSSL's
 * reason, the subscription sees the alert, and nothing is delivered. */
Test(broker_tls, wrong_ca_fails_with_reason)
{
	struct bu_log log;
	char addr[256], why[512];

	bu_log_init(&log);
	zr_broker *s = broker_new(ZR_QUEUE, "tls://127.0.0.1:0", ZR_BIND);
	tls_server(s, false);
	start(s);
	zr_subscription *sub = bu_sub(s, "jobs", &log);
	cr_assert_eq(zr_socket_monitor(zr_subscription_socket(sub), ZR_EVENT_ALL), 0);
	bound_tls(s, addr, sizeof addr);

	zr_broker *c = broker_new(ZR_QUEUE, addr, ZR_CONNECT);
	tls_client(c, "rogue.pem", NULL);
	start(c);
	zr_publisher *p = publisher(c);
	int rc = zr_publish(p, "jobs", NULL, 0, "secret", 6, BU_WAIT_MS);
	cr_assert_eq(rc, -EPROTO, "publish trusting the wrong CA: %d %s", rc,
	             zr_publisher_error(p));
	cr_assert(strstr(zr_publisher_error(p), "handshake") != NULL &&
	                  strstr(zr_publisher_error(p), addr) != NULL &&
	                  strstr(zr_publisher_error(p), "unknown CA") != NULL,
	          "%s", zr_publisher_error(p));
	expect_handshake_failed(zr_subscription_socket(sub), why, sizeof why);
	cr_assert(strstr(why, "alert received: unknown CA") != NULL, "%s", why);
	expect_no_more(&log, 0);

	zr_publisher_free(p);
	zr_broker_free(c);
	zr_broker_free(s);
	bu_log_fini(&log);
}

/* ---- the command line ---- */

static struct tool *
tool_start(int slot, const char *cmd, ...)
{
	struct tool *t = &tools[slot];
	va_list ap;

	va_start(ap, cmd);
	tool_vbegin(t, cmd, va_arg(ap, const char *), ap);
	va_end(ap);
	return t;
}

#define O(x) "-o", x

Test(broker_tls, cli_queue_over_tls)
{
	char addr[256], why[512], crt[160], key[160], ca[160], rogue[160];

	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
	snprintf(crt, sizeof crt, "TLS_CERT=%s", cert("server.pem"));
	snprintf(key, sizeof key, "TLS_KEY=%s", cert("server.key"));
	snprintf(ca, sizeof ca, "TLS_CA=%s", cert("ca.pem"));
	snprintf(rogue, sizeof rogue, "TLS_CA=%s", cert("rogue.pem"));

	struct tool *sub = tool_start(0, "subscribe", "queue", "tls://127.0.0.1:*", "-b", "-n", "3",
	                              O(crt), O(key), NULL);
	tool_stderr_after(sub, "zring: bound to ", addr, sizeof addr, WAIT_MS);
	cr_assert(strncmp(addr, "tls://127.0.0.1:", 16) == 0, "bound to %s", addr);

	/* The wrong CA: one line with the reason, exit 2; the subscriber says
	 * why too. */
	struct tool *pub =
		tool_start(1, "publish", "queue", addr, "-c", "--name", "jobs", O(rogue), NULL);
	tool_input(pub, "lost\n", 5);
	int rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 2, "exit %d; stderr: %s", rc, pub->err);
	cr_assert(strstr(pub->err, "the handshake with") != NULL &&
	                  strstr(pub->err, "unknown CA") != NULL &&
	                  tool_count_char(pub->err, pub->err_len, '\n') == 1,
	          "stderr: %s", pub->err);
	tool_stderr_after(sub, "zring: handshake failed on ", why, sizeof why, WAIT_MS);
	cr_assert(strstr(why, "unknown CA") != NULL, "%s", why);

	/* The right CA: three lines, printed exactly. */
	pub = tool_start(2, "publish", "queue", addr, "-c", "--name", "jobs", O(ca), NULL);
	tool_input(pub, "one\ntwo\nthree\n", 14);
	rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, pub->err);
	rc = tool_wait(sub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, sub->err);
	cr_assert_str_eq(sub->out, "jobs\t\tone\njobs\t\ttwo\njobs\t\tthree\n");
	cr_assert(strstr(sub->out, "lost") == NULL);
}

/* One broker doing both: its publisher dials its own tls:// subscription,
 * which it does not verify (no CA to trust it by, and "*" reads back as
 * 0.0.0.0, a name no certificate carries); with mutual TLS it presents the
 * broker's certificate, which the listener checks against the CA. */
static void
own_publisher(bool mutual, const char *ep)
{
	struct bu_log log;

	bu_log_init(&log);
	zr_broker *b = broker_new(ZR_QUEUE, ep, ZR_BIND);
	tls_server(b, mutual);
	start(b);
	bu_sub(b, "jobs", &log);
	zr_publisher *p = publisher(b);
	publish_n(p, "jobs", "own-", 20);
	expect_sequence_at(&log, 0, "jobs", "own-", 20);
	expect_no_more(&log, 20);
	zr_publisher_free(p);
	zr_broker_free(b);
	bu_log_fini(&log);
}

Test(broker_tls, own_publisher_on_mutual_tls_subscription)
{
	own_publisher(true, "tls://127.0.0.1:0");
}

Test(broker_tls, own_publisher_on_tls_subscription)
{
	own_publisher(false, "tls://*:0");
}
