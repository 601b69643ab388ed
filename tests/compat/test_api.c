/*
 * The libzmq.so.5 drop-in (compat/) through its zmq.h, as a libzmq program
 * uses it: patterns, the frame-at-a-time model, zmq_msg_t lifetimes,
 * readiness (zmq_poll, ZMQ_FD / ZMQ_EVENTS), errno values, proxies, the
 * monitor, Z85 and CURVE helpers. Every program here is linked to the
 * drop-in (tests/CMakeLists.txt), not to the system's libzmq.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zmq.h"
#include "zt_clock.h"

#define WAIT_MS 10000 /* generous: the CI machine is loaded, ASan is slow */

static void *
sock_new(void *ctx, int type)
{
	void *s = zmq_socket(ctx, type);
	int t = WAIT_MS;
	int zero = 0;

	cr_assert_not_null(s, "zmq_socket: %s", zmq_strerror(zmq_errno()));
	cr_assert_eq(zmq_setsockopt(s, ZMQ_RCVTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zmq_setsockopt(s, ZMQ_SNDTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero), 0);
	return s;
}

/* Binds to a kernel-chosen tcp port and connects peer to it. */
static void
link_tcp(void *bound, void *peer)
{
	char ep[256];
	size_t len = sizeof ep;

	cr_assert_eq(zmq_bind(bound, "tcp://127.0.0.1:*"), 0, "%s", zmq_strerror(zmq_errno()));
	cr_assert_eq(zmq_getsockopt(bound, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	cr_assert(strncmp(ep, "tcp://127.0.0.1:", 16) == 0, "last endpoint %s", ep);
	cr_assert_eq(zmq_connect(peer, ep), 0, "%s", zmq_strerror(zmq_errno()));
}

static void
send_str(void *s, const char *str, int flags)
{
	int n = zmq_send(s, str, strlen(str), flags);

	cr_assert_eq(n, (int)strlen(str), "zmq_send: %s", zmq_strerror(zmq_errno()));
}

/* Receives one frame and checks its bytes and whether more follow. */
static void
recv_str(void *s, const char *want, int more_want)
{
	char buf[256];
	int more = -1;
	size_t len = sizeof more;
	int n = zmq_recv(s, buf, sizeof buf - 1, 0);

	cr_assert_geq(n, 0, "zmq_recv: %s", zmq_strerror(zmq_errno()));
	buf[n] = '\0';
	cr_assert_str_eq(buf, want);
	cr_assert_eq(zmq_getsockopt(s, ZMQ_RCVMORE, &more, &len), 0);
	cr_assert_eq(more, more_want, "RCVMORE after '%s'", want);
}

Test(compat, push_pull_multipart)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);

	link_tcp(pull, push);
	send_str(push, "a", ZMQ_SNDMORE);
	send_str(push, "", ZMQ_SNDMORE);
	send_str(push, "ccc", 0);
	send_str(push, "single", 0);
	recv_str(pull, "a", 1);
	recv_str(pull, "", 1);
	recv_str(pull, "ccc", 0);
	recv_str(pull, "single", 0);
	zmq_close(push);
	zmq_close(pull);
	cr_assert_eq(zmq_ctx_term(ctx), 0);
}

/*
 * zmq_msg_recv into a message that holds the last frame: the old content is
 * let go first (libzmq too), so a failed receive leaves an empty message; a
 * frame moved or copied out beforehand keeps its bytes while later messages
 * reuse the layer's holder.
 */
Test(compat, msg_recv_reuses_and_empties)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	zmq_msg_t m, kept;

	link_tcp(pull, push);
	send_str(push, "one", 0);
	send_str(push, "two", 0);
	send_str(push, "three", 0);
	cr_assert_eq(zmq_msg_init(&m), 0);
	cr_assert_eq(zmq_msg_init(&kept), 0);
	cr_assert_eq(zmq_msg_recv(&m, pull, 0), 3);
	cr_assert_eq(zmq_msg_copy(&kept, &m), 0); /* still refers to "one" */
	cr_assert_eq(zmq_msg_recv(&m, pull, 0), 3);
	cr_assert(memcmp(zmq_msg_data(&m), "two", 3) == 0);
	cr_assert_eq(zmq_msg_recv(&m, pull, 0), 5);
	cr_assert(memcmp(zmq_msg_data(&m), "three", 5) == 0);
	cr_assert_eq(zmq_msg_size(&kept), 3);
	cr_assert(memcmp(zmq_msg_data(&kept), "one", 3) == 0);
	cr_assert_eq(zmq_msg_recv(&m, pull, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), EAGAIN);
	cr_assert_eq(zmq_msg_size(&m), 0);
	cr_assert_eq(zmq_msg_more(&m), 0);
	cr_assert_eq(zmq_msg_close(&m), 0);
	cr_assert_eq(zmq_msg_close(&kept), 0);
	zmq_close(push);
	zmq_close(pull);
	cr_assert_eq(zmq_ctx_term(ctx), 0);
}

/*
 * The one-pass paths of zmq_send / zmq_msg_send and zmq_recv / zmq_msg_recv
 * (a one-frame message on a socket with no REQ/REP turn) hand over to the
 * general ones at every edge: a full pipe (EAGAIN, the zmq_msg_t still the
 * caller's, as in libzmq), a message being gathered (SNDMORE), frames of a
 * message in hand, a type that cannot send or receive, and a terminated
 * context. Order and bytes hold across both paths.
 */
Test(compat, one_pass_paths_hand_over_at_every_edge)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	int hwm = 2, sent = 0, xs, n;
	char body[64], buf[128];
	zmq_msg_t m;

	cr_assert_eq(zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof hwm), 0);
	cr_assert_eq(zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof hwm), 0);
	cr_assert_eq(zmq_bind(pull, "inproc://one-pass"), 0);
	cr_assert_eq(zmq_connect(push, "inproc://one-pass"), 0);

	/* Until the pipe is full: EAGAIN, and the message stays the caller's. */
	for (;;) {
		snprintf(body, sizeof body, "%063d", sent);
		cr_assert_eq(zmq_msg_init_size(&m, 64), 0);
		memcpy(zmq_msg_data(&m), body, 64);
		n = zmq_msg_send(&m, push, ZMQ_DONTWAIT);
		if (n < 0)
			break;
		cr_assert_eq(n, 64);
		cr_assert_eq(zmq_msg_size(&m), 0, "a sent message is emptied");
		sent++;
		cr_assert_lt(sent, 10000, "the pipe never filled");
	}
	cr_assert_eq(zmq_errno(), EAGAIN);
	cr_assert_geq(sent, hwm);
	cr_assert_eq(zmq_msg_size(&m), 64);
	cr_assert(memcmp(zmq_msg_data(&m), body, 64) == 0);
	/* zmq_send's one pass is refused as well. Not necessarily at once: the
	 * first refusal above may come while the io thread is still moving the
	 * handoff into the pipe, and what it takes then comes after the rest. */
	for (xs = 0; zmq_send(push, "x", 1, ZMQ_DONTWAIT) == 1; xs++)
		cr_assert_lt(xs, 10000, "the pipe never filled");
	cr_assert_eq(zmq_errno(), EAGAIN);

	/* Drained in order, through both receive calls. */
	for (int i = 0; i < sent; i++) {
		char want[64];

		snprintf(want, sizeof want, "%063d", i);
		if (i % 2 == 0) {
			n = zmq_recv(pull, buf, sizeof buf, 0);
			cr_assert_eq(n, 64);
			cr_assert(memcmp(buf, want, 64) == 0, "message %d", i);
		} else {
			zmq_msg_t r;

			cr_assert_eq(zmq_msg_init(&r), 0);
			cr_assert_eq(zmq_msg_recv(&r, pull, 0), 64);
			cr_assert(memcmp(zmq_msg_data(&r), want, 64) == 0, "message %d", i);
			cr_assert_eq(zmq_msg_close(&r), 0);
		}
	}
	for (int i = 0; i < xs; i++) {
		cr_assert_eq(zmq_recv(pull, buf, sizeof buf, 0), 1);
		cr_assert_eq(buf[0], 'x');
	}
	/* The one refused goes now; then a gathered message between two
	 * single ones, its frames one at a time. */
	cr_assert_eq(zmq_msg_send(&m, push, 0), 64);
	send_str(push, "a", ZMQ_SNDMORE);
	send_str(push, "b", 0);
	send_str(push, "c", 0);
	n = zmq_recv(pull, buf, sizeof buf, 0);
	cr_assert_eq(n, 64);
	cr_assert(memcmp(buf, body, 64) == 0);
	recv_str(pull, "a", 1);
	recv_str(pull, "b", 0);
	recv_str(pull, "c", 0);
	cr_assert_eq(zmq_recv(pull, buf, sizeof buf, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), EAGAIN);

	/* A type without the direction. */
	cr_assert_eq(zmq_send(pull, "x", 1, 0), -1);
	cr_assert_eq(zmq_errno(), ENOTSUP);
	cr_assert_eq(zmq_recv(push, buf, sizeof buf, 0), -1);
	cr_assert_eq(zmq_errno(), ENOTSUP);

	/* A terminated context: ETERM, with the pipe free and a message there. */
	send_str(push, "late", 0);
	cr_assert_eq(zmq_ctx_shutdown(ctx), 0);
	cr_assert_eq(zmq_send(push, "x", 1, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), ETERM);
	cr_assert_eq(zmq_msg_init_size(&m, 64), 0);
	cr_assert_eq(zmq_msg_send(&m, push, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), ETERM);
	cr_assert_eq(zmq_msg_close(&m), 0);
	cr_assert_eq(zmq_recv(pull, buf, sizeof buf, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), ETERM);
	zmq_close(push);
	zmq_close(pull);
	cr_assert_eq(zmq_ctx_term(ctx), 0);
}

Test(compat, req_rep_and_efsm)
{
	void *ctx = zmq_ctx_new();
	void *rep = sock_new(ctx, ZMQ_REP);
	void *req = sock_new(ctx, ZMQ_REQ);
	char buf[8];

	link_tcp(rep, req);
	/* REP cannot answer before a request; REQ cannot receive first. */
	cr_assert_eq(zmq_send(rep, "x", 1, 0), -1);
	cr_assert_eq(zmq_errno(), EFSM);
	cr_assert_eq(zmq_recv(req, buf, sizeof buf, 0), -1);
	cr_assert_eq(errno, EFSM);
	for (int i = 0; i < 3; i++) {
		send_str(req, "ping", 0);
		cr_assert_eq(zmq_send(req, "again", 5, 0), -1, "REQ sends twice");
		cr_assert_eq(errno, EFSM);
		recv_str(rep, "ping", 0);
		send_str(rep, "pong", 0);
		recv_str(req, "pong", 0);
	}
	zmq_close(req);
	zmq_close(rep);
	zmq_ctx_term(ctx);
}

Test(compat, dealer_router_multipart)
{
	void *ctx = zmq_ctx_new();
	void *router = sock_new(ctx, ZMQ_ROUTER);
	void *dealer = sock_new(ctx, ZMQ_DEALER);
	zmq_msg_t id, part;

	cr_assert_eq(zmq_setsockopt(dealer, ZMQ_ROUTING_ID, "dlr1", 4), 0);
	link_tcp(router, dealer);
	send_str(dealer, "hello", ZMQ_SNDMORE);
	send_str(dealer, "world", 0);
	zmq_msg_init(&id);
	cr_assert_eq(zmq_msg_recv(&id, router, 0), 4);
	cr_assert(memcmp(zmq_msg_data(&id), "dlr1", 4) == 0);
	cr_assert_eq(zmq_msg_more(&id), 1);
	recv_str(router, "hello", 1);
	zmq_msg_init(&part);
	cr_assert_eq(zmq_msg_recv(&part, router, 0), 5);
	cr_assert_eq(zmq_msg_get(&part, ZMQ_MORE), 0);
	/* Peer metadata of the connection the frame came in on. */
	cr_assert_str_eq(zmq_msg_gets(&part, "Socket-Type"), "DEALER");
	cr_assert_not_null(zmq_msg_gets(&part, "Peer-Address"));
	cr_assert_null(zmq_msg_gets(&part, "X-Nothing"));
	cr_assert_eq(errno, EINVAL);
	/* The reply: the routing id frame sent back as received. */
	cr_assert_eq(zmq_msg_send(&id, router, ZMQ_SNDMORE), 4);
	send_str(router, "back", ZMQ_SNDMORE);
	cr_assert_eq(zmq_msg_send(&part, router, 0), 5);
	recv_str(dealer, "back", 1);
	recv_str(dealer, "world", 0);
	zmq_msg_close(&id);
	zmq_msg_close(&part);
	zmq_close(dealer);
	zmq_close(router);
	zmq_ctx_term(ctx);
}

Test(compat, pub_sub_subscribe)
{
	void *ctx = zmq_ctx_new();
	void *pub = sock_new(ctx, ZMQ_PUB);
	void *sub = sock_new(ctx, ZMQ_SUB);
	int t = 100;
	char buf[32];
	int n = -1;

	cr_assert_eq(zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "news", 4), 0);
	cr_assert_eq(zmq_setsockopt(pub, ZMQ_SUBSCRIBE, "x", 1), -1, "PUB cannot subscribe");
	cr_assert_eq(errno, EINVAL);
	link_tcp(pub, sub);
	cr_assert_eq(zmq_setsockopt(sub, ZMQ_RCVTIMEO, &t, sizeof t), 0);
	/* The subscription travels: publish until it has arrived. */
	for (uint64_t end = zt_now_ms() + WAIT_MS; n < 0 && zt_now_ms() < end;) {
		send_str(pub, "sports 1", 0);
		send_str(pub, "news 1", 0);
		n = zmq_recv(sub, buf, sizeof buf, 0);
	}
	cr_assert_eq(n, 6);
	cr_assert(memcmp(buf, "news 1", 6) == 0);
	/* From here every receive must succeed: 100 ms was only the polling
	 * step above, not a bound a loaded io thread always meets. */
	t = WAIT_MS;
	cr_assert_eq(zmq_setsockopt(sub, ZMQ_RCVTIMEO, &t, sizeof t), 0);
	send_str(pub, "sports 2", 0);
	send_str(pub, "news 2", 0);
	/* Only what matches arrives, whatever is still queued before it. */
	for (;;) {
		n = zmq_recv(sub, buf, sizeof buf, 0);
		cr_assert_geq(n, 0, "news 2 never came: %s", zmq_strerror(errno));
		cr_assert(memcmp(buf, "news", 4) == 0, "unsubscribed topic delivered");
		if (n == 6 && memcmp(buf, "news 2", 6) == 0)
			break;
	}
	zmq_close(sub);
	zmq_close(pub);
	zmq_ctx_term(ctx);
}

static atomic_int freed;
static void *freed_data;

static void
free_fn(void *data, void *hint)
{
	cr_assert_eq(hint, (void *)&freed);
	freed_data = data;
	atomic_fetch_add(&freed, 1);
}

static void
wait_freed(int want)
{
	uint64_t end = zt_now_ms() + WAIT_MS;

	while (atomic_load(&freed) < want && zt_now_ms() < end)
		zt_sleep_ms(1);
	cr_assert_eq(atomic_load(&freed), want);
}

/*
 * libzmq's contract, which pyzmq's MessageTracker reads: a sent frame's free
 * function runs once the library is done with the bytes, not at
 * zmq_msg_send. Here nobody listens yet, so nothing can have been written.
 */
Test(compat, msg_init_data_held_until_sent)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull;
	char ep[128];
	static char one[5000], two[3][7000];
	zmq_msg_t m;

	atomic_store(&freed, 0);
	snprintf(ep, sizeof ep, "ipc:///tmp/zring-compat-held-%d", (int)getpid());
	memset(one, '1', sizeof one);
	cr_assert_eq(zmq_connect(push, ep), 0, "%s", zmq_strerror(zmq_errno()));
	cr_assert_eq(zmq_msg_init_data(&m, one, sizeof one, free_fn, &freed), 0);
	cr_assert_eq(zmq_msg_send(&m, push, 0), (int)sizeof one);
	for (int i = 0; i < 3; i++) {
		memset(two[i], 'a' + i, sizeof two[i]);
		cr_assert_eq(zmq_msg_init_data(&m, two[i], sizeof two[i], free_fn, &freed), 0);
		cr_assert_eq(zmq_msg_send(&m, push, i < 2 ? ZMQ_SNDMORE : 0), (int)sizeof two[i]);
	}
	cr_assert_eq(atomic_load(&freed), 0, "freed before any peer could take the bytes");
	pull = sock_new(ctx, ZMQ_PULL);
	cr_assert_eq(zmq_bind(pull, ep), 0, "%s", zmq_strerror(zmq_errno()));
	zmq_msg_init(&m);
	cr_assert_eq(zmq_msg_recv(&m, pull, 0), (int)sizeof one);
	cr_assert(memcmp(zmq_msg_data(&m), one, sizeof one) == 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(zmq_msg_recv(&m, pull, 0), (int)sizeof two[i]);
		cr_assert(memcmp(zmq_msg_data(&m), two[i], sizeof two[i]) == 0);
		cr_assert_eq(zmq_msg_more(&m), i < 2);
	}
	zmq_msg_close(&m);
	wait_freed(4);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

/* Over inproc the receiver gets the sender's bytes themselves: freed once
 * the receiving side lets go of them. */
Test(compat, msg_init_data_inproc_zero_copy)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	static char body[3000];
	zmq_msg_t m;

	atomic_store(&freed, 0);
	memset(body, 'i', sizeof body);
	cr_assert_eq(zmq_bind(pull, "inproc://held"), 0);
	cr_assert_eq(zmq_connect(push, "inproc://held"), 0);
	cr_assert_eq(zmq_msg_init_data(&m, body, sizeof body, free_fn, &freed), 0);
	cr_assert_eq(zmq_msg_send(&m, push, 0), (int)sizeof body);
	zmq_msg_init(&m);
	cr_assert_eq(zmq_msg_recv(&m, pull, 0), (int)sizeof body);
	cr_assert_eq(zmq_msg_data(&m), body, "inproc copied the bytes");
	cr_assert_eq(atomic_load(&freed), 0);
	zmq_msg_close(&m);
	zmq_close(pull); /* the socket held the message for its next receive */
	cr_assert_eq(atomic_load(&freed), 1);
	zmq_close(push);
	zmq_ctx_term(ctx);
	cr_assert_eq(freed_data, body);
}

Test(compat, msg_init_data_free_called)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	static char body[100000];
	zmq_msg_t m, copy, got;

	memset(body, 'z', sizeof body);
	link_tcp(pull, push);
	cr_assert_eq(zmq_msg_init_data(&m, body, sizeof body, free_fn, &freed), 0);
	cr_assert_eq(zmq_msg_init(&copy), 0);
	cr_assert_eq(zmq_msg_copy(&copy, &m), 0);
	cr_assert_eq(zmq_msg_get(&m, ZMQ_SHARED), 1);
	cr_assert_eq(zmq_msg_send(&m, push, 0), (int)sizeof body);
	/* The copy still refers to the bytes: not freed yet. */
	cr_assert_eq(atomic_load(&freed), 0);
	cr_assert_eq(zmq_msg_data(&copy), body);
	cr_assert_eq(zmq_msg_close(&copy), 0);
	/* Closing twice is an error, not a second free. */
	cr_assert_eq(zmq_msg_close(&copy), -1);
	cr_assert_eq(errno, EFAULT);
	zmq_msg_init(&got);
	cr_assert_eq(zmq_msg_recv(&got, pull, 0), (int)sizeof body);
	cr_assert(memcmp(zmq_msg_data(&got), body, sizeof body) == 0);
	/* Sent zero-copy: freed once zring wrote it (the io thread, soon). */
	wait_freed(1);
	cr_assert_eq(freed_data, body);
	/* move: the source becomes empty, the destination holds the bytes. */
	zmq_msg_init(&copy);
	cr_assert_eq(zmq_msg_move(&copy, &got), 0);
	cr_assert_eq(zmq_msg_size(&got), 0);
	cr_assert_eq(zmq_msg_size(&copy), sizeof body);
	zmq_msg_close(&got);
	zmq_msg_close(&copy);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

Test(compat, poll_socket_and_pipe)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	int pfd[2];
	zmq_pollitem_t items[2];

	cr_assert_eq(pipe(pfd), 0);
	link_tcp(pull, push);
	items[0] = (zmq_pollitem_t){.socket = pull, .events = ZMQ_POLLIN};
	items[1] = (zmq_pollitem_t){.fd = pfd[0], .events = ZMQ_POLLIN};
	/* 0: returns at once with nothing. */
	cr_assert_eq(zmq_poll(items, 2, 0), 0);
	cr_assert_eq(items[0].revents, 0);
	cr_assert_eq(items[1].revents, 0);
	/* The pipe alone wakes it. */
	cr_assert_eq(write(pfd[1], "x", 1), 1);
	cr_assert_eq(zmq_poll(items, 2, WAIT_MS), 1);
	cr_assert_eq(items[0].revents, 0);
	cr_assert_eq(items[1].revents, ZMQ_POLLIN);
	{
		char c;

		cr_assert_eq(read(pfd[0], &c, 1), 1);
	}
	/* The socket alone wakes it, waiting for ever (-1). */
	send_str(push, "m", 0);
	cr_assert_eq(zmq_poll(items, 2, -1), 1);
	cr_assert_eq(items[0].revents, ZMQ_POLLIN);
	cr_assert_eq(items[1].revents, 0);
	recv_str(pull, "m", 0);
	cr_assert_eq(zmq_poll(items, 2, 0), 0);
	/* POLLOUT on a socket that can send. */
	items[0] = (zmq_pollitem_t){.socket = push, .events = ZMQ_POLLOUT};
	cr_assert_eq(zmq_poll(items, 1, 0), 1);
	cr_assert_eq(items[0].revents, ZMQ_POLLOUT);
	close(pfd[0]);
	close(pfd[1]);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

static int
fd_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static int
events_of(void *s)
{
	int ev = -1;
	size_t len = sizeof ev;

	cr_assert_eq(zmq_getsockopt(s, ZMQ_EVENTS, &ev, &len), 0);
	cr_assert_eq(len, sizeof ev);
	return ev;
}

/* What an event loop does: wait for ZMQ_FD, read ZMQ_EVENTS, until want is
 * there. Fails when the fd stays quiet while want is not there. */
static void
wait_events(void *s, int fd, int want)
{
	uint64_t end = zt_now_ms() + WAIT_MS;

	while (!(events_of(s) & want)) {
		cr_assert(zt_now_ms() < end, "ZMQ_EVENTS never had %d", want);
		cr_assert(fd_readable(fd, WAIT_MS), "no edge on ZMQ_FD while waiting for %d", want);
	}
}

/* No spinning: with nothing new happening, reading ZMQ_EVENTS quiets the fd.
 * (A wake racing the read may leave one spurious edge, which libzmq allows:
 * the next read of the events clears it.) */
static void
assert_quiet(void *s, int fd)
{
	for (int i = 0; i < 3; i++) {
		if (!fd_readable(fd, 0))
			return;
		(void)events_of(s);
	}
	cr_assert_fail("ZMQ_FD stays readable after reading ZMQ_EVENTS");
}

/* libzmq's contract, which asyncio, tornado and gevent rely on: ZMQ_FD
 * signals that the events may have changed; after reading ZMQ_EVENTS it
 * stays quiet until something new arrives. */
Test(compat, fd_edge_and_events)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	int fd = -1;
	size_t len = sizeof fd;

	link_tcp(pull, push);
	cr_assert_eq(zmq_getsockopt(pull, ZMQ_FD, &fd, &len), 0);
	cr_assert_geq(fd, 0);
	/* The connection's own edges (a peer came) may fire while it sets up,
	 * as in libzmq: each carries no event, and once read the fd is quiet. */
	{
		int pfd = -1;

		len = sizeof pfd;
		cr_assert_eq(zmq_getsockopt(push, ZMQ_FD, &pfd, &len), 0);
		wait_events(push, pfd, ZMQ_POLLOUT);
	}
	for (int i = 0; i < 100 && fd_readable(fd, 50); i++)
		cr_assert_eq(events_of(pull), 0);
	cr_assert(!fd_readable(fd, 0), "quiet while nothing happened");
	send_str(push, "one", 0);
	send_str(push, "two", 0);
	wait_events(pull, fd, ZMQ_POLLIN);
	/* Read the events, the edge is consumed: no spinning poll loop. */
	assert_quiet(pull, fd);
	recv_str(pull, "one", 0);
	/* "two" is there, or about to be: EVENTS says so, or the fd fires. */
	wait_events(pull, fd, ZMQ_POLLIN);
	recv_str(pull, "two", 0);
	cr_assert_eq(events_of(pull), 0);
	assert_quiet(pull, fd);
	cr_assert_eq(events_of(pull), 0);
	send_str(push, "three", 0);
	cr_assert(fd_readable(fd, WAIT_MS), "no edge for the third message");
	cr_assert_eq(events_of(pull), ZMQ_POLLIN);
	recv_str(pull, "three", 0);
	/* PUSH: never readable, writable once it has a peer. */
	cr_assert_eq(events_of(push), ZMQ_POLLOUT);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

Test(compat, errno_values)
{
	void *ctx = zmq_ctx_new();
	void *pull = sock_new(ctx, ZMQ_PULL);
	void *pub = sock_new(ctx, ZMQ_PUB);
	char buf[4];
	int v = 0;
	size_t len = sizeof v;

	/* libzmq's numbers. */
	cr_assert_eq(EFSM, 156384763);
	cr_assert_eq(ENOCOMPATPROTO, 156384764);
	cr_assert_eq(ETERM, 156384765);
	cr_assert_eq(EMTHREAD, 156384766);
	cr_assert_str_eq(zmq_strerror(ETERM), "Context was terminated");
	cr_assert_eq(zmq_recv(pull, buf, sizeof buf, ZMQ_DONTWAIT), -1);
	cr_assert_eq(zmq_errno(), EAGAIN);
	cr_assert_eq(zmq_send(pull, "x", 1, 0), -1);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(zmq_recv(pub, buf, sizeof buf, 0), -1);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(zmq_setsockopt(pull, 9999, &v, sizeof v), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(zmq_getsockopt(pull, 9999, &v, &len), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(zmq_getsockopt(pull, ZMQ_TYPE, &v, &len), 0);
	cr_assert_eq(v, ZMQ_PULL);
	cr_assert_eq(zmq_close(NULL), -1);
	cr_assert_eq(errno, ENOTSOCK);
	cr_assert_eq(zmq_bind(pull, "bogus://x"), -1);
	cr_assert_eq(errno, EPROTONOSUPPORT);
	cr_assert_null(zmq_socket(ctx, ZMQ_STREAM), "STREAM is not implemented");
	cr_assert_eq(errno, EINVAL);
	/* After shutdown, blocking and new calls fail with ETERM. */
	cr_assert_eq(zmq_ctx_shutdown(ctx), 0);
	cr_assert_eq(zmq_recv(pull, buf, sizeof buf, 0), -1);
	cr_assert_eq(errno, ETERM);
	cr_assert_null(zmq_socket(ctx, ZMQ_PUSH));
	cr_assert_eq(errno, ETERM);
	zmq_close(pull);
	zmq_close(pub);
	cr_assert_eq(zmq_ctx_term(ctx), 0);
}

struct blocked {
	void *sock;
	int rc, err;
};

static void *
blocked_recv(void *arg)
{
	struct blocked *b = arg;
	char buf[4];
	int forever = -1;

	zmq_setsockopt(b->sock, ZMQ_RCVTIMEO, &forever, sizeof forever);
	b->rc = zmq_recv(b->sock, buf, sizeof buf, 0);
	b->err = errno;
	zmq_close(b->sock);
	return NULL;
}

/* zmq_ctx_term wakes a receive blocked in another thread with ETERM and
 * returns once that thread closed its socket. */
Test(compat, term_wakes_blocked_recv)
{
	void *ctx = zmq_ctx_new();
	struct blocked b = {.sock = sock_new(ctx, ZMQ_PULL)};
	pthread_t t;

	cr_assert_eq(zmq_bind(b.sock, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(pthread_create(&t, NULL, blocked_recv, &b), 0);
	zt_sleep_ms(50); /* likely blocked by now; the assertions hold either way */
	cr_assert_eq(zmq_ctx_term(ctx), 0);
	pthread_join(t, NULL);
	cr_assert_eq(b.rc, -1);
	cr_assert_eq(b.err, ETERM);
}

Test(compat, inproc_bind_after_connect)
{
	void *ctx = zmq_ctx_new();
	void *pair1 = sock_new(ctx, ZMQ_PAIR);
	void *pair2 = sock_new(ctx, ZMQ_PAIR);
	char ep[64];
	size_t len = sizeof ep;

	cr_assert_eq(zmq_connect(pair2, "inproc://later"), 0);
	cr_assert_eq(zmq_bind(pair1, "inproc://later"), 0);
	cr_assert_eq(zmq_getsockopt(pair1, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	cr_assert_str_eq(ep, "inproc://later");
	send_str(pair2, "to1", 0);
	recv_str(pair1, "to1", 0);
	send_str(pair1, "to2", 0);
	recv_str(pair2, "to2", 0);
	zmq_close(pair1);
	zmq_close(pair2);
	zmq_ctx_term(ctx);
}

/* A connect to a bound inproc endpoint is complete when it returns, as
 * libzmq's: the connecting PUSH can send at once. */
Test(compat, inproc_connect_completes)
{
	void *ctx = zmq_ctx_new();
	void *pull = sock_new(ctx, ZMQ_PULL);
	void *push = sock_new(ctx, ZMQ_PUSH);

	cr_assert_eq(zmq_bind(pull, "inproc://sync"), 0);
	cr_assert_eq(zmq_connect(push, "inproc://sync"), 0);
	cr_assert_eq(events_of(push), ZMQ_POLLOUT);
	send_str(push, "now", ZMQ_DONTWAIT);
	recv_str(pull, "now", 0);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

struct proxy_args {
	void *front, *back, *control;
	int rc;
};

static void *
proxy_main(void *arg)
{
	struct proxy_args *p = arg;

	p->rc = zmq_proxy_steerable(p->front, p->back, NULL, p->control);
	return NULL;
}

Test(compat, proxy_steerable_statistics_terminate)
{
	void *ctx = zmq_ctx_new();
	struct proxy_args p = {
		.front = sock_new(ctx, ZMQ_PULL),
		.back = sock_new(ctx, ZMQ_PUSH),
		.control = sock_new(ctx, ZMQ_REP),
	};
	void *in = sock_new(ctx, ZMQ_PUSH);
	void *out = sock_new(ctx, ZMQ_PULL);
	void *ctl = sock_new(ctx, ZMQ_REQ);
	pthread_t t;
	uint64_t stats[8];

	link_tcp(p.front, in);
	link_tcp(p.back, out);
	link_tcp(p.control, ctl);
	cr_assert_eq(pthread_create(&t, NULL, proxy_main, &p), 0);
	send_str(in, "ab", ZMQ_SNDMORE);
	send_str(in, "cde", 0);
	recv_str(out, "ab", 1);
	recv_str(out, "cde", 0);
	send_str(ctl, "STATISTICS", 0);
	for (int i = 0; i < 8; i++) {
		int more = 0;
		size_t len = sizeof more;

		cr_assert_eq(zmq_recv(ctl, &stats[i], sizeof stats[i], 0), 8);
		zmq_getsockopt(ctl, ZMQ_RCVMORE, &more, &len);
		cr_assert_eq(more, i < 7);
	}
	/* frontend: 2 frames, 5 bytes in; backend: 2 frames, 5 bytes out. */
	cr_assert_eq(stats[0], 2);
	cr_assert_eq(stats[1], 5);
	cr_assert_eq(stats[6], 2);
	cr_assert_eq(stats[7], 5);
	send_str(ctl, "TERMINATE", 0);
	pthread_join(t, NULL);
	cr_assert_eq(p.rc, 0);
	zmq_close(in);
	zmq_close(out);
	zmq_close(ctl);
	zmq_close(p.front);
	zmq_close(p.back);
	zmq_close(p.control);
	zmq_ctx_term(ctx);
}

/* Events come as libzmq's two frames on the PAIR. */
static uint16_t
next_event(void *mon, uint32_t *value)
{
	unsigned char head[6];
	char ep[256];
	uint16_t ev;

	cr_assert_eq(zmq_recv(mon, head, sizeof head, 0), 6, "no event: %s", zmq_strerror(errno));
	cr_assert_geq(zmq_recv(mon, ep, sizeof ep, 0), 0);
	memcpy(&ev, head, sizeof ev);
	memcpy(value, head + 2, sizeof *value);
	return ev;
}

Test(compat, socket_monitor)
{
	void *ctx = zmq_ctx_new();
	void *rep = sock_new(ctx, ZMQ_REP);
	void *req = sock_new(ctx, ZMQ_REQ);
	void *mon = sock_new(ctx, ZMQ_PAIR);
	uint32_t value;
	int seen = 0;

	cr_assert_eq(zmq_socket_monitor(rep, "tcp://127.0.0.1:5", ZMQ_EVENT_ALL), -1);
	cr_assert_eq(errno, EPROTONOSUPPORT);
	cr_assert_eq(zmq_socket_monitor(rep, "inproc://mon", ZMQ_EVENT_ALL), 0);
	cr_assert_eq(zmq_connect(mon, "inproc://mon"), 0);
	link_tcp(rep, req);
	while (seen != (ZMQ_EVENT_LISTENING | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
		seen |= next_event(mon, &value);
	cr_assert_eq(zmq_socket_monitor(rep, NULL, 0), 0);
	cr_assert_eq(next_event(mon, &value), ZMQ_EVENT_MONITOR_STOPPED);
	zmq_close(mon);
	zmq_close(req);
	zmq_close(rep);
	zmq_ctx_term(ctx);
}

/* The engine records CONNECTED, ACCEPTED and DISCONNECTED for inproc pipes;
 * libzmq 4.3 reports none, so the monitor forwards none. The peer count for
 * POLLOUT still follows them: the PUSH loses POLLOUT when its PULL goes. */
Test(compat, inproc_monitor_silent_pollout_follows)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	void *mon = sock_new(ctx, ZMQ_PAIR);
	zmq_pollitem_t item = {.socket = push, .events = ZMQ_POLLOUT};
	uint32_t value;

	cr_assert_eq(zmq_socket_monitor(push, "inproc://mon-push", ZMQ_EVENT_ALL), 0);
	cr_assert_eq(zmq_connect(mon, "inproc://mon-push"), 0);
	cr_assert_eq(zmq_bind(pull, "inproc://silent"), 0);
	cr_assert_eq(zmq_connect(push, "inproc://silent"), 0);
	cr_assert_eq(events_of(push), ZMQ_POLLOUT);
	send_str(push, "x", ZMQ_DONTWAIT);
	recv_str(pull, "x", 0);
	zmq_close(pull);
	for (uint64_t end = zt_now_ms() + WAIT_MS; zmq_poll(&item, 1, 0) != 0;) {
		cr_assert(zt_now_ms() < end, "POLLOUT stayed after the inproc peer left");
		zt_sleep_ms(10);
	}
	/* The monitor thread read the DISCONNECTED (POLLOUT went): anything
	 * forwarded of the pipe would come before MONITOR_STOPPED. */
	cr_assert_eq(zmq_socket_monitor(push, NULL, 0), 0);
	cr_assert_eq(next_event(mon, &value), ZMQ_EVENT_MONITOR_STOPPED);
	zmq_close(mon);
	zmq_close(push);
	zmq_ctx_term(ctx);
}

Test(compat, z85_curve_has_version)
{
	/* RFC 32's test vector. */
	const uint8_t bin[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
	char text[11];
	uint8_t back[8];
	char pub[41], sec[41], pub2[41];
	int major, minor, patch;

	cr_assert_not_null(zmq_z85_encode(text, bin, sizeof bin));
	cr_assert_str_eq(text, "HelloWorld");
	cr_assert_not_null(zmq_z85_decode(back, "HelloWorld"));
	cr_assert(memcmp(back, bin, sizeof bin) == 0);
	cr_assert_null(zmq_z85_encode(text, bin, 3));
	cr_assert_eq(zmq_curve_keypair(pub, sec), 0);
	cr_assert_eq(zmq_curve_public(pub2, sec), 0);
	cr_assert_str_eq(pub, pub2);
	cr_assert_eq(zmq_has("curve"), 1);
	cr_assert_eq(zmq_has("ipc"), 1);
	cr_assert_eq(zmq_has("pgm"), 0);
	cr_assert_eq(zmq_has("zring"), 1); /* the drop-in's marker (zring doctor) */
	zmq_version(&major, &minor, &patch);
	cr_assert_eq(major, 4);
	cr_assert_eq(minor, 3);
}

/* A PUSH without a peer is not writable (libzmq's POLLOUT, which asyncio's
 * send relies on); ZMQ_FD fires when the peer comes. */
Test(compat, pollout_waits_for_peer)
{
	void *ctx = zmq_ctx_new();
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *pull = sock_new(ctx, ZMQ_PULL);
	zmq_pollitem_t item = {.socket = push, .events = ZMQ_POLLOUT};
	int fd = -1;
	size_t len = sizeof fd;
	char ep[256];
	size_t eplen = sizeof ep;

	cr_assert_eq(zmq_bind(push, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zmq_getsockopt(push, ZMQ_LAST_ENDPOINT, ep, &eplen), 0);
	cr_assert_eq(zmq_getsockopt(push, ZMQ_FD, &fd, &len), 0);
	cr_assert_eq(events_of(push), 0, "POLLOUT without a peer");
	cr_assert_eq(zmq_poll(&item, 1, 0), 0);
	cr_assert_eq(zmq_send(push, "x", 1, ZMQ_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	/* libzmq refuses a message at its first frame: nothing of it stays. */
	cr_assert_eq(zmq_send(push, "a", 1, ZMQ_SNDMORE | ZMQ_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	assert_quiet(push, fd);
	cr_assert_eq(events_of(push), 0);
	cr_assert_eq(zmq_connect(pull, ep), 0);
	wait_events(push, fd, ZMQ_POLLOUT);
	cr_assert_eq(zmq_send(push, "x", 1, ZMQ_DONTWAIT), 1);
	send_str(push, "a", ZMQ_SNDMORE | ZMQ_DONTWAIT);
	send_str(push, "b", ZMQ_DONTWAIT);
	recv_str(pull, "x", 0);
	recv_str(pull, "a", 1);
	recv_str(pull, "b", 0);
	/* The peer goes: POLLOUT goes with it (zmq_poll waits for that). */
	zmq_close(pull);
	for (uint64_t end = zt_now_ms() + WAIT_MS; zmq_poll(&item, 1, 0) != 0;) {
		cr_assert(zt_now_ms() < end, "POLLOUT stayed after the peer left");
		zt_sleep_ms(10);
	}
	zmq_close(push);
	zmq_ctx_term(ctx);
}

/* libzmq 4.3: a PLAIN server needs a ZAP handler (none bound: every client
 * is refused), a CURVE one does not unless ZAP_ENFORCE_DOMAIN says so; the
 * option reads back as set. */
Test(compat, zap_plain_server_without_a_handler_refuses)
{
	void *ctx = zmq_ctx_new();
	void *pull = sock_new(ctx, ZMQ_PULL);
	void *push = sock_new(ctx, ZMQ_PUSH);
	void *mon = sock_new(ctx, ZMQ_PAIR);
	int one = 1, v = -1;
	size_t len = sizeof v;
	uint32_t value = 0;
	uint16_t ev;

	cr_assert_eq(zmq_setsockopt(pull, ZMQ_PLAIN_SERVER, &one, sizeof one), 0);
	cr_assert_eq(zmq_getsockopt(pull, 93 /* ZMQ_ZAP_ENFORCE_DOMAIN */, &v, &len), 0);
	cr_assert_eq(v, 0, "reads back as set, not as applied");
	cr_assert_eq(zmq_setsockopt(push, ZMQ_PLAIN_USERNAME, "u", 1), 0);
	cr_assert_eq(zmq_setsockopt(push, ZMQ_PLAIN_PASSWORD, "p", 1), 0);
	cr_assert_eq(zmq_socket_monitor(pull, "inproc://mon-zap", ZMQ_EVENT_ALL), 0);
	cr_assert_eq(zmq_connect(mon, "inproc://mon-zap"), 0);
	link_tcp(pull, push);
	do {
		ev = next_event(mon, &value);
		cr_assert_neq(ev, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, "a PLAIN client got in");
	} while (ev != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
	cr_assert_eq(value, 500);
	zmq_close(mon);
	zmq_close(push);
	zmq_close(pull);
	zmq_ctx_term(ctx);
}

Test(compat, zap_curve_server_without_a_handler_accepts_unless_enforced)
{
	char spub[41], ssec[41], cpub[41], csec[41];
	void *ctx = zmq_ctx_new();
	int one = 1;

	cr_assert_eq(zmq_curve_keypair(spub, ssec), 0);
	cr_assert_eq(zmq_curve_keypair(cpub, csec), 0);
	for (int enforce = 0; enforce <= 1; enforce++) {
		void *pull = sock_new(ctx, ZMQ_PULL);
		void *push = sock_new(ctx, ZMQ_PUSH);
		void *mon = sock_new(ctx, ZMQ_PAIR);
		char name[32];
		uint32_t value = 0;
		uint16_t ev;

		cr_assert_eq(zmq_setsockopt(pull, 93, &enforce, sizeof enforce), 0);
		cr_assert_eq(zmq_setsockopt(pull, ZMQ_CURVE_SERVER, &one, sizeof one), 0);
		cr_assert_eq(zmq_setsockopt(pull, ZMQ_CURVE_SECRETKEY, ssec, 40), 0);
		cr_assert_eq(zmq_setsockopt(push, ZMQ_CURVE_SERVERKEY, spub, 40), 0);
		cr_assert_eq(zmq_setsockopt(push, ZMQ_CURVE_PUBLICKEY, cpub, 40), 0);
		cr_assert_eq(zmq_setsockopt(push, ZMQ_CURVE_SECRETKEY, csec, 40), 0);
		snprintf(name, sizeof name, "inproc://mon-curve-%d", enforce);
		cr_assert_eq(zmq_socket_monitor(pull, name, ZMQ_EVENT_ALL), 0);
		cr_assert_eq(zmq_connect(mon, name), 0);
		link_tcp(pull, push);
		do
			ev = next_event(mon, &value);
		while (ev != ZMQ_EVENT_HANDSHAKE_SUCCEEDED &&
		       ev != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
		cr_assert_eq(ev, enforce ? ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
		                         : ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
		if (!enforce) {
			send_str(push, "in", 0);
			recv_str(pull, "in", 0);
		}
		zmq_close(mon);
		zmq_close(push);
		zmq_close(pull);
	}
	zmq_ctx_term(ctx);
}
