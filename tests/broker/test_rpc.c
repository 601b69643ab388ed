/*
 * Broker RPC (ruststream.md §7, §4.2; §20 behaviours 48-63): requests carry
 * a correlation-id, responders see reply-to "zmq-reply:<hex>", replies are
 * matched by correlation-id and a late reply never resolves a later request;
 * the refusals of the RPC publisher and of a batch responder.
 *
 * The responder is a zring subscription whose handler logs each request
 * (tests/broker/broker_util.h) and answers "re:<payload>" through a
 * publisher of its own broker, one publisher per worker lane (a publisher is
 * used by one thread at a time). Requesters are a second broker dialling the
 * responder, one publisher per requesting thread. Raw peers (a libzmq ROUTER
 * reading the request frames, a libzmq DEALER) are tests/engine/peers/
 * epeer.py driven through tests/engine/engine_util.h.
 *
 * Criterion asserts only on the test's own thread: request threads and
 * handlers record what happened and the test checks it.
 */
#include "broker/broker_util.h"
#include "engine/engine_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RPC_ENDPOINT "tcp://127.0.0.1:0"
#define RPC_LANES 4
/* The timeout of a request meant to time out: long enough that connecting
 * and the handshake, which count against it, finish first on a loaded
 * machine, so the request does reach the responder. */
#define RPC_GIVE_UP_MS 2000

/* ---- the responder ---------------------------------------------------------- */

enum rs_mode {
	RS_ECHO = 0,      /* answer "re:<payload>" at once */
	RS_SILENT = 1,    /* log, never answer */
	RS_REVERSE = 2,   /* "first" waits until "second" was answered */
	RS_BY_HEADER = 3, /* answer "re:<payload>" to the address zr_delivery_header
	                     finds under "reply-to", as an app routing by headers */
};

struct responder {
	struct bu_log log; /* every request, logged before it is answered */
	zr_publisher *pub[RPC_LANES];
	int mode;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool second_answered;
	bool first_waited; /* "first" was answered after "second" */
	atomic_int replies;
	atomic_int reply_fail; /* rc of the last zr_reply that failed, 0 if none */
};

static void
rs_handler(const struct zr_delivery *d, void *arg)
{
	struct responder *r = arg;
	char buf[256];
	int n, rc;

	bu_log_handler(d, &r->log); /* waits while the log is held */
	if (r->mode == RS_SILENT)
		return;
	if (r->mode == RS_REVERSE && d->payload_len == 5 && memcmp(d->payload, "first", 5) == 0) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += BU_WAIT_MS / 1000;
		pthread_mutex_lock(&r->mu);
		while (!r->second_answered) {
			if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
				break;
		}
		r->first_waited = r->second_answered;
		pthread_mutex_unlock(&r->mu);
	}
	n = snprintf(buf, sizeof buf, "re:%.*s", (int)d->payload_len, (const char *)d->payload);
	if (r->mode == RS_BY_HEADER) {
		struct zr_header cid = {"correlation-id", zr_delivery_header(d, "correlation-id")};
		const char *to = zr_delivery_header(d, "reply-to");

		rc = to == NULL ? -EINVAL
		                : zr_publish(r->pub[d->lane % RPC_LANES], to, &cid,
		                             cid.value ? 1 : 0, buf, (size_t)n, BU_WAIT_MS);
	} else {
		rc = zr_reply(r->pub[d->lane % RPC_LANES], d, NULL, 0, buf, (size_t)n);
	}
	if (rc != 0)
		atomic_store(&r->reply_fail, rc);
	else
		atomic_fetch_add(&r->replies, 1);
	if (r->mode == RS_REVERSE && d->payload_len == 6 && memcmp(d->payload, "second", 6) == 0) {
		pthread_mutex_lock(&r->mu);
		r->second_answered = true;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
}

/* A bound responder "greeter" on loopback port 0 and a requester broker
 * dialling it. */
struct rpc {
	zr_ctx *ctx;
	zr_broker *srv;
	zr_subscription *sub;
	struct responder rs;
	char addr[256];
	zr_broker *cli;
	zr_publisher *req; /* a publisher of cli for the test's own thread */
};

static void
rpc_open(struct rpc *t, unsigned workers, int mode)
{
	struct zr_sub_opts o = {.handler = rs_handler, .arg = &t->rs, .workers = workers};
	int rc;

	memset(t, 0, sizeof *t);
	bu_log_init(&t->rs.log);
	pthread_mutex_init(&t->rs.mu, NULL);
	pthread_cond_init(&t->rs.cv, NULL);
	t->rs.mode = mode;
	cr_assert_eq(zr_ctx_new(&t->ctx), 0);
	t->srv = bu_broker(t->ctx, ZR_RPC, RPC_ENDPOINT, ZR_BIND);
	for (size_t i = 0; i < RPC_LANES; i++)
		cr_assert_eq(zr_publisher_new(t->srv, &t->rs.pub[i]), 0);
	rc = zr_subscribe(t->srv, "greeter", &o, &t->sub);
	cr_assert_eq(rc, 0, "zr_subscribe: %d %s", rc, zr_broker_error(t->srv));
	bu_bound(t->srv, t->addr, sizeof t->addr);
	cr_assert(strncmp(t->addr, "tcp://127.0.0.1:", 16) == 0 &&
	                  strcmp(t->addr, RPC_ENDPOINT) != 0,
	          "bound address \"%s\"", t->addr);
	t->cli = bu_broker(t->ctx, ZR_RPC, t->addr, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(t->cli, &t->req), 0);
}

static void
rpc_close(struct rpc *t)
{
	bu_log_hold(&t->rs.log, false);
	pthread_mutex_lock(&t->rs.mu);
	t->rs.second_answered = true; /* no handler waits past the test */
	pthread_cond_broadcast(&t->rs.cv);
	pthread_mutex_unlock(&t->rs.mu);
	zr_broker_free(t->cli);
	zr_broker_free(t->srv);
	bu_log_fini(&t->rs.log);
	pthread_cond_destroy(&t->rs.cv);
	pthread_mutex_destroy(&t->rs.mu);
	zr_ctx_free(t->ctx);
	et_peers_stop();
}

/* The requester may hold the reply before the responder's handler has
 * returned from zr_reply and counted it: wait (bounded) for the count. */
static int
rs_replies_within(struct responder *r, int want, int timeout_ms)
{
	uint64_t until = zt_now_ms() + (uint64_t)timeout_ms;
	int n;

	while ((n = atomic_load(&r->replies)) < want && atomic_load(&r->reply_fail) == 0 &&
	       zt_now_ms() < until)
		zt_sleep_ms(1);
	return n;
}

/* ---- a request on a thread of its own ------------------------------------- */

struct req_call {
	zr_publisher *p;
	const char *payload;
	const char *cid; /* NULL: let zr_request mint one */
	int timeout_ms;
	int rc;
	struct zr_delivery *reply;
	char err[ZR_ERRTEXT_MAX];
	uint64_t t0, t1;
	atomic_bool done;
	pthread_t th;
};

static int
req_do(struct req_call *c)
{
	struct zr_header h = {"correlation-id", c->cid};

	c->t0 = zt_now_ms();
	c->rc = zr_request(c->p, "greeter", c->cid != NULL ? &h : NULL, c->cid != NULL ? 1 : 0,
	                   c->payload, strlen(c->payload), c->timeout_ms, &c->reply);
	c->t1 = zt_now_ms();
	snprintf(c->err, sizeof c->err, "%s", c->rc != 0 ? zr_publisher_error(c->p) : "");
	return c->rc;
}

static void *
req_main(void *arg)
{
	struct req_call *c = arg;

	req_do(c);
	atomic_store(&c->done, true);
	return NULL;
}

static void
req_start(struct req_call *c, zr_publisher *p, const char *payload, const char *cid, int timeout_ms)
{
	memset(c, 0, sizeof *c);
	c->p = p;
	c->payload = payload;
	c->cid = cid;
	c->timeout_ms = timeout_ms;
	atomic_init(&c->done, false);
	cr_assert_eq(pthread_create(&c->th, NULL, req_main, c), 0);
}

/* Joins the request thread if it ends within timeout_ms; false if not. */
static bool
req_join(struct req_call *c, int timeout_ms)
{
	return bu_join_within(c->th, &c->done, timeout_ms);
}

static void
assert_reply(const struct req_call *c, const char *payload, const char *cid)
{
	cr_assert_eq(c->rc, 0, "request \"%s\": %d %s", c->payload, c->rc, c->err);
	cr_assert_not_null(c->reply);
	cr_assert_str_eq(c->reply->name, "reply");
	cr_assert_eq(c->reply->payload_len, strlen(payload), "reply to \"%s\": %.*s", c->payload,
	             (int)c->reply->payload_len, (const char *)c->reply->payload);
	cr_assert(memcmp(c->reply->payload, payload, strlen(payload)) == 0,
	          "reply to \"%s\" is \"%.*s\", not \"%s\"", c->payload, (int)c->reply->payload_len,
	          (const char *)c->reply->payload, payload);
	if (cid != NULL) {
		const char *got = zr_delivery_header(c->reply, "correlation-id");

		cr_assert_not_null(got, "the reply carries no correlation-id");
		cr_assert_str_eq(got, cid);
	}
}

/* ---- raw frames --------------------------------------------------------------- */

/* Splits "MSG t0:t1:..." into at most max decoded frames (NUL-terminated,
 * malloc'd); returns how many. */
static size_t
frames_of(const char *line, char **f, size_t max)
{
	const char *p;
	size_t n = 0;

	cr_assert(strncmp(line, "MSG ", 4) == 0, "peer said \"%s\"", line);
	p = line + 4;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t tl = end != NULL ? (size_t)(end - p) : strlen(p);

		cr_assert_lt(n, max, "too many frames in %s", line);
		cr_assert(tl % 2 == 0, "not a hex frame in %s", line);
		f[n] = malloc(tl / 2 + 1);
		cr_assert_not_null(f[n]);
		for (size_t i = 0; i < tl / 2; i++) {
			int hi = et_hexval(p[2 * i]), lo = et_hexval(p[2 * i + 1]);

			cr_assert(hi >= 0 && lo >= 0, "bad hex in %s", line);
			f[n][i] = (char)(hi << 4 | lo);
		}
		f[n][tl / 2] = '\0';
		n++;
		if (end == NULL)
			return n;
		p = end + 1;
	}
}

static void
frames_free(char **f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i]);
}

/* A zring requester broker dialling a libzmq ROUTER that the test drives. */
struct raw_router {
	zr_ctx *ctx;
	struct et_peer *peer;
	zr_broker *cli;
	zr_publisher *req;
};

static void
raw_router_open(struct raw_router *r)
{
	memset(r, 0, sizeof *r);
	cr_assert_eq(zr_ctx_new(&r->ctx), 0);
	r->peer = et_peer_start("ROUTER", "bind", "tcp://127.0.0.1:*", NULL);
	r->cli = bu_broker(r->ctx, ZR_RPC, r->peer->line + 9, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(r->cli, &r->req), 0);
}

static void
raw_router_close(struct raw_router *r)
{
	zr_broker_free(r->cli);
	zr_ctx_free(r->ctx);
	et_peers_stop();
}

/* The ROUTER answers the request whose routing id token is id. */
static void
raw_reply(struct raw_router *r, const char *id_hex, const char *cid, const char *payload)
{
	char hdr[128];
	char *h_reply = et_hex("reply"), *h_hdr, *h_pl = et_hex(payload);
	const char *ans;

	snprintf(hdr, sizeof hdr, "correlation-id: %s", cid);
	h_hdr = et_hex(hdr);
	ans = et_peer_ask(r->peer, ET_WAIT_MS, "send %s:%s:%s:%s", id_hex, h_reply, h_hdr, h_pl);
	cr_assert_str_eq(ans, "SENT");
	free(h_reply);
	free(h_hdr);
	free(h_pl);
}

/* The hex token of the first frame of a "MSG ..." line (the routing id). */
static char *
first_token(const char *line)
{
	const char *p = line + 4, *end = strchr(p, ':');

	cr_assert_not_null(end);
	return strndup(p, (size_t)(end - p));
}

static bool
is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* ---- 48 / 60: a given-up request's late reply ------------------------------- */

/*
 * Request "one" (correlation-id "dup") is given up - by its timeout or by
 * zr_publisher_cancel - while the responder holds it. Request "two" through
 * the same publisher, with the SAME correlation-id, is then waiting when the
 * late answer to "one" is sent: only a fresh connection per request keeps
 * "re:one" from resolving it, so it must resolve with "re:two".
 */
static void
late_reply_case(bool by_cancel)
{
	struct rpc t;
	struct req_call one, two;
	struct zr_sub_stats st;
	uint64_t until;

	rpc_open(&t, 1, RS_ECHO);
	bu_log_hold(&t.rs.log, true);
	req_start(&one, t.req, "one", "dup", by_cancel ? 30000 : RPC_GIVE_UP_MS);
	until = zt_now_ms() + BU_WAIT_MS;
	while (bu_log_waiting(&t.rs.log) < 1 && zt_now_ms() < until)
		zt_sleep_ms(10);
	cr_assert_eq(bu_log_waiting(&t.rs.log), 1, "the request never reached the responder");
	if (by_cancel) {
		until = zt_now_ms() + 5000;
		while (!atomic_load(&one.done) && zt_now_ms() < until) {
			zr_publisher_cancel(t.req);
			zt_sleep_ms(50);
		}
		cr_assert(req_join(&one, 1000), "a cancelled request still waits after 5 s");
		cr_assert_eq(one.rc, -ECANCELED, "cancelled request: %d %s", one.rc, one.err);
	} else {
		cr_assert(req_join(&one, BU_WAIT_MS), "a %d ms request still waits after 10 s",
		          RPC_GIVE_UP_MS);
		cr_assert_eq(one.rc, -ETIMEDOUT, "unanswered request: %d %s", one.rc, one.err);
	}
	cr_assert_null(one.reply);

	req_start(&two, t.req, "two", "dup", BU_WAIT_MS);
	/* "two" sits behind the held "one" in the responder's channel. */
	cr_assert(bu_stats_wait(t.sub, BU_DEPTH, 1, &st),
	          "the second request never reached the responder");
	bu_log_hold(&t.rs.log, false); /* "re:one" goes out first, then "re:two" */
	cr_assert(req_join(&two, BU_WAIT_MS + 5000), "the second request never returned");
	assert_reply(&two, "re:two", "dup");
	cr_assert(bu_log_wait(&t.rs.log, 2, BU_WAIT_MS));
	cr_assert_str_eq(bu_log_at(&t.rs.log, 0)->payload, "one");
	cr_assert_str_eq(bu_log_at(&t.rs.log, 1)->payload, "two");
	zr_delivery_free(two.reply);
	rpc_close(&t);
}

/* §20 48: in C a request is given up with zr_publisher_cancel (or its
 * timeout, behaviour 60); its answer is lost and no later request gets it. */
Test(rpc, a_cancelled_request_returns_ECANCELED_and_its_late_answer_never_reaches_a_later_request)
{
	late_reply_case(true);
}

/* §20 60 */
Test(rpc, a_timed_out_requests_late_reply_never_resolves_a_later_request)
{
	late_reply_case(false);
}

/* ---- 49-54 -------------------------------------------------------------------- */

/* §20 49 */
Test(rpc, a_responder_bound_on_port_0_sees_reply_to_zmq_reply_hex_and_a_correlation_id)
{
	struct rpc t;
	struct req_call c;
	const struct bu_item *it;
	const char *rt, *cid;
	const char *ans;
	char *f[8];
	size_t n;

	rpc_open(&t, 1, RS_ECHO);
	/* A zring requester: a routing id of its own, in lowercase hex. */
	req_start(&c, t.req, "ping", NULL, BU_WAIT_MS);
	cr_assert(req_join(&c, BU_WAIT_MS + 5000));
	assert_reply(&c, "re:ping", NULL);
	it = bu_log_at(&t.rs.log, 0);
	cr_assert_str_eq(it->name, "greeter");
	cr_assert_str_eq(it->payload, "ping");
	cr_assert_not_null(it->reply_to, "the request has no reply_to");
	cr_assert(strncmp(it->reply_to, "zmq-reply:", 10) == 0, "reply_to \"%s\"", it->reply_to);
	rt = it->reply_to + 10;
	cr_assert(strlen(rt) > 0 && strlen(rt) % 2 == 0 && is_lower_hex(rt, strlen(rt)),
	          "reply_to \"%s\" is not zmq-reply:<lowercase hex>", it->reply_to);
	cr_assert_not_null(bu_item_header(it, "reply-to"), "no reply-to header");
	cr_assert_str_eq(bu_item_header(it, "reply-to"), it->reply_to);
	cid = bu_item_header(it, "correlation-id");
	cr_assert(cid != NULL && cid[0] != '\0', "no correlation-id header");
	cr_assert_str_eq(zr_delivery_header(c.reply, "correlation-id"), cid);
	zr_delivery_free(c.reply);

	/* A libzmq DEALER with a known routing id: the hex is exactly it, and
	 * the answer reaches it as ["reply", headers, payload]. */
	struct et_peer *d = et_peer_start("DEALER", "connect", t.addr,
	                                  (const char *const[]){"identity=c0ffee01", NULL});
	char *h_name = et_hex("greeter"), *h_hdr = et_hex("correlation-id: k1"),
	     *h_pl = et_hex("hello");

	ans = et_peer_ask(d, ET_WAIT_MS, "send %s:%s:%s", h_name, h_hdr, h_pl);
	cr_assert_str_eq(ans, "SENT");
	cr_assert(bu_log_wait(&t.rs.log, 2, BU_WAIT_MS), "the libzmq DEALER's request never came");
	it = bu_log_at(&t.rs.log, 1);
	cr_assert_str_eq(it->reply_to, "zmq-reply:c0ffee01");
	cr_assert_str_eq(bu_item_header(it, "reply-to"), "zmq-reply:c0ffee01");
	cr_assert_str_eq(bu_item_header(it, "correlation-id"), "k1");
	ans = et_peer_ask(d, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	n = frames_of(ans, f, 8);
	cr_assert_eq(n, 3, "the DEALER got %s", ans);
	cr_assert_str_eq(f[0], "reply");
	cr_assert_str_eq(f[1], "correlation-id: k1");
	cr_assert_str_eq(f[2], "re:hello");
	frames_free(f, n);
	free(h_name);
	free(h_hdr);
	free(h_pl);
	rpc_close(&t);
}

/*
 * Issue 12: a requester that writes its own "reply-to" naming another
 * requester must not get that one answered: the broker drops the header on
 * receipt, so even a responder that routes by zr_delivery_header(d,
 * "reply-to") answers the sender. (Its generated routing id is random, so
 * it could not guess the victim's anyway; the victim here has a known id.)
 */
Test(rpc, a_requesters_own_reply_to_header_is_dropped_and_the_reply_never_reaches_another)
{
	struct rpc t;
	const struct bu_item *it;
	const char *ans;
	char *f[8];
	size_t n, reply_tos = 0;

	rpc_open(&t, 1, RS_BY_HEADER);
	struct et_peer *victim = et_peer_start("DEALER", "connect", t.addr,
	                                       (const char *const[]){"identity=c0ffee02", NULL});
	struct et_peer *spoofer =
		et_peer_start("DEALER", "connect", t.addr, (const char *const[]){NULL});
	char *h_name = et_hex("greeter"), *h_v = et_hex("correlation-id: v1"),
	     *h_s = et_hex("Reply-To: zmq-reply:c0ffee02\ncorrelation-id: s1"),
	     *h_vp = et_hex("victim"), *h_sp = et_hex("spoof");

	/* The victim is connected and answered. */
	ans = et_peer_ask(victim, ET_WAIT_MS, "send %s:%s:%s", h_name, h_v, h_vp);
	cr_assert_str_eq(ans, "SENT");
	ans = et_peer_ask(victim, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	n = frames_of(ans, f, 8);
	cr_assert_eq(n, 3, "the victim got %s", ans);
	cr_assert_str_eq(f[2], "re:victim");
	frames_free(f, n);

	/* The spoofer names the victim's address. */
	ans = et_peer_ask(spoofer, ET_WAIT_MS, "send %s:%s:%s", h_name, h_s, h_sp);
	cr_assert_str_eq(ans, "SENT");
	cr_assert(bu_log_wait(&t.rs.log, 2, BU_WAIT_MS), "the spoofer's request never came");
	it = bu_log_at(&t.rs.log, 1);
	cr_assert_str_eq(it->payload, "spoof");
	cr_assert_not_null(it->reply_to);
	cr_assert_str_neq(it->reply_to, "zmq-reply:c0ffee02");
	cr_assert_str_eq(bu_item_header(it, "reply-to"), it->reply_to,
	                 "zr_delivery_header finds the broker's reply-to");
	for (size_t i = 0; i < it->nheaders; i++)
		reply_tos += strcasecmp(it->headers[i].name, "reply-to") == 0;
	cr_assert_eq(reply_tos, 1, "%zu reply-to headers", reply_tos);
	cr_assert_str_eq(bu_item_header(it, "correlation-id"), "s1", "other headers stay");

	ans = et_peer_ask(spoofer, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	n = frames_of(ans, f, 8);
	cr_assert_eq(n, 3, "the spoofer got %s", ans);
	cr_assert_str_eq(f[1], "correlation-id: s1");
	cr_assert_str_eq(f[2], "re:spoof");
	frames_free(f, n);
	ans = et_peer_ask(victim, BU_WAIT_MS, "recv %d", BU_QUIET_MS);
	cr_assert_str_eq(ans, "TIMEOUT", "the victim got the spoofer's reply: %s", ans);
	free(h_name);
	free(h_v);
	free(h_s);
	free(h_vp);
	free(h_sp);
	rpc_close(&t);
}

/* §20 50, 52 (on the wire), 53 */
static void
raw_request_case(bool wrong_first)
{
	struct raw_router r;
	struct req_call c;
	const char *ans;
	char *f[8], *id;
	size_t n;

	raw_router_open(&r);
	req_start(&c, r.req, "ping", "abc", BU_WAIT_MS + 5000);
	ans = et_peer_ask(r.peer, BU_WAIT_MS, "recv %d", BU_WAIT_MS);
	cr_assert(strncmp(ans, "MSG ", 4) == 0, "the ROUTER got no request: %s", ans);
	id = first_token(ans);
	n = frames_of(ans, f, 8);
	/* [routing id, name, headers, payload]: no empty delimiter frame. */
	cr_assert_eq(n, 4, "the request arrived as %s", ans);
	cr_assert_str_eq(f[1], "greeter");
	cr_assert_str_eq(f[2], "correlation-id: abc");
	cr_assert_str_eq(f[3], "ping");
	frames_free(f, n);
	if (wrong_first) {
		raw_reply(&r, id, "other", "wrong");
		zt_sleep_ms(300);
		cr_assert(!atomic_load(&c.done),
		          "a reply with another correlation-id ended the wait");
	}
	raw_reply(&r, id, "abc", "right");
	cr_assert(req_join(&c, BU_WAIT_MS + 5000), "the request never returned");
	assert_reply(&c, "right", "abc");
	zr_delivery_free(c.reply);
	free(id);
	raw_router_close(&r);
}

/* §20 50, 52 */
Test(rpc, a_caller_supplied_correlation_id_abc_is_on_the_wire_and_its_reply_resolves_the_request)
{
	raw_request_case(false);
}

/* §20 53 */
Test(rpc, a_reply_with_a_different_correlation_id_first_is_discarded_and_waiting_continues)
{
	raw_request_case(true);
}

/* §20 51 */
Test(rpc, a_request_without_correlation_id_gets_req_pid_16_lowercase_hex)
{
	struct rpc t;
	struct req_call c;
	char prefix[64];
	const char *ids[2];

	rpc_open(&t, 1, RS_ECHO);
	snprintf(prefix, sizeof prefix, "req-%d-", (int)getpid());
	for (int i = 0; i < 2; i++) {
		req_start(&c, t.req, i == 0 ? "a" : "b", NULL, BU_WAIT_MS);
		cr_assert(req_join(&c, BU_WAIT_MS + 5000));
		assert_reply(&c, i == 0 ? "re:a" : "re:b", NULL);
		ids[i] = bu_item_header(bu_log_at(&t.rs.log, (size_t)i), "correlation-id");
		cr_assert_not_null(ids[i]);
		cr_assert(strncmp(ids[i], prefix, strlen(prefix)) == 0,
		          "correlation-id \"%s\", want %s...", ids[i], prefix);
		cr_assert_eq(strlen(ids[i]), strlen(prefix) + 16, "correlation-id \"%s\"", ids[i]);
		cr_assert(is_lower_hex(ids[i] + strlen(prefix), 16), "correlation-id \"%s\"",
		          ids[i]);
		cr_assert_str_eq(zr_delivery_header(c.reply, "correlation-id"), ids[i]);
		zr_delivery_free(c.reply);
	}
	cr_assert_str_neq(ids[0], ids[1], "two requests minted the same id");
	rpc_close(&t);
}

/* §20 52 */
Test(rpc, a_reply_resolves_the_request_with_its_payload_and_the_name_reply)
{
	struct rpc t;
	struct req_call c;

	rpc_open(&t, 1, RS_ECHO);
	req_start(&c, t.req, "hello", "k-52", BU_WAIT_MS);
	cr_assert(req_join(&c, BU_WAIT_MS + 5000));
	assert_reply(&c, "re:hello", "k-52");
	cr_assert_null(c.reply->reply_to);
	cr_assert_eq(c.reply->error, 0);
	cr_assert_eq(rs_replies_within(&t.rs, 1, BU_WAIT_MS), 1);
	cr_assert_eq(atomic_load(&t.rs.reply_fail), 0);
	zr_delivery_free(c.reply);

	/* The same responder answers a requester of its own broker too (the
	 * publisher dials the local subscription's resolved address). */
	zr_publisher *own;

	cr_assert_eq(zr_publisher_new(t.srv, &own), 0);
	req_start(&c, own, "local", NULL, BU_WAIT_MS);
	cr_assert(req_join(&c, BU_WAIT_MS + 5000));
	assert_reply(&c, "re:local", NULL);
	zr_delivery_free(c.reply);
	rpc_close(&t);
}

/* §20 54 */
Test(rpc, a_request_nobody_answers_fails_with_ETIMEDOUT_after_its_timeout)
{
	struct rpc t;
	struct req_call c;

	rpc_open(&t, 1, RS_SILENT);
	req_start(&c, t.req, "ping", NULL, RPC_GIVE_UP_MS);
	cr_assert(req_join(&c, BU_WAIT_MS), "a %d ms request still waits after 10 s",
	          RPC_GIVE_UP_MS);
	cr_assert_eq(c.rc, -ETIMEDOUT, "unanswered request: %d %s", c.rc, c.err);
	cr_assert_null(c.reply);
	cr_assert_geq(c.t1 - c.t0, RPC_GIVE_UP_MS - 10, "timed out after %llu ms of %d",
	              (unsigned long long)(c.t1 - c.t0), RPC_GIVE_UP_MS);
	cr_assert_lt(c.t1 - c.t0, RPC_GIVE_UP_MS + 5000, "timed out after %llu ms of %d",
	             (unsigned long long)(c.t1 - c.t0), RPC_GIVE_UP_MS);
	cr_assert_neq(c.err[0], '\0', "no error text");
	/* It did reach the responder: the wait was for the reply. */
	cr_assert(bu_log_wait(&t.rs.log, 1, BU_WAIT_MS));
	rpc_close(&t);
}

/* ---- 55-58: the RPC publisher's refusals ----------------------------------- */

/* §20 55 */
Test(rpc,
     publishing_to_a_plain_name_on_an_rpc_publisher_is_refused_pointing_at_zmq_reply_and_request)
{
	struct rpc t;
	const char *e;
	int rc;

	rpc_open(&t, 1, RS_ECHO);
	rc = zr_publish(t.rs.pub[0], "greeter", NULL, 0, "x", 1, 1000);
	e = zr_publisher_error(t.rs.pub[0]);
	cr_assert_eq(rc, -EINVAL, "publish to \"greeter\": %d %s", rc, e);
	cr_assert_not_null(strstr(e, "zmq-reply:"), "text \"%s\"", e);
	cr_assert_not_null(strstr(e, "request"), "text \"%s\"", e);
	cr_assert_not_null(strstr(e, "greeter"), "text \"%s\" does not name the destination", e);
	/* The requester's publisher refuses it the same way. */
	rc = zr_publish(t.req, "greeter", NULL, 0, "x", 1, 1000);
	cr_assert_eq(rc, -EINVAL, "requester publish: %d %s", rc, zr_publisher_error(t.req));
	cr_assert(bu_log_wait(&t.rs.log, 1, BU_QUIET_MS) == false,
	          "a refused publish was delivered");
	rpc_close(&t);
}

/* §20 56: the code is not in the header's table; the text is the contract. */
Test(rpc, a_reply_with_no_responder_subscription_attached_is_refused)
{
	zr_ctx *ctx;
	zr_broker *bound, *dialing;
	zr_publisher *p;
	const char *e;
	int rc;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	bound = bu_broker(ctx, ZR_RPC, RPC_ENDPOINT, ZR_BIND);
	cr_assert_eq(zr_publisher_new(bound, &p), 0);
	rc = zr_publish(p, "zmq-reply:00", NULL, 0, "x", 1, 1000);
	e = zr_publisher_error(p);
	cr_assert_lt(rc, 0, "a reply with no responder: %d", rc);
	cr_assert_neq(rc, -ETIMEDOUT, "it waited instead of refusing: %s", e);
	cr_assert_not_null(strstr(e, "no responder subscription is attached"), "text \"%s\"", e);
	cr_assert_not_null(strstr(e, "zmq-reply:00"), "text \"%s\" does not name the address", e);

	dialing = bu_broker(ctx, ZR_RPC, "tcp://127.0.0.1:9", ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(dialing, &p), 0);
	rc = zr_publish(p, "zmq-reply:00", NULL, 0, "x", 1, 1000);
	e = zr_publisher_error(p);
	cr_assert_lt(rc, 0, "a reply with no responder (dialling broker): %d", rc);
	cr_assert_not_null(strstr(e, "no responder subscription is attached"), "text \"%s\"", e);
	zr_broker_free(dialing);
	zr_broker_free(bound);
	zr_ctx_free(ctx);
}

/* §20 57 */
Test(rpc, a_reply_to_zmq_reply_zz_is_refused_as_a_malformed_reply_address)
{
	static const char *const bad[] = {"zmq-reply:zz", "zmq-reply:abc", "zmq-reply:"};
	struct rpc t;

	rpc_open(&t, 1, RS_ECHO);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = zr_publish(t.rs.pub[0], bad[i], NULL, 0, "x", 1, 1000);
		const char *e = zr_publisher_error(t.rs.pub[0]);

		cr_assert_eq(rc, -EINVAL, "publish to \"%s\": %d %s", bad[i], rc, e);
		cr_assert_not_null(strstr(e, "malformed reply address"), "%s: text \"%s\"", bad[i],
		                   e);
		cr_assert_not_null(strstr(e, bad[i]), "text \"%s\" does not name %s", e, bad[i]);
	}
	rpc_close(&t);
}

/* §20 58 */
Test(rpc, a_reply_to_an_address_no_requester_holds_fails_with_EHOSTUNREACH_naming_it)
{
	struct rpc t;
	int rc;
	const char *e;

	rpc_open(&t, 1, RS_ECHO);
	rc = zr_publish(t.rs.pub[0], "zmq-reply:deadbeef", NULL, 0, "x", 1, 1000);
	e = zr_publisher_error(t.rs.pub[0]);
	cr_assert_eq(rc, -EHOSTUNREACH, "publish to zmq-reply:deadbeef: %d %s", rc, e);
	cr_assert_not_null(strstr(e, "zmq-reply:deadbeef"), "text \"%s\"", e);
	/* Upper case hex parses too (and is just as unknown). */
	rc = zr_publish(t.rs.pub[0], "zmq-reply:DEADBEEF", NULL, 0, "x", 1, 1000);
	cr_assert_eq(rc, -EHOSTUNREACH, "publish to zmq-reply:DEADBEEF: %d %s", rc,
	             zr_publisher_error(t.rs.pub[0]));
	rpc_close(&t);
}

/* ---- 59, 61-63 ------------------------------------------------------------------ */

/* §20 59 */
Test(rpc, two_concurrent_requests_answered_in_reverse_order_each_get_their_own_reply)
{
	struct rpc t;
	struct req_call first, second;
	zr_publisher *p2;

	rpc_open(&t, 2, RS_REVERSE);
	cr_assert_eq(zr_publisher_new(t.cli, &p2), 0);
	req_start(&first, t.req, "first", NULL, BU_WAIT_MS + 5000);
	cr_assert(bu_log_wait(&t.rs.log, 1, BU_WAIT_MS), "the first request never came");
	req_start(&second, p2, "second", NULL, BU_WAIT_MS + 5000);
	cr_assert(req_join(&second, BU_WAIT_MS + 10000), "the second request never returned");
	assert_reply(&second, "re:second", NULL);
	cr_assert(req_join(&first, BU_WAIT_MS + 10000), "the first request never returned");
	assert_reply(&first, "re:first", NULL);
	pthread_mutex_lock(&t.rs.mu);
	cr_assert(t.rs.first_waited, "the first was not answered after the second");
	pthread_mutex_unlock(&t.rs.mu);
	cr_assert_str_neq(zr_delivery_header(first.reply, "correlation-id"),
	                  zr_delivery_header(second.reply, "correlation-id"));
	zr_delivery_free(first.reply);
	zr_delivery_free(second.reply);
	rpc_close(&t);
}

/* §20 61 */
Test(rpc, after_shutdown_a_surviving_requester_with_a_30_s_timeout_fails_within_5_s)
{
	struct rpc t;
	struct req_call c, waiting;
	zr_publisher *p2;
	uint64_t t0;
	int rc;

	rpc_open(&t, 1, RS_ECHO);
	cr_assert_eq(zr_publisher_new(t.cli, &p2), 0);
	req_start(&c, t.req, "before", NULL, BU_WAIT_MS);
	cr_assert(req_join(&c, BU_WAIT_MS + 5000));
	assert_reply(&c, "re:before", NULL);
	zr_delivery_free(c.reply);

	/* A request already waiting (the responder holds it) wakes and fails. */
	bu_log_hold(&t.rs.log, true);
	req_start(&waiting, p2, "held", NULL, 30000);
	{
		uint64_t until = zt_now_ms() + BU_WAIT_MS;

		while (bu_log_waiting(&t.rs.log) < 1 && zt_now_ms() < until)
			zt_sleep_ms(10);
	}
	cr_assert_eq(bu_log_waiting(&t.rs.log), 1, "the held request never reached the responder");
	t0 = zt_now_ms();
	rc = zr_broker_shutdown(t.cli);
	cr_assert_eq(rc, 0, "shutting down an idle requester broker: %d", rc);
	cr_assert(req_join(&waiting, 5000), "a waiting request still waits 5 s after shutdown");
	cr_assert_eq(waiting.rc, -ENOTCONN, "waiting request after shutdown: %d %s", waiting.rc,
	             waiting.err);
	cr_assert_lt(waiting.t1 - t0, 5000);

	/* A new request fails at once. */
	req_start(&c, t.req, "after", NULL, 30000);
	cr_assert(req_join(&c, 5000), "a request after shutdown still waits after 5 s");
	cr_assert_eq(c.rc, -ENOTCONN, "request after shutdown: %d %s", c.rc, c.err);
	cr_assert_null(c.reply);
	cr_assert_lt(c.t1 - c.t0, 5000);
	bu_log_hold(&t.rs.log, false);
	rpc_close(&t);
}

/* §20 62: a ROUTER always receives [routing id, at least one frame] (a ZMTP
 * message has at least one frame), so "identity and nothing else" cannot be
 * produced by a peer. What is observable: a libzmq DEALER sending one empty
 * frame gives the responder [routing id, ""]. */
Test(rpc, a_dealer_sending_one_empty_frame_yields_an_error_item_and_the_responder_keeps_going)
{
	struct rpc t;
	struct et_peer *d;
	const struct bu_item *it;
	const char *ans;
	struct req_call c;

	rpc_open(&t, 1, RS_ECHO);
	d = et_peer_start("DEALER", "connect", t.addr, NULL);
	ans = et_peer_ask(d, ET_WAIT_MS, "send ");
	cr_assert_str_eq(ans, "SENT");
	cr_assert(bu_log_wait(&t.rs.log, 1, BU_WAIT_MS), "nothing reached the handler");
	it = bu_log_at(&t.rs.log, 0);
	cr_assert_eq(it->error, -EPROTO, "an empty request was delivered as name \"%s\"", it->name);
	cr_assert_not_null(it->error_text);
	cr_assert_not_null(strstr(it->error_text, "a request needs name and payload frames"),
	                   "error text \"%s\"", it->error_text);
	/* The subscription keeps serving. */
	req_start(&c, t.req, "still", NULL, BU_WAIT_MS);
	cr_assert(req_join(&c, BU_WAIT_MS + 5000));
	assert_reply(&c, "re:still", NULL);
	zr_delivery_free(c.reply);
	rpc_close(&t);
}

/* §20 63 */
Test(rpc, a_batch_mount_on_an_rpc_responder_is_refused)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub = NULL;
	struct bu_log log;
	struct zr_sub_opts o;
	int rc;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	for (int side = ZR_BIND; side <= ZR_CONNECT; side++) {
		b = bu_broker(ctx, ZR_RPC, side == ZR_BIND ? RPC_ENDPOINT : "tcp://127.0.0.1:9",
		              side);
		o = (struct zr_sub_opts){
			.batch_handler = bu_log_batch_handler, .arg = &log, .batch = 4};
		rc = zr_subscribe(b, "greeter", &o, &sub);
		cr_assert_eq(rc, -EINVAL, "a batch responder (side %d): %d", side, rc);
		cr_assert_null(sub);
		cr_assert_neq(zr_broker_error(b)[0], '\0', "no error text");
		cr_assert_not_null(strstr(zr_broker_error(b), "greeter"), "text \"%s\"",
		                   zr_broker_error(b));
		/* The endpoint stays free for a plain responder. */
		rc = zr_subscribe(b, "greeter",
		                  &(struct zr_sub_opts){.handler = bu_log_handler, .arg = &log},
		                  &sub);
		cr_assert_eq(rc, 0, "a plain responder after the refusal: %d %s", rc,
		             zr_broker_error(b));
		zr_broker_free(b);
		sub = NULL;
	}
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}
