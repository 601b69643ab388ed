/*
 * Monitor readers beside the socket's own traffic: a ROUTER hub bound on
 * tcp:// and on ipc://, one thread receiving its messages, another reading
 * its events (polling zr_monitor_fd), while churning threads (on a second context) connect DEALERs,
 * each reading its own socket's events, send one message and close, over
 * and over. Then the monitor's counts must be exact: one ACCEPTED, one
 * HANDSHAKE_SUCCEEDED and one DISCONNECTED per connection made, and the hub
 * one message per connection.
 */
#include "stress.h"

#define CHURNERS 4
#define ROUNDS 60 /* connections per churner */
#define TOTAL (CHURNERS * ROUNDS)

static zr_ctx *ctx_hub, *ctx_churn;
static char ep[2][128]; /* the hub's tcp and ipc addresses */

struct counts {
	atomic_uint accepted, handshakes, disconnected, other;
};

/* ---- the hub's two threads -------------------------------------------------- */

static void *
hub_main(void *arg)
{
	zr_socket *hub = arg;
	uint8_t seen[CHURNERS][ROUNDS] = {{0}};

	for (unsigned n = 0; n < TOTAL; n++) {
		zr_msg *m;
		size_t len;
		unsigned c, r;
		int rc = zr_recv(hub, &m, 0);

		ST_CHECK(rc == 0, "hub: receive after %u: %s", n, zr_strerror(rc));
		ST_CHECK(zr_msg_frames(m) == 2, "hub: %zu frames", zr_msg_frames(m));
		const char *body = zr_msg_frame(m, 1, &len);
		char text[9] = {0};

		memcpy(text, body, len < 8 ? len : 8);
		ST_CHECK(len == 8 && sscanf(text, "c%u r%u", &c, &r) == 2 && c < CHURNERS &&
		                 r < ROUNDS,
		         "hub: message %s (%zu octets)", text, len);
		ST_CHECK(seen[c][r]++ == 0, "hub: c%u r%u twice", c, r);
		zr_msg_free(m);
	}
	return NULL;
}

struct reader {
	zr_socket *hub;
	struct counts n;
	atomic_int stop;
	pthread_t th;
};

static void
count_event(struct counts *n, const struct zr_event *ev)
{
	switch (ev->type) {
	case ZR_EVENT_ACCEPTED:
		atomic_fetch_add(&n->accepted, 1);
		break;
	case ZR_EVENT_HANDSHAKE_SUCCEEDED:
		atomic_fetch_add(&n->handshakes, 1);
		break;
	case ZR_EVENT_DISCONNECTED:
		atomic_fetch_add(&n->disconnected, 1);
		break;
	default:
		atomic_fetch_add(&n->other, 1);
		break;
	}
}

static void *
reader_main(void *arg)
{
	struct reader *rd = arg;
	struct pollfd p = {.fd = zr_monitor_fd(rd->hub), .events = POLLIN};

	/* Driven by zr_monitor_fd, as an event loop would: a lost wake shows
	 * as a missing event at the end. */
	ST_CHECK(p.fd >= 0, "zr_monitor_fd: %d", p.fd);
	while (!atomic_load(&rd->stop)) {
		struct zr_event ev;
		int rc = zr_monitor_recv(rd->hub, &ev, 0);

		ST_CHECK(rc == 0 || rc == -EAGAIN, "monitor: %s", zr_strerror(rc));
		if (rc == 0)
			count_event(&rd->n, &ev);
		else
			(void)poll(&p, 1, 20);
	}
	return NULL;
}

/* ---- churners ------------------------------------------------------------------ */

struct churner {
	unsigned id;
	pthread_t th;
};

static void *
churner_main(void *arg)
{
	struct churner *ch = arg;

	for (unsigned r = 0; r < ROUNDS; r++) {
		zr_socket *d = st_socket(ctx_churn, ZR_DEALER);
		struct counts own = {0};
		char msg[16];
		uint64_t until = zt_now_ms() + ST_WAIT_MS;

		ST_OK(zr_socket_monitor(d, ZR_EVENT_ALL));
		ST_OK(zr_connect(d, ep[r % 2]));
		/* Its own events, on its own thread: the handshake first. */
		while (atomic_load(&own.handshakes) == 0) {
			struct zr_event ev;
			int rc;

			ST_CHECK(zt_now_ms() < until, "churner %u: no handshake", ch->id);
			rc = zr_monitor_recv(d, &ev, 50);
			ST_CHECK(rc == 0 || rc == -EAGAIN, "churner monitor: %s", zr_strerror(rc));
			if (rc == 0)
				count_event(&own, &ev);
		}
		snprintf(msg, sizeof msg, "c%02u r%03u", ch->id, r); /* 8 octets */
		ST_OK(zr_send_bytes(d, msg, 8, 0));
		/* LINGER -1 (the default): the message goes out before the
		 * connection closes. */
		zr_socket_close(d);
	}
	return NULL;
}

int
main(void)
{
	zr_socket *hub;
	pthread_t hub_th;
	static struct reader rd;
	struct churner ch[CHURNERS];
	uint64_t t0, until;

	st_start("monitor");
	t0 = zt_now_ms();
	ST_OK(zr_ctx_new(&ctx_hub));
	ST_OK(zr_ctx_new(&ctx_churn));
	hub = st_socket(ctx_hub, ZR_ROUTER);
	ST_OK(zr_socket_monitor(hub, ZR_EVENT_ALL));
	st_bind(hub, ST_TCP, ep[0], sizeof ep[0]);
	st_bind(hub, ST_IPC, ep[1], sizeof ep[1]);
	rd.hub = hub;
	atomic_init(&rd.stop, 0);
	st_thread(&rd.th, reader_main, &rd);
	st_thread(&hub_th, hub_main, hub);
	for (unsigned i = 0; i < CHURNERS; i++) {
		ch[i].id = i;
		st_thread(&ch[i].th, churner_main, &ch[i]);
	}
	for (unsigned i = 0; i < CHURNERS; i++)
		st_join(ch[i].th);
	st_join(hub_th);
	/* Every connection goes once its message went out and the churner's
	 * socket closed: wait for the last DISCONNECTED. */
	until = zt_now_ms() + ST_WAIT_MS;
	while (atomic_load(&rd.n.disconnected) < TOTAL && zt_now_ms() < until)
		zt_sleep_ms(5);
	zt_sleep_ms(100); /* an extra event would show now */
	atomic_store(&rd.stop, 1);
	st_join(rd.th);
	ST_CHECK(atomic_load(&rd.n.accepted) == TOTAL, "monitor: %u ACCEPTED, want %d",
	         atomic_load(&rd.n.accepted), TOTAL);
	ST_CHECK(atomic_load(&rd.n.handshakes) == TOTAL, "monitor: %u HANDSHAKE_SUCCEEDED, want %d",
	         atomic_load(&rd.n.handshakes), TOTAL);
	ST_CHECK(atomic_load(&rd.n.disconnected) == TOTAL, "monitor: %u DISCONNECTED, want %d",
	         atomic_load(&rd.n.disconnected), TOTAL);
	st_opt(hub, ZR_LINGER, 0);
	zr_socket_close(hub);
	zr_ctx_free(ctx_churn);
	zr_ctx_free(ctx_hub);
	printf("monitor: %d connections, every event and message counted once (%llu ms)\n", TOTAL,
	       (unsigned long long)(zt_now_ms() - t0));
	return 0;
}
