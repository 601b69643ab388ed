/*
 * io/loop: timers, cross-thread wakeups, and real sockets on loopback driven
 * from the ring: accept, connect, send, receive, cancellation, and the
 * kernel's flow control when nobody arms a receive. The wakeups and a round
 * trip again on a polled loop (ZR__LOOP_POLLED: the wait valgrind gets).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/endpoint.h"
#include "io/loop.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define RUN_LIMIT_MS 10000

/* Runs the loop until *flag is set, failing the test after RUN_LIMIT_MS. */
static void
run_until(struct zr__loop *l, const int *flag)
{
	uint64_t give_up = zr__now_ms() + RUN_LIMIT_MS;

	while (!*flag) {
		cr_assert_lt(zr__now_ms(), give_up,
		             "loop did not reach the expected state in time");
		cr_assert_geq(zr__loop_run(l, zr__now_ms() + 100), 0);
	}
}

/* ---- timers ------------------------------------------------------------ */

struct order_timer {
	struct zr__timer t;
	int id;
	int *log;
	int *nlog;
};

static void
order_timer_cb(struct zr__timer *t)
{
	struct order_timer *o = (struct order_timer *)t;

	o->log[(*o->nlog)++] = o->id;
}

Test(io_loop, fires_timers_in_deadline_order_and_never_a_stopped_one)
{
	struct zr__loop l;
	struct order_timer tm[6];
	int log[6], nlog = 0, done_flag = 0;
	static const int delay[6] = {50, 10, 40, 20, 30, 5};
	uint64_t now;

	cr_assert_eq(zr__loop_init(&l, 64, 0, NULL, NULL), 0);
	now = zr__now_ms();
	for (int i = 0; i < 6; i++) {
		tm[i] = (struct order_timer){
			.t = {.cb = order_timer_cb}, .id = i, .log = log, .nlog = &nlog};
		cr_assert_eq(zr__timer_start(&l, &tm[i].t, now + (uint64_t)delay[i]), 0);
	}
	zr__timer_stop(&l, &tm[2].t); /* the 40 ms one */
	zr__timer_stop(&l, &tm[2].t); /* stopping twice is harmless */
	while (nlog < 5) {
		cr_assert_lt(zr__now_ms(), now + RUN_LIMIT_MS);
		zr__loop_run(&l, zr__now_ms() + 100);
	}
	(void)done_flag;
	cr_assert_eq(nlog, 5);
	cr_assert_eq(log[0], 5);
	cr_assert_eq(log[1], 1);
	cr_assert_eq(log[2], 3);
	cr_assert_eq(log[3], 4);
	cr_assert_eq(log[4], 0);
	/* A deadline in the past fires on the next turn, without waiting. */
	cr_assert_eq(zr__timer_start(&l, &tm[2].t, 0), 0);
	cr_assert_geq(zr__loop_run(&l, 0), 1);
	cr_assert_eq(nlog, 6);
	cr_assert_eq(log[5], 2);
	zr__loop_fini(&l);
}

Test(io_loop, keeps_many_timers_ordered_through_random_stops)
{
	enum {
		N = 300
	};
	static struct order_timer tm[N];
	static int log[N];
	struct zr__loop l;
	int nlog = 0, expected = 0;
	uint64_t base = zr__now_ms() + 1000000; /* far away: fired by hand below */
	unsigned seed = 12345;

	cr_assert_eq(zr__loop_init(&l, 8, 0, NULL, NULL), 0);
	for (int i = 0; i < N; i++) {
		tm[i] = (struct order_timer){
			.t = {.cb = order_timer_cb}, .id = i, .log = log, .nlog = &nlog};
		seed = seed * 1103515245u + 12345u;
		cr_assert_eq(zr__timer_start(&l, &tm[i].t, base + (seed >> 16) % 1000), 0);
	}
	for (int i = 0; i < N; i += 3)
		zr__timer_stop(&l, &tm[i].t);
	for (int i = 0; i < N; i++)
		expected += i % 3 != 0;
	/* Pull every remaining timer forward in its order: pop the minimum. */
	while (l.heap_len > 0) {
		struct zr__timer *min = l.heap[0];

		for (size_t k = 1; k < l.heap_len; k++)
			cr_assert_leq(min->deadline, l.heap[k]->deadline,
			              "heap root is not the minimum");
		zr__timer_stop(&l, min);
		min->cb(min);
	}
	cr_assert_eq(nlog, expected);
	for (int i = 1; i < nlog; i++)
		cr_assert_leq(tm[log[i - 1]].t.deadline, tm[log[i]].t.deadline);
	zr__loop_fini(&l);
}

/* ---- wakeups ----------------------------------------------------------- */

struct wake_count {
	atomic_int calls;
	int seen;
};

static void
wake_count_cb(void *arg)
{
	struct wake_count *w = arg;

	atomic_fetch_add(&w->calls, 1);
	w->seen = 1;
}

struct waker {
	struct zr__loop *l;
	int n;
};

static void *
waker_main(void *arg)
{
	struct waker *w = arg;

	for (int i = 0; i < w->n; i++) {
		zr__loop_wake(w->l);
		if (i % 100 == 0)
			usleep(1000);
	}
	return NULL;
}

static void
wake_and_coalesce(unsigned flags)
{
	struct zr__loop l;
	struct wake_count w;
	struct waker wk;
	pthread_t th;
	uint64_t t0;
	int calls;

	atomic_init(&w.calls, 0);
	w.seen = 0;
	cr_assert_eq(zr__loop_init(&l, 64, flags, wake_count_cb, &w), 0);
	cr_assert_eq(l.polled_wait, (flags & ZR__LOOP_POLLED) != 0 || RUNNING_ON_VALGRIND);
	wk = (struct waker){.l = &l, .n = 1000};
	t0 = zr__now_ms();
	cr_assert_eq(pthread_create(&th, NULL, waker_main, &wk), 0);
	/* Block with no deadline: only the wakes can end each wait. */
	while (atomic_load(&w.calls) == 0 || t0 + 50 > zr__now_ms()) {
		cr_assert_lt(zr__now_ms(), t0 + RUN_LIMIT_MS);
		zr__loop_run(&l, zr__now_ms() + 1000);
	}
	pthread_join(th, NULL);
	zr__loop_run(&l, 0); /* take a wake that came after the last turn */
	calls = atomic_load(&w.calls);
	cr_assert_geq(calls, 1);
	cr_assert_leq(calls, 1000, "more wake callbacks (%d) than wakes", calls);
	/* No wake pending: a turn that may wait 50 ms runs no wake callback. */
	zr__loop_run(&l, zr__now_ms() + 50);
	cr_assert_eq(atomic_load(&w.calls), calls);
	zr__loop_fini(&l);
}

Test(io_loop, wakes_a_sleeping_loop_from_another_thread_and_coalesces_wakes)
{
	wake_and_coalesce(0);
}

/* ZR__LOOP_POLLED (what valgrind gets): the sleep is poll(2) on the ring. */
Test(io_loop, a_polled_loop_wakes_from_another_thread_and_coalesces_wakes)
{
	wake_and_coalesce(ZR__LOOP_POLLED);
}

/* A moderated window (zr__loop_moderate): the loop does not announce that it
 * sleeps, so a wake from another thread writes no eventfd and cannot end the
 * wait early (nothing else is in flight to complete it); the wait ends at
 * the window's end, where the wake is seen and its callback runs once. Only
 * a lower bound on the time is asserted: a timeout never fires early. Once
 * the window has passed the loop sleeps announced again, and a wake ends a
 * wait that has no deadline at all (a lost one would hang the test). */
#define MOD_WINDOW_US 300000

struct late_waker {
	struct zr__loop *l;
	unsigned delay_us;
};

static void *
late_waker_main(void *arg)
{
	struct late_waker *w = arg;

	usleep(w->delay_us);
	zr__loop_wake(w->l);
	return NULL;
}

Test(io_loop, a_moderated_window_takes_wakes_without_the_eventfd_and_sees_them_at_its_end)
{
	struct zr__loop l;
	struct wake_count w;
	struct late_waker lw;
	pthread_t th;
	uint64_t t0, t1;

	atomic_init(&w.calls, 0);
	w.seen = 0;
	cr_assert_eq(zr__loop_init(&l, 64, 0, wake_count_cb, &w), 0);
	zr__loop_moderate(&l, MOD_WINDOW_US);
	t0 = zr__now_ns();
	lw = (struct late_waker){.l = &l, .delay_us = 20000};
	cr_assert_eq(pthread_create(&th, NULL, late_waker_main, &lw), 0);
	while (atomic_load(&w.calls) == 0) {
		cr_assert_geq(zr__loop_run(&l, zr__now_ms() + RUN_LIMIT_MS), 0);
	}
	t1 = zr__now_ns();
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&w.calls), 1);
	cr_assert_geq(t1 - t0, (uint64_t)MOD_WINDOW_US * 1000u - 1000000u,
	              "the wake ended the window early (%.1f ms): the eventfd was written",
	              (double)(t1 - t0) / 1e6);

	/* Past the window: the next run first gives the owner the window's
	 * last look (wake_cb, with zr__loop_moderated false), then sleeps
	 * announced again, and a wake ends that sleep. */
	lw.delay_us = 20000;
	cr_assert_eq(pthread_create(&th, NULL, late_waker_main, &lw), 0);
	while (atomic_load(&w.calls) < 3)
		cr_assert_geq(zr__loop_run(&l, UINT64_MAX), 0);
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&w.calls), 3, "the last look, then the wake");
	cr_assert_not(zr__loop_moderated(&l), "the window is over");
	zr__loop_fini(&l);
}

/* Within a window the owner looks at every turn, woken or not (producers
 * that skip the wake: a watched socket's senders), and the window's end
 * gives it a last look, in which it may open another. */
struct reopen {
	struct zr__loop *l;
	int turns, last_looks;
};

static void
reopen_cb(void *arg)
{
	struct reopen *r = arg;

	r->turns++;
	if (!zr__loop_moderated(r->l) && ++r->last_looks == 1) {
		/* One more window, once, which has passed before this look
		 * returns: it stands all the same, and it ends with a last
		 * look of its own (a watched socket stays drained). */
		zr__loop_moderate(r->l, 1);
		usleep(2000);
	}
}

Test(io_loop, a_window_runs_the_wake_callback_at_every_turn_and_at_its_end)
{
	struct zr__loop l;
	struct reopen r = {&l, 0, 0};

	cr_assert_eq(zr__loop_init(&l, 64, 0, reopen_cb, &r), 0);
	/* Nobody wakes the loop: no turn runs the callback outside a window. */
	cr_assert_geq(zr__loop_run(&l, 0), 0);
	cr_assert_eq(r.turns, 0);
	zr__loop_moderate(&l, 20000);
	cr_assert_geq(zr__loop_run(&l, 0), 0);
	cr_assert_eq(r.turns, 1, "a turn in the window looks without a wake");
	/* The window ends: its last look opens a second one; the second's
	 * last look does not, and the loop then sleeps until the deadline. */
	for (int i = 0; i < 5 && r.last_looks < 2; i++)
		cr_assert_geq(zr__loop_run(&l, zr__now_ms() + 100), 0);
	cr_assert_eq(r.last_looks, 2, "the second window ended without a last look");
	cr_assert_not(zr__loop_moderated(&l));
	int turns = r.turns;

	cr_assert_geq(zr__loop_run(&l, zr__now_ms() + 20), 0);
	cr_assert_eq(r.turns, turns, "out of the window: no look without a wake");
	zr__loop_fini(&l);
}

/* ---- sockets ----------------------------------------------------------- */

struct conn_side {
	struct zr__op op;
	int res;
	int done;
	uint32_t flags;
};

static void
side_cb(struct zr__op *op, int res, uint32_t flags)
{
	struct conn_side *s = (struct conn_side *)op;

	s->res = res;
	s->flags = flags;
	s->done = 1;
}

/* Listens on text (port 0 allowed), connects to it through the ring,
 * accepts through the ring; gives back the two connected fds. */
static void
connect_pair(struct zr__loop *l, const char *text, int *client, int *server, int *lfd_out)
{
	struct zr__endpoint ep, dst;
	char bound[ZR__ENDPOINT_TEXT_MAX];
	struct conn_side acc = {.op = {.cb = side_cb}}, con = {.op = {.cb = side_cb}};
	int lfd;

	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), 0, "parse %s", text);
	lfd = zr__endpoint_listen(&ep, 16);
	cr_assert_geq(lfd, 0, "listen %s: %s", text, strerror(-lfd));
	cr_assert_gt(zr__endpoint_local(lfd, ep.transport, bound, sizeof bound), 0);
	if (ep.transport == ZR__TCP)
		cr_assert_str_neq(bound, "tcp://127.0.0.1:0",
		                  "the kernel's port must be read back");
	cr_assert_eq(zr__endpoint_parse(bound, false, false, &dst), 0, "parse back %s", bound);

	cr_assert_eq(zr__op_accept(l, &acc.op, lfd), 0);
	*client = zr__endpoint_socket(&dst);
	cr_assert_geq(*client, 0);
	cr_assert_eq(zr__socket_tune(*client, dst.transport, 0, 0), 0);
	cr_assert_eq(zr__op_connect(l, &con.op, *client, (struct sockaddr *)&dst.addr, dst.addrlen),
	             0);
	run_until(l, &con.done);
	run_until(l, &acc.done);
	cr_assert_eq(con.res, 0, "connect: %s", strerror(-con.res));
	cr_assert_geq(acc.res, 0, "accept: %s", strerror(-acc.res));
	*server = acc.res;
	/* Stop the multishot accept before the listener goes. */
	if (acc.op.inflight) {
		acc.done = 0;
		zr__op_cancel_fd(l, lfd);
		run_until(l, &acc.done);
		cr_assert_eq(acc.op.inflight, 0u);
	}
	*lfd_out = lfd;
}

static void
round_trip(const char *text, unsigned flags)
{
	struct zr__loop l;
	int c, s, lfd;
	char in[64] = {0};
	struct iovec iov[2] = {{.iov_base = "hello ", .iov_len = 6},
	                       {.iov_base = "ring", .iov_len = 4}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	struct conn_side tx = {.op = {.cb = side_cb}}, rx = {.op = {.cb = side_cb}};

	cr_assert_eq(zr__loop_init(&l, 64, flags, NULL, NULL), 0);
	connect_pair(&l, text, &c, &s, &lfd);
	cr_assert_eq(zr__op_sendmsg(&l, &tx.op, c, &msg, MSG_NOSIGNAL | MSG_WAITALL), 0);
	cr_assert_eq(zr__op_recv(&l, &rx.op, s, in, sizeof in, MSG_WAITALL & 0), 0);
	run_until(&l, &tx.done);
	cr_assert_eq(tx.res, 10);
	run_until(&l, &rx.done);
	cr_assert_gt(rx.res, 0);
	/* A stream may split: read the rest if the first receive was short. */
	while (rx.res < 10 && rx.res > 0) {
		int got = rx.res;

		rx.done = 0;
		cr_assert_eq(zr__op_recv(&l, &rx.op, s, in + got, sizeof in - (size_t)got, 0), 0);
		run_until(&l, &rx.done);
		cr_assert_gt(rx.res, 0);
		rx.res += got;
	}
	cr_assert_eq(rx.res, 10);
	cr_assert_str_eq(in, "hello ring");

	/* The peer closes: a receive completes with 0 (EOF). */
	close(c);
	rx.done = 0;
	cr_assert_eq(zr__op_recv(&l, &rx.op, s, in, sizeof in, 0), 0);
	run_until(&l, &rx.done);
	cr_assert_eq(rx.res, 0);
	close(s);
	close(lfd);
	cr_assert_eq(l.inflight, 1u, "only the wakeup read may stay in flight");
	zr__loop_fini(&l);
}

Test(io_loop, moves_bytes_over_tcp_loopback)
{
	round_trip("tcp://127.0.0.1:0", 0);
}

Test(io_loop, moves_bytes_over_tcp_ipv6_loopback)
{
	struct zr__endpoint ep;

	if (zr__endpoint_parse("tcp://[::1]:0", true, true, &ep) != 0 ||
	    zr__endpoint_listen(&ep, 1) < 0)
		cr_skip_test("no IPv6 loopback on this machine");
	round_trip("tcp://[::1]:0", 0);
}

Test(io_loop, moves_bytes_over_ipc_path)
{
	char text[96];

	snprintf(text, sizeof text, "ipc:///tmp/zring-test-%d.sock", (int)getpid());
	round_trip(text, 0);
	unlink(text + 6);
}

Test(io_loop, moves_bytes_over_ipc_abstract_name)
{
	char text[96];

	snprintf(text, sizeof text, "ipc://@zring-test-%d", (int)getpid());
	round_trip(text, 0);
}

Test(io_loop, a_polled_loop_moves_bytes_over_tcp_loopback)
{
	round_trip("tcp://127.0.0.1:0", ZR__LOOP_POLLED);
}

/* A polled loop asleep: the completion of a receive (the peer writes from
 * another thread) must end its poll(2), as it ends io_uring_enter's wait.
 * Else only the writer's rescue wake, RUN_LIMIT_MS later, ends it, and the
 * test fails on that. */
struct late_writer {
	int fd;
	struct zr__loop *l;
	atomic_int finished; /* the loop saw the receive */
	atomic_int rescued;  /* the writer had to wake the loop */
};

static void *
late_writer_main(void *arg)
{
	struct late_writer *w = arg;

	usleep(20000); /* the loop is asleep by now, most likely */
	/* Not an assert off the test's thread: the test checks what came. */
	(void)!write(w->fd, "x", 1);
	for (int i = 0; i < RUN_LIMIT_MS / 10 && !atomic_load(&w->finished); i++)
		usleep(10000);
	if (!atomic_load(&w->finished)) {
		atomic_store(&w->rescued, 1);
		zr__loop_wake(w->l);
	}
	return NULL;
}

Test(io_loop, a_polled_loop_asleep_wakes_for_a_completion)
{
	struct zr__loop l;
	struct late_writer w;
	struct conn_side rx = {.op = {.cb = side_cb}};
	pthread_t th;
	char in[4];
	int c, s, lfd;

	cr_assert_eq(zr__loop_init(&l, 64, ZR__LOOP_POLLED, NULL, NULL), 0);
	connect_pair(&l, "tcp://127.0.0.1:0", &c, &s, &lfd);
	cr_assert_eq(zr__op_recv(&l, &rx.op, s, in, sizeof in, 0), 0);
	w = (struct late_writer){.fd = c, .l = &l};
	atomic_init(&w.finished, 0);
	atomic_init(&w.rescued, 0);
	cr_assert_eq(pthread_create(&th, NULL, late_writer_main, &w), 0);
	/* Each wait could last twice the rescue's delay; the first one should
	 * end some 20 ms in. */
	for (uint64_t give_up = zr__now_ms() + 4 * RUN_LIMIT_MS; !rx.done;) {
		cr_assert_lt(zr__now_ms(), give_up,
		             "neither the completion nor the rescue woke it");
		cr_assert_geq(zr__loop_run(&l, zr__now_ms() + 2 * RUN_LIMIT_MS), 0);
	}
	atomic_store(&w.finished, 1);
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&w.rescued), 0, "only the rescue wake ended the poll");
	cr_assert_eq(rx.res, 1);
	cr_assert_eq(in[0], 'x');
	close(c);
	close(s);
	close(lfd);
	zr__loop_fini(&l);
}

Test(io_loop, teardown_cancels_a_pending_receive_and_runs_its_callback)
{
	struct zr__loop l;
	int c, s, lfd;
	char in[16];
	struct conn_side rx = {.op = {.cb = side_cb}};

	cr_assert_eq(zr__loop_init(&l, 64, 0, NULL, NULL), 0);
	connect_pair(&l, "tcp://127.0.0.1:0", &c, &s, &lfd);
	cr_assert_eq(zr__op_recv(&l, &rx.op, s, in, sizeof in, 0), 0);
	zr__loop_run(&l, zr__now_ms() + 20); /* submitted, nothing to read */
	cr_assert_eq(rx.done, 0);
	zr__loop_fini(&l);
	cr_assert_eq(rx.done, 1, "fini must complete every operation");
	cr_assert_eq(rx.res, -ECANCELED);
	cr_assert_eq(rx.op.inflight, 0u);
	close(c);
	close(s);
	close(lfd);
}

/*
 * The io-level half of zring's backpressure: a receiver that arms no receive
 * makes the kernel buffers fill and the sender's non-blocking send fail with
 * EAGAIN after a bounded number of bytes; arming receives again lets every
 * byte through, in order.
 */
Test(io_loop, an_unarmed_receiver_stops_the_sender_through_tcp_flow_control)
{
	enum {
		CHUNK = 64 * 1024
	};
	static uint8_t out[CHUNK], in[CHUNK];
	struct zr__loop l;
	int c, s, lfd, queued = 0;
	size_t sent = 0, got = 0;
	struct conn_side rx = {.op = {.cb = side_cb}};
	uint64_t give_up;

	cr_assert_eq(zr__loop_init(&l, 64, 0, NULL, NULL), 0);
	connect_pair(&l, "tcp://127.0.0.1:0", &c, &s, &lfd);
	cr_assert_eq(zr__socket_tune(s, ZR__TCP, 0, 128 * 1024), 0);
	give_up = zr__now_ms() + RUN_LIMIT_MS;
	for (;;) {
		ssize_t n;

		for (size_t i = 0; i < CHUNK; i++)
			out[i] = (uint8_t)((sent + i) * 7u);
		n = send(c, out, CHUNK, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "send: %s",
			          strerror(errno));
			break;
		}
		sent += (size_t)n;
		cr_assert_lt(zr__now_ms(), give_up);
		cr_assert_lt(sent, (size_t)256 << 20, "the sender never blocked");
	}
	cr_assert_eq(ioctl(s, FIONREAD, &queued), 0);
	cr_assert_gt(queued, 0, "the receiver's kernel queue holds the unread bytes");
	cr_assert_lt(sent, (size_t)64 << 20, "blocked only after %zu bytes", sent);

	/* Resume: receive everything, checking the byte pattern. */
	while (got < sent) {
		rx.done = 0;
		cr_assert_eq(zr__op_recv(&l, &rx.op, s, in, sizeof in, 0), 0);
		run_until(&l, &rx.done);
		cr_assert_gt(rx.res, 0);
		for (int i = 0; i < rx.res; i++)
			cr_assert_eq(in[i], (uint8_t)((got + (size_t)i) * 7u), "byte %zu",
			             got + (size_t)i);
		got += (size_t)rx.res;
	}
	cr_assert_eq(got, sent);
	close(c);
	close(s);
	close(lfd);
	zr__loop_fini(&l);
}

/*
 * ZR__LOOP_SHARED: threads run the loop by turns. A thread takes a wake and
 * so re-arms the loop's eventfd read, submits it (zr__loop_poll) and exits:
 * io_uring cancels a thread's requests when it exits, and the read comes
 * back -ECANCELED. The next runner must arm it again, or no later wake could
 * end a sleeping wait: the main thread's wait below has no deadline but the
 * test's limit, and is ended only by another thread's wake.
 */
struct turn {
	struct zr__loop *l;
	int rc;
};

static void *
turn_main(void *arg)
{
	struct turn *t = arg;
	uint64_t one = 1, t0 = zr__now_ms();

	/* A wake as a sleeping loop gets it: the mark and the eventfd write,
	 * which completes the pending read (the kernel stores the count). */
	*(volatile uint64_t *)&t->l->wake_val = 0;
	zr__loop_wake(t->l);
	cr_assert_eq(write(t->l->wake_fd, &one, sizeof one), (ssize_t)sizeof one);
	while (*(volatile uint64_t *)&t->l->wake_val == 0 && zr__now_ms() < t0 + RUN_LIMIT_MS)
		zr__loop_run(t->l, zr__now_ms() + 100);
	cr_assert_neq(*(volatile uint64_t *)&t->l->wake_val, 0, "no read of the eventfd was armed");
	/* One look reaps the read (its callback arms the next), one submits
	 * that: this thread is now the one that submitted it. */
	t->rc = zr__loop_poll(t->l);
	if (t->rc >= 0)
		t->rc = zr__loop_poll(t->l);
	return NULL;
}

Test(io_loop, a_shared_loop_survives_the_exit_of_a_thread_that_ran_it)
{
	struct zr__loop l;
	struct wake_count w;
	struct late_waker lw;
	struct turn t;
	pthread_t th;
	int calls;

	atomic_init(&w.calls, 0);
	w.seen = 0;
	cr_assert_eq(zr__loop_init(&l, 64, ZR__LOOP_SHARED, wake_count_cb, &w), 0);
	for (int round = 0; round < 3; round++) {
		t = (struct turn){.l = &l, .rc = -1};
		calls = atomic_load(&w.calls);
		cr_assert_eq(pthread_create(&th, NULL, turn_main, &t), 0);
		pthread_join(th, NULL);
		cr_assert_geq(t.rc, 0, "the other thread's turn");
		cr_assert_eq(atomic_load(&w.calls), calls + 1, "it ran the wake");

		/* The read it submitted was cancelled by its exit. A wake from yet
		 * another thread must still end a wait with no deadline. */
		lw = (struct late_waker){.l = &l, .delay_us = 20000};
		cr_assert_eq(pthread_create(&th, NULL, late_waker_main, &lw), 0);
		uint64_t t0 = zr__now_ms();

		while (atomic_load(&w.calls) == calls + 1) {
			cr_assert_lt(zr__now_ms(), t0 + RUN_LIMIT_MS, "the wake was lost");
			cr_assert_geq(zr__loop_run(&l, t0 + RUN_LIMIT_MS), 0);
		}
		/* Seen at the deadline would mean the eventfd write found no read. */
		cr_assert_lt(zr__now_ms(), t0 + RUN_LIMIT_MS, "the wake was lost");
		pthread_join(th, NULL);
		cr_assert_eq(atomic_load(&w.calls), calls + 2);
	}
	zr__loop_fini(&l);
}
