/*
 * tls:// between zring sockets: every pattern family with the engine's
 * scenarios (exact messages, order and counts; payloads from empty frames to
 * 1 MiB), mutual TLS and the User-Id it gives, CURVE inside TLS, and each
 * handshake failure with its reason in the monitor event. Certificates come
 * from tests/tls/make_certs.sh (the openssl command), fresh per test.
 */
#include "engine/scenarios.h"
#include "tls/tls_test.h"

#include <sys/stat.h>

static struct tt_certs tw_certs;

static void
tw_init(void)
{
	tt_certs_make(&tw_certs);
}

static void
tw_fini(void)
{
	et_teardown();
	tt_certs_remove(&tw_certs);
}

static const char *
tw_path(const char *name)
{
	return tt_path(&tw_certs, name);
}

static void
tw_text(zr_socket *s, int opt, const char *v)
{
	int rc = zr_setsockopt(s, opt, v, strlen(v));

	cr_assert_eq(rc, 0, "setsockopt %d %s: %d", opt, v, rc);
}

/* A server presenting NAME.pem; with mutual, it requires a client
 * certificate from the test CA. */
static void
tw_server(zr_socket *s, const char *name, bool mutual)
{
	char f[64];

	snprintf(f, sizeof f, "%s.pem", name);
	tw_text(s, ZR_TLS_CERT, tw_path(f));
	snprintf(f, sizeof f, "%s.key", name);
	tw_text(s, ZR_TLS_KEY, tw_path(f));
	if (mutual)
		tw_text(s, ZR_TLS_CA, tw_path("ca.pem"));
}

/* A client trusting the test CA, offering NAME.pem when NAME is not NULL. */
static void
tw_client(zr_socket *s, const char *name)
{
	char f[64];

	tw_text(s, ZR_TLS_CA, tw_path("ca.pem"));
	if (name != NULL) {
		snprintf(f, sizeof f, "%s.pem", name);
		tw_text(s, ZR_TLS_CERT, tw_path(f));
		snprintf(f, sizeof f, "%s.key", name);
		tw_text(s, ZR_TLS_KEY, tw_path(f));
	}
}

/* Binds tls://127.0.0.1:* and checks LAST_ENDPOINT names it as tls://. */
static const char *
tw_bind(zr_socket *s)
{
	static char ep[256];
	size_t len = sizeof ep;

	cr_assert_eq(zr_bind(s, "tls://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert(strncmp(ep, "tls://127.0.0.1:", 16) == 0 && strcmp(ep, "tls://127.0.0.1:0") != 0,
	          "LAST_ENDPOINT is \"%s\"", ep);
	return ep;
}

/* The port of a tls://host:port endpoint. */
static int
tw_port(const char *ep)
{
	return atoi(strrchr(ep, ':') + 1);
}

/* Two zring sides over tls:// on two contexts, the binder the server. */
static void
tw_pair(struct et_side *a, int ta, const char *const *aopts, struct et_side *b, int tb,
        const char *const *bopts, bool a_binds)
{
	struct et_side *binder = a_binds ? a : b, *conn = a_binds ? b : a;
	char ep[256];

	memset(a, 0, sizeof *a);
	memset(b, 0, sizeof *b);
	a->type = ta;
	b->type = tb;
	a->name = a_binds ? "zring a (bound, tls)" : "zring a (connected, tls)";
	b->name = a_binds ? "zring b (connected, tls)" : "zring b (bound, tls)";
	binder->z = et_zopen(0, a_binds ? ta : tb);
	et_zapply(binder->z, a_binds ? aopts : bopts);
	tw_server(binder->z, "server", false);
	/* The name the certificate is checked against: localhost (DNS) here,
	 * 127.0.0.1 (IP) in the other tests. */
	snprintf(ep, sizeof ep, "tls://localhost:%d", tw_port(tw_bind(binder->z)));
	conn->z = et_zopen(1, a_binds ? tb : ta);
	et_zapply(conn->z, a_binds ? bopts : aopts);
	tw_client(conn->z, NULL);
	cr_assert_eq(zr_connect(conn->z, ep), 0, "connect %s", ep);
}

TestSuite(tls_wire, .init = tw_init, .fini = tw_fini, .timeout = 120);

#define TW_SELF(name, ta, oa, tb, ob, sc)               \
	Test(tls_wire, name##_a_binds)                  \
	{                                               \
		struct et_side a, b;                    \
		tw_pair(&a, ta, oa, &b, tb, ob, true);  \
		sc(&a, &b);                             \
	}                                               \
	Test(tls_wire, name##_b_binds)                  \
	{                                               \
		struct et_side a, b;                    \
		tw_pair(&a, ta, oa, &b, tb, ob, false); \
		sc(&a, &b);                             \
	}

TW_SELF(push_pull, ZR_PUSH, NULL, ZR_PULL, NULL, sc_pipeline)
TW_SELF(req_rep, ZR_REQ, NULL, ZR_REP, NULL, sc_req_rep)
TW_SELF(pub_sub, ZR_PUB, NULL, ZR_SUB, sc_opt_sub_a, sc_pub_sub)
TW_SELF(dealer_router, ZR_DEALER, sc_opt_d1, ZR_ROUTER, NULL, sc_dealer_router)

/* Many small messages and a few large ones, counted and checked byte for
 * byte: the batches that share TLS records and the ones that span many. */
Test(tls_wire, counts_small_and_large)
{
	enum {
		NSMALL = 20000,
		NLARGE = 40,
		LARGE = 200000
	};
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	static uint8_t big[LARGE], got[LARGE + 1];
	char ep[256];

	tw_server(pull, "server", false);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(push, NULL);
	cr_assert_eq(zr_connect(push, ep), 0);
	for (int i = 0; i < NSMALL; i++) {
		char m[16];
		int n = snprintf(m, sizeof m, "m%d", i);

		cr_assert_eq(zr_send_bytes(push, m, (size_t)n, 0), 0);
	}
	for (int i = 0; i < NLARGE; i++) {
		for (size_t k = 0; k < LARGE; k++)
			big[k] = (uint8_t)(k * 7 + (size_t)i);
		cr_assert_eq(zr_send_bytes(push, big, LARGE, 0), 0);
	}
	for (int i = 0; i < NSMALL; i++) {
		char want[16];
		int n = snprintf(want, sizeof want, "m%d", i);
		int rc = zr_recv_bytes(pull, got, sizeof got, 0);

		cr_assert_eq(rc, n, "small message %d: %d bytes", i, rc);
		cr_assert(memcmp(got, want, (size_t)n) == 0, "small message %d differs", i);
	}
	for (int i = 0; i < NLARGE; i++) {
		int rc = zr_recv_bytes(pull, got, sizeof got, 0);

		cr_assert_eq(rc, LARGE, "large message %d: %d bytes", i, rc);
		for (size_t k = 0; k < LARGE; k++)
			cr_assert_eq(got[k], (uint8_t)(k * 7 + (size_t)i), "large %d octet %zu", i,
			             k);
	}
	et_zopt_int(pull, ZR_RCVTIMEO, ET_QUIET_MS);
	cr_assert_eq(zr_recv_bytes(pull, got, sizeof got, 0), -EAGAIN);
}

/* Mutual TLS: the client certificate's subject is every message's User-Id;
 * the Peer-Address is still there. */
Test(tls_wire, mutual_tls_user_id)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256];
	zr_msg *m = NULL;
	const char *uid, *addr;

	tw_server(pull, "server", true);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(push, "client");
	cr_assert_eq(zr_connect(push, ep), 0);
	for (int i = 0; i < 3; i++) {
		size_t len;
		const void *f;

		cr_assert_eq(zr_send_bytes(push, "hello", 5, 0), 0);
		cr_assert_eq(zr_recv(pull, &m, 0), 0);
		f = zr_msg_frame(m, 0, &len);
		cr_assert(len == 5 && memcmp(f, "hello", 5) == 0);
		uid = zr_msg_gets(m, "User-Id");
		cr_assert_not_null(uid);
		cr_assert_str_eq(uid, "CN=client one,O=zring test");
		addr = zr_msg_gets(m, "Peer-Address");
		cr_assert_not_null(addr);
		/* The transport as the user wrote it, not the TCP under it. */
		cr_assert(strncmp(addr, "tls://127.0.0.1:", 16) == 0, "Peer-Address %s", addr);
		zr_msg_free(m);
		m = NULL;
	}
}

/* Without mutual TLS there is no User-Id from TLS. */
Test(tls_wire, no_user_id_without_client_cert)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256];
	zr_msg *m = NULL;
	const char *uid;

	tw_server(pull, "server", false);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(push, "client");
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "x", 1, 0), 0);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	uid = zr_msg_gets(m, "User-Id");
	cr_assert(uid == NULL || uid[0] == '\0', "User-Id %s", uid);
	zr_msg_free(m);
}

/* PLAIN inside mutual TLS: the authenticator sees the certificate's subject
 * beside the credentials; the user id it gives wins, and without one the
 * subject is the User-Id. */
static char tw_seen_subject[300];

static int
tw_auth(void *arg, struct zr_zmtp_auth_req *req)
{
	snprintf(tw_seen_subject, sizeof tw_seen_subject, "%s",
	         req->tls_subject != NULL ? req->tls_subject : "(null)");
	if (arg != NULL)
		snprintf(req->user_id, sizeof req->user_id, "%s", (const char *)arg);
	return 200;
}

static void
tw_plain_in_mutual_tls(const char *auth_user, const char *want_user_id)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256];
	zr_msg *m = NULL;
	int one = 1;

	cr_assert_eq(zr_setsockopt(pull, ZR_PLAIN_SERVER, &one, sizeof one), 0);
	cr_assert_eq(zr_socket_set_auth(pull, tw_auth, (void *)auth_user), 0);
	tw_server(pull, "server", true);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_text(push, ZR_PLAIN_USERNAME, "alice");
	tw_text(push, ZR_PLAIN_PASSWORD, "secret");
	tw_client(push, "client");
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "hi", 2, 0), 0);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert_str_eq(tw_seen_subject, "CN=client one,O=zring test");
	cr_assert_str_eq(zr_msg_gets(m, "User-Id"), want_user_id);
	zr_msg_free(m);
}

Test(tls_wire, authenticator_sees_subject_its_user_id_wins)
{
	tw_plain_in_mutual_tls("alice", "alice");
}

Test(tls_wire, authenticator_without_user_id_leaves_the_subject)
{
	tw_plain_in_mutual_tls(NULL, "CN=client one,O=zring test");
}

/* CURVE inside TLS: both mechanisms' handshakes, then traffic both ways. */
Test(tls_wire, curve_inside_tls)
{
	char spub[ZR_CURVE_KEY_Z85_LEN + 1], ssec[ZR_CURVE_KEY_Z85_LEN + 1];
	char cpub[ZR_CURVE_KEY_Z85_LEN + 1], csec[ZR_CURVE_KEY_Z85_LEN + 1];
	struct et_side a = {.name = "zring DEALER (curve+tls)", .type = ZR_DEALER};
	struct et_side b = {.name = "zring ROUTER (curve+tls)", .type = ZR_ROUTER};
	int one = 1;
	char ep[256];

	cr_assert_eq(zr_curve_keypair(spub, ssec), 0);
	cr_assert_eq(zr_curve_keypair(cpub, csec), 0);
	b.z = et_zopen(0, ZR_ROUTER);
	cr_assert_eq(zr_setsockopt(b.z, ZR_CURVE_SERVER, &one, sizeof one), 0);
	cr_assert_eq(zr_setsockopt(b.z, ZR_CURVE_SECRETKEY, ssec, ZR_CURVE_KEY_Z85_LEN), 0);
	tw_server(b.z, "server", false);
	snprintf(ep, sizeof ep, "%s", tw_bind(b.z));
	a.z = et_zopen(1, ZR_DEALER);
	et_zapply(a.z, sc_opt_d1);
	cr_assert_eq(zr_setsockopt(a.z, ZR_CURVE_SERVERKEY, spub, ZR_CURVE_KEY_Z85_LEN), 0);
	cr_assert_eq(zr_setsockopt(a.z, ZR_CURVE_PUBLICKEY, cpub, ZR_CURVE_KEY_Z85_LEN), 0);
	cr_assert_eq(zr_setsockopt(a.z, ZR_CURVE_SECRETKEY, csec, ZR_CURVE_KEY_Z85_LEN), 0);
	tw_client(a.z, NULL);
	cr_assert_eq(zr_connect(a.z, ep), 0);
	sc_dealer_router(&a, &b);
}

/* ---- failures ------------------------------------------------------------------ */

TestSuite(tls_fail, .init = tw_init, .fini = tw_fini, .timeout = 60);

/*
 * Waits for a HANDSHAKE_FAILED_PROTOCOL event on s and checks its reason
 * whole: the peer's address as "<scheme>://127.0.0.1:<port>" (tls:// on a
 * TLS connection, so the reason names the transport the user wrote), then
 * exactly rest (OpenSSL's reason in words, or ours).
 */
static void
tw_expect_fail(zr_socket *s, const char *who, const char *scheme, const char *rest)
{
	uint64_t deadline = zt_now_ms() + ET_WAIT_MS;
	struct zr_event ev;
	char prefix[32];

	snprintf(prefix, sizeof prefix, "%s://127.0.0.1:", scheme);
	for (;;) {
		int left = (int)(deadline - zt_now_ms());
		const char *p;
		int rc;

		cr_assert_gt(left, 0, "%s: no handshake failure saying \"%s\"", who, rest);
		rc = zr_monitor_recv(s, &ev, left);
		cr_assert(rc == 0 || rc == -EAGAIN, "%s: zr_monitor_recv %d", who, rc);
		if (rc != 0)
			continue;
		if (ev.type == ZR_EVENT_HANDSHAKE_SUCCEEDED)
			cr_assert_fail("%s: handshake succeeded, want a failure saying \"%s\"", who,
			               rest);
		if (ev.type != ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL)
			continue;
		p = ev.reason;
		cr_assert(strncmp(p, prefix, strlen(prefix)) == 0, "%s: reason \"%s\", want %s...",
		          who, ev.reason, prefix);
		p += strlen(prefix);
		cr_assert(*p >= '1' && *p <= '9', "%s: reason \"%s\": no port", who, ev.reason);
		while (*p >= '0' && *p <= '9')
			p++;
		cr_assert_str_eq(p, rest, "%s: reason \"%s\"", who, ev.reason);
		return;
	}
}

/*
 * A server presenting server_cert (mutual: requiring a client certificate)
 * and a client offering client_cert; each side's handshake failure must
 * say srv_why / cli_why (NULL: not checked). A second, good client on the
 * same server is served meanwhile: one failure closes only its connection.
 */
static void
tw_failure(const char *server_cert, bool mutual, const char *client_cert, const char *srv_why,
           const char *cli_why)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *bad = et_zopen(1, ZR_PUSH),
		  *good = et_zopen(1, ZR_PUSH);
	char ep[256];
	char buf[16];

	tw_server(pull, server_cert, mutual);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_socket_monitor(bad, ZR_EVENT_ALL), 0);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(bad, client_cert);
	cr_assert_eq(zr_connect(bad, ep), 0);
	if (srv_why != NULL)
		tw_expect_fail(pull, "server", "tls", srv_why);
	if (cli_why != NULL)
		tw_expect_fail(bad, "client", "tls", cli_why);
	/* The good client: trusts everything the server may present, with the
	 * certificate a mutual server wants. */
	cr_assert_eq(zr_setsockopt(good, ZR_TLS_VERIFY, &(int){0}, sizeof(int)), 0);
	if (mutual)
		tw_client(good, "client");
	cr_assert_eq(zr_connect(good, ep), 0);
	cr_assert_eq(zr_send_bytes(good, "fine", 4, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 4);
	cr_assert(memcmp(buf, "fine", 4) == 0);
	/* Nothing came through the failed connection. */
	et_zopt_int(pull, ZR_RCVTIMEO, ET_QUIET_MS);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), -EAGAIN);
}

Test(tls_fail, unknown_ca)
{
	tw_failure("rogue", false, NULL, ": alert received: unknown CA (tlsv1 alert unknown ca)",
	           ": unknown CA: self-signed certificate");
}

Test(tls_fail, name_mismatch)
{
	tw_failure(
		"other", false, NULL,
		": alert received: bad certificate (sslv3 alert bad certificate)",
		": name mismatch: IP address mismatch (the certificate is not for \"127.0.0.1\")");
}

Test(tls_fail, expired)
{
	tw_failure("expired", false, NULL,
	           ": alert received: certificate expired (sslv3 alert certificate expired)",
	           ": certificate expired: certificate has expired");
}

Test(tls_fail, no_client_certificate)
{
	tw_failure("server", true, NULL,
	           ": no client certificate: this server requires one (peer did not return a "
	           "certificate)",
	           ": alert received: certificate required (tlsv13 alert certificate required)");
}

/* A client certificate that no CA of the server vouches for (self-signed). */
Test(tls_fail, client_cert_unknown_ca)
{
	tw_failure("server", true, "rogue", ": unknown CA: self-signed certificate",
	           ": alert received: unknown CA (tlsv1 alert unknown ca)");
}

/* A plain ZMTP client on a tls:// endpoint. */
Test(tls_fail, plain_peer_on_tls_endpoint)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256], tcp[256];

	tw_server(pull, "server", false);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	snprintf(tcp, sizeof tcp, "tcp://%s", ep + 6);
	cr_assert_eq(zr_connect(push, tcp), 0);
	tw_expect_fail(pull, "tls server", "tls", ": not TLS: peer speaks plain ZMTP, not TLS");
	/* The plain side sees a hang-up on its greeting, and is told TLS is a
	 * possible cause. */
	tw_expect_fail(push, "tcp client", "tcp",
	               " closed the connection on our greeting without completing its own: most "
	               "likely it uses another security mechanism (ours is NULL), or it is a "
	               "tls:// endpoint");
}

/* A TLS client on a plain tcp:// endpoint: both sides say what happened. */
Test(tls_fail, tls_peer_on_plain_endpoint)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256], tls[256];
	size_t len = sizeof ep;

	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(pull, ZR_LAST_ENDPOINT, ep, &len), 0);
	snprintf(tls, sizeof tls, "tls://%s", ep + 6);
	tw_client(push, NULL);
	cr_assert_eq(zr_connect(push, tls), 0);
	tw_expect_fail(pull, "tcp server", "tcp",
	               ": peer speaks TLS, this endpoint is plain tcp://");
	tw_expect_fail(push, "tls client", "tls", ": not TLS: peer speaks plain ZMTP, not TLS");
}

/* ---- options -------------------------------------------------------------------- */

TestSuite(tls_options, .init = tw_init, .fini = tw_fini, .timeout = 60);

Test(tls_options, read_back_and_refusals)
{
	zr_socket *s = et_zopen(0, ZR_PULL);
	char buf[256];
	size_t len = sizeof buf;
	int v;

	/* Defaults: clients verify, TLS 1.3. */
	len = sizeof v;
	cr_assert_eq(zr_getsockopt(s, ZR_TLS_VERIFY, &v, &len), 0);
	cr_assert_eq(v, 1);
	len = sizeof v;
	cr_assert_eq(zr_getsockopt(s, ZR_TLS_VERSION_MIN, &v, &len), 0);
	cr_assert_eq(v, ZR_TLS_V13);
	et_zopt_int(s, ZR_TLS_VERSION_MIN, ZR_TLS_V12);
	v = 11;
	cr_assert_eq(zr_setsockopt(s, ZR_TLS_VERSION_MIN, &v, sizeof v), -EINVAL);
	v = 2;
	cr_assert_eq(zr_setsockopt(s, ZR_TLS_VERIFY, &v, sizeof v), -EINVAL);
	tw_text(s, ZR_TLS_SERVER_NAME, "example.org");
	len = sizeof buf;
	cr_assert_eq(zr_getsockopt(s, ZR_TLS_SERVER_NAME, buf, &len), 0);
	cr_assert_str_eq(buf, "example.org");
	/* The key is set only. */
	tw_text(s, ZR_TLS_KEY, tw_path("server.key"));
	len = sizeof buf;
	cr_assert_eq(zr_getsockopt(s, ZR_TLS_KEY, buf, &len), -EINVAL);
	/* A tls:// bind without a certificate, or with a missing file, fails
	 * at once. */
	cr_assert_eq(zr_bind(s, "tls://127.0.0.1:*"), -EINVAL);
	tw_text(s, ZR_TLS_CERT, tw_path("missing.pem"));
	cr_assert_lt(zr_bind(s, "tls://127.0.0.1:*"), 0);
	/* tls:// takes tcp://'s address forms, and nothing malformed. */
	cr_assert_eq(zr_connect(s, "tls://127.0.0.1"), -EINVAL);
	cr_assert_eq(zr_connect(s, "tls://127.0.0.1:*"), -EINVAL);
}

/* The certificate and key as PEM text instead of paths. */
Test(tls_options, pem_text)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256], buf[8];
	char *pem[3];
	const char *names[3] = {"server.pem", "server.key", "ca.pem"};

	for (int i = 0; i < 3; i++) {
		FILE *f = fopen(tw_path(names[i]), "r");
		size_t n;

		cr_assert_not_null(f);
		pem[i] = calloc(1, 65536);
		n = fread(pem[i], 1, 65535, f);
		fclose(f);
		cr_assert_gt(n, 0);
	}
	tw_text(pull, ZR_TLS_CERT, pem[0]);
	tw_text(pull, ZR_TLS_KEY, pem[1]);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_text(push, ZR_TLS_CA, pem[2]);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "pem", 3, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 3);
	cr_assert(memcmp(buf, "pem", 3) == 0);
	for (int i = 0; i < 3; i++)
		free(pem[i]);
}

/* LINGER through TLS: a PUSH closed right after its sends still delivers
 * every message (its batches, the session's stage and ring, close_notify
 * before FIN). */
Test(tls_wire, linger_delivers_everything)
{
	enum {
		N = 5000
	};
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256], buf[64];

	tw_server(pull, "server", false);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(push, NULL);
	et_zopt_int(push, ZR_LINGER, 30000);
	cr_assert_eq(zr_connect(push, ep), 0);
	for (int i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof buf, "linger %d", i);

		cr_assert_eq(zr_send_bytes(push, buf, (size_t)n, 0), 0);
	}
	et_zclose(push);
	for (int i = 0; i < N; i++) {
		char want[64];
		int n = snprintf(want, sizeof want, "linger %d", i);
		int rc = zr_recv_bytes(pull, buf, sizeof buf, 0);

		cr_assert_eq(rc, n, "message %d: %d", i, rc);
		cr_assert(memcmp(buf, want, (size_t)n) == 0, "message %d differs", i);
	}
}

/* Heartbeats through TLS: PINGs and PONGs keep an idle connection up past
 * many HEARTBEAT_TIMEOUTs; no DISCONNECTED, and it still carries data. */
Test(tls_wire, heartbeats_keep_an_idle_link)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	char ep[256], buf[8];
	struct zr_event ev;
	int rc;

	et_zopt_int(pull, ZR_HEARTBEAT_IVL, 50);
	et_zopt_int(pull, ZR_HEARTBEAT_TIMEOUT, 300);
	et_zopt_int(push, ZR_HEARTBEAT_IVL, 50);
	et_zopt_int(push, ZR_HEARTBEAT_TIMEOUT, 300);
	tw_server(pull, "server", false);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_DISCONNECTED), 0);
	snprintf(ep, sizeof ep, "%s", tw_bind(pull));
	tw_client(push, NULL);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "a", 1, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 1);
	rc = zr_monitor_recv(push, &ev, 2000); /* ~6 timeouts of idleness */
	cr_assert_eq(rc, -EAGAIN, "event %#x (%s) while idle", ev.type, ev.reason);
	cr_assert_eq(zr_send_bytes(push, "b", 1, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 1);
	cr_assert_eq(buf[0], 'b');
}
