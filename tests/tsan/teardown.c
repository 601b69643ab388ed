/*
 * zr_socket_close and zr_ctx_free racing the io thread and blocked app
 * calls, round after round. Each round frees a "victim" context while:
 *
 *   - app threads are blocked in it: a receive on a PULL nobody feeds, a send
 *     on a PUSH with no peer, and a receive and a send on one DEALER from two
 *     threads at once (as the broker does); each must return -ETERM
 *     (zring.h: "Blocking sends and receives in other threads return -ETERM");
 *   - its io thread is busy: a closed PUSH still flushing a burst (LINGER -1,
 *     so every message of it must reach the survivor, exactly), a PULL the
 *     survivor floods, and a DEALER whose handshake may be in flight;
 *   - a thread of its own closed that PUSH right after its burst;
 *   - messages received from it are still held: they and their connection's
 *     properties (zr_msg_gets) must outlive it.
 *
 * The survivor context lives across rounds: its threads keep receiving and
 * sending while the victim's connections go away under them. Odd rounds run
 * the victim without membarrier (socket.c's locked call counter), as the
 * engine tests do, so both ways of holding a socket under a call are raced.
 *
 * Then four threads each make and free contexts side by side, with traffic
 * in each, never closing a socket by hand.
 *
 * A blocked call must be inside its socket before the context is freed (a
 * call that starts after the free uses freed memory: the caller's bug), so
 * the round waits for the socket's call counts, which are internal
 * (engine/engine.h), as tests/engine/test_sockets.c does.
 */
#include "stress.h"

#include "engine/engine.h"

#define ROUNDS 16
#define BURST 400u /* messages the victim's PUSH sends, then closes */
#define KEPT 10    /* messages received in the victim, freed after it */

static zr_ctx *survivor;

/* ---- the victim's blocked calls -------------------------------------------- */

struct blocked {
	zr_socket *s;
	bool send;
	atomic_int started;
	int rc;
	pthread_t th;
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;
	zr_msg *m = NULL;

	atomic_store(&b->started, 1);
	if (b->send) {
		ST_OK(zr_msg_new(&m));
		ST_OK(zr_msg_add(m, "stuck", 5));
		b->rc = zr_send(b->s, &m, 0);
		zr_msg_free(m); /* a failed send leaves it with us */
	} else {
		b->rc = zr_recv(b->s, &m, 0);
		zr_msg_free(m);
	}
	return NULL;
}

static void
blocked_start(struct blocked *b, zr_socket *s, bool send)
{
	b->s = s;
	b->send = send;
	b->rc = 1;
	atomic_init(&b->started, 0);
	st_thread(&b->th, blocked_main, b);
}

/* The app calls inside s now (socket.c's counts). */
static unsigned
calls_in(zr_socket *s)
{
	return (unsigned)atomic_load(&s->calls) + atomic_load(&s->calls_tx) +
	       atomic_load(&s->calls_rx);
}

static void
wait_calls(zr_socket *s, unsigned want)
{
	uint64_t until = zt_now_ms() + ST_WAIT_MS;

	while (calls_in(s) < want) {
		ST_CHECK(zt_now_ms() < until, "socket shows %u calls, want %u", calls_in(s), want);
		zt_sleep_ms(1);
	}
}

/* ---- the victim's PUSH: a burst, then closed by its own thread ------------- */

struct burst {
	zr_socket *s;
	pthread_t th;
};

static void *
burst_main(void *arg)
{
	struct burst *b = arg;
	uint8_t *buf = malloc(ST_MAXLEN);

	ST_CHECK(buf != NULL, "malloc");
	for (uint32_t i = 0; i < BURST; i++) {
		size_t len = st_payload(buf, 7, i);

		ST_OK(zr_send_bytes(b->s, buf, len, 0));
	}
	/* LINGER -1 (the default): the burst keeps going out after this,
	 * through the context's free. */
	zr_socket_close(b->s);
	free(buf);
	return NULL;
}

/* ---- the survivor's threads ------------------------------------------------ */

/* Receives the victim's burst: exactly BURST messages, in order. */
struct sink {
	zr_socket *s;
	pthread_t th;
};

static void *
sink_main(void *arg)
{
	struct sink *k = arg;
	uint8_t *buf = malloc(ST_MAXLEN);

	ST_CHECK(buf != NULL, "malloc");
	for (uint32_t i = 0; i < BURST; i++) {
		uint32_t sender, seq;
		int rc = zr_recv_bytes(k->s, buf, ST_MAXLEN, 0);

		ST_CHECK(rc >= 0, "sink: message %u of the closed PUSH's %u: %s", i, BURST,
		         zr_strerror(rc));
		st_payload_check(buf, (size_t)rc, &sender, &seq);
		ST_CHECK(sender == 7 && seq == i, "sink: (%u, %u), want (7, %u)", sender, seq, i);
	}
	/* Nothing more comes: the victim is gone. */
	st_opt(k->s, ZR_RCVTIMEO, 100);
	ST_CHECK(zr_recv_bytes(k->s, buf, ST_MAXLEN, 0) == -EAGAIN, "sink: more than the burst");
	free(buf);
	return NULL;
}

/* Floods the victim's PULL until told to stop; the victim going away only
 * makes its sends wait. */
struct flood {
	zr_socket *s;
	atomic_int stop;
	atomic_uint sent;
	pthread_t th;
};

static void *
flood_main(void *arg)
{
	struct flood *f = arg;
	uint8_t buf[512];

	memset(buf, 0x5a, sizeof buf);
	while (!atomic_load(&f->stop)) {
		int rc = zr_send_bytes(f->s, buf, (atomic_load(&f->sent) * 13) % sizeof buf,
		                       ZR_DONTWAIT);

		ST_CHECK(rc == 0 || rc == -EAGAIN, "flood: %s", zr_strerror(rc));
		if (rc == 0)
			atomic_fetch_add(&f->sent, 1);
		else
			zt_sleep_ms(1);
	}
	return NULL;
}

/* ---- one round --------------------------------------------------------------- */

static void
round_run(int round, enum st_transport t)
{
	zr_ctx *victim;
	char ep_sink[128], ep_flood[128], ep_router[128], ep_idle[128];
	struct blocked blk[4];
	struct burst burst;
	struct sink sink;
	struct flood flood;
	zr_msg *kept[KEPT];
	zr_socket *sink_s, *flood_s, *router, *idle_pull, *lonely_push, *dealer, *push, *pull,
		*late;

	/* The survivor's side of this round. */
	sink_s = st_socket(survivor, ZR_PULL);
	st_bind(sink_s, t, ep_sink, sizeof ep_sink);
	flood_s = st_socket(survivor, ZR_PUSH);
	st_bind(flood_s, t, ep_flood, sizeof ep_flood);
	router = st_socket(survivor, ZR_ROUTER);
	st_bind(router, t, ep_router, sizeof ep_router);

	ST_OK(zr_ctx_new(&victim));
	if (round % 2 == 1)
		victim->membarrier = false; /* before any socket: read only to free one */

	/* Blocked calls. */
	idle_pull = st_socket(victim, ZR_PULL);
	st_bind(idle_pull, t, ep_idle, sizeof ep_idle);
	lonely_push = st_socket(victim, ZR_PUSH);
	dealer = st_socket(victim, ZR_DEALER);
	ST_OK(zr_bind(dealer, "tcp://127.0.0.1:0"));
	st_opt(idle_pull, ZR_RCVTIMEO, -1);
	st_opt(lonely_push, ZR_SNDTIMEO, -1);
	st_opt(dealer, ZR_RCVTIMEO, -1);
	st_opt(dealer, ZR_SNDTIMEO, -1);
	blocked_start(&blk[0], idle_pull, false);
	blocked_start(&blk[1], lonely_push, true);
	blocked_start(&blk[2], dealer, false);
	blocked_start(&blk[3], dealer, true);

	/* Traffic. */
	push = st_socket(victim, ZR_PUSH);
	ST_OK(zr_connect(push, ep_sink));
	pull = st_socket(victim, ZR_PULL);
	st_opt(pull, ZR_RCVHWM, 100000);
	ST_OK(zr_connect(pull, ep_flood));
	sink.s = sink_s;
	st_thread(&sink.th, sink_main, &sink);
	flood.s = flood_s;
	atomic_init(&flood.sent, 0);
	atomic_init(&flood.stop, 0);
	st_thread(&flood.th, flood_main, &flood);
	burst.s = push;
	st_thread(&burst.th, burst_main, &burst);

	/* The victim's own thread closed its PUSH; the blocked calls are in. */
	st_join(burst.th);
	wait_calls(idle_pull, 1);
	wait_calls(lonely_push, 1);
	wait_calls(dealer, 2);
	/* The flood reaches the victim's PULL: its io thread is reading. */
	for (uint64_t until = zt_now_ms() + ST_WAIT_MS; atomic_load(&flood.sent) < 200;) {
		ST_CHECK(zt_now_ms() < until, "round %d: the flood never reached the victim",
		         round);
		zt_sleep_ms(1);
	}
	/* Messages that outlive their context: each holds its connection's
	 * properties (a reference the io thread shares out in blocks). */
	for (int i = 0; i < KEPT; i++) {
		int rc = zr_recv(pull, &kept[i], 0);

		ST_CHECK(rc == 0, "round %d: receive from the flood: %s", round, zr_strerror(rc));
	}
	late = st_socket(victim, ZR_DEALER);
	ST_OK(zr_connect(late, ep_router)); /* its handshake races the free */
	(void)late;
	zr_ctx_free(victim);

	for (int i = 0; i < 4; i++) {
		st_join(blk[i].th);
		ST_CHECK(blk[i].rc == -ETERM,
		         "round %d: blocked call %d returned %d (%s), want -ETERM", round, i,
		         blk[i].rc, zr_strerror(blk[i].rc));
	}
	for (int i = 0; i < KEPT; i++) {
		const char *type = zr_msg_gets(kept[i], "Socket-Type");

		ST_CHECK(type != NULL && strcmp(type, "PUSH") == 0,
		         "round %d: a kept message's Socket-Type is %s", round,
		         type ? type : "NULL");
		ST_CHECK(zr_msg_gets(kept[i], "Peer-Address") != NULL, "no Peer-Address");
		zr_msg_free(kept[i]);
	}
	st_join(sink.th);
	atomic_store(&flood.stop, 1);
	st_join(flood.th);
	for (zr_socket **s = (zr_socket *[]){sink_s, flood_s, router, NULL}; *s != NULL; s++) {
		st_opt(*s, ZR_LINGER, 0);
		zr_socket_close(*s);
	}
}

/* ---- contexts made and freed side by side ----------------------------------- */

#define LIVES 10 /* contexts per thread */
#define LIFE_MSGS 100u

struct lifer {
	unsigned id;
	pthread_t th;
};

/* Each context lives a short life on its own thread: a PAIR talks to
 * another across it, and zr_ctx_free closes both (they are never closed by
 * hand), while the other threads do the same. */
static void *
lifer_main(void *arg)
{
	struct lifer *l = arg;
	uint8_t buf[64];

	for (unsigned life = 0; life < LIVES; life++) {
		zr_ctx *c;
		char ep[128];
		enum st_transport t = (l->id + life) % 2 ? ST_IPC : ST_TCP;

		ST_OK(zr_ctx_new(&c));
		zr_socket *a = st_socket(c, ZR_PAIR), *b = st_socket(c, ZR_PAIR);

		st_bind(a, t, ep, sizeof ep);
		ST_OK(zr_connect(b, ep));
		for (uint32_t i = 0; i < LIFE_MSGS; i++)
			ST_OK(zr_send_bytes(a, &i, sizeof i, 0));
		for (uint32_t i = 0; i < LIFE_MSGS; i++) {
			uint32_t got;
			int rc = zr_recv_bytes(b, buf, sizeof buf, 0);

			ST_CHECK(rc == (int)sizeof got, "life %u of thread %u: receive %u: %s",
			         life, l->id, i, zr_strerror(rc));
			memcpy(&got, buf, sizeof got);
			ST_CHECK(got == i, "life %u: message %u, want %u", life, got, i);
		}
		/* One more on the way out: LINGER -1 lets it go before the free. */
		ST_OK(zr_send_bytes(b, "bye", 3, 0));
		zr_ctx_free(c);
	}
	return NULL;
}

int
main(void)
{
	uint64_t t0;

	st_start("teardown");
	t0 = zt_now_ms();
	ST_OK(zr_ctx_new(&survivor));
	for (int r = 0; r < ROUNDS; r++)
		round_run(r, r % 4 < 2 ? ST_TCP : ST_IPC);
	zr_ctx_free(survivor);

	struct lifer lf[4];

	for (unsigned i = 0; i < 4; i++) {
		lf[i].id = i;
		st_thread(&lf[i].th, lifer_main, &lf[i]);
	}
	for (unsigned i = 0; i < 4; i++)
		st_join(lf[i].th);
	printf("teardown: %d rounds, every blocked call -ETERM, every burst delivered; %d contexts "
	       "side by side (%llu ms)\n",
	       ROUNDS, 4 * LIVES, (unsigned long long)(zt_now_ms() - t0));
	return 0;
}
