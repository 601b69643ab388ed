/*
 * ZAP (RFC 27) under load: one context, a handler thread (a REP bound at
 * inproc://zeromq.zap.01) answering every PLAIN handshake of a tcp:// PULL,
 * while app threads connect at once:
 *
 *   good clients x4     right password: every message delivered once, in
 *                       order per client, each with the handler's User-Id
 *   refused clients x2  wrong password, again and again: nothing delivered
 *   leavers x2          connect and close at once, again and again: their
 *                       requests are answered after they went (the handler
 *                       is slow for them), and the late replies are dropped
 *
 * The requests and replies cross the io thread by pointer; a connection
 * closed while its request waits must leave nothing behind that a late reply
 * touches. Exact counts; the program exits 1 on the first wrong one.
 */
#include "stress.h"

#define GOOD 4u
#define N 500u /* messages per good client */
#define ROUNDS 30u

static zr_ctx *ctx;
static atomic_int stop;
static atomic_uint asked;
static char server_ep[128];

static bool
frame_eq(const zr_msg *m, size_t i, const char *s)
{
	size_t n;
	const void *p = zr_msg_frame(m, i, &n);

	return p != NULL && n == strlen(s) && memcmp(p, s, n) == 0;
}

static void *
handler(void *arg)
{
	zr_socket *rep = arg;

	while (!atomic_load(&stop)) {
		zr_msg *m = NULL, *r = NULL;
		const void *id;
		size_t idlen;
		bool ok, slow;

		if (zr_recv(rep, &m, 0) != 0)
			continue; /* RCVTIMEO: look at stop */
		atomic_fetch_add(&asked, 1);
		ok = frame_eq(m, 5, "PLAIN") && frame_eq(m, 7, "right");
		slow = frame_eq(m, 6, "leaver");
		if (slow) {
			struct timespec ts = {0, 2000000};

			nanosleep(&ts, NULL); /* its client is gone by now */
		}
		id = zr_msg_frame(m, 1, &idlen);
		ST_OK(zr_msg_new(&r));
		ST_OK(zr_msg_add(r, "1.0", 3));
		ST_OK(zr_msg_add(r, id, idlen));
		ST_OK(zr_msg_add(r, ok ? "200" : "400", 3));
		ST_OK(zr_msg_add(r, "", 0));
		ST_OK(zr_msg_add(r, ok ? "granted" : "", ok ? 7 : 0));
		ST_OK(zr_msg_add(r, "", 0));
		ST_OK(zr_send(rep, &r, 0));
		zr_msg_free(m);
	}
	return NULL;
}

static zr_socket *
plain_push(const char *user, const char *pass)
{
	zr_socket *s = st_socket(ctx, ZR_PUSH);

	st_opt(s, ZR_LINGER, 0);
	ST_OK(zr_setsockopt(s, ZR_PLAIN_USERNAME, user, strlen(user)));
	ST_OK(zr_setsockopt(s, ZR_PLAIN_PASSWORD, pass, strlen(pass)));
	ST_OK(zr_connect(s, server_ep));
	return s;
}

static void *
good(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	zr_socket *s = plain_push("user", "right");
	char buf[16];

	for (uint32_t i = 0; i < N; i++) {
		memcpy(buf, &id, 4);
		memcpy(buf + 4, &i, 4);
		ST_OK(zr_send_bytes(s, buf, 8, 0));
	}
	st_opt(s, ZR_LINGER, -1); /* everything out before it goes */
	zr_socket_close(s);
	return NULL;
}

static void *
refused(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < ROUNDS; i++) {
		zr_socket *s = plain_push("user", "wrong");
		struct timespec ts = {0, 5000000};

		(void)zr_send_bytes(s, "never", 5, ZR_DONTWAIT); /* queued, or EAGAIN */
		nanosleep(&ts, NULL);
		zr_socket_close(s);
	}
	return NULL;
}

static void *
leaver(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < ROUNDS; i++)
		zr_socket_close(plain_push("leaver", "right"));
	return NULL;
}

int
main(void)
{
	pthread_t th_handler, th[GOOD + 4];
	zr_socket *rep, *pull;
	uint32_t next[GOOD] = {0};
	zr_msg *m = NULL;

	st_start("tsan_zap");
	ST_OK(zr_ctx_new(&ctx));
	rep = st_socket(ctx, ZR_REP);
	st_opt(rep, ZR_RCVTIMEO, 50);
	st_opt(rep, ZR_LINGER, 0);
	ST_OK(zr_bind(rep, "inproc://zeromq.zap.01"));
	st_thread(&th_handler, handler, rep);
	pull = st_socket(ctx, ZR_PULL);
	st_opt(pull, ZR_PLAIN_SERVER, 1);
	st_bind(pull, ST_TCP, server_ep, sizeof server_ep);

	for (uint32_t i = 0; i < GOOD; i++)
		st_thread(&th[i], good, (void *)(uintptr_t)i);
	st_thread(&th[GOOD], refused, NULL);
	st_thread(&th[GOOD + 1], refused, NULL);
	st_thread(&th[GOOD + 2], leaver, NULL);
	st_thread(&th[GOOD + 3], leaver, NULL);

	for (uint32_t k = 0; k < GOOD * N; k++) {
		uint32_t id, seq;
		size_t n;
		const void *p;
		const char *uid;

		ST_OK(zr_recv(pull, &m, 0));
		p = zr_msg_frame(m, 0, &n);
		ST_CHECK(p != NULL && n == 8, "message %u: %zu octets", k, n);
		memcpy(&id, p, 4);
		memcpy(&seq, (const uint8_t *)p + 4, 4);
		ST_CHECK(id < GOOD && seq == next[id], "client %u: seq %u, want %u", id, seq,
		         id < GOOD ? next[id] : 0);
		next[id]++;
		uid = zr_msg_gets(m, "User-Id");
		ST_CHECK(uid != NULL && strcmp(uid, "granted") == 0, "User-Id %s",
		         uid ? uid : "(none)");
		zr_msg_free(m);
	}
	for (uint32_t i = 0; i < GOOD + 4; i++)
		st_join(th[i]);
	ST_CHECK(zr_recv(pull, &m, ZR_DONTWAIT) == -EAGAIN, "a refused client got a message in");
	/* Each good client once at least; the others as far as their
	 * handshake got before they closed. */
	ST_CHECK(atomic_load(&asked) >= GOOD, "the handler was asked %u times",
	         atomic_load(&asked));
	atomic_store(&stop, 1);
	st_join(th_handler);
	zr_socket_close(pull);
	zr_socket_close(rep);
	zr_ctx_free(ctx);
	printf("tsan_zap: %u messages, %u requests\n", GOOD * N, atomic_load(&asked));
	return 0;
}
