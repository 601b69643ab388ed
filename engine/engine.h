/*
 * engine/ — internal: where the codec (zmtp/) and the runtime (io/) meet.
 * Not installed. Three kinds of objects:
 *
 *   zr_ctx     owns the io thread and its loop; app threads reach it through
 *              a locked command list (rare: bind, connect, close) and a
 *              lock-free stack of "dirty" sockets plus one loop wakeup.
 *   zr_socket  an app-facing half (the two SPSC queues, eventfds, options)
 *              and an io-side half (connections, routing state) touched only
 *              on the io thread.
 *   zr__conn   one ZMTP connection: fd, codec, input buffer, output queue,
 *              its operations and timers on the loop (io/). io thread only.
 *
 * Data path: zr_send pushes into s->tx (app -> io), marks the socket dirty
 * and wakes the loop if it sleeps; the io thread routes each message to a
 * connection's queue and writes frames with one sendmsg in flight per
 * connection. Received messages are assembled per connection and pushed to
 * s->rx (io -> app); when s->rx is full the connection stops arming receives
 * (the backpressure rule, DESIGN.md) until the app makes room.
 */
#ifndef ZR_ENGINE_ENGINE_H
#define ZR_ENGINE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <zring/zmtp.h>
#include <zring/zring.h>

#include "io/endpoint.h"
#include "io/loop.h"
#include "pattern.h"
#include "sock.h"
#include "subs.h"
#include "tls.h"

/* ---- messages ----------------------------------------------------------- */

struct zr__span {
	size_t off, len;
};

#define ZR__MSG_INLINE_FRAMES 4

struct zr_msg {
	uint32_t nframes, frame_cap;
	struct zr__span *frames; /* inl while frame_cap <= ZR__MSG_INLINE_FRAMES */
	struct zr__span inl[ZR__MSG_INLINE_FRAMES];
	uint8_t *data;
	size_t len;
	union {
		size_t cap;                /* !hooked: data's size */
		struct zr__msg_hook *hook; /* hooked: zr_msg_new_data / zr_msg_set_free */
	};
	uint32_t refs;         /* io thread only: a fan-out shares one message */
	bool raw;              /* io thread only: data is wire bytes (a subscription) */
	bool hooked;           /* a free callback to run when zring is done (msg.c) */
	struct zr__meta *meta; /* received: its connection's properties (zr_msg_gets) */
};

/* The bytes every message has in its own allocation, right after the
 * struct (zr_msg_new): a small message's whole buffer, so that it is one
 * block, not two (msg.c). */
#define ZR__MSG_OWN_BYTES ((size_t)64)

static inline uint8_t *
zr__msg_own(const zr_msg *m)
{
	return (uint8_t *)(uintptr_t)(m + 1);
}

/*
 * A connection's properties for zr_msg_gets: made once per connection when
 * its handshake completes, shared by every message received on it (freed
 * by whichever thread drops the last reference).
 */
struct zr__meta {
	atomic_uint refs;
	size_t len;
	char kv[]; /* "Name\0Value\0" pairs */
};

/* props: the peer's validated metadata block; peer_address and user_id may
 * be NULL or "". Returns NULL on allocation failure. */
struct zr__meta *zr__meta_new(const uint8_t *props, size_t props_len, const char *peer_address,
                              const char *user_id);
struct zr__meta *zr__meta_ref(struct zr__meta *m);
void zr__meta_unref(struct zr__meta *m);
/* Takes n references at once / drops n at once (frees on the last). */
void zr__meta_ref_n(struct zr__meta *m, uint32_t n);
void zr__meta_unref_n(struct zr__meta *m, uint32_t n);

int zr__msg_reserve(zr_msg *m, size_t extra);
/* Starts a frame of size bytes (reserved at once: size is bounded by MAXMSGSIZE). */
int zr__msg_frame_begin(zr_msg *m, size_t size);
/* Appends to the last frame. */
void zr__msg_frame_append(zr_msg *m, const void *data, size_t len);
/* Where the last frame's next bytes go (within what frame_begin reserved),
 * and len of them put there by the caller (a receive straight into it). */
uint8_t *zr__msg_frame_tail(zr_msg *m);
void zr__msg_frame_placed(zr_msg *m, size_t len);
/* m (no frames, no free callback) takes buf, cap octets from malloc, as its
 * data, with one frame: the len octets at off. A body that arrived (and was
 * opened) in a connection's buffer becomes the message's without a copy.
 * False (buf still the caller's) if m does not qualify. */
bool zr__msg_adopt(zr_msg *m, uint8_t *buf, size_t cap, size_t off, size_t len);
/* Takes m's buffer when it is a heap one of its own (not hooked); m is
 * left with its own bytes, its frames to be cleared by the caller. Returns
 * the buffer (*cap: its size) or NULL. */
uint8_t *zr__msg_take_buf(zr_msg *m, size_t *cap);
/* The empty m (no frames, no free callback) takes buf, cap octets from
 * malloc, as its buffer. */
void zr__msg_give_buf(zr_msg *m, uint8_t *buf, size_t cap);
/* Drops the first n frames (their bytes stay; the view moves). */
void zr__msg_drop_front(zr_msg *m, uint32_t n);
/* Prepends a frame (used for routing ids). */
int zr__msg_push_front(zr_msg *m, const void *data, size_t len);
void zr__msg_unref(zr_msg *m);
/*
 * What m counts for in the byte budgets (SNDBYTES, RCVBYTES, a peer's send
 * queue): its bytes and, per frame, the span that describes it. Without the
 * spans, a message of many empty frames would cost nothing, and a queue of
 * such messages would be bounded only by the HWM. The caller that adds it to
 * a running total subtracts the same figure: m's frames must not change in
 * between.
 */
static inline size_t
zr__msg_cost(const zr_msg *m)
{
	return m->len + (size_t)m->nframes * sizeof(struct zr__span);
}

/* A spare message keeps a buffer up to this size whatever its ring holds. */
#define ZR__MSG_SPARE_SMALL ((size_t)256)
/* Empties m for reuse (frames, bytes, properties); keeps a small buffer.
 * Returns false if m is not worth keeping (the caller frees it). */
bool zr__msg_recycle(zr_msg *m);
/* The same, keeping a buffer of up to keep octets too (a spare ring with
 * room for it: zr__sock_spare_give). */
bool zr__msg_recycle_keep(zr_msg *m, size_t keep);
/* The size of the buffer m would keep once emptied (0: none of its own). */
size_t zr__msg_keep_cap(const zr_msg *m);
/* Frees an empty m's buffer (not a hooked one's). */
void zr__msg_drop_data(zr_msg *m);
/* A spare (empty, never hooked) about to take a message of about want
 * octets drops a larger buffer than it needs (over twice want, and more
 * than a small one): what the queues count is a message's length, so its
 * buffer must not be many times that. Inline: every message passes here. */
static inline void
zr__msg_fit(zr_msg *m, size_t want)
{
	if (m->cap > ZR__MSG_SPARE_SMALL && m->cap / 2 > want)
		zr__msg_drop_data(m);
}
/*
 * zr_msg_add's usual case, inline for the paths that fill one message per
 * call (zr_send_bytes, a receiver's run of small messages): the first frame
 * of an empty message whose own buffer holds it (a spare's, kept from its
 * last message). False, m untouched, when that does not apply.
 */
static inline bool
zr__msg_put_first(zr_msg *m, const void *data, size_t len)
{
	if (m->nframes != 0 || m->len != 0 || m->hooked || len > m->cap)
		return false;
	if (len > 0)
		memcpy(m->data, data, len);
	m->frames[0] = (struct zr__span){.off = 0, .len = len};
	m->nframes = 1;
	m->len = len;
	return true;
}
/* Small: its bytes would fit a spare's buffer and its frames the inline table. */
bool zr__msg_small(const zr_msg *m);
/* The empty dst takes a copy of the small src's frames and bytes, and its
 * property reference (src is left without one). */
int zr__msg_take_small(zr_msg *dst, zr_msg *src);
/* zr_recv_into's usual case in one call: a plain dst whose buffer holds
 * src (small) takes a copy of src's bytes, spans and properties, and src
 * comes out as zr__msg_recycle leaves it. False, with neither touched, when
 * that does not apply (the caller then takes the general way). */
bool zr__msg_move_small(zr_msg *dst, zr_msg *src);
/* a and b trade everything they hold (frames, bytes, properties). */
void zr__msg_swap(zr_msg *a, zr_msg *b);

/* ---- single-producer single-consumer queue of pointers ------------------- */

/*
 * The queue's storage: a chain of rings. A queue starts with a small one
 * and, when the producer finds it full below the queue's limit, links a
 * ring twice its size and goes on there; the consumer drains the old ring,
 * follows the link and frees it. So an idle socket holds a few slots, not
 * its HWM's worth, and a busy one allocates log2(limit / first) times in
 * its life, never per message. Rings do not shrink back: a queue that once
 * filled is likely to fill again, and the limit (the HWM) bounds it.
 */
struct zr__spsc_seg {
	struct zr__spsc_seg *_Atomic next; /* the producer's next ring (NULL: none yet) */
	size_t end;                        /* first index not in this ring; set before next is */
	void *slots[];
};

/* Each side's fields on its own cache line, the other side's index cached.
 * The consumer reads a ring's header only to follow a link, and learns of
 * links from the count beside tail, which it reads with tail: a receiver
 * of 1,000 sockets paid a cache miss per visit when it looked at the
 * header every time (+10% CPU). */
struct zr__spsc {
	_Alignas(64) atomic_size_t head; /* consumer owns */
	size_t tail_cache;
	struct zr__spsc_seg *cseg; /* the ring the consumer reads ... */
	void **cslots;             /* ... its slots and mask, on this line */
	size_t cmask;
	size_t clinks;                   /* links the consumer followed ... */
	size_t links_seen;               /* ... and made, as of its last look at tail */
	size_t limit;                    /* the queue's capacity (a power of two) */
	_Alignas(64) atomic_size_t tail; /* producer owns; what the consumer may read */
	size_t ptail;                    /* producer: written up to here (>= tail) */
	atomic_size_t links;             /* rings linked (written before tail) */
	size_t head_cache;
	struct zr__spsc_seg *pseg; /* the ring the producer writes ... */
	void **pslots;             /* ... its slots and mask */
	size_t pmask;
	size_t pstart; /* the first index written to pseg */
	size_t plimit; /* limit, on the producer's line */
};

int zr__spsc_init(struct zr__spsc *q, size_t min_cap);
/* The same with a first ring of first_cap slots (rounded up to a power of
 * two, at most the limit) instead of the default few. */
int zr__spsc_init_first(struct zr__spsc *q, size_t min_cap, size_t first_cap);
void zr__spsc_fini(struct zr__spsc *q);
/* The slow halves of the inline functions below: a ring's end, a stale
 * cached index. Not for other callers. */
bool zr__spsc_push_slow(struct zr__spsc *q, void *p);
void *zr__spsc_peek_slow(struct zr__spsc *q);

/*
 * Producer: a push the consumer does not see until zr__spsc_publish (or a
 * later zr__spsc_push). One store of tail then covers a batch: each store
 * was a cache line the consumer, chasing the producer, pulled over per
 * entry. The entries count against the limit at once. False when the queue
 * holds its limit (or a ring could not be grown).
 *
 * The common cases of push and pop are inline: the calls were most of what
 * each cost, paid per message twice on either thread of a receiver.
 */
static inline bool
zr__spsc_push_quiet(struct zr__spsc *q, void *p)
{
	size_t t = q->ptail;

	/* Room by the cached head: below the limit, and in this ring (from
	 * pstart or head on, whichever is later, fewer than its slots). */
	if (t - q->head_cache <= q->pmask) {
		q->pslots[t & q->pmask] = p;
		q->ptail = t + 1;
		return true;
	}
	return zr__spsc_push_slow(q, p);
}

/* Producer: what zr__spsc_push_quiet wrote becomes the consumer's. Release
 * on tail publishes the slots' contents. */
static inline void
zr__spsc_publish(struct zr__spsc *q)
{
	if (atomic_load_explicit(&q->tail, memory_order_relaxed) != q->ptail)
		atomic_store_explicit(&q->tail, q->ptail, memory_order_release);
}

/* Producer: a push the consumer sees at once. */
static inline bool
zr__spsc_push(struct zr__spsc *q, void *p)
{
	if (!zr__spsc_push_quiet(q, p))
		return false;
	atomic_store_explicit(&q->tail, q->ptail, memory_order_release);
	return true;
}

/* Consumer: the oldest entry, left in place, or NULL. */
static inline void *
zr__spsc_peek(struct zr__spsc *q)
{
	size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (h != q->tail_cache && q->clinks == q->links_seen)
		return q->cslots[h & q->cmask];
	return zr__spsc_peek_slow(q);
}

/* Consumer: the oldest entry, taken, or NULL. */
static inline void *
zr__spsc_pop(struct zr__spsc *q)
{
	void *p = zr__spsc_peek(q);

	if (p != NULL)
		atomic_store_explicit(&q->head,
		                      atomic_load_explicit(&q->head, memory_order_relaxed) + 1,
		                      memory_order_release);
	return p;
}

/* Consumer: the entry k places after the oldest (0: the oldest), left in
 * place, when the consumer's cached view shows it in the ring it reads (no
 * line the producer writes is read), else NULL. For prefetches of what the
 * next pops will hand out, and runs taken with one zr__spsc_drop. A ring
 * the consumer knows was outgrown has its end set, and it holds the
 * entries before that end. */
static inline void *
zr__spsc_peek_cached(struct zr__spsc *q, size_t k)
{
	size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (q->tail_cache - h > k && (q->clinks == q->links_seen || h + k < q->cseg->end))
		return q->cslots[(h + k) & q->cmask];
	return NULL;
}

/* Consumer: the n oldest entries, which zr__spsc_peek_cached showed, are
 * taken, with one store for all of them. */
static inline void
zr__spsc_drop(struct zr__spsc *q, size_t n)
{
	if (n > 0)
		atomic_store_explicit(&q->head,
		                      atomic_load_explicit(&q->head, memory_order_relaxed) + n,
		                      memory_order_release);
}

size_t zr__spsc_count(struct zr__spsc *q); /* approximate from either side */
/* Producer: how many are queued, from its cached view of the consumer; exact
 * once that view reaches limit (below it, the figure may overstate). */
size_t zr__spsc_count_upto(struct zr__spsc *q, size_t limit);
size_t zr__spsc_cap(const struct zr__spsc *q);

/* ---- options ------------------------------------------------------------ */

/* ZR_BUSY_POLL's largest value, microseconds (zring.h). */
#define ZR__BUSY_POLL_MAX 1000000
/* ZR_WAKE_COALESCE's default and largest value, microseconds (zring.h). */
#define ZR__WAKE_COALESCE_DEFAULT 20
#define ZR__WAKE_COALESCE_MAX 1000
/* App threads busy-poll only with this many CPUs or more: a request/reply
 * pair on one machine then has a core for each of its four threads. With
 * fewer, the io threads alone spin: on 2 cores, spinning in all four made
 * REQ/REP 64 B slower than not spinning at all (bench/README.md). */
#define ZR__BUSY_APP_CPUS 4

struct zr__options {
	int sndhwm, rcvhwm;
	int linger_ms, sndtimeo_ms, rcvtimeo_ms;
	int reconnect_ivl_ms, reconnect_ivl_max_ms;
	int handshake_ivl_ms;
	int heartbeat_ivl_ms, heartbeat_ttl_ms, heartbeat_timeout_ms;
	int sndbuf, rcvbuf;
	int64_t maxmsgsize;
	int maxframes;              /* frames per received message; -1: no limit */
	int64_t sndbytes, rcvbytes; /* byte budgets beside the HWMs */
	int pub_policy;             /* enum zr_pub_policy */
	int conns_max;              /* accepted connections at once; 0: no limit */
	int subs_max;               /* PUB/XPUB: subscriptions one peer may hold (-1: no limit) */
	int64_t subs_maxbytes;      /* ... and their bytes, as subs.h counts them (-1: no limit) */
	int xpub_verbose;           /* 0, 1 (every subscribe), 2 (and every held cancel) */
	int busy_poll_us;           /* ZR_BUSY_POLL: spin this long before a wait sleeps */
	int wake_coalesce_us;       /* ZR_WAKE_COALESCE (zring.h) */
	bool router_mandatory;
	bool ipv6;
	/* libzmq's pattern options (zring.h) */
	bool conflate;        /* CONFLATE: see conflate_rx / conflate_tx on the socket */
	bool req_relaxed;     /* REQ: a new request may go before the reply */
	bool req_correlate;   /* REQ: a request id frame before the delimiter */
	bool probe_router;    /* DEALER, REQ, ROUTER: an empty message to each new peer */
	bool invert_matching; /* PUB, XPUB, SUB, XSUB: send / take what does not match */
	bool xpub_manual;     /* XPUB: the app confirms each subscription */
	uint8_t xpub_welcome_msg[ZR__SUB_MAX];
	size_t xpub_welcome_msg_len; /* 0: none */
	/* ZAP (RFC 27): the domain sent in requests; a non-empty one makes NULL
	 * peers asked too. ENFORCE: no handler bound refuses instead of
	 * accepting. */
	uint8_t zap_domain[ZR__SUB_MAX];
	size_t zap_domain_len;
	bool zap_enforce_domain;
	/* security: the last mechanism option set decides (libzmq's rule) */
	int mechanism; /* enum zr_mechanism */
	bool as_server;
	bool curve_public_set, curve_secret_set, curve_server_set;
	uint8_t curve_public[ZR_CURVE_KEY_LEN], curve_secret[ZR_CURVE_KEY_LEN],
		curve_server[ZR_CURVE_KEY_LEN];
	uint8_t routing_id[ZR__SUB_MAX];
	size_t routing_id_len;
	uint8_t username[ZR__SUB_MAX], password[ZR__SUB_MAX];
	size_t username_len, password_len;
	/* TLS (tls:// endpoints): each a PEM path or PEM text, owned, NUL-
	 * terminated (NULL: unset); freed and wiped with the socket. */
	char *tls_cert, *tls_key, *tls_ca, *tls_server_name;
	size_t tls_cert_len, tls_key_len, tls_ca_len, tls_server_name_len;
	int tls_verify;      /* clients: 1 (default) verifies the server */
	int tls_version_min; /* ZR_TLS_V13 (default) or ZR_TLS_V12 */
};

/* ---- connections ---------------------------------------------------------- */

enum zr__conn_state {
	ZR__CONN_CONNECTING = 1, /* connect in flight (connecter only) */
	ZR__CONN_WAITING,        /* between attempts (connecter only) */
	ZR__CONN_HANDSHAKE,
	ZR__CONN_ACTIVE,
	ZR__CONN_FINISHING, /* closing drained: our FIN sent, reading to the peer's */
	ZR__CONN_CLOSING,   /* fd shut down, waiting for operations to finish */
};

#define ZR__CONN_IOV_MAX 128
/* A connection's first iovec table: a few messages per batch; a batch that
 * ran out doubles it for the next, up to ZR__CONN_IOV_MAX. */
#define ZR__CONN_IOV_FIRST 8
#define ZR__CONN_TX_BATCH ((size_t)256 * 1024)
/* The same for a plain batch, whose frames go by reference (no buffer
 * grows with it): a loopback send costs its sender less per byte in larger
 * writes (bench/README.md, "Larger plain batches"). */
#define ZR__CONN_TX_REF_BATCH ((size_t)1024 * 1024)
/* Frames up to this size are copied, with their header, into one packed
 * region of the batch (ZR__CONN_PACK octets at most) instead of taking two
 * iovecs each: 1-64 B messages then fill a sendmsg by the thousand. 1 KiB
 * (not 256 octets, with 64 KiB, not 16, to pack into): a 1 KiB sender used
 * 0.53 -> 0.38 s of CPU per million messages and a 256 B one 0.121 -> 0.098
 * (medians of 8 and 4 A/B runs of bench_zr; 8 KiB unchanged). */
#define ZR__CONN_SMALL_FRAME 1024u
#define ZR__CONN_PACK ((size_t)64 * 1024)
#define ZR__CONN_RX_BUF ((size_t)64 * 1024)
/* c->in's first size: a handshake fits; a busy connection grows it by
 * doubling (a receive that fills it) up to ZR__CONN_RX_BUF, so an idle
 * connection holds half a KiB and a streaming one reads 64 KiB at a time. */
#define ZR__CONN_RX_FIRST ((size_t)512)
/*
 * What a context's message-receiving connections read from the kernel at a
 * time, together: each reads up to ZR__CONN_RX_BUF while they are few, and
 * an equal share, down to ZR__CONN_RX_READ_MIN, when there are more than
 * 256. A read is a decoded batch, and each socket keeps a batch's worth of
 * messages circulating (its spares), so reads of 64 KiB on 1,000 SUB
 * sockets held 290 MB in the reader (72,000 page faults in 10,000
 * fan-outs of 64 B); their shares of 16 KiB hold 137-157 MB (34,000-39,000
 * faults) at a 1.1-1.6x higher rate. One connection keeps 64 KiB reads:
 * 16 KiB halved a 1 KiB stream's rate.
 */
#define ZR__CTX_RX_READ ((size_t)16 << 20)
#define ZR__CONN_RX_READ_MIN ((size_t)16 * 1024)
#define ZR__CONN_SUBJECT ((size_t)ZR_ZMTP_USER_ID_MAX + 1)

struct zr__conn {
	struct zr_socket *sock;
	struct zr__conn *next, *prev; /* the socket's list */
	enum zr__conn_state state;
	int fd;
	bool connecter; /* re-dials ep after a loss */
	bool accepted;  /* counted in the socket's naccepted until freed */
	bool no_reconnect;
	int fail_err; /* what engine_conn_fail closed it for (0: not failed) */
	struct zr__endpoint ep;
	uint32_t attempts;

	struct zr_zmtp z;
	struct zr_zmtp_config zcfg;
	struct zr__op connect_op, rx_op, tx_op;
	struct zr__timer timer; /* codec deadline, or the reconnect delay */
	uint64_t timer_deadline;

	/* receive */
	uint8_t *in;
	size_t in_len, in_cap;
	size_t in_skip; /* consumed bytes at in's start not yet moved out (conn_decode) */
	size_t in_norm; /* in_cap between large items: ZR__CONN_RX_FIRST, doubling */
	bool in_full;   /* the last read filled c->in: worth a larger one */
	bool rx_reader; /* reads messages: counted in the context's rx_readers */
	bool rx_armed, rx_paused;
	bool rx_direct;    /* the receive in flight scatters: rx_msg's frame, then in */
	bool rx_frame_big; /* the frame in assembly is large: its rest goes direct */
	struct iovec rx_iov[2];
	struct msghdr rx_mh;
	zr_msg *rx_msg;   /* in assembly */
	zr_msg *rx_ready; /* complete, waiting for room in the socket's queue */

	/* send: a ring of messages routed here, then one sendmsg in flight */
	zr_msg **outq;
	/* out_cap: a power of two (zr__conn_outq) */
	size_t out_head, out_n, out_cap;
	size_t out_bytes;      /* bytes of the messages in outq (SNDBYTES) */
	bool kick_out;         /* PUB_DISCONNECT: close me at the next timer turn */
	int fin_outq;          /* FINISHING: unacknowledged bytes at the last look */
	uint64_t fin_moved_ms; /* FINISHING: when they last changed */
	bool tx_busy;
	bool tls_tx_busy;      /* tls://: a send of the session's ciphertext in flight */
	bool tls_pumping;      /* tls://: in conn_tls_pump, a nested call only marks work */
	size_t tx_msgs;        /* whole messages at the head of outq the batch finishes */
	uint32_t tx_frame;     /* next frame of the head message to write (a message
	                          with more frames than an iovec spans batches) */
	uint32_t tx_end_frame; /* where the batch in flight stops in the next message */
	size_t tx_ctl;         /* codec control bytes in the batch */
	struct msghdr tx_mh;
	struct iovec *tx_iov;                  /* tx_iov_cap of them, then ... */
	uint8_t (*tx_hdr)[ZR_ZMTP_HEADER_MAX]; /* ... as many headers: one block */
	size_t tx_iov_cap;
	bool tx_iov_short;   /* the last batch ran out of iovecs */
	size_t tx_iov_start; /* first iovec not yet fully written */

	char endpoint[ZR__ENDPOINT_TEXT_MAX];  /* for monitor events */
	char peer_addr[ZR__ENDPOINT_TEXT_MAX]; /* the other end (auth, Peer-Address) */
	int peer_status;                       /* ZAP status from the peer's ERROR */
	char peer_reason[128];                 /* the peer's ERROR reason, as text */
	uint64_t rx_total;                     /* octets received on this connection */
	struct zr__meta *meta;                 /* set once READY: shared with messages */
	uint32_t meta_credit;                  /* references to meta taken ahead, unspent */

	/* The batch's copied bytes: small frames packed header and body
	 * together, or (CURVE) every frame encrypted. Grows to the largest
	 * batch; freed whenever the connection has nothing left to send. */
	uint8_t *tx_buf;
	size_t tx_buf_cap;

	/* routing */
	uint8_t rid[ZR__SUB_MAX + 1];
	size_t rid_len;
	struct zr__subs_owner subs; /* PUB/XPUB: what this subscriber holds in sock->ps.subs */
	uint64_t xpub_serial;       /* XPUB: names it in XPUB_MANUAL's confirmations (>= 1) */
	char drop_why[ZR_EVENT_REASON_MAX]; /* why we closed it, for the DISCONNECTED event */

	/* tls:// (NULL otherwise, and the plain path looks at nothing else):
	 * the session (made when the fd is connected or accepted), the send of
	 * its ciphertext (the receive is rx_op, landing in the session's
	 * inbound ring). The batch of tx_mh goes into the session instead of a
	 * sendmsg: tx_busy until the session took all of it. */
	struct zr__tls *tls;
	struct zr__op tls_tx_op;
	struct msghdr tls_mh;
	struct iovec tls_iov;
	/* The peer certificate's subject once the TLS handshake is done (""
	 * until then, or without one): the authenticator's tls_subject, the
	 * User-Id when the authenticator names none. ZR__CONN_SUBJECT octets,
	 * allocated for a tls:// connection only, kept across reconnects. */
	char *tls_subject;
	/* inproc:// (inproc.c): no fd, no codec; outq is this end's half of
	 * the pipe, the other socket's rx its other half. */
	bool inproc;
	bool ip_live;          /* counted by its socket: the twin may deliver to it */
	bool ip_head_ready;    /* outq's head already has the receiver's envelope */
	bool ip_flush_queued;  /* on the ctx's ip_flush list */
	struct zr__conn *twin; /* the other end (NULL: it went; this one goes too) */
	struct zr__conn *ip_flush_next;

	/* ZAP (zap.c): the request waiting for the handler (0: none), the
	 * context's list of such connections, a reply to act on at the next
	 * timer turn, and the reply's metadata (for the messages' properties). */
	uint32_t zap_id;
	struct zr__conn *zap_next;
	struct zr__conn *zap_pipe; /* the requester's pipe the request went on */
	bool zap_resume;
	uint8_t *zap_props;
	size_t zap_props_len;
	/* On its socket's tx_kicks: a routing pass queued messages here and
	 * starts the send once, at its end, with all of them. */
	bool tx_kick_queued;
	struct zr__conn *tx_kick_next;
};

/* Slot i of c's outq, counted from its head: the ring's size is a power of
 * two, so a mask (a division here was a tenth of a 64 B sender's io thread,
 * perf annotate). */
static inline zr_msg **
zr__conn_outq(const struct zr__conn *c, size_t i)
{
	return &c->outq[(c->out_head + i) & (c->out_cap - 1)];
}

/* ---- sockets ------------------------------------------------------------ */

/* An endpoint text the app bound or connected (app thread only). */
struct zr__eplist {
	struct zr__eplist *next;
	char given[ZR__ENDPOINT_TEXT_MAX];    /* as the app wrote it */
	char resolved[ZR__ENDPOINT_TEXT_MAX]; /* as the io thread names it */
};

/* A socket's event queue (monitor.c): the io thread produces, the app
 * consumes. The queue first: its cache-line alignment would pad a field
 * put before it to a line of its own. */
struct zr__monitor {
	struct zr__spsc q; /* exists once ready (before mask is first set) */
	atomic_int mask;   /* the events the app asked for; 0 until it did */
	atomic_int armed;  /* the app waits: signal efd */
	int efd;
	bool ready;
};

struct zr_socket {
	struct zr_ctx *ctx;
	const struct zr__sock_ops *ops; /* its pattern (pattern.h): chosen at open */
	enum zr_socktype type;
	struct zr__options opt;
	zr_zmtp_auth_cb *auth; /* set by the app before bind/connect; called on the io thread */
	void *auth_arg;
	char last_endpoint[ZR__ENDPOINT_TEXT_MAX];

	/* shared between the app thread and the io thread */
	struct zr__spsc tx, rx;
	/* Spare messages going back to the thread that makes them, so a steady
	 * stream neither mallocs nor frees across threads (glibc then trims and
	 * regrows the io thread's arena): rx_spare app -> io (zr_recv_bytes
	 * returns what it copied out), tx_spare io -> app (what went out, for
	 * zr_send_bytes). Bounded; a full ring frees as before. */
	struct zr__spsc rx_spare, tx_spare;
	/* app -> io: large buffers the app read messages out of, for the
	 * next ones (zr__sock_rx_buf), a few at most (socket.c). */
	struct zr__spsc rx_bufs;
	/* Set once, by the first bind, connect, send or receive. A first send
	 * or receive tells the io thread nothing (no command), and the io thread
	 * reads this when it closes the socket (zr_ctx_free) under that very
	 * call: atomic, so seeing it set means seeing the rings initialised. */
	atomic_bool queues_ready;
	atomic_int busy_poll_us;     /* opt.busy_poll_us, for the io thread (ctx.c) */
	atomic_int wake_coalesce_us; /* opt.wake_coalesce_us, likewise */
	int efd_rx, efd_tx;
	size_t rx_resume_at; /* a paused rx is worth resuming at this many messages */
	/* CONFLATE, fixed when the queues are sized: a receiving type keeps only
	 * the newest message in rx_last instead of the rx ring (the io thread
	 * swaps it in and frees the one it replaces, the app swaps it out); a
	 * sending type keeps at most one unsent message per peer. */
	bool conflate_rx, conflate_tx;
	_Atomic(zr_msg *) rx_last;
	bool rx_refill_each; /* ... at every free slot (a broker's read_ahead channel) */
	/* Fixed at open: the pattern routes a send as it is (no send_prepare,
	 * no send_done), so zr_send_bytes may hand a spare straight over ... */
	bool tx_plain;
	/* ... and hands a received message over as it is (no recv_check, no
	 * recv_finish), so the byte and message receives may pop it straight. */
	bool rx_plain;

	/*
	 * What one thread writes per message lives on a cache line the other
	 * thread only reads, and reads rarely: a locked add on a line the io
	 * thread kept writing was ~80% of zr_recv's samples at 1 B (perf). The
	 * byte counts (RCVBYTES, SNDBYTES) are pairs of running totals, each
	 * written by one side, so neither side needs a locked instruction; a
	 * side reads the other's total only when its cached copy says the
	 * budget is reached.
	 */
	/* the app thread writes */
	_Alignas(64) atomic_int calls;  /* app calls in progress: the io thread frees the
	                                  socket only when none is (a thread blocked in
	                                  zr_recv while the context terminates) */
	atomic_uint calls_tx, calls_rx; /* the same for sends and receives, each made by
	                                   one thread at a time: plain stores when the
	                                   context has membarrier (socket.c) */
	atomic_size_t rx_taken;         /* bytes the app has taken out of rx, ever */
	size_t tx_given;                /* bytes the app has put into tx, ever */
	size_t tx_taken_seen;           /* the app's copy of tx_taken */
	/* zr_recv_into: references to one connection's properties the app
	 * dropped and has not yet given back (one locked subtract per batch,
	 * not per message); the io thread gives them back when it frees the
	 * socket. */
	struct zr__meta *rx_meta_owed;
	uint32_t rx_meta_owed_n;
	/* the io thread writes */
	_Alignas(64) atomic_size_t tx_taken; /* bytes the io thread took out of tx, ever */
	atomic_size_t rx_peak;               /* the most messages rx ever held */
	size_t rx_given;                     /* bytes the io thread has put into rx, ever */
	size_t rx_taken_seen;                /* the io thread's copy of rx_taken */
	bool rx_unsignalled;                 /* rx got messages the app was not told of yet */
	size_t rx_run_depth;                 /* rx's depth as zr__sock_rx_room counted it, and on */
	/* either side, now and then */
	_Alignas(64) atomic_int rx_armed, tx_armed; /* the app waits: signal its eventfd */
	atomic_int tx_fd_armed;     /* zr_socket_poll_events found no room to send: signal
	                           efd_rx (zr_socket_fd) when the handoff drains */
	atomic_int dirty;           /* queued on the ctx's dirty stack */
	atomic_int watched;         /* drained at every turn: no fence, no mark
	                                  (zr__ctx_dirty, zr__sock_watch) */
	atomic_int rx_paused;       /* some connection waits for room in rx */
	atomic_int closed;          /* the app closed it (io frees it later) */
	atomic_int npipes;          /* peers a send could go to, counted as libzmq
	                                  counts pipes: a connecter from zr_connect on,
	                                  an accepted peer once its handshake is done */
	atomic_int nready;          /* connections past their handshake */
	atomic_int listen_fds;      /* listening fds not yet closed */
	atomic_int rx_hold;         /* the owner stopped reading: rx takes nothing */
	_Atomic uint64_t unmatched; /* PUB/XPUB: messages no subscriber matched */
	struct zr_socket *dirty_next;
	struct zr_socket *watch_next; /* io thread: the context's watched list */
	uint64_t watch_took;          /* io thread: messages routed since the window's last look */

	struct zr__monitor mon;

	/* Each pattern family's own state (pattern.h); only the socket's family
	 * touches its part. */
	struct zr__pat_rr rr;
	struct zr__pat_route route;
	struct zr__pat_pubsub ps;

	/* app thread only */
	struct zr__eplist *bound, *connected; /* for zr_unbind / zr_disconnect */

	/* io thread only */
	bool listed;                   /* on the ctx's list */
	struct zr_socket *next, *prev; /* the ctx's list */
	struct zr__conn *conns;
	size_t nconns_active;
	zr_msg *pending;        /* taken from tx but not yet routed */
	uint64_t tx_pass_taken; /* the routing pass's bytes taken from tx (zr__sock_tx_take) */
	uint32_t tx_pass_msgs;  /* ... and messages */
	/* The route waits for this connection's room and no other's (a
	 * PUB_BLOCK publisher's slowest matching subscriber): the others' room
	 * cannot let pending go, so their sends' completions do not retry it. */
	struct zr__conn *tx_blocked;
	struct zr__timer route_timer; /* zr__sock_tx_retry: route pending again */
	/* A routing pass (sock_route_pending) is on: connections given messages
	 * wait on tx_kicks, so each sends the pass's messages in one batch (a
	 * PUB with 100 subscribers made a sendmsg per message per subscriber). */
	bool tx_routing;
	struct zr__conn *tx_kicks;
	struct zr__listener **listeners;
	size_t nlisten;
	size_t naccepted; /* accepted connections not yet freed (CONNS_MAX) */
	bool io_closing;
	struct zr__timer linger_timer; /* LINGER ran out: close everything */
	struct zr__timer close_timer;  /* re-check close progress, outside any callback */
	/* TLS contexts, made by the first tls:// zr_connect / zr_bind (app
	 * thread, before the command that uses them), freed with the socket. */
	struct zr__tls_ctx *tls_client, *tls_server;
	struct zr__inproc_name *ip_names; /* inproc:// names bound here (inproc.c) */
	struct zr_socket *ip_wake_next;   /* on the ctx's ip_wake list */
	bool ip_wake_queued;
};

/* ---- the context -------------------------------------------------------- */

enum zr__cmd_type {
	ZR__CMD_OPEN = 1, /* only makes the socket known to the io thread */
	ZR__CMD_BIND,
	ZR__CMD_CONNECT,
	ZR__CMD_UNBIND,     /* data: the listener's endpoint text */
	ZR__CMD_DISCONNECT, /* data: the connecter's endpoint text */
	ZR__CMD_SUBSCRIBE,
	ZR__CMD_UNSUBSCRIBE,
	ZR__CMD_CLOSE,
	ZR__CMD_TERM,
};

struct zr__listener;
struct zr__zap;

struct zr__cmd {
	struct zr__cmd *next;
	int type;
	struct zr_socket *sock;
	int fd;
	struct zr__endpoint ep;
	size_t len;
	uint8_t data[];
};

struct zr_ctx {
	pthread_t thread;
	struct zr__loop loop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int start_rc;
	bool started;
	struct zr__cmd *cmd_head, *cmd_tail;
	_Atomic(struct zr_socket *) dirty;
	atomic_int terminating;
	bool membarrier; /* registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED (set once) */
	/* ZR_BUSY_POLL spins app threads too, not only the io thread: the
	 * process may run on ZR__BUSY_APP_CPUS CPUs or more (set once). */
	bool busy_app;
	struct zr__inproc_name *inproc_names; /* bound inproc:// names, under lock (inproc.c) */
	/* ZR_CTX_CALLER_IO (set once): app threads run the loop while they wait
	 * or send, one at a time, holding the baton (ctx.c). */
	bool caller_io;
	atomic_uint baton;           /* futex word: who runs the loop */
	atomic_uint baton_want;      /* app threads asking the io thread for it */
	atomic_uint baton_gen;       /* app hand-backs so far */
	atomic_uint nudge;           /* futex word the parked io thread sleeps on */
	atomic_int io_parked;        /* the io thread sleeps on nudge */
	atomic_uint eventfd_waiters; /* app threads waiting on an eventfd meanwhile */
	/* io thread only (in a caller-io context: the baton's holder) */
	struct zr_socket *sockets;
	struct zr_socket *watched; /* streaming senders drained at every turn (zr__sock_watch) */
	/* Connections reading messages from the kernel, and what each reads
	 * at most at a time: rx_read_budget (ZR__CTX_RX_READ, set once) shared
	 * among them (conn.c). */
	size_t rx_readers, rx_read_max, rx_read_budget;
	bool term;
	/* inproc: while a socket routes its handoff (ip_routing > 0), receivers
	 * that got messages wait on ip_wake for one wake at the end, as a tcp
	 * receiver gets one per decoded batch, not one per message. */
	int ip_routing;
	bool ip_draining;
	struct zr_socket *ip_wake;
	/* ... and connections given a fan-out's shared message wait on ip_flush
	 * until the router dropped its own reference, so that the last of them
	 * takes the message itself rather than a copy. */
	struct zr__conn *ip_flush;
	struct zr__zap *zap; /* the ZAP requester (zap.c), made at the first request */
};

/* Queues a command for the io thread and wakes it. Takes ownership of cmd. */
void zr__ctx_command(struct zr_ctx *ctx, struct zr__cmd *cmd);
/* Marks a socket dirty (app thread): the io thread looks at its queues.
 * Defined in socket.c beside the socket's flag, so that a sender finding
 * the flag still set returns without a call into another file; only a
 * socket not yet on the stack goes on to zr__ctx_dirty_push (ctx.c). */
void zr__ctx_dirty(struct zr_ctx *ctx, struct zr_socket *s);
/* Pushes s, whose dirty flag the caller has just set, on the context's
 * dirty stack and wakes the loop. */
void zr__ctx_dirty_push(struct zr_ctx *ctx, struct zr_socket *s);
/*
 * ZR_CTX_CALLER_IO, app thread in a blocking call: runs the context's loop
 * itself until ready(arg) holds, the deadline (absolute ms, UINT64_MAX: none)
 * passes (-EAGAIN) or the context terminates (-ETERM). -EBUSY: another app
 * thread runs the loop; wait on the socket's eventfd instead, between
 * zr__ctx_wait_begin and _end, which tell the context that someone waits
 * for the loop to run (nothing in other contexts).
 */
int zr__ctx_run_until(struct zr_ctx *ctx, bool (*ready)(void *), void *arg, uint64_t deadline);
void zr__ctx_wait_begin(struct zr_ctx *ctx);
void zr__ctx_wait_end(struct zr_ctx *ctx);
/* A socket's ZR_BUSY_POLL was set (any thread): the io thread polls its
 * ring at least that long (microseconds) before it sleeps. */
void zr__ctx_busy_poll(struct zr_ctx *ctx, int us);

/* io thread: socket side (socket.c) */
void zr__sock_io_command(struct zr_socket *s, struct zr__cmd *cmd);
/* Returns how many messages the app had queued that it routed. */
uint32_t zr__sock_io_dirty(struct zr_socket *s);
void zr__sock_io_free(struct zr_socket *s);
bool zr__sock_io_done(struct zr_socket *s);
/* A connection finished its handshake (returns <0 if the socket refuses it,
 * e.g. a second PAIR peer) / went away / has room again. */
int zr__sock_conn_active(struct zr_socket *s, struct zr__conn *c);
void zr__sock_conn_lost(struct zr_socket *s, struct zr__conn *c);
void zr__sock_conn_room(struct zr_socket *s, struct zr__conn *c);
/* The count of pipes (see zr_socket.npipes) moved by delta. */
void zr__sock_pipes_add(struct zr_socket *s, int delta);
/* Messages the app sent still to route (closing: waiting for a peer)? */
bool zr__sock_unsent(struct zr_socket *s);
/* Closing: look again (next loop turn) whether connections can go. */
void zr__sock_close_kick(struct zr_socket *s);
/* A pattern's route, with the socket's message m in hand: the message
 * after it in the app's handoff (NULL: none yet), and taking that one out
 * to route it with m. Only within route (sock_route_pending's pass). */
zr_msg *zr__sock_tx_peek(struct zr_socket *s);
void zr__sock_tx_take(struct zr_socket *s);
/* What waits for room (pending) may no longer need c: c left or stopped
 * matching. Unless the route waits for another connection's room
 * (tx_blocked), pending is routed again on the next loop turn, outside the
 * caller's callback, whether or not any room comes. */
void zr__sock_tx_retry(struct zr_socket *s, const struct zr__conn *c);
/* A whole message arrived on c; returns 1 (taken), 0 if it must wait (rx
 * full: c keeps it) or <0 if c must be closed (a subscription limit, with
 * c->drop_why set). */
int zr__sock_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m);
/*
 * A connection's run of one-frame messages (conn.c), without a call into
 * the pattern and the full checks per message. zr__sock_rx_room: how many
 * of n more rx takes now, judged once as zr__sock_deliver judges one
 * (RCVHWM, a held queue), or 0 when each must go the usual way (a pattern
 * that looks at each one beyond rx_accept's filter, CONFLATE). Then
 * zr__sock_rx_put queues each, within RCVBYTES; false (m not taken) when
 * it must go the usual way after all (the budget, a ring that could not
 * grow). Both on the io thread, between the codec's run and the next.
 */
size_t zr__sock_rx_room(struct zr_socket *s, size_t n);
bool zr__sock_rx_put(struct zr_socket *s, zr_msg *m);
/* io thread: a new message for received bytes, want octets or more (a
 * spare one when the app returned some), and the last reference to a sent
 * one. */
int zr__sock_msg_new(struct zr_socket *s, zr_msg **m, size_t want);
/* io thread: a buffer of want octets or a little more (its size in *cap)
 * that the app gave back through rx_bufs, or NULL. */
uint8_t *zr__sock_rx_buf(struct zr_socket *s, size_t want, size_t *cap);
/* The producer of a spare ring (rx_spare, tx_spare) puts m in it, emptied,
 * with its buffer while the ring holds little (socket.c), or frees m. Quiet,
 * as zr__spsc_push_quiet: the consumer sees it at the next publish. */
void zr__sock_spare_put_slow(struct zr__spsc *ring, zr_msg *m);
/*
 * Inline: every message passes here once, on a sender's io thread and a
 * receiver's app thread. The usual one (a plain small buffer, its frames
 * inline, no properties left) needs no more than its counts cleared, as
 * zr__msg_recycle_keep would; the call and that function's checks were
 * ~60 instructions a message on each of those threads (callgrind, 1 B).
 * Quiet: the caller publishes the ring (zr__spsc_publish) once it has put
 * a batch's worth.
 */
static inline void
zr__sock_spare_put(struct zr__spsc *ring, zr_msg *m)
{
	if (m->hooked || m->cap > ZR__MSG_SPARE_SMALL || m->frames != m->inl || m->meta != NULL) {
		zr__sock_spare_put_slow(ring, m);
		return;
	}
	m->nframes = 0;
	m->len = 0;
	m->refs = 1;
	m->raw = false;
	if (!zr__spsc_push_quiet(ring, m))
		zr_msg_free(m);
}

/* The same, seen by the consumer at once. */
static inline void
zr__sock_spare_give(struct zr__spsc *ring, zr_msg *m)
{
	zr__sock_spare_put(ring, m);
	zr__spsc_publish(ring);
}

/* io thread: a written (or dropped) message's last reference goes back to
 * the sending app thread as a spare, quietly (zr__sock_spare_put): the
 * caller publishes tx_spare after its batch. A store the app thread, taking
 * spares right behind, pulled over per message otherwise. */
static inline void
zr__sock_msg_put(struct zr_socket *s, zr_msg *m)
{
	if (m == NULL || --m->refs > 0)
		return;
	zr__sock_spare_put(&s->tx_spare, m);
}

/* The same for one message, published at once. */
static inline void
zr__sock_msg_sent(struct zr_socket *s, zr_msg *m)
{
	zr__sock_msg_put(s, m);
	zr__spsc_publish(&s->tx_spare);
}
/* Wakes a waiting reader once for everything delivered since the last call
 * (a connection calls it after each decoded batch, not per message). */
void zr__sock_rx_flush(struct zr_socket *s);
/* Monitoring (monitor.c). Records an event if the app asked for this type
 * (io thread). */
void zr__sock_event(struct zr_socket *s, int type, int value, const char *endpoint);
/* The same, with a reason in words (handshake failures). */
void zr__sock_event_why(struct zr_socket *s, int type, int value, const char *endpoint,
                        const char *reason);
void zr__monitor_init(struct zr__monitor *m);
void zr__monitor_fini(struct zr__monitor *m);
/* zr_monitor_recv inside the socket's call count (socket.c). */
int zr__monitor_recv(struct zr_socket *s, struct zr_event *ev, int timeout_ms);
/* A subscription (un)subscribe arrived on c (PUB/XPUB). Returns 1 (done),
 * 0 when an XPUB's notice for it must wait for room in rx (nothing changed:
 * c pauses and offers it again), <0 when c must be closed (a limit, with
 * c->drop_why set). */
int zr__sock_subscription(struct zr_socket *s, struct zr__conn *c, bool subscribe,
                          const uint8_t *topic, size_t len);

/* io thread: connections (conn.c) */
struct zr__conn *zr__conn_new(struct zr_socket *s);
void zr__conn_start_accepted(struct zr__conn *c, int fd);
void zr__conn_start_connect(struct zr__conn *c);
/* Queues a message (takes a reference). Returns false when full (HWM). */
bool zr__conn_send(struct zr__conn *c, zr_msg *m, bool force);
/* A routing pass whose pattern sends each of the next messages to c (its
 * only peer): the messages that follow in the socket's handoff are queued
 * on c while it has room, as zr__conn_send would one at a time. Returns
 * how many (0 for an inproc pipe: each of its messages is handed over as it
 * is queued). */
size_t zr__conn_send_run(struct zr__conn *c);
/* The end of a routing pass: each connection it queued to starts sending. */
void zr__conn_kick_queued(struct zr_socket *s);
/* c is up and takes one more message (SNDHWM, SNDBYTES; an empty queue
 * takes any one). Inline: the routing pass asks it of each message. */
static inline bool
zr__conn_has_room(const struct zr__conn *c)
{
	const struct zr__options *o = &c->sock->opt;

	return c->state == ZR__CONN_ACTIVE && (!c->inproc || c->twin != NULL) &&
	       (o->sndhwm <= 0 || c->out_n < (size_t)o->sndhwm) &&
	       (c->out_n == 0 || o->sndbytes <= 0 || c->out_bytes < (uint64_t)o->sndbytes);
}
/* What c takes now, as zr__conn_has_room counts: slots more messages
 * (SIZE_MAX: no SNDHWM), each while the bytes queued before it in this
 * run stay under bytes (UINT64_MAX: no SNDBYTES). False: none at all. */
bool zr__conn_room(const struct zr__conn *c, size_t *slots, uint64_t *bytes);
/* PUB_DROP_OLD: drops the oldest message not yet being written. */
bool zr__conn_drop_oldest(struct zr__conn *c);
/* PUB_DISCONNECT: closes c on its next timer turn (never inside a callback). */
void zr__conn_kick_out(struct zr__conn *c);
/* Resumes reading after the socket's rx queue got room. */
void zr__conn_resume(struct zr__conn *c);
/* Begins teardown (no reconnect); frees itself when its operations are done. */
void zr__conn_close(struct zr__conn *c);
/* Closing with LINGER: as zr__conn_close, but an active connection with
 * nothing left to send first sends FIN and reads to the peer's (conn.c). */
void zr__conn_finish(struct zr__conn *c);
bool zr__conn_drained(const struct zr__conn *c);

/* tls:// (tls_sock.c): makes the socket's client or server TLS context from
 * its options, once (app thread, at zr_connect / zr_bind). Returns 0 or
 * zr__tls_ctx_new's code. */
int zr__sock_tls_ctx(struct zr_socket *s, bool server);
/* Frees the contexts and the TLS option strings (wiping the key). */
void zr__sock_tls_free(struct zr_socket *s);
/*
 * inproc:// (inproc.c). Names are the context's: an app thread registers one
 * at zr_bind (-EADDRINUSE when taken) and releases it at zr_unbind or
 * zr_socket_close; the io thread keeps its own copy per socket and pairs a
 * connecter with the binder, now or when the name is bound.
 */
struct zr__inproc_name {
	struct zr__inproc_name *next;
	struct zr_socket *sock;
	char name[ZR__INPROC_NAME_MAX + 1];
};

/* app thread */
int zr__inproc_register(struct zr_socket *s, const char *name);
void zr__inproc_unregister(struct zr_socket *s, const char *name); /* NULL: all of s's */
void zr__inproc_ctx_fini(struct zr_ctx *ctx);
/* io thread */
void zr__inproc_bind(struct zr_socket *s, const struct zr__endpoint *ep);
/* Forgets name (NULL: all of s's); the pipes it made stay (libzmq 4.3). */
void zr__inproc_unbind(struct zr_socket *s, const char *name);
void zr__inproc_connect(struct zr__conn *c);
/* c's outq into the twin's socket (send: from zr__conn_send, which must not
 * call back into routing; resume: the twin got room, c's socket may route). */
void zr__inproc_flush(struct zr__conn *c, bool resume);
/* Routing begins / ends (socket.c): the deferred wakes go out at the end. */
void zr__inproc_route_begin(struct zr_ctx *ctx);
void zr__inproc_route_end(struct zr_ctx *ctx);
/* c goes: the twin is told (it closes on its next timer turn). */
void zr__inproc_detach(struct zr__conn *c);
/* A pipe from s to the socket bound at name, made now (no waiting for a
 * later bind): its end in s, active, or NULL (nobody bound there, refused,
 * no memory). For the context's own requesters (zap.c). */
struct zr__conn *zr__inproc_dial(struct zr_socket *s, const char *name);
/* ZAP (zap.c): a reply ended c's wait for the handler (conn.c resumes c on
 * its next timer turn, never inside the caller's routing). */
void zr__conn_auth_done(struct zr__conn *c);

#endif /* ZR_ENGINE_ENGINE_H */
