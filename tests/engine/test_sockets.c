/*
 * Socket behaviour beyond the pair matrix, against libzmq peers unless
 * noted: PAIR is exclusive, a reconnecting PUB forgets the old subscriber's
 * topics, subscriptions come and go at any time, LINGER on close,
 * connecting before the peer binds, handshake timeouts and
 * garbage peers, round-robin, REP with several clients, long runs of small
 * messages, endpoint errors.
 */
#define _GNU_SOURCE /* for engine_util.h (pipe2, vasprintf), before engine.h's system headers */
#include "engine/engine.h"
#include "scenarios.h"
#include "sock_helpers.h"

#include <pthread.h>
#include <stdatomic.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

TestSuite(sockets, .fini = et_teardown, .timeout = 40);

static int
so_raw_connect(const char *ep)
{
	unsigned port = 0;

	cr_assert_eq(sscanf(ep, "tcp://127.0.0.1:%u", &port), 1, "%s", ep);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	return fd;
}

/* Reads from fd until the other end closes; returns the ms it took. */
static uint64_t
so_wait_closed(int fd, int limit_ms)
{
	uint64_t t0 = zt_now_ms();
	uint8_t buf[256];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	for (;;) {
		cr_assert_lt(zt_now_ms() - t0, (uint64_t)limit_ms,
		             "zring did not drop the connection");
		if (poll(&p, 1, 100) > 0 && read(fd, buf, sizeof buf) <= 0)
			return zt_now_ms() - t0;
	}
}

static void
so_seq(uint8_t b[4], uint32_t i)
{
	b[0] = (uint8_t)(i >> 24);
	b[1] = (uint8_t)(i >> 16);
	b[2] = (uint8_t)(i >> 8);
	b[3] = (uint8_t)i;
}

/* RFC 31: a PAIR talks to one peer; a second one gets nothing, and what it
 * sends is not delivered. */
Test(sockets, a_bound_pair_ignores_a_second_peer)
{
	zr_socket *pr = et_zopen(0, ZR_PAIR);
	char ep[256];

	snprintf(ep, sizeof ep, "%s", et_zbind(pr, false));
	struct et_side z = {.name = "zring PAIR", .z = pr}, p1 = {.name = "libzmq PAIR 1"},
		       p2 = {.name = "libzmq PAIR 2"};

	p1.p = et_peer_start("PAIR", "connect", ep, NULL);
	et_send(&p1, "31");
	et_expect(&z, "31");
	p2.p = et_peer_start("PAIR", "connect", ep, NULL);
	et_send(&p2, "32");
	zt_sleep_ms(300);
	for (int i = 0; i < 6; i++)
		et_send(&z, "41");
	/* All six reach the first peer (each awaited), then no more. */
	for (int i = 0; i < 6; i++)
		et_expect(&p1, "41");
	et_expect_none(&p1, 100);
	const char *r = et_peer_ask(p2.p, 3000, "count 100");

	cr_assert_str_eq(r, "COUNT 0", "the second PAIR peer: %s", r);
	et_expect_none(&z, 100);
}

/* A PUB that redials gets a new subscriber: the old one's topics are gone
 * (an XSUB does not filter, so a stale "A" would show). */
Test(sockets, a_reconnecting_pub_forgets_the_old_subscriptions)
{
	char ep[128];
	struct et_side pub = {.name = "zring PUB"}, xs = {.name = "libzmq XSUB"};

	snprintf(ep, sizeof ep, "%s", et_peer_bind_ep(true));
	xs.p = et_peer_start("XSUB", "bind", ep, NULL);
	pub.z = et_zopen(0, ZR_PUB);
	et_zopt_int(pub.z, ZR_RECONNECT_IVL, 50);
	cr_assert_eq(zr_connect(pub.z, ep), 0);
	et_send(&xs, "0141");
	et_sync(&pub, &xs, "41", "4166");
	et_peers_stop();
	xs.p = et_peer_start("XSUB", "bind", ep, NULL);
	et_send(&xs, "0142");
	et_sync(&pub, &xs, "42", "4266");
	et_send(&pub, "4178");
	et_send(&pub, "4278");
	et_expect(&xs, "4278");
	et_expect_none(&xs, ET_QUIET_MS);
}

/* Subscribing and cancelling after the connection is up reaches the
 * publisher each time. */
Test(sockets, a_sub_subscribes_and_cancels_on_a_live_connection)
{
	struct et_side x = {.name = "libzmq XPUB"}, sub = {.name = "zring SUB"};

	x.p = et_peer_start("XPUB", "bind", "tcp://127.0.0.1:*", NULL);
	sub.z = et_zopen(0, ZR_SUB);
	cr_assert_eq(zr_connect(sub.z, x.p->line + 9), 0);
	zt_sleep_ms(200);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_SUBSCRIBE, "A", 1), 0);
	et_expect(&x, "0141");
	cr_assert_eq(zr_setsockopt(sub.z, ZR_UNSUBSCRIBE, "A", 1), 0);
	et_expect(&x, "0041");
}

/* Subscriptions count: "B" twice needs two cancels; "A" cancelled stops. */
Test(sockets, a_sub_counts_repeated_subscriptions)
{
	struct et_side pub = {.name = "libzmq PUB"}, sub = {.name = "zring SUB"};

	pub.p = et_peer_start("PUB", "bind", "tcp://127.0.0.1:*", NULL);
	sub.z = et_zopen(0, ZR_SUB);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_SUBSCRIBE, "B", 1), 0);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_SUBSCRIBE, "B", 1), 0);
	cr_assert_eq(zr_connect(sub.z, pub.p->line + 9), 0);
	et_sync(&pub, &sub, "41", "4166");
	cr_assert_eq(zr_setsockopt(sub.z, ZR_UNSUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_UNSUBSCRIBE, "B", 1), 0);
	et_sync(&pub, &sub, "42", "4266");
	et_send(&pub, "41");
	et_send(&pub, "4278");
	et_expect(&sub, "4278");
	et_expect_none(&sub, ET_QUIET_MS);
	cr_assert_eq(zr_setsockopt(sub.z, ZR_UNSUBSCRIBE, "B", 1), 0);
	zt_sleep_ms(200);
	et_send(&pub, "4279");
	et_expect_none(&sub, ET_QUIET_MS);
}

/* An XSUB's (un)subscriptions and its other messages go upstream as sent. */
Test(sockets, an_xsub_sends_subscriptions_cancels_and_messages_upstream)
{
	struct et_side x = {.name = "libzmq XPUB"}, xs = {.name = "zring XSUB"};

	x.p = et_peer_start("XPUB", "bind", "tcp://127.0.0.1:*", NULL);
	xs.z = et_zopen(0, ZR_XSUB);
	cr_assert_eq(zr_connect(xs.z, x.p->line + 9), 0);
	et_send(&xs, "0141");
	et_expect(&x, "0141");
	et_send(&xs, "0041");
	et_expect(&x, "0041");
	et_send(&xs, "6869");
	et_expect(&x, "6869");
}

/* With the default LINGER (-1) closing and freeing the context waits until
 * everything sent is delivered. */
Test(sockets, closing_with_the_default_linger_delivers_everything)
{
	struct et_peer *p = et_peer_start("PULL", "bind", "tcp://127.0.0.1:*", NULL);
	zr_ctx *c;
	zr_socket *s;
	uint8_t b[4];

	cr_assert_eq(zr_ctx_new(&c), 0);
	cr_assert_eq(zr_socket_open(c, ZR_PUSH, &s), 0);
	cr_assert_eq(zr_connect(s, p->line + 9), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		so_seq(b, i);
		cr_assert_eq(zr_send_bytes(s, b, 4, 0), 0);
	}
	zr_socket_close(s);
	zr_ctx_free(c);
	const char *r = et_peer_ask(p, 5000, "drain 1000 3000");

	cr_assert_str_eq(r, "DRAIN got=1000 next=1000 bad=0");
}

/* LINGER bounds the wait for a peer that never comes. */
Test(sockets, linger_bounds_the_wait_for_a_peer_that_never_comes)
{
	char ep[64];
	zr_ctx *c;
	zr_socket *s;
	int linger = 300;

	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	cr_assert_eq(zr_ctx_new(&c), 0);
	cr_assert_eq(zr_socket_open(c, ZR_PUSH, &s), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_LINGER, &linger, sizeof linger), 0);
	cr_assert_eq(zr_connect(s, ep), 0);
	cr_assert_eq(zr_send_bytes(s, "x", 1, 0), 0); /* queued: a connecter has its pipe */
	uint64_t t0 = zt_now_ms();

	zr_socket_close(s);
	zr_ctx_free(c);
	uint64_t dt = zt_now_ms() - t0;

	cr_assert(dt >= 250 && dt < 3000, "zr_ctx_free took %llu ms with LINGER 300",
	          (unsigned long long)dt);
}

/* Sent before the peer exists: delivered once it binds. */
Test(sockets, a_push_connected_before_the_peer_binds_delivers_when_it_does)
{
	char ep[64];
	struct et_side push = {.name = "zring PUSH"}, pull = {.name = "libzmq PULL"};

	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	push.z = et_zopen(0, ZR_PUSH);
	cr_assert_eq(zr_connect(push.z, ep), 0);
	cr_assert_eq(zr_send_bytes(push.z, "early", 5, 0),
	             0); /* queued: a connecter has its pipe */
	zt_sleep_ms(400);
	pull.p = et_peer_start("PULL", "bind", ep, NULL);
	et_expect(&pull, "6561726c79");
}

/* A client that never speaks is dropped after HANDSHAKE_IVL; the socket
 * still serves others. */
Test(sockets, a_silent_client_is_dropped_after_the_handshake_interval)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	char ep[256];

	et_zopt_int(pull, ZR_HANDSHAKE_IVL, 300);
	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	int fd = so_raw_connect(ep);
	uint64_t dt = so_wait_closed(fd, 5000);

	close(fd);
	cr_assert_geq(dt, 250, "dropped after %llu ms, HANDSHAKE_IVL is 300",
	              (unsigned long long)dt);
	struct et_side z = {.name = "zring PULL", .z = pull}, q = {.name = "libzmq PUSH"};

	q.p = et_peer_start("PUSH", "connect", ep, NULL);
	et_send(&q, "41");
	et_expect(&z, "41");
}

/* A peer that sends garbage is dropped; the other peer goes on. */
Test(sockets, a_garbage_peer_is_dropped_and_others_go_on)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	char ep[256], junk[4096];

	snprintf(ep, sizeof ep, "%s", et_zbind(pull, false));
	struct et_side z = {.name = "zring PULL", .z = pull}, q = {.name = "libzmq PUSH"};

	q.p = et_peer_start("PUSH", "connect", ep, NULL);
	et_send(&q, "41");
	et_expect(&z, "41");
	int fd = so_raw_connect(ep);

	memset(junk, 'G', sizeof junk);
	cr_assert_eq(write(fd, "GET / HTTP/1.1\r\n\r\n", 18), 18);
	(void)!write(fd, junk, sizeof junk); /* may fail once zring closed */
	so_wait_closed(fd, 5000);
	close(fd);
	et_send(&q, "42");
	et_expect(&z, "42");
	et_expect_none(&z, 200);
}

/* A DEALER alternates between its peers (each proved connected first), and
 * an incompatible peer on the same endpoint gets nothing. */
Test(sockets, a_dealer_alternates_between_its_peers)
{
	zr_socket *d = et_zopen(0, ZR_DEALER);
	char ep[256];

	snprintf(ep, sizeof ep, "%s", et_zbind(d, false));
	struct et_side z = {.name = "zring DEALER", .z = d}, b = {.name = "libzmq DEALER b"},
		       c = {.name = "libzmq DEALER c"};
	struct et_peer *bad = et_peer_start("PULL", "connect", ep, NULL);

	b.p = et_peer_start("DEALER", "connect", ep, NULL);
	c.p = et_peer_start("DEALER", "connect", ep, NULL);
	et_send(&b, "62");
	et_send(&c, "63");
	char *x = et_recv(&z, ET_WAIT_MS), *y = et_recv(&z, ET_WAIT_MS);

	cr_assert(x != NULL && y != NULL);
	free(x);
	free(y);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(zr_send_bytes(d, "x", 1, 0), 0);
	/* Five each (each awaited), then no more. */
	for (int i = 0; i < 5; i++) {
		et_expect(&b, "78");
		et_expect(&c, "78");
	}
	et_expect_none(&b, 100);
	et_expect_none(&c, 100);
	cr_assert_str_eq(et_peer_ask(bad, 3000, "count 100"), "COUNT 0");
}

/* A REP serves two REQ clients; each gets its own reply. */
Test(sockets, a_rep_answers_each_of_two_clients)
{
	zr_socket *rep = et_zopen(0, ZR_REP);
	char ep[256];

	snprintf(ep, sizeof ep, "%s", et_zbind(rep, false));
	struct et_side z = {.name = "zring REP", .z = rep}, q1 = {.name = "libzmq REQ 1"},
		       q2 = {.name = "libzmq REQ 2"};

	q1.p = et_peer_start("REQ", "connect", ep, NULL);
	q2.p = et_peer_start("REQ", "connect", ep, NULL);
	et_send(&q1, "31");
	et_send(&q2, "32");
	for (int i = 0; i < 2; i++) {
		char *r = et_recv(&z, ET_WAIT_MS);

		cr_assert_not_null(r);
		cr_assert(strcmp(r, "31") == 0 || strcmp(r, "32") == 0, "REP got [%s]", r);
		char *reply = et_join(r, "72");

		et_send(&z, reply);
		free(r);
		free(reply);
	}
	et_expect(&q1, "31:72");
	et_expect(&q2, "32:72");
}

/* 100,000 small messages each way: exact count, exact order. */
Test(sockets, a_hundred_thousand_small_messages_to_libzmq_arrive_in_order)
{
	struct et_peer *p = et_peer_start("PULL", "bind", "tcp://127.0.0.1:*", NULL);
	zr_socket *s = et_zopen(0, ZR_PUSH);
	uint8_t b[4];

	cr_assert_eq(zr_connect(s, p->line + 9), 0);
	for (uint32_t i = 0; i < 100000; i++) {
		so_seq(b, i);
		cr_assert_eq(zr_send_bytes(s, b, 4, 0), 0);
	}
	cr_assert_str_eq(et_peer_ask(p, 30000, "drain 100000 3000"),
	                 "DRAIN got=100000 next=100000 bad=0");
	cr_assert_str_eq(et_peer_ask(p, 1000, "count 200"), "COUNT 0");
}

Test(sockets, a_hundred_thousand_small_messages_from_libzmq_arrive_in_order)
{
	zr_socket *s = et_zopen(0, ZR_PULL);
	const char *ep = et_zbind(s, false);
	struct et_peer *p = et_peer_start("PUSH", "connect", ep, NULL);

	cr_assert_str_eq(et_peer_ask(p, 30000, "flood 100000 5000"), "FLOOD sent=100000 eagain=0");
	for (uint32_t i = 0; i < 100000; i++) {
		zr_msg *m = NULL;
		size_t len;

		cr_assert_eq(zr_recv(s, &m, 0), 0, "message %u", i);
		const uint8_t *f = zr_msg_frame(m, 0, &len);

		cr_assert_eq(len, 4);
		uint32_t seq =
			(uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];

		zr_msg_free(m);
		cr_assert_eq(seq, i);
	}
	et_expect_none(&(struct et_side){.name = "zring PULL", .z = s}, 200);
}

Test(sockets, binding_an_endpoint_in_use_is_eaddrinuse)
{
	zr_socket *a = et_zopen(0, ZR_PULL), *b = et_zopen(0, ZR_PULL);
	char ep[256];

	snprintf(ep, sizeof ep, "%s", et_zbind(a, false));
	int rc = zr_bind(b, ep);

	cr_assert_eq(rc, -EADDRINUSE, "second bind to %s: %d (%s)", ep, rc, zr_strerror(rc));
}

Test(sockets, abstract_ipc_endpoints_work_with_libzmq)
{
	char ep[64];
	struct et_side pull = {.name = "libzmq PULL"}, push = {.name = "zring PUSH"};

	snprintf(ep, sizeof ep, "ipc://@zr-et-%d", (int)getpid());
	pull.p = et_peer_start("PULL", "bind", ep, NULL);
	push.z = et_zopen(0, ZR_PUSH);
	cr_assert_eq(zr_connect(push.z, ep), 0);
	et_send(&push, "41");
	et_expect(&pull, "41");
}

/* zr_recv_bytes copies at most cap octets and returns the full length. */
Test(sockets, recv_bytes_truncates_and_returns_the_full_length)
{
	struct et_side a, b;
	char buf[5];

	et_pair(&a, ZR_PUSH, false, NULL, &b, ZR_PULL, false, NULL, true, false);
	cr_assert_eq(zr_send_bytes(a.z, "hello world", 11, 0), 0);
	cr_assert_eq(zr_recv_bytes(b.z, buf, sizeof buf, 0), 11);
	cr_assert(memcmp(buf, "hello", 5) == 0);
}

/* zring.h: "zr_strerror() names each" code it lists, -EFSM and -ETERM too. */
Test(sockets, strerror_names_efsm_and_eterm)
{
	cr_assert_str_neq(zr_strerror(-EFSM), "unknown error");
	cr_assert_str_neq(zr_strerror(-ETERM), "unknown error");
	cr_assert_str_neq(zr_strerror(-EFSM), zr_strerror(-ETERM));
}

/* libzmq: a connecter has its pipe from zmq_connect on, so a ZMQ_DONTWAIT
 * send right after it is queued (bug E9). */
Test(sockets, a_dontwait_send_right_after_connect_is_queued)
{
	zr_socket *s = et_zopen(0, ZR_PUSH);

	cr_assert_eq(zr_connect(s, "tcp://127.0.0.1:1"), 0);
	int rc = zr_send_bytes(s, "x", 1, ZR_DONTWAIT);

	cr_assert_eq(rc, 0, "zr_send(ZR_DONTWAIT) right after zr_connect: %d (%s)", rc,
	             zr_strerror(rc));
}

/* A call made in another thread; started is set right before it. */
struct so_call {
	zr_socket *s;
	atomic_bool started;
};

static void *
so_blocked_recv(void *arg)
{
	struct so_call *c = arg;
	zr_msg *m = NULL;

	atomic_store(&c->started, true);
	return (void *)(intptr_t)zr_recv(c->s, &m, 0);
}

static void *
so_blocked_send(void *arg)
{
	struct so_call *c = arg;
	zr_msg *m = NULL;
	intptr_t rc = zr_msg_new(&m);

	if (rc == 0)
		rc = zr_msg_add(m, "x", 1);
	if (rc == 0) {
		atomic_store(&c->started, true);
		rc = zr_send(c->s, &m, 0);
	}
	zr_msg_free(m);
	return (void *)rc;
}

/* The app calls in progress on s, as socket.c counts them (the io thread
 * frees a socket only when none is). */
static unsigned
so_calls_in(zr_socket *s)
{
	return (unsigned)atomic_load(&s->calls) + atomic_load(&s->calls_tx) +
	       atomic_load(&s->calls_rx);
}

/*
 * Before zr_ctx_free: waits until each call started and each socket counts
 * want[i] calls in progress. A call not yet inside its socket would use it
 * after the free; a slow thread only makes this wait longer. Then a short
 * pause, so that the calls are most likely blocked (ETERM is the answer
 * either way).
 */
static void
so_wait_calls(struct so_call *calls, size_t ncalls, zr_socket **socks, const unsigned *want,
              size_t nsocks)
{
	uint64_t deadline = zt_now_ms() + ET_WAIT_MS;

	for (size_t i = 0; i < ncalls; i++) {
		while (!atomic_load(&calls[i].started)) {
			cr_assert_lt(zt_now_ms(), deadline, "thread %zu never made its call", i);
			zt_sleep_ms(1);
		}
	}
	for (size_t i = 0; i < nsocks; i++) {
		while (so_calls_in(socks[i]) < want[i]) {
			cr_assert_lt(zt_now_ms(), deadline, "socket %zu shows %u calls, want %u", i,
			             so_calls_in(socks[i]), want[i]);
			zt_sleep_ms(1);
		}
	}
	zt_sleep_ms(100);
}

/* zring.h: blocking calls in other threads return -ETERM on zr_ctx_free, and
 * the socket is not freed under them (bug E10: a use-after-free under ASan). */
Test(sockets, freeing_the_context_wakes_a_blocked_receive_with_eterm)
{
	zr_ctx *c;
	zr_socket *s;
	pthread_t th;
	void *res;
	static struct so_call call;
	static const unsigned one = 1;

	cr_assert_eq(zr_ctx_new(&c), 0);
	cr_assert_eq(zr_socket_open(c, ZR_PULL, &s), 0);
	cr_assert_eq(zr_bind(s, "tcp://127.0.0.1:0"), 0);
	call.s = s;
	cr_assert_eq(pthread_create(&th, NULL, so_blocked_recv, &call), 0);
	so_wait_calls(&call, 1, &s, &one, 1);
	zr_ctx_free(c);
	pthread_join(th, &res);
	cr_assert_eq((intptr_t)res, -ETERM, "blocked zr_recv returned %d", (int)(intptr_t)res);
}

/* The same for a send (a PUSH with no peer waits), and for a receive and a
 * send on one socket from two threads at once, as the broker does: sends and
 * receives keep separate call counts (socket.c), and both must hold the
 * socket until their calls return. With membarrier (plain counting stores)
 * and without it (the locked counter, as on kernels or sandboxes without
 * membarrier): both paths under ASan. */
static void
so_eterm_send_and_receive(bool membarrier)
{
	zr_ctx *c;
	zr_socket *push, *dealer;
	pthread_t th[3];
	void *res;
	static struct so_call calls[3];

	cr_assert_eq(zr_ctx_new(&c), 0);
	if (!membarrier)
		c->membarrier =
			false; /* before any socket: the io thread reads it only to free one */
	cr_assert_eq(zr_socket_open(c, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(c, ZR_DEALER, &dealer), 0);
	cr_assert_eq(zr_bind(push, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_bind(dealer, "tcp://127.0.0.1:0"), 0);
	calls[0].s = push;
	calls[1].s = dealer;
	calls[2].s = dealer;
	cr_assert_eq(pthread_create(&th[0], NULL, so_blocked_send, &calls[0]), 0);
	cr_assert_eq(pthread_create(&th[1], NULL, so_blocked_send, &calls[1]), 0);
	cr_assert_eq(pthread_create(&th[2], NULL, so_blocked_recv, &calls[2]), 0);
	zr_socket *socks[2] = {push, dealer};
	static const unsigned want[2] = {1, 2};

	so_wait_calls(calls, 3, socks, want, 2);
	zr_ctx_free(c);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], &res);
		cr_assert_eq((intptr_t)res, -ETERM, "blocked call %d returned %d", i,
		             (int)(intptr_t)res);
	}
}

Test(sockets, freeing_the_context_wakes_a_blocked_send_and_receive_with_eterm)
{
	so_eterm_send_and_receive(true);
}

Test(sockets, without_membarrier_blocked_calls_still_hold_their_socket)
{
	so_eterm_send_and_receive(false);
}

/* Without membarrier, sends and receives count on the locked counter: a
 * stream still arrives whole and the sockets close and free normally. */
Test(sockets, without_membarrier_a_stream_arrives_whole)
{
	zr_ctx *c;
	zr_socket *push, *pull;
	char ep[128], buf[16];

	cr_assert_eq(zr_ctx_new(&c), 0);
	c->membarrier = false;
	cr_assert_eq(zr_socket_open(c, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(c, ZR_PULL, &pull), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	for (int i = 0; i < 5000; i++)
		cr_assert_eq(zr_send_bytes(push, &i, sizeof i, 0), 0);
	for (int i = 0; i < 5000; i++) {
		int got;

		cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), (int)sizeof i);
		memcpy(&got, buf, sizeof got);
		cr_assert_eq(got, i);
	}
	zr_socket_close(push);
	zr_socket_close(pull);
	zr_ctx_free(c);
}
