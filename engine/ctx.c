/*
 * The context: one io thread running one loop. App threads reach it through
 * a locked command list (bind, connect, subscribe, close: rare) and a
 * lock-free stack of sockets whose queues changed (every send), each followed
 * by zr__loop_wake, which costs nothing while the loop is awake.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "sock.h"
#include "zap.h"

#define CTX_SQ_ENTRIES 1024
/* Terminating, the io thread re-checks the sockets left this often: an app
 * call returning -ETERM lets go of its socket without waking it (socket.c,
 * sock_call_leave: the context may be freed right after). */
#define CTX_TERM_POLL_MS 2

static void
ctx_run_commands(struct zr_ctx *ctx)
{
	struct zr__cmd *cmd, *next;

	pthread_mutex_lock(&ctx->lock);
	cmd = ctx->cmd_head;
	ctx->cmd_head = ctx->cmd_tail = NULL;
	pthread_mutex_unlock(&ctx->lock);

	for (; cmd != NULL; cmd = next) {
		next = cmd->next;
		if (cmd->type == ZR__CMD_TERM) {
			ctx->term = true;
			for (struct zr_socket *s = ctx->sockets; s != NULL;
			     s = zr__sock_list_next(s))
				zr__sock_io_term(s);
			free(cmd);
			continue;
		}
		zr__sock_list_add(&ctx->sockets, cmd->sock);
		/* Counted once listed, so a recount (ctx_reap_sockets) cannot
		 * miss a socket whose option was set before its first command. */
		zr__ctx_busy_poll(ctx, zr__sock_busy_poll(cmd->sock));
		zr__sock_io_command(cmd->sock, cmd);
		free(cmd);
	}
}

/*
 * Runs on the io thread after any wake. Commands first: the lock they take
 * makes every dirty push an app thread did before its command visible to the
 * exchange below, so a socket is never freed while it sits on the stack.
 * A socket that had queued two messages or more since the last look is
 * streaming: the loop takes the next wakes in one look per window
 * (ZR_WAKE_COALESCE, zring.h) rather than one eventfd write per wake.
 */
static void
ctx_wake(void *arg)
{
	struct zr_ctx *ctx = arg;
	struct zr_socket *s, *next;
	int window = 0;

	ctx_run_commands(ctx);
	s = atomic_exchange(&ctx->dirty, NULL);
	for (; s != NULL; s = next) {
		next = zr__sock_dirty_pop(s);
		int us = zr__sock_wake_coalesce(s);

		if (zr__sock_io_dirty(s) >= 2 && us > 0) {
			if (us > window)
				window = us;
			/* The loop runs at every turn of the window (it wakes
			 * us whether or not anyone did), and a caller-io
			 * context's loop may have no one running it. */
			if (ctx->membarrier && !ctx->caller_io)
				zr__sock_watch(&ctx->watched, s);
		}
	}
	/* The window's last look (the loop ended it) keeps the streams that
	 * still send. */
	int more = zr__sock_watch_turn(&ctx->watched, !zr__loop_moderated(&ctx->loop));

	if (more > window)
		window = more;
	if (window > 0)
		zr__loop_moderate(&ctx->loop, (unsigned)window);
}

static void
ctx_reap_sockets(struct zr_ctx *ctx)
{
	struct zr_socket *s = ctx->sockets, *next;
	bool recount = false;

	for (; s != NULL; s = next) {
		next = zr__sock_list_next(s);
		if (!zr__sock_io_done(s))
			continue;
		recount |= zr__sock_busy_poll(s) > 0;
		zr__sock_unwatch(&ctx->watched, s);
		zr__sock_list_remove(&ctx->sockets, s);
		zr__sock_io_free(s);
	}
	/* A busy-polling socket left: the loop polls for the largest of the
	 * rest (rare: a walk of the list). */
	if (recount) {
		int us = 0;

		for (s = ctx->sockets; s != NULL; s = zr__sock_list_next(s))
			if (zr__sock_busy_poll(s) > us)
				us = zr__sock_busy_poll(s);
		zr__loop_busy_poll(&ctx->loop, (unsigned)us);
	}
}

/* ---- ZR_CTX_CALLER_IO: the loop's baton --------------------------------- */

/*
 * In a caller-io context the loop is run by whoever holds the baton: the io
 * thread, or an app thread inside a blocking call (zr__ctx_run_until) or a
 * send (zr__ctx_dirty_push), which then does the io thread's work itself
 * and wakes nobody. The baton word is a futex: CTX_LOOP_FREE, _IO or _APP.
 * Taking it is an acquire CAS and giving it back a release store, so each
 * holder sees everything the last one did to the loop and the sockets'
 * io-side state.
 *
 * The io thread takes the baton when it is free and some work has no one
 * else to do it: a wake nobody runs (a command, a send that found the baton
 * held), an app thread waiting on an eventfd, termination; or when the
 * baton has stayed free for one whole park (CTX_IO_PARK_NS: no app call
 * came, so traffic, timers and handshakes go on without the app). It gives
 * the baton up after any turn of its loop in which an app thread asked
 * (baton_want). An app thread asks only the io thread: one that finds
 * another app thread running the loop waits on its eventfd as usual, and
 * that thread's loop signals it.
 */
enum {
	CTX_LOOP_FREE,
	CTX_LOOP_IO,
	CTX_LOOP_APP
};

/* The parked io thread looks again this often while the baton is free (a
 * whole such park without an app call: it takes the io), and less often
 * while an app thread runs the io (which hands it over with a nudge when
 * work waits: ctx_app_give). */
#define CTX_IO_PARK_NS 1000000u
#define CTX_IO_PARK_HELD_NS 10000000u

static long
ctx_futex_wait(atomic_uint *word, unsigned val, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
	                      .tv_nsec = (long)(ns % 1000000000u)};

	return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void
ctx_futex_wake(atomic_uint *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Whether the io thread is needed at once: work waits with the baton free. */
static bool
ctx_io_needed(struct zr_ctx *ctx)
{
	return atomic_load(&ctx->loop.woken) || atomic_load(&ctx->eventfd_waiters) > 0 ||
	       atomic_load(&ctx->terminating);
}

/* Wakes the parked io thread, if it is parked. Pairs with ctx_io_take: it
 * announces parked, then reads the work; we made the work, then read parked. */
static void
ctx_io_nudge(struct zr_ctx *ctx)
{
	if (atomic_load(&ctx->io_parked)) {
		atomic_fetch_add(&ctx->nudge, 1);
		ctx_futex_wake(&ctx->nudge);
	}
}

/* io thread: returns holding the baton. */
static void
ctx_io_take(struct zr_ctx *ctx)
{
	unsigned gen = atomic_load(&ctx->baton_gen) - 1; /* no whole park seen yet */

	for (;;) {
		unsigned seen = atomic_load(&ctx->nudge), free = CTX_LOOP_FREE;

		if (atomic_load(&ctx->baton) == CTX_LOOP_IO)
			return;
		if (atomic_load(&ctx->baton_want) == 0 &&
		    (ctx_io_needed(ctx) || atomic_load(&ctx->baton_gen) == gen) &&
		    atomic_compare_exchange_strong(&ctx->baton, &free, CTX_LOOP_IO))
			return;
		gen = atomic_load(&ctx->baton_gen);
		atomic_store(&ctx->io_parked, 1);
		unsigned held = atomic_load(&ctx->baton);

		if (!(ctx_io_needed(ctx) && held == CTX_LOOP_FREE &&
		      atomic_load(&ctx->baton_want) == 0))
			ctx_futex_wait(&ctx->nudge, seen,
			               held == CTX_LOOP_APP ? CTX_IO_PARK_HELD_NS : CTX_IO_PARK_NS);
		atomic_store(&ctx->io_parked, 0);
	}
}

/* io thread: an app thread asked for the baton. */
static void
ctx_baton_give(struct zr_ctx *ctx)
{
	atomic_store(&ctx->baton, CTX_LOOP_FREE);
	ctx_futex_wake(&ctx->baton);
}

/* App thread: takes the baton if it is free. */
static bool
ctx_app_try(struct zr_ctx *ctx)
{
	unsigned free = CTX_LOOP_FREE;

	return atomic_compare_exchange_strong(&ctx->baton, &free, CTX_LOOP_APP);
}

/* App thread: takes the baton, from the io thread if need be (it gives it up
 * after its current turn). 0, -EBUSY (another app thread runs the loop),
 * -EAGAIN (deadline, absolute ms) or -ETERM. */
static int
ctx_app_take(struct zr_ctx *ctx, uint64_t deadline)
{
	int rc = -EBUSY;

	if (ctx_app_try(ctx))
		return 0;
	atomic_fetch_add(&ctx->baton_want, 1);
	zr__loop_wake(&ctx->loop); /* ends its wait in the ring */
	for (;;) {
		unsigned held = CTX_LOOP_FREE;
		uint64_t now;

		if (atomic_compare_exchange_strong(&ctx->baton, &held, CTX_LOOP_APP)) {
			rc = 0;
			break;
		}
		if (held == CTX_LOOP_APP)
			break; /* -EBUSY */
		if (atomic_load(&ctx->terminating)) {
			rc = -ETERM;
			break;
		}
		now = zr__now_ms();
		if (now >= deadline) {
			rc = -EAGAIN;
			break;
		}
		ctx_futex_wait(&ctx->baton, held,
		               deadline - now < 1000u ? (deadline - now) * 1000000u : 1000000000u);
	}
	atomic_fetch_sub(&ctx->baton_want, 1);
	return rc;
}

/* App thread: gives the baton back; the io thread takes it at once when
 * work waits for it, else after a whole park with no app call. */
static void
ctx_app_give(struct zr_ctx *ctx)
{
	atomic_fetch_add(&ctx->baton_gen, 1);
	atomic_store(&ctx->baton, CTX_LOOP_FREE);
	if (atomic_load(&ctx->baton_want) > 0)
		ctx_futex_wake(&ctx->baton);
	if (ctx_io_needed(ctx))
		ctx_io_nudge(ctx);
}

int
zr__ctx_run_until(struct zr_ctx *ctx, bool (*ready)(void *), void *arg, uint64_t deadline)
{
	int rc;

	if (atomic_load(&ctx->terminating))
		return -ETERM;
	rc = ctx_app_take(ctx, deadline);
	if (rc < 0)
		return rc;
	for (;;) {
		if (ready(arg)) {
			rc = 0;
			break;
		}
		if (atomic_load(&ctx->terminating)) {
			rc = -ETERM;
			break;
		}
		if (deadline != UINT64_MAX && zr__now_ms() >= deadline) {
			rc = -EAGAIN;
			break;
		}
		rc = zr__loop_run(&ctx->loop, deadline);
		if (rc < 0)
			break;
		ctx_reap_sockets(ctx);
	}
	ctx_app_give(ctx);
	return rc;
}

void
zr__ctx_wait_begin(struct zr_ctx *ctx)
{
	if (!ctx->caller_io)
		return;
	atomic_fetch_add(&ctx->eventfd_waiters, 1);
	if (atomic_load(&ctx->baton) == CTX_LOOP_FREE)
		ctx_io_nudge(ctx);
}

void
zr__ctx_wait_end(struct zr_ctx *ctx)
{
	if (ctx->caller_io)
		atomic_fetch_sub(&ctx->eventfd_waiters, 1);
}

/* Wakes whoever runs the loop, or the parked io thread when no one does. */
static void
ctx_wake_loop(struct zr_ctx *ctx)
{
	zr__loop_wake(&ctx->loop);
	if (ctx->caller_io)
		ctx_io_nudge(ctx);
}

static void *
ctx_main(void *arg)
{
	struct zr_ctx *ctx = arg;
	int rc = zr__loop_init(&ctx->loop, CTX_SQ_ENTRIES, ctx->caller_io ? ZR__LOOP_SHARED : 0u,
	                       ctx_wake, ctx);

	pthread_mutex_lock(&ctx->lock);
	ctx->start_rc = rc;
	ctx->started = true;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
	if (rc < 0)
		return NULL;

	for (;;) {
		if (ctx->caller_io)
			ctx_io_take(ctx);
		if (ctx->term && ctx->sockets == NULL)
			break;
		zr__loop_run(&ctx->loop, ctx->term ? zr__now_ms() + CTX_TERM_POLL_MS : UINT64_MAX);
		ctx_reap_sockets(ctx);
		if (ctx->caller_io && atomic_load(&ctx->baton_want) > 0)
			ctx_baton_give(ctx);
	}
	zr__zap_ctx_fini(ctx); /* its pipe's timer lives on the loop */
	zr__loop_fini(&ctx->loop);
	return NULL;
}

/* see zring.h */
int
zr_ctx_new(zr_ctx **out)
{
	return zr_ctx_new_flags(out, 0);
}

/* see zring.h */
int
zr_ctx_new_flags(zr_ctx **out, unsigned flags)
{
	struct zr_ctx *ctx;
	int rc;

	if (flags & ~(unsigned)ZR_CTX_CALLER_IO)
		return -EINVAL;
	ctx = calloc(1, sizeof *ctx);
	if (ctx == NULL)
		return -ENOMEM;
	ctx->caller_io = (flags & ZR_CTX_CALLER_IO) != 0;
	ctx->rx_read_budget = ZR__CTX_RX_READ;
	atomic_init(&ctx->baton, CTX_LOOP_IO); /* the io thread's, from its start */
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
	atomic_init(&ctx->dirty, NULL);
	atomic_init(&ctx->terminating, 0);
	/* Sockets count their sends and receives without locked instructions
	 * when the io thread can make those counts visible with membarrier
	 * before it frees a socket (socket.c, sock_call_enter). Registering is
	 * per process and may be repeated; without it, the locked counter. */
	ctx->membarrier =
		syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	{
		cpu_set_t cpus;

		ctx->busy_app = sched_getaffinity(0, sizeof cpus, &cpus) == 0 &&
		                CPU_COUNT(&cpus) >= ZR__BUSY_APP_CPUS;
	}
	rc = pthread_create(&ctx->thread, NULL, ctx_main, ctx);
	if (rc != 0) {
		pthread_mutex_destroy(&ctx->lock);
		pthread_cond_destroy(&ctx->cond);
		free(ctx);
		return -rc;
	}
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->started)
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	rc = ctx->start_rc;
	pthread_mutex_unlock(&ctx->lock);
	if (rc < 0) {
		pthread_join(ctx->thread, NULL);
		pthread_mutex_destroy(&ctx->lock);
		pthread_cond_destroy(&ctx->cond);
		free(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

/* see zring.h */
void
zr_ctx_free(zr_ctx *ctx)
{
	struct zr__cmd *cmd;

	if (ctx == NULL)
		return;
	atomic_store(&ctx->terminating, 1);
	cmd = calloc(1, sizeof *cmd);
	if (cmd != NULL) {
		cmd->type = ZR__CMD_TERM;
		zr__ctx_command(ctx, cmd);
	}
	pthread_join(ctx->thread, NULL);
	zr__inproc_ctx_fini(ctx); /* names of sockets never closed */
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
	free(ctx);
}

void
zr__ctx_command(struct zr_ctx *ctx, struct zr__cmd *cmd)
{
	cmd->next = NULL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->cmd_tail != NULL)
		ctx->cmd_tail->next = cmd;
	else
		ctx->cmd_head = cmd;
	ctx->cmd_tail = cmd;
	/* Woken under the lock: the io thread collects commands under it, so it
	 * cannot have taken a ZR__CMD_TERM queued here and gone on to close the
	 * wake eventfd (zr__loop_fini) and free the loop before this wake reads
	 * them. After unlocking, zr_ctx_free's own wake raced exactly that
	 * (ThreadSanitizer: zr__loop_wake against zr__loop_fini). */
	ctx_wake_loop(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

void
zr__ctx_dirty_push(struct zr_ctx *ctx, struct zr_socket *s)
{
	struct zr_socket *head = atomic_load(&ctx->dirty);

	do {
		zr__sock_dirty_link(s, head);
	} while (!atomic_compare_exchange_weak(&ctx->dirty, &head, s));
	/* Caller-io, with the loop free: the io thread's work, here and now
	 * (the send is submitted before we return), and no thread woken. */
	if (ctx->caller_io && ctx_app_try(ctx)) {
		zr__loop_wake(&ctx->loop); /* marks the wake zr__loop_poll runs */
		zr__loop_poll(&ctx->loop);
		ctx_app_give(ctx);
		return;
	}
	ctx_wake_loop(ctx);
}

void
zr__ctx_busy_poll(struct zr_ctx *ctx, int us)
{
	unsigned cur = atomic_load_explicit(&ctx->loop.busy_poll_us, memory_order_relaxed);

	while (us > 0 && (unsigned)us > cur &&
	       !atomic_compare_exchange_weak_explicit(&ctx->loop.busy_poll_us, &cur, (unsigned)us,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}
