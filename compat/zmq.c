/*
 * zring's libzmq.so.5 drop-in: the zmq.h API on zring's public API.
 *
 * Only <zring/zring.h> is used, never the engine's internals, so this layer
 * shows what the public API can carry and where it falls short (README.md).
 *
 * The two models differ in three places, each bridged here:
 *
 *  - Frames. libzmq sends and receives one frame at a time (SNDMORE,
 *    RCVMORE); zring sends and receives whole messages. A socket gathers the
 *    frames of an outgoing message into one zr_msg and sends it with the
 *    last frame; an incoming zr_msg is held by the socket and handed out a
 *    frame at a time. A zmq_msg_t of a received frame points into that
 *    zr_msg and holds a reference on it, so receiving copies nothing.
 *
 *  - Readiness. zr_socket_fd turns readable when a message arrives after a
 *    receive found none. ZMQ_EVENTS therefore fetches ahead: with no frame
 *    in hand it tries a non-blocking zr_recv and keeps what it got, which is
 *    also what arms the fd when nothing came; POLLOUT is
 *    zr_socket_poll_events', which arms the same fd for when room comes.
 *    That makes ZMQ_FD the edge-triggered signal libzmq documents: it fires
 *    when the events may have changed, and the app reads ZMQ_EVENTS to
 *    learn what they are.
 *
 *  - Termination. libzmq's zmq_ctx_term waits until the app closes every
 *    socket, making blocking calls in other threads fail with ETERM;
 *    zr_ctx_free closes and frees the sockets itself. So this layer blocks
 *    on its own (a receive waits on zr_socket_fd and the context's
 *    termination eventfd; a send waits in short zr_send slices) and frees
 *    the zring context only once the app closed every socket.
 *
 * inproc:// is the engine's (messages handed over by pointer, no fd). This
 * layer adds what libzmq does beside it: a connect to a bound name is
 * complete when zmq_connect returns (zc_inproc_wait), and the monitor
 * reports no inproc events (zc_monitor_main).
 */
#define _GNU_SOURCE
#include "zmq.h"

#include <zring/zring.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define ZC_API __attribute__((visibility("default")))

#define ZC_CTX_MAGIC 0x7a63c7a1u
#define ZC_SOCK_MAGIC 0x7a63500cu
#define ZC_SOCK_DEAD 0xdeadd0c5u

/* A blocked zr_send waits at most this long before looking at termination. */
#define ZC_SEND_SLICE_MS 50

/* ---- small helpers ---------------------------------------------------------- */

static int
zc_fail(int err)
{
	errno = err;
	return -1;
}

/* A zring code (negative) as the errno a libzmq caller expects. */
static int
zc_fail_zr(int rc)
{
	return zc_fail(-zr_errno(rc));
}

static int64_t
zc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms left until deadline (-1: none); 0 once it passed. */
static int
zc_left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - zc_now_ms();
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static int64_t
zc_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : zc_now_ms() + timeout_ms;
}

/* ---- contexts --------------------------------------------------------------- */

#define ZC_GRAVE 64

struct zc_socket;

struct zc_ctx {
	uint32_t magic;
	zr_ctx *zr;
	pthread_mutex_t mu;
	pthread_cond_t closed; /* signalled when a socket closes */
	int nsockets;
	atomic_bool terminating;
	int term_fd; /* eventfd, written once at shutdown: readable for ever after */
	/* zmq_ctx_set values (see zmq_ctx_set for which take effect) */
	int io_threads;
	int max_sockets;
	int ipv6;
	int blocky;
	int max_msgsz;
	int thread_priority;
	int thread_sched_policy;
	/* closed sockets, freed late (see zc_bury) */
	struct zc_socket *grave[ZC_GRAVE];
	unsigned grave_next;
	/* inproc endpoints bound in this context (see zc_inproc_wait) */
	struct zc_bound *bound;
	size_t nbound, capbound;
};

struct zc_bound {
	uint64_t name; /* hash of the inproc name */
	struct zc_socket *s;
	int type; /* s's: a connect the engine refuses (types) does not wait */
};

static struct zc_ctx *
zc_ctx_of(void *p)
{
	struct zc_ctx *c = p;

	if (c == NULL || c->magic != ZC_CTX_MAGIC)
		return NULL;
	return c;
}

ZC_API void *
zmq_ctx_new(void)
{
	struct zc_ctx *c = calloc(1, sizeof *c);
	int rc;

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->term_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->term_fd < 0) {
		free(c);
		return NULL;
	}
	rc = zr_ctx_new(&c->zr);
	if (rc < 0) {
		close(c->term_fd);
		free(c);
		errno = -zr_errno(rc);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->closed, NULL);
	c->io_threads = ZMQ_IO_THREADS_DFLT;
	c->max_sockets = ZMQ_MAX_SOCKETS_DFLT;
	c->blocky = 1;
	c->max_msgsz = INT_MAX;
	c->thread_priority = ZMQ_THREAD_PRIORITY_DFLT;
	c->thread_sched_policy = ZMQ_THREAD_SCHED_POLICY_DFLT;
	c->magic = ZC_CTX_MAGIC;
	return c;
}

ZC_API void *
zmq_init(int io_threads)
{
	void *c;

	if (io_threads < 0) {
		errno = EINVAL;
		return NULL;
	}
	c = zmq_ctx_new();
	if (c != NULL)
		((struct zc_ctx *)c)->io_threads = io_threads;
	return c;
}

static bool
zc_terminating(const struct zc_ctx *c)
{
	return atomic_load_explicit(&c->terminating, memory_order_acquire);
}

/* Makes every blocking call of the context fail with ETERM, now and later. */
static void
zc_ctx_shutdown(struct zc_ctx *c)
{
	uint64_t one = 1;

	if (!atomic_exchange(&c->terminating, true))
		(void)!write(c->term_fd, &one, sizeof one);
}

ZC_API int
zmq_ctx_shutdown(void *ctx)
{
	struct zc_ctx *c = zc_ctx_of(ctx);

	if (c == NULL)
		return zc_fail(EFAULT);
	zc_ctx_shutdown(c);
	return 0;
}

ZC_API int
zmq_ctx_term(void *ctx)
{
	struct zc_ctx *c = zc_ctx_of(ctx);

	if (c == NULL)
		return zc_fail(EFAULT);
	zc_ctx_shutdown(c);
	pthread_mutex_lock(&c->mu);
	while (c->nsockets > 0)
		pthread_cond_wait(&c->closed, &c->mu);
	pthread_mutex_unlock(&c->mu);
	/* Every socket is closed: zr_ctx_free waits out their LINGER. */
	c->magic = 0;
	for (size_t i = 0; i < ZC_GRAVE; i++)
		free(c->grave[i]);
	free(c->bound);
	zr_ctx_free(c->zr);
	close(c->term_fd);
	pthread_cond_destroy(&c->closed);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}

ZC_API int
zmq_ctx_destroy(void *ctx)
{
	return zmq_ctx_term(ctx);
}

ZC_API int
zmq_term(void *ctx)
{
	return zmq_ctx_term(ctx);
}

/*
 * IO_THREADS, THREAD_PRIORITY, THREAD_SCHED_POLICY and the affinity and name
 * options are kept and read back but change nothing: a zring context has one
 * io thread. MAX_SOCKETS bounds zmq_socket, IPV6 is the default of new
 * sockets, BLOCKY 0 makes new sockets' LINGER 0, as libzmq.
 */
ZC_API int
zmq_ctx_set(void *ctx, int option, int v)
{
	struct zc_ctx *c = zc_ctx_of(ctx);
	int rc = 0;

	if (c == NULL)
		return zc_fail(EFAULT);
	pthread_mutex_lock(&c->mu);
	switch (option) {
	case ZMQ_IO_THREADS:
		if (v < 0)
			rc = EINVAL;
		else
			c->io_threads = v;
		break;
	case ZMQ_MAX_SOCKETS:
		if (v < 1)
			rc = EINVAL;
		else
			c->max_sockets = v;
		break;
	case ZMQ_THREAD_PRIORITY:
		c->thread_priority = v;
		break;
	case ZMQ_THREAD_SCHED_POLICY:
		c->thread_sched_policy = v;
		break;
	case ZMQ_THREAD_AFFINITY_CPU_ADD:
	case ZMQ_THREAD_AFFINITY_CPU_REMOVE:
		if (v < 0)
			rc = EINVAL;
		break;
	case ZMQ_MAX_MSGSZ:
		if (v < 0)
			rc = EINVAL;
		else
			c->max_msgsz = v;
		break;
	case ZMQ_IPV6:
		c->ipv6 = v != 0;
		break;
	case ZMQ_BLOCKY:
		c->blocky = v != 0;
		break;
	default:
		rc = EINVAL;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return rc != 0 ? zc_fail(rc) : 0;
}

ZC_API int
zmq_ctx_get(void *ctx, int option)
{
	struct zc_ctx *c = zc_ctx_of(ctx);
	int v;

	if (c == NULL)
		return zc_fail(EFAULT);
	pthread_mutex_lock(&c->mu);
	switch (option) {
	case ZMQ_IO_THREADS:
		v = c->io_threads;
		break;
	case ZMQ_MAX_SOCKETS:
		v = c->max_sockets;
		break;
	case ZMQ_SOCKET_LIMIT:
		v = 65535;
		break;
	case ZMQ_THREAD_SCHED_POLICY:
		v = c->thread_sched_policy;
		break;
	case ZMQ_MAX_MSGSZ:
		v = c->max_msgsz;
		break;
	case ZMQ_MSG_T_SIZE:
		v = (int)sizeof(zmq_msg_t);
		break;
	case ZMQ_IPV6:
		v = c->ipv6;
		break;
	case ZMQ_BLOCKY:
		v = c->blocky;
		break;
	default:
		v = -1;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	if (v == -1 && option != ZMQ_THREAD_SCHED_POLICY)
		return zc_fail(EINVAL);
	return v;
}

/* ---- messages -------------------------------------------------------------- */

/*
 * A body shared by several zmq_msg_t (zmq_msg_copy, or the frames of one
 * received message). The last reference frees it.
 */
enum zc_content_kind {
	ZC_HEAP, /* zmq_msg_init_size: the bytes follow the struct */
	ZC_EXT,  /* zmq_msg_init_data: the caller's bytes and free function */
	ZC_RX,   /* a received zr_msg: each frame's bytes lie in it */
};

struct zc_content {
	atomic_int refs;
	enum zc_content_kind kind;
	zmq_free_fn *ffn;
	void *hint;
	void *data;
	zr_msg *rx;
};

enum zc_msg_kind {
	ZC_MSG_CLOSED = 0, /* closed or never initialised */
	ZC_MSG_INLINE = 0x51,
	ZC_MSG_SHARED = 0x52, /* bytes in content */
	ZC_MSG_CONST = 0x53,  /* zmq_send_const / init_data without ffn: the caller's bytes */
};

#define ZC_MSG_MORE 1

struct zc_msg {
	unsigned char *data; /* SHARED and CONST; INLINE uses inl */
	size_t size;
	struct zc_content *content; /* SHARED only */
	uint8_t kind;
	uint8_t flags;
	unsigned char inl[64 - 3 * sizeof(void *) - 2];
};

_Static_assert(sizeof(struct zc_msg) <= sizeof(zmq_msg_t), "zmq_msg_t holds a zc_msg");
_Static_assert(_Alignof(struct zc_msg) <= _Alignof(zmq_msg_t), "zmq_msg_t aligns a zc_msg");

#define ZC_INLINE_MAX (sizeof(((struct zc_msg *)0)->inl))

static struct zc_msg *
zc_msg(zmq_msg_t *m)
{
	return (struct zc_msg *)(void *)m;
}

static const struct zc_msg *
zc_cmsg(const zmq_msg_t *m)
{
	return (const struct zc_msg *)(const void *)m;
}

static bool
zc_msg_valid(const struct zc_msg *m)
{
	return m != NULL &&
	       (m->kind == ZC_MSG_INLINE || m->kind == ZC_MSG_SHARED || m->kind == ZC_MSG_CONST);
}

static void
zc_content_release(struct zc_content *ct)
{
	/* The last reference needs no locked subtract: nobody else holds one
	 * to add or drop (a zmq_msg_close after each zmq_msg_send, perf). */
	if (atomic_load_explicit(&ct->refs, memory_order_acquire) != 1 &&
	    atomic_fetch_sub_explicit(&ct->refs, 1, memory_order_acq_rel) != 1)
		return;
	switch (ct->kind) {
	case ZC_EXT:
		if (ct->ffn != NULL)
			ct->ffn(ct->data, ct->hint);
		break;
	case ZC_RX:
		zr_msg_free(ct->rx);
		break;
	case ZC_HEAP:
		break;
	}
	free(ct);
}

static void
zc_msg_set_empty(struct zc_msg *m)
{
	m->data = NULL;
	m->size = 0;
	m->content = NULL;
	m->kind = ZC_MSG_INLINE;
	m->flags = 0;
}

static unsigned char *
zc_msg_bytes(struct zc_msg *m)
{
	return m->kind == ZC_MSG_INLINE ? m->inl : m->data;
}

ZC_API int
zmq_msg_init(zmq_msg_t *msg)
{
	zc_msg_set_empty(zc_msg(msg));
	return 0;
}

ZC_API int
zmq_msg_init_size(zmq_msg_t *msg, size_t size)
{
	struct zc_msg *m = zc_msg(msg);
	struct zc_content *ct;

	zc_msg_set_empty(m);
	if (size <= ZC_INLINE_MAX) {
		m->size = size;
		return 0;
	}
	if (size > SIZE_MAX - sizeof *ct) {
		m->kind = ZC_MSG_CLOSED;
		return zc_fail(ENOMEM);
	}
	ct = malloc(sizeof *ct + size);
	if (ct == NULL) {
		m->kind = ZC_MSG_CLOSED;
		return zc_fail(ENOMEM);
	}
	atomic_init(&ct->refs, 1);
	ct->kind = ZC_HEAP;
	ct->data = ct + 1;
	ct->rx = NULL;
	m->kind = ZC_MSG_SHARED;
	m->content = ct;
	m->data = ct->data;
	m->size = size;
	return 0;
}

/*
 * ffn runs once nothing refers to the bytes any more, as in libzmq: no
 * zmq_msg_t, and for a sent message, zring is done with it (written to the
 * peers, or dropped). A message of this frame alone is sent zero-copy
 * (zr_msg_new_data); a frame of several is copied, and held until the
 * whole message is done with. So ffn may run on zring's io thread, or in
 * the thread that closes the last zmq_msg_t (see zr_msg_new_data).
 */
ZC_API int
zmq_msg_init_data(zmq_msg_t *msg, void *data, size_t size, zmq_free_fn *ffn, void *hint)
{
	struct zc_msg *m = zc_msg(msg);
	struct zc_content *ct;

	zc_msg_set_empty(m);
	if (data == NULL && size > 0) {
		m->kind = ZC_MSG_CLOSED;
		return zc_fail(EINVAL);
	}
	if (ffn == NULL) {
		m->kind = ZC_MSG_CONST;
		m->data = data;
		m->size = size;
		return 0;
	}
	ct = malloc(sizeof *ct);
	if (ct == NULL) {
		m->kind = ZC_MSG_CLOSED;
		return zc_fail(ENOMEM);
	}
	atomic_init(&ct->refs, 1);
	ct->kind = ZC_EXT;
	ct->ffn = ffn;
	ct->hint = hint;
	ct->data = data;
	ct->rx = NULL;
	m->kind = ZC_MSG_SHARED;
	m->content = ct;
	m->data = data;
	m->size = size;
	return 0;
}

ZC_API int
zmq_msg_close(zmq_msg_t *msg)
{
	struct zc_msg *m = zc_msg(msg);

	if (!zc_msg_valid(m))
		return zc_fail(EFAULT);
	if (m->kind == ZC_MSG_SHARED)
		zc_content_release(m->content);
	m->kind = ZC_MSG_CLOSED;
	return 0;
}

ZC_API int
zmq_msg_move(zmq_msg_t *dest, zmq_msg_t *src)
{
	if (!zc_msg_valid(zc_msg(src)))
		return zc_fail(EFAULT);
	if (zc_msg_valid(zc_msg(dest)))
		zmq_msg_close(dest);
	memcpy(dest, src, sizeof(struct zc_msg));
	zc_msg_set_empty(zc_msg(src));
	return 0;
}

ZC_API int
zmq_msg_copy(zmq_msg_t *dest, zmq_msg_t *src)
{
	struct zc_msg *s = zc_msg(src);

	if (!zc_msg_valid(s))
		return zc_fail(EFAULT);
	if (dest == src)
		return 0;
	if (zc_msg_valid(zc_msg(dest)))
		zmq_msg_close(dest);
	if (s->kind == ZC_MSG_SHARED)
		atomic_fetch_add_explicit(&s->content->refs, 1, memory_order_relaxed);
	memcpy(dest, src, sizeof(struct zc_msg));
	return 0;
}

ZC_API void *
zmq_msg_data(zmq_msg_t *msg)
{
	struct zc_msg *m = zc_msg(msg);

	if (!zc_msg_valid(m)) {
		errno = EFAULT;
		return NULL;
	}
	return zc_msg_bytes(m);
}

ZC_API size_t
zmq_msg_size(const zmq_msg_t *msg)
{
	const struct zc_msg *m = zc_cmsg(msg);

	return zc_msg_valid(m) ? m->size : 0;
}

ZC_API int
zmq_msg_more(const zmq_msg_t *msg)
{
	const struct zc_msg *m = zc_cmsg(msg);

	return zc_msg_valid(m) && (m->flags & ZC_MSG_MORE) ? 1 : 0;
}

ZC_API int
zmq_msg_get(const zmq_msg_t *msg, int property)
{
	const struct zc_msg *m = zc_cmsg(msg);

	if (!zc_msg_valid(m))
		return zc_fail(EFAULT);
	switch (property) {
	case ZMQ_MORE:
		return (m->flags & ZC_MSG_MORE) ? 1 : 0;
	case ZMQ_SRCFD:
		return -1; /* zring does not expose connections' fds */
	case ZMQ_SHARED:
		return m->kind == ZC_MSG_CONST ||
		       (m->kind == ZC_MSG_SHARED && atomic_load(&m->content->refs) > 1);
	default:
		return zc_fail(EINVAL);
	}
}

ZC_API int
zmq_msg_set(zmq_msg_t *msg, int property, int optval)
{
	(void)msg;
	(void)property;
	(void)optval;
	return zc_fail(EINVAL); /* libzmq 4.3 has no settable property */
}

/*
 * "Socket-Type", "Identity" (and "Routing-Id", its RFC 37 name), "User-Id",
 * "Peer-Address" and the peer's application metadata, from the connection
 * the frame came in on (zr_msg_gets); NULL with EINVAL otherwise.
 */
ZC_API const char *
zmq_msg_gets(const zmq_msg_t *msg, const char *property)
{
	const struct zc_msg *m = zc_cmsg(msg);
	const char *v = NULL;

	if (zc_msg_valid(m) && m->kind == ZC_MSG_SHARED && m->content->kind == ZC_RX &&
	    property != NULL) {
		v = zr_msg_gets(m->content->rx, property);
		if (v == NULL && strcasecmp(property, "Routing-Id") == 0)
			v = zr_msg_gets(m->content->rx, "Identity");
	}
	if (v == NULL)
		errno = EINVAL;
	return v;
}

/* ---- sockets --------------------------------------------------------------- */

/* Options libzmq has that change nothing here (README.md lists them): kept
 * so the app reads back what it set. */
struct zc_inert {
	uint64_t affinity;
	int rate, recovery_ivl, multicast_hops, multicast_maxtpdu;
	int backlog, tos, immediate, router_handover;
	int tcp_keepalive, tcp_keepalive_cnt, tcp_keepalive_idle, tcp_keepalive_intvl;
	int connect_timeout, tcp_maxrt;
	int loopback_fastpath, multicast_loop;
	char zap_domain[256]; /* ZAP_DOMAIN as set, for its read-back with a NUL */
	int zap_enforce;      /* ZAP_ENFORCE_DOMAIN as set (zc_zap_rule) */
	/* SNDHWM/RCVHWM set after the first bind/connect: zring sizes its
	 * queues then and keeps them; libzmq applies a new HWM to new
	 * connections only. Read back as set; -1: not set that way. */
	int late_sndhwm, late_rcvhwm;
	/* PLAIN credentials as set (zring does not read them back) */
	char plain[2][256];
	size_t plain_len[2];
};

struct zc_socket {
	uint32_t magic;
	int type;
	struct zc_ctx *ctx;
	zr_socket *zr;
	/* sending: the frames of the message being built, and the contents of
	 * its zmq_msg_init_data frames, held until zring is done with it */
	zr_msg *out;
	struct zc_content **keep;
	size_t nkeep, capkeep;
	/* receiving: the message being handed out, its next frame */
	struct zc_content *in;
	size_t in_next, in_frames;
	bool rcvmore;
	/* REQ/REP: what the state machine allows next (for POLLOUT) */
	bool req_waiting;
	bool rep_replying;
	bool req_relaxed; /* ZMQ_REQ_RELAXED: a new request may go before the reply */
	int sndtimeo, rcvtimeo;
	struct zc_inert inert;
	struct zc_monitor *monitor;
	/* Connections, from zring's monitor events (see "peers" below). */
	pthread_mutex_t mon_mu; /* one reader of zring's event queue at a time */
	struct zc_conn *conns;
	size_t nconns, capconns;
	atomic_int peers;       /* connections past their handshake */
	atomic_uint ip_links;   /* inproc pipes this socket connected (zc_inproc_wait) */
	atomic_uint ip_gone;    /* inproc pipes of this socket gone (zc_inproc_gone) */
	atomic_bool fresh_peer; /* peers went 0 -> 1, no send since (see zc_send_out) */
	int wake_fd;            /* eventfd: the first peer came, POLLOUT may be on */
	int ep_fd;              /* ZMQ_FD, made on first use; -1 before */
	unsigned ops;           /* sends and receives, see zc_ops */
	/* No REQ/REP turn to keep (not REQ, REP): sends and receives, where
	 * the type has them, take the one-pass paths (zc_send_fast,
	 * zc_fast_frame). */
	bool fast_tx, fast_rx;
};

/* A connection zring reported: its fd, its endpoint (hashed), handshaken. */
struct zc_conn {
	int fd;
	bool active;
	uint64_t ep;
};

/* The events this layer follows on every socket to count its peers. */
#define ZC_TRACKED                                                               \
	(ZR_EVENT_CONNECTED | ZR_EVENT_ACCEPTED | ZR_EVENT_HANDSHAKE_SUCCEEDED | \
	 ZR_EVENT_DISCONNECTED)

static struct zc_socket *
zc_sock_of(void *p)
{
	struct zc_socket *s = p;

	if (s == NULL || s->magic != ZC_SOCK_MAGIC)
		return NULL;
	return s;
}

static bool
zc_can_send(int type)
{
	return type != ZMQ_SUB && type != ZMQ_PULL;
}

static bool
zc_can_recv(int type)
{
	return type != ZMQ_PUB && type != ZMQ_PUSH;
}

ZC_API void *
zmq_socket(void *ctx, int type)
{
	struct zc_ctx *c = zc_ctx_of(ctx);
	struct zc_socket *s;
	int slice = ZC_SEND_SLICE_MS;
	int rc;

	if (c == NULL) {
		errno = EFAULT;
		return NULL;
	}
	if (zc_terminating(c)) {
		errno = ETERM;
		return NULL;
	}
	if (type < ZMQ_PAIR || type > ZMQ_XSUB) {
		errno = EINVAL; /* STREAM and the draft types are not implemented */
		return NULL;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&c->mu);
	if (c->nsockets >= c->max_sockets) {
		pthread_mutex_unlock(&c->mu);
		free(s);
		errno = EMFILE;
		return NULL;
	}
	c->nsockets++;
	pthread_mutex_unlock(&c->mu);
	rc = zr_socket_open(c->zr, type, &s->zr);
	if (rc == 0) {
		rc = zr_socket_monitor(s->zr, ZC_TRACKED);
		if (rc < 0)
			zr_socket_close(s->zr);
	}
	if (rc == 0) {
		s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->wake_fd < 0) {
			rc = -errno;
			zr_socket_close(s->zr);
		}
	}
	if (rc < 0) {
		pthread_mutex_lock(&c->mu);
		c->nsockets--;
		pthread_cond_broadcast(&c->closed);
		pthread_mutex_unlock(&c->mu);
		free(s);
		errno = -zr_errno(rc);
		return NULL;
	}
	/* zring's send waits in slices (see zc_send_out); receives never block in it. */
	(void)zr_setsockopt(s->zr, ZR_SNDTIMEO, &slice, sizeof slice);
	if (c->ipv6) {
		int one = 1;

		(void)zr_setsockopt(s->zr, ZR_IPV6, &one, sizeof one);
	}
	if (!c->blocky) {
		int zero = 0;

		(void)zr_setsockopt(s->zr, ZR_LINGER, &zero, sizeof zero);
	}
	pthread_mutex_init(&s->mon_mu, NULL);
	s->ep_fd = -1;
	s->type = type;
	s->fast_tx = type != ZMQ_REQ && type != ZMQ_REP && zc_can_send(type);
	s->fast_rx = type != ZMQ_REQ && type != ZMQ_REP && zc_can_recv(type);
	s->ctx = c;
	s->sndtimeo = -1;
	s->rcvtimeo = -1;
	s->inert = (struct zc_inert){
		.rate = 100,
		.recovery_ivl = 10000,
		.multicast_hops = 1,
		.multicast_maxtpdu = 1500,
		.backlog = 100,
		.tcp_keepalive = -1,
		.tcp_keepalive_cnt = -1,
		.tcp_keepalive_idle = -1,
		.tcp_keepalive_intvl = -1,
		.multicast_loop = 1,
		.late_sndhwm = -1,
		.late_rcvhwm = -1,
	};
	s->magic = ZC_SOCK_MAGIC;
	return s;
}

static void zc_monitor_stop(struct zc_socket *s);

/*
 * A closed socket's struct outlives zmq_close for a while, marked dead, as
 * libzmq's does until its reaper thread gets to it: programs (pyzmq's
 * Socket.closed) ask a handle that may just have been closed whether it is
 * a socket, and must get ENOTSOCK, not freed memory. The context keeps the
 * last ZC_GRAVE of them and frees them all at zmq_ctx_term. c->mu held.
 */
static void
zc_bury(struct zc_ctx *c, struct zc_socket *s)
{
	unsigned slot = c->grave_next++ % ZC_GRAVE;

	free(c->grave[slot]);
	c->grave[slot] = s;
}

/* Forgets s's inproc binds (name 0: all of them). c->mu held. */
static void
zc_unbound(struct zc_ctx *c, struct zc_socket *s, uint64_t name)
{
	for (size_t i = 0; i < c->nbound;) {
		if (c->bound[i].s == s && (name == 0 || c->bound[i].name == name))
			c->bound[i] = c->bound[--c->nbound];
		else
			i++;
	}
}

ZC_API int
zmq_close(void *sock)
{
	struct zc_socket *s = zc_sock_of(sock);
	struct zc_ctx *c;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	c = s->ctx;
	/* Out of the bound list first: zmq_disconnect reads the events of a
	 * socket it finds there, under c->mu (zc_inproc_gone). */
	pthread_mutex_lock(&c->mu);
	zc_unbound(c, s, 0);
	pthread_mutex_unlock(&c->mu);
	if (s->monitor != NULL)
		zc_monitor_stop(s);
	s->magic = ZC_SOCK_DEAD;
	zr_msg_free(s->out);
	for (size_t i = 0; i < s->nkeep; i++)
		zc_content_release(s->keep[i]);
	free(s->keep);
	if (s->in != NULL)
		zc_content_release(s->in);
	zr_socket_close(s->zr);
	if (s->ep_fd >= 0)
		close(s->ep_fd);
	close(s->wake_fd);
	free(s->conns);
	pthread_mutex_destroy(&s->mon_mu);
	pthread_mutex_lock(&c->mu);
	zc_bury(c, s);
	c->nsockets--;
	pthread_cond_broadcast(&c->closed);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* ---- endpoints ----------------------------------------------------------- */

/* 64-bit FNV-1a: inproc names and event endpoints, compared by hash. */
static uint64_t
zc_hash(const char *str)
{
	uint64_t h = 0xcbf29ce484222325u;

	for (const unsigned char *p = (const unsigned char *)str; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3u;
	return h;
}

static void zc_drain(struct zc_socket *s);

/* Records an inproc bind: a connect to it then completes as libzmq's does. */
static void
zc_inproc_bound(struct zc_socket *s, const char *name)
{
	struct zc_ctx *c = s->ctx;

	pthread_mutex_lock(&c->mu);
	if (c->nbound == c->capbound) {
		size_t cap = c->capbound ? c->capbound * 2 : 8;
		struct zc_bound *n = realloc(c->bound, cap * sizeof *n);

		if (n == NULL) {
			pthread_mutex_unlock(&c->mu);
			return; /* connects to it just do not wait */
		}
		c->bound = n;
		c->capbound = cap;
	}
	c->bound[c->nbound++] = (struct zc_bound){.name = zc_hash(name), .s = s, .type = s->type};
	pthread_mutex_unlock(&c->mu);
}

#define ZC_INPROC_WAIT_MS 1000

/*
 * libzmq's inproc connect to a bound endpoint is complete when zmq_connect
 * returns: a SUB subscribed right after it gets what the PUB sends next, and
 * a PUSH has POLLOUT. zr_connect only queues the connect for the io thread,
 * so a connect to an inproc name bound in this context waits for the pipe's
 * CONNECTED event (up to ZC_INPROC_WAIT_MS; the io thread makes it on its
 * next turn). A pair of types the engine refuses gets no pipe: no wait.
 */
static void
zc_inproc_wait(struct zc_socket *s, const char *name, unsigned before)
{
	uint64_t h = zc_hash(name);
	int64_t deadline;
	bool bound = false;

	pthread_mutex_lock(&s->ctx->mu);
	for (size_t i = 0; i < s->ctx->nbound && !bound; i++)
		bound = s->ctx->bound[i].name == h && s->ctx->bound[i].s != s &&
		        zr_socktype_compatible(s->type, s->ctx->bound[i].type);
	pthread_mutex_unlock(&s->ctx->mu);
	if (!bound)
		return;
	deadline = zc_deadline(ZC_INPROC_WAIT_MS);
	for (;;) {
		struct pollfd p = {.fd = zr_monitor_fd(s->zr), .events = POLLIN};

		zc_drain(s);
		if (atomic_load(&s->ip_links) != before || zc_left_ms(deadline) == 0)
			return;
		/* With a monitor thread reading the events, look again soon. */
		(void)poll(&p, 1, s->monitor != NULL ? 10 : zc_left_ms(deadline));
	}
}

/*
 * libzmq's inproc disconnect is complete when zmq_disconnect returns: the
 * binder's next non-blocking send finds no peer (pyzmq's connect context
 * manager relies on it). zr_disconnect only queues it, and the engine drops
 * the binder's end of the pipe a turn after the connecter's, so this waits
 * for both DISCONNECTED events (up to ZC_INPROC_WAIT_MS). The binder's
 * events are read here under c->mu: zmq_close takes a socket out of the
 * bound list under it before closing anything.
 */
struct zc_gone {
	unsigned self, binder;
};

/* Takes the counts; false when s has no inproc pipe to addr (no wait). */
static bool
zc_inproc_gone(struct zc_socket *s, const char *addr, struct zc_gone *g, bool *done)
{
	uint64_t ep = zc_hash(addr), name = zc_hash(addr + 9);
	struct zc_socket *b = NULL;
	bool piped = false;

	zc_drain(s);
	if (done == NULL) {
		pthread_mutex_lock(&s->mon_mu);
		for (size_t i = 0; i < s->nconns && !piped; i++)
			piped = s->conns[i].fd < 0 && s->conns[i].ep == ep;
		pthread_mutex_unlock(&s->mon_mu);
		if (!piped)
			return false;
	}
	pthread_mutex_lock(&s->ctx->mu);
	for (size_t i = 0; i < s->ctx->nbound && b == NULL; i++)
		if (s->ctx->bound[i].name == name && s->ctx->bound[i].s != s)
			b = s->ctx->bound[i].s;
	if (b != NULL)
		zc_drain(b);
	if (done == NULL) {
		g->self = atomic_load(&s->ip_gone);
		g->binder = b != NULL ? atomic_load(&b->ip_gone) : 0;
	} else {
		*done = atomic_load(&s->ip_gone) != g->self &&
		        (b == NULL || atomic_load(&b->ip_gone) != g->binder);
	}
	pthread_mutex_unlock(&s->ctx->mu);
	return true;
}

static void
zc_inproc_gone_wait(struct zc_socket *s, const char *addr, struct zc_gone *g)
{
	int64_t deadline = zc_deadline(ZC_INPROC_WAIT_MS);
	bool done = false;

	for (;;) {
		struct pollfd p = {.fd = zr_monitor_fd(s->zr), .events = POLLIN};

		(void)zc_inproc_gone(s, addr, g, &done);
		if (done || zc_left_ms(deadline) == 0)
			return;
		/* The binder's events do not wake this fd: look again soon. */
		(void)poll(&p, 1, 1);
	}
}

static int
zc_check_live(const struct zc_socket *s)
{
	if (s == NULL)
		return ENOTSOCK;
	if (zc_terminating(s->ctx))
		return ETERM;
	return 0;
}

/* The live socket behind sock for a bind, connect, unbind or disconnect of
 * addr, or the errno the call fails with. */
static int
zc_endpoint_sock(void *sock, const char *addr, struct zc_socket **out)
{
	struct zc_socket *s = zc_sock_of(sock);
	int err = zc_check_live(s);

	if (err != 0)
		return err;
	if (addr == NULL)
		return EINVAL;
	*out = s;
	return 0;
}

ZC_API int
zmq_bind(void *sock, const char *addr)
{
	struct zc_socket *s;
	int err = zc_endpoint_sock(sock, addr, &s);
	int rc;

	if (err != 0)
		return zc_fail(err);
	if (strncmp(addr, "inproc://", 9) == 0 && addr[9] == '\0')
		return zc_fail(EINVAL);
	rc = zr_bind(s->zr, addr);
	if (rc < 0)
		return zc_fail_zr(rc);
	if (strncmp(addr, "inproc://", 9) == 0)
		zc_inproc_bound(s, addr + 9);
	return 0;
}

ZC_API int
zmq_connect(void *sock, const char *addr)
{
	struct zc_socket *s;
	int err = zc_endpoint_sock(sock, addr, &s);
	unsigned before;
	int rc;

	if (err != 0)
		return zc_fail(err);
	zc_drain(s);
	before = atomic_load(&s->ip_links);
	rc = zr_connect(s->zr, addr);
	if (rc < 0)
		return zc_fail_zr(rc);
	if (strncmp(addr, "inproc://", 9) == 0)
		zc_inproc_wait(s, addr + 9, before);
	return 0;
}

ZC_API int
zmq_unbind(void *sock, const char *addr)
{
	struct zc_socket *s;
	int err = zc_endpoint_sock(sock, addr, &s);
	int rc;

	if (err != 0)
		return zc_fail(err);
	rc = zr_unbind(s->zr, addr);
	if (rc < 0)
		return zc_fail_zr(rc);
	if (strncmp(addr, "inproc://", 9) == 0) {
		pthread_mutex_lock(&s->ctx->mu);
		zc_unbound(s->ctx, s, zc_hash(addr + 9));
		pthread_mutex_unlock(&s->ctx->mu);
	}
	return 0;
}

ZC_API int
zmq_disconnect(void *sock, const char *addr)
{
	struct zc_socket *s;
	int err = zc_endpoint_sock(sock, addr, &s);
	struct zc_gone g;
	bool inproc;
	int rc;

	if (err != 0)
		return zc_fail(err);
	inproc = strncmp(addr, "inproc://", 9) == 0 && zc_inproc_gone(s, addr, &g, NULL);
	rc = zr_disconnect(s->zr, addr);
	if (rc < 0)
		return zc_fail_zr(rc);
	if (inproc)
		zc_inproc_gone_wait(s, addr, &g);
	return 0;
}

/* ---- peers ----------------------------------------------------------------- */

/*
 * POLLOUT comes from zr_socket_poll_events. This layer still keeps a count
 * of peers, for the inproc connect and disconnect waits and for the first
 * send after a peer came (zc_send_out), from the socket's monitor events: a connection dialled or accepted (with
 * its fd), handshaken (HANDSHAKE_SUCCEEDED names the endpoint, not the fd:
 * the oldest pending connection of that endpoint is taken), lost (its fd).
 * An inproc pipe has no fd (-1) and no handshake: it counts when it comes.
 *
 * The events are read where readiness is asked (ZMQ_EVENTS, zmq_poll), by
 * the user's monitor thread when there is one, and every ZC_DRAIN_EVERY
 * sends and receives, so zring's queue of 1024 events does not overflow
 * while the app only sends and receives.
 */
#define ZC_DRAIN_EVERY 64
/* zring reports every connection it dialled or accepted lost again
 * (DISCONNECTED); this bound only keeps memory finite should it not. */
#define ZC_TRACK_MAX 65536

/* c is past its handshake: one more peer. mon_mu held. */
static void
zc_peer_up(struct zc_socket *s, struct zc_conn *c)
{
	uint64_t one = 1;

	c->active = true;
	if (atomic_fetch_add(&s->peers, 1) == 0) {
		atomic_store(&s->fresh_peer, true);
		(void)!write(s->wake_fd, &one, sizeof one);
	}
}

/* mon_mu held. */
static void
zc_track(struct zc_socket *s, const struct zr_event *ev)
{
	uint64_t ep = zc_hash(ev->endpoint);

	switch (ev->type) {
	case ZR_EVENT_CONNECTED:
	case ZR_EVENT_ACCEPTED:
		if (s->nconns >= ZC_TRACK_MAX)
			return; /* bounded, whatever the event stream says */
		if (s->nconns == s->capconns) {
			size_t cap = s->capconns ? s->capconns * 2 : 8;
			struct zc_conn *n = realloc(s->conns, cap * sizeof *n);

			if (n == NULL)
				return; /* then counted as no peer: POLLOUT stays off */
			s->conns = n;
			s->capconns = cap;
		}
		s->conns[s->nconns++] = (struct zc_conn){.fd = ev->value, .ep = ep};
		/* An inproc pipe (no fd) has no handshake: it is a peer now. */
		if (ev->value < 0) {
			zc_peer_up(s, &s->conns[s->nconns - 1]);
			if (ev->type == ZR_EVENT_CONNECTED)
				atomic_fetch_add(&s->ip_links, 1);
		}
		break;
	case ZR_EVENT_HANDSHAKE_SUCCEEDED:
		for (size_t i = 0; i < s->nconns; i++) {
			if (!s->conns[i].active && s->conns[i].ep == ep) {
				zc_peer_up(s, &s->conns[i]);
				break;
			}
		}
		break;
	case ZR_EVENT_DISCONNECTED:
		for (size_t i = 0; i < s->nconns; i++) {
			/* inproc pipes (fd -1) of one endpoint are alike: any one. */
			if (s->conns[i].fd == ev->value &&
			    (ev->value >= 0 || s->conns[i].ep == ep)) {
				if (ev->value < 0)
					atomic_fetch_add(&s->ip_gone, 1);
				if (s->conns[i].active)
					atomic_fetch_sub(&s->peers, 1);
				memmove(&s->conns[i], &s->conns[i + 1],
				        (s->nconns - i - 1) * sizeof s->conns[0]);
				s->nconns--;
				break;
			}
		}
		break;
	default:
		break;
	}
}

/* Reads every recorded event (the user's monitor thread does it when there
 * is one: it forwards them too). */
static void
zc_drain(struct zc_socket *s)
{
	struct zr_event ev;

	if (s->monitor != NULL)
		return;
	pthread_mutex_lock(&s->mon_mu);
	while (zr_monitor_recv(s->zr, &ev, 0) == 0)
		zc_track(s, &ev);
	pthread_mutex_unlock(&s->mon_mu);
}

/* Counts a send or receive; every ZC_DRAIN_EVERY, reads the events. */
static void
zc_ops(struct zc_socket *s)
{
	if (++s->ops % ZC_DRAIN_EVERY == 0)
		zc_drain(s);
}

/* ---- receiving ------------------------------------------------------------ */

static bool
zc_have_frame(const struct zc_socket *s)
{
	return s->in != NULL && s->in_next < s->in_frames;
}

/* Clears zr_socket_fd's wake: a message is in hand, and ZMQ_EVENTS will say
 * so; the fd fires again only after a later receive found nothing (that
 * zr_recv re-arms it), which is the edge libzmq's ZMQ_FD gives. */
static void
zc_clear_fd(struct zc_socket *s)
{
	uint64_t v;

	(void)!read(zr_socket_fd(s->zr), &v, sizeof v);
}

/* Takes the next message off zring without waiting. 0, or a zring code.
 * Only called with every frame of the last message consumed. */
static int
zc_fetch(struct zc_socket *s)
{
	int rc;

	/* A frame of the last message still out (a zmq_msg_t the app kept)
	 * holds that message: it gets a holder of its own. Otherwise the one
	 * holder and its zr_msg take message after message (zr_recv_into),
	 * with no allocation per message. */
	if (s->in != NULL && atomic_load_explicit(&s->in->refs, memory_order_acquire) != 1) {
		zc_content_release(s->in);
		s->in = NULL;
	}
	if (s->in == NULL) {
		struct zc_content *in = malloc(sizeof *in);

		if (in == NULL)
			return -ENOMEM;
		rc = zr_msg_new(&in->rx);
		if (rc < 0) {
			free(in);
			return rc;
		}
		atomic_init(&in->refs, 1);
		in->kind = ZC_RX;
		in->ffn = NULL;
		in->data = NULL;
		s->in = in;
	}
	s->in_next = s->in_frames = 0;
	rc = zr_recv_into(s->zr, s->in->rx, ZR_DONTWAIT);
	if (rc < 0)
		return rc;
	s->in_frames = zr_msg_frames(s->in->rx);
	return s->in_frames == 0 ? -EAGAIN : 0; /* nothing to hand out */
}

/* Waits until a frame is in hand, up to timeout_ms. 0 or an errno. */
static int
zc_wait_frame(struct zc_socket *s, int flags)
{
	int64_t deadline;

	zc_ops(s);
	if (zc_have_frame(s))
		return 0;
	if (!zc_can_recv(s->type))
		return ENOTSUP;
	if (s->type == ZMQ_REQ && !s->req_waiting)
		return EFSM;
	if (s->type == ZMQ_REP && s->rep_replying)
		return EFSM;
	/* The deadline is read only once a message is not there at once: a
	 * receive that finds one reads no clock (as libzmq's). */
	bool timed = false;
	deadline = 0;
	for (;;) {
		struct pollfd p[2];
		int rc;

		if (zc_terminating(s->ctx))
			return ETERM;
		rc = zc_fetch(s);
		if (rc == 0)
			return 0;
		if (rc != -EAGAIN)
			return -zr_errno(rc);
		if (!timed) {
			deadline = (flags & ZMQ_DONTWAIT) ? 0 : zc_deadline(s->rcvtimeo);
			timed = true;
		}
		if (deadline == 0 || zc_left_ms(deadline) == 0)
			return EAGAIN;
		p[0] = (struct pollfd){.fd = zr_socket_fd(s->zr), .events = POLLIN};
		p[1] = (struct pollfd){.fd = s->ctx->term_fd, .events = POLLIN};
		if (poll(p, 2, zc_left_ms(deadline)) < 0 && errno == EINTR)
			return EINTR;
	}
}

/*
 * A frame in hand at once in one pass, on a socket with no REQ/REP turn
 * (zc_socket's fast_rx): true. false: nothing happened that zc_wait_frame does
 * not do again, and it then waits for one, or reports, as ever. Per 64 B
 * zmq_msg_recv this is about 40 instructions fewer (callgrind).
 */
static bool
zc_fast_frame(struct zc_socket *s)
{
	if (!s->fast_rx || zc_terminating(s->ctx))
		return false;
	zc_ops(s);
	return zc_have_frame(s) || zc_fetch(s) == 0;
}

/* The frame at in_next is consumed: the next one, RCVMORE, and past a whole
 * message the REQ/REP turn. */
static void
zc_frame_done(struct zc_socket *s)
{
	s->in_next++;
	s->rcvmore = s->in_next < s->in_frames;
	if (!s->rcvmore) {
		if (s->type == ZMQ_REQ)
			s->req_waiting = false;
		else if (s->type == ZMQ_REP)
			s->rep_replying = true;
	}
}

/* Hands out the next frame into m (closed by the caller before). */
static void
zc_take_frame(struct zc_socket *s, struct zc_msg *m)
{
	size_t len;
	const void *f = zr_msg_frame(s->in->rx, s->in_next, &len);

	zc_frame_done(s);
	/* Held by the socket alone, the count is this thread's: a plain store
	 * (a locked add here was most of zmq_msg_recv's samples, perf). */
	if (atomic_load_explicit(&s->in->refs, memory_order_relaxed) == 1)
		atomic_store_explicit(&s->in->refs, 2, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&s->in->refs, 1, memory_order_relaxed);
	m->kind = ZC_MSG_SHARED;
	m->content = s->in;
	m->data = (unsigned char *)(uintptr_t)f;
	m->size = len;
	m->flags = s->rcvmore ? ZC_MSG_MORE : 0;
}

ZC_API int
zmq_msg_recv(zmq_msg_t *msg, void *sock, int flags)
{
	struct zc_socket *s = zc_sock_of(sock);
	struct zc_msg *m = zc_msg(msg);
	int err;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (!zc_msg_valid(m))
		return zc_fail(EFAULT);
	/* The old content goes first, as in libzmq (which leaves an empty
	 * message on failure too): the caller's last frame then no longer holds
	 * the received message, and zc_fetch reuses its holder instead of a
	 * malloc and free per message. */
	if (m->kind == ZC_MSG_SHARED && m->content == s->in &&
	    atomic_load_explicit(&s->in->refs, memory_order_acquire) == 2)
		/* This frame and the socket are the only references, both in
		 * this thread's hands: no other thread can touch the count. */
		atomic_store_explicit(&s->in->refs, 1, memory_order_relaxed);
	else
		zmq_msg_close(msg);
	zc_msg_set_empty(m);
	if (!zc_fast_frame(s)) {
		err = zc_wait_frame(s, flags);
		if (err != 0)
			return zc_fail(err);
	}
	zc_take_frame(s, m);
	return m->size > INT_MAX ? INT_MAX : (int)m->size;
}

ZC_API int
zmq_recvmsg(void *sock, zmq_msg_t *msg, int flags)
{
	return zmq_msg_recv(msg, sock, flags);
}

ZC_API int
zmq_recv(void *sock, void *buf, size_t len, int flags)
{
	struct zc_socket *s = zc_sock_of(sock);
	const void *f;
	size_t flen;
	int err;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (buf == NULL && len > 0)
		return zc_fail(EFAULT);
	if (!zc_fast_frame(s)) {
		err = zc_wait_frame(s, flags);
		if (err != 0)
			return zc_fail(err);
	}
	f = zr_msg_frame(s->in->rx, s->in_next, &flen);
	if (buf != NULL && len > 0 && flen > 0)
		memcpy(buf, f, flen < len ? flen : len);
	zc_frame_done(s);
	return flen > INT_MAX ? INT_MAX : (int)flen;
}

/* ---- sending -------------------------------------------------------------- */

/* One zring send: without waiting, or waiting up to zring's SNDTIMEO (the
 * slice). 0 or a zring code. */
static int
zc_send_once(struct zc_socket *s, bool wait, bool bytes, const void *data, size_t len)
{
	int flags = wait ? 0 : ZR_DONTWAIT;

	return bytes ? zr_send_bytes(s->zr, data, len, flags) : zr_send(s->zr, &s->out, flags);
}

/*
 * Sends the gathered message (or, with bytes, a one-frame message of
 * data), waiting as SNDTIMEO and flags say. 0 or an errno; on failure
 * s->out is still the caller's. The first try never waits, so a send that
 * goes at once reads no clock (zring reads one for a send that may wait).
 */
static int
zc_send_out(struct zc_socket *s, int flags, bool bytes, const void *data, size_t len)
{
	int64_t deadline;
	int rc;

	if (zc_terminating(s->ctx))
		return ETERM;
	rc = zc_send_once(s, false, bytes, data, len);
	/*
	 * zring records HANDSHAKE_SUCCEEDED a moment before the connection
	 * joins the socket, so a non-blocking send made at once on that news
	 * (asyncio does) can find no peer yet. The first such send waits that
	 * moment out: with no peer before, nothing was queued, so only that
	 * race can refuse it.
	 */
	if (rc == -EAGAIN && (flags & ZMQ_DONTWAIT) && atomic_exchange(&s->fresh_peer, false))
		rc = zc_send_once(s, true, bytes, data, len);
	if (rc == 0) {
		atomic_store_explicit(&s->fresh_peer, false, memory_order_relaxed);
		return 0;
	}
	if (rc != -EAGAIN)
		return -zr_errno(rc);
	if ((flags & ZMQ_DONTWAIT) || s->sndtimeo == 0)
		return EAGAIN;
	/* zring's SNDTIMEO is the slice: a blocked send looks at termination
	 * and at the caller's deadline between slices. */
	deadline = zc_deadline(s->sndtimeo);
	for (;;) {
		if (zc_terminating(s->ctx))
			return ETERM;
		rc = zc_send_once(s, true, bytes, data, len);
		if (rc == 0)
			return 0;
		if (rc != -EAGAIN)
			return -zr_errno(rc);
		if (zc_left_ms(deadline) == 0)
			return EAGAIN;
	}
}

/* Whether this layer's REQ/REP state allows the first frame of a message. */
static bool
zc_send_state_ok(const struct zc_socket *s)
{
	if (s->type == ZMQ_REQ)
		return !s->req_waiting || s->req_relaxed;
	if (s->type == ZMQ_REP)
		return s->rep_replying;
	return true;
}

/* A whole message went: the REQ/REP state moves on. */
static void
zc_sent(struct zc_socket *s)
{
	if (s->type == ZMQ_REQ)
		s->req_waiting = true;
	else if (s->type == ZMQ_REP)
		s->rep_replying = false;
}

/* zring is done with a zero-copy frame's bytes (any thread). */
static void
zc_zr_release(void *data, void *hint)
{
	(void)data;
	zc_content_release(hint);
}

/* The zmq_msg_init_data frames of a gathered message, released together. */
struct zc_keep {
	size_t n;
	struct zc_content *ct[];
};

static void
zc_keep_release(void *data, void *hint)
{
	struct zc_keep *k = hint;

	(void)data;
	for (size_t i = 0; i < k->n; i++)
		zc_content_release(k->ct[i]);
	free(k);
}

/* Holds a frame's content until the gathered message is sent. 0 or an errno. */
static int
zc_keep_add(struct zc_socket *s, struct zc_content *ct)
{
	if (s->nkeep == s->capkeep) {
		size_t cap = s->capkeep ? s->capkeep * 2 : 4;
		struct zc_content **n = realloc(s->keep, cap * sizeof *n);

		if (n == NULL)
			return ENOMEM;
		s->keep = n;
		s->capkeep = cap;
	}
	atomic_fetch_add_explicit(&ct->refs, 1, memory_order_relaxed);
	s->keep[s->nkeep++] = ct;
	return 0;
}

/* The held contents go with s->out: released when zring is done with it
 * (should that fail, now, with libzmq's timing lost). */
static void
zc_keep_attach(struct zc_socket *s)
{
	struct zc_keep *k;

	if (s->nkeep == 0)
		return;
	k = malloc(sizeof *k + s->nkeep * sizeof k->ct[0]);
	if (k != NULL) {
		k->n = s->nkeep;
		memcpy(k->ct, s->keep, s->nkeep * sizeof k->ct[0]);
		if (zr_msg_set_free(s->out, zc_keep_release, k) == 0) {
			s->nkeep = 0;
			return;
		}
		free(k);
	}
	for (size_t i = 0; i < s->nkeep; i++)
		zc_content_release(s->keep[i]);
	s->nkeep = 0;
}

/*
 * One frame of bytes. 0 or an errno. The bytes are copied, unless keep (a
 * zmq_msg_init_data frame's content) is given: a message of that frame
 * alone goes zero-copy (zr_msg_new_data), a frame of several is copied;
 * either way keep is held until zring is done with the message, when the
 * frame's free function may run, as in libzmq.
 */
static int
zc_send_frame(struct zc_socket *s, const void *data, size_t len, int flags, struct zc_content *keep)
{
	int err;
	int rc;

	if (!zc_can_send(s->type))
		return ENOTSUP;
	zc_ops(s);
	if (s->out == NULL) {
		if (s->type == ZMQ_REQ && s->req_waiting) {
			if (!s->req_relaxed)
				return EFSM;
			/* A new request: the old reply, or what of it is in
			 * hand, is not the app's any more (zring drops the rest). */
			if (s->in != NULL)
				s->in_next = s->in_frames;
			s->rcvmore = false;
		}
		if (s->type == ZMQ_REP && !s->rep_replying)
			return EFSM;
		if (zc_terminating(s->ctx))
			return ETERM;
		/* One frame: zring's own one-frame send (it recycles messages). */
		if (!(flags & ZMQ_SNDMORE) && keep == NULL) {
			err = zc_send_out(s, flags, true, data, len);
			if (err == 0)
				zc_sent(s);
			return err;
		}
		if (!(flags & ZMQ_SNDMORE)) {
			atomic_fetch_add_explicit(&keep->refs, 1, memory_order_relaxed);
			rc = zr_msg_new_data(&s->out, (void *)(uintptr_t)data, len, zc_zr_release,
			                     keep);
			if (rc < 0) {
				zc_content_release(keep);
				return -rc;
			}
			err = zc_send_out(s, flags, false, NULL, 0);
			if (err != 0) {
				zr_msg_free(s->out); /* the zmq_msg_t keeps its own reference */
				s->out = NULL;
				return err;
			}
			s->out = NULL;
			zc_sent(s);
			return 0;
		}
		/*
		 * libzmq decides at the first frame: a non-blocking send fails
		 * there with EAGAIN, or the whole message is taken (pyzmq's
		 * asyncio retries a whole message after EAGAIN). The first
		 * frame cannot wait for a peer here, so it fails without one.
		 */
		if ((flags & ZMQ_DONTWAIT) && !(zr_socket_poll_events(s->zr) & ZR_POLLOUT))
			return EAGAIN;
		rc = zr_msg_new(&s->out);
		if (rc < 0)
			return -rc;
	}
	rc = zr_msg_add(s->out, data, len);
	if (rc < 0)
		return -rc;
	if (keep != NULL) {
		err = zc_keep_add(s, keep);
		if (err != 0)
			return err;
	}
	if (flags & ZMQ_SNDMORE)
		return 0;
	zc_keep_attach(s);
	/* Taken at its first frame, the message waits for room whatever the
	 * flags (up to SNDTIMEO); should it fail all the same, all of it goes. */
	err = zc_send_out(s, flags & ~ZMQ_DONTWAIT, false, NULL, 0);
	if (err != 0) {
		zr_msg_free(s->out);
		s->out = NULL;
		return err;
	}
	s->out = NULL; /* zring owns it now */
	zc_sent(s);
	return 0;
}

/*
 * The throughput idiom's send in one pass: a whole message of one frame,
 * on a socket with no REQ/REP turn (zc_socket's fast_tx) and no message being
 * gathered, goes by zring's one-frame send if it can at once. true: it
 * went. false: nothing happened that the general path (zc_send_frame) does
 * not do again, and it then waits, or reports, as ever. Per 64 B
 * zmq_msg_send this is about 90 instructions fewer than zc_send_frame and
 * zc_send_out (callgrind).
 */
static bool
zc_send_fast(struct zc_socket *s, const void *data, size_t len, int flags)
{
	if (!s->fast_tx || s->out != NULL || (flags & ZMQ_SNDMORE) || zc_terminating(s->ctx))
		return false;
	zc_ops(s);
	if (zr_send_bytes(s->zr, data, len, ZR_DONTWAIT) != 0)
		return false;
	atomic_store_explicit(&s->fresh_peer, false, memory_order_relaxed);
	return true;
}

ZC_API int
zmq_send(void *sock, const void *buf, size_t len, int flags)
{
	struct zc_socket *s = zc_sock_of(sock);
	int err;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (buf == NULL && len > 0)
		return zc_fail(EFAULT);
	if (zc_send_fast(s, buf, len, flags))
		return len > INT_MAX ? INT_MAX : (int)len;
	err = zc_send_frame(s, buf, len, flags, NULL);
	if (err != 0)
		return zc_fail(err);
	return len > INT_MAX ? INT_MAX : (int)len;
}

ZC_API int
zmq_send_const(void *sock, const void *buf, size_t len, int flags)
{
	return zmq_send(sock, buf, len, flags);
}

ZC_API int
zmq_msg_send(zmq_msg_t *msg, void *sock, int flags)
{
	struct zc_socket *s = zc_sock_of(sock);
	struct zc_msg *m = zc_msg(msg);
	struct zc_content *keep;
	size_t len;
	int err;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (!zc_msg_valid(m))
		return zc_fail(EFAULT);
	len = m->size;
	keep = m->kind == ZC_MSG_SHARED && m->content->kind == ZC_EXT ? m->content : NULL;
	/* Copied (not an init_data frame's content kept), it may go at once. */
	if (keep == NULL && zc_send_fast(s, zc_msg_bytes(m), len, flags)) {
		if (m->kind == ZC_MSG_SHARED)
			zc_content_release(m->content);
		zc_msg_set_empty(m);
		return len > INT_MAX ? INT_MAX : (int)len;
	}
	err = zc_send_frame(s, zc_msg_bytes(m), len, flags, keep);
	if (err != 0)
		return zc_fail(err);
	/* Copied, or held by zring (zc_send_frame): this reference goes. */
	zmq_msg_close(msg);
	zc_msg_set_empty(m);
	return len > INT_MAX ? INT_MAX : (int)len;
}

ZC_API int
zmq_sendmsg(void *sock, zmq_msg_t *msg, int flags)
{
	return zmq_msg_send(msg, sock, flags);
}

/* ---- readiness ------------------------------------------------------------- */

/*
 * ZMQ_EVENTS. POLLIN: a frame is in hand, or one could be fetched (which
 * re-arms zr_socket_fd when none could). POLLOUT: the frames of a message
 * being gathered always go; otherwise what this layer's REQ/REP state
 * allows and zr_socket_poll_events' ZR_POLLOUT (a send would not block:
 * a peer, a free slot, bytes left), which also arms zr_socket_fd for the
 * moment it may come. Fetched first: a receive finding nothing clears the
 * fd, so it must come before the arming.
 */
static int
zc_events(struct zc_socket *s)
{
	uint64_t v;
	int ev = 0;

	/* Cleared before the count is read: a peer arriving after the read
	 * signals again. */
	(void)!read(s->wake_fd, &v, sizeof v);
	zc_drain(s);

	if (zc_can_recv(s->type) && !(s->type == ZMQ_REQ && !s->req_waiting) &&
	    !(s->type == ZMQ_REP && s->rep_replying)) {
		if (zc_have_frame(s)) {
			ev |= ZMQ_POLLIN;
		} else if (zc_fetch(s) == 0) {
			/* Only here, where readiness is asked: a receive that
			 * found its message at once does not pay a syscall for an
			 * edge nobody waits on (zmq_poll then loops once more). */
			zc_clear_fd(s);
			ev |= ZMQ_POLLIN;
		}
	}
	if (zc_can_send(s->type)) {
		if (s->out != NULL)
			ev |= ZMQ_POLLOUT;
		else if (zc_send_state_ok(s) && (zr_socket_poll_events(s->zr) & ZR_POLLOUT))
			ev |= ZMQ_POLLOUT;
	}
	return ev;
}

/*
 * ZMQ_FD: one fd readable when any of the socket's wake sources is: a
 * message arrived (zr_socket_fd), an event was recorded (zr_monitor_fd:
 * a peer may have come or gone), the first peer came (wake_fd). Each is
 * cleared by reading ZMQ_EVENTS, so the fd is quiet until something new
 * happens: libzmq's edge-triggered ZMQ_FD.
 */
static int
zc_make_fd(struct zc_socket *s)
{
	int fds[3] = {zr_socket_fd(s->zr), zr_monitor_fd(s->zr), s->wake_fd};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		return errno;
	for (size_t i = 0; i < 3; i++) {
		struct epoll_event e = {.events = EPOLLIN, .data.fd = fds[i]};

		if (fds[i] >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e) < 0) {
			int err = errno;

			close(ep);
			return err;
		}
	}
	s->ep_fd = ep;
	return 0;
}

ZC_API int
zmq_poll(zmq_pollitem_t *items, int nitems, long timeout)
{
	int64_t deadline = zc_deadline(timeout < 0         ? -1
	                               : timeout > INT_MAX ? INT_MAX
	                                                   : (int)timeout);
	struct pollfd stack[ZMQ_POLLITEMS_DFLT * 4];
	struct pollfd *p = stack;
	int rc = -1;

	if (nitems < 0 || (nitems > 0 && items == NULL))
		return zc_fail(EFAULT);
	if (nitems == 0) {
		if (timeout != 0)
			poll(NULL, 0, zc_left_ms(deadline));
		return 0;
	}
	/* One pollfd per item, then for each socket its context's termination
	 * fd and, for POLLOUT, its event and wake fds (at most 4 per item). */
	if ((size_t)nitems * 4 > sizeof stack / sizeof stack[0]) {
		p = calloc((size_t)nitems * 4, sizeof *p);
		if (p == NULL)
			return zc_fail(ENOMEM);
	}
	for (;;) {
		int ready = 0;
		int np = nitems;
		int left;

		for (int i = 0; i < nitems; i++) {
			zmq_pollitem_t *it = &items[i];

			it->revents = 0;
			p[i] = (struct pollfd){.fd = -1};
			if (it->socket != NULL) {
				struct zc_socket *s = zc_sock_of(it->socket);
				int ev;

				if (s == NULL) {
					errno = ENOTSOCK;
					goto out;
				}
				if (zc_terminating(s->ctx)) {
					errno = ETERM;
					goto out;
				}
				ev = zc_events(s);
				it->revents = (short)(ev & it->events);
				/* It wakes for POLLOUT too (zr_socket_poll_events). */
				if (it->events & (ZMQ_POLLIN | ZMQ_POLLOUT))
					p[i] = (struct pollfd){.fd = zr_socket_fd(s->zr),
					                       .events = POLLIN};
				p[np++] = (struct pollfd){.fd = s->ctx->term_fd, .events = POLLIN};
				if (it->events & ZMQ_POLLOUT) {
					p[np++] = (struct pollfd){.fd = zr_monitor_fd(s->zr),
					                          .events = POLLIN};
					p[np++] =
						(struct pollfd){.fd = s->wake_fd, .events = POLLIN};
				}
			} else {
				short want = 0;

				if (it->events & ZMQ_POLLIN)
					want |= POLLIN;
				if (it->events & ZMQ_POLLOUT)
					want |= POLLOUT;
				if (it->events & ZMQ_POLLPRI)
					want |= POLLPRI;
				p[i] = (struct pollfd){.fd = it->fd, .events = want};
			}
		}
		/* Plain fds: one poll without waiting tells their state. */
		if (poll(p, (nfds_t)np, 0) < 0) {
			if (errno == EINTR)
				goto out;
		}
		for (int i = 0; i < nitems; i++) {
			zmq_pollitem_t *it = &items[i];

			if (it->socket == NULL) {
				short r = 0;

				if (p[i].revents & POLLIN)
					r |= ZMQ_POLLIN;
				if (p[i].revents & POLLOUT)
					r |= ZMQ_POLLOUT;
				if (p[i].revents & POLLPRI)
					r |= ZMQ_POLLPRI;
				if (p[i].revents & (POLLERR | POLLHUP | POLLNVAL))
					r |= ZMQ_POLLERR;
				it->revents = (short)(r & (it->events | ZMQ_POLLERR));
			}
			if (it->revents != 0)
				ready++;
		}
		if (ready > 0) {
			rc = ready;
			goto out;
		}
		left = zc_left_ms(deadline);
		if (left == 0) {
			rc = 0;
			goto out;
		}
		if (poll(p, (nfds_t)np, left) < 0 && errno == EINTR)
			goto out;
	}
out:
	if (p != stack)
		free(p);
	return rc;
}

/* ---- options ------------------------------------------------------------- */

static int
zc_int_arg(const void *v, size_t len, int *out)
{
	if (v == NULL || len != sizeof(int))
		return EINVAL;
	memcpy(out, v, sizeof(int));
	return 0;
}

static int
zc_int_out(void *v, size_t *len, int i)
{
	if (v == NULL || len == NULL || *len < sizeof(int))
		return zc_fail(EINVAL);
	memcpy(v, &i, sizeof i);
	*len = sizeof i;
	return 0;
}

/* libzmq 4.3 options outside the stable zmq.h (its draft API), readable
 * all the same. */
#define ZC_ZAP_ENFORCE_DOMAIN 93
#define ZC_LOOPBACK_FASTPATH 94
#define ZC_MULTICAST_LOOP 96

/* Options with the same number, meaning and value in zring (zring.h). */
static bool
zc_zr_option(int option)
{
	switch (option) {
	case ZMQ_ROUTING_ID:
	case ZMQ_SUBSCRIBE:
	case ZMQ_UNSUBSCRIBE:
	case ZMQ_SNDBUF:
	case ZMQ_RCVBUF:
	case ZMQ_LINGER:
	case ZMQ_RECONNECT_IVL:
	case ZMQ_RECONNECT_IVL_MAX:
	case ZMQ_MAXMSGSIZE:
	case ZMQ_SNDHWM:
	case ZMQ_RCVHWM:
	case ZMQ_ROUTER_MANDATORY:
	case ZMQ_XPUB_VERBOSE:
	case ZMQ_IPV6:
	case ZMQ_MECHANISM:
	case ZMQ_PLAIN_SERVER:
	case ZMQ_PLAIN_USERNAME:
	case ZMQ_PLAIN_PASSWORD:
	case ZMQ_CURVE_SERVER:
	case ZMQ_CURVE_PUBLICKEY:
	case ZMQ_CURVE_SECRETKEY:
	case ZMQ_CURVE_SERVERKEY:
	case ZMQ_HANDSHAKE_IVL:
	case ZMQ_HEARTBEAT_IVL:
	case ZMQ_HEARTBEAT_TTL:
	case ZMQ_HEARTBEAT_TIMEOUT:
	case ZMQ_XPUB_VERBOSER:
	case ZMQ_PROBE_ROUTER:
	case ZMQ_REQ_CORRELATE:
	case ZMQ_REQ_RELAXED:
	case ZMQ_CONFLATE:
	case ZMQ_XPUB_NODROP:
	case ZMQ_XPUB_MANUAL:
	case ZMQ_XPUB_WELCOME_MSG:
	case ZMQ_INVERT_MATCHING:
		return true;
	default:
		return false;
	}
}

/*
 * Options zring does not implement, readable at libzmq's default (pyzmq
 * reads every option): setting the default is accepted, any other value
 * fails with EINVAL. Returns false for other options.
 */
static bool
zc_fixed_int(int option, int *dflt)
{
	switch (option) {
	case ZMQ_USE_FD:
		*dflt = -1;
		return true;
	default:
		return false;
	}
}

/* The int options kept without effect (struct zc_inert); NULL for others. */
static int *
zc_inert_int(struct zc_socket *s, int option)
{
	struct zc_inert *n = &s->inert;

	switch (option) {
	case ZMQ_RATE:
		return &n->rate;
	case ZMQ_RECOVERY_IVL:
		return &n->recovery_ivl;
	case ZMQ_MULTICAST_HOPS:
		return &n->multicast_hops;
	case ZMQ_MULTICAST_MAXTPDU:
		return &n->multicast_maxtpdu;
	case ZMQ_BACKLOG:
		return &n->backlog;
	case ZMQ_TOS:
		return &n->tos;
	case ZMQ_IMMEDIATE:
		return &n->immediate;
	case ZMQ_ROUTER_HANDOVER:
		return &n->router_handover;
	case ZMQ_TCP_KEEPALIVE:
		return &n->tcp_keepalive;
	case ZMQ_TCP_KEEPALIVE_CNT:
		return &n->tcp_keepalive_cnt;
	case ZMQ_TCP_KEEPALIVE_IDLE:
		return &n->tcp_keepalive_idle;
	case ZMQ_TCP_KEEPALIVE_INTVL:
		return &n->tcp_keepalive_intvl;
	case ZMQ_CONNECT_TIMEOUT:
		return &n->connect_timeout;
	case ZMQ_TCP_MAXRT:
		return &n->tcp_maxrt;
	case ZC_LOOPBACK_FASTPATH: /* Windows only in libzmq */
		return &n->loopback_fastpath;
	case ZC_MULTICAST_LOOP:
		return &n->multicast_loop;
	default:
		return NULL;
	}
}

/*
 * libzmq 4.3's PLAIN server cannot do without a ZAP handler (it fails the
 * handshake when none is bound), while its CURVE server and NULL with a
 * ZAP_DOMAIN accept every client then unless ZAP_ENFORCE_DOMAIN is set.
 * zring accepts in all three without ENFORCE, so a PLAIN server here gets
 * ENFORCE; re-judged whenever the mechanism or the option changes (the
 * last mechanism option set wins). ZAP_ENFORCE_DOMAIN reads back as set.
 */
static int
zc_zap_rule(struct zc_socket *s)
{
	int mech = 0, server = 0, enforce;
	size_t n = sizeof mech;

	if (zr_getsockopt(s->zr, ZR_MECHANISM, &mech, &n) < 0)
		return -EINVAL;
	n = sizeof server;
	if (mech == ZR_MECH_PLAIN && zr_getsockopt(s->zr, ZR_PLAIN_SERVER, &server, &n) < 0)
		return -EINVAL;
	enforce = s->inert.zap_enforce || (mech == ZR_MECH_PLAIN && server);
	return zr_setsockopt(s->zr, ZR_ZAP_ENFORCE_DOMAIN, &enforce, sizeof enforce);
}

ZC_API int
zmq_setsockopt(void *sock, int option, const void *v, size_t len)
{
	struct zc_socket *s = zc_sock_of(sock);
	int *inert;
	int i;
	int err;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (zc_terminating(s->ctx) && option != ZMQ_LINGER)
		return zc_fail(ETERM);
	switch (option) {
	case ZMQ_SNDTIMEO:
	case ZMQ_RCVTIMEO:
		err = zc_int_arg(v, len, &i);
		if (err != 0 || i < -1)
			return zc_fail(EINVAL);
		*(option == ZMQ_SNDTIMEO ? &s->sndtimeo : &s->rcvtimeo) = i;
		return 0;
	case ZMQ_IPV4ONLY:
		err = zc_int_arg(v, len, &i);
		if (err != 0 || (i != 0 && i != 1))
			return zc_fail(EINVAL);
		i = !i;
		return zmq_setsockopt(sock, ZMQ_IPV6, &i, sizeof i);
	case ZMQ_AFFINITY:
		if (v == NULL || len != sizeof(uint64_t))
			return zc_fail(EINVAL);
		memcpy(&s->inert.affinity, v, sizeof(uint64_t));
		return 0;
	case ZC_ZAP_ENFORCE_DOMAIN: {
		int rc;

		if (zc_int_arg(v, len, &i) != 0 || (i != 0 && i != 1))
			return zc_fail(EINVAL);
		s->inert.zap_enforce = i;
		rc = zc_zap_rule(s);
		return rc < 0 ? zc_fail_zr(rc) : 0;
	}
	case ZMQ_ZAP_DOMAIN: {
		/* zring keeps the octets (ZR_ZAP_DOMAIN); the copy here reads
		 * back as libzmq's NUL-terminated string. */
		int rc;

		if (len >= sizeof s->inert.zap_domain || (v == NULL && len > 0))
			return zc_fail(EINVAL);
		rc = zr_setsockopt(s->zr, ZR_ZAP_DOMAIN, v, len);
		if (rc < 0)
			return zc_fail_zr(rc);
		if (len > 0)
			memcpy(s->inert.zap_domain, v, len);
		s->inert.zap_domain[len] = '\0';
		return 0;
	}
	case ZMQ_MAXMSGSIZE: {
		int64_t n;

		if (v == NULL || len != sizeof n)
			return zc_fail(EINVAL);
		memcpy(&n, v, sizeof n);
		if (n < -1)
			return zc_fail(EINVAL);
		break;
	}
	case ZMQ_LINGER:
	case ZMQ_RECONNECT_IVL:
	case ZMQ_RECONNECT_IVL_MAX:
	case ZMQ_SNDHWM:
	case ZMQ_RCVHWM:
	case ZMQ_SNDBUF:
	case ZMQ_RCVBUF:
	case ZMQ_HANDSHAKE_IVL:
	case ZMQ_HEARTBEAT_IVL:
	case ZMQ_HEARTBEAT_TTL:
	case ZMQ_HEARTBEAT_TIMEOUT:
		/* libzmq: LINGER, SNDBUF, RCVBUF take -1; the rest must be >= 0. */
		if (zc_int_arg(v, len, &i) != 0 ||
		    i < (option == ZMQ_LINGER || option == ZMQ_SNDBUF || option == ZMQ_RCVBUF ? -1
		                                                                              : 0))
			return zc_fail(EINVAL);
		if ((option == ZMQ_SNDBUF || option == ZMQ_RCVBUF) && i == -1) {
			i = 0; /* libzmq's "OS default" is zring's 0 */
			v = &i;
		}
		break;
	case ZMQ_SUBSCRIBE:
	case ZMQ_UNSUBSCRIBE:
		/* XPUB: only with XPUB_MANUAL, which zring checks. */
		if (s->type != ZMQ_SUB && s->type != ZMQ_XSUB && s->type != ZMQ_XPUB)
			return zc_fail(EINVAL);
		break;
	default:
		break;
	}
	if (zc_zr_option(option)) {
		int rc = zr_setsockopt(s->zr, option, v, len);

		if (rc == -EINVAL && (option == ZMQ_SNDHWM || option == ZMQ_RCVHWM)) {
			/* valid (checked above), so refused only for being late */
			*(option == ZMQ_SNDHWM ? &s->inert.late_sndhwm : &s->inert.late_rcvhwm) = i;
			return 0;
		}
		if (rc == 0 && (option == ZMQ_PLAIN_USERNAME || option == ZMQ_PLAIN_PASSWORD)) {
			int k = option == ZMQ_PLAIN_PASSWORD;

			if (len >= sizeof s->inert.plain[k])
				len = sizeof s->inert.plain[k] - 1;
			if (len > 0)
				memcpy(s->inert.plain[k], v, len);
			s->inert.plain[k][len] = '\0';
			s->inert.plain_len[k] = len;
		}
		if (rc == 0 && option == ZMQ_REQ_RELAXED) {
			memcpy(&i, v, sizeof i); /* an int: zring checked it */
			s->req_relaxed = i != 0;
		}
		if (rc == 0 && (option == ZMQ_PLAIN_SERVER || option == ZMQ_PLAIN_USERNAME ||
		                option == ZMQ_PLAIN_PASSWORD || option == ZMQ_CURVE_SERVER ||
		                option == ZMQ_CURVE_SERVERKEY || option == ZMQ_CURVE_PUBLICKEY ||
		                option == ZMQ_CURVE_SECRETKEY))
			rc = zc_zap_rule(s);
		return rc < 0 ? zc_fail_zr(rc) : 0;
	}
	inert = zc_inert_int(s, option);
	if (inert != NULL) {
		if (zc_int_arg(v, len, &i) != 0)
			return zc_fail(EINVAL);
		*inert = i;
		return 0;
	}
	{
		int dflt;

		if (zc_fixed_int(option, &dflt) && zc_int_arg(v, len, &i) == 0 && i == dflt)
			return 0;
	}
	return zc_fail(EINVAL);
}

ZC_API int
zmq_getsockopt(void *sock, int option, void *v, size_t *len)
{
	struct zc_socket *s = zc_sock_of(sock);
	int *inert;
	int rc;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (len == NULL || (v == NULL && *len > 0))
		return zc_fail(EFAULT);
	switch (option) {
	case ZMQ_TYPE:
		return zc_int_out(v, len, s->type);
	case ZMQ_RCVMORE:
		return zc_int_out(v, len, s->rcvmore);
	case ZMQ_SNDTIMEO:
		return zc_int_out(v, len, s->sndtimeo);
	case ZMQ_RCVTIMEO:
		return zc_int_out(v, len, s->rcvtimeo);
	case ZMQ_THREAD_SAFE:
		return zc_int_out(v, len, 0);
	case ZMQ_FD:
		if (zc_terminating(s->ctx))
			return zc_fail(ETERM);
		if (s->ep_fd < 0) {
			int err = zc_make_fd(s);

			if (err != 0)
				return zc_fail(err);
		}
		return zc_int_out(v, len, s->ep_fd);
	case ZMQ_EVENTS:
		if (zc_terminating(s->ctx))
			return zc_fail(ETERM);
		return zc_int_out(v, len, zc_events(s));
	case ZMQ_IPV4ONLY: {
		int ipv6;
		size_t n = sizeof ipv6;

		rc = zr_getsockopt(s->zr, ZR_IPV6, &ipv6, &n);
		if (rc < 0)
			return zc_fail_zr(rc);
		return zc_int_out(v, len, !ipv6);
	}
	case ZMQ_AFFINITY:
		if (*len < sizeof(uint64_t))
			return zc_fail(EINVAL);
		memcpy(v, &s->inert.affinity, sizeof(uint64_t));
		*len = sizeof(uint64_t);
		return 0;
	case ZC_ZAP_ENFORCE_DOMAIN:
		return zc_int_out(v, len, s->inert.zap_enforce);
	case ZMQ_ZAP_DOMAIN: {
		size_t n = strlen(s->inert.zap_domain) + 1;

		if (*len < n)
			return zc_fail(EINVAL);
		memcpy(v, s->inert.zap_domain, n);
		*len = n;
		return 0;
	}
	case ZMQ_SNDHWM:
		if (s->inert.late_sndhwm >= 0)
			return zc_int_out(v, len, s->inert.late_sndhwm);
		break;
	case ZMQ_RCVHWM:
		if (s->inert.late_rcvhwm >= 0)
			return zc_int_out(v, len, s->inert.late_rcvhwm);
		break;
	case ZMQ_PLAIN_USERNAME:
	case ZMQ_PLAIN_PASSWORD: {
		int k = option == ZMQ_PLAIN_PASSWORD;
		size_t n = s->inert.plain_len[k] + 1;

		if (v == NULL || *len < n)
			return zc_fail(EINVAL);
		memcpy(v, s->inert.plain[k], n);
		*len = n;
		return 0;
	}
	case ZMQ_LAST_ENDPOINT:
		rc = zr_getsockopt(s->zr, ZR_LAST_ENDPOINT, v, len);
		return rc < 0 ? zc_fail_zr(rc) : 0;
	default:
		break;
	}
	if (zc_zr_option(option) && option != ZMQ_SUBSCRIBE && option != ZMQ_UNSUBSCRIBE) {
		rc = zr_getsockopt(s->zr, option, v, len);
		return rc < 0 ? zc_fail_zr(rc) : 0;
	}
	inert = zc_inert_int(s, option);
	if (inert != NULL)
		return zc_int_out(v, len, *inert);
	{
		int dflt;

		if (zc_fixed_int(option, &dflt))
			return zc_int_out(v, len, dflt);
	}
	return zc_fail(EINVAL);
}

/* ---- monitor --------------------------------------------------------------- */

/*
 * zmq_socket_monitor: a thread per monitored socket reads zring's event
 * queue (zr_monitor_recv) and sends each event, as libzmq does, as two
 * frames on a PAIR bound to the given inproc:// endpoint: 6 octets (the
 * event number as uint16 and its value as uint32, host order) and the
 * endpoint. The thread only reads the socket's event queue, which zring lets
 * one thread do beside the socket's user.
 */
#define ZC_MONITOR_SLICE_MS 100

struct zc_monitor {
	pthread_t thread;
	void *pair;
	atomic_bool stop;
	int mask; /* the events the user asked for */
	struct zc_socket *s;
};

/* zring's value for an event as libzmq gives it. */
static uint32_t
zc_event_value(const struct zr_event *ev)
{
	switch (ev->type) {
	case ZR_EVENT_ACCEPT_FAILED:
		return (uint32_t)(ev->value < 0 ? -ev->value : ev->value);
	case ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL:
		switch (-ev->value) {
		case ZR_EMECHMISMATCH:
			return ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH;
		case ZR_ECURVEBOX:
		case ZR_ECURVEKEY:
		case ZR_ECURVENONCE:
		case ZR_ECURVECOOKIE:
			return ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC;
		case ZR_EUNEXPECTED:
			return ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND;
		case ZR_EPROPNAME:
		case ZR_EPROPTRUNC:
		case ZR_EPROPVALUE:
			return ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_METADATA;
		default:
			return ZMQ_PROTOCOL_ERROR_ZMTP_UNSPECIFIED;
		}
	default:
		return (uint32_t)ev->value;
	}
}

/* Sends one event; false once the monitor should stop. */
static bool
zc_monitor_send(struct zc_monitor *mon, uint16_t event, uint32_t value, const char *endpoint)
{
	unsigned char head[6];
	int more = ZMQ_SNDMORE;

	memcpy(head, &event, sizeof event);
	memcpy(head + 2, &value, sizeof value);
	for (int part = 0; part < 2; part++) {
		const void *data = part == 0 ? (const void *)head : (const void *)endpoint;
		size_t len = part == 0 ? sizeof head : strlen(endpoint);

		for (;;) {
			if (zmq_send(mon->pair, data, len, more) >= 0)
				break;
			if (errno != EAGAIN || atomic_load(&mon->stop))
				return false;
		}
		more = 0;
	}
	return true;
}

/* The only reader of the socket's events while it runs: it counts peers
 * (zc_track) and forwards what the user asked for. */
static void *
zc_monitor_main(void *arg)
{
	struct zc_monitor *mon = arg;
	struct zc_socket *s = mon->s;

	while (!atomic_load(&mon->stop)) {
		struct pollfd p = {.fd = zr_monitor_fd(s->zr), .events = POLLIN};

		(void)poll(&p, 1, ZC_MONITOR_SLICE_MS);
		for (;;) {
			struct zr_event ev;
			int rc;

			pthread_mutex_lock(&s->mon_mu);
			rc = zr_monitor_recv(s->zr, &ev, 0);
			if (rc == 0)
				zc_track(s, &ev);
			pthread_mutex_unlock(&s->mon_mu);
			if (rc < 0)
				break;
			/* libzmq 4.3 reports no event for inproc pipes; zring does. */
			if ((ev.type & mon->mask) && strncmp(ev.endpoint, "inproc://", 9) != 0 &&
			    !zc_monitor_send(mon, (uint16_t)ev.type, zc_event_value(&ev),
			                     ev.endpoint))
				return NULL;
		}
	}
	return NULL;
}

static void
zc_monitor_stop(struct zc_socket *s)
{
	struct zc_monitor *mon = s->monitor;
	int slice = ZC_MONITOR_SLICE_MS;
	int linger = 1000;

	atomic_store(&mon->stop, true);
	pthread_join(mon->thread, NULL);
	(void)zr_socket_monitor(s->zr, ZC_TRACKED);
	/* libzmq's last word on the monitor: MONITOR_STOPPED, if a reader is there. */
	(void)zmq_setsockopt(mon->pair, ZMQ_SNDTIMEO, &slice, sizeof slice);
	atomic_store(&mon->stop, true); /* one slice to hand it over, no retries */
	(void)zc_monitor_send(mon, ZMQ_EVENT_MONITOR_STOPPED, 0, "");
	/* LINGER 0 would drop that last event with the socket: let it go out
	 * (zmq_close does not wait; zmq_ctx_term waits at most this long). */
	(void)zmq_setsockopt(mon->pair, ZMQ_LINGER, &linger, sizeof linger);
	zmq_close(mon->pair);
	free(mon);
	s->monitor = NULL; /* zc_drain reads the events again */
}

ZC_API int
zmq_socket_monitor(void *sock, const char *addr, int events)
{
	struct zc_socket *s = zc_sock_of(sock);
	struct zc_monitor *mon;
	int slice = ZC_MONITOR_SLICE_MS;
	int zero = 0;
	int rc;

	if (s == NULL)
		return zc_fail(ENOTSOCK);
	if (zc_terminating(s->ctx))
		return zc_fail(ETERM);
	if (s->monitor != NULL)
		zc_monitor_stop(s);
	if (addr == NULL)
		return 0;
	if (strncmp(addr, "inproc://", 9) != 0)
		return zc_fail(EPROTONOSUPPORT); /* libzmq: monitors are inproc only */
	mon = calloc(1, sizeof *mon);
	if (mon == NULL)
		return zc_fail(ENOMEM);
	mon->s = s;
	mon->pair = zmq_socket(s->ctx, ZMQ_PAIR);
	if (mon->pair == NULL) {
		free(mon);
		return -1;
	}
	(void)zmq_setsockopt(mon->pair, ZMQ_LINGER, &zero, sizeof zero);
	(void)zmq_setsockopt(mon->pair, ZMQ_SNDTIMEO, &slice, sizeof slice);
	if (zmq_bind(mon->pair, addr) < 0) {
		int err = errno;

		zmq_close(mon->pair);
		free(mon);
		return zc_fail(err);
	}
	mon->mask = events & ZR_EVENT_ALL;
	rc = zr_socket_monitor(s->zr, ZC_TRACKED | mon->mask);
	s->monitor = mon; /* from here the thread alone reads the events */
	if (rc == 0)
		rc = -pthread_create(&mon->thread, NULL, zc_monitor_main, mon);
	if (rc < 0) {
		s->monitor = NULL;
		(void)zr_socket_monitor(s->zr, ZC_TRACKED);
		zmq_close(mon->pair);
		free(mon);
		return zc_fail_zr(rc);
	}
	return 0;
}
