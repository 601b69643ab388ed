/*
 * The context: one io thread running one loop. App threads reach it through
 * a locked command list (bind, connect, subscribe, close: rare) and a
 * lock-free stack of sockets whose queues changed (every send), each followed
 * by zr__loop_wake, which costs nothing while the loop is awake.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
		if (zr__sock_io_dirty(s) >= 2 && zr__sock_wake_coalesce(s) > window)
			window = zr__sock_wake_coalesce(s);
	}
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

static void *
ctx_main(void *arg)
{
	struct zr_ctx *ctx = arg;
	int rc = zr__loop_init(&ctx->loop, CTX_SQ_ENTRIES, 0u, ctx_wake, ctx);

	pthread_mutex_lock(&ctx->lock);
	ctx->start_rc = rc;
	ctx->started = true;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
	if (rc < 0)
		return NULL;

	while (!ctx->term || ctx->sockets != NULL) {
		zr__loop_run(&ctx->loop, ctx->term ? zr__now_ms() + CTX_TERM_POLL_MS : UINT64_MAX);
		ctx_reap_sockets(ctx);
	}
	zr__zap_ctx_fini(ctx); /* its pipe's timer lives on the loop */
	zr__loop_fini(&ctx->loop);
	return NULL;
}

/* see zring.h */
int
zr_ctx_new(zr_ctx **out)
{
	struct zr_ctx *ctx = calloc(1, sizeof *ctx);
	int rc;

	if (ctx == NULL)
		return -ENOMEM;
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
	zr__loop_wake(&ctx->loop);
	pthread_mutex_unlock(&ctx->lock);
}

void
zr__ctx_dirty_push(struct zr_ctx *ctx, struct zr_socket *s)
{
	struct zr_socket *head = atomic_load(&ctx->dirty);

	do {
		zr__sock_dirty_link(s, head);
	} while (!atomic_compare_exchange_weak(&ctx->dirty, &head, s));
	zr__loop_wake(&ctx->loop);
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
