/*
 * io/ — the io_uring runtime: one loop per io thread, its ring, its timers
 * and its wakeup. Internal to zring (not installed). Knows nothing of ZMTP.
 *
 * Threading: a loop and everything it owns are used by the thread that
 * created the loop (the ring is set up SINGLE_ISSUER), except
 * zr__loop_wake(), which any thread may call.
 *
 * Operations: an owner embeds a struct zr__op per operation it keeps in
 * flight, prepares the SQE with one of the zr__op_* helpers, and gets exactly
 * one callback per CQE (multishot operations: one per CQE, the last without
 * ZR__OP_F_MORE). A buffer given to an operation belongs to the kernel
 * until that operation's final callback; an op may be freed only after it.
 *
 * liburing stays behind this header: the ring lives in io/loop.c (struct
 * zr__ring), so the engine includes no <liburing.h> and needs none of the
 * feature macros it wants.
 */
#ifndef ZR_IO_LOOP_H
#define ZR_IO_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct zr__op;

/* res: the CQE's result (negative errno on failure); flags: its flags. */
typedef void zr__op_cb(struct zr__op *op, int res, uint32_t flags);

struct zr__op {
	zr__op_cb *cb;
	unsigned inflight; /* CQEs still expected (0 or 1; multishot stays 1) */
};

struct zr__timer;
typedef void zr__timer_cb(struct zr__timer *t);

/* A one-shot timer on the loop's deadline heap (absolute ms, monotonic). */
struct zr__timer {
	zr__timer_cb *cb;
	uint64_t deadline;
	size_t slot; /* 1 + index in the heap while armed, 0 when not */
};

typedef void zr__wake_cb(void *arg);

/* The io_uring ring: defined in io/loop.c, the one file that includes liburing. */
struct zr__ring;

/*
 * The members are the loop's own (io/loop.c): do not touch them. The owner
 * embeds the struct, so the part another thread touches (the wakeup) lives as
 * long as the owner does, and the awake check in zr__loop_wake stays two
 * atomics on this struct, with no pointer to follow.
 */
struct zr__loop {
	struct zr__ring *ring;
	unsigned setup_flags; /* what the ring was created with (probe result) */
	int wake_fd;          /* eventfd; a READ on it stays armed */
	uint64_t wake_val;
	struct zr__op wake_op;
	atomic_int sleeping; /* 1 while this loop may block in the kernel */
	atomic_int woken;    /* a wake is pending; coalesces the eventfd writes */
	zr__wake_cb *wake_cb;
	void *wake_arg;
	struct zr__timer **heap;
	size_t heap_len, heap_cap;
	unsigned inflight; /* operations with a CQE still to come */
	/* Microseconds to poll the ring before sleeping (0: never): any thread
	 * may set it (zr__loop_busy_poll). */
	atomic_uint busy_poll_us;
	/* The loop's thread: until then (zr__now_ns; 0: none) it does not sleep
	 * announced (zr__loop_moderate). */
	uint64_t moderate_end_ns;
	/* Sleeps in poll(2) on the ring's fd, not in io_uring_enter (under
	 * valgrind: see io/loop.c). */
	bool polled_wait;
};

/* zr__loop_init flags: the loop is run by more than one thread, one at a
 * time, each handing it to the next with a release/acquire pair (the
 * owner's lock or baton): no SINGLE_ISSUER, no registered ring fd. */
#define ZR__LOOP_SHARED 1u
/* zr__loop_init flags: the loop sleeps in poll(2) on the ring's fd rather
 * than in io_uring_enter, on a ring without DEFER_TASKRUN. What a loop gets
 * under valgrind whatever the flags (see io/loop.c); this flag asks for it
 * outside valgrind, so its tests run in every build. */
#define ZR__LOOP_POLLED 2u

/*
 * Creates the ring on the calling thread (SINGLE_ISSUER | DEFER_TASKRUN when
 * the kernel has them and flags has neither ZR__LOOP_SHARED nor
 * ZR__LOOP_POLLED, else COOP_TASKRUN,
 * else plain) with sq_entries SQEs and a CQ four times as large, and the
 * wakeup eventfd. wake_cb (may be NULL) runs on the loop's thread after any
 * zr__loop_wake(). Returns 0 or -errno.
 */
int zr__loop_init(struct zr__loop *l, unsigned sq_entries, unsigned flags, zr__wake_cb *wake_cb,
                  void *wake_arg);

/*
 * Cancels every operation still in flight, waits for their completions
 * (callbacks run, with -ECANCELED or their real result), then frees the ring.
 */
void zr__loop_fini(struct zr__loop *l);

/*
 * Submits what is queued, waits until at least one completion arrives, a
 * timer is due, a wake arrives, or until deadline_ms (absolute; UINT64_MAX
 * for no limit, 0 for no wait at all), then runs the callbacks of every
 * completion and every due timer. Returns the number of callbacks run, or
 * -errno if the ring failed.
 */
int zr__loop_run(struct zr__loop *l, uint64_t deadline_ms);

/*
 * Without waiting: runs wake_cb if a wake is pending, submits what is
 * queued (the callbacks' new SQEs too), then runs the callbacks of the
 * completions already there and of due timers. For a thread that queued
 * work and wants it on the wire now, not at the loop's next wait. Returns
 * the number of callbacks run, or -errno if the ring failed.
 */
int zr__loop_poll(struct zr__loop *l);

/*
 * The loop's thread (a wake callback): for the next us microseconds the loop
 * does not sleep announced: zr__loop_wake only marks the wake (no eventfd
 * write), and the loop's waits end at the window's end, where they see it.
 * For a producer that wakes the loop again and again: the loop looks once
 * per window instead of the producer making a system call per wake. A new
 * call moves the window's end; once it passes, the loop sleeps as before.
 * Within the window wake_cb runs at every turn of zr__loop_run, woken or
 * not, and once more when the window ends (zr__loop_moderated false by
 * then), before the loop sleeps: the owner may look at producers that did
 * not wake it, and open another window.
 */
void zr__loop_moderate(struct zr__loop *l, unsigned us);
/* Whether a window is open (the loop's thread). */
bool zr__loop_moderated(const struct zr__loop *l);

/* Wakes the loop from any thread: wake_cb runs once on the loop's thread
 * (several wakes before it runs coalesce). Costs no syscall when the loop is
 * awake. */
void zr__loop_wake(struct zr__loop *l);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t zr__now_ms(void);
/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t zr__now_ns(void);

/*
 * Busy-polling (ZR_BUSY_POLL): before it sleeps in the kernel, the loop
 * submits what is queued and polls its completion queue, its wakeup and
 * its timers for up to us microseconds (0: it sleeps at once). Any thread.
 */
void zr__loop_busy_poll(struct zr__loop *l, unsigned us);

/*
 * One step of a bounded spin, for the loop and for app threads waiting on
 * a queue: a pause instruction (the core's sibling and the power budget
 * get the cycles back), and every ZR__SPIN_YIELD_EVERY steps a
 * sched_yield, so that a runnable thread sharing the core (on 2 cores, the
 * very thread the spinner waits for) is not held off for a time slice.
 * *steps counts the calls.
 */
#define ZR__SPIN_YIELD_EVERY 2u
void zr__spin_relax(unsigned *steps);

/* Arms t to fire at deadline_ms (re-arms if armed). Returns 0 or -ENOMEM. */
int zr__timer_start(struct zr__loop *l, struct zr__timer *t, uint64_t deadline_ms);
void zr__timer_stop(struct zr__loop *l, struct zr__timer *t);

/* ---- operations: each returns 0 or -errno (-EBUSY: the ring is full) ---- */

int zr__op_recv(struct zr__loop *l, struct zr__op *op, int fd, void *buf, size_t len, int flags);
/* A scattering receive: msg (and its iovecs) stay the caller's until the
 * completion. */
int zr__op_recvmsg(struct zr__loop *l, struct zr__op *op, int fd, struct msghdr *msg, int flags);
int zr__op_sendmsg(struct zr__loop *l, struct zr__op *op, int fd, const struct msghdr *msg,
                   int flags);
/* Multishot accept: one callback per accepted connection (res = the new fd). */
int zr__op_accept(struct zr__loop *l, struct zr__op *op, int fd);
int zr__op_connect(struct zr__loop *l, struct zr__op *op, int fd, const struct sockaddr *addr,
                   socklen_t addrlen);
/* The flag of a callback's flags that says more CQEs follow: the kernel's
 * IORING_CQE_F_MORE (io/loop.c checks that they are the same bit). */
#define ZR__OP_F_MORE (1u << 1)

/* Whether a multishot operation's CQE flags say more CQEs follow (false: the
 * operation ended and the owner re-arms it if it wants more). */
static inline bool
zr__op_more(uint32_t flags)
{
	return (flags & ZR__OP_F_MORE) != 0;
}

/* Cancels every operation on fd; their callbacks still run. */
int zr__op_cancel_fd(struct zr__loop *l, int fd);

#endif /* ZR_IO_LOOP_H */
