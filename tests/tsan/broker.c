/*
 * The broker model under load from app threads, all at once on one context:
 *
 *   queue     3 publisher threads, each making and freeing its own
 *             publisher, -> a subscription with 4 workers: every message
 *             handled exactly once
 *   batches   2 publisher threads -> batches of up to 16 on 2 workers
 *   by_key    1 publisher -> 3 lanes in rotation, each lane in order
 *   fanout    2 publisher threads, half the names matching the bound
 *             subscription (2 workers): every match once, the rest counted
 *             unmatched
 *   rpc       3 requester threads -> a responder with 4 workers replying
 *             through one publisher per lane: every request its own reply
 *   cancel    a publisher blocked on a held subscription, cancelled from
 *             another thread, round after round: exactly the publishes that
 *             returned 0 are handled once the hold is released
 *   watchers  2 dialling fan-out brokers each get every message of a bound
 *             publisher once, while a third subscribes and unsubscribes
 *   shutdown  publishers publishing flat out and a requester waiting while
 *             another thread shuts their brokers down: every call ends
 *             (-ENOTCONN), nothing is handled twice and handled + discarded
 *             never exceeds what was published
 *
 * Each check is an exact count; the program exits 1 on the first wrong one.
 */
#include "stress.h"

#define NQ 1500u  /* messages per publisher thread */
#define NREQ 150u /* requests per requester thread */
#define MAXPUB 4u
#define CANCEL_ROUNDS 4
#define BIGMSG (64u * 1024u)

static zr_ctx *ctx;

static zr_broker *
broker(int pattern)
{
	zr_broker *b = NULL;

	ST_OK(zr_broker_new(ctx, pattern, "tcp://127.0.0.1:0", ZR_BIND, &b));
	ST_OK(zr_broker_start(b));
	return b;
}

static zr_subscription *
subscribe(zr_broker *b, const char *name, const struct zr_sub_opts *o)
{
	zr_subscription *sub = NULL;
	int rc = zr_subscribe(b, name, o, &sub);

	ST_CHECK(rc == 0, "zr_subscribe %s: %s (%s)", name, zr_strerror(rc), zr_broker_error(b));
	return sub;
}

static zr_publisher *
publisher(zr_broker *b)
{
	zr_publisher *p = NULL;

	ST_OK(zr_publisher_new(b, &p));
	return p;
}

static void
wait_until(atomic_uint *n, unsigned want, const char *what)
{
	uint64_t until = zt_now_ms() + ST_WAIT_MS;

	while (atomic_load(n) < want) {
		ST_CHECK(zt_now_ms() < until, "%s: %u of %u", what, atomic_load(n), want);
		zt_sleep_ms(2);
	}
}

/* ---- exactly-once bookkeeping for numbered messages ---------------------------- */

struct tally {
	atomic_uchar seen[MAXPUB][NQ];
	atomic_uint handled;
	atomic_int bad; /* a payload that failed its check, or a duplicate */
};

static void
tally_add(struct tally *t, const void *payload, size_t len)
{
	uint32_t sender, seq;

	st_payload_check(payload, len, &sender, &seq);
	ST_CHECK(sender < MAXPUB && seq < NQ, "delivery (%u, %u) out of range", sender, seq);
	ST_CHECK(atomic_fetch_add(&t->seen[sender][seq], 1) == 0, "(%u, %u) handled twice", sender,
	         seq);
	atomic_fetch_add(&t->handled, 1);
}

static void
tally_check(struct tally *t, unsigned pubs, unsigned n, const char *what)
{
	for (unsigned p = 0; p < pubs; p++)
		for (unsigned i = 0; i < n; i++)
			ST_CHECK(atomic_load(&t->seen[p][i]) == 1, "%s: (%u, %u) handled %u times",
			         what, p, i, atomic_load(&t->seen[p][i]));
	ST_CHECK(atomic_load(&t->handled) == pubs * n, "%s: %u handled, want %u", what,
	         atomic_load(&t->handled), pubs * n);
}

/* A publisher thread: n numbered messages under name (or, fan-out, every
 * odd one under unmatched). */
struct pubber {
	zr_broker *b; /* set: the thread makes its own publisher and frees it */
	zr_publisher *p;
	uint32_t id;
	const char *name, *unmatched;
	unsigned n;
	pthread_t th;
};

static void *
pubber_main(void *arg)
{
	struct pubber *u = arg;
	uint8_t *buf = malloc(ST_MAXLEN);

	ST_CHECK(buf != NULL, "malloc");
	if (u->b != NULL)
		u->p = publisher(u->b);
	for (uint32_t i = 0; i < u->n; i++) {
		size_t len = st_payload(buf, u->id, i);
		const char *name = u->unmatched != NULL && i % 2 == 1 ? u->unmatched : u->name;
		struct zr_header h = {"from", "tsan"};
		int rc = zr_publish(u->p, name, &h, 1, buf, len, ST_WAIT_MS);

		ST_CHECK(rc == 0, "publish %s (%u, %u): %s (%s)", name, u->id, i, zr_strerror(rc),
		         zr_publisher_error(u->p));
	}
	if (u->b != NULL) {
		/* While the other threads still publish on the same broker; its
		 * socket lingers out what it took. */
		zr_publisher_free(u->p);
		u->p = NULL;
	}
	free(buf);
	return NULL;
}

/* own: each thread makes and frees its publisher itself (publishers "may be
 * created and freed from any thread"). */
static void
pubbers_run(struct pubber *u, unsigned k, zr_broker *b, const char *name, const char *unmatched,
            unsigned n, bool own)
{
	for (unsigned i = 0; i < k; i++) {
		u[i] = (struct pubber){.b = own ? b : NULL,
		                       .p = own ? NULL : publisher(b),
		                       .id = i,
		                       .name = name,
		                       .unmatched = unmatched,
		                       .n = n};
		st_thread(&u[i].th, pubber_main, &u[i]);
	}
}

static void
pubbers_join(struct pubber *u, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		st_join(u[i].th);
}

/* ---- queue, batches, by_key, fanout ------------------------------------------- */

static void
tally_handler(const struct zr_delivery *d, void *arg)
{
	ST_CHECK(d->error == 0, "error item: %s", d->error_text ? d->error_text : "?");
	ST_CHECK(strcmp(zr_delivery_header(d, "from") ? zr_delivery_header(d, "from") : "",
	                "tsan") == 0,
	         "header lost");
	tally_add(arg, d->payload, d->payload_len);
}

static void
tally_batch(const struct zr_delivery *const *batch, size_t n, void *arg)
{
	ST_CHECK(n >= 1 && n <= 16, "a batch of %zu", n);
	for (size_t i = 0; i < n; i++)
		tally_handler(batch[i], arg);
}

/* by_key: lane l gets messages l-1, l-1+3, ... in order (lanes 1, 2, 0, 1, ...). */
struct lanes {
	struct tally t;
	atomic_uint next[3];
};

static void
lane_handler(const struct zr_delivery *d, void *arg)
{
	struct lanes *l = arg;
	uint32_t sender, seq;

	st_payload_check(d->payload, d->payload_len, &sender, &seq);
	ST_CHECK(d->lane < 3 && d->lane == (seq + 1) % 3, "seq %u on lane %u", seq, d->lane);
	/* One at a time per lane, so a plain load-then-store would do; the
	 * atomics only let main read the figures. */
	ST_CHECK(atomic_load(&l->next[d->lane]) == seq, "lane %u: seq %u, want %u", d->lane, seq,
	         atomic_load(&l->next[d->lane]));
	atomic_store(&l->next[d->lane], seq + 3);
	tally_add(&l->t, d->payload, d->payload_len);
}

/* ---- rpc -------------------------------------------------------------------------- */

#define RPC_LANES 4
#define NREQUESTERS 3

struct responder {
	zr_publisher *pub[RPC_LANES];
	atomic_uint answered;
};

static void
rpc_handler(const struct zr_delivery *d, void *arg)
{
	struct responder *r = arg;
	char buf[64];
	int n, rc;

	ST_CHECK(d->reply_to != NULL, "request without reply-to");
	n = snprintf(buf, sizeof buf, "re:%.*s", (int)d->payload_len, (const char *)d->payload);
	/* One publisher per lane: a lane runs one handler at a time. */
	rc = zr_reply(r->pub[d->lane % RPC_LANES], d, NULL, 0, buf, (size_t)n);
	ST_CHECK(rc == 0, "zr_reply: %s", zr_strerror(rc));
	atomic_fetch_add(&r->answered, 1);
}

struct requester {
	zr_publisher *p;
	unsigned id;
	pthread_t th;
};

static void *
requester_main(void *arg)
{
	struct requester *q = arg;

	for (unsigned i = 0; i < NREQ; i++) {
		char req[32], want[40];
		struct zr_delivery *reply = NULL;
		int n = snprintf(req, sizeof req, "q%u-%u", q->id, i);
		int rc = zr_request(q->p, "svc", NULL, 0, req, (size_t)n, ST_WAIT_MS, &reply);

		ST_CHECK(rc == 0, "request %s: %s (%s)", req, zr_strerror(rc),
		         zr_publisher_error(q->p));
		snprintf(want, sizeof want, "re:%s", req);
		ST_CHECK(reply->payload_len == strlen(want) &&
		                 memcmp(reply->payload, want, reply->payload_len) == 0,
		         "request %s: reply %.*s", req, (int)reply->payload_len,
		         (const char *)reply->payload);
		zr_delivery_free(reply);
	}
	return NULL;
}

/* ---- cancel -------------------------------------------------------------------- */

/* A handler that waits while the gate is held. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool held;
	atomic_uint handled;
};

static void
gate_handler(const struct zr_delivery *d, void *arg)
{
	struct gate *g = arg;

	ST_CHECK(d->payload_len == BIGMSG, "payload of %zu", d->payload_len);
	pthread_mutex_lock(&g->mu);
	while (g->held)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	atomic_fetch_add(&g->handled, 1);
}

static void
gate_set(struct gate *g, bool held)
{
	pthread_mutex_lock(&g->mu);
	g->held = held;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

struct blocker {
	zr_publisher *p;
	uint8_t *payload;
	unsigned ok;
	int rc;
	atomic_int done;
	pthread_t th;
};

/* Publishes until a publish fails (the cancel); each waits for ever. */
static void *
blocker_main(void *arg)
{
	struct blocker *k = arg;

	for (;;) {
		int rc = zr_publish(k->p, "held", NULL, 0, k->payload, BIGMSG, -1);

		if (rc != 0) {
			k->rc = rc;
			break;
		}
		k->ok++;
	}
	atomic_store(&k->done, 1);
	return NULL;
}

static void
cancel_run(void)
{
	zr_broker *b = NULL;
	struct gate g = {.held = true};
	struct zr_sub_opts o = {.handler = gate_handler, .arg = &g, .workers = 2};
	struct blocker k = {0};
	unsigned total = 0;

	pthread_mutex_init(&g.mu, NULL);
	pthread_cond_init(&g.cv, NULL);
	atomic_init(&g.handled, 0);
	ST_OK(zr_broker_new(ctx, ZR_QUEUE, "tcp://127.0.0.1:0", ZR_BIND, &b));
	ST_OK(zr_broker_set_read_ahead(b, 4));
	ST_OK(zr_broker_start(b));
	zr_subscription *sub = subscribe(b, "held", &o);

	(void)sub;
	k.p = publisher(b);
	k.payload = calloc(1, BIGMSG);
	ST_CHECK(k.payload != NULL, "calloc");
	for (int r = 0; r < CANCEL_ROUNDS; r++) {
		uint64_t until = zt_now_ms() + ST_WAIT_MS;

		gate_set(&g, true);
		k.ok = 0;
		k.rc = 0;
		atomic_init(&k.done, 0);
		st_thread(&k.th, blocker_main, &k);
		/* Cancel does nothing while no publish waits: keep at it until the
		 * publisher, having filled every buffer, waited and gave up. */
		while (!atomic_load(&k.done)) {
			ST_CHECK(zt_now_ms() < until,
			         "cancel round %d: the publisher never returned", r);
			zr_publisher_cancel(k.p);
			zt_sleep_ms(2);
		}
		st_join(k.th);
		ST_CHECK(k.rc == -ECANCELED, "cancel round %d: publish returned %s", r,
		         zr_strerror(k.rc));
		total += k.ok;
		gate_set(&g, false);
		wait_until(&g.handled, total, "cancel: handled after the release");
	}
	zt_sleep_ms(50);
	ST_CHECK(atomic_load(&g.handled) == total, "cancel: %u handled, %u published",
	         atomic_load(&g.handled), total);
	zr_broker_free(b);
	free(k.payload);
	pthread_cond_destroy(&g.cv);
	pthread_mutex_destroy(&g.mu);
}

/* ---- shutdown ------------------------------------------------------------------ */

struct flat {
	atomic_int *shut; /* the shutdown began */
	zr_publisher *p;
	uint32_t id;
	atomic_uint ok;
	int rc;
	pthread_t th;
};

static void *
flat_main(void *arg)
{
	struct flat *f = arg;
	uint8_t *buf = malloc(ST_MAXLEN);

	ST_CHECK(buf != NULL, "malloc");
	for (uint32_t i = 0; i < NQ; i++) {
		size_t len = st_payload(buf, f->id, i);
		struct zr_header h = {"from", "tsan"};
		int rc = zr_publish(f->p, "flat", &h, 1, buf, len, -1);

		if (rc != 0) {
			/* Only the shutdown may end it. */
			ST_CHECK(atomic_load(f->shut),
			         "shutdown: publish %u failed before the shutdown: %s (%s)", i,
			         zr_strerror(rc), zr_publisher_error(f->p));
			f->rc = rc;
			break;
		}
		atomic_fetch_add(&f->ok, 1);
	}
	free(buf);
	return NULL;
}

struct waiter {
	atomic_int *shut;
	zr_publisher *p;
	int rc;
	pthread_t th;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct zr_delivery *reply = NULL;

	/* Nobody answers: only the shutdown ends it. */
	w->rc = zr_request(w->p, "mute", NULL, 0, "hello?", 6, 60000, &reply);
	ST_CHECK(atomic_load(w->shut), "shutdown: the request ended before the shutdown: %s (%s)",
	         zr_strerror(w->rc), zr_publisher_error(w->p));
	zr_delivery_free(reply);
	return NULL;
}

/* Reads a subscription's figures over and over, as a monitoring thread
 * would, while the broker shuts down under it. */
struct poller {
	zr_subscription *sub;
	atomic_int stop;
	unsigned polls;
	pthread_t th;
};

static void *
poller_main(void *arg)
{
	struct poller *pl = arg;

	while (!atomic_load(&pl->stop)) {
		struct zr_sub_stats st;

		zr_subscription_stats(pl->sub, &st);
		ST_CHECK(st.received >= st.handled + st.discarded || st.in_flight == 0,
		         "stats: received %llu, handled %llu, discarded %llu",
		         (unsigned long long)st.received, (unsigned long long)st.handled,
		         (unsigned long long)st.discarded);
		ST_CHECK(st.peak_depth <= st.read_ahead, "stats: peak %zu over read_ahead %zu",
		         st.peak_depth, st.read_ahead);
		pl->polls++;
		sched_yield();
	}
	return NULL;
}

static void
mute_handler(const struct zr_delivery *d, void *arg)
{
	(void)d;
	atomic_fetch_add((atomic_uint *)arg, 1);
}

static void
shutdown_run(int round)
{
	static struct tally t;
	zr_broker *q = broker(ZR_QUEUE), *rpc = broker(ZR_RPC);
	struct zr_sub_opts o = {.handler = tally_handler, .arg = &t, .workers = 2};
	atomic_uint asked;
	struct zr_sub_opts mo = {.handler = mute_handler, .arg = &asked};
	struct flat f[2];
	static atomic_int shut;
	struct waiter w = {.shut = &shut, .p = publisher(rpc)};
	struct poller pl;
	struct zr_sub_stats st;
	unsigned published = 0;
	int rc;

	memset(&t, 0, sizeof t);
	atomic_store(&shut, 0);
	atomic_init(&asked, 0);
	zr_subscription *sub = subscribe(q, "flat", &o);
	(void)subscribe(rpc, "mute", &mo);
	ST_OK(zr_broker_set_drain_timeout(q, 5000));
	for (uint32_t i = 0; i < 2; i++) {
		f[i].shut = &shut;
		f[i].p = publisher(q);
		f[i].id = i;
		f[i].rc = 0;
		atomic_init(&f[i].ok, 0);
		st_thread(&f[i].th, flat_main, &f[i]);
	}
	st_thread(&w.th, waiter_main, &w);
	pl.sub = sub;
	pl.polls = 0;
	atomic_init(&pl.stop, 0);
	st_thread(&pl.th, poller_main, &pl);
	/* Shut down mid-stream: once something was handled and the request
	 * reached its responder. */
	wait_until(&t.handled, 50, "shutdown: handled before the shutdown");
	wait_until(&asked, 1, "shutdown: the request");
	zt_sleep_ms(round * 5);
	atomic_store(&shut, 1);
	rc = zr_broker_shutdown(q);
	ST_CHECK(rc == 0, "shutdown of the queue broker: %s", zr_strerror(rc));
	ST_OK(zr_broker_shutdown(rpc));
	for (int i = 0; i < 2; i++) {
		st_join(f[i].th);
		ST_CHECK(f[i].rc == -ENOTCONN || (f[i].rc == 0 && atomic_load(&f[i].ok) == NQ),
		         "shutdown: a publisher ended with %s", zr_strerror(f[i].rc));
		published += atomic_load(&f[i].ok);
	}
	st_join(w.th);
	atomic_store(&pl.stop, 1);
	st_join(pl.th);
	ST_CHECK(w.rc == -ENOTCONN, "shutdown: the waiting request ended with %s",
	         zr_strerror(w.rc));
	zr_subscription_stats(sub, &st);
	ST_CHECK(st.handled == atomic_load(&t.handled), "shutdown: stats say %llu handled, %u seen",
	         (unsigned long long)st.handled, atomic_load(&t.handled));
	/* Drained (shutdown returned 0): everything taken off the channel was
	 * handled. What the channel still held, or took while the hold was
	 * being set, is discarded without being received (zring.h:
	 * "accepted but dropped"); all of it was published. */
	ST_CHECK(st.received == st.handled && st.in_flight == 0,
	         "shutdown: received %llu, handled %llu, in flight %zu",
	         (unsigned long long)st.received, (unsigned long long)st.handled, st.in_flight);
	ST_CHECK(st.handled + st.discarded <= published,
	         "shutdown: %llu handled + %llu discarded of %u published",
	         (unsigned long long)st.handled, (unsigned long long)st.discarded, published);
	zr_broker_free(q);
	zr_broker_free(rpc);
}

/* ---- dialling fan-out subscribers, and one that comes and goes ------------------ */

struct watcher {
	zr_broker *b;
	struct tally t;
	atomic_uint probes;
};

static void
watch_handler(const struct zr_delivery *d, void *arg)
{
	struct watcher *w = arg;

	if (strcmp(d->name, "w.probe") == 0) {
		atomic_fetch_add(&w->probes, 1);
		return;
	}
	ST_CHECK(strcmp(d->name, "w.data") == 0, "watcher: %s", d->name);
	tally_add(&w->t, d->payload, d->payload_len);
}

static void
nop_handler(const struct zr_delivery *d, void *arg)
{
	(void)d;
	(void)arg;
}

struct watch {
	char ep[128];
	zr_broker *pubb, *churnb;
	struct watcher w[2];
	atomic_int stop;
	unsigned churns;
	pthread_t pub_th, churn_th;
};

static zr_broker *
dialler(const char *ep)
{
	zr_broker *b = NULL;

	ST_OK(zr_broker_new(ctx, ZR_FANOUT, ep, ZR_CONNECT, &b));
	ST_OK(zr_broker_start(b));
	return b;
}

/* Probes until both watchers are subscribed, then NQ counted messages. */
static void *
watch_pub_main(void *arg)
{
	struct watch *wa = arg;
	zr_publisher *p = publisher(wa->pubb);
	uint8_t *buf = malloc(ST_MAXLEN);
	uint64_t until = zt_now_ms() + ST_WAIT_MS;

	ST_CHECK(buf != NULL, "malloc");
	while (atomic_load(&wa->w[0].probes) == 0 || atomic_load(&wa->w[1].probes) == 0) {
		ST_CHECK(zt_now_ms() < until, "watchers never saw a probe");
		ST_OK(zr_publish(p, "w.probe", NULL, 0, "p", 1, ST_WAIT_MS));
		zt_sleep_ms(5);
	}
	for (uint32_t i = 0; i < NQ; i++) {
		size_t len = st_payload(buf, 0, i);
		struct zr_header h = {"from", "tsan"};
		int rc = zr_publish(p, "w.data", &h, 1, buf, len, ST_WAIT_MS);

		ST_CHECK(rc == 0, "watch publish %u: %s (%s)", i, zr_strerror(rc),
		         zr_publisher_error(p));
	}
	free(buf);
	return NULL;
}

/* Subscribes and unsubscribes on a third dialling broker while the
 * publisher runs: its connection comes and goes under the fan-out. */
static void *
watch_churn_main(void *arg)
{
	struct watch *wa = arg;

	while (!atomic_load(&wa->stop)) {
		zr_subscription *sub =
			subscribe(wa->churnb, "w",
		                  &(struct zr_sub_opts){.handler = nop_handler, .workers = 2});

		zt_sleep_ms(3);
		zr_unsubscribe(sub);
		wa->churns++;
	}
	return NULL;
}

static void
watch_start(struct watch *wa)
{
	static atomic_uint n;

	snprintf(wa->ep, sizeof wa->ep, "ipc://@zring-tsan-%d-watch-%u", (int)getpid(),
	         atomic_fetch_add(&n, 1));
	ST_OK(zr_broker_new(ctx, ZR_FANOUT, wa->ep, ZR_BIND, &wa->pubb));
	ST_OK(zr_broker_start(wa->pubb));
	for (int i = 0; i < 2; i++) {
		wa->w[i].b = dialler(wa->ep);
		subscribe(wa->w[i].b, "w",
		          &(struct zr_sub_opts){
				  .handler = watch_handler, .arg = &wa->w[i], .workers = 2});
	}
	wa->churnb = dialler(wa->ep);
	atomic_init(&wa->stop, 0);
	st_thread(&wa->churn_th, watch_churn_main, wa);
	st_thread(&wa->pub_th, watch_pub_main, wa);
}

static void
watch_finish(struct watch *wa)
{
	st_join(wa->pub_th);
	atomic_store(&wa->stop, 1);
	st_join(wa->churn_th);
	ST_CHECK(wa->churns > 0, "the churning subscriber never subscribed");
	for (int i = 0; i < 2; i++) {
		wait_until(&wa->w[i].t.handled, NQ, "watcher");
		zt_sleep_ms(20);
		tally_check(&wa->w[i].t, 1, NQ, "watcher");
		zr_broker_free(wa->w[i].b);
	}
	zr_broker_free(wa->churnb);
	zr_broker_free(wa->pubb);
}

/* ---- all together ----------------------------------------------------------------- */

int
main(void)
{
	static struct tally tq, tb, tf;
	static struct lanes ln;
	static struct responder rs;
	struct pubber uq[3], ub[2], uk[1], uf[2];
	struct requester rq[NREQUESTERS];
	zr_broker *bq, *bb, *bk, *bf, *br;
	struct zr_pub_stats ps;
	uint64_t unmatched = 0, t0;

	st_start("broker");
	t0 = zt_now_ms();
	ST_OK(zr_ctx_new(&ctx));

	bq = broker(ZR_QUEUE);
	subscribe(bq, "jobs",
	          &(struct zr_sub_opts){.handler = tally_handler, .arg = &tq, .workers = 4});
	bb = broker(ZR_QUEUE);
	subscribe(bb, "jobs",
	          &(struct zr_sub_opts){
			  .batch_handler = tally_batch, .arg = &tb, .workers = 2, .batch = 16});
	/* Lane 1 starts at seq 0, lane 2 at 1, lane 0 at 2. */
	atomic_init(&ln.next[0], 2);
	atomic_init(&ln.next[1], 0);
	atomic_init(&ln.next[2], 1);
	bk = broker(ZR_QUEUE);
	subscribe(bk, "jobs",
	          &(struct zr_sub_opts){
			  .handler = lane_handler, .arg = &ln, .workers = 3, .by_key = 1});
	bf = broker(ZR_FANOUT);
	subscribe(bf, "ev",
	          &(struct zr_sub_opts){.handler = tally_handler, .arg = &tf, .workers = 2});
	br = broker(ZR_RPC);
	for (int i = 0; i < RPC_LANES; i++)
		rs.pub[i] = publisher(br);
	subscribe(br, "svc",
	          &(struct zr_sub_opts){.handler = rpc_handler, .arg = &rs, .workers = 4});

	pubbers_run(uq, 3, bq, "jobs", NULL, NQ, true);
	pubbers_run(ub, 2, bb, "jobs", NULL, NQ, true);
	pubbers_run(uk, 1, bk, "jobs", NULL, NQ, false);
	pubbers_run(uf, 2, bf, "ev.x", "zz", NQ, false);
	for (unsigned i = 0; i < NREQUESTERS; i++) {
		rq[i] = (struct requester){.p = publisher(br), .id = i};
		st_thread(&rq[i].th, requester_main, &rq[i]);
	}
	static struct watch wa;

	watch_start(&wa);
	cancel_run();
	for (int r = 0; r < 3; r++)
		shutdown_run(r);

	watch_finish(&wa);
	pubbers_join(uq, 3);
	pubbers_join(ub, 2);
	pubbers_join(uk, 1);
	pubbers_join(uf, 2);
	for (unsigned i = 0; i < NREQUESTERS; i++)
		st_join(rq[i].th);
	wait_until(&tq.handled, 3 * NQ, "queue");
	wait_until(&tb.handled, 2 * NQ, "batches");
	wait_until(&ln.t.handled, NQ, "by_key");
	wait_until(&tf.handled, NQ, "fanout"); /* 2 x NQ / 2 matched */
	/* The handler counts after zr_reply returns: the reply may be there first. */
	wait_until(&rs.answered, NREQUESTERS * NREQ, "rpc: answered");
	for (int i = 0; i < 2; i++) {
		uint64_t until = zt_now_ms() + ST_WAIT_MS;

		/* Counted by the io thread a moment after the publish returned. */
		for (;;) {
			zr_publisher_stats(uf[i].p, &ps);
			if (ps.unmatched >= NQ / 2 || zt_now_ms() >= until)
				break;
			zt_sleep_ms(2);
		}
		unmatched += ps.unmatched;
	}
	zt_sleep_ms(50); /* a duplicate would show now */
	ST_CHECK(atomic_load(&rs.answered) == NREQUESTERS * NREQ, "rpc: %u answered",
	         atomic_load(&rs.answered));
	tally_check(&tq, 3, NQ, "queue");
	tally_check(&tb, 2, NQ, "batches");
	tally_check(&ln.t, 1, NQ, "by_key");
	ST_CHECK(atomic_load(&tf.handled) == NQ, "fanout: %u handled", atomic_load(&tf.handled));
	ST_CHECK(unmatched == NQ, "fanout: %llu unmatched, want %u", (unsigned long long)unmatched,
	         NQ);

	zr_broker_free(bq);
	zr_broker_free(bb);
	zr_broker_free(bk);
	zr_broker_free(bf);
	zr_broker_free(br);
	zr_ctx_free(ctx);
	printf("broker: every count exact, %u subscribe/unsubscribe cycles (%llu ms)\n", wa.churns,
	       (unsigned long long)(zt_now_ms() - t0));
	return 0;
}
