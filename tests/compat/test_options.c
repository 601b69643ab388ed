/*
 * libzmq's pattern options and readiness through zmq.h on the drop-in,
 * against pyzmq peers on the system's libzmq 4.3
 * (tests/compat/peers/opts_peer.py): REQ_CORRELATE's id frame on the wire,
 * CONFLATE behind a libzmq PUSH, PROBE_ROUTER to a libzmq ROUTER,
 * XPUB_WELCOME_MSG to a libzmq SUB; ZMQ_EVENTS' POLLOUT as libzmq's (no
 * peer: none; inproc connect before the bind: at once; a full pipe: none,
 * and ZMQ_FD wakes when room comes).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zmq.h"

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define PEER ZR_SOURCE_DIR "/tests/compat/peers/opts_peer.py"
#define WAIT_MS 20000

struct peer {
	pid_t pid;
	FILE *out;
	char ep[512];
};

static void
peer_line(struct peer *p, char *buf, size_t cap)
{
	cr_assert_not_null(fgets(buf, (int)cap, p->out), "the peer said nothing");
	buf[strcspn(buf, "\n")] = '\0';
}

/* Starts the peer on the system libzmq and reads its endpoint. */
static void
peer_start(struct peer *p, const char *mode, const char *ep, const char *n)
{
	char *argv[] = {ZR_PYTHON, PEER, (char *)mode, (char *)ep, (char *)n, NULL};
	char line[512];
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		unsetenv("LD_LIBRARY_PATH");
		unsetenv("LD_PRELOAD");
		execv(ZR_PYTHON, argv);
		_exit(127);
	}
	close(fds[1]);
	p->out = fdopen(fds[0], "r");
	cr_assert_not_null(p->out);
	peer_line(p, line, sizeof line);
	cr_assert(strncmp(line, "libzmq ", 7) == 0, "peer said: %s", line);
	cr_assert_null(strstr(line, "/compat/"), "the peer loaded the drop-in: %s", line);
	peer_line(p, line, sizeof line);
	cr_assert(strncmp(line, "ready ", 6) == 0, "peer said: %s", line);
	snprintf(p->ep, sizeof p->ep, "%s", line + 6);
}

static void
peer_stop(struct peer *p)
{
	kill(p->pid, SIGKILL);
	fclose(p->out);
	waitpid(p->pid, NULL, 0);
}

static void *
sock_new(void *ctx, int type)
{
	void *s = zmq_socket(ctx, type);
	int t = WAIT_MS, zero = 0;

	cr_assert_not_null(s);
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &t, sizeof t);
	zmq_setsockopt(s, ZMQ_SNDTIMEO, &t, sizeof t);
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
	return s;
}

static void
set_int(void *s, int opt, int v)
{
	cr_assert_eq(zmq_setsockopt(s, opt, &v, sizeof v), 0, "option %d: %s", opt,
	             zmq_strerror(errno));
}

static int
events(void *s)
{
	int ev = 0;
	size_t len = sizeof ev;

	cr_assert_eq(zmq_getsockopt(s, ZMQ_EVENTS, &ev, &len), 0);
	return ev;
}

static void
recv_str(void *s, char *buf, size_t cap)
{
	int n = zmq_recv(s, buf, cap - 1, 0);

	cr_assert_geq(n, 0, "receive: %s", zmq_strerror(errno));
	buf[(size_t)n < cap - 1 ? (size_t)n : cap - 1] = '\0';
}

Test(compat_options, req_correlate_to_libzmq_router)
{
	void *ctx = zmq_ctx_new(), *req = sock_new(ctx, ZMQ_REQ);
	struct peer p;
	char a[64], b[64];
	unsigned id1, id2;
	int v = 0;
	size_t len = sizeof v;

	peer_start(&p, "router-echo", "tcp://127.0.0.1:*", NULL);
	set_int(req, ZMQ_REQ_CORRELATE, 1);
	cr_assert_eq(zmq_getsockopt(req, ZMQ_REQ_CORRELATE, &v, &len), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(zmq_connect(req, p.ep), 0);
	cr_assert_eq(zmq_send(req, "one", 3, 0), 3);
	recv_str(req, a, sizeof a);
	cr_assert_eq(zmq_send(req, "two", 3, 0), 3);
	recv_str(req, b, sizeof b);
	cr_assert_eq(strlen(a), 10, "[4-octet id, \"\", body]: the ROUTER saw %s", a);
	cr_assert_eq(strncmp(a, "3:", 2), 0, "%s", a);
	cr_assert_eq(sscanf(a + 2, "%8x", &id1), 1);
	cr_assert_eq(sscanf(b + 2, "%8x", &id2), 1);
	cr_assert_eq(__builtin_bswap32(id2), __builtin_bswap32(id1) + 1, "%s then %s", a, b);
	/* A reply with the previous id is not the answer. */
	cr_assert_eq(zmq_send(req, "stale", 5, 0), 5);
	recv_str(req, a, sizeof a);
	cr_assert_eq(strncmp(a, "3:", 2), 0, "got %s", a);
	/* Relaxed: a second request while one waits. */
	set_int(req, ZMQ_REQ_RELAXED, 1);
	cr_assert_eq(zmq_send(req, "x", 1, 0), 1);
	cr_assert(events(req) & ZMQ_POLLOUT, "relaxed REQ: POLLOUT while waiting");
	cr_assert_eq(zmq_send(req, "y", 1, 0), 1);
	recv_str(req, a, sizeof a);
	cr_assert_eq(strncmp(a, "3:", 2), 0, "got %s", a);
	zmq_close(req);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}

Test(compat_options, conflate_behind_libzmq_push)
{
	void *ctx = zmq_ctx_new(), *pull = sock_new(ctx, ZMQ_PULL);
	struct peer p;
	char line[64], buf[32];
	int got = 0, v = -1;

	peer_start(&p, "push-burst", "tcp://127.0.0.1:*", "20000");
	set_int(pull, ZMQ_CONFLATE, 1);
	set_int(pull, ZMQ_RCVHWM, 5);
	cr_assert_eq(zmq_connect(pull, p.ep), 0);
	peer_line(&p, line, sizeof line);
	cr_assert_str_eq(line, "sent");
	while (v != 19999) {
		recv_str(pull, buf, sizeof buf);
		v = atoi(buf);
		got++;
	}
	cr_assert_lt(got, 10000, "%d of 20000 kept: not conflated", got);
	zmq_close(pull);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}

Test(compat_options, probe_router_to_libzmq_router)
{
	void *ctx = zmq_ctx_new(), *dealer = sock_new(ctx, ZMQ_DEALER);
	struct peer p;
	char line[64];

	peer_start(&p, "router-probe", "tcp://127.0.0.1:*", NULL);
	set_int(dealer, ZMQ_PROBE_ROUTER, 1);
	cr_assert_eq(zmq_connect(dealer, p.ep), 0);
	peer_line(&p, line, sizeof line);
	cr_assert_str_eq(line, "1:", "the ROUTER's first message: one empty frame");
	zmq_close(dealer);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}

Test(compat_options, xpub_welcome_to_libzmq_sub)
{
	void *ctx = zmq_ctx_new(), *xpub = sock_new(ctx, ZMQ_XPUB);
	struct peer p;
	char ep[256], line[64], buf[64];
	size_t len = sizeof ep;

	cr_assert_eq(zmq_setsockopt(xpub, ZMQ_XPUB_WELCOME_MSG, "welcome", 7), 0);
	cr_assert_eq(zmq_bind(xpub, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zmq_getsockopt(xpub, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	peer_start(&p, "sub-first", ep, NULL);
	recv_str(xpub, buf, sizeof buf); /* its subscription */
	cr_assert_eq(buf[0], 1);
	peer_line(&p, line, sizeof line);
	cr_assert_str_eq(line, "welcome");
	zmq_close(xpub);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}

static bool
fd_wakes(void *s, int ms)
{
	int fd;
	size_t len = sizeof fd;
	struct pollfd p;

	cr_assert_eq(zmq_getsockopt(s, ZMQ_FD, &fd, &len), 0);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) == 1;
}

Test(compat_options, pollout_as_libzmq)
{
	void *ctx = zmq_ctx_new(), *push = sock_new(ctx, ZMQ_PUSH), *pull = sock_new(ctx, ZMQ_PULL);
	void *late = sock_new(ctx, ZMQ_PUSH), *late_pull = sock_new(ctx, ZMQ_PULL);
	int sent = 0, quiet = 0;
	char buf[8];

	/* Bound, no peer: no POLLOUT. */
	cr_assert_eq(zmq_bind(push, "inproc://pollout"), 0);
	cr_assert_eq(events(push) & ZMQ_POLLOUT, 0);
	/* Connected before the bind: POLLOUT at once, and the send is kept. */
	cr_assert_eq(zmq_connect(late, "inproc://pollout-later"), 0);
	cr_assert(events(late) & ZMQ_POLLOUT, "inproc connect before the bind: POLLOUT");
	cr_assert_eq(zmq_send(late, "e", 1, ZMQ_DONTWAIT), 1);
	cr_assert_eq(zmq_bind(late_pull, "inproc://pollout-later"), 0);
	recv_str(late_pull, buf, sizeof buf);
	cr_assert_str_eq(buf, "e");
	/* A reader that does not read: every POLLOUT is a send that goes,
	 * until none comes; reading then wakes ZMQ_FD with POLLOUT. */
	set_int(pull, ZMQ_RCVHWM, 4);
	cr_assert_eq(zmq_connect(pull, "inproc://pollout"), 0);
	/* Quiet for 600 ms only suggests the pipe is full: an io thread
	 * starved of the CPU for longer makes room afterwards, so a send that
	 * goes then is counted and the wait starts over; full is a send that
	 * fails with EAGAIN while POLLOUT stays off. */
	for (;;) {
		int rc;

		if (events(push) & ZMQ_POLLOUT) {
			cr_assert_eq(zmq_send(push, "m", 1, ZMQ_DONTWAIT), 1,
			             "POLLOUT, yet EAGAIN after %d", sent);
			cr_assert_lt(++sent, 100000, "never full");
			quiet = 0;
		} else if (!fd_wakes(push, 200) && ++quiet >= 3) {
			rc = zmq_send(push, "m", 1, ZMQ_DONTWAIT);
			if (rc == -1) {
				cr_assert_eq(errno, EAGAIN);
				if (!(events(push) & ZMQ_POLLOUT))
					break;
			} else {
				cr_assert_eq(rc, 1);
				cr_assert_lt(++sent, 100000, "never full");
			}
			quiet = 0;
		}
	}
	for (int i = 0; i < sent; i++)
		recv_str(pull, buf, sizeof buf);
	cr_assert(fd_wakes(push, WAIT_MS), "ZMQ_FD did not wake for room");
	cr_assert(events(push) & ZMQ_POLLOUT);
	{
		zmq_pollitem_t it = {.socket = push, .events = ZMQ_POLLOUT};

		cr_assert_eq(zmq_poll(&it, 1, WAIT_MS), 1);
		cr_assert_eq(it.revents, ZMQ_POLLOUT);
	}
	zmq_close(push);
	zmq_close(pull);
	zmq_close(late);
	zmq_close(late_pull);
	zmq_ctx_term(ctx);
}

/* Sends a and b in turns until the peer printed what it received first. */
static void
publish_until_heard(void *pub, struct peer *p, const char *a, const char *b, char *line, size_t cap)
{
	struct pollfd pf = {.fd = fileno(p->out), .events = POLLIN};

	for (int i = 0; i < WAIT_MS / 10; i++) {
		cr_assert_eq(zmq_send(pub, a, strlen(a), 0), (int)strlen(a));
		cr_assert_eq(zmq_send(pub, b, strlen(b), 0), (int)strlen(b));
		if (poll(&pf, 1, 10) == 1) {
			peer_line(p, line, cap);
			return;
		}
	}
	cr_assert_fail("the peer heard nothing");
}

Test(compat_options, invert_matching_with_libzmq_sub)
{
	void *ctx = zmq_ctx_new(), *pub = sock_new(ctx, ZMQ_PUB);
	struct peer p;
	char ep[256], line[64];
	size_t len = sizeof ep;

	set_int(pub, ZMQ_INVERT_MATCHING, 1);
	cr_assert_eq(zmq_bind(pub, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	peer_start(&p, "sub-invert", ep, "a");
	/* "a..." matches the SUB's "a": neither end lets it through. */
	publish_until_heard(pub, &p, "a-no", "b-yes", line, sizeof line);
	cr_assert_str_eq(line, "b-yes");
	zmq_close(pub);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}

Test(compat_options, xpub_manual_with_libzmq_sub)
{
	void *ctx = zmq_ctx_new(), *xpub = sock_new(ctx, ZMQ_XPUB);
	struct peer p;
	char ep[256], line[64], buf[16];
	size_t len = sizeof ep;

	set_int(xpub, ZMQ_XPUB_MANUAL, 1);
	cr_assert_eq(zmq_bind(xpub, "tcp://127.0.0.1:*"), 0);
	cr_assert_eq(zmq_getsockopt(xpub, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	peer_start(&p, "sub-first", ep, "t");
	recv_str(xpub, buf, sizeof buf);
	cr_assert_str_eq(buf, "\001t", "the SUB's subscription, handed over");
	/* Confirmed narrower: "tt" only. */
	cr_assert_eq(zmq_setsockopt(xpub, ZMQ_SUBSCRIBE, "tt", 2), 0);
	publish_until_heard(xpub, &p, "t-no", "tt-yes", line, sizeof line);
	cr_assert_str_eq(line, "tt-yes");
	zmq_close(xpub);
	zmq_ctx_term(ctx);
	peer_stop(&p);
}
