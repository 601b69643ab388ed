/*
 * Every socket type pair under load from app threads, over tcp:// and ipc://
 * loopback, all at once: the binding sockets on one context, the connecting
 * ones on another (two io threads), one app thread per socket.
 *
 *   PUSH x2 -> PULL        every message once, each sender's in order
 *   PUSH -> PULL           the receiver polls zr_socket_fd and never blocks in zring
 *   CURVE PUSH x2 -> PULL  (tcp) encrypted, each client passed by an authenticator
 *                          the io thread runs; every message carries its User-Id
 *   PUB -> SUB x2          PUB_BLOCK: each subscriber gets every message, in order
 *   XSUB -> XPUB -> XSUB   the subscription reaches XPUB's app, then the
 *                          messages, then the unsubscription
 *   REQ x2 <-> REP         every request answered with its own payload
 *   DEALER x2 <-> ROUTER   a window of requests in flight, each echoed to its sender
 *   PAIR <-> PAIR          both ends send and receive at once
 *
 * Each check is an exact count; the program exits 1 on the first wrong one.
 * With "caller-io" as the first argument both contexts are ZR_CTX_CALLER_IO:
 * the same counts while app threads run the io by turns.
 */
#include "stress.h"

#define N 3000u    /* messages per sender */
#define NREQ 600u  /* REQ round trips per client */
#define WINDOW 32u /* DEALER requests in flight */

static zr_ctx *ctx_bind, *ctx_conn;

/* One app thread driving one socket. */
struct actor {
	zr_socket *s;
	uint32_t id; /* the sender id its payloads carry */
	enum st_transport t;
	pthread_t th;
};

static void
actor_run(struct actor *a, zr_socket *s, uint32_t id, enum st_transport t, void *(*fn)(void *))
{
	a->s = s;
	a->id = id;
	a->t = t;
	st_thread(&a->th, fn, a);
}

/* Closes the actor's socket once every thread is joined (LINGER 0: what the
 * checks wanted has arrived; a sender's socket closed earlier could drop
 * what its peer still has to receive). */
static void
actor_close(struct actor *a)
{
	st_opt(a->s, ZR_LINGER, 0);
	zr_socket_close(a->s);
}

/* Ends a receiver: nothing beyond what was counted is waiting. */
static void
expect_nothing_more(zr_socket *s, uint8_t *buf, const char *what)
{
	int rc = zr_recv_bytes(s, buf, ST_MAXLEN, ZR_DONTWAIT);

	ST_CHECK(rc == -EAGAIN, "%s: a message beyond the count (%d)", what, rc);
}

/* ---- PUSH x2 -> PULL ---------------------------------------------------------- */

static void *
push_main(void *arg)
{
	struct actor *a = arg;

	st_send_n(a->s, a->id, N, "push");
	return NULL;
}

static void *
pull_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint32_t next[2] = {0, 0};

	for (uint32_t n = 0; n < 2 * N; n++) {
		uint32_t sender, seq;

		st_recv_payload(a->s, buf, "pull", &sender, &seq);
		ST_CHECK(sender < 2, "pull: sender %u", sender);
		ST_CHECK(seq == next[sender], "pull %s: sender %u seq %u, want %u",
		         st_transport_name(a->t), sender, seq, next[sender]);
		next[sender]++;
	}
	expect_nothing_more(a->s, buf, "pull");
	free(buf);
	return NULL;
}

static void
pipeline_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *pull = st_socket(ctx_bind, ZR_PULL), *push[2];

	st_bind(pull, t, ep, sizeof ep);
	for (uint32_t i = 0; i < 2; i++) {
		push[i] = st_socket(ctx_conn, ZR_PUSH);
		ST_OK(zr_connect(push[i], ep));
	}
	actor_run(&a[0], pull, 0, t, pull_main);
	actor_run(&a[1], push[0], 0, t, push_main);
	actor_run(&a[2], push[1], 1, t, push_main);
}

/* ---- PUSH -> PULL read through zr_socket_fd ------------------------------------ */

/* The receiver never blocks in zring: it polls the socket's fd and takes
 * what is there with ZR_DONTWAIT, as an event loop would. A wake the engine
 * loses leaves it polling until the timeout: a failed count. */
static void *
pollpull_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	struct pollfd p = {.fd = zr_socket_fd(a->s), .events = POLLIN};
	uint32_t next = 0;

	while (next < N) {
		uint32_t sender, seq;
		int rc = zr_recv_bytes(a->s, buf, ST_MAXLEN, ZR_DONTWAIT);

		if (rc == -EAGAIN) {
			rc = poll(&p, 1, ST_WAIT_MS);
			ST_CHECK(rc == 1, "pollpull %s: no wake after %u", st_transport_name(a->t),
			         next);
			continue;
		}
		ST_CHECK(rc >= 0, "pollpull: receive: %s", zr_strerror(rc));
		st_payload_check(buf, (size_t)rc, &sender, &seq);
		ST_CHECK(seq == next, "pollpull: seq %u, want %u", seq, next);
		next++;
	}
	expect_nothing_more(a->s, buf, "pollpull");
	free(buf);
	return NULL;
}

static void
pollpull_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *pull = st_socket(ctx_conn, ZR_PULL), *push = st_socket(ctx_bind, ZR_PUSH);

	/* A small queue, so the receiver drains it to empty again and again. */
	st_opt(pull, ZR_RCVHWM, 16);
	st_bind(push, t, ep, sizeof ep);
	ST_OK(zr_connect(pull, ep));
	actor_run(&a[0], pull, 0, t, pollpull_main);
	actor_run(&a[1], push, 0, t, push_main);
}

/* ---- CURVE: PUSH x2 -> PULL with an authenticator ---------------------------------- */

#define NCURVE (N / 3u)

static atomic_uint auth_calls;

/* Runs on the io thread of the binding context for every client handshake;
 * the app threads read what it counted. */
static int
curve_auth(void *arg, struct zr_zmtp_auth_req *req)
{
	unsigned n = atomic_fetch_add((atomic_uint *)arg, 1);

	if (req->mechanism != ZR_MECH_CURVE || req->client_key == NULL)
		return 400;
	snprintf(req->user_id, sizeof req->user_id, "client-%u", n);
	return 200;
}

static void *
curve_pull_main(void *arg)
{
	struct actor *a = arg;
	uint32_t next[2] = {0, 0};

	for (uint32_t n = 0; n < 2 * NCURVE; n++) {
		zr_msg *m;
		size_t len;
		uint32_t sender, seq;
		int rc = zr_recv(a->s, &m, 0);

		ST_CHECK(rc == 0, "curve pull: receive after %u: %s", n, zr_strerror(rc));
		const char *uid = zr_msg_gets(m, "User-Id");

		ST_CHECK(uid != NULL && strncmp(uid, "client-", 7) == 0, "curve: User-Id %s",
		         uid ? uid : "NULL");
		const void *body = zr_msg_frame(m, 0, &len);

		st_payload_check(body, len, &sender, &seq);
		ST_CHECK(sender < 2 && seq == next[sender], "curve pull: (%u, %u)", sender, seq);
		next[sender]++;
		zr_msg_free(m);
	}
	ST_CHECK(atomic_load(&auth_calls) == 2, "curve: %u authenticator calls, want 2",
	         atomic_load(&auth_calls));
	return NULL;
}

static void *
curve_push_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();

	for (uint32_t i = 0; i < NCURVE; i++)
		st_send_payload(a->s, buf, a->id, i, "curve push");
	free(buf);
	return NULL;
}

static void
curve_start(struct actor *a, enum st_transport t)
{
	char ep[128], spub[ZR_CURVE_KEY_Z85_LEN + 1], ssec[ZR_CURVE_KEY_Z85_LEN + 1];
	zr_socket *pull = st_socket(ctx_bind, ZR_PULL);

	ST_OK(zr_curve_keypair(spub, ssec));
	st_opt(pull, ZR_CURVE_SERVER, 1);
	ST_OK(zr_setsockopt(pull, ZR_CURVE_SECRETKEY, ssec, ZR_CURVE_KEY_Z85_LEN));
	ST_OK(zr_socket_set_auth(pull, curve_auth, &auth_calls));
	st_bind(pull, t, ep, sizeof ep);
	actor_run(&a[0], pull, 0, t, curve_pull_main);
	for (uint32_t i = 0; i < 2; i++) {
		char cpub[ZR_CURVE_KEY_Z85_LEN + 1], csec[ZR_CURVE_KEY_Z85_LEN + 1];
		zr_socket *push = st_socket(ctx_conn, ZR_PUSH);

		ST_OK(zr_curve_keypair(cpub, csec));
		ST_OK(zr_setsockopt(push, ZR_CURVE_PUBLICKEY, cpub, ZR_CURVE_KEY_Z85_LEN));
		ST_OK(zr_setsockopt(push, ZR_CURVE_SECRETKEY, csec, ZR_CURVE_KEY_Z85_LEN));
		ST_OK(zr_setsockopt(push, ZR_CURVE_SERVERKEY, spub, ZR_CURVE_KEY_Z85_LEN));
		ST_OK(zr_connect(push, ep));
		actor_run(&a[1 + i], push, i, t, curve_push_main);
	}
}

/* ---- PUB -> SUB x2 ------------------------------------------------------------ */

/* The publisher sends "w" (warm-up) messages until both subscribers have
 * seen one, so both are subscribed before the counted "d" messages; with
 * PUB_BLOCK none of those is dropped. */
struct fanout {
	atomic_int ready; /* subscribers that saw a warm-up message */
};

static struct fanout fan[2];

static void *
pub_main(void *arg)
{
	struct actor *a = arg;
	struct fanout *f = &fan[a->t];
	uint8_t *buf = st_buf();
	uint64_t until = zt_now_ms() + ST_WAIT_MS;

	while (atomic_load(&f->ready) < 2) {
		ST_CHECK(zt_now_ms() < until, "pub: subscribers never saw a warm-up message");
		ST_OK(zr_send_bytes(a->s, "w", 1, 0));
		zt_sleep_ms(2);
	}
	for (uint32_t i = 0; i < N; i++) {
		size_t len = st_payload(buf, a->id, i);
		zr_msg *m;

		/* Two frames: the topic "d", then the payload. */
		ST_OK(zr_msg_new(&m));
		ST_OK(zr_msg_add(m, "d", 1));
		ST_OK(zr_msg_add(m, buf, len));
		ST_OK(zr_send(a->s, &m, 0));
	}
	free(buf);
	return NULL;
}

static void *
sub_main(void *arg)
{
	struct actor *a = arg;
	struct fanout *f = &fan[a->t];
	uint32_t next = 0;
	bool warm = false;

	while (next < N) {
		zr_msg *m;
		size_t len0, len1;
		int rc = zr_recv(a->s, &m, 0);
		uint32_t sender, seq;

		ST_CHECK(rc == 0, "sub %s: receive after %u: %s", st_transport_name(a->t), next,
		         zr_strerror(rc));
		const uint8_t *topic = zr_msg_frame(m, 0, &len0);

		if (len0 == 1 && topic[0] == 'w') {
			ST_CHECK(zr_msg_frames(m) == 1, "sub: warm-up of %zu frames",
			         zr_msg_frames(m));
			if (!warm)
				atomic_fetch_add(&f->ready, 1);
			warm = true;
			zr_msg_free(m);
			continue;
		}
		ST_CHECK(warm && len0 == 1 && topic[0] == 'd' && zr_msg_frames(m) == 2,
		         "sub: unexpected message (%zu frames)", zr_msg_frames(m));
		const uint8_t *body = zr_msg_frame(m, 1, &len1);

		st_payload_check(body, len1, &sender, &seq);
		ST_CHECK(seq == next, "sub %s: seq %u, want %u", st_transport_name(a->t), seq,
		         next);
		next++;
		zr_msg_free(m);
	}
	return NULL;
}

static void
fanout_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *pub = st_socket(ctx_bind, ZR_PUB);

	st_opt(pub, ZR_PUB_POLICY, ZR_PUB_BLOCK);
	st_bind(pub, t, ep, sizeof ep);
	for (int i = 0; i < 2; i++) {
		zr_socket *sub = st_socket(ctx_conn, ZR_SUB);

		ST_OK(zr_setsockopt(sub, ZR_SUBSCRIBE, "", 0));
		ST_OK(zr_connect(sub, ep));
		actor_run(&a[1 + i], sub, 0, t, sub_main);
	}
	actor_run(&a[0], pub, 0, t, pub_main);
}

/* ---- XSUB <-> XPUB ------------------------------------------------------------ */

static void *
xpub_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	int rc;

	/* The subscription arrives as a message, "\x01" + topic "x". */
	rc = zr_recv_bytes(a->s, buf, ST_MAXLEN, 0);
	ST_CHECK(rc == 2 && buf[0] == 1 && buf[1] == 'x', "xpub: subscription: %d", rc);
	for (uint32_t i = 0; i < N; i++) {
		zr_msg *m;
		size_t len = st_payload(buf, a->id, i);

		ST_OK(zr_msg_new(&m));
		ST_OK(zr_msg_add(m, "x", 1));
		ST_OK(zr_msg_add(m, buf, len));
		ST_OK(zr_send(a->s, &m, 0));
	}
	/* The subscriber's unsubscription, once it had everything. */
	rc = zr_recv_bytes(a->s, buf, ST_MAXLEN, 0);
	ST_CHECK(rc == 2 && buf[0] == 0 && buf[1] == 'x', "xpub: unsubscription: %d", rc);
	expect_nothing_more(a->s, buf, "xpub");
	free(buf);
	return NULL;
}

static void *
xsub_main(void *arg)
{
	struct actor *a = arg;

	ST_OK(zr_send_bytes(a->s, "\x01x", 2, 0));
	for (uint32_t next = 0; next < N; next++) {
		zr_msg *m;
		size_t len;
		uint32_t sender, seq;
		int rc = zr_recv(a->s, &m, 0);

		ST_CHECK(rc == 0, "xsub %s: receive after %u: %s", st_transport_name(a->t), next,
		         zr_strerror(rc));
		ST_CHECK(zr_msg_frames(m) == 2, "xsub: %zu frames", zr_msg_frames(m));
		const uint8_t *body = zr_msg_frame(m, 1, &len);

		st_payload_check(body, len, &sender, &seq);
		ST_CHECK(seq == next, "xsub: seq %u, want %u", seq, next);
		zr_msg_free(m);
	}
	ST_OK(zr_send_bytes(a->s, "\x00x", 2, 0));
	return NULL;
}

static void
xpubsub_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *xpub = st_socket(ctx_conn, ZR_XPUB), *xsub = st_socket(ctx_bind, ZR_XSUB);

	/* The other way round from the rest: the publisher binds on the
	 * connecting context. */
	st_opt(xpub, ZR_PUB_POLICY, ZR_PUB_BLOCK);
	st_bind(xpub, t, ep, sizeof ep);
	ST_OK(zr_connect(xsub, ep));
	actor_run(&a[0], xpub, 0, t, xpub_main);
	actor_run(&a[1], xsub, 0, t, xsub_main);
}

/* ---- REQ x2 <-> REP ------------------------------------------------------------ */

static void *
req_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();

	for (uint32_t i = 0; i < NREQ; i++) {
		uint32_t sender, seq;

		st_send_payload(a->s, buf, a->id, i, "req");
		st_recv_payload(a->s, buf, "req", &sender, &seq);
		ST_CHECK(sender == a->id && seq == i, "req %u: reply (%u, %u) to request %u", a->id,
		         sender, seq, i);
	}
	free(buf);
	return NULL;
}

static void *
rep_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint32_t next[2] = {0, 0};

	for (uint32_t n = 0; n < 2 * NREQ; n++) {
		uint32_t sender, seq;
		size_t len = st_recv_payload(a->s, buf, "rep", &sender, &seq);

		ST_CHECK(sender < 2 && seq == next[sender], "rep: request (%u, %u)", sender, seq);
		next[sender]++;
		ST_OK(zr_send_bytes(a->s, buf, len, 0));
	}
	expect_nothing_more(a->s, buf, "rep");
	free(buf);
	return NULL;
}

static void
reqrep_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *rep = st_socket(ctx_bind, ZR_REP);

	st_bind(rep, t, ep, sizeof ep);
	actor_run(&a[0], rep, 0, t, rep_main);
	for (uint32_t i = 0; i < 2; i++) {
		zr_socket *req = st_socket(ctx_conn, ZR_REQ);

		ST_OK(zr_connect(req, ep));
		actor_run(&a[1 + i], req, i, t, req_main);
	}
}

/* ---- DEALER x2 <-> ROUTER ------------------------------------------------------ */

static void *
dealer_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint32_t sent = 0, got = 0;

	while (got < N) {
		uint32_t sender, seq;

		if (sent < N && sent - got < WINDOW) {
			st_send_payload(a->s, buf, a->id, sent++, "dealer");
			continue;
		}
		st_recv_payload(a->s, buf, "dealer", &sender, &seq);
		ST_CHECK(sender == a->id && seq == got, "dealer %u: echo (%u, %u), want %u", a->id,
		         sender, seq, got);
		got++;
	}
	expect_nothing_more(a->s, buf, "dealer");
	free(buf);
	return NULL;
}

static void *
router_main(void *arg)
{
	struct actor *a = arg;
	uint32_t next[2] = {0, 0};

	for (uint32_t n = 0; n < 2 * N; n++) {
		zr_msg *m;
		size_t rlen, len;
		uint32_t sender, seq;
		int rc = zr_recv(a->s, &m, 0);

		ST_CHECK(rc == 0, "router: receive after %u: %s", n, zr_strerror(rc));
		ST_CHECK(zr_msg_frames(m) == 2, "router: %zu frames", zr_msg_frames(m));
		const uint8_t *rid = zr_msg_frame(m, 0, &rlen);
		const uint8_t *body = zr_msg_frame(m, 1, &len);

		st_payload_check(body, len, &sender, &seq);
		ST_CHECK(sender < 2 && rlen == 2 && rid[0] == 'd' && rid[1] == '0' + sender,
		         "router: routing id does not name sender %u", sender);
		ST_CHECK(seq == next[sender], "router: sender %u seq %u, want %u", sender, seq,
		         next[sender]);
		next[sender]++;
		/* Echo: the same message, routing id first, goes back. */
		ST_OK(zr_send(a->s, &m, 0));
	}
	return NULL;
}

static void
dealer_router_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *router = st_socket(ctx_bind, ZR_ROUTER);

	st_opt(router, ZR_ROUTER_MANDATORY, 1);
	st_bind(router, t, ep, sizeof ep);
	actor_run(&a[0], router, 0, t, router_main);
	for (uint32_t i = 0; i < 2; i++) {
		zr_socket *dealer = st_socket(ctx_conn, ZR_DEALER);
		char rid[2] = {'d', (char)('0' + i)};

		ST_OK(zr_setsockopt(dealer, ZR_ROUTING_ID, rid, sizeof rid));
		ST_OK(zr_connect(dealer, ep));
		actor_run(&a[1 + i], dealer, i, t, dealer_main);
	}
}

/* ---- PAIR <-> PAIR --------------------------------------------------------------- */

/* Both ends send N and receive N at once. A send that finds no room turns
 * to receiving for a moment, so two full directions never wait on each
 * other. */
static void *
pair_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *out = st_buf(), *in = st_buf();
	uint32_t sent = 0, got = 0;

	while (sent < N || got < N) {
		uint32_t sender, seq;
		int rc;

		if (sent < N) {
			size_t len = st_payload(out, a->id, sent);

			rc = zr_send_bytes(a->s, out, len, ZR_DONTWAIT);
			ST_CHECK(rc == 0 || rc == -EAGAIN, "pair %u: send: %s", a->id,
			         zr_strerror(rc));
			if (rc == 0) {
				sent++;
				continue;
			}
		}
		rc = zr_recv_bytes(a->s, in, ST_MAXLEN, sent < N ? ZR_DONTWAIT : 0);
		if (rc == -EAGAIN && sent < N) {
			sched_yield();
			continue;
		}
		ST_CHECK(rc >= 0, "pair %u: receive after %u: %s", a->id, got, zr_strerror(rc));
		st_payload_check(in, (size_t)rc, &sender, &seq);
		ST_CHECK(sender == 1 - a->id && seq == got, "pair %u: (%u, %u), want %u", a->id,
		         sender, seq, got);
		got++;
	}
	expect_nothing_more(a->s, in, "pair");
	free(out);
	free(in);
	return NULL;
}

static void
pair_start(struct actor *a, enum st_transport t)
{
	char ep[128];
	zr_socket *x = st_socket(ctx_bind, ZR_PAIR), *y = st_socket(ctx_conn, ZR_PAIR);

	st_bind(x, t, ep, sizeof ep);
	ST_OK(zr_connect(y, ep));
	actor_run(&a[0], x, 0, t, pair_main);
	actor_run(&a[1], y, 1, t, pair_main);
}

/* ---- all together ------------------------------------------------------------ */

#define MAX_ACTORS 64

static const struct scenario {
	const char *name;
	void (*start)(struct actor *a, enum st_transport t);
	size_t nactors;
	bool tcp_only; /* the transport does not matter to it: once is enough */
} scenarios[] = {
	{"curve", curve_start, 3, true},
	{"pushpull", pipeline_start, 3, false},
	{"pollpull", pollpull_start, 2, false},
	{"pubsub", fanout_start, 3, false},
	{"xpubxsub", xpubsub_start, 2, false},
	{"reqrep", reqrep_start, 3, false},
	{"dealerrouter", dealer_router_start, 3, false},
	{"pair", pair_start, 2, false},
};

/* Arguments, to run a part: scenario names and/or "tcp" / "ipc"; none: all. */
static bool
chosen(int argc, char **argv, const char *name)
{
	bool named = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "tcp") == 0 || strcmp(argv[i], "ipc") == 0)
			continue;
		named = true;
		if (strcmp(argv[i], name) == 0)
			return true;
	}
	return !named;
}

static bool
transport_chosen(int argc, char **argv, const char *name)
{
	bool named = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "tcp") != 0 && strcmp(argv[i], "ipc") != 0)
			continue;
		named = true;
		if (strcmp(argv[i], name) == 0)
			return true;
	}
	return !named;
}

int
main(int argc, char **argv)
{
	static struct actor actors[MAX_ACTORS];
	size_t n = 0;
	uint64_t t0;

	/* caller-io: both contexts ZR_CTX_CALLER_IO, so app threads run each
	 * context's io by turns with its io thread (engine/ctx.c, the baton). */
	unsigned flags = 0;

	if (argc > 1 && strcmp(argv[1], "caller-io") == 0) {
		flags = ZR_CTX_CALLER_IO;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	st_start(flags ? "sockets caller-io" : "sockets");
	t0 = zt_now_ms();
	ST_OK(zr_ctx_new_flags(&ctx_bind, flags));
	ST_OK(zr_ctx_new_flags(&ctx_conn, flags));
	for (int t = ST_TCP; t <= ST_IPC; t++) {
		if (!transport_chosen(argc, argv, st_transport_name((enum st_transport)t)))
			continue;
		atomic_init(&fan[t].ready, 0);
		for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
			if (!chosen(argc, argv, scenarios[i].name) ||
			    (scenarios[i].tcp_only && t != ST_TCP))
				continue;
			scenarios[i].start(&actors[n], (enum st_transport)t);
			n += scenarios[i].nactors;
		}
	}
	ST_CHECK(n <= MAX_ACTORS, "too many actors");
	for (size_t i = 0; i < n; i++)
		st_join(actors[i].th);
	for (size_t i = 0; i < n; i++)
		actor_close(&actors[i]);
	zr_ctx_free(ctx_conn);
	zr_ctx_free(ctx_bind);
	printf("sockets%s: %zu app threads, all counts exact (%llu ms)\n",
	       flags ? " caller-io" : "", n, (unsigned long long)(zt_now_ms() - t0));
	return 0;
}
