/*
 * ZR_CTX_CALLER_IO: app threads run the context's io while they wait and
 * send. Checked: the flags (unknown ones refused); REQ/REP round trips over
 * tcp and ipc with both sides caller-io, with and without ZR_BUSY_POLL, every
 * reply matching its request; a thread that ran the io and then exits takes
 * nothing with it (io_uring cancels an exiting thread's requests: the
 * engine re-arms them): a connection's receive, a listener's accept (a
 * bind carried out by a thread that then exits), and a large send still in
 * flight when its thread exits; a second thread's calls while the first
 * holds the io; the io thread taking over when no call runs (messages arrive with no
 * app call at all); -ETERM for a thread blocked in a receive when the
 * context is freed; and a blocked receive costs little CPU (a resource
 * measurement, never a duration).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "sock_helpers.h"

#define CIO_TRIPS 2000
#define CIO_WAIT_MS 15000

static zr_ctx *
cio_ctx(void)
{
	zr_ctx *ctx;

	cr_assert_eq(zr_ctx_new_flags(&ctx, ZR_CTX_CALLER_IO), 0);
	cr_assert(ctx->caller_io);
	return ctx;
}

static void
timeouts(zr_socket *s)
{
	sopt_int(s, ZR_RCVTIMEO, CIO_WAIT_MS);
	sopt_int(s, ZR_SNDTIMEO, CIO_WAIT_MS);
}

Test(engine_caller_io, flags)
{
	zr_ctx *ctx = NULL;

	cr_assert_eq(zr_ctx_new_flags(&ctx, 0), 0);
	cr_assert(!ctx->caller_io);
	zr_ctx_free(ctx);
	ctx = NULL;
	cr_assert_eq(zr_ctx_new_flags(&ctx, 2), -EINVAL);
	cr_assert_eq(zr_ctx_new_flags(&ctx, ~0u), -EINVAL);
	cr_assert_null(ctx);
	zr_ctx_free(cio_ctx());
}

/* Closes a context's last socket without lingering and frees the context. */
static void
sock_ctx_free(zr_ctx *c, zr_socket *s)
{
	sopt_int(s, ZR_LINGER, 0);
	zr_socket_close(s);
	zr_ctx_free(c);
}

/* n round trips REQ -> REP -> REQ, each reply checked against its request. */
static void
round_trips(zr_socket *req, zr_socket *rep, int n)
{
	char out[32], in[32], back[32];

	for (int i = 0; i < n; i++) {
		int len = snprintf(out, sizeof out, "request %d", i);

		cr_assert_eq(zr_send_bytes(req, out, (size_t)len, 0), 0, "send %d", i);
		cr_assert_eq(zr_recv_bytes(rep, in, sizeof in, 0), len, "request %d", i);
		cr_assert_eq(memcmp(in, out, (size_t)len), 0);
		cr_assert_eq(zr_send_bytes(rep, in, (size_t)len, 0), 0);
		cr_assert_eq(zr_recv_bytes(req, back, sizeof back, 0), len, "reply %d", i);
		cr_assert_eq(memcmp(back, out, (size_t)len), 0);
	}
}

/* Both sides on caller-io contexts of their own, driven from this thread:
 * each receive runs its own context's io. */
/* A REP bound on caller-io context a, a REQ on caller-io context b connected
 * to it, both with ZR_BUSY_POLL busy_us (0: none) and long timeouts. */
struct cio_pair {
	zr_ctx *a, *b;
	zr_socket *rep, *req;
};

static void
cio_pair_open(struct cio_pair *p, const char *endpoint, int busy_us)
{
	char ep[128];

	p->a = cio_ctx();
	p->b = cio_ctx();
	cr_assert_eq(zr_socket_open(p->a, ZR_REP, &p->rep), 0);
	cr_assert_eq(zr_socket_open(p->b, ZR_REQ, &p->req), 0);
	timeouts(p->rep);
	timeouts(p->req);
	if (busy_us > 0) {
		sopt_int(p->rep, ZR_BUSY_POLL, busy_us);
		sopt_int(p->req, ZR_BUSY_POLL, busy_us);
	}
	sock_bind_connect(p->rep, endpoint, p->req, ep, sizeof ep);
}

static void
cio_pair_free(struct cio_pair *p)
{
	sopt_int(p->rep, ZR_LINGER, 0);
	sopt_int(p->req, ZR_LINGER, 0);
	zr_socket_close(p->rep);
	zr_socket_close(p->req);
	zr_ctx_free(p->b);
	zr_ctx_free(p->a);
}

static void
reqrep(const char *endpoint, int busy_us)
{
	struct cio_pair p;

	cio_pair_open(&p, endpoint, busy_us);
	round_trips(p.req, p.rep, CIO_TRIPS);
	cio_pair_free(&p);
}

Test(engine_caller_io, reqrep_tcp)
{
	reqrep("tcp://127.0.0.1:0", 0);
}

Test(engine_caller_io, reqrep_ipc)
{
	char ep[64];

	snprintf(ep, sizeof ep, "ipc:///tmp/zr-cio-%d.sock", (int)getpid());
	reqrep(ep, 0);
}

Test(engine_caller_io, reqrep_tcp_busy_poll)
{
	reqrep("tcp://127.0.0.1:0", 200);
}

/* A thread that runs the round trips (so it submits the receives and sends
 * of both connections' ends) and exits. */
struct trips {
	zr_socket *req, *rep;
	int n;
};

static void *
trips_main(void *arg)
{
	struct trips *t = arg;

	round_trips(t->req, t->rep, t->n);
	return NULL;
}

/* io_uring cancels the requests of a thread that exits: one thread after
 * another runs the io and exits, and the connections go on each time (the
 * engine arms again what was cancelled that it did not cancel). */
Test(engine_caller_io, threads_that_ran_the_io_exit_and_the_connections_go_on)
{
	struct cio_pair p;

	cio_pair_open(&p, "tcp://127.0.0.1:0", 0);
	for (int round = 0; round < 8; round++) {
		struct trips t = {.req = p.req, .rep = p.rep, .n = 50};
		pthread_t th;

		cr_assert_eq(pthread_create(&th, NULL, trips_main, &t), 0);
		pthread_join(th, NULL);
		sleep_ms(5); /* the exit's cancels come back before the next round */
	}
	round_trips(p.req, p.rep, 100); /* and this thread too */
	cio_pair_free(&p);
}

/* A thread blocked in a receive on one socket of a context holds its io;
 * this thread's round trips on another socket of the same context wait on
 * their eventfd and are served by that thread's io. */
struct blocked {
	zr_socket *s;
	int rc;
	char got[16];
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;

	b->rc = zr_recv_bytes(b->s, b->got, sizeof b->got, 0);
	return NULL;
}

Test(engine_caller_io, a_second_thread_while_the_first_holds_the_io)
{
	zr_ctx *a = cio_ctx(), *b = cio_ctx();
	zr_socket *pull, *push, *rep, *req;
	struct blocked bl;
	pthread_t th;
	char ep[128], ep2[128];

	cr_assert_eq(zr_socket_open(a, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(b, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(a, ZR_REQ, &req), 0);
	cr_assert_eq(zr_socket_open(b, ZR_REP, &rep), 0);
	timeouts(pull);
	timeouts(push);
	timeouts(req);
	timeouts(rep);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	sock_bind_connect(rep, "tcp://127.0.0.1:0", req, ep2, sizeof ep2);
	bl = (struct blocked){.s = pull, .rc = 1};
	cr_assert_eq(pthread_create(&th, NULL, blocked_main, &bl), 0);
	sleep_ms(20); /* it is blocked, running context a's io */
	round_trips(req, rep, 500);
	cr_assert_eq(bl.rc, 1, "the blocked receive is still waiting");
	cr_assert_eq(zr_send_bytes(push, "release", 7, 0), 0);
	pthread_join(th, NULL);
	cr_assert_eq(bl.rc, 7);
	cr_assert_eq(memcmp(bl.got, "release", 7), 0);
	sopt_int(pull, ZR_LINGER, 0);
	sopt_int(req, ZR_LINGER, 0);
	zr_socket_close(pull);
	zr_socket_close(req);
	sock_pair_free(b, push, rep);
	zr_ctx_free(a);
}

/* With no call at all the io thread runs the io: the handshake completes
 * and a stream from a default context is read into the queue meanwhile. */
Test(engine_caller_io, the_io_thread_runs_the_io_when_no_call_does)
{
	zr_ctx *a = cio_ctx(), *b;
	zr_socket *pull, *push;
	char ep[128], buf[16];
	int got = 0;

	cr_assert_eq(zr_ctx_new(&b), 0);
	cr_assert_eq(zr_socket_open(a, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(b, ZR_PUSH, &push), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	timeouts(push);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(zr_send_bytes(push, "m", 1, 0), 0);
	/* No receive blocks (each is ZR_DONTWAIT, which runs no io): only the
	 * io thread can have read them. */
	for (int tries = 0; got < 100 && tries < CIO_WAIT_MS; tries++) {
		int rc = zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT);

		if (rc == -EAGAIN) {
			sleep_ms(1);
			continue;
		}
		cr_assert_eq(rc, 1);
		got++;
	}
	cr_assert_eq(got, 100);
	sock_ctx_free(a, pull);
	sock_ctx_free(b, push);
}

/* A receive blocked for a second (holding the io) and the io thread that
 * looks in meanwhile spend little CPU; zr_ctx_free ends the receive with
 * -ETERM. */
Test(engine_caller_io, a_blocked_receive_is_cheap_and_ends_with_eterm)
{
	zr_ctx *a = cio_ctx();
	zr_socket *pull;
	struct blocked bl;
	pthread_t th;
	double c0, used;

	cr_assert_eq(zr_socket_open(a, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:0"), 0);
	bl = (struct blocked){.s = pull, .rc = 1};
	cr_assert_eq(pthread_create(&th, NULL, blocked_main, &bl), 0);
	sleep_ms(50);
	c0 = cpu_s();
	sleep_ms(1000);
	used = cpu_s() - c0;
	cr_assert_lt(used, 0.25, "a blocked receive spent %.3f s of CPU in 1 s", used);
	cr_assert_eq(bl.rc, 1);
	zr_ctx_free(a);
	pthread_join(th, NULL);
	cr_assert_eq(bl.rc, -ETERM);
}

/* A thread that holds a context's io in a receive that times out, then exits. */
struct holder {
	zr_socket *s;
	int timeout_ms;
	int rc;
};

static void *
holder_main(void *arg)
{
	struct holder *h = arg;
	char buf[8];

	sopt_int(h->s, ZR_RCVTIMEO, h->timeout_ms);
	h->rc = zr_recv_bytes(h->s, buf, sizeof buf, 0);
	return NULL;
}

/* A bind made while another thread holds the io is carried out by that
 * thread, which so submits the listener's accept; it exits, the accept is
 * cancelled, and a peer connecting afterwards must still be accepted. */
Test(engine_caller_io, an_accept_submitted_by_a_thread_that_exits_is_armed_again)
{
	zr_ctx *a = cio_ctx(), *b;
	zr_socket *idle, *pull, *push;
	struct holder h;
	pthread_t th;
	char ep[128], buf[16];
	size_t len = sizeof ep;

	cr_assert_eq(zr_ctx_new(&b), 0);
	cr_assert_eq(zr_socket_open(a, ZR_PULL, &idle), 0);
	cr_assert_eq(zr_socket_open(a, ZR_PULL, &pull), 0);
	h = (struct holder){.s = idle, .timeout_ms = 300, .rc = 1};
	cr_assert_eq(pthread_create(&th, NULL, holder_main, &h), 0);
	sleep_ms(30); /* it holds the io, waiting in the ring */
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(pull, ZR_LAST_ENDPOINT, ep, &len), 0);
	pthread_join(th, NULL);
	cr_assert_eq(h.rc, -EAGAIN);
	sleep_ms(5); /* the exit's cancel comes back */
	cr_assert_eq(zr_socket_open(b, ZR_PUSH, &push), 0);
	timeouts(push);
	timeouts(pull);
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_send_bytes(push, "late", 4, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 4, "the peer was never accepted");
	cr_assert_eq(memcmp(buf, "late", 4), 0);
	sock_pair_free(a, idle, pull);
	sock_ctx_free(b, push);
}

/* A thread sends a message larger than the kernel's buffers to a receiver
 * that is not reading yet: its send is still in flight (submitted by it)
 * when it exits, comes back cut short by the exit, and the rest still goes. */
#define CIO_BIG ((size_t)16 << 20)

struct big_sender {
	zr_socket *s;
	const uint8_t *data;
	int rc;
};

static void *
big_sender_main(void *arg)
{
	struct big_sender *b = arg;

	b->rc = zr_send_bytes(b->s, b->data, CIO_BIG, 0);
	return NULL;
}

Test(engine_caller_io, a_send_in_flight_when_its_thread_exits_still_arrives_whole)
{
	zr_ctx *a = cio_ctx(), *b;
	zr_socket *pull, *push;
	struct big_sender bs;
	pthread_t th;
	uint8_t *data = malloc(CIO_BIG), *got = malloc(CIO_BIG);
	char ep[128];

	cr_assert(data != NULL && got != NULL);
	for (size_t i = 0; i < CIO_BIG; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	cr_assert_eq(zr_ctx_new(&b), 0);
	cr_assert_eq(zr_socket_open(b, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(a, ZR_PUSH, &push), 0);
	timeouts(pull);
	timeouts(push);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	cr_assert_eq(zr_send_bytes(push, "first", 5, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, got, 16, 0), 5); /* connected both ways */
	bs = (struct big_sender){.s = push, .data = data, .rc = 1};
	cr_assert_eq(pthread_create(&th, NULL, big_sender_main, &bs), 0);
	pthread_join(th, NULL);
	cr_assert_eq(bs.rc, 0);
	sleep_ms(20); /* the exit's cancel comes back; nobody reads meanwhile */
	cr_assert_eq(zr_recv_bytes(pull, got, CIO_BIG, 0), (int)CIO_BIG);
	cr_assert_eq(memcmp(got, data, CIO_BIG), 0, "the message arrived damaged");
	free(data);
	free(got);
	sock_ctx_free(a, push);
	sock_ctx_free(b, pull);
}
