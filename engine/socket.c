/*
 * Sockets: the app-facing calls (send, receive, options, bind, connect,
 * close) and, on the io thread, routing by socket type (RFC 28-31):
 *
 *   PUSH, DEALER, REQ   round-robin over peers with room; none: the send waits
 *   PAIR                the one peer
 *   ROUTER, REP         frame 0 names the peer; unknown or full: dropped
 *   PUB, XPUB           every peer whose subscriptions match frame 0; a full
 *                       peer's copy is dropped (RFC 29, libzmq's default)
 *   XSUB                subscriptions (0x01/0x00 + topic) and messages to all
 *
 * REQ and REP are DEALER and ROUTER with the envelope kept on the app side:
 * REQ adds the empty delimiter and takes one reply, only from the peer it
 * asked; REP keeps the envelope of the request it answers.
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
 * 256 octets of buffer: ~384 KiB per direction at worst). */
#define SOCK_SPARE_MAX 1024

static int
sock_queues(struct zr_socket *s)
{
	int rc;

	size_t tx_cap = s->opt.sndhwm > 0 ? (size_t)s->opt.sndhwm : 1024;

	if (s->queues_ready)
		return 0;
	/* The app -> io handoff. Types that wait for room (PUSH, DEALER, ...)
	 * get SNDHWM slots, so what waits there stays near libzmq's bound. PUB,
	 * XPUB and ROUTER never wait: their limit is each peer's own queue, and
	 * the io thread empties the handoff at once, so it only has to absorb a
	 * burst between two turns of the loop. */
	if ((s->type == ZR_PUB || s->type == ZR_XPUB || s->type == ZR_ROUTER) && tx_cap < 1024)
		tx_cap = 1024;
	/* A direction the type never uses gets the smallest rings: an idle PUSH
	 * or PULL is ~16 KiB smaller (each ring of 1024 is 8 KiB). PUSH and PUB
	 * hand the app nothing (a PUB's subscriptions stay on the io thread);
	 * PULL and SUB send nothing (subscriptions travel as commands). */
	size_t rx_cap = s->opt.rcvhwm > 0 ? (size_t)s->opt.rcvhwm : 1024, rx_spare = SOCK_SPARE_MAX,
	       tx_spare = SOCK_SPARE_MAX;

	if (s->type == ZR_PUSH || s->type == ZR_PUB)
		rx_cap = rx_spare = 1;
	if (s->type == ZR_PULL || s->type == ZR_SUB)
		tx_cap = tx_spare = 1;
	rc = zr__spsc_init(&s->tx, tx_cap);
	if (rc < 0)
		return rc;
	rc = zr__spsc_init(&s->rx, rx_cap);
	if (rc == 0)
		rc = zr__spsc_init(&s->rx_spare, rx_spare);
	if (rc == 0)
		rc = zr__spsc_init(&s->tx_spare, tx_spare);
	if (rc < 0) {
		zr__spsc_fini(&s->tx);
		zr__spsc_fini(&s->rx);
		zr__spsc_fini(&s->rx_spare);
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
	int timeout = -1;

	if (atomic_load(&s->ctx->terminating))
		return -ETERM;
	if (deadline != UINT64_MAX) {
		uint64_t now = zr__now_ms();

		if (now >= deadline)
			return -EAGAIN;
		timeout = (int)(deadline - now);
	}
	if (poll(p, cancel_fd >= 0 ? 2 : 1, timeout) == 0)
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
	struct zr_socket *s;
	struct zr__cmd *cmd;

	switch (type) {
	case ZR_PAIR: case ZR_PUB: case ZR_SUB: case ZR_REQ: case ZR_REP: case ZR_DEALER:
	case ZR_ROUTER: case ZR_PULL: case ZR_PUSH: case ZR_XPUB: case ZR_XSUB:
		break;
	default:
		return -EINVAL;
	}
	/* Aligned for its cache-line groups (see struct zr_socket). */
	s = aligned_alloc(_Alignof(struct zr_socket), sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	memset(s, 0, sizeof *s);
	s->ctx = ctx;
	s->type = type;
	s->opt = (struct zr__options){
		.sndhwm = 1000, .rcvhwm = 1000, .linger_ms = -1, .sndtimeo_ms = -1, .rcvtimeo_ms = -1,
		.reconnect_ivl_ms = 100, .handshake_ivl_ms = 30000,
		.maxmsgsize = (int64_t)ZR_ZMTP_DEFAULT_MAX_MSG_SIZE,
		.sndbytes = SOCK_BYTES_DEFAULT, .rcvbytes = SOCK_BYTES_DEFAULT,
		.conns_max = ZR_CONNS_MAX_DEFAULT,
		.subs_max = SOCK_SUBS_MAX_DEFAULT, .subs_maxbytes = SOCK_SUBS_MAXBYTES_DEFAULT,
		.maxframes = (int)ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES,
	};
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
	pthread_mutex_init(&s->rid_lock, NULL);
	zr__monitor_init(&s->mon);
	cmd = sock_cmd(s, ZR__CMD_OPEN, 0);
	if (cmd == NULL) {
		close(s->efd_rx);
		close(s->efd_tx);
		free(s);
		return -ENOMEM;
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

/* see zring.h */
int
zr_bind(zr_socket *s, const char *endpoint)
{
	struct zr__endpoint ep;
	struct zr__cmd *cmd;
	int rc = zr__endpoint_parse(endpoint, true, s->opt.ipv6, &ep), fd;

	if (rc < 0)
		return rc;
	rc = sock_mechanism_check(&s->opt);
	if (rc < 0)
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
	zr__endpoint_local(fd, ep.transport, s->last_endpoint, sizeof s->last_endpoint);
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
	rc = sock_mechanism_check(&s->opt);
	if (rc < 0)
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

/* REQ/REP envelope work before a send; undone if the send fails. */
static int
sock_send_prepare(zr_socket *s, zr_msg *m, uint32_t *added)
{
	*added = 0;
	switch (s->type) {
	case ZR_PULL:
	case ZR_SUB:
		return -ENOTSUP;
	case ZR_REQ:
		if (s->req_waiting)
			return -EFSM;
		*added = 1;
		return zr__msg_push_front(m, "", 0);
	case ZR_REP:
		if (!s->rep_has_request)
			return -EFSM;
		for (size_t i = s->rep_envelope->nframes; i-- > 0;) {
			size_t len;
			const void *f = zr_msg_frame(s->rep_envelope, i, &len);
			int rc = zr__msg_push_front(m, f, len);

			if (rc < 0) {
				zr__msg_drop_front(m, *added);
				*added = 0;
				return rc;
			}
			(*added)++;
		}
		return 0;
	default:
		return 0;
	}
}

static void
sock_send_done(zr_socket *s)
{
	if (s->type == ZR_REQ) {
		s->req_waiting = true;
	} else if (s->type == ZR_REP) {
		s->rep_has_request = false;
		zr_msg_free(s->rep_envelope);
		s->rep_envelope = NULL;
	}
}

/* ROUTER_MANDATORY: is frame 0 the routing id of a connected peer? */
static bool
sock_rid_known(zr_socket *s, const zr_msg *m)
{
	size_t len;
	const uint8_t *id = zr_msg_frame(m, 0, &len);
	bool found = false;

	pthread_mutex_lock(&s->rid_lock);
	for (size_t i = 0; i < s->nrids && !found; i++)
		found = s->rids[i].len == len && memcmp(s->rids[i].id, id, len) == 0;
	pthread_mutex_unlock(&s->rid_lock);
	return found;
}

static bool
sock_blocks_without_peer(const zr_socket *s)
{
	return s->type == ZR_PUSH || s->type == ZR_DEALER || s->type == ZR_REQ || s->type == ZR_PAIR;
}

/*
 * A byte budget between two threads (SNDBYTES on tx, RCVBYTES on rx): the
 * producer's running total `given`, its copy `seen` of the consumer's
 * running total `taken`. Room for len more bytes within budget (<= 0: no limit),
 * and a queue holding no bytes takes any one message. Judged on the bytes
 * alone; `taken` is read only when the copy says the budget is reached.
 */
static bool
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
static bool
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

static int
sock_send(zr_socket *s, zr_msg **msg, uint64_t deadline, int cancel_fd)
{
	uint32_t added;
	zr_msg *m = *msg;
	int rc;

	if (m == NULL || m->nframes == 0)
		return -EINVAL;
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	if (s->type == ZR_ROUTER && s->opt.router_mandatory && !sock_rid_known(s, m))
		return -EHOSTUNREACH;
	rc = sock_send_prepare(s, m, &added);
	if (rc < 0)
		return rc;
	for (;;) {
		/* Types that never drop wait while there is no peer at all, as
		 * libzmq's do while they have no pipe: a bound PUSH with nobody
		 * connected blocks (and times out) instead of queueing. */
		if (sock_blocks_without_peer(s) && atomic_load(&s->npipes) == 0) {
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

/* REQ/REP envelope work after a receive. Returns false to drop the message. */
static int
sock_recv_finish(zr_socket *s, zr_msg *m)
{
	size_t len;

	if (s->type == ZR_REQ) {
		/* Only an answer to the request we have out, behind its delimiter. */
		if (!s->req_waiting || m->nframes < 2 || (zr_msg_frame(m, 0, &len), len != 0))
			return 0;
		zr__msg_drop_front(m, 1);
		s->req_waiting = false;
		return 1;
	}
	if (s->type == ZR_REP) {
		uint32_t delim = 1;
		zr_msg *env;

		while (delim < m->nframes && (zr_msg_frame(m, delim, &len), len != 0))
			delim++;
		if (delim >= m->nframes || zr_msg_new(&env) < 0)
			return 0;
		for (uint32_t i = 0; i <= delim; i++) {
			const void *f = zr_msg_frame(m, i, &len);

			if (zr_msg_add(env, f, len) < 0) {
				zr_msg_free(env);
				return 0;
			}
		}
		zr__msg_drop_front(m, delim + 1);
		s->rep_envelope = env;
		s->rep_has_request = true;
		return 1;
	}
	return 1;
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
	if (!zr__msg_recycle(m) || !zr__spsc_push(&s->rx_spare, m))
		zr_msg_free(m);
	return own;
}

static int
sock_recv(zr_socket *s, zr_msg **msg, int flags, bool own)
{
	uint64_t deadline = sock_deadline(flags, s->opt.rcvtimeo_ms);
	zr_msg *m;
	int rc;

	if (s->type == ZR_PUSH || s->type == ZR_PUB)
		return -ENOTSUP;
	if ((s->type == ZR_REQ && !s->req_waiting) || (s->type == ZR_REP && s->rep_has_request))
		return -EFSM;
	rc = sock_queues(s);
	if (rc < 0)
		return rc;
	for (;;) {
		m = zr__spsc_pop(&s->rx);
		if (m == NULL) {
			/* A caller polling zr_socket_fd returns here with -EAGAIN: clear
			 * the wake it came for before re-arming, or the fd would stay
			 * readable and its poll would spin. (A blocking wait clears it
			 * after poll.) */
			if (deadline == 0)
				sock_drain_fd(s->efd_rx);
			atomic_store(&s->rx_armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			m = zr__spsc_pop(&s->rx);
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
			size_t cost = zr__msg_cost(m);

			atomic_store_explicit(&s->rx_taken,
			                      atomic_load_explicit(&s->rx_taken, memory_order_relaxed) + cost,
			                      memory_order_release);
			/* A paused connection goes on once half of rx is free. */
			if (atomic_load_explicit(&s->rx_paused, memory_order_relaxed) &&
			    zr__spsc_count(&s->rx) <= s->rx_resume_at)
				zr__ctx_dirty(s->ctx, s);
			if (!sock_recv_finish(s, m)) {
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
enum sock_role { SOCK_CALL_OTHER, SOCK_CALL_TX, SOCK_CALL_RX };

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
	sock_call_enter(s, SOCK_CALL_TX);
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
zr_monitor_recv(zr_socket *s, struct zr_event *ev, int timeout_ms)
{
	sock_call_enter(s, SOCK_CALL_OTHER);
	return sock_call_leave(s, SOCK_CALL_OTHER, zr__monitor_recv(s, ev, timeout_ms));
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
	rc = m != NULL ? 0 : zr_msg_new(&m);
	if (rc == 0)
		rc = zr_msg_add(m, data, len);
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
	rc = sock_recv(s, &m, flags, false);
	if (rc < 0)
		return sock_call_leave(s, SOCK_CALL_RX, rc);
	f = zr_msg_frame(m, 0, &len);
	memcpy(buf, f, len < cap ? len : cap);
	/* Back to the io thread for the next message, rather than a free here
	 * of what that thread allocated. */
	if (!zr__msg_recycle(m) || !zr__spsc_push(&s->rx_spare, m))
		zr_msg_free(m);
	return sock_call_leave(s, SOCK_CALL_RX, len > INT32_MAX ? INT32_MAX : (int)len);
}

/* see zring.h */
int
zr_socket_fd(zr_socket *s)
{
	return s->efd_rx;
}

static int
sock_subscribe(zr_socket *s, int type, const void *v, size_t len)
{
	struct zr__cmd *cmd;

	if (s->type != ZR_SUB && s->type != ZR_XSUB)
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
}

/* A raw subscription frame for c's protocol version: the topic from topic,
 * or (topic NULL) from what h holds. */
static zr_msg *
sock_sub_msg(const struct zr__conn *c, bool subscribe, const uint8_t *topic, size_t len,
             const struct zr__subs_hold *h)
{
	uint8_t prefix[ZR_ZMTP_SUB_PREFIX_MAX];
	int n = zr_zmtp_sub_prefix(prefix, zr_zmtp_peer_minor(&c->z), subscribe, len);
	zr_msg *m;

	if (n < 0 || zr_msg_new(&m) < 0)
		return NULL;
	if (zr__msg_reserve(m, (size_t)n + len) < 0) {
		zr_msg_free(m);
		return NULL;
	}
	memcpy(m->data, prefix, (size_t)n);
	if (topic == NULL)
		zr__subs_topic(h, m->data + n);
	else if (len > 0)
		memcpy(m->data + n, topic, len);
	m->len = (size_t)n + len;
	m->raw = true;
	return m;
}

static void
sock_send_sub(struct zr__conn *c, bool subscribe, const uint8_t *topic, size_t len,
              const struct zr__subs_hold *h)
{
	zr_msg *m = sock_sub_msg(c, subscribe, topic, len, h);

	/* Forced past SNDHWM: subscriptions are never dropped by the data HWM
	 * (libzmq loses them on reconnect, #2258). */
	if (m != NULL && !zr__conn_send(c, m, true))
		zr__msg_unref(m);
}

static struct zr__conn *
sock_next_ready(struct zr_socket *s)
{
	struct zr__conn *start = s->rr != NULL && s->rr->next != NULL ? s->rr->next : s->conns;
	struct zr__conn *c = start;

	if (c == NULL)
		return NULL;
	do {
		if (zr__conn_has_room(c))
			return c;
		c = c->next != NULL ? c->next : s->conns;
	} while (c != start);
	return NULL;
}

/* The active connection with routing id rid, other than except. */
static struct zr__conn *
sock_find_rid(struct zr_socket *s, const void *rid, size_t len, const struct zr__conn *except)
{
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c != except && c->state == ZR__CONN_ACTIVE && c->rid_len == len &&
		    memcmp(c->rid, rid, len) == 0)
			return c;
	}
	return NULL;
}

/* SUB/XSUB: our own filter, counted; the wire hears only a change. The app
 * sets it, so no limit applies. */
static void
sock_xsub_subscription(struct zr_socket *s, bool subscribe, const uint8_t *t, size_t len)
{
	int rc = subscribe ? zr__subs_add(&s->subs, &s->subs_self, t, len, SIZE_MAX, SIZE_MAX)
	                   : zr__subs_remove(&s->subs, &s->subs_self, t, len);

	if (rc <= 0 || (subscribe ? !(rc & ZR__SUBS_NEW_OWNER) : !(rc & ZR__SUBS_GONE_OWNER)))
		return;
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state == ZR__CONN_ACTIVE)
			sock_send_sub(c, subscribe, t, len, NULL);
	}
}

static struct zr__conn *
sock_conn_of_subs(struct zr__subs_owner *o)
{
	return (struct zr__conn *)((char *)o - offsetof(struct zr__conn, subs));
}

/*
 * PUB/XPUB: a copy to every subscriber whose subscriptions match frame 0,
 * found by one walk of the socket's trie (its cost grows with frame 0 and
 * the matching prefixes' holders, not with the topics subscribed).
 * A matching subscriber with a full queue is handled by ZR_PUB_POLICY; one
 * that does not match never holds the publisher back, whatever its state.
 */
static bool
sock_route_fanout(struct zr_socket *s, zr_msg *m)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);
	int policy = s->opt.pub_policy;
	struct zr__subs_owner *hit = zr__subs_collect(&s->subs, f0, len), *o, *next;
	struct zr__conn *c;

	if (policy == ZR_PUB_BLOCK) {
		/* Lossless: all or nothing, so a retry never duplicates. */
		for (o = hit; o != NULL; o = o->match_next) {
			c = sock_conn_of_subs(o);
			if (c->state == ZR__CONN_ACTIVE && !zr__conn_has_room(c))
				return false;
		}
	}
	bool matched = false;

	/* Nothing below changes the trie (a kick-out closes on a later turn),
	 * so the collected list stays valid. */
	for (o = hit; o != NULL; o = next) {
		bool room;

		next = o->match_next;
		c = sock_conn_of_subs(o);
		if (c->state != ZR__CONN_ACTIVE)
			continue;
		matched = true;
		room = zr__conn_has_room(c);
		if (!room && policy == ZR_PUB_DROP_OLD)
			room = zr__conn_drop_oldest(c);
		if (!room) {
			if (policy == ZR_PUB_DISCONNECT)
				zr__conn_kick_out(c);
			continue; /* DROP_NEW: this subscriber misses this message */
		}
		m->refs++;
		if (!zr__conn_send(c, m, true))
			m->refs--;
	}
	if (!matched)
		atomic_fetch_add_explicit(&s->unmatched, 1, memory_order_relaxed);
	zr__msg_unref(m);
	return true;
}

/* Routes one message; false when it must wait for room (PUSH-like types). */
static bool
sock_route(struct zr_socket *s, zr_msg *m)
{
	struct zr__conn *c;
	size_t len;
	const uint8_t *f0;

	switch (s->type) {
	case ZR_PUSH:
	case ZR_DEALER:
	case ZR_REQ:
	case ZR_PAIR:
		c = sock_next_ready(s);
		if (c == NULL)
			return false;
		s->rr = c;
		if (s->type == ZR_REQ)
			s->req_peer = c;
		zr__conn_send(c, m, false);
		return true;
	case ZR_ROUTER:
	case ZR_REP:
		f0 = zr_msg_frame(m, 0, &len);
		c = sock_find_rid(s, f0, len, NULL);
		if (c == NULL || !zr__conn_has_room(c)) {
			zr__msg_unref(m); /* unknown or full peer: dropped (RFC 28) */
			return true;
		}
		zr__msg_drop_front(m, 1);
		zr__conn_send(c, m, false);
		return true;
	case ZR_PUB:
	case ZR_XPUB:
		return sock_route_fanout(s, m);
	case ZR_XSUB:
		f0 = zr_msg_frame(m, 0, &len);
		if (m->nframes == 1 && len >= 1 && (f0[0] == 0 || f0[0] == 1)) {
			sock_xsub_subscription(s, f0[0] == 1, f0 + 1, len - 1);
			zr__msg_unref(m);
			return true;
		}
		for (c = s->conns; c != NULL; c = c->next) {
			if (c->state != ZR__CONN_ACTIVE)
				continue;
			m->refs++;
			if (!zr__conn_send(c, m, false))
				m->refs--;
		}
		zr__msg_unref(m);
		return true;
	default:
		zr__msg_unref(m);
		return true;
	}
}

static void
sock_route_pending(struct zr_socket *s)
{
	uint64_t taken = 0;
	bool any = false;

	if (!s->queues_ready)
		return;
	for (;;) {
		zr_msg *m = s->pending;

		if (m == NULL) {
			m = zr__spsc_pop(&s->tx);
			if (m == NULL)
				break;
			taken += zr__msg_cost(m);
			any = true;
		}
		s->pending = NULL;
		if (!sock_route(s, m)) {
			s->pending = m;
			break;
		}
	}
	/* Once per drain, not per message: the byte count and the fence in
	 * sock_tx_taken are shared with the sending thread (perf: they were
	 * ~10% of a 64 B sender). */
	if (taken > 0)
		atomic_store_explicit(&s->tx_taken,
		                      atomic_load_explicit(&s->tx_taken, memory_order_relaxed) + taken,
		                      memory_order_release);
	/* A sender blocked on a full handoff sleeps until it is half empty,
	 * not until one slot frees: ~8k sleep/wake rounds per million 64 B
	 * messages otherwise. Every drain ends here, so a queue that empties
	 * further always reaches the mark. */
	if (any && zr__spsc_count(&s->tx) <= zr__spsc_cap(&s->tx) / 2)
		sock_tx_taken(s);
}

static bool sock_xpub_flush(struct zr_socket *s);
static void sock_xpub_wait(struct zr_socket *s);
static void sock_xpub_lost(struct zr_socket *s, struct zr__conn *c);

void
zr__sock_io_dirty(struct zr_socket *s)
{
	/* Room in rx: let the paused connections go on (each re-pauses if it
	 * fills the queue again). Clear the flag first so a pause that happens
	 * now sets it again. */
	if (atomic_exchange(&s->rx_paused, 0)) {
		/* A lost subscriber's cancels go first: they are older than any
		 * notice a paused connection offers again. */
		if (s->xpub_pending_n > 0 && !sock_xpub_flush(s))
			sock_xpub_wait(s);
		for (struct zr__conn *c = s->conns, *next; c != NULL; c = next) {
			next = c->next;
			if (c->rx_paused)
				zr__conn_resume(c);
		}
	}
	sock_route_pending(s);
}

/* io thread: into the app's queue, within RCVHWM and RCVBYTES. */
static bool
sock_rx_push(struct zr_socket *s, zr_msg *m)
{
	size_t peak = atomic_load_explicit(&s->rx_peak, memory_order_relaxed);
	size_t limit = s->opt.rcvhwm > 0 ? (size_t)s->opt.rcvhwm : SIZE_MAX;
	/* From our cached view of the app's progress, exact at the limits that
	 * matter (HWM, a new peak): the line the app writes per message is read
	 * only then. */
	size_t queued = zr__spsc_count_upto(&s->rx, limit < peak ? limit : peak);

	if (atomic_load_explicit(&s->rx_hold, memory_order_relaxed))
		return false; /* the owner stopped reading (a closing subscription) */
	/* Exactly RCVHWM (the ring itself rounds up to a power of two). */
	if (queued >= limit)
		return false;
	/* Within RCVBYTES, judged on the bytes, never on the cached count,
	 * which may still say "not empty" when the app has taken everything:
	 * a message over the budget would then wait for a wake nobody sends. */
	size_t len = zr__msg_cost(m); /* once pushed, m is the app's (it may be gone) */

	if (!sock_budget_room(s->opt.rcvbytes, s->rx_given, &s->rx_taken_seen, &s->rx_taken, len))
		return false;

	if (!zr__spsc_push(&s->rx, m))
		return false;
	s->rx_given += len;
	if (queued + 1 > peak)
		atomic_store_explicit(&s->rx_peak, queued + 1, memory_order_relaxed);
	s->rx_unsignalled = true; /* the wake waits for zr__sock_rx_flush */
	return true;
}

void
zr__sock_rx_flush(struct zr_socket *s)
{
	if (!s->rx_unsignalled)
		return;
	s->rx_unsignalled = false;
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
zr__sock_msg_new(struct zr_socket *s, zr_msg **m)
{
	*m = zr__spsc_pop(&s->rx_spare);
	return *m != NULL ? 0 : zr_msg_new(m);
}

void
zr__sock_msg_sent(struct zr_socket *s, zr_msg *m)
{
	if (m == NULL || --m->refs > 0)
		return;
	m->refs = 1;
	if (!zr__msg_recycle(m) || !zr__spsc_push(&s->tx_spare, m))
		zr_msg_free(m);
}

int
zr__sock_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);
	int rc = 1;

	switch (s->type) {
	case ZR_PUB:
	case ZR_XPUB:
		/* ZMTP 3.0 subscriptions arrive as messages: 0x01/0x00 + topic. */
		if (m->nframes == 1 && len >= 1 && (f0[0] == 0 || f0[0] == 1))
			rc = zr__sock_subscription(s, c, f0[0] == 1, f0 + 1, len - 1);
		if (rc != 0)
			zr_msg_free(m);
		return rc;
	case ZR_SUB:
		if (!zr__subs_match(&s->subs, f0, len)) {
			zr_msg_free(m);
			return 1;
		}
		break;
	case ZR_REQ:
		if (c != s->req_peer) {
			zr_msg_free(m); /* RFC 28: only from the peer we asked */
			return 1;
		}
		break;
	case ZR_PUSH:
		zr_msg_free(m);
		return 1;
	default:
		break;
	}
	return sock_rx_push(s, m) ? 1 : 0;
}

/*
 * XPUB: the app hears a subscribe only when the topic is new for the socket
 * and a cancel only when its last holder goes (libzmq's rule; XPUB_VERBOSE:
 * every subscribe, XPUB_VERBOSER: every cancel of a held subscription too).
 * A cancel for a topic the peer does not hold is ignored, so a peer can
 * never cancel a topic upstream for the others (libzmq passes it on).
 *
 * A notice is never dropped: when rx has no room, the connection that sent
 * the (un)subscribe pauses with it (nothing applied) and offers it again
 * when the app reads. A lost connection cannot pause, so its cancels wait
 * in s->xpub_pending, oldest first, and every later notice waits behind
 * them. The list is bounded by what the lost connections held: each pending
 * cancel is a subscription one of them held (charged to it within
 * SUBS_MAX / SUBS_MAXBYTES: a notice costs less than the entry's charge),
 * and while the list is not empty no topic can get its first holder (that
 * takes a notice, which waits behind the list; with XPUB_VERBOSE(R) every
 * subscribe does). So the list holds at most one cancel per topic held when
 * it began (VERBOSER: one per holding then), whatever peers come and go.
 */

/* The 3.0-form notice: the flag, then the topic (from topic, or h's). */
static zr_msg *
sock_xpub_notice(bool subscribe, const uint8_t *topic, size_t len, const struct zr__subs_hold *h)
{
	uint8_t flag = subscribe ? 1 : 0;
	zr_msg *m;

	if (zr_msg_new(&m) < 0)
		return NULL;
	if (zr__msg_frame_begin(m, len + 1) < 0) {
		zr_msg_free(m);
		return NULL;
	}
	zr__msg_frame_append(m, &flag, 1);
	if (topic != NULL) {
		zr__msg_frame_append(m, topic, len);
	} else {
		zr__subs_topic(h, m->data + m->len);
		m->len += len;
		m->frames[0].len += len;
	}
	return m;
}

/* Pending cancels into rx while it has room; true when none is left. */
static bool
sock_xpub_flush(struct zr_socket *s)
{
	bool pushed = false;

	while (s->xpub_pending_n > 0) {
		if (!sock_rx_push(s, s->xpub_pending[s->xpub_pending_head]))
			break;
		pushed = true;
		s->xpub_pending_head = (s->xpub_pending_head + 1) % s->xpub_pending_cap;
		s->xpub_pending_n--;
	}
	if (pushed)
		zr__sock_rx_flush(s);
	return s->xpub_pending_n == 0;
}

/* Pending cancels wait for room: the app's next read must wake us (as a
 * paused connection's, conn.c), and room made before the flag is seen. */
static void
sock_xpub_wait(struct zr_socket *s)
{
	atomic_store(&s->rx_paused, 1);
	atomic_thread_fence(memory_order_seq_cst);
	(void)sock_xpub_flush(s);
}

static void
sock_xpub_pend(struct zr_socket *s, zr_msg *m)
{
	if (s->xpub_pending_n == s->xpub_pending_cap) {
		size_t cap = s->xpub_pending_cap ? s->xpub_pending_cap * 2 : 16;
		zr_msg **v = malloc(cap * sizeof *v);

		if (v == NULL) {
			zr_msg_free(m); /* out of memory: the one way a notice is lost */
			return;
		}
		for (size_t i = 0; i < s->xpub_pending_n; i++)
			v[i] = s->xpub_pending[(s->xpub_pending_head + i) % s->xpub_pending_cap];
		free(s->xpub_pending);
		s->xpub_pending = v;
		s->xpub_pending_cap = cap;
		s->xpub_pending_head = 0;
	}
	s->xpub_pending[(s->xpub_pending_head + s->xpub_pending_n) % s->xpub_pending_cap] = m;
	s->xpub_pending_n++;
}

/* Tells the app; 1, 0 when rx (or an older pending cancel) leaves no room,
 * -ENOMEM. */
static int
sock_xpub_tell(struct zr_socket *s, bool subscribe, const uint8_t *topic, size_t len)
{
	zr_msg *m;

	if (s->xpub_pending_n > 0 && !sock_xpub_flush(s))
		return 0;
	m = sock_xpub_notice(subscribe, topic, len, NULL);
	if (m == NULL)
		return -ENOMEM;
	if (!sock_rx_push(s, m)) {
		zr_msg_free(m);
		return 0;
	}
	return 1;
}

static void
sock_xpub_lost(struct zr_socket *s, struct zr__conn *c)
{
	for (const struct zr__subs_hold *h = c->subs.held; h != NULL; h = zr__subs_next(h)) {
		zr_msg *m;

		if (!zr__subs_sole(h) && s->opt.xpub_verbose < 2)
			continue;
		m = sock_xpub_notice(false, NULL, zr__subs_topic(h, NULL), h);
		if (m == NULL)
			continue; /* out of memory */
		if (s->xpub_pending_n > 0 || !sock_rx_push(s, m))
			sock_xpub_pend(s, m);
	}
	zr__sock_rx_flush(s);
	if (s->xpub_pending_n > 0)
		sock_xpub_wait(s);
}

/* The limit c went over, in words, for its DISCONNECTED event. */
static void
sock_subs_over(struct zr_socket *s, struct zr__conn *c)
{
	const char *peer = c->peer_addr[0] ? c->peer_addr : "the peer";

	if (s->opt.subs_max >= 0 && c->subs.n >= (size_t)s->opt.subs_max)
		snprintf(c->drop_why, sizeof c->drop_why, "%s: subscriptions over SUBS_MAX (%d)",
		         peer, s->opt.subs_max);
	else
		snprintf(c->drop_why, sizeof c->drop_why,
		         "%s: subscriptions over SUBS_MAXBYTES (%lld bytes, %zu held)", peer,
		         (long long)s->opt.subs_maxbytes, c->subs.n);
}

int
zr__sock_subscription(struct zr_socket *s, struct zr__conn *c, bool subscribe, const uint8_t *topic,
                      size_t len)
{
	const struct zr__options *o = &s->opt;
	bool xpub = s->type == ZR_XPUB;
	int rc, told;

	if (s->type != ZR_PUB && !xpub)
		return 1;
	if (!subscribe) {
		rc = zr__subs_peek_remove(&s->subs, &c->subs, topic, len);
		if (rc == 0)
			return 1; /* not held: nothing to undo, nothing to tell */
		if (xpub && ((rc & ZR__SUBS_GONE_TRIE) || o->xpub_verbose == 2)) {
			told = sock_xpub_tell(s, false, topic, len);
			if (told <= 0)
				return told;
		}
		(void)zr__subs_remove(&s->subs, &c->subs, topic, len);
		return 1;
	}
	rc = zr__subs_add(&s->subs, &c->subs, topic, len,
	                  o->subs_max >= 0 ? (size_t)o->subs_max : SIZE_MAX,
	                  o->subs_maxbytes >= 0 && (uint64_t)o->subs_maxbytes < SIZE_MAX
	                          ? (size_t)o->subs_maxbytes
	                          : SIZE_MAX);
	if (rc == -EDQUOT)
		sock_subs_over(s, c);
	if (rc < 0)
		return rc;
	if (xpub && ((rc & ZR__SUBS_NEW_TRIE) || o->xpub_verbose >= 1)) {
		told = sock_xpub_tell(s, true, topic, len);
		if (told <= 0) {
			/* Undone, to be offered again with room (or c closes). */
			(void)zr__subs_remove(&s->subs, &c->subs, topic, len);
			return told;
		}
	}
	return 1;
}

/* io thread: publish or withdraw a ROUTER peer's id for ROUTER_MANDATORY. */
static void
sock_rid_publish(struct zr_socket *s, const struct zr__conn *c, bool add)
{
	pthread_mutex_lock(&s->rid_lock);
	if (add) {
		if (s->nrids == s->rids_cap) {
			size_t cap = s->rids_cap ? s->rids_cap * 2 : 16;
			struct zr__rid *v = realloc(s->rids, cap * sizeof *v);

			if (v != NULL) {
				s->rids = v;
				s->rids_cap = cap;
			}
		}
		if (s->nrids < s->rids_cap) {
			s->rids[s->nrids].len = (uint8_t)c->rid_len;
			memcpy(s->rids[s->nrids].id, c->rid, c->rid_len);
			s->nrids++;
		}
	} else {
		for (size_t i = 0; i < s->nrids; i++) {
			if (s->rids[i].len == c->rid_len && memcmp(s->rids[i].id, c->rid, c->rid_len) == 0) {
				s->rids[i] = s->rids[--s->nrids];
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->rid_lock);
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

/*
 * A routing id for a peer without a usable one of its own: 0x00 and four
 * random octets, libzmq's shape (RFC 37 reserves the 0x00 prefix for this).
 * Random, not counted: a broker writes a requester's id into the reply-to
 * address its responders see, and a sequential id would let one requester
 * name another's. Drawn once per connection, never twice alike among the
 * peers present.
 */
static void
sock_rid_generate(struct zr_socket *s, struct zr__conn *c)
{
	do {
		if (getrandom(c->rid + 1, 4, GRND_NONBLOCK) != 4)
			randombytes_buf(c->rid + 1, 4); /* early boot: sodium waits for entropy */
		c->rid[0] = 0;
		c->rid_len = 5;
	} while (sock_find_rid(s, c->rid, c->rid_len, c) != NULL);
}

int
zr__sock_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	/* RFC 31: a PAIR talks to one peer; a second one is turned away. */
	if (s->type == ZR_PAIR && s->nconns_active > 0)
		return -EISCONN;
	if (s->type == ZR_ROUTER || s->type == ZR_REP) {
		/* The peer's Identity if it gave a usable one, else 0x00 + uint32
		 * as libzmq generates (RFC 37 reserves the 0x00 prefix for this). */
		if (c->rid_len == 0 || sock_find_rid(s, c->rid, c->rid_len, c) != NULL)
			sock_rid_generate(s, c);
	}
	if (s->type == ZR_ROUTER)
		sock_rid_publish(s, c, true);
	if (s->type == ZR_SUB || s->type == ZR_XSUB) {
		for (const struct zr__subs_hold *h = s->subs_self.held; h != NULL;
		     h = zr__subs_next(h))
			sock_send_sub(c, true, NULL, zr__subs_topic(h, NULL), h);
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
	s->nconns_active--;
	atomic_fetch_sub(&s->nready, 1);
	if (!c->connecter)
		sock_pipes_add(s, -1);
	if (s->type == ZR_ROUTER)
		sock_rid_publish(s, c, false);
	if (s->rr == c)
		s->rr = NULL;
	if (s->req_peer == c)
		s->req_peer = NULL;
	if (s->type == ZR_XPUB)
		sock_xpub_lost(s, c);
	/* A reconnected subscriber subscribes afresh. */
	zr__subs_drop(&s->subs, &c->subs);
}

void
zr__sock_conn_room(struct zr_socket *s, struct zr__conn *c)
{
	(void)c;
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
	struct zr__listener *l =
		(struct zr__listener *)((char *)t - offsetof(struct zr__listener, retry));
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
	struct zr__listener *l = (struct zr__listener *)op;
	struct zr_socket *s = l->sock;

	if (res >= 0) {
		struct zr__conn *c;

		l->backoff_ms = 0;
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
			memcpy(c->endpoint, l->endpoint, sizeof c->endpoint);
			zr__sock_event(s, ZR_EVENT_ACCEPTED, res, l->endpoint);
			zr__conn_start_accepted(c, res);
		}
	} else if (res != -ECANCELED && (sock_accept_transient(res) || zr__op_more(flags))) {
		zr__sock_event(s, ZR_EVENT_ACCEPT_FAILED, res, l->endpoint);
	}
	if (zr__op_more(flags))
		return;
	if (l->closing || s->io_closing || res == -ECANCELED) {
		l->closing = true;
		if (l->op.inflight == 0 && l->fd >= 0) {
			sock_listener_fd_closed(s, l);
		}
		return;
	}
	if (res < 0 && !sock_accept_transient(res)) {
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
	zr__endpoint_local(l->fd, l->transport, l->endpoint, sizeof l->endpoint);
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
	struct zr_socket *s = (struct zr_socket *)((char *)t - offsetof(struct zr_socket, close_timer));
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
	struct zr_socket *s = (struct zr_socket *)((char *)t - offsetof(struct zr_socket, linger_timer));

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
		zr__timer_start(sock_loop(s), &s->linger_timer, zr__now_ms() + (uint64_t)s->opt.linger_ms);
	zr__sock_close_kick(s);
}

void
zr__sock_io_command(struct zr_socket *s, struct zr__cmd *cmd)
{
	struct zr__conn *c;

	switch (cmd->type) {
	case ZR__CMD_BIND:
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
		zr__conn_start_connect(c);
		return;
	case ZR__CMD_SUBSCRIBE:
	case ZR__CMD_UNSUBSCRIBE:
		sock_xsub_subscription(s, cmd->type == ZR__CMD_SUBSCRIBE, cmd->data, cmd->len);
		return;
	case ZR__CMD_UNBIND:
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
	for (size_t i = 0; i < s->nlisten; i++) {
		zr__timer_stop(sock_loop(s), &ls[i]->retry);
		if (ls[i]->fd >= 0)
			close(ls[i]->fd);
		free(ls[i]);
	}
	free(ls);
	zr_msg_free(s->pending);
	if (s->queues_ready) {
		while ((m = zr__spsc_pop(&s->tx)) != NULL)
			zr_msg_free(m);
		while ((m = zr__spsc_pop(&s->rx)) != NULL)
			zr_msg_free(m);
		while ((m = zr__spsc_pop(&s->rx_spare)) != NULL)
			zr_msg_free(m);
		while ((m = zr__spsc_pop(&s->tx_spare)) != NULL)
			zr_msg_free(m);
		zr__spsc_fini(&s->tx);
		zr__spsc_fini(&s->rx);
		zr__spsc_fini(&s->rx_spare);
		zr__spsc_fini(&s->tx_spare);
	}
	for (; s->xpub_pending_n > 0; s->xpub_pending_n--) {
		zr_msg_free(s->xpub_pending[s->xpub_pending_head]);
		s->xpub_pending_head = (s->xpub_pending_head + 1) % s->xpub_pending_cap;
	}
	free(s->xpub_pending);
	zr__subs_drop(&s->subs, &s->subs_self);
	zr__subs_fini(&s->subs);
	zr_msg_free(s->rep_envelope);
	zr__monitor_fini(&s->mon);
	pthread_mutex_destroy(&s->rid_lock);
	free(s->rids);
	sock_eplist_free(&s->bound);
	sock_eplist_free(&s->connected);
	close(s->efd_rx);
	close(s->efd_tx);
	sodium_memzero(&s->opt, sizeof s->opt); /* PLAIN password, CURVE secret key */
	free(s);
}

/* ---- for the rest of the engine (sock.h) -------------------------------------- */

int
zr__sock_type(const zr_socket *s)
{
	return s->type;
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

/* A busy sender finds the flag still set from its last message: a read
 * (after the fence that orders its queue write before it) instead of a
 * locked exchange on a line the io thread writes once per drain. The io
 * thread clears the flag with an exchange before it drains
 * (zr__sock_dirty_pop), so either it sees our message or we see the flag
 * cleared. */
void
zr__ctx_dirty(struct zr_ctx *ctx, struct zr_socket *s)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->dirty, memory_order_relaxed) != 0)
		return;
	if (atomic_exchange(&s->dirty, 1) != 0)
		return; /* already queued: the io thread will look */
	zr__ctx_dirty_push(ctx, s);
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
