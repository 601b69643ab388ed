/*
 * inproc:// under load from app threads, one context (one io thread), every
 * socket on its own thread:
 *
 *   PUSH x2 -> PULL          every message once, each sender's in order; small
 *                            HWMs, so senders keep meeting a full pipe
 *   DEALER x2 <-> ROUTER     a window of requests in flight, each echoed to its
 *                            sender by routing id
 *   PAIR <-> PAIR            both ends send and receive at once
 *   PUB -> SUB x2            PUB_BLOCK, small HWMs: every message to both, in
 *                            order (a fan-out copies for all but the last)
 *   connect before bind      PUSH connects, sends, and only then the PULL binds
 *   close while sending      a PULL closes while its PUSH keeps sending
 *                            (LINGER 0): the pipe goes under the sender
 *
 * Messages move by pointer between the threads, so this is where a message
 * still touched by its sender after the handoff would show. Each check is
 * an exact count; the program exits 1 on the first wrong one.
 */
#include "stress.h"

#define N 20000u   /* messages per sender */
#define NREQ 4000u /* DEALER requests per client */
#define WINDOW 16u

static zr_ctx *ctx;

struct actor {
	zr_socket *s;
	uint32_t id;
	pthread_t th;
};

/* ---- PUSH x2 -> PULL ---- */

static void *
pusher(void *arg)
{
	struct actor *a = arg;

	st_send_n(a->s, a->id, N, "push");
	return NULL;
}

static void *
puller(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint32_t next[2] = {0, 0};

	for (uint32_t i = 0; i < 2 * N; i++) {
		uint32_t sender, seq;

		st_recv_payload(a->s, buf, "pull", &sender, &seq);
		ST_CHECK(sender < 2 && seq == next[sender], "pull: sender %u seq %u, want %u",
		         sender, seq, sender < 2 ? next[sender] : 0);
		next[sender]++;
	}
	free(buf);
	return NULL;
}

/* ---- DEALER x2 <-> ROUTER ---- */

static void *
dealer(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint32_t sent = 0, got = 0;

	while (got < NREQ) {
		while (sent < NREQ && sent - got < WINDOW)
			st_send_payload(a->s, buf, a->id, sent++, "dealer");
		uint32_t sender, seq;

		st_recv_payload(a->s, buf, "dealer", &sender, &seq);
		ST_CHECK(sender == a->id && seq == got, "dealer %u: echo %u/%u, want %u", a->id,
		         sender, seq, got);
		got++;
	}
	free(buf);
	return NULL;
}

static void *
router(void *arg)
{
	struct actor *a = arg;

	for (uint32_t i = 0; i < 2 * NREQ; i++) {
		zr_msg *m = NULL;
		size_t idlen;
		int rc = zr_recv(a->s, &m, 0);

		ST_CHECK(rc == 0, "router: receive: %s", zr_strerror(rc));
		ST_CHECK(zr_msg_frames(m) == 2, "router: %zu frames", zr_msg_frames(m));
		const char *id = zr_msg_frame(m, 0, &idlen);

		ST_CHECK(idlen == 2 && id[0] == 'd', "router: routing id of %zu octets", idlen);
		rc = zr_send(a->s, &m, 0); /* the same message back: id, payload */
		ST_CHECK(rc == 0, "router: send: %s", zr_strerror(rc));
	}
	return NULL;
}

/* ---- PAIR <-> PAIR ---- */

static void *
pair_send(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();

	for (uint32_t i = 0; i < N; i++)
		st_send_payload(a->s, buf, a->id, i, "pair");
	free(buf);
	return NULL;
}

static void *
pair_recv(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();

	for (uint32_t i = 0; i < N; i++) {
		uint32_t sender, seq;

		st_recv_payload(a->s, buf, "pair", &sender, &seq);
		ST_CHECK(sender == (a->id ^ 1u) && seq == i, "pair %u: %u/%u, want %u", a->id,
		         sender, seq, i);
	}
	free(buf);
	return NULL;
}

/* ---- PUB -> SUB x2 ---- */

static atomic_int subs_warm;

static void *
pub_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	uint64_t until = zt_now_ms() + ST_WAIT_MS;

	/* Warm-up messages until both subscriptions are in, then the counted ones. */
	while (atomic_load(&subs_warm) < 2) {
		ST_CHECK(zt_now_ms() < until, "pub: subscribers never saw a warm-up message");
		ST_OK(zr_send_bytes(a->s, "w", 1, 0));
		zt_sleep_ms(2);
	}
	for (uint32_t i = 0; i < N; i++)
		st_send_payload(a->s, buf, a->id, i, "pub");
	free(buf);
	return NULL;
}

static void *
sub_main(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();
	bool warm = false;

	for (uint32_t next = 0; next < N;) {
		int rc = zr_recv_bytes(a->s, buf, ST_MAXLEN, 0);
		uint32_t sender, seq;

		ST_CHECK(rc >= 0, "sub: receive after %u: %s", next, zr_strerror(rc));
		if (rc == 1 && buf[0] == 'w') {
			if (!warm)
				atomic_fetch_add(&subs_warm, 1);
			warm = true;
			continue;
		}
		st_payload_check(buf, (size_t)rc, &sender, &seq);
		ST_CHECK(warm && seq == next, "sub: seq %u, want %u", seq, next);
		next++;
	}
	free(buf);
	return NULL;
}

/* ---- close while sending ---- */

static void *
doomed_pusher(void *arg)
{
	struct actor *a = arg;
	uint8_t *buf = st_buf();

	/* Until the PULL is gone and nothing has room: a timeout. */
	st_opt(a->s, ZR_SNDTIMEO, 200);
	for (uint32_t i = 0;; i++) {
		size_t len = st_payload(buf, a->id, i);

		if (zr_send_bytes(a->s, buf, len, 0) == -EAGAIN)
			break;
	}
	free(buf);
	return NULL;
}

int
main(void)
{
	static struct actor act[16];
	pthread_t pair_th[2];
	uint64_t t0;

	st_start("inproc");
	t0 = zt_now_ms();
	ST_OK(zr_ctx_new(&ctx));

	/* PUSH x2 -> PULL, connect before bind for one of them */
	act[0].s = st_socket(ctx, ZR_PULL);
	act[1].s = st_socket(ctx, ZR_PUSH);
	act[2].s = st_socket(ctx, ZR_PUSH);
	st_opt(act[0].s, ZR_RCVHWM, 16);
	st_opt(act[1].s, ZR_SNDHWM, 8);
	st_opt(act[2].s, ZR_SNDHWM, 8);
	act[1].id = 0;
	act[2].id = 1;
	ST_OK(zr_connect(act[1].s, "inproc://pipeline"));
	ST_OK(zr_bind(act[0].s, "inproc://pipeline"));
	ST_OK(zr_connect(act[2].s, "inproc://pipeline"));
	st_thread(&act[0].th, puller, &act[0]);
	st_thread(&act[1].th, pusher, &act[1]);
	st_thread(&act[2].th, pusher, &act[2]);

	/* DEALER x2 <-> ROUTER */
	act[3].s = st_socket(ctx, ZR_ROUTER);
	ST_OK(zr_bind(act[3].s, "inproc://echo"));
	for (int i = 0; i < 2; i++) {
		char id[2] = {'d', (char)('0' + i)};

		act[4 + i].s = st_socket(ctx, ZR_DEALER);
		act[4 + i].id = 10u + (uint32_t)i;
		ST_OK(zr_setsockopt(act[4 + i].s, ZR_ROUTING_ID, id, 2));
		ST_OK(zr_connect(act[4 + i].s, "inproc://echo"));
	}
	st_thread(&act[3].th, router, &act[3]);
	st_thread(&act[4].th, dealer, &act[4]);
	st_thread(&act[5].th, dealer, &act[5]);

	/* PAIR <-> PAIR, each end sending on one thread and receiving on another */
	act[6].s = st_socket(ctx, ZR_PAIR);
	act[7].s = st_socket(ctx, ZR_PAIR);
	act[6].id = 20;
	act[7].id = 21;
	ST_OK(zr_bind(act[6].s, "inproc://pair"));
	ST_OK(zr_connect(act[7].s, "inproc://pair"));
	st_thread(&act[6].th, pair_send, &act[6]);
	st_thread(&pair_th[0], pair_recv, &act[7]);
	st_thread(&act[7].th, pair_send, &act[7]);
	st_thread(&pair_th[1], pair_recv, &act[6]);

	/* PUB -> SUB x2 */
	act[10].s = st_socket(ctx, ZR_PUB);
	st_opt(act[10].s, ZR_PUB_POLICY, ZR_PUB_BLOCK);
	st_opt(act[10].s, ZR_SNDHWM, 8);
	act[10].id = 40;
	ST_OK(zr_bind(act[10].s, "inproc://fan"));
	for (int i = 0; i < 2; i++) {
		act[11 + i].s = st_socket(ctx, ZR_SUB);
		st_opt(act[11 + i].s, ZR_RCVHWM, 8);
		ST_OK(zr_setsockopt(act[11 + i].s, ZR_SUBSCRIBE, "", 0));
		ST_OK(zr_connect(act[11 + i].s, "inproc://fan"));
		st_thread(&act[11 + i].th, sub_main, &act[11 + i]);
	}
	st_thread(&act[10].th, pub_main, &act[10]);

	/* close while sending */
	act[8].s = st_socket(ctx, ZR_PULL);
	act[9].s = st_socket(ctx, ZR_PUSH);
	act[9].id = 30;
	ST_OK(zr_bind(act[8].s, "inproc://doomed"));
	ST_OK(zr_connect(act[9].s, "inproc://doomed"));
	st_thread(&act[9].th, doomed_pusher, &act[9]);
	usleep(1000);
	st_opt(act[8].s, ZR_LINGER, 0);
	zr_socket_close(act[8].s);

	for (int i = 0; i < 8; i++)
		st_join(act[i].th);
	st_join(pair_th[0]);
	st_join(pair_th[1]);
	st_join(act[9].th);
	for (int i = 10; i < 13; i++)
		st_join(act[i].th);
	for (int i = 0; i < 13; i++) {
		if (i == 8)
			continue;
		st_opt(act[i].s, ZR_LINGER, 0);
		zr_socket_close(act[i].s);
	}
	zr_ctx_free(ctx);
	printf("inproc: all counts exact (%llu ms)\n", (unsigned long long)(zt_now_ms() - t0));
	return 0;
}
