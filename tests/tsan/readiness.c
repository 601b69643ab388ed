/*
 * zr_socket_poll_events driving both ends as an event loop would: a PUSH
 * thread that only ever sends with ZR_DONTWAIT after POLLOUT, waiting on
 * zr_socket_fd otherwise, and a PULL thread that receives the same way
 * (small HWMs, so both sides keep losing and regaining readiness), over
 * tcp:// and ipc://. Every POLLOUT must be a send that goes and every
 * POLLIN a message, every wait must end in a wake, and the counts are
 * exact. Then a conflating PULL beside a sender that never waits: the
 * reader sees increasing numbers ending at the last.
 */
#include "stress.h"

#define N 20000u

struct side {
	zr_socket *s;
	pthread_t th;
	uint32_t n;
};

/* Waits on the socket's fd; a wait with no wake is a lost edge. */
static void
wait_fd(zr_socket *s, const char *what)
{
	struct pollfd p = {.fd = zr_socket_fd(s), .events = POLLIN};

	ST_CHECK(poll(&p, 1, ST_WAIT_MS) == 1, "%s: no wake in %d ms", what, ST_WAIT_MS);
}

static void *
sender_main(void *arg)
{
	struct side *sd = arg;
	uint8_t *buf = st_buf();

	for (uint32_t seq = 0; seq < sd->n;) {
		if (zr_socket_poll_events(sd->s) & ZR_POLLOUT) {
			size_t len = st_payload(buf, 0, seq);
			int rc = zr_send_bytes(sd->s, buf, len, ZR_DONTWAIT);

			ST_CHECK(rc == 0, "send %u after POLLOUT: %s", seq, zr_strerror(rc));
			seq++;
		} else {
			wait_fd(sd->s, "sender");
		}
	}
	free(buf);
	return NULL;
}

static void *
receiver_main(void *arg)
{
	struct side *sd = arg;
	uint8_t *buf = st_buf();

	for (uint32_t want = 0; want < sd->n;) {
		if (zr_socket_poll_events(sd->s) & ZR_POLLIN) {
			uint32_t sender, seq;
			int rc = zr_recv_bytes(sd->s, buf, ST_MAXLEN, ZR_DONTWAIT);

			ST_CHECK(rc >= 0, "receive %u after POLLIN: %s", want, zr_strerror(rc));
			st_payload_check(buf, (size_t)rc, &sender, &seq);
			ST_CHECK(seq == want, "got %u, want %u", seq, want);
			want++;
		} else {
			wait_fd(sd->s, "receiver");
		}
	}
	free(buf);
	return NULL;
}

static void
run(zr_ctx *ctx, enum st_transport t)
{
	struct side tx = {.n = N}, rx = {.n = N};
	char ep[128];

	tx.s = st_socket(ctx, ZR_PUSH);
	rx.s = st_socket(ctx, ZR_PULL);
	st_opt(tx.s, ZR_SNDHWM, 8);
	st_opt(rx.s, ZR_RCVHWM, 8);
	st_bind(rx.s, t, ep, sizeof ep);
	ST_OK(zr_connect(tx.s, ep));
	st_thread(&rx.th, receiver_main, &rx);
	st_thread(&tx.th, sender_main, &tx);
	st_join(tx.th);
	st_join(rx.th);
	zr_socket_close(tx.s);
	zr_socket_close(rx.s);
	printf("%s: %u messages, each send after POLLOUT, each receive after POLLIN\n",
	       st_transport_name(t), N);
}

static void *
conflate_reader(void *arg)
{
	struct side *sd = arg;
	uint8_t *buf = st_buf();
	uint32_t last = 0, got = 0;
	bool first = true;

	while (first || last != sd->n - 1) {
		uint32_t sender, seq;
		int rc = zr_recv_bytes(sd->s, buf, ST_MAXLEN, 0);

		ST_CHECK(rc >= 0, "conflate: receive after %u: %s", got, zr_strerror(rc));
		st_payload_check(buf, (size_t)rc, &sender, &seq);
		ST_CHECK(first || seq > last, "conflate: %u after %u", seq, last);
		first = false;
		last = seq;
		got++;
	}
	printf("conflate: %u of %u read, the last among them\n", got, sd->n);
	free(buf);
	return NULL;
}

static void
run_conflate(zr_ctx *ctx, enum st_transport t)
{
	struct side rx = {.n = N};
	zr_socket *push = st_socket(ctx, ZR_PUSH);
	uint8_t *buf = st_buf();
	char ep[128];

	rx.s = st_socket(ctx, ZR_PULL);
	st_opt(rx.s, ZR_CONFLATE, 1);
	st_opt(rx.s, ZR_RCVHWM, 2);
	st_bind(rx.s, t, ep, sizeof ep);
	ST_OK(zr_connect(push, ep));
	st_thread(&rx.th, conflate_reader, &rx);
	for (uint32_t seq = 0; seq < N; seq++)
		st_send_payload(push, buf, 0, seq, "conflate sender");
	st_join(rx.th);
	zr_socket_close(push);
	zr_socket_close(rx.s);
	free(buf);
}

int
main(void)
{
	zr_ctx *ctx;

	st_start("readiness");
	ST_OK(zr_ctx_new(&ctx));
	run(ctx, ST_TCP);
	run(ctx, ST_IPC);
	run_conflate(ctx, ST_TCP);
	zr_ctx_free(ctx);
	return 0;
}
