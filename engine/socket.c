/*
 * Sockets: the app-facing calls (send, receive, options, bind, connect,
 * close), the queues between the app thread and the io thread, the
 * listeners and close. What a socket type does with a message (where it
 * goes, what comes back, what the app may do next) is its pattern's:
 * s->ops (pattern.h, pat_*.c), never a test of the type here.
 *
 * The app thread and the io thread share only the two SPSC queues, the
 * eventfds and a few atomic flags; see engine.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium.h>

#include "common/base.h"
#include "engine.h"

#define SOCK_BYTES_DEFAULT ((int64_t)8 << 20)
/* What one subscriber may hold (zring.h, ZR_SUBS_MAX / ZR_SUBS_MAXBYTES):
 * 16 MiB bounds the trie memory one hostile connection can pin (subs.h
 * charges each entry its bytes plus an upper bound of its overhead), and
 * leaves a real subscriber ~60,000 topics of 16 octets; the count limit
 * bounds duplicates, which cost no memory but are counted. */
#define SOCK_SUBS_MAX_DEFAULT 100000
#define SOCK_SUBS_MAXBYTES_DEFAULT ((int64_t)16 << 20)

/*
 * Accept back-off: when the process (or the system) is out of descriptors or
 * memory, the kernel ends the multishot accept at once each time it is
 * re-armed while a connection waits in the backlog, so re-arming at once
 * spins the io thread (measured: 2.94 s of CPU in 3 s at RLIMIT_NOFILE 64).
 * The listener instead waits SOCK_ACCEPT_BACKOFF_MIN_MS, doubling up to
 * SOCK_ACCEPT_BACKOFF_MAX_MS while the failures go on, back to the minimum
 * after an accept succeeds; the connections wait in the kernel's backlog.
 */
#define SOCK_ACCEPT_BACKOFF_MIN_MS 100u
#define SOCK_ACCEPT_BACKOFF_MAX_MS 1000u

struct zr__listener {
	struct zr__op op;
	struct zr__timer retry; /* armed while accepting waits out a back-off */
	unsigned backoff_ms;    /* the last back-off; 0 after an accept succeeded */
	struct zr_socket *sock;
	int fd;
	int transport;
	bool tls; /* tls://: its connections start a TLS session */
	bool closing;
	char endpoint[ZR__ENDPOINT_TEXT_MAX];
};

/* ---- app side: helpers -------------------------------------------------- */

static void
sock_signal(int fd)
{
	uint64_t one = 1;
	ssize_t n = write(fd, &one, sizeof one);

	(void)n; /* a saturated counter still reads as readable */
}

static void
sock_drain_fd(int fd)
{
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof v);

	(void)n;
}

/* Spare messages per direction: at least a default handoff's worth, so a
 * sender that outruns the io thread still finds them (each holds at most
 * 256 octets of buffer: ~768 KiB per direction at worst). A full default
 * HWM (1000 in the ring) and the batch on the wire come back at once: at
 * 1024 the rest was freed on the io thread and made again by the app
 * (a 64 B zmq.h sender: calloc, realloc and the io thread's free, ~6% of
 * its samples, perf), at 2048 none is. */
#define SOCK_SPARE_MAX 2048
/*
 * rx_bufs: up to SOCK_RX_BUFS buffers of SOCK_RX_BUF_MIN to SOCK_RX_BUF_MAX
 * octets that the app read messages out of go back to the io thread, for
 * the next large frame (zr__sock_msg_new) or CURVE box (which becomes its
 * message's buffer: conn.c, conn_adopt_box). Freed by the app instead, such
 * a buffer went back to the io thread's malloc arena, which gave the memory
 * back to the kernel and faulted it in again: a CURVE 64 KiB receiver took
 * 18,000-35,000 page faults per 20,000 messages, 2,000-3,300 with rx_bufs,
 * and its CPU fell by a fifth to a quarter. The cost: a socket that has
 * received such messages keeps up to 1 MiB for the next ones.
 */
#define SOCK_RX_BUFS 4
#define SOCK_RX_BUF_MIN ((size_t)32 * 1024)
#define SOCK_RX_BUF_MAX ((size_t)256 * 1024)

static int
sock_queues(struct zr_socket *s)
{
	int rc;

	if (s->queues_ready)
		return 0;

	size_t tx_cap = s->opt.sndhwm > 0 ? (size_t)s->opt.sndhwm : 1024;
	/* The app -> io handoff. Types that wait for room (PUSH, DEALER, ...)
	 * get SNDHWM slots, so what waits there stays near libzmq's bound.
	 * Types that never wait (PUB, XPUB, ROUTER: tx_burst) have each peer's
	 * own queue as their limit, and the io thread empties the handoff at
	 * once, so it only has to absorb a burst between two turns of the loop. */
	if (s->ops->tx_burst && tx_cap < 1024)
		tx_cap = 1024;
	/* A direction the type never uses gets the smallest rings: an idle PUSH
	 * or PULL is ~16 KiB smaller (each ring of 1024 is 8 KiB). PUSH and PUB
	 * hand the app nothing (a PUB's subscriptions stay on the io thread);
	 * PULL and SUB send nothing (subscriptions travel as commands). */
	size_t rx_cap = s->opt.rcvhwm > 0 ? (size_t)s->opt.rcvhwm : 1024, rx_spare = SOCK_SPARE_MAX,
	       tx_spare = SOCK_SPARE_MAX;

	if (!s->ops->can_recv)
		rx_cap = rx_spare = 1;
	if (!s->ops->can_send)
		tx_cap = tx_spare = 1;
	rc = zr__spsc_init(&s->tx, tx_cap);
	if (rc < 0)
		return rc;
	/* The receive ring at its full size from the start: a receiver of
	 * 1,000 SUB sockets spent ~10% more CPU growing and following rings
	 * (bench_zr thr-recv fanout1000); an idle one's untouched slots stay
	 * out of RSS. */
	rc = zr__spsc_init_first(&s->rx, rx_cap, rx_cap);
	if (rc == 0)
		rc = zr__spsc_init(&s->rx_spare, rx_spare);
	if (rc == 0)
		rc = zr__spsc_init(&s->rx_bufs, s->ops->can_recv ? SOCK_RX_BUFS : 1);
	if (rc == 0)
		rc = zr__spsc_init(&s->tx_spare, tx_spare);
	if (rc < 0) {
		zr__spsc_fini(&s->tx);
		zr__spsc_fini(&s->rx);
		zr__spsc_fini(&s->rx_spare);
		zr__spsc_fini(&s->rx_bufs);
		return rc;
	}
	/* A connection paused on a full rx is resumed once the app has taken
	 * half of it, as libzmq's pipes do (their low water mark), not at every
	 * free slot: each resume costs the io thread a wake, and a resume for
	 * one slot decodes one message and pauses again. */
	{
		size_t hwm = zr__spsc_cap(&s->rx);

		if (s->opt.rcvhwm > 0 && (size_t)s->opt.rcvhwm < hwm)
			hwm = (size_t)s->opt.rcvhwm;
		s->rx_resume_at = s->rx_refill_each ? hwm - 1 : hwm / 2;
	}
	/* libzmq conflates on these types only (others take the option and
	 * ignore it). */
	if (s->opt.conflate) {
		s->conflate_rx = s->type == ZR_PULL || s->type == ZR_SUB || s->type == ZR_DEALER;
		s->conflate_tx = s->type == ZR_PUSH || s->type == ZR_PUB || s->type == ZR_DEALER;
	}
	atomic_store_explicit(&s->queues_ready, true, memory_order_release); /* engine.h */
	return 0;
}

static struct zr__cmd *
sock_cmd(struct zr_socket *s, int type, size_t extra)
{
	struct zr__cmd *cmd = calloc(1, sizeof *cmd + extra);

	if (cmd != NULL) {
		cmd->type = type;
		cmd->sock = s;
		cmd->fd = -1;
		cmd->len = extra;
	}
	return cmd;
}

/* Waits until fd is readable or the deadline passes; a readable cancel_fd
 * (>= 0; left readable for its owner) ends the wait with -ECANCELED. */
static int
sock_wait_cancellable(struct zr_socket *s, int fd, uint64_t deadline, int cancel_fd)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
	int timeout = -1, rc;

	if (atomic_load(&s->ctx->terminating))
		return -ETERM;
	if (deadline != UINT64_MAX) {
		uint64_t now = zr__now_ms();

		if (now >= deadline)
			return -EAGAIN;
		timeout = (int)(deadline - now);
	}
	zr__ctx_wait_begin(s->ctx);
	rc = poll(p, cancel_fd >= 0 ? 2 : 1, timeout);
	zr__ctx_wait_end(s->ctx);
	if (rc == 0)
		return -EAGAIN;
	if (cancel_fd >= 0 && (p[1].revents & POLLIN))
		return -ECANCELED;
	sock_drain_fd(fd);
	return atomic_load(&s->ctx->terminating) ? -ETERM : 0;
}

/* Waits until fd is readable or the deadline passes. */
static int
sock_wait(struct zr_socket *s, int fd, uint64_t deadline)
{
	return sock_wait_cancellable(s, fd, deadline, -1);
}

/*
 * ZR_BUSY_POLL: before a wait that may sleep arms its wake, the app thread
 * spins on the queue for up to the option's time (never past the call's
 * deadline, ms): the io thread then hands over through the ring alone, with
 * no eventfd write and no sleeping thread to wake. The end of the spin, in
 * ns, or 0 when the socket does not spin.
 */
static uint64_t
sock_spin_end(const struct zr_socket *s, uint64_t deadline)
{
	uint64_t end;

	if (s->opt.busy_poll_us <= 0 || deadline == 0 || !s->ctx->busy_app || s->ctx->caller_io)
		return 0;
	end = zr__now_ns() + (uint64_t)s->opt.busy_poll_us * 1000u;
	if (deadline != UINT64_MAX && deadline * 1000000u < end)
		end = deadline * 1000000u;
	return end;
}

/* Whether a spin ending at end (sock_spin_end) goes on: not past its end,
 * nor into a terminating context (the wait then returns -ETERM). */
static bool
sock_spin_on(struct zr_socket *s, uint64_t end, unsigned *steps)
{
	if (zr__now_ns() >= end || atomic_load_explicit(&s->ctx->terminating, memory_order_relaxed))
		return false;
	zr__spin_relax(steps);
	return true;
}

static uint64_t
sock_deadline(int flags, int timeout_ms)
{
	if (flags & ZR_DONTWAIT || timeout_ms == 0)
		return 0;
	if (timeout_ms < 0)
		return UINT64_MAX;
	return zr__now_ms() + (uint64_t)timeout_ms;
}

/* ---- app side: the API -------------------------------------------------- */

/* see zring.h */
int
zr_socket_open(zr_ctx *ctx, int type, zr_socket **out)
{
	const struct zr__sock_ops *ops = zr__sock_ops_of(type);
	struct zr_socket *s;
	struct zr__cmd *cmd;

	if (ops == NULL)
		return -EINVAL;
	/* Aligned for its cache-line groups (see struct zr_socket). */
	s = aligned_alloc(_Alignof(struct zr_socket), sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	memset(s, 0, sizeof *s);
	s->ctx = ctx;
	s->ops = ops;
	s->tx_plain = ops->can_send && ops->send_prepare == NULL && ops->send_done == NULL;
	s->rx_plain = ops->can_recv && ops->recv_check == NULL && ops->recv_finish == NULL;
	s->type = (enum zr_socktype)type;
	s->opt = (struct zr__options){
		.sndhwm = 1000,
		.rcvhwm = 1000,
		.linger_ms = -1,
		.sndtimeo_ms = -1,
		.rcvtimeo_ms = -1,
		.reconnect_ivl_ms = 100,
		.handshake_ivl_ms = 30000,
		.maxmsgsize = (int64_t)ZR_ZMTP_DEFAULT_MAX_MSG_SIZE,
		.sndbytes = SOCK_BYTES_DEFAULT,
		.rcvbytes = SOCK_BYTES_DEFAULT,
		.conns_max = ZR_CONNS_MAX_DEFAULT,
		.subs_max = SOCK_SUBS_MAX_DEFAULT,
		.subs_maxbytes = SOCK_SUBS_MAXBYTES_DEFAULT,
		.maxframes = (int)ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES,
		.tls_verify = 1,
		.tls_version_min = ZR_TLS_V13,
		.wake_coalesce_us = ZR__WAKE_COALESCE_DEFAULT,
	};
	atomic_init(&s->wake_coalesce_us, ZR__WAKE_COALESCE_DEFAULT);
	s->efd_rx = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->efd_tx = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd_rx < 0 || s->efd_tx < 0) {
		int rc = -errno;

		if (s->efd_rx >= 0)
			close(s->efd_rx);
		if (s->efd_tx >= 0)
			close(s->efd_tx);
		free(s);
		return rc;
	}
	atomic_init(&s->rx_armed, 0);
	atomic_init(&s->tx_armed, 0);
	atomic_init(&s->tx_fd_armed, 0);
	atomic_init(&s->rx_last, NULL);
	atomic_init(&s->dirty, 0);
	atomic_init(&s->rx_paused, 0);
	atomic_init(&s->closed, 0);
	atomic_init(&s->npipes, 0);
	atomic_init(&s->rx_taken, 0);
	atomic_init(&s->tx_taken, 0);
	atomic_init(&s->rx_peak, 0);
	atomic_init(&s->calls, 0);
	atomic_init(&s->calls_tx, 0);
	atomic_init(&s->calls_rx, 0);
	zr__monitor_init(&s->mon);
	{
		int rc = ops->init != NULL ? ops->init(s) : 0;

		cmd = rc == 0 ? sock_cmd(s, ZR__CMD_OPEN, 0) : NULL;
		if (cmd == NULL) {
			if (rc == 0 && ops->fini != NULL)
				ops->fini(s);
			close(s->efd_rx);
			close(s->efd_tx);
			free(s);
			return rc < 0 ? rc : -ENOMEM;
		}
	}
	zr__ctx_command(ctx, cmd);
	*out = s;
	return 0;
}

/* see zring.h */
void
zr_socket_close(zr_socket *s)
{
	struct zr__cmd *cmd;

	if (s == NULL)
		return;
	atomic_store(&s->closed, 1);
	zr__inproc_unregister(s, NULL); /* its names are free again at once */
	cmd = sock_cmd(s, ZR__CMD_CLOSE, 0);
	if (cmd != NULL)
		zr__ctx_command(s->ctx, cmd);
}

/* Remembers an endpoint (best effort: without memory, unbind/disconnect of
 * it will say -ENOENT). */
static void
sock_eplist_add(struct zr__eplist **list, const char *given, const char *resolved)
{
	struct zr__eplist *e = calloc(1, sizeof *e);

	if (e == NULL)
		return;
	snprintf(e->given, sizeof e->given, "%s", given);
	snprintf(e->resolved, sizeof e->resolved, "%s", resolved);
	e->next = *list;
	*list = e;
}

/* Takes the entry matching text (as given or as resolved) off the list and
 * copies its resolved name; false if there is none. */
static bool
sock_eplist_take(struct zr__eplist **list, const char *text, char *resolved, size_t cap)
{
	for (struct zr__eplist **pp = list; *pp != NULL; pp = &(*pp)->next) {
		struct zr__eplist *e = *pp;

		if (strcmp(e->given, text) == 0 || strcmp(e->resolved, text) == 0) {
			snprintf(resolved, cap, "%s", e->resolved);
			*pp = e->next;
			free(e);
			return true;
		}
	}
	return false;
}

static void
sock_eplist_free(struct zr__eplist **list)
{
	while (*list != NULL) {
		struct zr__eplist *e = *list;

		*list = e->next;
		free(e);
	}
}

static int
sock_endpoint_cmd(zr_socket *s, struct zr__eplist **list, int type, const char *endpoint)
{
	char resolved[ZR__ENDPOINT_TEXT_MAX];
	struct zr__cmd *cmd;
	size_t n;

	if (endpoint == NULL || !sock_eplist_take(list, endpoint, resolved, sizeof resolved))
		return -ENOENT;
	if (type == ZR__CMD_UNBIND && strncmp(resolved, "inproc://", 9) == 0)
		zr__inproc_unregister(s, resolved + 9);
	n = strlen(resolved) + 1;
	cmd = sock_cmd(s, type, n);
	if (cmd == NULL)
		return -ENOMEM;
	memcpy(cmd->data, resolved, n);
	zr__ctx_command(s->ctx, cmd);
	return 0;
}

/* see zring.h */
int
zr_unbind(zr_socket *s, const char *endpoint)
{
	return sock_endpoint_cmd(s, &s->bound, ZR__CMD_UNBIND, endpoint);
}

/* see zring.h */
int
zr_disconnect(zr_socket *s, const char *endpoint)
{
	return sock_endpoint_cmd(s, &s->connected, ZR__CMD_DISCONNECT, endpoint);
}

/* Whether the security options make a working side: a CURVE client needs
 * its key pair and the server's key, a CURVE server its secret key. */
static int
sock_mechanism_check(const struct zr__options *o)
{
	if (o->mechanism != ZR_MECH_CURVE)
		return 0;
	if (!o->curve_secret_set)
		return -EINVAL;
	if (!o->as_server && (!o->curve_public_set || !o->curve_server_set))
		return -EINVAL;
	return 0;
}

/* inproc://name: the name is taken now (so a second bind fails at once);
 * the io thread pairs the connecters (inproc.c). No security mechanism
 * applies, as in libzmq. */
static int
sock_bind_inproc(zr_socket *s, const char *endpoint, const struct zr__endpoint *ep)
{
	struct zr__cmd *cmd;
	int rc = sock_queues(s);

	if (rc < 0)
		return rc;
	cmd = sock_cmd(s, ZR__CMD_BIND, 0);
	if (cmd == NULL)
		return -ENOMEM;
	zr__endpoint_format(ep, s->last_endpoint, sizeof s->last_endpoint);
	rc = zr__inproc_register(s, s->last_endpoint + 9);
	if (rc < 0) {
		free(cmd);
		return rc;
	}
	sock_eplist_add(&s->bound, endpoint, s->last_endpoint);
	cmd->fd = -1;
	cmd->ep = *ep;
	zr__ctx_command(s->ctx, cmd);
	return 0;
}

/* see zring.h */
int
zr_bind(zr_socket *s, const char *endpoint)
{
	struct zr__endpoint ep;
	struct zr__cmd *cmd;
	int rc = zr__endpoint_parse(endpoint, true, s->opt.ipv6, &ep), fd;

	if (rc < 0)
		return rc;
	if (ep.transport == ZR__INPROC)
		return sock_bind_inproc(s, endpoint, &ep);
	rc = sock_mechanism_check(&s->opt);
	if (rc < 0)
		return rc;
	if (ep.tls && (rc = zr__sock_tls_ctx(s, true)) < 0)
		return rc;
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	cmd = sock_cmd(s, ZR__CMD_BIND, 0);
	if (cmd == NULL)
		return -ENOMEM;
	fd = zr__endpoint_listen(&ep, 128);
	if (fd < 0) {
		free(cmd);
		return fd;
	}
	atomic_fetch_add(&s->listen_fds, 1);
	zr__socket_tune(fd, ep.transport, s->opt.sndbuf, s->opt.rcvbuf);
	zr__endpoint_bound(fd, &ep, s->last_endpoint, sizeof s->last_endpoint);
	sock_eplist_add(&s->bound, endpoint, s->last_endpoint);
	cmd->fd = fd;
	cmd->ep = ep;
	zr__ctx_command(s->ctx, cmd);
	return 0;
}

/* see zring.h */
int
zr_connect(zr_socket *s, const char *endpoint)
{
	struct zr__endpoint ep;
	struct zr__cmd *cmd;
	int rc = zr__endpoint_parse(endpoint, false, s->opt.ipv6, &ep);

	if (rc < 0)
		return rc;
	rc = ep.transport == ZR__INPROC ? 0 : sock_mechanism_check(&s->opt);
	if (rc < 0)
		return rc;
	if (ep.tls && (rc = zr__sock_tls_ctx(s, false)) < 0)
		return rc;
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	cmd = sock_cmd(s, ZR__CMD_CONNECT, 0);
	if (cmd == NULL)
		return -ENOMEM;
	cmd->ep = ep;
	{
		char resolved[ZR__ENDPOINT_TEXT_MAX];

		zr__endpoint_format(&ep, resolved, sizeof resolved);
		sock_eplist_add(&s->connected, endpoint, resolved);
	}
	/* libzmq's connecter has its pipe from zmq_connect on: a send right
	 * after this one may queue, even before the io thread sees the command. */
	atomic_fetch_add(&s->npipes, 1);
	zr__ctx_command(s->ctx, cmd);
	return 0;
}

/*
 * A byte budget between two threads (SNDBYTES on tx, RCVBYTES on rx): the
 * producer's running total `given`, its copy `seen` of the consumer's
 * running total `taken`. Room for len more bytes within budget (<= 0: no limit),
 * and a queue holding no bytes takes any one message. Judged on the bytes
 * alone; `taken` is read only when the copy says the budget is reached.
 */
static inline bool
sock_budget_room(int64_t budget, size_t given, size_t *seen, atomic_size_t *taken, size_t len)
{
	size_t queued = given - *seen;

	if (budget <= 0 || queued == 0 || queued + len <= (uint64_t)budget)
		return true;
	*seen = atomic_load_explicit(taken, memory_order_acquire);
	queued = given - *seen;
	return queued == 0 || queued + len <= (uint64_t)budget;
}

/* Into the app -> io handoff, within its slots and the SNDBYTES budget (an
 * empty handoff takes any one message, as the other byte budgets do). */
static inline bool
sock_tx_offer(zr_socket *s, zr_msg *m)
{
	size_t len = zr__msg_cost(m); /* once pushed, m is the io thread's (it may be gone) */

	if (!sock_budget_room(s->opt.sndbytes, s->tx_given, &s->tx_taken_seen, &s->tx_taken, len))
		return false;

	if (!zr__spsc_push(&s->tx, m))
		return false;
	s->tx_given += len;
	return true;
}

/*
 * sock_send's first try, for a plain pattern's send with a peer to go to
 * (a PUSH, PUB, DEALER or PAIR stream): m is pushed and the socket marked,
 * as sock_send would. Its checks, its call and the deadline were ~60 of a
 * 1 B sender's ~260 app instructions per message (callgrind). False, m
 * still the caller's, when that does not apply or there is no room; the
 * caller then takes sock_send.
 */
static inline bool
sock_tx_straight(zr_socket *s, zr_msg *m)
{
	if (!s->tx_plain || (s->ops->waits_for_peer && atomic_load(&s->npipes) == 0) ||
	    !sock_tx_offer(s, m))
		return false;
	zr__ctx_dirty(s->ctx, s);
	return true;
}

static void
sock_send_done(zr_socket *s)
{
	if (s->ops->send_done != NULL)
		s->ops->send_done(s);
}

/* ZR_BUSY_POLL on a full handoff: offers m until it fits or the spin ends,
 * before tx_armed is set, so the io thread draining meanwhile writes no
 * eventfd (it was told to drain: the socket is marked dirty first). */
static bool
sock_spin_for_room(struct zr_socket *s, zr_msg *m, uint64_t deadline)
{
	uint64_t end = sock_spin_end(s, deadline);
	unsigned steps = 0;

	if (end != 0)
		zr__ctx_dirty(s->ctx, s);
	while (end != 0 && sock_spin_on(s, end, &steps))
		if (sock_tx_offer(s, m))
			return true;
	return false;
}

static int
sock_send(zr_socket *s, zr_msg **msg, uint64_t deadline, int cancel_fd)
{
	const struct zr__sock_ops *ops = s->ops;
	uint32_t added;
	zr_msg *m = *msg;
	int rc;

	if (m == NULL || m->nframes == 0)
		return -EINVAL;
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	if (!ops->can_send)
		return -ENOTSUP;
	added = 0;
	if (ops->send_prepare != NULL) {
		rc = ops->send_prepare(s, m, &added);
		if (rc < 0)
			return rc;
	}
	for (;;) {
		/* Types that never drop wait while there is no peer at all, as
		 * libzmq's do while they have no pipe: a bound PUSH with nobody
		 * connected blocks (and times out) instead of queueing. */
		if (ops->waits_for_peer && atomic_load(&s->npipes) == 0) {
			atomic_store(&s->tx_armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			if (atomic_load(&s->npipes) == 0) {
				rc = sock_wait_cancellable(s, s->efd_tx, deadline, cancel_fd);
				if (rc < 0) {
					zr__msg_drop_front(m, added);
					return rc;
				}
				continue;
			}
		}
		if (sock_tx_offer(s, m)) {
			*msg = NULL;
			sock_send_done(s);
			zr__ctx_dirty(s->ctx, s);
			return 0;
		}
		if (sock_spin_for_room(s, m, deadline)) {
			*msg = NULL;
			sock_send_done(s);
			zr__ctx_dirty(s->ctx, s);
			return 0;
		}
		atomic_store(&s->tx_armed, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (sock_tx_offer(s, m)) {
			atomic_store(&s->tx_armed, 0);
			*msg = NULL;
			sock_send_done(s);
			zr__ctx_dirty(s->ctx, s);
			return 0;
		}
		zr__ctx_dirty(s->ctx, s); /* make sure the io thread is draining */
		rc = sock_wait_cancellable(s, s->efd_tx, deadline, cancel_fd);
		if (rc < 0) {
			zr__msg_drop_front(m, added);
			return rc;
		}
	}
}

/* App thread: the next received message (CONFLATE: the newest one). */
static inline zr_msg *
sock_rx_pop(zr_socket *s)
{
	if (s->conflate_rx)
		return atomic_exchange_explicit(&s->rx_last, NULL, memory_order_acquire);
	return zr__spsc_pop(&s->rx);
}

static bool
sock_rx_any(zr_socket *s)
{
	if (s->conflate_rx)
		return atomic_load_explicit(&s->rx_last, memory_order_acquire) != NULL;
	return zr__spsc_peek(&s->rx) != NULL;
}

/*
 * see engine.h. The producers: rx_spare's is the app, tx_spare's the io
 * thread (inproc.c hands its own rx_spare's takings to the sending socket's
 * tx_spare). Besides a small buffer, which every spare keeps, m keeps one up to
 * SOCK_SPARE_BUF_MAX while the ring's depth times that buffer's size stays
 * under SOCK_SPARE_BYTES: a 1 KiB stream otherwise mallocs each message's
 * buffer on one thread and frees it on the other (~12% of a 1 KiB sender's
 * samples, perf), and a receiver's ring fills to a receive queue's worth
 * (RCVHWM, 1000) before the io thread takes from it again. The depth is the
 * producer's cached view, exact once it reaches the limit. A stream of one
 * size keeps SOCK_SPARE_BYTES at most; sizes that shrink as the ring fills
 * could keep a few times that (a sum of SOCK_SPARE_BYTES / depth).
 */
#define SOCK_SPARE_BUF_MAX ((size_t)4 * 1024)
#define SOCK_SPARE_BYTES ((size_t)1024 * 1024)

void
zr__sock_spare_put_slow(struct zr__spsc *ring, zr_msg *m)
{
	size_t keep = 0;

	if (m->hooked || m->cap > ZR__MSG_SPARE_SMALL) {
		size_t cap = zr__msg_keep_cap(m);

		if (cap > ZR__MSG_SPARE_SMALL && cap <= SOCK_SPARE_BUF_MAX &&
		    zr__spsc_count_upto(ring, SOCK_SPARE_BYTES / cap) < SOCK_SPARE_BYTES / cap)
			keep = cap;
	}
	if (!zr__msg_recycle_keep(m, keep) || !zr__spsc_push_quiet(ring, m))
		zr_msg_free(m);
}

/*
 * App thread: a small message the io thread made is copied into one this
 * thread makes, and the io thread's goes back to it through rx_spare. The
 * copy (at most 256 octets) costs less than the alternative: the app would
 * free memory of the io thread's malloc arena, taking that arena's lock
 * against the io thread's own mallocs (a ROUTER receiver at 64 B spent
 * ~30% of its samples in malloc, free and that lock: perf).
 */
static zr_msg *
sock_recv_own(zr_socket *s, zr_msg *m)
{
	zr_msg *own;

	if (!zr__msg_small(m) || zr_msg_new(&own) < 0)
		return m;
	if (zr__msg_take_small(own, m) < 0) {
		zr_msg_free(own);
		return m;
	}
	zr__sock_spare_give(&s->rx_spare, m);
	return own;
}

/*
 * App thread: the caller's dst takes the message m, and m, emptied, goes
 * back to the io thread through rx_spare. A small one is copied into dst's
 * buffer (kept from the last one: no allocation), a larger one trades
 * buffers with dst.
 */
#define SOCK_META_OWED_MAX 4096u

/* App thread: drops a message's reference to its connection's properties,
 * batched per connection (the io thread takes them in blocks too). */
static void
sock_meta_drop(zr_socket *s, struct zr__meta *meta)
{
	if (meta == NULL)
		return;
	if (meta != s->rx_meta_owed || s->rx_meta_owed_n == SOCK_META_OWED_MAX) {
		zr__meta_unref_n(s->rx_meta_owed, s->rx_meta_owed_n);
		s->rx_meta_owed = meta;
		s->rx_meta_owed_n = 0;
	}
	s->rx_meta_owed_n++;
}

/* App thread: m, read out, goes back to the io thread as a spare, and a
 * large buffer of its through rx_bufs while that holds few. */
static void
sock_rx_spare_give(zr_socket *s, zr_msg *m)
{
	size_t cap;

	if (!m->hooked && m->cap >= SOCK_RX_BUF_MIN && m->cap <= SOCK_RX_BUF_MAX &&
	    zr__spsc_count_upto(&s->rx_bufs, SOCK_RX_BUFS) < SOCK_RX_BUFS) {
		uint8_t *b = zr__msg_take_buf(m, &cap);

		if (b != NULL) {
			memcpy(b, &cap, sizeof cap); /* its size travels in it */
			if (!zr__spsc_push(&s->rx_bufs, b))
				free(b);
		}
	}
	zr__sock_spare_give(&s->rx_spare, m);
}

uint8_t *
zr__sock_rx_buf(struct zr_socket *s, size_t want, size_t *cap)
{
	uint8_t *b = s->queues_ready ? zr__spsc_pop(&s->rx_bufs) : NULL;
	size_t got;

	if (b == NULL)
		return NULL;
	memcpy(&got, b, sizeof got);
	/* Not much larger than asked: a queued message's memory is counted
	 * by its length. */
	if (got < want || got > 2 * want) {
		free(b);
		return NULL;
	}
	*cap = got;
	return b;
}

static void
sock_recv_into(zr_socket *s, zr_msg *dst, zr_msg *m)
{
	/* A locked subtract per message was ~6% of a 64 B receiver's samples
	 * (perf, zmq_msg_recv loop): given back in batches instead. */
	sock_meta_drop(s, dst->meta);
	dst->meta = NULL;
	if (zr__msg_move_small(dst, m)) {
		if (!zr__spsc_push(&s->rx_spare, m))
			zr_msg_free(m);
		return;
	}
	if (zr__msg_small(m) && zr__msg_keep_cap(dst) <= ZR__MSG_SPARE_SMALL) {
		(void)zr__msg_recycle(dst);
		if (zr__msg_take_small(dst, m) < 0)
			zr__msg_swap(dst, m);
	} else {
		/* dst takes m's buffer, and its own goes back in m */
		zr__msg_swap(dst, m);
	}
	sock_rx_spare_give(s, m);
}

/* ZR_BUSY_POLL on an empty rx: pops until a message comes or the spin
 * ends. Before rx_armed is set, so the io thread that pushes meanwhile
 * writes no eventfd. Not while a connection is paused on a full-looking
 * queue: that one waits for the wake the arming below sends. */
static zr_msg *
sock_spin_for_msg(struct zr_socket *s, uint64_t deadline)
{
	uint64_t end = sock_spin_end(s, deadline);
	unsigned steps = 0;

	while (end != 0 && !atomic_load_explicit(&s->rx_paused, memory_order_relaxed) &&
	       sock_spin_on(s, end, &steps)) {
		zr_msg *m = sock_rx_pop(s);

		if (m != NULL)
			return m;
	}
	return NULL;
}

static bool
sock_rx_ready(void *s)
{
	return sock_rx_any(s);
}

/* ZR_CTX_CALLER_IO: runs the io until a message is there (see zr__ctx_run_until). */
static int
sock_recv_run(zr_socket *s, uint64_t deadline)
{
	/* A connection paused on a stale count needs the look it gets when
	 * the socket is marked (as below, before a wait on the eventfd). */
	if (atomic_load_explicit(&s->rx_paused, memory_order_relaxed))
		zr__ctx_dirty(s->ctx, s);
	return zr__ctx_run_until(s->ctx, sock_rx_ready, s, deadline);
}

/* m was popped from rx: its bytes leave the RCVBYTES budget, and a paused
 * connection goes on once half of rx is free. */
static inline void
sock_rx_took(zr_socket *s, const zr_msg *m)
{
	size_t cost = zr__msg_cost(m);

	atomic_store_explicit(&s->rx_taken,
	                      atomic_load_explicit(&s->rx_taken, memory_order_relaxed) + cost,
	                      memory_order_release);
	if (atomic_load_explicit(&s->rx_paused, memory_order_relaxed) &&
	    zr__spsc_count(&s->rx) <= s->rx_resume_at)
		zr__ctx_dirty(s->ctx, s);
}

/*
 * sock_recv's first try, for a plain pattern (PULL, SUB, DEALER, PAIR,
 * ROUTER, ...) whose queue holds a message: NULL when that does not apply
 * or rx is empty, and the caller then takes sock_recv. Its checks and its
 * call were ~55 of a 1 B receiver's ~260 app instructions per message
 * (callgrind).
 */
static inline zr_msg *
sock_rx_straight(zr_socket *s)
{
	zr_msg *m;

	if (!s->rx_plain || !s->queues_ready || (m = sock_rx_pop(s)) == NULL)
		return NULL;
	sock_rx_took(s, m);
	return m;
}

static int
sock_recv(zr_socket *s, zr_msg **msg, int flags, bool own)
{
	/* Read from the clock only once the queue is found empty: a receive
	 * that finds a message (the busy case) makes no clock_gettime, which
	 * was 3-5% of a CURVE receiver's samples with RCVTIMEO set (perf). The
	 * deadline moves by the time one empty pop takes. */
	uint64_t deadline = 0;
	bool timed = false;
	zr_msg *m;
	int rc;

	if (!s->ops->can_recv)
		return -ENOTSUP;
	if (s->ops->recv_check != NULL) {
		rc = s->ops->recv_check(s);
		if (rc < 0)
			return rc;
	}
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	for (;;) {
		m = sock_rx_pop(s);
		if (m == NULL && !timed) {
			deadline = sock_deadline(flags, s->opt.rcvtimeo_ms);
			timed = true;
		}
		if (m == NULL && s->opt.busy_poll_us > 0)
			m = sock_spin_for_msg(s, deadline);
		if (m == NULL && deadline != 0 && s->ctx->caller_io) {
			rc = sock_recv_run(s, deadline);
			if (rc >= 0)
				continue; /* a message is there */
			if (rc != -EBUSY)
				return rc;
		}
		if (m == NULL) {
			/* A caller polling zr_socket_fd returns here with -EAGAIN: clear
			 * the wake it came for before re-arming, or the fd would stay
			 * readable and its poll would spin. (A blocking wait clears it
			 * after poll.) Still armed from the last time, the fd has had
			 * no wake since (the io thread disarms before it signals), so
			 * there is nothing to clear: no read(2) each time a
			 * non-blocking receive finds the queue empty. */
			if (deadline == 0 &&
			    !atomic_load_explicit(&s->rx_armed, memory_order_relaxed))
				sock_drain_fd(s->efd_rx);
			atomic_store(&s->rx_armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			m = sock_rx_pop(s);
			/* Found after all: we will not wait, so spare the io thread a
			 * wake (a stale one would only cost one extra loop). */
			if (m != NULL)
				atomic_store(&s->rx_armed, 0);
			else if (atomic_load_explicit(&s->rx_paused, memory_order_relaxed))
				/* Empty, yet a connection waits: it paused on a stale
				 * count. Read after the fence, so this cannot miss it. */
				zr__ctx_dirty(s->ctx, s);
		}
		if (m != NULL) {
			sock_rx_took(s, m);
			if (s->ops->recv_finish != NULL && !s->ops->recv_finish(s, m)) {
				zr_msg_free(m);
				continue;
			}
			*msg = own ? sock_recv_own(s, m) : m;
			return 0;
		}
		rc = sock_wait(s, s->efd_rx, deadline);
		if (rc < 0)
			return rc;
	}
}

/*
 * Every call is counted while it runs, so the io thread never frees the
 * socket under it (a call blocked while the context terminates). Once its
 * count drops, a call touches neither the socket nor the context: the io
 * thread may free the socket, finish and let zr_ctx_free free the context
 * at once (a wake from here raced both, found by ThreadSanitizer), so a
 * terminating io thread looks again on its own (ctx.c, CTX_TERM_POLL_MS).
 *
 * Sends and receives (one thread each at a time) count on counters of their
 * own with plain stores when the context has membarrier: before the io
 * thread reads them to free a socket, one membarrier makes every thread's
 * earlier stores visible to it. Two locked instructions per call were ~18%
 * of a 1 B sender's samples (perf), each a full barrier. Other calls, and
 * every call without membarrier, count on the locked counter.
 */
enum sock_role {
	SOCK_CALL_OTHER,
	SOCK_CALL_TX,
	SOCK_CALL_RX
};

static atomic_uint *
sock_role_count(zr_socket *s, enum sock_role role)
{
	if (role == SOCK_CALL_OTHER || !s->ctx->membarrier)
		return NULL;
	return role == SOCK_CALL_TX ? &s->calls_tx : &s->calls_rx;
}

static void
sock_call_enter(zr_socket *s, enum sock_role role)
{
	atomic_uint *n = sock_role_count(s, role);

	if (n == NULL) {
		atomic_fetch_add(&s->calls, 1);
		return;
	}
	atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps it first */
}

static int
sock_call_leave(zr_socket *s, enum sock_role role, int rc)
{
	atomic_uint *n = sock_role_count(s, role);

	if (n == NULL) {
		atomic_fetch_sub(&s->calls, 1);
		return rc;
	}
	/* Release: what the call did to the socket happens before the io
	 * thread sees the count drop (and frees it). */
	atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) - 1,
	                      memory_order_release);
	return rc;
}

/* io thread: no app call is inside the socket. */
static bool
sock_no_calls(struct zr_socket *s)
{
	if (atomic_load(&s->calls) > 0)
		return false;
	if (!s->ctx->membarrier)
		return true;
	/* Registered in zr_ctx_new, so this cannot fail: after it, every
	 * counting store an app thread made is visible here. */
	(void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	return atomic_load_explicit(&s->calls_tx, memory_order_acquire) == 0 &&
	       atomic_load_explicit(&s->calls_rx, memory_order_acquire) == 0;
}

/* see zring.h */
int
zr_send(zr_socket *s, zr_msg **msg, int flags)
{
	zr_msg *m = *msg;

	sock_call_enter(s, SOCK_CALL_TX);
	if (m != NULL && m->nframes > 0 && s->queues_ready && sock_tx_straight(s, m)) {
		*msg = NULL;
		return sock_call_leave(s, SOCK_CALL_TX, 0);
	}
	return sock_call_leave(s, SOCK_CALL_TX,
	                       sock_send(s, msg, sock_deadline(flags, s->opt.sndtimeo_ms), -1));
}

int
zr__sock_send_cancellable(zr_socket *s, zr_msg **msg, int timeout_ms, int cancel_fd)
{
	sock_call_enter(s, SOCK_CALL_TX);
	return sock_call_leave(s, SOCK_CALL_TX,
	                       sock_send(s, msg, sock_deadline(0, timeout_ms), cancel_fd));
}

/* see zring.h */
int
zr_recv(zr_socket *s, zr_msg **msg, int flags)
{
	sock_call_enter(s, SOCK_CALL_RX);
	return sock_call_leave(s, SOCK_CALL_RX, sock_recv(s, msg, flags, true));
}

/* see zring.h */
int
zr_recv_into(zr_socket *s, zr_msg *msg, int flags)
{
	zr_msg *m;
	int rc;

	sock_call_enter(s, SOCK_CALL_RX);
	m = sock_rx_straight(s);
	rc = m != NULL ? 0 : sock_recv(s, &m, flags, false);
	if (rc == 0)
		sock_recv_into(s, msg, m);
	return sock_call_leave(s, SOCK_CALL_RX, rc);
}

/* see zring.h */
int
zr_monitor_recv(zr_socket *s, struct zr_event *ev, int timeout_ms)
{
	sock_call_enter(s, SOCK_CALL_OTHER);
	return sock_call_leave(s, SOCK_CALL_OTHER, zr__monitor_recv(s, ev, timeout_ms));
}

/* A line this thread will write soon, fetched for writing now. */
static inline void
sock_prefetch_w(const void *p)
{
#if defined(__x86_64__)
	/* PREFETCHW (a no-op on x86-64 CPUs without it): __builtin_prefetch's
	 * write hint emits a plain read prefetch at baseline x86-64, and the
	 * store then still takes the line from the other core. */
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1);
#endif
}

/*
 * App thread, having just taken a spare from tx_spare: the io thread wrote
 * each spare last (recycling it), so the struct was a cache miss where the
 * send first reads it, and the fence publishing the message waited for the
 * lines it wrote (perf of the zmq_msg_send idiom: ~60% of zr_send_bytes on
 * that one load). The struct two sends ahead is fetched for writing now,
 * when the ring's cached view already shows it. Measured, Release, 64 B
 * PUSH/PULL over tcp: zmq_msg_send loop +7 to +17% msgs/s in four A/B runs
 * of 10 to 30 pairs, zmq_send and zr_send_bytes loops within noise. Tried
 * and dropped (A/B, same runs): the spare's buffer one send ahead (zmq_send
 * -4%), the same for the io thread's pops of tx (bench_zr -6%), rx and
 * rx_spare (receiver CPU +15%).
 */
static void
sock_spare_prefetch(struct zr__spsc *ring)
{
	const zr_msg *n = zr__spsc_peek_cached(ring, 1);

	if (n != NULL) {
		/* 120 octets from a 16-aligned start: up to three lines */
		sock_prefetch_w(n);
		sock_prefetch_w((const char *)n + 64);
		sock_prefetch_w((const char *)n + sizeof *n - 1);
	}
}

/* see zring.h */
int
zr_send_bytes(zr_socket *s, const void *data, size_t len, int flags)
{
	zr_msg *m;
	int rc;

	/* Counted from its first touch of the socket (the spare ring), not
	 * only around the send: a context freed meanwhile must wait for it. */
	sock_call_enter(s, SOCK_CALL_TX);
	m = s->queues_ready ? zr__spsc_pop(&s->tx_spare) : NULL;
	if (m != NULL) {
		sock_spare_prefetch(&s->tx_spare);
		zr__msg_fit(m, len);
		rc = zr__msg_put_first(m, data, len) ? 0 : zr_msg_add(m, data, len);
		if (rc == 0 && sock_tx_straight(s, m))
			return sock_call_leave(s, SOCK_CALL_TX, 0);
	} else {
		rc = zr_msg_new(&m);
		if (rc == 0)
			rc = zr_msg_add(m, data, len);
	}
	if (rc == 0)
		rc = sock_send(s, &m, sock_deadline(flags, s->opt.sndtimeo_ms), -1);
	zr_msg_free(m); /* NULL once sent */
	return sock_call_leave(s, SOCK_CALL_TX, rc);
}

/* see zring.h */
int
zr_recv_bytes(zr_socket *s, void *buf, size_t cap, int flags)
{
	zr_msg *m;
	const void *f;
	size_t len;
	int rc;

	sock_call_enter(s, SOCK_CALL_RX);
	m = sock_rx_straight(s);
	if (m == NULL && (rc = sock_recv(s, &m, flags, false)) < 0)
		return sock_call_leave(s, SOCK_CALL_RX, rc);
	/* Its first frame, as zr_msg_frame gives it (that call was ~19 of a
	 * 1 B receive's instructions, callgrind). */
	len = m->nframes > 0 ? m->frames[0].len : 0;
	f = m->data != NULL && len > 0 ? m->data + m->frames[0].off : (const uint8_t *)"";
	memcpy(buf, f, len < cap ? len : cap);
	/* Its properties' reference given back in a batch, as zr_recv_into's:
	 * a locked subtract per message was ~8% of a 64 B receiver (perf). */
	sock_meta_drop(s, m->meta);
	m->meta = NULL;
	/* Back to the io thread for the next message, rather than a free here
	 * of what that thread allocated. */
	sock_rx_spare_give(s, m);
	return sock_call_leave(s, SOCK_CALL_RX, len > INT32_MAX ? INT32_MAX : (int)len);
}

/* see zring.h */
int
zr_socket_fd(zr_socket *s)
{
	return s->efd_rx;
}

/* App thread, as the tx producer: a free slot, and bytes left within
 * SNDBYTES (an empty handoff takes any message). */
static bool
sock_tx_room(zr_socket *s)
{
	size_t cap = zr__spsc_cap(&s->tx); /* what sock_tx_offer fills */

	if (zr__spsc_count_upto(&s->tx, cap) >= cap)
		return false;
	return sock_budget_room(s->opt.sndbytes, s->tx_given, &s->tx_taken_seen, &s->tx_taken, 0);
}

static bool
sock_can_send_now(zr_socket *s)
{
	const struct zr__sock_ops *ops = s->ops;

	if (ops->send_check != NULL && ops->send_check(s) < 0)
		return false;
	if (ops->waits_for_peer && atomic_load(&s->npipes) == 0)
		return false;
	return sock_tx_room(s);
}

static int
sock_poll_events(zr_socket *s)
{
	const struct zr__sock_ops *ops = s->ops;
	int ev = 0;

	if (sock_queues(s) < 0)
		return 0;
	/* The wake that brought the caller here is consumed: what it meant is
	 * read below, and whatever is missing arms the fd again. */
	sock_drain_fd(s->efd_rx);
	if (ops->can_recv && (ops->recv_check == NULL || ops->recv_check(s) == 0)) {
		if (sock_rx_any(s)) {
			ev |= ZR_POLLIN;
		} else {
			/* As a receive that found none: the next message wakes
			 * the fd (zr__sock_rx_flush). */
			atomic_store(&s->rx_armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			if (sock_rx_any(s))
				ev |= ZR_POLLIN;
			else if (atomic_load_explicit(&s->rx_paused, memory_order_relaxed))
				zr__ctx_dirty(s->ctx, s);
		}
	}
	if (ops->can_send && (ops->send_check == NULL || ops->send_check(s) == 0)) {
		if (sock_can_send_now(s)) {
			ev |= ZR_POLLOUT;
		} else {
			/* The io thread signals the fd when the handoff drains or
			 * a first peer comes (sock_tx_taken); looked at again after
			 * arming, so a drain in between is not missed. */
			atomic_store(&s->tx_fd_armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			if (sock_can_send_now(s))
				ev |= ZR_POLLOUT;
			else
				zr__ctx_dirty(s->ctx, s); /* make sure the io thread drains */
		}
	}
	return ev;
}

/* see zring.h */
int
zr_socket_poll_events(zr_socket *s)
{
	sock_call_enter(s, SOCK_CALL_OTHER);
	return sock_call_leave(s, SOCK_CALL_OTHER, sock_poll_events(s));
}

static int
sock_subscribe(zr_socket *s, int type, const void *v, size_t len)
{
	struct zr__cmd *cmd;

	if (!s->ops->app_subscribes)
		return -EINVAL;
	cmd = sock_cmd(s, type, len);
	if (cmd == NULL)
		return -ENOMEM;
	if (len > 0)
		memcpy(cmd->data, v, len);
	zr__ctx_command(s->ctx, cmd);
	return 0;
}

/* ---- io side ------------------------------------------------------------ */

static struct zr__loop *
sock_loop(struct zr_socket *s)
{
	return &s->ctx->loop;
}

/* The app may wait for room in tx: tell it after taking a message. */
static void
sock_tx_taken(struct zr_socket *s)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&s->tx_armed) && atomic_exchange(&s->tx_armed, 0))
		sock_signal(s->efd_tx);
	if (atomic_load(&s->tx_fd_armed) && atomic_exchange(&s->tx_fd_armed, 0))
		sock_signal(s->efd_rx); /* zr_socket_poll_events found no room */
}

zr_msg *
zr__sock_tx_peek(struct zr_socket *s)
{
	return zr__spsc_peek(&s->tx);
}

void
zr__sock_tx_take(struct zr_socket *s)
{
	zr_msg *m = zr__spsc_pop(&s->tx);

	if (m != NULL) {
		s->tx_pass_taken += zr__msg_cost(m);
		s->tx_pass_msgs++;
	}
}

static uint32_t sock_route_pending(struct zr_socket *s);

static void
sock_route_fired(struct zr__timer *t)
{
	(void)sock_route_pending(ZR_CONTAINER_OF(t, struct zr_socket, route_timer));
}

void
zr__sock_tx_retry(struct zr_socket *s, const struct zr__conn *c)
{
	/* Waiting for another connection's room, which will come. */
	if (s->tx_blocked != NULL && s->tx_blocked != c)
		return;
	s->tx_blocked = NULL;
	if (s->pending == NULL)
		return;
	s->route_timer.cb = sock_route_fired;
	/* Without the memory, the next room or send retries instead. */
	(void)zr__timer_start(sock_loop(s), &s->route_timer, 0);
}

static uint32_t
sock_route_pending(struct zr_socket *s)
{
	bool (*route)(struct zr_socket *, zr_msg *) = s->ops->route;
	uint64_t taken, outer_taken = s->tx_pass_taken;
	uint32_t msgs, outer_msgs = s->tx_pass_msgs;

	if (!s->queues_ready)
		return 0;
	bool outer = !s->tx_routing;

	zr__inproc_route_begin(s->ctx);
	s->tx_routing = true;
	/* Counted in the socket, not here: a route may take the messages
	 * after its own (zr__sock_tx_take). A pass inside a pass counts its own. */
	s->tx_pass_taken = 0;
	s->tx_pass_msgs = 0;
	for (;;) {
		zr_msg *m = s->pending;

		if (m == NULL) {
			m = zr__spsc_pop(&s->tx);
			if (m == NULL)
				break;
			s->tx_pass_taken += zr__msg_cost(m);
			s->tx_pass_msgs++;
		}
		s->pending = NULL;
		if (!route(s, m)) {
			s->pending = m;
			break;
		}
	}
	taken = s->tx_pass_taken;
	s->tx_pass_taken = outer_taken;
	msgs = s->tx_pass_msgs;
	s->tx_pass_msgs = outer_msgs;
	s->watch_took += msgs; /* the socket still streams (zr__sock_watch_turn) */
	bool any = taken > 0;
	/* Once per drain, not per message: the byte count and the fence in
	 * sock_tx_taken are shared with the sending thread (perf: they were
	 * ~10% of a 64 B sender). */
	zr__inproc_route_end(s->ctx); /* inproc receivers: one wake for the pass */
	if (outer) {
		s->tx_routing = false;
		zr__conn_kick_queued(s); /* each connection: one batch for the pass */
	}
	if (taken > 0)
		atomic_store_explicit(&s->tx_taken,
		                      atomic_load_explicit(&s->tx_taken, memory_order_relaxed) +
		                              taken,
		                      memory_order_release);
	/* A sender blocked on a full handoff sleeps until it is half empty,
	 * not until one slot frees: ~8k sleep/wake rounds per million 64 B
	 * messages otherwise. Every drain ends here, so a queue that empties
	 * further always reaches the mark. */
	if (any && zr__spsc_count(&s->tx) <= zr__spsc_cap(&s->tx) / 2)
		sock_tx_taken(s);
	return msgs;
}

uint32_t
zr__sock_io_dirty(struct zr_socket *s)
{
	/* Room in rx: let the paused connections go on (each re-pauses if it
	 * fills the queue again). Clear the flag first so a pause that happens
	 * now sets it again. */
	if (atomic_exchange(&s->rx_paused, 0)) {
		/* The pattern's own waiting messages first (an XPUB's cancels
		 * are older than any notice a paused connection offers again). */
		if (s->ops->rx_room != NULL)
			s->ops->rx_room(s);
		for (struct zr__conn *c = s->conns, *next; c != NULL; c = next) {
			next = c->next;
			if (c->rx_paused)
				zr__conn_resume(c);
		}
	}
	return sock_route_pending(s);
}

/* io thread: how many messages rx takes before the app may see them
 * (zr__sock_rx_flush shows the rest, with the wake). A tail stored per
 * message was a cache line the app, popping right behind, pulled over
 * per message; every 32 keeps the app busy within a long batch. */
#define SOCK_RX_PUBLISH_EVERY 32

/* io thread: the receive queue's RCVHWM in messages (SIZE_MAX: none). */
static size_t
sock_rx_limit(const struct zr_socket *s)
{
	return s->opt.rcvhwm > 0 ? (size_t)s->opt.rcvhwm : SIZE_MAX;
}

/* io thread: m into the app's queue, which then holds depth messages, if
 * RCVBYTES lets it in (the count was judged by the caller). */
static bool
sock_rx_queue(struct zr_socket *s, zr_msg *m, size_t depth)
{
	/* Judged on the bytes, never on the cached count, which may still say
	 * "not empty" when the app has taken everything: a message over the
	 * budget would then wait for a wake nobody sends. */
	size_t len = zr__msg_cost(m); /* once pushed, m is the app's (it may be gone) */

	if (!sock_budget_room(s->opt.rcvbytes, s->rx_given, &s->rx_taken_seen, &s->rx_taken, len) ||
	    !zr__spsc_push_quiet(&s->rx, m))
		return false;
	if ((s->rx.ptail & (SOCK_RX_PUBLISH_EVERY - 1)) == 0)
		zr__spsc_publish(&s->rx);
	s->rx_given += len;
	if (depth > atomic_load_explicit(&s->rx_peak, memory_order_relaxed))
		atomic_store_explicit(&s->rx_peak, depth, memory_order_relaxed);
	s->rx_unsignalled = true; /* the wake waits for zr__sock_rx_flush */
	return true;
}

/* io thread: into the app's queue, within RCVHWM and RCVBYTES. */
static bool
sock_rx_push(struct zr_socket *s, zr_msg *m)
{
	size_t peak = atomic_load_explicit(&s->rx_peak, memory_order_relaxed);
	size_t limit = sock_rx_limit(s);
	/* From our cached view of the app's progress, exact at the limits that
	 * matter (HWM, a new peak): the line the app writes per message is read
	 * only then. */
	size_t queued = zr__spsc_count_upto(&s->rx, limit < peak ? limit : peak);

	if (atomic_load_explicit(&s->rx_hold, memory_order_relaxed))
		return false; /* the owner stopped reading (a closing subscription) */
	/* Exactly RCVHWM (the ring itself rounds up to a power of two). */
	if (queued >= limit)
		return false;
	return sock_rx_queue(s, m, queued + 1);
}

size_t
zr__sock_rx_room(struct zr_socket *s, size_t n)
{
	const struct zr__sock_ops *ops = s->ops;
	size_t limit = sock_rx_limit(s);
	size_t queued;

	if ((ops->deliver != NULL && ops->rx_accept == NULL) || ops->rx_begin != NULL ||
	    s->conflate_rx || atomic_load_explicit(&s->rx_hold, memory_order_relaxed))
		return 0;
	/* The cached view, refreshed only at the limit: a count that is high
	 * gives a shorter run, and the usual way takes the rest. */
	queued = zr__spsc_count_upto(&s->rx, limit);
	if (queued >= limit)
		return 0;
	s->rx_run_depth = queued;
	return limit - queued < n ? limit - queued : n;
}

bool
zr__sock_rx_put(struct zr_socket *s, zr_msg *m)
{
	if (!sock_rx_queue(s, m, s->rx_run_depth + 1))
		return false;
	s->rx_run_depth++;
	return true;
}

/* io thread, CONFLATE: m replaces the unread message, if any (freed here,
 * where it was made). Always taken, so a peer is never held back. */
static int
sock_rx_conflate(struct zr_socket *s, zr_msg *m)
{
	zr_msg *old;

	if (atomic_load_explicit(&s->rx_hold, memory_order_relaxed))
		return 0;
	old = atomic_exchange_explicit(&s->rx_last, m, memory_order_acq_rel);
	if (old != NULL)
		zr_msg_free(old);
	s->rx_unsignalled = true; /* the wake waits for zr__sock_rx_flush */
	return 1;
}

bool
zr__sock_rx_push(struct zr_socket *s, zr_msg *m)
{
	return sock_rx_push(s, m);
}

void
zr__sock_rx_flush(struct zr_socket *s)
{
	if (!s->rx_unsignalled)
		return;
	s->rx_unsignalled = false;
	zr__spsc_publish(&s->rx); /* set only by a push: the queues are there */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&s->rx_armed) && atomic_exchange(&s->rx_armed, 0))
		sock_signal(s->efd_rx);
}

void
zr__sock_rx_refill_each(struct zr_socket *s)
{
	s->rx_refill_each = true;
}

int
zr__sock_msg_new(struct zr_socket *s, zr_msg **m, size_t want)
{
	uint8_t *b;
	size_t cap;

	*m = zr__spsc_pop(&s->rx_spare);
	if (*m == NULL) {
		if (zr_msg_new(m) < 0)
			return -ENOMEM;
	} else {
		zr__msg_fit(*m, want);
	}
	/* A large frame is received into a buffer the app gave back. */
	if (want >= SOCK_RX_BUF_MIN && (*m)->cap < want &&
	    (b = zr__sock_rx_buf(s, want, &cap)) != NULL)
		zr__msg_give_buf(*m, b, cap);
	return 0;
}

int
zr__sock_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	if (s->ops->deliver != NULL) {
		int rc = s->ops->deliver(s, c, m);

		if (rc != ZR__PAT_RX)
			return rc;
	}
	if (s->conflate_rx)
		return sock_rx_conflate(s, m);
	return sock_rx_push(s, m) ? 1 : 0;
}

int
zr__sock_subscription(struct zr_socket *s, struct zr__conn *c, bool subscribe, const uint8_t *topic,
                      size_t len)
{
	if (s->ops->peer_subscription == NULL)
		return 1; /* a type without subscribers ignores them */
	return s->ops->peer_subscription(s, c, subscribe, topic, len);
}

/* io thread: the pipe count moved; a sender waiting for its first peer wakes. */
static void
sock_pipes_add(struct zr_socket *s, int delta)
{
	if (atomic_fetch_add(&s->npipes, delta) == 0 && delta > 0)
		sock_tx_taken(s);
}

void
zr__sock_pipes_add(struct zr_socket *s, int delta)
{
	sock_pipes_add(s, delta);
}

int
zr__sock_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	/* The pattern may refuse it (a second PAIR peer) or set it up (a
	 * routing id, our subscriptions) before it counts. */
	if (s->ops->conn_active != NULL) {
		int rc = s->ops->conn_active(s, c);

		if (rc < 0)
			return rc;
	}
	s->nconns_active++;
	atomic_fetch_add(&s->nready, 1);
	if (!c->connecter)
		sock_pipes_add(s, 1);
	sock_route_pending(s);
	zr__sock_close_kick(s);
	return 0;
}

void
zr__sock_conn_lost(struct zr_socket *s, struct zr__conn *c)
{
	/* A publisher may have waited for c alone (a PUB_BLOCK one did: until
	 * it left, the message waited for the app's next send). */
	zr__sock_tx_retry(s, c);
	s->nconns_active--;
	atomic_fetch_sub(&s->nready, 1);
	if (!c->connecter)
		sock_pipes_add(s, -1);
	if (s->ops->conn_lost != NULL)
		s->ops->conn_lost(s, c);
}

void
zr__sock_conn_room(struct zr_socket *s, struct zr__conn *c)
{
	/* With 1,000 subscribers, each one's send completing retried a
	 * message that waited for another one: a walk of all of them per
	 * completion (most of the publisher's io thread, perf). */
	if (s->tx_blocked != NULL && s->tx_blocked != c)
		return;
	s->tx_blocked = NULL;
	sock_route_pending(s);
}

/* ---- listeners ---------------------------------------------------------- */

/* Every listening fd is counted from zr_bind to its close, so the app side
 * can tell when an address it unbound is free again. */
static void
sock_listen_fd_close(struct zr_socket *s, int fd)
{
	close(fd);
	atomic_fetch_sub(&s->listen_fds, 1);
}

/* Errors that belong to the one connection accept took off the backlog
 * (accept(2): "treat like EAGAIN by retrying"): re-arming at once is safe,
 * as the next accept finds another connection or waits. */
static bool
sock_accept_transient(int res)
{
	switch (-res) {
	case EAGAIN:
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
	case EPERM:
	case ENETDOWN:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

static const char *
sock_accept_why(int res)
{
	switch (-res) {
	case EMFILE:
		return "too many open files (RLIMIT_NOFILE)";
	case ENFILE:
		return "too many open files in the system";
	case ENOMEM:
		return "out of memory";
	case ENOBUFS:
		return "out of socket buffers";
	default:
		return zr_strerror(res);
	}
}

static void
sock_accept_retry(struct zr__timer *t)
{
	struct zr__listener *l = ZR_CONTAINER_OF(t, struct zr__listener, retry);
	struct zr_socket *s = l->sock;
	int rc;

	if (l->closing || s->io_closing || l->fd < 0)
		return;
	rc = zr__op_accept(sock_loop(s), &l->op, l->fd);
	if (rc < 0) /* the ring is full: wait again (no event: it is ours) */
		zr__timer_start(sock_loop(s), &l->retry, zr__now_ms() + l->backoff_ms);
}

/* Stops accepting for a while after res; one event says why and how long. */
static void
sock_accept_backoff(struct zr_socket *s, struct zr__listener *l, int res)
{
	char why[ZR_EVENT_REASON_MAX];

	l->backoff_ms = l->backoff_ms == 0 ? SOCK_ACCEPT_BACKOFF_MIN_MS : l->backoff_ms * 2;
	if (l->backoff_ms > SOCK_ACCEPT_BACKOFF_MAX_MS)
		l->backoff_ms = SOCK_ACCEPT_BACKOFF_MAX_MS;
	if (zr__timer_start(sock_loop(s), &l->retry, zr__now_ms() + l->backoff_ms) < 0) {
		/* No room for a timer either: the old way, at once. */
		zr__op_accept(sock_loop(s), &l->op, l->fd);
		return;
	}
	snprintf(why, sizeof why, "%s; retrying in %u ms", sock_accept_why(res), l->backoff_ms);
	zr__sock_event_why(s, ZR_EVENT_ACCEPT_FAILED, res, l->endpoint, why);
}

/* CONNS_MAX: one more accepted connection would be too many. */
static bool
sock_conns_full(const struct zr_socket *s)
{
	return s->opt.conns_max > 0 && s->naccepted >= (size_t)s->opt.conns_max;
}

/* Closes the listening fd, then says so: an app that saw CLOSED finds the
 * address refusing connections. */
static void
sock_listener_fd_closed(struct zr_socket *s, struct zr__listener *l)
{
	int fd = l->fd;

	sock_listen_fd_close(s, fd);
	l->fd = -1;
	zr__sock_event(s, ZR_EVENT_CLOSED, fd, l->endpoint);
}

static void
sock_accept_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__listener *l = ZR_CONTAINER_OF(op, struct zr__listener, op);
	struct zr_socket *s = l->sock;

	if (res >= 0) {
		struct zr__conn *c;

		l->backoff_ms = 0;
		/* NOLINTNEXTLINE(bugprone-branch-clone): closing and no memory both drop the fd */
		if (s->io_closing) {
			close(res);
		} else if (sock_conns_full(s)) {
			char why[ZR_EVENT_REASON_MAX];

			/* Closed at once rather than left in the backlog: the
			 * peer hears so and retries on its own schedule. */
			close(res);
			snprintf(why, sizeof why,
			         "connections at CONNS_MAX (%d): a new one was closed",
			         s->opt.conns_max);
			zr__sock_event_why(s, ZR_EVENT_ACCEPT_FAILED, -ECONNREFUSED, l->endpoint,
			                   why);
		} else if ((c = zr__conn_new(s)) == NULL) {
			close(res);
		} else {
			c->accepted = true;
			s->naccepted++;
			c->ep.transport = l->transport;
			c->ep.tls = l->tls;
			memcpy(c->endpoint, l->endpoint, sizeof c->endpoint);
			zr__sock_event(s, ZR_EVENT_ACCEPTED, res, l->endpoint);
			zr__conn_start_accepted(c, res);
		}
	} else if (res != -ECANCELED && (sock_accept_transient(res) || zr__op_more(flags))) {
		zr__sock_event(s, ZR_EVENT_ACCEPT_FAILED, res, l->endpoint);
	}
	if (zr__op_more(flags))
		return;
	/* We cancel only a closing listener's accept: another -ECANCELED is
	 * the exit of the thread that submitted it (ZR_CTX_CALLER_IO): arm again. */
	if (l->closing || s->io_closing) {
		l->closing = true;
		if (l->op.inflight == 0 && l->fd >= 0) {
			sock_listener_fd_closed(s, l);
		}
		return;
	}
	if (res < 0 && res != -ECANCELED && !sock_accept_transient(res)) {
		sock_accept_backoff(s, l, res);
		return;
	}
	if (zr__op_accept(sock_loop(s), &l->op, l->fd) < 0)
		sock_accept_backoff(s, l, -EBUSY);
}

static void
sock_listen(struct zr_socket *s, struct zr__cmd *cmd)
{
	struct zr__listener *l = calloc(1, sizeof *l);
	struct zr__listener **v;

	if (l == NULL) {
		sock_listen_fd_close(s, cmd->fd);
		return;
	}
	v = realloc(s->listeners, (s->nlisten + 1) * sizeof *v);
	if (v == NULL) {
		sock_listen_fd_close(s, cmd->fd);
		free(l);
		return;
	}
	s->listeners = v;
	v[s->nlisten++] = l;
	l->op.cb = sock_accept_done;
	l->retry.cb = sock_accept_retry;
	l->sock = s;
	l->fd = cmd->fd;
	l->transport = cmd->ep.transport;
	l->tls = cmd->ep.tls;
	zr__endpoint_bound(l->fd, &cmd->ep, l->endpoint, sizeof l->endpoint);
	if (zr__op_accept(sock_loop(s), &l->op, l->fd) < 0)
		l->closing = true;
	else
		zr__sock_event(s, ZR_EVENT_LISTENING, l->fd, l->endpoint);
}

/* ---- close -------------------------------------------------------------- */

/*
 * Closing with LINGER != 0: messages the app sent keep going to the peers,
 * including connections still being made (as libzmq does for a connecter's
 * queue). A connection goes when it has nothing left to send and no message
 * waits for a peer; when LINGER runs out, everything goes.
 */
bool
zr__sock_unsent(struct zr_socket *s)
{
	return s->pending != NULL || (s->queues_ready && zr__spsc_peek(&s->tx) != NULL);
}

static void
sock_close_progress(struct zr__timer *t)
{
	struct zr_socket *s = ZR_CONTAINER_OF(t, struct zr_socket, close_timer);
	bool unsent;

	sock_route_pending(s);
	unsent = zr__sock_unsent(s);
	for (struct zr__conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->state == ZR__CONN_CLOSING || c->state == ZR__CONN_FINISHING)
			continue;
		if (c->state == ZR__CONN_ACTIVE ? zr__conn_drained(c) && !unsent : !unsent)
			zr__conn_finish(c);
	}
}

void
zr__sock_close_kick(struct zr_socket *s)
{
	if (s->io_closing)
		zr__timer_start(sock_loop(s), &s->close_timer, 0);
}

static void
sock_linger_fired(struct zr__timer *t)
{
	struct zr_socket *s = ZR_CONTAINER_OF(t, struct zr_socket, linger_timer);

	zr_msg_free(s->pending);
	s->pending = NULL;
	if (s->queues_ready) {
		zr_msg *m;

		while ((m = zr__spsc_pop(&s->tx)) != NULL)
			zr_msg_free(m);
	}
	for (struct zr__conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		zr__conn_close(c);
	}
}

/* Stops a listener: its accept is cancelled, the fd closes when the
 * accept's last completion comes (sock_accept_done). */
static void
sock_listener_close(struct zr_socket *s, struct zr__listener *l)
{
	l->closing = true;
	zr__timer_stop(sock_loop(s), &l->retry); /* a back-off: no accept in flight */
	if (l->op.inflight) {
		zr__op_cancel_fd(sock_loop(s), l->fd);
	} else if (l->fd >= 0) {
		sock_listener_fd_closed(s, l);
	}
}

static void
sock_io_close(struct zr_socket *s)
{
	struct zr__listener **ls = s->listeners;

	s->io_closing = true;
	zr__inproc_unbind(s, NULL); /* no new peers; the present ones linger */
	for (size_t i = 0; i < s->nlisten; i++) {
		if (!ls[i]->closing)
			sock_listener_close(s, ls[i]);
	}
	s->close_timer.cb = sock_close_progress;
	s->linger_timer.cb = sock_linger_fired;
	if (s->opt.linger_ms == 0) {
		sock_linger_fired(&s->linger_timer);
		return;
	}
	if (s->opt.linger_ms > 0)
		zr__timer_start(sock_loop(s), &s->linger_timer,
		                zr__now_ms() + (uint64_t)s->opt.linger_ms);
	zr__sock_close_kick(s);
}

void
zr__sock_io_command(struct zr_socket *s, struct zr__cmd *cmd)
{
	struct zr__conn *c;

	switch (cmd->type) {
	case ZR__CMD_BIND:
		if (cmd->ep.transport == ZR__INPROC) {
			if (!s->io_closing)
				zr__inproc_bind(s, &cmd->ep);
			return;
		}
		if (s->io_closing) {
			sock_listen_fd_close(s, cmd->fd);
			return;
		}
		sock_listen(s, cmd);
		return;
	case ZR__CMD_CONNECT:
		/* zr_connect counted the pipe; the connection's free uncounts it. */
		if (s->io_closing || (c = zr__conn_new(s)) == NULL) {
			sock_pipes_add(s, -1);
			return;
		}
		c->connecter = true;
		c->ep = cmd->ep;
		zr__endpoint_format(&c->ep, c->endpoint, sizeof c->endpoint);
		if (c->ep.transport == ZR__INPROC)
			zr__inproc_connect(c);
		else
			zr__conn_start_connect(c);
		return;
	case ZR__CMD_SUBSCRIBE:
	case ZR__CMD_UNSUBSCRIBE:
		/* Only types that take the options send these (sock_subscribe). */
		if (ZR_INVARIANT(s->ops->subscribe != NULL))
			s->ops->subscribe(s, cmd->type == ZR__CMD_SUBSCRIBE, cmd->data, cmd->len);
		return;
	case ZR__CMD_UNBIND:
		if (strncmp((const char *)cmd->data, "inproc://", 9) == 0) {
			zr__inproc_unbind(s, (const char *)cmd->data + 9);
			return;
		}
		for (size_t i = 0; i < s->nlisten; i++) {
			struct zr__listener *l = s->listeners[i];

			if (!l->closing && strcmp(l->endpoint, (const char *)cmd->data) == 0)
				sock_listener_close(s, l);
		}
		return;
	case ZR__CMD_DISCONNECT:
		for (c = s->conns; c != NULL;) {
			struct zr__conn *next = c->next;

			if (c->connecter && c->state != ZR__CONN_CLOSING &&
			    strcmp(c->endpoint, (const char *)cmd->data) == 0)
				zr__conn_close(c);
			c = next;
		}
		return;
	case ZR__CMD_CLOSE:
		if (!s->io_closing)
			sock_io_close(s);
		return;
	default:
		return;
	}
}

bool
zr__sock_io_done(struct zr_socket *s)
{
	struct zr__listener **ls = s->listeners;

	if (!s->io_closing || s->conns != NULL || !atomic_load(&s->closed))
		return false;
	for (size_t i = 0; i < s->nlisten; i++) {
		if (ls[i]->op.inflight)
			return false;
	}
	return sock_no_calls(s);
}

void
zr__sock_io_free(struct zr_socket *s)
{
	struct zr__listener **ls = s->listeners;
	zr_msg *m;

	zr__timer_stop(sock_loop(s), &s->linger_timer);
	zr__timer_stop(sock_loop(s), &s->close_timer);
	zr__timer_stop(sock_loop(s), &s->route_timer);
	for (size_t i = 0; i < s->nlisten; i++) {
		zr__timer_stop(sock_loop(s), &ls[i]->retry);
		if (ls[i]->fd >= 0)
			close(ls[i]->fd);
		free(ls[i]);
	}
	free(ls);
	zr__inproc_unbind(s, NULL);
	zr_msg_free(s->pending);
	zr__meta_unref_n(s->rx_meta_owed, s->rx_meta_owed_n);
	if (s->queues_ready) {
		while ((m = zr__spsc_pop(&s->tx)) != NULL)
			zr_msg_free(m);
		zr__spsc_publish(&s->rx); /* this thread pushed them: it may take them all */
		while ((m = zr__spsc_pop(&s->rx)) != NULL)
			zr_msg_free(m);
		zr_msg_free(atomic_exchange(&s->rx_last, NULL));
		while ((m = zr__spsc_pop(&s->rx_spare)) != NULL)
			zr_msg_free(m);
		while ((m = zr__spsc_pop(&s->tx_spare)) != NULL)
			zr_msg_free(m);
		for (void *b; (b = zr__spsc_pop(&s->rx_bufs)) != NULL;)
			free(b);
		zr__spsc_fini(&s->tx);
		zr__spsc_fini(&s->rx);
		zr__spsc_fini(&s->rx_spare);
		zr__spsc_fini(&s->rx_bufs);
		zr__spsc_fini(&s->tx_spare);
	}
	if (s->ops->fini != NULL)
		s->ops->fini(s);
	zr__monitor_fini(&s->mon);
	sock_eplist_free(&s->bound);
	sock_eplist_free(&s->connected);
	close(s->efd_rx);
	close(s->efd_tx);
	zr__sock_tls_free(s); /* after the connections, whose sessions use the contexts */
	sodium_memzero(&s->opt, sizeof s->opt); /* PLAIN password, CURVE secret key */
	free(s);
}

/* ---- for the rest of the engine (sock.h) -------------------------------------- */

int
zr__sock_type(const zr_socket *s)
{
	return (int)s->type;
}

int
zr__sock_listen_fds(zr_socket *s)
{
	return atomic_load(&s->listen_fds);
}

int
zr__sock_ready_peers(zr_socket *s)
{
	return atomic_load(&s->nready);
}

size_t
zr__sock_rx_queued(zr_socket *s)
{
	if (s->queues_ready && s->conflate_rx)
		return atomic_load(&s->rx_last) != NULL ? 1 : 0;
	return s->queues_ready ? zr__spsc_count(&s->rx) : 0;
}

size_t
zr__sock_rx_peak(zr_socket *s)
{
	return atomic_load(&s->rx_peak);
}

void
zr__sock_rx_hold(zr_socket *s)
{
	atomic_store(&s->rx_hold, 1);
}

uint64_t
zr__sock_unmatched(zr_socket *s)
{
	return atomic_load(&s->unmatched);
}

/*
 * A busy sender finds the flag still set from its last message: a read
 * (after the fence that orders its queue write before it) instead of a
 * locked exchange on a line the io thread writes once per drain. The io
 * thread clears the flag with an exchange before it drains
 * (zr__sock_dirty_pop), so either it sees our message or we see the flag
 * cleared.
 *
 * A watched socket (a stream: zr__sock_watch) needs neither: the io thread
 * drains it at every turn, and before it stops it clears the flag, runs a
 * membarrier (a full barrier on every thread of the process, ours too) and
 * drains it once more. So we see the flag cleared, or that last drain sees
 * our message. The fence was ~11 ns of each send on a 1 B stream (an
 * mfence; a message costs a few dozen).
 */
void
zr__ctx_dirty(struct zr_ctx *ctx, struct zr_socket *s)
{
	atomic_signal_fence(memory_order_seq_cst); /* the queue write first */
	if (atomic_load_explicit(&s->watched, memory_order_relaxed) != 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->dirty, memory_order_relaxed) != 0)
		return;
	if (atomic_exchange(&s->dirty, 1) != 0)
		return; /* already queued: the io thread will look */
	zr__ctx_dirty_push(ctx, s);
}

void
zr__sock_watch(zr_socket **list, zr_socket *s)
{
	if (atomic_load_explicit(&s->watched, memory_order_relaxed) != 0)
		return;
	s->watch_took = 1; /* it just took a run: that counts for this window */
	s->watch_next = *list;
	*list = s;
	atomic_store_explicit(&s->watched, 1, memory_order_relaxed);
}

int
zr__sock_watch_turn(zr_socket **list, bool over)
{
	zr_socket *s, **at, *left = NULL;
	int window = 0;
	bool barrier = false;

	/* Counted in every routing pass (sock_route_pending): a stream held
	 * by its peers' room is drained by the room's arrival, not here. */
	for (s = *list; s != NULL; s = s->watch_next)
		(void)zr__sock_io_dirty(s);
	if (!over)
		return 0;
	for (at = list; (s = *at) != NULL;) {
		int us = zr__sock_wake_coalesce(s);

		/* What stays needs a window to be drained in. */
		if (s->watch_took > 0 && us > 0) {
			s->watch_took = 0;
			if (us > window)
				window = us;
			at = &s->watch_next;
			continue;
		}
		*at = s->watch_next;
		s->watch_next = left;
		left = s;
		/* A full barrier between the flag and the look at tx_armed. A
		 * sender waiting for room set tx_armed with one after its last
		 * push: its pushes are seen without the membarrier, and a push
		 * it makes once it stops waiting (clearing tx_armed, a full
		 * barrier too) sees the flag cleared. A 1 B stream's sender
		 * waits for room often; a membarrier at each wait was 770 per
		 * 2 M messages, and slower than the fence it spares. */
		atomic_store(&s->watched, 0);
		barrier |= atomic_load(&s->tx_armed) == 0;
	}
	/* Only a context with membarrier watches (ctx.c): registered in
	 * zr_ctx_new, so this cannot fail. */
	if (barrier)
		(void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	for (s = left; s != NULL; s = s->watch_next)
		(void)zr__sock_io_dirty(s);
	return window;
}

void
zr__sock_unwatch(zr_socket **list, zr_socket *s)
{
	if (atomic_load_explicit(&s->watched, memory_order_relaxed) == 0)
		return;
	for (zr_socket **at = list; *at != NULL; at = &(*at)->watch_next) {
		if (*at == s) {
			*at = s->watch_next;
			break;
		}
	}
	atomic_store_explicit(&s->watched, 0, memory_order_relaxed);
}

void
zr__sock_dirty_link(zr_socket *s, zr_socket *below)
{
	s->dirty_next = below;
}

zr_socket *
zr__sock_dirty_pop(zr_socket *s)
{
	zr_socket *below = s->dirty_next; /* read before a new push may set it */

	atomic_exchange(&s->dirty, 0);
	return below;
}

void
zr__sock_list_add(zr_socket **head, zr_socket *s)
{
	if (s->listed)
		return;
	s->listed = true;
	s->next = *head;
	s->prev = NULL;
	if (*head != NULL)
		(*head)->prev = s;
	*head = s;
}

void
zr__sock_list_remove(zr_socket **head, zr_socket *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
}

zr_socket *
zr__sock_list_next(const zr_socket *s)
{
	return s->next;
}

int
zr__sock_busy_poll(const zr_socket *s)
{
	return atomic_load_explicit(&s->busy_poll_us, memory_order_relaxed);
}

int
zr__sock_wake_coalesce(const zr_socket *s)
{
	return atomic_load_explicit(&s->wake_coalesce_us, memory_order_relaxed);
}

void
zr__sock_io_term(zr_socket *s)
{
	/* Blocked calls in app threads wake and see -ETERM. */
	atomic_store(&s->closed, 1);
	sock_signal(s->efd_rx);
	sock_signal(s->efd_tx);
	if (!s->io_closing) {
		struct zr__cmd close_cmd = {.type = ZR__CMD_CLOSE, .sock = s};

		zr__sock_io_command(s, &close_cmd);
	}
}

int
zr__sock_subscribe(zr_socket *s, bool subscribe, const void *topic, size_t len)
{
	return sock_subscribe(s, subscribe ? ZR__CMD_SUBSCRIBE : ZR__CMD_UNSUBSCRIBE, topic, len);
}

uint64_t
zr__sock_deadline(int flags, int timeout_ms)
{
	return sock_deadline(flags, timeout_ms);
}

int
zr__sock_wait(zr_socket *s, int fd, uint64_t deadline)
{
	return sock_wait(s, fd, deadline);
}

void
zr__sock_signal(int fd)
{
	sock_signal(fd);
}

void
zr__sock_drain(int fd)
{
	sock_drain_fd(fd);
}
