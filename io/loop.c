/*
 * The io_uring loop: ring setup with a feature fallback chain, a batch of
 * completions per turn, a deadline heap for timers, and an eventfd wakeup
 * that costs nothing while the loop is awake.
 */
#define _GNU_SOURCE /* liburing.h needs sigset_t; eventfd */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "common/base.h"
#include "loop.h"

/* Behind struct zr__loop, so no other layer sees liburing's types. */
struct zr__ring {
	struct io_uring uring;
};

_Static_assert(ZR__OP_F_MORE == IORING_CQE_F_MORE, "ZR__OP_F_MORE is not the kernel's flag");

/*
 * ThreadSanitizer does not see liburing map and unmap the rings: liburing
 * makes those system calls itself, not through libc. So when the kernel maps
 * a new context's ring where a freed context's ring was, TSan takes the new
 * io thread's first SQE writes for a race with the old io thread's (found by
 * tests/tsan/teardown.c, contexts made and freed side by side). The kernel
 * orders every unmap before a map of the same pages; the annotations below
 * say so (a release just before each unmap, which follows the io thread's
 * last use of its ring, and an acquire after each map, on one address used
 * only as TSan's token). Nothing in other builds.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOOP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LOOP_TSAN 1
#endif
#ifdef LOOP_TSAN
#include <sanitizer/tsan_interface.h>
static char loop_tsan_rings; /* never read or written: its address is the token */
#define LOOP_TSAN_MAPPED() __tsan_acquire(&loop_tsan_rings)
#define LOOP_TSAN_UNMAPPED() __tsan_release(&loop_tsan_rings)
#else
#define LOOP_TSAN_MAPPED() ((void)0)
#define LOOP_TSAN_UNMAPPED() ((void)0)
#endif

/*
 * Under valgrind. Valgrind runs one thread at a time, and a thread gives
 * the others their turn only in a system call valgrind knows may block;
 * valgrind 3.19 (Debian 12's) does not count io_uring_enter among them, so
 * an io thread asleep in it stops the whole process (the app thread that
 * would wake it never runs). Under valgrind the loop sleeps in poll(2) on
 * the ring's fd instead, on a ring without DEFER_TASKRUN (whose completions
 * would wait for the enter that poll replaces), and enters the kernel only
 * without waiting. And memcheck cannot see the kernel fill a receive
 * buffer behind an io_uring op: each is marked defined when it is handed
 * to the kernel. With valgrind's headers absent at build time, none of
 * this (RUNNING_ON_VALGRIND is 0).
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define LOOP_VALGRIND 1
#endif
#endif
#ifndef LOOP_VALGRIND
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void)(addr), (void)(len))
#endif

#define LOOP_CQE_BATCH 64
#define LOOP_CQ_MIN 4096u
#define LOOP_FINI_WAIT_MS 5000

uint64_t
zr__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t
zr__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
zr__spin_relax(unsigned *steps)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
	if (++*steps % ZR__SPIN_YIELD_EVERY == 0)
		sched_yield();
}

void
zr__loop_busy_poll(struct zr__loop *l, unsigned us)
{
	atomic_store_explicit(&l->busy_poll_us, us, memory_order_relaxed);
}

/* Gets an SQE, flushing the queue to the kernel once if it is full. */
static struct io_uring_sqe *
loop_sqe(struct zr__loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring->uring);

	if (sqe == NULL) {
		io_uring_submit(&l->ring->uring);
		sqe = io_uring_get_sqe(&l->ring->uring);
	}
	return sqe;
}

static void
loop_track(struct zr__loop *l, struct zr__op *op, struct io_uring_sqe *sqe)
{
	io_uring_sqe_set_data(sqe, op);
	op->inflight++;
	l->inflight++;
}

/* ---- wakeup ------------------------------------------------------------ */

static int loop_wake_arm(struct zr__loop *l);

static void
loop_wake_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__loop *l = ZR_CONTAINER_OF(op, struct zr__loop, wake_op);

	(void)flags;
	/* A count, or -ECANCELED: with the loop running that is not our cancel
	 * but the exit of the thread that submitted the read (a shared loop,
	 * ZR__LOOP_SHARED: io_uring cancels an exiting thread's requests).
	 * Armed again either way. */
	(void)res;
	if (l->wake_fd < 0)
		return; /* the loop is shutting down (zr__loop_fini) */
	loop_wake_arm(l);
}

static int
loop_wake_arm(struct zr__loop *l)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	io_uring_prep_read(sqe, l->wake_fd, &l->wake_val, sizeof l->wake_val, 0);
	loop_track(l, &l->wake_op, sqe);
	return 0;
}

void
zr__loop_wake(struct zr__loop *l)
{
	uint64_t one = 1;

	/*
	 * Pairs with zr__loop_run: it sets sleeping, then reads woken; we set
	 * woken, then read sleeping. Both sequentially consistent, so at least
	 * one side sees the other: either the loop does not block, or we write.
	 */
	if (atomic_exchange(&l->woken, 1) == 0 && atomic_load(&l->sleeping)) {
		ssize_t n = write(l->wake_fd, &one, sizeof one);
		(void)n; /* EAGAIN only if the counter is saturated: a wake is pending anyway */
	}
}

/* ---- setup ------------------------------------------------------------- */

static int
loop_ring_init(struct zr__loop *l, unsigned sq_entries, unsigned flags)
{
	/* Newest first; each step drops what an older kernel rejects (-EINVAL).
	 * A shared loop (ZR__LOOP_SHARED) starts at COOP_TASKRUN: SINGLE_ISSUER
	 * (and DEFER_TASKRUN, which needs it) would refuse any thread but the
	 * first with -EEXIST. So does a polled one: DEFER_TASKRUN completions
	 * wait for an io_uring_enter, and poll(2) would not see them. */
	static const unsigned flag_sets[] = {
		/* TASKRUN_FLAG: the kernel flags completions waiting for us to
		 * enter it, which the busy-poll watches (loop_spin). */
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL,
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL,
		0,
	};
	unsigned cq = sq_entries * 4 < LOOP_CQ_MIN ? LOOP_CQ_MIN : sq_entries * 4;
	size_t i = (flags & ZR__LOOP_SHARED) || l->polled_wait ? 2 : 0;
	int rc = -EINVAL;

	for (; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
		struct io_uring_params p;

		memset(&p, 0, sizeof p);
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
		rc = io_uring_queue_init_params(sq_entries, &l->ring->uring, &p);
		if (rc == 0) {
			LOOP_TSAN_MAPPED();
			l->setup_flags = flag_sets[i];
			return 0;
		}
		if (rc != -EINVAL)
			return rc;
	}
	return rc;
}

int
zr__loop_init(struct zr__loop *l, unsigned sq_entries, unsigned flags, zr__wake_cb *wake_cb,
              void *wake_arg)
{
	int rc;

	memset(l, 0, sizeof *l);
	l->wake_fd = -1;
	atomic_init(&l->sleeping, 0);
	atomic_init(&l->woken, 0);
	atomic_init(&l->busy_poll_us, 0);
	l->moderate_end_ns = 0;
	l->wake_cb = wake_cb;
	l->wake_arg = wake_arg;
	l->wake_op.cb = loop_wake_done;
	l->polled_wait = (flags & ZR__LOOP_POLLED) != 0 || RUNNING_ON_VALGRIND != 0;

	l->ring = malloc(sizeof *l->ring);
	if (l->ring == NULL)
		return -ENOMEM;
	rc = loop_ring_init(l, sq_entries, flags);
	if (rc < 0)
		goto fail_ring;
	/* An optimisation (failure is fine), and a per-thread one: the
	 * registered index means nothing to another thread's io_uring_enter. */
	if (!(flags & ZR__LOOP_SHARED))
		io_uring_register_ring_fd(&l->ring->uring);

	l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->wake_fd < 0) {
		rc = -errno;
		goto fail_queue;
	}
	rc = loop_wake_arm(l);
	if (rc == 0)
		return 0;
	close(l->wake_fd);
	l->wake_fd = -1;
fail_queue:
	LOOP_TSAN_UNMAPPED();
	io_uring_queue_exit(&l->ring->uring);
fail_ring:
	free(l->ring);
	l->ring = NULL;
	return rc;
}

/* ---- timers: a binary min-heap of deadlines ---------------------------- */

static void
heap_set(struct zr__loop *l, size_t i, struct zr__timer *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void
heap_up(struct zr__loop *l, size_t i)
{
	struct zr__timer *t = l->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (l->heap[parent]->deadline <= t->deadline)
			break;
		heap_set(l, i, l->heap[parent]);
		i = parent;
	}
	heap_set(l, i, t);
}

static void
heap_down(struct zr__loop *l, size_t i)
{
	struct zr__timer *t = l->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->heap_len)
			break;
		if (c + 1 < l->heap_len && l->heap[c + 1]->deadline < l->heap[c]->deadline)
			c++;
		if (t->deadline <= l->heap[c]->deadline)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

void
zr__timer_stop(struct zr__loop *l, struct zr__timer *t)
{
	struct zr__timer *moved;
	size_t i;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	l->heap_len--;
	if (i == l->heap_len)
		return;
	moved = l->heap[l->heap_len];
	heap_set(l, i, moved);
	heap_up(l, i);
	heap_down(l, moved->slot - 1);
}

int
zr__timer_start(struct zr__loop *l, struct zr__timer *t, uint64_t deadline_ms)
{
	zr__timer_stop(l, t);
	if (l->heap_len == l->heap_cap) {
		size_t cap = l->heap_cap ? l->heap_cap * 2 : 64;
		struct zr__timer **h = realloc(l->heap, cap * sizeof *h);

		if (h == NULL)
			return -ENOMEM;
		l->heap = h;
		l->heap_cap = cap;
	}
	t->deadline = deadline_ms;
	heap_set(l, l->heap_len++, t);
	heap_up(l, l->heap_len - 1);
	return 0;
}

static int
loop_run_timers(struct zr__loop *l, uint64_t now)
{
	int n = 0;

	while (l->heap_len > 0 && l->heap[0]->deadline <= now) {
		struct zr__timer *t = l->heap[0];

		zr__timer_stop(l, t);
		t->cb(t);
		n++;
	}
	return n;
}

/* ---- the turn ---------------------------------------------------------- */

struct loop_done {
	struct zr__op *op;
	int res;
	uint32_t flags;
};

/* Takes every ready CQE off the ring first, then runs the callbacks, so a
 * callback that queues I/O or frees its owner never sees the CQ mid-walk. */
static int
loop_reap(struct zr__loop *l)
{
	struct io_uring_cqe *cqes[LOOP_CQE_BATCH];
	struct loop_done done[LOOP_CQE_BATCH];
	int total = 0;

	for (;;) {
		unsigned n = io_uring_peek_batch_cqe(&l->ring->uring, cqes, LOOP_CQE_BATCH), i;

		if (n == 0)
			return total;
		for (i = 0; i < n; i++) {
			done[i].op = io_uring_cqe_get_data(cqes[i]);
			done[i].res = cqes[i]->res;
			done[i].flags = cqes[i]->flags;
		}
		io_uring_cq_advance(&l->ring->uring, n);
		for (i = 0; i < n; i++) {
			struct zr__op *op = done[i].op;

			if (op == NULL)
				continue; /* a cancel request's own completion */
			if (!zr__op_more(done[i].flags)) {
				op->inflight--;
				l->inflight--;
			}
			op->cb(op, done[i].res, done[i].flags);
			total++;
		}
	}
}

/*
 * The busy-poll before sleeping: submits what is queued (if anything), then watches for
 * completions, a wake and the deadline (absolute ms) for up to us
 * microseconds. With DEFER_TASKRUN, completions wait as task work until we
 * enter the kernel: the TASKRUN flag says when that is worth a (non-blocking)
 * io_uring_enter; a ring without the flag enters every few steps. Returns
 * true when there is something to do.
 */
static bool
loop_spin(struct zr__loop *l, unsigned us, uint64_t deadline_ms)
{
	struct io_uring *r = &l->ring->uring;
	bool deferred = (l->setup_flags & IORING_SETUP_DEFER_TASKRUN) != 0;
	bool flagged = (l->setup_flags & IORING_SETUP_TASKRUN_FLAG) != 0;
	uint64_t end = zr__now_ns() + (uint64_t)us * 1000u;
	unsigned steps = 0;

	if (deadline_ms != UINT64_MAX && deadline_ms * 1000000u < end)
		end = deadline_ms * 1000000u;
	if (io_uring_sq_ready(r) > 0)
		io_uring_submit_and_get_events(r);
	for (;;) {
		if (io_uring_cq_ready(r) > 0 || atomic_load(&l->woken))
			return true;
		if (zr__now_ns() >= end)
			return false;
		if (flagged ? (IO_URING_READ_ONCE(*r->sq.kflags) & IORING_SQ_TASKRUN) != 0
		            : deferred && steps % 8 == 0)
			io_uring_get_events(r);
		zr__spin_relax(&steps);
	}
}

/*
 * zr__loop_run's wait in a polled loop (ZR__LOOP_POLLED, and every loop
 * under valgrind): submits without waiting, then sleeps in poll(2) until a
 * completion is posted or wait_ns passes (UINT64_MAX: no limit). A
 * completion that needs this thread's task work wakes the poll too
 * (COOP_TASKRUN's notification), and leaving it runs that work. 0, or what
 * io_uring_submit failed with.
 */
static int
loop_wait_polled(struct zr__loop *l, uint64_t wait_ns)
{
	struct io_uring *r = &l->ring->uring;
	struct pollfd p = {.fd = r->ring_fd, .events = POLLIN};
	uint64_t ms = wait_ns / 1000000u + (wait_ns % 1000000u != 0);
	int rc = io_uring_submit(r);

	if (rc < 0)
		return rc;
	if (wait_ns == 0 || io_uring_cq_ready(r) > 0)
		return 0;
	if (poll(&p, 1, wait_ns == UINT64_MAX ? -1 : ms > INT_MAX ? INT_MAX : (int)ms) < 0)
		return -errno;
	return 0;
}

/* Runs wake_cb once if a wake is pending: 1 if it did, else 0. In a
 * moderated window it runs at every turn, woken or not: 0 then if no wake
 * was pending. */
static int
loop_take_wake(struct zr__loop *l)
{
	bool woken = atomic_exchange(&l->woken, 0);

	if (!woken && l->moderate_end_ns == 0)
		return 0;
	if (l->wake_cb != NULL)
		l->wake_cb(l->wake_arg);
	return woken ? 1 : 0;
}

int
zr__loop_run(struct zr__loop *l, uint64_t deadline_ms)
{
	unsigned busy = atomic_load_explicit(&l->busy_poll_us, memory_order_relaxed);
	struct io_uring_cqe *cqe = NULL;
	uint64_t now = zr__now_ms(), until = deadline_ms;
	struct __kernel_timespec ts;
	int n, rc;

	n = loop_run_timers(l, now);
	if (l->heap_len > 0 && l->heap[0]->deadline < until)
		until = l->heap[0]->deadline;

	/* Awake (sleeping is 0), so a wake during the spin is one atomic; when
	 * the spin found work and nothing new is queued, no enter at all. */
	if (busy > 0 && n == 0 && until > now && loop_spin(l, busy, until)) {
		until = 0;
		if (io_uring_sq_ready(&l->ring->uring) == 0)
			goto reap;
	}
	/* In a moderated window (zr__loop_moderate) the wait does not announce
	 * itself: a waker sets woken and goes on, with no write, and the wait
	 * ends by the window's end, which sees that wake. */
	uint64_t wait_ns = until == UINT64_MAX ? UINT64_MAX
	                   : until > now       ? (until - now) * 1000000u
	                                       : 0;
	bool moderated = false;

	if (l->moderate_end_ns != 0) {
		uint64_t t = zr__now_ns();

		if (t >= l->moderate_end_ns) {
			/* Over: wake_cb's last look of the window, then sleep
			 * as usual. Only that look ends a window: if it opens
			 * another, that one stands even when the look took
			 * longer than it (the wait is then 0, and the next
			 * turn looks last again). */
			l->moderate_end_ns = 0;
			if (l->wake_cb != NULL)
				l->wake_cb(l->wake_arg);
			t = zr__now_ns();
		}
		moderated = l->moderate_end_ns != 0;
		if (moderated) {
			uint64_t left = l->moderate_end_ns > t ? l->moderate_end_ns - t : 0;

			if (left < wait_ns)
				wait_ns = left;
		}
	}
	if (!moderated)
		atomic_store(&l->sleeping, 1);
	if (n > 0 || atomic_load(&l->woken) || io_uring_cq_ready(&l->ring->uring) > 0)
		wait_ns = 0;
	if (l->polled_wait) {
		rc = loop_wait_polled(l, wait_ns);
	} else if (wait_ns == UINT64_MAX) {
		rc = io_uring_submit_and_wait_timeout(&l->ring->uring, &cqe, 1, NULL, NULL);
	} else {
		ts.tv_sec = (long long)(wait_ns / 1000000000u);
		ts.tv_nsec = (long long)(wait_ns % 1000000000u);
		rc = io_uring_submit_and_wait_timeout(&l->ring->uring, &cqe, 1, &ts, NULL);
	}
	atomic_store(&l->sleeping, 0);
	if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
		return rc;
reap:
	n += loop_reap(l);
	n += loop_take_wake(l);
	n += loop_run_timers(l, zr__now_ms());
	return n;
}

int
zr__loop_poll(struct zr__loop *l)
{
	struct io_uring *r = &l->ring->uring;
	int n = 0, rc;

	n += loop_take_wake(l);
	if (io_uring_sq_ready(r) > 0) {
		rc = io_uring_submit(r);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			return rc;
	}
	n += loop_reap(l);
	if (l->heap_len > 0)
		n += loop_run_timers(l, zr__now_ms());
	return n;
}

void
zr__loop_moderate(struct zr__loop *l, unsigned us)
{
	l->moderate_end_ns = zr__now_ns() + (uint64_t)us * 1000u;
}

bool
zr__loop_moderated(const struct zr__loop *l)
{
	return l->moderate_end_ns != 0;
}

void
zr__loop_fini(struct zr__loop *l)
{
	struct io_uring_sqe *sqe;
	uint64_t give_up = zr__now_ms() + LOOP_FINI_WAIT_MS;
	int fd = l->wake_fd;

	l->wake_fd = -1; /* the wake op must not re-arm */
	sqe = loop_sqe(l);
	if (sqe != NULL) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data(sqe, NULL);
	}
	while (l->inflight > 0 && zr__now_ms() < give_up) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100L * 1000000};

		if (l->polled_wait)
			(void)loop_wait_polled(l, (uint64_t)ts.tv_nsec);
		else
			io_uring_submit_and_wait_timeout(&l->ring->uring, &cqe, 1, &ts, NULL);
		loop_reap(l);
	}
	if (fd >= 0)
		close(fd);
	LOOP_TSAN_UNMAPPED();
	io_uring_queue_exit(&l->ring->uring);
	free(l->ring);
	l->ring = NULL;
	free(l->heap);
	l->heap = NULL;
	l->heap_len = l->heap_cap = 0;
}

/* ---- operations -------------------------------------------------------- */

int
zr__op_recv(struct zr__loop *l, struct zr__op *op, int fd, void *buf, size_t len, int flags)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	(void)VALGRIND_MAKE_MEM_DEFINED(buf, len);
	io_uring_prep_recv(sqe, fd, buf, len, flags);
	loop_track(l, op, sqe);
	return 0;
}

int
zr__op_recvmsg(struct zr__loop *l, struct zr__op *op, int fd, struct msghdr *msg, int flags)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	for (size_t i = 0; RUNNING_ON_VALGRIND && i < msg->msg_iovlen; i++)
		(void)VALGRIND_MAKE_MEM_DEFINED(msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
	if (msg->msg_name != NULL)
		(void)VALGRIND_MAKE_MEM_DEFINED(msg->msg_name, msg->msg_namelen);
	if (msg->msg_control != NULL)
		(void)VALGRIND_MAKE_MEM_DEFINED(msg->msg_control, msg->msg_controllen);
	io_uring_prep_recvmsg(sqe, fd, msg, (unsigned)flags);
	loop_track(l, op, sqe);
	return 0;
}

int
zr__op_sendmsg(struct zr__loop *l, struct zr__op *op, int fd, const struct msghdr *msg, int flags)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	io_uring_prep_sendmsg(sqe, fd, msg, (unsigned)flags);
	loop_track(l, op, sqe);
	return 0;
}

int
zr__op_accept(struct zr__loop *l, struct zr__op *op, int fd)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	/* Multishot accept came with 5.19, as did COOP_TASKRUN; a plain ring
	 * means an older kernel, where the owner re-arms after every accept
	 * (it must anyway when a CQE comes without IORING_CQE_F_MORE). */
	if (l->setup_flags != 0)
		io_uring_prep_multishot_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC);
	else
		io_uring_prep_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC);
	loop_track(l, op, sqe);
	return 0;
}

int
zr__op_connect(struct zr__loop *l, struct zr__op *op, int fd, const struct sockaddr *addr,
               socklen_t addrlen)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	io_uring_prep_connect(sqe, fd, addr, addrlen);
	loop_track(l, op, sqe);
	return 0;
}

int
zr__op_cancel_fd(struct zr__loop *l, int fd)
{
	struct io_uring_sqe *sqe = loop_sqe(l);

	if (sqe == NULL)
		return -EBUSY;
	io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data(sqe, NULL);
	return 0;
}
