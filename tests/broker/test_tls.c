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
#include "secure_util.h"
#include "tls/tls_test.h"

static struct tt_certs certs;

/* A path inside the certificate directory; 8 slots live at once. */
static const char *
cert(const char *name)
{
	return tt_path(&certs, name);
}

static void
setup(void)
{
	tt_certs_make(&certs);
	sec_open();
}

static void
teardown(void)
{
	sec_close();
	tt_certs_remove(&certs);
}

TestSuite(broker_tls, .init = setup, .fini = teardown);

/* ---- helpers ---- */

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

/* A bound address that is tls:// (LAST_ENDPOINT reads back the scheme). */
static void
bound_tls(zr_broker *b, char *addr, size_t cap)
{
	bu_bound(b, addr, cap);
	cr_assert(strncmp(addr, "tls://127.0.0.1:", 16) == 0, "bound to %s", addr);
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

	size_t first = fanout_orders(p, &log, "TLS");
	expect_sequence_at(&log, first, "orders.eu", "order-", N_MSGS);
	expect_no_more(&log, first + N_MSGS);
	cr_assert_eq(bu_log_count_named(&log, "other.eu"), 0);

	zr_broker_free(c);
	zr_publisher_free(p);
	zr_broker_free(s);
	bu_log_fini(&log);
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
	expect_echo(p, 20);

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

Test(broker_tls, cli_queue_over_tls)
{
	char addr[256], crt[160], key[160], ca[160], rogue[160];

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
	expect_cli_refused(pub, sub, "unknown CA", "unknown CA");

	/* The right CA: three lines, printed exactly. */
	pub = tool_start(2, "publish", "queue", addr, "-c", "--name", "jobs", O(ca), NULL);
	expect_cli_three(pub, sub);
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
