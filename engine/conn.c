/*
 * A connection task (io thread only): one fd, one codec, one receive and one
 * send in flight at most, a timer for the codec's deadlines or the reconnect
 * delay.
 *
 * Receive: bytes land in c->in; the codec turns them into events; frames are
 * assembled into a message; a whole message goes to the socket. When the
 * socket's receive queue is full the message waits in c->rx_ready and no
 * receive is armed (the backpressure rule): the kernel buffer fills, TCP
 * closes the window, the peer's send waits. zr__conn_resume re-arms.
 *
 * Send: messages routed here wait in c->outq (bounded by SNDHWM). One
 * sendmsg carries the codec's control bytes (only at message boundaries) and
 * as many frames as fit in the iovec and the batch budget. Frames up to
 * ZR__CONN_SMALL_FRAME are copied with their headers into one packed region
 * of c->tx_buf (one iovec for thousands of small messages); larger ones get
 * their header in c->tx_hdr and their body by reference. Short sends resume
 * where they stopped; a message is finished before anything else is written.
 *
 * CURVE: every frame is encrypted into c->tx_buf when its batch is built
 * (so frames reach the wire in nonce order, after the control bytes laid out
 * before them), and a MESSAGE box opens only whole, so c->in grows to hold
 * the largest frame the codec lets through (MAXMSGSIZE + 42) and shrinks
 * back once it is consumed.
 *
 * Teardown: shutdown(2), cancel every operation on the fd, wait until none is
 * in flight, close, then reconnect (connecters) or free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base.h"
#include "engine.h"
#include "zap.h"

#define CONN_MAX_CMD (32u * 1024u) /* fits c->in with room for a header */
#define CONN_META_BLOCK 4096u      /* references to c->meta taken at once */
#define CONN_TX_KEEP ((size_t)256) /* a drained, idle connection keeps a tx_buf this small */
/* The rest of a frame body this large is received straight into its
 * message (conn_rx_arm), at most CONN_DIRECT_MAX at a time, and with the
 * body's last octets CONN_DIRECT_TAIL more into c->in in the same receive.
 * At most 64 KiB a receive, as c->in's reads: reads of up to a whole 1 MiB
 * body opened the sender's TCP window in bursts, and the 1 MiB run lost ~10%
 * of its throughput with ~10% more sender CPU (A/B, bench_zr, 7 pairs). */
#define CONN_DIRECT_MIN ((size_t)32 * 1024)
#define CONN_DIRECT_MAX ((size_t)64 * 1024)
#define CONN_DIRECT_TAIL ((size_t)4 * 1024)
/* conn_adopt_box: at most this many octets of c->in before a box's
 * plaintext (its frame header and MESSAGE prefix). */
#define CONN_ADOPT_SLACK ((size_t)64)

static zr__op_cb conn_connect_done, conn_rx_done, conn_tx_done, conn_tls_tx_done;
static zr__timer_cb conn_timer_fired;
static void conn_teardown(struct zr__conn *c);

static struct zr__loop *
conn_loop(const struct zr__conn *c)
{
	return &c->sock->ctx->loop;
}

/* Sizes the iovec table (and its headers) for cap entries. Only between
 * batches: the one in flight points into it. */
static int
conn_iov_fit(struct zr__conn *c, size_t cap)
{
	void *p = realloc(c->tx_iov, cap * (sizeof *c->tx_iov + sizeof *c->tx_hdr));

	if (p == NULL)
		return -ENOMEM;
	c->tx_iov = p;
	c->tx_hdr = (uint8_t(*)[ZR_ZMTP_HEADER_MAX])(c->tx_iov + cap);
	c->tx_iov_cap = cap;
	return 0;
}

/* s's peers send it messages, not only a handshake and maybe
 * subscriptions (PUSH, PUB, XPUB). */
static bool
conn_gets_messages(const struct zr_socket *s)
{
	return s->ops->can_recv && s->ops->peer_subscription == NULL;
}

struct zr__conn *
zr__conn_new(struct zr_socket *s)
{
	struct zr__conn *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	/* A socket whose peers send it messages reads them 64 KiB (or its
	 * context's share: conn_rx_reader) at a time from the start (a
	 * 1,000-SUB receiver spent ~10% more CPU growing from a small buffer);
	 * one whose peers do not starts small: a publisher with 1,000
	 * subscribers spent ~20% more CPU with 64 KiB each. */
	c->in_cap = conn_gets_messages(s) ? ZR__CONN_RX_BUF : ZR__CONN_RX_FIRST;
	c->in_norm = c->in_cap;
	c->in = malloc(c->in_cap);
	c->out_cap = 16;
	c->outq = malloc(c->out_cap * sizeof *c->outq);
	if (c->in == NULL || c->outq == NULL || conn_iov_fit(c, ZR__CONN_IOV_FIRST) < 0) {
		free(c->in);
		free(c->outq);
		free(c->tx_iov);
		free(c);
		return NULL;
	}
	c->sock = s;
	c->fd = -1;
	c->connect_op.cb = conn_connect_done;
	c->rx_op.cb = conn_rx_done;
	c->tx_op.cb = conn_tx_done;
	c->tls_tx_op.cb = conn_tls_tx_done;
	c->timer.cb = conn_timer_fired;
	c->next = s->conns;
	if (s->conns != NULL)
		s->conns->prev = c;
	s->conns = c;
	return c;
}

/*
 * The codec's authenticator: the socket's own (zr_socket_set_auth, a
 * synchronous answer) when installed, else a ZAP handler of the context
 * (zap.c: an answer later), else libzmq's rules without a handler.
 */
static int
conn_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct zr__conn *c = arg;

	if (c->sock->auth != NULL)
		return c->sock->auth(c->sock->auth_arg, req);
	return zr__zap_ask(c, req);
}

static void
conn_codec_config(struct zr__conn *c)
{
	const struct zr__options *o = &c->sock->opt;
	struct zr_zmtp_config *cfg = &c->zcfg;
	/* REQ and REP speak to their peers as the types the wire knows. */
	zr_zmtp_config_default(cfg, (int)c->sock->type);
	cfg->routing_id = o->routing_id;
	cfg->routing_id_len = o->routing_id_len;
	cfg->mechanism = o->mechanism;
	cfg->as_server = o->as_server;
	if (o->mechanism == ZR_MECH_PLAIN && !o->as_server) {
		cfg->username = o->username;
		cfg->username_len = o->username_len;
		cfg->password = o->password;
		cfg->password_len = o->password_len;
	}
	if (o->mechanism == ZR_MECH_CURVE) {
		cfg->curve_public_key = o->curve_public_set ? o->curve_public : NULL;
		cfg->curve_secret_key = o->curve_secret_set ? o->curve_secret : NULL;
		cfg->curve_server_key =
			o->curve_server_set && !o->as_server ? o->curve_server : NULL;
	}
	/* PLAIN and CURVE servers always ask; NULL peers only with a ZAP
	 * domain (libzmq's rule), on either side. */
	if ((o->as_server && o->mechanism != ZR_MECH_NULL) ||
	    (o->mechanism == ZR_MECH_NULL && o->zap_domain_len > 0)) {
		cfg->auth = conn_auth_cb;
		cfg->auth_arg = c;
		cfg->auth_null = o->mechanism == ZR_MECH_NULL;
	}
	cfg->peer_address = c->peer_addr;
	cfg->tls_subject = c->tls_subject;
	cfg->max_msg_size = o->maxmsgsize < 0 ? UINT64_MAX : (uint64_t)o->maxmsgsize;
	cfg->max_msg_frames = o->maxframes < 0 ? UINT32_MAX : (uint32_t)o->maxframes;
	cfg->max_cmd_size = CONN_MAX_CMD;
	cfg->handshake_ivl_ms = o->handshake_ivl_ms > 0 ? (uint32_t)o->handshake_ivl_ms : 0;
	cfg->heartbeat_ivl_ms = o->heartbeat_ivl_ms > 0 ? (uint32_t)o->heartbeat_ivl_ms : 0;
	cfg->heartbeat_ttl_ms = o->heartbeat_ttl_ms > 0 ? (uint32_t)o->heartbeat_ttl_ms : 0;
	cfg->heartbeat_timeout_ms =
		o->heartbeat_timeout_ms > 0 ? (uint32_t)o->heartbeat_timeout_ms : 0;
}

/* ---- timers ------------------------------------------------------------- */

static void
conn_timer_set(struct zr__conn *c, uint64_t deadline)
{
	if (deadline == UINT64_MAX) {
		zr__timer_stop(conn_loop(c), &c->timer);
		return;
	}
	if (c->timer.slot != 0 && c->timer.deadline == deadline)
		return;
	zr__timer_start(conn_loop(c), &c->timer, deadline);
}

static void
conn_timer_codec(struct zr__conn *c)
{
	if (c->kick_out)
		return; /* the timer is set to close it now: keep it so */
	if (c->zap_resume) {
		conn_timer_set(c, 0); /* an authenticator's answer to act on */
		return;
	}
	if (c->state == ZR__CONN_HANDSHAKE || c->state == ZR__CONN_ACTIVE)
		conn_timer_set(c, zr_zmtp_deadline(&c->z));
}

/* Reconnect delay: RECONNECT_IVL plus up to as much again of jitter, the
 * base doubling per failed attempt up to RECONNECT_IVL_MAX when that is set. */
static uint64_t
conn_reconnect_delay(struct zr__conn *c)
{
	const struct zr__options *o = &c->sock->opt;
	uint64_t base = o->reconnect_ivl_ms > 0 ? (uint64_t)o->reconnect_ivl_ms : 100;
	uint64_t x = (uint64_t)(uintptr_t)c ^ (zr__now_ms() * 0x9e3779b97f4a7c15ull) ^ c->attempts;

	if (o->reconnect_ivl_max_ms > 0) {
		for (uint32_t i = 0; i < c->attempts && base < (uint64_t)o->reconnect_ivl_max_ms;
		     i++)
			base *= 2;
		if (base > (uint64_t)o->reconnect_ivl_max_ms)
			base = (uint64_t)o->reconnect_ivl_max_ms;
	}
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return base + x % (base + 1);
}

/* A connecter of a closing socket with nothing left to send stops trying. */
static bool
conn_give_up(struct zr__conn *c)
{
	if (!c->sock->io_closing || zr__sock_unsent(c->sock))
		return false;
	c->state = ZR__CONN_CLOSING;
	conn_teardown(c);
	return true;
}

/* Schedules the next connect attempt (connecters). */
static void
conn_retry(struct zr__conn *c)
{
	uint64_t delay = conn_reconnect_delay(c);

	c->state = ZR__CONN_WAITING;
	conn_timer_set(c, zr__now_ms() + delay);
	zr__sock_event(c->sock, ZR_EVENT_CONNECT_RETRIED, (int)delay, c->endpoint);
}

/* ---- start -------------------------------------------------------------- */

static void conn_rx_arm(struct zr__conn *c);
static void conn_tx_kick(struct zr__conn *c);
static void conn_tls_pump(struct zr__conn *c);

/* tls://: a session on the socket's context for the side we are. */
static int
conn_tls_start(struct zr__conn *c)
{
	const struct zr__options *o = &c->sock->opt;
	struct zr__tls_ctx *ctx = c->connecter ? c->sock->tls_client : c->sock->tls_server;
	const char *name = NULL;

	if (ctx == NULL)
		return -EINVAL;
	if (c->connecter)
		name = o->tls_server_name != NULL ? o->tls_server_name : c->ep.host;
	return zr__tls_new(&c->tls, ctx, name);
}

static void
conn_start(struct zr__conn *c, int fd)
{
	int rc;

	c->fd = fd;
	c->in_len = 0;
	c->in_skip = 0;
	c->peer_status = 0;
	c->peer_reason[0] = '\0';
	c->rx_total = 0;
	if (c->ep.tls && c->tls_subject == NULL)
		c->tls_subject = malloc(ZR__CONN_SUBJECT);
	if (c->tls_subject != NULL)
		c->tls_subject[0] = '\0';
	if (zr__endpoint_peer(fd, c->ep.transport ? c->ep.transport : ZR__TCP, c->peer_addr,
	                      sizeof c->peer_addr) < 0)
		c->peer_addr[0] = '\0';
	/* tls://: the peer's address names the transport, as the endpoint does
	 * (failure reasons, Peer-Address, the authenticator's peer_address). */
	if (c->ep.tls && strncmp(c->peer_addr, "tcp://", 6) == 0)
		memcpy(c->peer_addr, "tls", 3);
	conn_codec_config(c);
	rc = zr_zmtp_init(&c->z, &c->zcfg, zr__now_ms());
	if (rc == 0 && c->ep.tls)
		rc = c->tls_subject != NULL ? conn_tls_start(c) : -ENOMEM;
	if (rc < 0) {
		c->no_reconnect = true;
		c->state = ZR__CONN_HANDSHAKE;
		conn_teardown(c);
		return;
	}
	c->state = ZR__CONN_HANDSHAKE;
	conn_tx_kick(c);
	conn_rx_arm(c);
	conn_timer_codec(c);
}

void
zr__conn_start_accepted(struct zr__conn *c, int fd)
{
	const struct zr__options *o = &c->sock->opt;

	zr__socket_tune(fd, c->ep.transport ? c->ep.transport : ZR__TCP, o->sndbuf, o->rcvbuf);
	conn_start(c, fd);
}

void
zr__conn_start_connect(struct zr__conn *c)
{
	const struct zr__options *o = &c->sock->opt;
	int fd = zr__endpoint_socket(&c->ep);

	c->attempts++;
	if (fd < 0 || zr__op_connect(conn_loop(c), &c->connect_op, fd,
	                             (struct sockaddr *)&c->ep.addr, c->ep.addrlen) < 0) {
		if (fd >= 0)
			close(fd);
		conn_retry(c);
		return;
	}
	zr__socket_tune(fd, c->ep.transport, o->sndbuf, o->rcvbuf);
	c->fd = fd;
	c->state = ZR__CONN_CONNECTING;
}

/*
 * A receive or send to issue again rather than a failure. -ECANCELED with
 * the connection not closing (the engine cancels only after conn_teardown
 * made it CLOSING) comes from the exit of the thread that submitted the
 * operation: io_uring cancels a thread's requests when it exits, and in a
 * ZR_CTX_CALLER_IO context app threads submit too. Nothing of a cancelled
 * receive was read; a cancelled send that had sent part reports that part.
 */
static bool
conn_op_again(int res)
{
	return res == -EINTR || res == -EAGAIN || res == -ECANCELED;
}

static void
conn_connect_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__conn *c = ZR_CONTAINER_OF(op, struct zr__conn, connect_op);

	(void)flags;
	if (c->state != ZR__CONN_CONNECTING) {
		conn_teardown(c); /* closing: finish it */
		return;
	}
	/* A failure; or -ECANCELED, the exit of the thread that submitted the
	 * connect (conn_op_again): a new attempt after the usual interval. */
	if (res < 0) {
		close(c->fd);
		c->fd = -1;
		if (!conn_give_up(c))
			conn_retry(c);
		return;
	}
	zr__sock_event(c->sock, ZR_EVENT_CONNECTED, c->fd, c->endpoint);
	conn_start(c, c->fd);
}

/* ---- receive ------------------------------------------------------------ */

/* Counts c in (or out of) its context's readers of messages, and sets the
 * share of rx_read_budget each reads at most at a time. */
static void
conn_rx_reader(struct zr__conn *c, bool reads)
{
	struct zr_ctx *x = c->sock->ctx;
	size_t most;

	if (c->rx_reader == reads)
		return;
	c->rx_reader = reads;
	x->rx_readers = reads ? x->rx_readers + 1 : x->rx_readers - 1;
	most = x->rx_readers > 0 ? x->rx_read_budget / x->rx_readers : ZR__CONN_RX_BUF;
	if (most > ZR__CONN_RX_BUF)
		most = ZR__CONN_RX_BUF;
	if (most < ZR__CONN_RX_READ_MIN)
		most = ZR__CONN_RX_READ_MIN;
	x->rx_read_max = most;
}

static void
conn_rx_arm(struct zr__conn *c)
{
	if (c->rx_armed || c->rx_paused || c->fd < 0 ||
	    (c->state != ZR__CONN_HANDSHAKE && c->state != ZR__CONN_ACTIVE &&
	     c->state != ZR__CONN_FINISHING))
		return;
	if (c->tls != NULL && c->state != ZR__CONN_FINISHING) {
		/* Ciphertext lands in the session's ring; a full ring arms
		 * nothing, as a held connection arms nothing (rx_paused above). */
		size_t len;
		uint8_t *p = zr__tls_recv_buf(c->tls, &len);

		if (p != NULL && len > 0 &&
		    zr__op_recv(conn_loop(c), &c->rx_op, c->fd, p, len, 0) == 0)
			c->rx_armed = true;
		return;
	}
	/* The rest of a large frame body goes straight into its message, and
	 * only a little more into c->in (the next header, the start of the next
	 * body): one receive, no copy of those bytes out of c->in (at 1 MiB that
	 * copy was 17% of a receiver's samples, perf). */
	if (c->in_len == 0 && c->rx_msg != NULL && c->state == ZR__CONN_ACTIVE) {
		uint64_t left = zr_zmtp_body_left(&c->z);

		/* Judged on the frame, not on what is left of it: with a
		 * buffer's worth per read, reads that each end just past the next
		 * header would leave a few octets to place, and the rest copied. */
		if (left > 0 && c->rx_frame_big) {
			c->rx_iov[0].iov_base = zr__msg_frame_tail(c->rx_msg);
			c->rx_iov[0].iov_len =
				left < CONN_DIRECT_MAX ? (size_t)left : CONN_DIRECT_MAX;
			c->rx_iov[1].iov_base = c->in;
			c->rx_iov[1].iov_len =
				c->in_cap < CONN_DIRECT_TAIL ? c->in_cap : CONN_DIRECT_TAIL;
			memset(&c->rx_mh, 0, sizeof c->rx_mh);
			c->rx_mh.msg_iov = c->rx_iov;
			/* The tail only after the body's last octet: before it, the
			 * tail would take body octets, to be copied after all. */
			c->rx_mh.msg_iovlen = left > CONN_DIRECT_MAX ? 1 : 2;
			if (zr__op_recvmsg(conn_loop(c), &c->rx_op, c->fd, &c->rx_mh, 0) == 0) {
				c->rx_armed = true;
				c->rx_direct = true;
			}
			return;
		}
	}
	if (c->in_len == c->in_cap)
		return; /* cannot happen: commands are bounded below in_cap */
	size_t room = c->in_cap - c->in_len;
	bool box = false;

	/* CURVE: the rest of a large box and nothing after it, so that the box
	 * ends c->in and the buffer can become its message's (conn_adopt_box).
	 * c->in starts with the box: conn_decode moved it to the front. */
	if (c->in_len > 0 && c->state == ZR__CONN_ACTIVE && zr_zmtp_encrypts(&c->z)) {
		size_t want = zr_zmtp_want(&c->z, c->in, c->in_len);

		box = want >= CONN_DIRECT_MIN && want > c->in_len && want - c->in_len < room;
		if (box)
			room = want - c->in_len;
	}
	/* Otherwise the context's share for a reader of messages (the pages
	 * of c->in past it are never touched). */
	if (conn_gets_messages(c->sock)) {
		conn_rx_reader(c, true);
		if (!box && room > c->sock->ctx->rx_read_max)
			room = c->sock->ctx->rx_read_max;
	}
	if (zr__op_recv(conn_loop(c), &c->rx_op, c->fd, c->in + c->in_len, room, 0) == 0)
		c->rx_armed = true;
}

/* Hands a whole message to the socket; on a full queue, keeps it and pauses.
 * Returns 1 (taken), 0 (paused) or <0 (close c). */
static int
conn_deliver(struct zr__conn *c, zr_msg *m)
{
	struct zr_socket *s = c->sock;
	int rc = zr__sock_deliver(s, c, m);

	if (rc != 0)
		return rc;
	c->rx_ready = m;
	c->rx_paused = true;
	atomic_store(&s->rx_paused, 1);
	atomic_thread_fence(memory_order_seq_cst);
	/* The app may have made room between the try and the flag: try again
	 * rather than wait for a wake that nobody will send. (An app that finds
	 * rx empty reads the flag after its own fence, so one of the two sees
	 * the other.) */
	rc = zr__sock_deliver(s, c, m);
	if (rc != 0) {
		c->rx_ready = NULL;
		c->rx_paused = false;
	}
	return rc;
}

/*
 * A SUBSCRIBE / CANCEL command (ZMTP 3.1). When an XPUB has no room for its
 * notice, the command waits as its ZMTP 3.0 message would, in rx_ready,
 * and the connection pauses: a notice is never dropped, and a peer that
 * floods them is held back by TCP like one that floods data. Returns 0, 1
 * (paused) or <0.
 */
static int
conn_subscription(struct zr__conn *c, bool subscribe, const uint8_t *topic, size_t len)
{
	zr_msg *m;
	uint8_t flag = subscribe ? 1 : 0;
	int rc = zr__sock_subscription(c->sock, c, subscribe, topic, len);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = zr__sock_msg_new(c->sock, &m, len + 1);
	if (rc < 0)
		return rc;
	rc = zr__msg_frame_begin(m, len + 1);
	if (rc < 0) {
		zr_msg_free(m);
		return rc;
	}
	zr__msg_frame_append(m, &flag, 1);
	zr__msg_frame_append(m, topic, len);
	rc = conn_deliver(c, m);
	return rc < 0 ? rc : rc == 0 ? 1 : 0;
}

/* m, a message received on c, takes a reference to c's properties. */
static void
conn_meta_give(struct zr__conn *c, zr_msg *m)
{
	/* References are taken in blocks: one atomic add per 4096 messages, so
	 * the io thread does not write, per message, the line every free
	 * decrements (perf: 10-14% of a 1 B receiver). */
	if (c->meta != NULL && c->meta_credit == 0) {
		zr__meta_ref_n(c->meta, CONN_META_BLOCK);
		c->meta_credit = CONN_META_BLOCK;
	}
	m->meta = c->meta;
	if (c->meta != NULL)
		c->meta_credit--;
}

/* The message a first frame of want octets starts (c->rx_msg), with the
 * connection's properties and the pattern's own first frames. Returns 0 or
 * <0. */
static int
conn_rx_msg_start(struct zr__conn *c, size_t want)
{
	int rc = zr__sock_msg_new(c->sock, &c->rx_msg, want);

	if (rc < 0)
		return rc;
	conn_meta_give(c, c->rx_msg);
	/* The pattern's own first frames (ROUTER, REP: who sent it). */
	if (c->sock->ops->rx_begin != NULL)
		return c->sock->ops->rx_begin(c->sock, c, c->rx_msg);
	return 0;
}

/* A whole message is in c->rx_msg: to the socket. Returns 0, 1 (paused) or
 * <0. */
static int
conn_rx_msg_end(struct zr__conn *c)
{
	zr_msg *m = c->rx_msg;
	int rc;

	c->rx_msg = NULL;
	rc = conn_deliver(c, m);
	return rc <= 0 ? (rc < 0 ? rc : 1) : 0;
}

static int
conn_frame(struct zr__conn *c, const struct zr_zmtp_event *ev)
{
	int rc;

	if (ev->offset == 0) {
		if (c->rx_msg == NULL && (rc = conn_rx_msg_start(c, (size_t)ev->frame_size)) < 0)
			return rc;
		c->rx_frame_big = ev->frame_size >= CONN_DIRECT_MIN;
		rc = zr__msg_frame_begin(c->rx_msg, (size_t)ev->frame_size);
		if (rc < 0)
			return rc;
	}
	if (ev->data == NULL && ev->len > 0)
		zr__msg_frame_placed(c->rx_msg, ev->len); /* received in place (conn_placed) */
	else
		zr__msg_frame_append(c->rx_msg, ev->data, ev->len);
	if ((ev->flags & ZR_ZMTP_FRAME_END) && !(ev->flags & ZR_ZMTP_MORE))
		return conn_rx_msg_end(c);
	return 0;
}

/* Whole one-frame messages taken per zr_zmtp_feed_msgs call. */
#define CONN_RX_BATCH 64

/*
 * Of a run of n one-frame messages, the first ones, as many as the socket
 * takes now (zr__sock_rx_room), each made and queued without a call into the
 * pattern, the pause handling or the full checks of zr__sock_deliver (~95
 * instructions of a 1 B message on a receiver's io thread, callgrind).
 * What the pattern's filter refuses (SUB) is dropped before it is made.
 * Returns how many messages were done with; the caller takes the rest the
 * usual way, which pauses where the socket is full.
 */
static size_t
conn_rx_run(struct zr__conn *c, const struct zr_zmtp_msg *batch, size_t n)
{
	struct zr_socket *s = c->sock;
	bool (*accept)(struct zr_socket *, const uint8_t *, size_t) = s->ops->rx_accept;
	size_t room = zr__sock_rx_room(s, n), i;

	for (i = 0; i < n && room > 0; i++) {
		const uint8_t *data = batch[i].data;
		size_t len = batch[i].len;
		zr_msg *m;

		if (accept != NULL && !accept(s, data, len))
			continue; /* as its deliver hook drops it */
		if (zr__sock_msg_new(s, &m, len) < 0)
			break;
		if (!zr__msg_put_first(m, data, len) && zr_msg_add(m, data, len) < 0) {
			zr_msg_free(m);
			break;
		}
		conn_meta_give(c, m);
		if (!zr__sock_rx_put(s, m)) {
			zr_msg_free(m); /* the usual way makes it again, and waits */
			break;
		}
		room--;
	}
	return i;
}

/*
 * The codec's fast path: the one-frame messages at c->in + *off that are
 * all there, taken with one codec call instead of an event apiece (a 1 B
 * receiver's io thread spent ~250 of its ~525 instructions per message on
 * the codec call, the event and its frame's assembly: callgrind). *off
 * moves past the messages taken. Returns 0 (every one the codec gave, if
 * any, taken), 1 (the socket is full: the last one taken waits in
 * rx_ready, the rest go back to the codec to be fed again) or <0.
 */
static int
conn_decode_msgs(struct zr__conn *c, size_t *off, uint64_t now)
{
	struct zr_zmtp_msg batch[CONN_RX_BATCH];
	const uint8_t *in = c->in + *off;
	size_t used, n;

	n = zr_zmtp_feed_msgs(&c->z, in, c->in_len - *off, &used, batch, CONN_RX_BATCH, now);
	for (size_t i = conn_rx_run(c, batch, n); i < n; i++) {
		/* No message is open (the codec is between messages), and the
		 * frame is small: conn_frame's way, in fewer steps. */
		int rc = conn_rx_msg_start(c, batch[i].len);

		if (rc == 0 && !zr__msg_put_first(c->rx_msg, batch[i].data, batch[i].len))
			rc = zr_msg_add(c->rx_msg, batch[i].data, batch[i].len);
		if (rc == 0)
			rc = conn_rx_msg_end(c);
		if (rc != 0) {
			size_t taken = (size_t)(batch[i].data + batch[i].len - in);

			zr_zmtp_unfeed_msgs(&c->z, used - taken);
			*off += taken;
			return rc;
		}
	}
	*off += used;
	return 0;
}

/*
 * CURVE: a large MESSAGE box is read whole into c->in and opened there.
 * When it is all c->in holds (conn_rx_arm reads a large box's rest and no
 * further) and its plaintext is a message of that one frame, the buffer
 * becomes the message's and c->in a new one: no copy of the body (at 64 KiB
 * the copy was a fifth of a CURVE receiver's samples, perf). Returns 1 when
 * the frame went that way (*off then 0: nothing left in c->in), 0 when it
 * must be taken the usual way (conn_frame), or <0.
 */
static int
conn_adopt_box(struct zr__conn *c, const struct zr_zmtp_event *ev, size_t *off, int *rc)
{
	const uint8_t *in = c->in;
	uint8_t *next;

	/* The frame's size first: every frame of every connection comes by
	 * here, and almost all are small. */
	if (ev->len < CONN_DIRECT_MIN || ev->offset != 0 || ev->len != ev->frame_size ||
	    (ev->flags & ZR_ZMTP_MORE) || !(ev->flags & ZR_ZMTP_FRAME_END) || *off != c->in_len ||
	    c->rx_msg != NULL || c->rx_armed || c->tls != NULL || c->sock->ops->rx_begin != NULL ||
	    ev->data < in || ev->data - in > (ptrdiff_t)CONN_ADOPT_SLACK ||
	    c->in_cap - c->in_len > c->in_len / 8 || !zr_zmtp_encrypts(&c->z))
		return 0;
	/* The message's memory is what the queue's byte budget counts, so it
	 * takes a buffer hardly larger than the box (conn_in_fit sizes c->in
	 * to the box it waits for); the next one is as large, or the usual
	 * size after a box over twice that. */
	size_t next_cap = c->in_cap <= 2 * c->in_norm ? c->in_cap : c->in_norm;

	/* One the app read a message out of, else a new one. */
	next = zr__sock_rx_buf(c->sock, next_cap, &next_cap);
	if (next == NULL)
		next = malloc(next_cap);
	if (next == NULL)
		return 0; /* the copy needs no memory: take it that way */
	/* Its buffer will be the box's: a spare's goes. */
	*rc = conn_rx_msg_start(c, 0);
	if (*rc < 0) {
		free(next);
		return -1;
	}
	if (!zr__msg_adopt(c->rx_msg, c->in, c->in_cap, (size_t)(ev->data - in), ev->len)) {
		free(next);
		return 0; /* c->rx_msg goes on the usual way */
	}
	c->in = next;
	c->in_cap = next_cap;
	c->in_len = 0;
	*off = 0;
	*rc = conn_rx_msg_end(c);
	return 1;
}

/* Gives back c's own reference to its properties and the unspent block. */
static void
conn_meta_drop(struct zr__conn *c)
{
	zr__meta_unref_n(c->meta, 1 + c->meta_credit);
	c->meta = NULL;
	c->meta_credit = 0;
}

/* The peer's ERROR reason, printable, for the monitor event. */
static void
conn_keep_reason(struct zr__conn *c, const uint8_t *p, size_t n)
{
	size_t i;

	if (n > sizeof c->peer_reason - 1)
		n = sizeof c->peer_reason - 1;
	for (i = 0; i < n; i++)
		c->peer_reason[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	c->peer_reason[n] = '\0';
}

/*
 * Sizes c->in for what the codec needs next: under CURVE a whole MESSAGE
 * (up to MAXMSGSIZE + 42 octets, the codec checked the size against that).
 * Its usual size (in_norm) starts small and doubles, up to ZR__CONN_RX_BUF,
 * when a read filled the buffer or the codec wants more: growth is
 * amortised, never per message. Back to the usual size once a frame over
 * twice that is consumed, so one big message does not pin its buffer for
 * the connection's life; frames just over the usual size (a 64 KiB
 * message's CURVE box) keep their buffer: shrinking after each cost a
 * realloc and a copy per message. Returns 0 or -ENOMEM.
 */
static int
conn_in_fit(struct zr__conn *c)
{
	size_t want = zr_zmtp_want(&c->z, c->in, c->in_len);
	size_t cap = c->in_cap;
	uint8_t *p;

	while (c->in_norm < ZR__CONN_RX_BUF && (c->in_full || want > c->in_norm)) {
		c->in_norm *= 2;
		c->in_full = false;
	}
	c->in_full = false;
	/* Up to the usual size, or back to it once nothing needs more. */
	if (want > cap)
		cap = want;
	else if (cap < c->in_norm ||
	         (cap > 2 * c->in_norm && want <= c->in_norm && c->in_len <= c->in_norm))
		cap = c->in_norm;
	if (cap == c->in_cap)
		return 0;
	if (cap > c->in_cap) {
		/* Only the bytes in use move (a realloc copies the whole block:
		 * a thousand connections growing to 64 KiB copied 64 MB). */
		p = malloc(cap);
		if (p == NULL)
			return -ENOMEM;
		if (c->in_len > 0)
			memcpy(p, c->in, c->in_len);
		free(c->in);
	} else {
		p = realloc(c->in, cap);
		if (p == NULL)
			return 0;
	}
	c->in = p;
	c->in_cap = cap;
	return 0;
}

/* The User-Id of the peer's messages: the authenticator's, else (tls://
 * with a client certificate) the certificate's subject. */
static const char *
conn_user_id(const struct zr__conn *c, const char *auth)
{
	if ((auth == NULL || auth[0] == '\0') && c->tls_subject != NULL &&
	    c->tls_subject[0] != '\0')
		return c->tls_subject;
	return auth;
}

/* The connection's properties: a ZAP reply's metadata first (the
 * handler's word over the peer's), then the peer's own. */
static struct zr__meta *
conn_meta_new(struct zr__conn *c, const struct zr_zmtp_event *ev)
{
	struct zr__meta *m;
	uint8_t *both;

	if (c->zap_props == NULL)
		return zr__meta_new(ev->data, ev->len, c->peer_addr, conn_user_id(c, ev->user_id));
	both = malloc(c->zap_props_len + ev->len);
	if (both == NULL)
		return NULL;
	memcpy(both, c->zap_props, c->zap_props_len);
	if (ev->len > 0)
		memcpy(both + c->zap_props_len, ev->data, ev->len);
	m = zr__meta_new(both, c->zap_props_len + ev->len, c->peer_addr,
	                 conn_user_id(c, ev->user_id));
	free(both);
	return m;
}

/* Feeds what is buffered to the codec until it needs more, the socket is
 * full, or the connection fails. Returns <0 on failure. */
static int
conn_decode(struct zr__conn *c)
{
	size_t off = c->in_skip, used;
	uint64_t now = zr__now_ms(); /* one clock read per batch, not per frame */
	int rc = 0;

	if (c->rx_ready != NULL) {
		zr_msg *m = c->rx_ready;

		c->rx_ready = NULL;
		c->rx_paused = false;
		rc = conn_deliver(c, m);
		if (rc <= 0) {
			zr__sock_rx_flush(c->sock);
			return rc;
		}
		rc = 0;
	}
	while (off < c->in_len) {
		struct zr_zmtp_event ev;

		if (c->state == ZR__CONN_ACTIVE && c->rx_msg == NULL) {
			rc = conn_decode_msgs(c, &off, now);
			if (rc != 0 || off == c->in_len)
				break;
		}
		rc = zr_zmtp_feed(&c->z, c->in + off, c->in_len - off, &used, &ev, now);
		off += used;
		if (rc < 0 || rc == ZR_NEED_MORE)
			break;
		switch (ev.type) {
		case ZR_ZMTP_EV_READY:
			c->state = ZR__CONN_ACTIVE;
			c->attempts = 0;
			c->rid_len = 0;
			if (ev.peer_identity != NULL && ev.peer_identity_len > 0 &&
			    ev.peer_identity[0] != 0) {
				memcpy(c->rid, ev.peer_identity, ev.peer_identity_len);
				c->rid_len = ev.peer_identity_len;
			}
			conn_meta_drop(c);
			c->meta = conn_meta_new(c, &ev);
			if (c->meta == NULL) {
				rc = -ENOMEM;
				break;
			}
			zr__sock_event(c->sock, ZR_EVENT_HANDSHAKE_SUCCEEDED, 0, c->endpoint);
			rc = zr__sock_conn_active(c->sock, c);
			if (rc < 0) {
				/* Refused by the socket: not active after all, never reconnect
				 * to a peer that already has its one partner. */
				c->state = ZR__CONN_HANDSHAKE;
				c->no_reconnect = true;
			}
			break;
		case ZR_ZMTP_EV_FRAME:
			if (conn_adopt_box(c, &ev, &off, &rc) == 0)
				rc = conn_frame(c, &ev);
			break;
		case ZR_ZMTP_EV_SUBSCRIBE:
		case ZR_ZMTP_EV_CANCEL:
			rc = conn_subscription(c, ev.type == ZR_ZMTP_EV_SUBSCRIBE, ev.data, ev.len);
			break;
		case ZR_ZMTP_EV_PEER_ERROR:
			c->no_reconnect = true; /* RFC 23: ERROR is final for these credentials */
			conn_keep_reason(c, ev.data, ev.len);
			/* A three-digit reason is a ZAP status (RFC 27): an auth refusal. */
			if (ev.len == 3 && ev.data[0] >= '1' && ev.data[0] <= '5' &&
			    ev.data[1] >= '0' && ev.data[1] <= '9' && ev.data[2] >= '0' &&
			    ev.data[2] <= '9')
				c->peer_status = (ev.data[0] - '0') * 100 +
				                 (ev.data[1] - '0') * 10 + (ev.data[2] - '0');
			break;
		default:
			break;
		}
		if (rc != 0)
			break;
	}
	zr__sock_rx_flush(c->sock); /* one wake for the whole batch */
	c->in_skip = 0;
	if (c->rx_armed && c->tls == NULL) {
		/* Resumed by an authenticator's answer with a receive in flight
		 * into c->in + c->in_len: nothing may move until it lands. */
		c->in_skip = off;
		if (rc == 1)
			rc = 0;
		return rc == 0 ? zr_zmtp_error(&c->z) : rc;
	}
	if (rc == 1 && c->rx_paused) {
		/* Paused on a full socket: the rest stays where it is, and the
		 * next decode starts at in_skip (nothing arms a receive while
		 * paused). Moved at each pause, a buffer of small messages was
		 * copied once per half a queue's worth (~30 instructions a 1 B
		 * message, callgrind); it moves once the socket takes it all. */
		c->in_skip = off;
		return zr_zmtp_error(&c->z);
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	if (rc == 1)
		rc = 0;
	if (rc == 0 && zr_zmtp_error(&c->z) < 0)
		rc = zr_zmtp_error(&c->z);
	if (rc == 0)
		rc = conn_in_fit(c);
	return rc;
}

/* The monitor event for a failed handshake, with its reason in words. */
static void
conn_handshake_failed(struct zr__conn *c, int err)
{
	char why[2 * ZR_EVENT_REASON_MAX]; /* the event keeps what fits */
	const char *peer = c->peer_addr[0] ? c->peer_addr : "the peer";
	const char *text;
	int status;

	if (err == -ZR_EAUTH) {
		status = zr_zmtp_auth_status(&c->z, &text);
		snprintf(why, sizeof why, "%s refused by the authenticator (%d)%s%s", peer, status,
		         text[0] ? ": " : "", text);
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_AUTH, status, c->endpoint,
		                   why);
	} else if (err == -ZR_EPEERERROR && c->peer_status > 0) {
		snprintf(why, sizeof why, "%s refused us: status %d", peer, c->peer_status);
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_AUTH, c->peer_status,
		                   c->endpoint, why);
	} else if (err == -ZR_EPEERERROR) {
		snprintf(why, sizeof why, "%s sent ERROR: %s", peer, c->peer_reason);
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, err, c->endpoint,
		                   why);
	} else if (err == -ZR_ESIGNATURE && c->tls == NULL &&
	           zr__tls_sniff(c->in, c->in_len) == 1) {
		/* The codec consumes nothing of a greeting it refuses: c->in
		 * still starts with the peer's first bytes. */
		snprintf(why, sizeof why, "%s: peer speaks TLS, this endpoint is plain tcp://",
		         peer);
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, err, c->endpoint,
		                   why);
	} else {
		snprintf(why, sizeof why, "%s: %s", peer, zr_strerror(err));
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, err, c->endpoint,
		                   why);
	}
}

/* The peer closed before its greeting was whole: with libzmq that is how a
 * mechanism mismatch looks from our side. Said as likely, not certain. */
static void
conn_greeting_hungup(struct zr__conn *c)
{
	static const char *const names[] = {"NULL", "PLAIN", "CURVE"};
	char why[2 * ZR_EVENT_REASON_MAX];
	int mech = c->zcfg.mechanism;

	snprintf(why, sizeof why,
	         "%s closed the connection on our greeting without completing its own: most likely "
	         "it uses another security mechanism (ours is %s)%s",
	         c->peer_addr[0] ? c->peer_addr : "the peer",
	         mech >= 0 && mech <= ZR_MECH_CURVE ? names[mech] : "?",
	         c->tls == NULL && c->ep.transport == ZR__TCP ? ", or it is a tls:// endpoint"
	                                                      : "");
	zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, -ZR_EMECHMISMATCH,
	                   c->endpoint, why);
}

/* Best effort on the way out (an alert, the codec's ERROR, close_notify):
 * what the socket buffer takes now, never waiting. */
static void
conn_tls_send_now(struct zr__conn *c)
{
	uint8_t buf[4096];
	size_t n;

	if (c->tls_tx_busy || c->fd < 0)
		return; /* a send from the ring is in flight: the rest would interleave */
	while ((n = zr__tls_pull(c->tls, buf, sizeof buf)) > 0)
		if (send(c->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
			break;
}

/* A protocol error: say ERROR if the codec queued one (best effort, the
 * socket is going away), then tear down. libzmq does not reconnect after a
 * protocol error either (checklist B3.28). */
static void
engine_conn_fail(struct zr__conn *c, int err)
{
	const uint8_t *p;
	size_t n;

	c->fail_err = err;
	if (c->state == ZR__CONN_HANDSHAKE)
		conn_handshake_failed(c, err);
	/* A protocol error (or the peer's ERROR) is final; a timeout is not. */
	if (err <= -ZR_EBASE && err > -ZR_ELAST && err != -ZR_EHEARTBEAT_TIMEOUT &&
	    err != -ZR_EHANDSHAKE_TIMEOUT) {
		c->no_reconnect = true;
		if (!c->tx_busy && (n = zr_zmtp_out(&c->z, &p)) > 0) {
			if (c->tls == NULL)
				(void)!send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
			else if (zr__tls_write(c->tls, p, n) > 0 && zr__tls_flush(c->tls) >= 0)
				conn_tls_send_now(c);
		}
	}
	conn_teardown(c);
}

/* ---- tls:// --------------------------------------------------------------- */

/* Sends what the session has for the wire (handshake, records, alerts),
 * from its ring, one send in flight. */
static void
conn_tls_send(struct zr__conn *c)
{
	if (c->tls_tx_busy || c->fd < 0 || c->state == ZR__CONN_CLOSING ||
	    zr__tls_send_iov(c->tls, &c->tls_iov) == 0)
		return;
	memset(&c->tls_mh, 0, sizeof c->tls_mh);
	c->tls_mh.msg_iov = &c->tls_iov;
	c->tls_mh.msg_iovlen = 1;
	if (zr__op_sendmsg(conn_loop(c), &c->tls_tx_op, c->fd, &c->tls_mh, MSG_NOSIGNAL) == 0)
		c->tls_tx_busy = true;
}

/* A session that failed (its words: zr__tls_error): the event says why,
 * the pending alert tells the peer (best effort), and the connection
 * closes for good, as after a ZMTP protocol error. */
static void
conn_tls_fail(struct zr__conn *c)
{
	char why[2 * ZR_EVENT_REASON_MAX];

	c->fail_err = -EPROTO;
	c->no_reconnect = true;
	if (c->state == ZR__CONN_HANDSHAKE) {
		snprintf(why, sizeof why, "%s: %s", c->peer_addr[0] ? c->peer_addr : "the peer",
		         zr__tls_error(c->tls));
		zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, -EPROTO,
		                   c->endpoint, why);
	} else {
		snprintf(c->drop_why, sizeof c->drop_why, "%s", zr__tls_error(c->tls));
	}
	conn_tls_send_now(c);
	conn_teardown(c);
}

/* rc < 0 from the session or from the codec behind it. */
static void
conn_tls_error(struct zr__conn *c, int rc)
{
	enum zr__tls_fail f = zr__tls_failure(c->tls);

	if (rc == -ESHUTDOWN || f == ZR__TLS_CLOSED)
		conn_teardown(c); /* the peer's close_notify: its end of stream */
	else if (f != ZR__TLS_OK)
		conn_tls_fail(c);
	else
		engine_conn_fail(c, rc);
}

/* Decrypts what the session holds into c->in and decodes it, until the
 * session has nothing more, the socket's queue is full (rx_paused: the rest
 * waits in the session, whose ring then fills, and no receive is armed),
 * or something fails. Returns 0 or a negative code (conn_tls_error). */
static int
conn_tls_input(struct zr__conn *c)
{
	/* Before the first plaintext: the codec's authenticator may read it. */
	if (c->tls_subject[0] == '\0' && zr__tls_done(c->tls) &&
	    zr__tls_peer_subject(c->tls) != NULL)
		snprintf(c->tls_subject, ZR__CONN_SUBJECT, "%s", zr__tls_peer_subject(c->tls));
	while (!c->rx_paused && c->in_len < c->in_cap) {
		ssize_t n = zr__tls_read(c->tls, c->in + c->in_len, c->in_cap - c->in_len);
		int rc;

		if (n <= 0)
			return (int)n;
		c->rx_total += (size_t)n;
		c->in_len += (size_t)n;
		c->in_full = c->in_len == c->in_cap;
		rc = conn_decode(c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* n octets of a frame body landed in rx_msg itself (conn_rx_arm). Returns
 * <0 on failure. */
static int
conn_placed(struct zr__conn *c, size_t n)
{
	struct zr_zmtp_event ev;
	int rc = zr_zmtp_feed_placed(&c->z, n, &ev, zr__now_ms());

	if (rc < 0)
		return rc;
	rc = conn_frame(c, &ev);
	zr__sock_rx_flush(c->sock);
	return rc < 0 ? rc : 0;
}

static void
conn_rx_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__conn *c = ZR_CONTAINER_OF(op, struct zr__conn, rx_op);
	bool direct;
	int rc;

	(void)flags;
	c->rx_armed = false;
	direct = c->rx_direct;
	c->rx_direct = false;
	if (c->state == ZR__CONN_CLOSING) {
		conn_teardown(c);
		return;
	}
	if (c->state == ZR__CONN_FINISHING) {
		if (res > 0 || conn_op_again(res)) {
			c->in_len = 0; /* the app closed: nothing read now is delivered */
			c->in_skip = 0;
			conn_rx_arm(c);
		} else {
			conn_teardown(c); /* the peer's FIN (or an error): done */
		}
		return;
	}
	if (conn_op_again(res)) {
		conn_rx_arm(c);
		return;
	}
	if (res <= 0) {
		if (c->tls != NULL && c->state == ZR__CONN_HANDSHAKE && !zr__tls_done(c->tls)) {
			char why[2 * ZR_EVENT_REASON_MAX];

			snprintf(why, sizeof why,
			         "%s closed the connection during the TLS handshake, without an "
			         "alert",
			         c->peer_addr[0] ? c->peer_addr : "the peer");
			zr__sock_event_why(c->sock, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL, -ECONNRESET,
			                   c->endpoint, why);
			conn_teardown(c);
			return;
		}
		/* A CURVE server that cannot open our HELLO (libzmq: wrong server
		 * key) closes without a word after its greeting: say so, rather
		 * than leave "a wrong key looks like a timeout". Still reconnect:
		 * it may also have been restarting. */
		if (c->state == ZR__CONN_HANDSHAKE && c->zcfg.mechanism == ZR_MECH_CURVE &&
		    !c->zcfg.as_server && zr_zmtp_state(&c->z) == ZR_ZMTP_HANDSHAKE &&
		    c->rx_total <= ZR_ZMTP_GREETING_SIZE)
			conn_handshake_failed(c, -ZR_ECURVEHUNGUP);
		/* libzmq reads our whole greeting at once and, seeing another
		 * mechanism, closes before its own greeting went out. */
		else if (c->state == ZR__CONN_HANDSHAKE && zr_zmtp_state(&c->z) == ZR_ZMTP_GREETING)
			conn_greeting_hungup(c);
		conn_teardown(c);
		return;
	}
	if (c->tls != NULL) {
		rc = zr__tls_recv_ack(c->tls, (size_t)res);
		if (rc == 0)
			rc = conn_tls_input(c);
		if (rc < 0) {
			conn_tls_error(c, rc);
			return;
		}
		conn_tls_pump(c); /* the handshake's answer; a batch it held back */
	} else if (direct) {
		/* Into the body first; past it, the next bytes into c->in (empty
		 * before). */
		size_t placed =
			(size_t)res < c->rx_iov[0].iov_len ? (size_t)res : c->rx_iov[0].iov_len;

		c->rx_total += (size_t)res;
		c->in_len = (size_t)res - placed;
		rc = conn_placed(c, placed);
		if (rc == 0 && c->in_len > 0)
			rc = conn_decode(c);
		if (rc < 0) {
			engine_conn_fail(c, rc);
			return;
		}
	} else {
		c->rx_total += (size_t)res;
		c->in_len += (size_t)res;
		c->in_full = c->in_len == c->in_cap;
		rc = conn_decode(c);
		if (rc < 0) {
			engine_conn_fail(c, rc);
			return;
		}
	}
	conn_tx_kick(c);
	conn_rx_arm(c);
	conn_timer_codec(c);
}

void
zr__conn_auth_done(struct zr__conn *c)
{
	if (c->state != ZR__CONN_HANDSHAKE)
		return;
	c->zap_resume = true;
	conn_timer_set(c, 0);
}

void
zr__conn_resume(struct zr__conn *c)
{
	int rc;

	if (!c->rx_paused || c->state == ZR__CONN_CLOSING)
		return;
	if (c->inproc) {
		c->rx_paused = false;
		if (c->twin != NULL)
			zr__inproc_flush(c->twin, true);
		return;
	}
	rc = conn_decode(c);
	if (c->tls != NULL) {
		/* What the session decrypted or still holds comes next. */
		if (rc == 0)
			rc = conn_tls_input(c);
		if (rc < 0) {
			conn_tls_error(c, rc);
			return;
		}
		conn_tls_pump(c);
	} else if (rc < 0) {
		engine_conn_fail(c, rc);
		return;
	}
	conn_tx_kick(c);
	conn_rx_arm(c);
}

/* ---- send --------------------------------------------------------------- */

bool
zr__conn_room(const struct zr__conn *c, size_t *slots, uint64_t *bytes)
{
	const struct zr__options *o = &c->sock->opt;

	if (!zr__conn_has_room(c))
		return false;
	*slots = o->sndhwm > 0 ? (size_t)o->sndhwm - c->out_n : SIZE_MAX;
	/* has_room: an empty queue takes any message, a queue under the
	 * budget one more whatever its size. */
	*bytes = o->sndbytes <= 0 ? UINT64_MAX
	         : c->out_n == 0  ? (uint64_t)o->sndbytes
	                          : (uint64_t)o->sndbytes - c->out_bytes;
	return true;
}

/* How many messages at the head of outq are being written (or half written). */
static size_t
conn_out_busy(const struct zr__conn *c)
{
	if (c->inproc)
		return c->ip_head_ready ? 1u : 0u; /* the receiver's envelope is on it */
	if (c->tx_busy)
		return c->tx_msgs + (c->tx_end_frame > 0 ? 1u : 0u);
	return c->tx_frame > 0 ? 1u : 0u;
}

bool
zr__conn_drop_oldest(struct zr__conn *c)
{
	size_t k = conn_out_busy(c);
	zr_msg *m;

	if (k >= c->out_n)
		return false;
	m = *zr__conn_outq(c, k);
	for (size_t i = k; i + 1 < c->out_n; i++)
		*zr__conn_outq(c, i) = *zr__conn_outq(c, i + 1);
	c->out_n--;
	c->out_bytes -= zr__msg_cost(m);
	zr__msg_unref(m);
	return true;
}

void
zr__conn_kick_out(struct zr__conn *c)
{
	if (c->kick_out || c->state == ZR__CONN_CLOSING)
		return;
	c->kick_out = true;
	conn_timer_set(c, 0);
}

/* outq's ring is full: twice the slots. False without the memory. */
static bool
conn_outq_grow(struct zr__conn *c)
{
	size_t cap = c->out_cap * 2; /* starts at 16 (conn_new) */
	zr_msg **q;

	if (!ZR_INVARIANT(cap > 0))
		return false;
	q = malloc(cap * sizeof *q);
	if (q == NULL)
		return false;
	for (size_t i = 0; i < c->out_n; i++)
		q[i] = *zr__conn_outq(c, i);
	free(c->outq);
	c->outq = q;
	c->out_head = 0;
	c->out_cap = cap;
	return true;
}

/* Messages were queued on c: an inproc pipe hands them over, a routing
 * pass lists c for its end, anything else starts the send now. */
static void
conn_queued(struct zr__conn *c)
{
	if (c->inproc) {
		zr__inproc_flush(c, false);
	} else if (c->sock->tx_routing) {
		if (!c->tx_kick_queued) {
			c->tx_kick_queued = true;
			c->tx_kick_next = c->sock->tx_kicks;
			c->sock->tx_kicks = c;
		}
	} else {
		conn_tx_kick(c);
	}
}

bool
zr__conn_send(struct zr__conn *c, zr_msg *m, bool force)
{
	if (!force && !zr__conn_has_room(c))
		return false;
	if (c->out_n == c->out_cap && !conn_outq_grow(c))
		return false;
	*zr__conn_outq(c, c->out_n) = m;
	c->out_n++;
	c->out_bytes += zr__msg_cost(m);
	conn_queued(c);
	return true;
}

/*
 * see engine.h. What the socket's pass would do per message (pop, the
 * pattern's route, its room check and zr__conn_send: ~120 instructions of
 * a 1 B sender's io thread, callgrind) is one loop over what the handoff
 * shows, with one store of its head per look.
 */
size_t
zr__conn_send_run(struct zr__conn *c)
{
	struct zr_socket *s = c->sock;
	const struct zr__options *o = &s->opt;
	/* As zr__conn_has_room, message by message: SNDHWM, and SNDBYTES (an
	 * empty queue is under any budget, so it takes one of any size). */
	size_t hwm = o->sndhwm > 0 ? (size_t)o->sndhwm : SIZE_MAX;
	uint64_t budget = o->sndbytes > 0 ? (uint64_t)o->sndbytes : UINT64_MAX;
	size_t n = c->out_n, total = 0, k;
	uint64_t bytes = c->out_bytes, taken = 0;

	if (c->inproc)
		return 0;
	do {
		zr_msg *m;

		/* Refreshes the consumer's view (and follows a new ring). */
		if (!zr__conn_has_room(c) || zr__spsc_peek(&s->tx) == NULL)
			break;
		for (k = 0;
		     n < hwm && bytes < budget && (m = zr__spsc_peek_cached(&s->tx, k)) != NULL;
		     k++) {
			size_t cost = zr__msg_cost(m);

			if (n == c->out_cap) {
				c->out_n = n; /* what the new ring takes */
				if (!conn_outq_grow(c))
					break;
			}
			*zr__conn_outq(c, n) = m;
			n++;
			bytes += cost;
			taken += cost;
		}
		zr__spsc_drop(&s->tx, k);
		c->out_n = n;
		c->out_bytes = bytes;
		total += k;
	} while (k > 0);
	s->tx_pass_taken += taken;
	s->tx_pass_msgs += (uint32_t)total;
	if (total > 0)
		conn_queued(c);
	return total;
}

void
zr__conn_kick_queued(struct zr_socket *s)
{
	/* Nothing in a routing pass frees a connection (a kick-out closes on
	 * a later timer turn), so every one listed is still there. */
	while (s->tx_kicks != NULL) {
		struct zr__conn *c = s->tx_kicks;

		s->tx_kicks = c->tx_kick_next;
		c->tx_kick_queued = false;
		conn_tx_kick(c);
	}
}

bool
zr__conn_drained(const struct zr__conn *c)
{
	return c->out_n == 0 && !c->tx_busy &&
	       (c->tls == NULL || (!c->tls_tx_busy && zr__tls_pending(c->tls) == 0));
}

static zr_msg *
conn_outq_at(const struct zr__conn *c, size_t i)
{
	return *zr__conn_outq(c, i);
}

/* Drops the n messages at the head of outq (written, or lost with the
 * link). Their spares reach the app in one publish. */
static void
conn_outq_pop(struct zr__conn *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		zr_msg *m = c->outq[c->out_head];

		c->out_bytes -= zr__msg_cost(m);
		zr__sock_msg_put(c->sock, m);
		c->out_head = (c->out_head + 1) & (c->out_cap - 1);
	}
	c->out_n -= n;
	zr__spsc_publish(&c->sock->tx_spare);
}

/*
 * Room in c->tx_buf for n more octets after the used ones: a power of two
 * from CONN_TX_KEEP on, so a stream's buffer settles after a few batches
 * (CURVE's ciphertext, or the packed frames of a batch). Returns 0 or
 * -ENOMEM (the buffer is then unchanged).
 */
static int
conn_buf_room(struct zr__conn *c, size_t used, size_t n)
{
	size_t cap = c->tx_buf_cap > CONN_TX_KEEP ? c->tx_buf_cap : CONN_TX_KEEP;
	uint8_t *p;

	if (n <= c->tx_buf_cap - used)
		return 0;
	while (cap < used || cap - used < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = realloc(c->tx_buf, cap);
	if (p == NULL)
		return -ENOMEM;
	c->tx_buf = p;
	c->tx_buf_cap = cap;
	return 0;
}

/*
 * CURVE: encrypts the next frames of outq into c->tx_buf, from frame *f of
 * message *nmsg on, until the batch budget is spent (at a frame boundary,
 * like the plain path). A subscription (a raw message: a frame header, then
 * a SUBSCRIBE / CANCEL command body or a ZMTP 3.0 message) becomes a MESSAGE
 * flagged COMMAND, or a plain one for 3.0, as libzmq sends it. *used: octets
 * written. Returns 0 or a negative code (the connection must close).
 */
static int
conn_tx_encrypt(struct zr__conn *c, uint32_t *f, size_t *nmsg, size_t *used)
{
	while (*nmsg < c->out_n && *used < ZR__CONN_TX_BATCH) {
		zr_msg *m = conn_outq_at(c, *nmsg);
		uint32_t nframes = m->raw ? 1u : m->nframes;

		for (; *f < nframes && *used < ZR__CONN_TX_BATCH; (*f)++) {
			const uint8_t *data;
			size_t len, need;
			unsigned flags;
			int n;

			if (m->raw) {
				size_t h = (m->data[0] & ZR_ZMTP_LONG) ? 9 : 2;

				data = m->data + h;
				len = m->len - h;
				flags = m->data[0] & ZR_ZMTP_COMMAND;
			} else {
				len = m->frames[*f].len;
				/* A message of empty frames may have no buffer at all. */
				data = len > 0 ? m->data + m->frames[*f].off : NULL;
				flags = *f + 1 < nframes ? ZR_ZMTP_MORE : 0;
			}
			need = zr_zmtp_frame_wire_size(&c->z, len);
			if (conn_buf_room(c, *used, need) < 0)
				return -ENOMEM;
			n = zr_zmtp_encode_frame(&c->z, flags, data, len, c->tx_buf + *used,
			                         c->tx_buf_cap - *used);
			if (n < 0)
				return n;
			*used += (size_t)n;
		}
		if (*f < nframes) {
			c->tx_end_frame = *f; /* the budget is spent: go on from here next time */
			break;
		}
		*f = 0;
		(*nmsg)++;
	}
	return 0;
}

/*
 * The usual run of a batch: whole one-frame messages from outq slot *nmsg on,
 * each of at most ZR_ZMTP_SHORT_MAX octets, copied with their headers into
 * out while they fit in room and the batch stays under budget. Returns the
 * octets written; *nmsg is past the last message taken. One tight loop: the
 * general one below spent ~85 instructions a 1 B message (callgrind).
 */
static size_t
conn_tx_pack_run(const struct zr__conn *c, size_t *nmsg, uint8_t *out, size_t room, size_t budget)
{
	size_t used = 0, i = *nmsg;

	for (; i < c->out_n && used < budget; i++) {
		const zr_msg *m = conn_outq_at(c, i);
		size_t len;

		if (m->nframes != 1 || m->raw)
			break;
		len = m->frames[0].len;
		if (len > ZR_ZMTP_SHORT_MAX || len + 2 > room - used)
			break;
		zr_zmtp_short_header(out + used, (uint8_t)len, 0);
		if (len > 0)
			memcpy(out + used + 2, m->data + m->frames[0].off, len);
		used += len + 2;
	}
	*nmsg = i;
	return used;
}

static void
conn_tx_kick(struct zr__conn *c)
{
	size_t niov = 0, bytes = 0, nmsg = 0, n;
	uint32_t f = c->tx_frame;
	const uint8_t *ctl;

	if (c->tx_busy || c->fd < 0 ||
	    (c->state != ZR__CONN_HANDSHAKE && c->state != ZR__CONN_ACTIVE))
		return;
	/* No batch in flight: the table may move. (Without the memory, the
	 * batches stay as short as they were.) */
	if (c->tx_iov_short && c->tx_iov_cap < ZR__CONN_IOV_MAX)
		(void)conn_iov_fit(c, c->tx_iov_cap * 2);
	c->tx_iov_short = false;
	/* The codec's own bytes go only between messages, never inside one. */
	n = f == 0 ? zr_zmtp_out(&c->z, &ctl) : 0;
	c->tx_ctl = n;
	if (n > 0) {
		c->tx_iov[niov].iov_base = (void *)ctl;
		c->tx_iov[niov].iov_len = n;
		niov++;
		bytes += n;
	}
	c->tx_end_frame = 0;
	if (c->state == ZR__CONN_ACTIVE && zr_zmtp_encrypts(&c->z)) {
		size_t used = 0;

		/* Out of memory, or 2^64 nonces spent: close at the next timer turn
		 * (the callers of this function still hold c). */
		if (conn_tx_encrypt(c, &f, &nmsg, &used) < 0) {
			zr__conn_kick_out(c);
			return;
		}
		if (used > 0) {
			c->tx_iov[niov].iov_base = c->tx_buf;
			c->tx_iov[niov].iov_len = used;
			niov++;
		}
	} else if (c->state == ZR__CONN_ACTIVE && zr_zmtp_state(&c->z) == ZR_ZMTP_TRAFFIC) {
		/* Without the packing buffer (no memory) every frame goes by reference.
		 * Sized for what waits (out_bytes bounds a frame's header and body),
		 * so a subscriber sent one message at a time (fan-out) packs into a
		 * few dozen octets, not a malloc'd 16 KiB per batch. */
		size_t pack_max = c->out_bytes < ZR__CONN_PACK ? c->out_bytes : ZR__CONN_PACK;
		uint8_t *pack =
			c->out_n > 0 && conn_buf_room(c, 0, pack_max) == 0 ? c->tx_buf : NULL;
		size_t packed = 0;
		size_t pack_iov = SIZE_MAX;

		while (nmsg < c->out_n && bytes < ZR__CONN_TX_REF_BATCH) {
			zr_msg *m;

			if (f == 0 && pack != NULL) {
				bool extend = niov > 0 && pack_iov == niov - 1;
				size_t run = 0;

				if (extend || niov < c->tx_iov_cap)
					run = conn_tx_pack_run(c, &nmsg, pack + packed,
					                       pack_max - packed,
					                       ZR__CONN_TX_REF_BATCH - bytes);

				if (run > 0) {
					if (extend) {
						c->tx_iov[pack_iov].iov_len += run;
					} else {
						pack_iov = niov;
						c->tx_iov[niov].iov_base = pack + packed;
						c->tx_iov[niov].iov_len = run;
						niov++;
					}
					packed += run;
					bytes += run;
					continue;
				}
			}
			m = conn_outq_at(c, nmsg);
			if (m->raw) {
				if (niov == c->tx_iov_cap) {
					c->tx_iov_short = true;
					break;
				}
				c->tx_iov[niov].iov_base = m->data;
				c->tx_iov[niov].iov_len = m->len;
				niov++;
				bytes += m->len;
				nmsg++;
				continue;
			}
			for (; f < m->nframes; f++) {
				size_t len = m->frames[f].len;
				unsigned more = f + 1 < m->nframes ? ZR_ZMTP_MORE : 0;
				int h;

				if (len <= ZR__CONN_SMALL_FRAME && pack != NULL &&
				    packed + ZR_ZMTP_HEADER_MAX + len <= pack_max) {
					/* Packed: extend the packed iovec if it is the last one. */
					bool extend = niov > 0 && pack_iov == niov - 1;

					if (!extend && niov == c->tx_iov_cap) {
						c->tx_iov_short = true;
						break;
					}
					h = zr_zmtp_frame_header(pack + packed, len, more);
					if (len > 0)
						memcpy(pack + packed + h,
						       m->data + m->frames[f].off, len);
					if (extend) {
						c->tx_iov[pack_iov].iov_len += (size_t)h + len;
					} else {
						pack_iov = niov;
						c->tx_iov[niov].iov_base = pack + packed;
						c->tx_iov[niov].iov_len = (size_t)h + len;
						niov++;
					}
					packed += (size_t)h + len;
					bytes += (size_t)h + len;
					continue;
				}
				if (niov + 2 > c->tx_iov_cap) {
					c->tx_iov_short = true;
					break;
				}
				h = zr_zmtp_frame_header(c->tx_hdr[niov], len, more);
				c->tx_iov[niov].iov_base = c->tx_hdr[niov];
				c->tx_iov[niov].iov_len = (size_t)h;
				niov++;
				/* A message of empty frames may have no buffer at all. */
				c->tx_iov[niov].iov_base =
					len > 0 ? m->data + m->frames[f].off : NULL;
				c->tx_iov[niov].iov_len = len;
				niov++;
				bytes += (size_t)h + len;
			}
			if (f < m->nframes) {
				c->tx_end_frame =
					f; /* the iovec is full: go on from here next time */
				break;
			}
			f = 0;
			nmsg++;
		}
	}
	if (niov == 0)
		return;
	c->tx_msgs = nmsg;
	c->tx_iov_start = 0;
	memset(&c->tx_mh, 0, sizeof c->tx_mh);
	c->tx_mh.msg_iov = c->tx_iov;
	c->tx_mh.msg_iovlen = niov;
	if (c->tls != NULL) {
		/* The batch goes into the session (written as it takes it). */
		c->tx_busy = true;
		conn_tls_pump(c);
		return;
	}
	if (zr__op_sendmsg(conn_loop(c), &c->tx_op, c->fd, &c->tx_mh, MSG_NOSIGNAL | MSG_WAITALL) ==
	    0)
		c->tx_busy = true;
}

/* left more octets of the batch in tx_mh were written (to the kernel, or
 * into the TLS session). Returns true when the whole batch was; otherwise
 * tx_mh is the rest. */
static bool
conn_tx_advance(struct zr__conn *c, size_t left)
{
	while (c->tx_iov_start < c->tx_mh.msg_iovlen && left >= c->tx_iov[c->tx_iov_start].iov_len)
		left -= c->tx_iov[c->tx_iov_start++].iov_len;
	if (c->tx_iov_start == c->tx_mh.msg_iovlen)
		return true;
	c->tx_iov[c->tx_iov_start].iov_base = (uint8_t *)c->tx_iov[c->tx_iov_start].iov_base + left;
	c->tx_iov[c->tx_iov_start].iov_len -= left;
	c->tx_mh.msg_iov = c->tx_iov + c->tx_iov_start;
	c->tx_mh.msg_iovlen -= c->tx_iov_start;
	memmove(c->tx_iov, c->tx_mh.msg_iov, c->tx_mh.msg_iovlen * sizeof *c->tx_iov);
	c->tx_mh.msg_iov = c->tx_iov;
	c->tx_iov_start = 0;
	return false;
}

/* The whole batch was written: its messages are sent. Returns whether c
 * was full before (the socket then hears of the room, conn_tx_after). */
static bool
conn_tx_batch_done(struct zr__conn *c)
{
	bool was_full;

	c->tx_busy = false;
	zr_zmtp_out_ack(&c->z, c->tx_ctl);
	was_full = !zr__conn_has_room(c);
	conn_outq_pop(c, c->tx_msgs);
	/*
	 * CURVE: one huge message must not pin its ciphertext buffer. Nor may
	 * an idle connection (a PUB with a thousand subscribers) keep a batch's
	 * worth each: a small one stays, so a batch of a few small messages
	 * allocates nothing. A drained one whose socket has more to route keeps
	 * its buffer: a publisher's subscribers drain and refill in runs
	 * (pat_pubsub.c), and freeing at each drain cost a malloc chain and
	 * fresh pages per batch (15-20% of a 100-subscriber publisher, perf:
	 * page faults in conn_tx_kick's copy; keeping 8 KiB, libzmq's batch,
	 * was no better). The last drain, with nothing left, frees it.
	 */
	if (c->tx_buf_cap > 4 * ZR__CONN_TX_BATCH ||
	    (c->out_n == 0 && c->tx_buf_cap > CONN_TX_KEEP && !zr__sock_unsent(c->sock))) {
		free(c->tx_buf);
		c->tx_buf = NULL;
		c->tx_buf_cap = 0;
	}
	c->tx_msgs = 0;
	c->tx_ctl = 0;
	c->tx_frame = c->tx_end_frame;
	c->tx_end_frame = 0;
	return was_full;
}

/* After a batch: the next one, the socket told of room, a closing socket
 * told of a drained connection. */
static void
conn_tx_after(struct zr__conn *c, bool was_full)
{
	conn_tx_kick(c);
	/* The connection a PUB_BLOCK route waits for is told of every bit of
	 * room: it waits for a run's worth (pub_route), not for one slot. */
	if ((was_full || c->sock->tx_blocked == c) && zr__conn_has_room(c))
		zr__sock_conn_room(c->sock, c);
	if (c->sock->io_closing && zr__conn_drained(c))
		zr__sock_close_kick(c->sock);
}

static void
conn_tx_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__conn *c = ZR_CONTAINER_OF(op, struct zr__conn, tx_op);

	(void)flags;
	c->tx_busy = false;
	if (c->state == ZR__CONN_CLOSING) {
		conn_teardown(c);
		return;
	}
	if (res == -ECANCELED)
		res = 0; /* not ours (conn_op_again): none of it went; again */
	if (res < 0) {
		conn_teardown(c);
		return;
	}
	/* Short send: skip what went, resubmit the rest of the same batch. */
	if (!conn_tx_advance(c, (size_t)res)) {
		if (zr__op_sendmsg(conn_loop(c), &c->tx_op, c->fd, &c->tx_mh,
		                   MSG_NOSIGNAL | MSG_WAITALL) == 0)
			c->tx_busy = true;
		else
			conn_teardown(c);
		return;
	}
	conn_tx_after(c, conn_tx_batch_done(c));
}

/*
 * tls://: moves the batch in tx_mh into the session as far as it takes it
 * (nothing before the TLS handshake is done, so the ZMTP greeting waits;
 * less while the outbound ring is full), seals what it staged once the
 * batch is all in, sends the ciphertext, and goes on while any of it made
 * progress. A finished batch starts the next (conn_tx_kick), whose call
 * back in here only leaves its work to this loop.
 */
static void
conn_tls_pump(struct zr__conn *c)
{
	bool more = true;

	if (c->tls_pumping)
		return;
	c->tls_pumping = true;
	while (more && c->fd >= 0 && c->state != ZR__CONN_CLOSING) {
		more = false;
		if (c->tx_busy) {
			ssize_t n =
				zr__tls_writev(c->tls, c->tx_mh.msg_iov, (int)c->tx_mh.msg_iovlen);

			if (n < 0) {
				/* The session failed under us: close at the next timer
				 * turn (the callers still hold c). */
				snprintf(c->drop_why, sizeof c->drop_why, "%s",
				         zr__tls_error(c->tls));
				zr__conn_kick_out(c);
				break;
			}
			if (n > 0) {
				more = true;
				if (conn_tx_advance(c, (size_t)n))
					conn_tx_after(c, conn_tx_batch_done(c));
			}
		}
		if (!c->tx_busy)
			(void)zr__tls_flush(c->tls);
		conn_tls_send(c);
	}
	c->tls_pumping = false;
}

static void
conn_tls_tx_done(struct zr__op *op, int res, uint32_t flags)
{
	struct zr__conn *c = ZR_CONTAINER_OF(op, struct zr__conn, tls_tx_op);

	(void)flags;
	c->tls_tx_busy = false;
	if (c->state != ZR__CONN_CLOSING && res == -ECANCELED) {
		/* Not ours (conn_op_again): the same records again. */
		if (zr__op_sendmsg(conn_loop(c), &c->tls_tx_op, c->fd, &c->tls_mh, MSG_NOSIGNAL) ==
		    0) {
			c->tls_tx_busy = true;
			return;
		}
	}
	if (c->state == ZR__CONN_CLOSING || res < 0) {
		conn_teardown(c);
		return;
	}
	if (c->state == ZR__CONN_FINISHING)
		return; /* close_notify went out; reading to the peer's FIN */
	if (zr__tls_send_ack(c->tls, (size_t)res) < 0) {
		conn_tls_fail(c);
		return;
	}
	conn_tls_pump(c);
	if (c->sock->io_closing && zr__conn_drained(c))
		zr__sock_close_kick(c->sock);
}

/* ---- timers and teardown ------------------------------------------------ */

/*
 * A graceful close. close(2) on a TCP socket that still has unread bytes
 * (a peer's heartbeat PING, say) sends RST instead of FIN, and RST makes
 * both kernels drop what is still in flight: messages that had left our
 * queues, so that LINGER counted them sent, would never arrive (the fault
 * tests lost thousands behind a rate limit). So a drained connection sends
 * FIN after its last byte and reads, discarding, until the peer's FIN: a
 * ZMTP peer closes when it reads end of stream, i.e. after it read all we
 * sent. The wait ends there, at an error, when the socket's LINGER runs
 * out (its timer closes every connection), or when for
 * ZR__CONN_FIN_STALL_MS the bytes not yet acknowledged (SIOCOUTQ) have not
 * moved: a peer that stopped reading, or that has them all but does not
 * close, does not hold a closing socket for ever.
 */
#define ZR__CONN_FIN_STALL_MS 2000u
#define ZR__CONN_FIN_TICK_MS 100u

static void
conn_finish_check(struct zr__conn *c)
{
	uint64_t now = zr__now_ms();
	int outq = 0;

	if (ioctl(c->fd, SIOCOUTQ, &outq) < 0)
		outq = 0;
	if (outq != c->fin_outq) {
		c->fin_outq = outq;
		c->fin_moved_ms = now;
	}
	if (now - c->fin_moved_ms >= ZR__CONN_FIN_STALL_MS) {
		conn_teardown(c);
		return;
	}
	conn_timer_set(c, now + ZR__CONN_FIN_TICK_MS);
}

void
zr__conn_finish(struct zr__conn *c)
{
	if (c->state != ZR__CONN_ACTIVE || c->fd < 0 || !zr__conn_drained(c)) {
		zr__conn_close(c);
		return;
	}
	if (c->tls != NULL && zr__tls_close(c->tls) == 0)
		conn_tls_send_now(c); /* close_notify before our FIN */
	if (shutdown(c->fd, SHUT_WR) < 0) {
		zr__conn_close(c);
		return;
	}
	c->no_reconnect = true;
	/* Out of routing and counted gone now, as conn_teardown does for an
	 * active connection (it will not see this one as active). */
	zr__sock_event_why(c->sock, ZR_EVENT_DISCONNECTED, c->fd, c->endpoint, NULL);
	c->state = ZR__CONN_FINISHING;
	zr__sock_conn_lost(c->sock, c);
	/* A message waiting for room goes: the app that would read it closed. */
	zr_msg_free(c->rx_ready);
	c->rx_ready = NULL;
	c->rx_paused = false;
	c->in_len = 0;
	c->fin_outq = -1;
	c->fin_moved_ms = zr__now_ms();
	conn_rx_arm(c);
	conn_finish_check(c);
}

static void
conn_timer_fired(struct zr__timer *t)
{
	struct zr__conn *c = ZR_CONTAINER_OF(t, struct zr__conn, timer);
	int rc;

	if (c->kick_out) {
		zr__conn_close(c); /* may free c */
		return;
	}
	if (c->state == ZR__CONN_FINISHING) {
		conn_finish_check(c);
		return;
	}
	if (c->state == ZR__CONN_WAITING) {
		if (!conn_give_up(c))
			zr__conn_start_connect(c);
		return;
	}
	if (c->state != ZR__CONN_HANDSHAKE && c->state != ZR__CONN_ACTIVE)
		return;
	if (c->zap_resume) {
		/* The authenticator answered (zr__conn_auth_done): a refusal
		 * is the codec's sticky error, which the tick below reports;
		 * an acceptance goes on with the bytes the codec left parked. */
		c->zap_resume = false;
		if (zr_zmtp_error(&c->z) == 0) {
			rc = conn_decode(c);
			if (rc < 0) {
				engine_conn_fail(c, rc);
				return;
			}
			if (c->tls != NULL)
				conn_tls_pump(c);
			conn_rx_arm(c);
		}
	}
	/* Paused by backpressure, we read nothing, the peer's PINGs included:
	 * its silence is ours, not a dead peer: an unarmed receive sees no PING. */
	if (c->rx_paused)
		zr_zmtp_touch(&c->z, zr__now_ms());
	rc = zr_zmtp_tick(&c->z, zr__now_ms());
	if (rc < 0) {
		engine_conn_fail(c, rc);
		return;
	}
	conn_tx_kick(c);
	conn_timer_codec(c);
}

static void
conn_reset_buffers(struct zr__conn *c)
{
	zr_msg_free(c->rx_msg);
	c->rx_msg = NULL;
	c->rx_direct = false;
	zr_msg_free(c->rx_ready);
	c->rx_ready = NULL;
	c->rx_paused = false;
	c->in_len = 0;
	c->in_skip = 0;
	/* Messages of a batch that was in flight may be half on the wire: they
	 * are lost with the connection (the peer drops a partial message). */
	/* A batch still counted here was cut off: its whole messages and the one
	 * it stopped inside are lost. Otherwise only a half-written head is. */
	size_t lost = c->tx_msgs > 0 || c->tx_end_frame > 0
	                      ? c->tx_msgs + (c->tx_end_frame > 0 ? 1u : 0u)
	                      : (c->tx_frame > 0 ? 1u : 0u);

	conn_outq_pop(c, lost < c->out_n ? lost : c->out_n);
	c->kick_out = false;
	c->drop_why[0] = '\0';
	c->tx_msgs = 0;
	c->tx_ctl = 0;
	c->tx_frame = 0;
	c->tx_end_frame = 0;
	zr_zmtp_fini(&c->z); /* CURVE keys */
	conn_meta_drop(c);
	zr__tls_free(c->tls); /* a reconnect starts a new session */
	c->tls = NULL;
	free(c->tx_buf);
	c->tx_buf = NULL;
	c->tx_buf_cap = 0;
	c->in_full = false;
	if (c->in_cap > c->in_norm) {
		uint8_t *p = realloc(c->in, c->in_norm);

		if (p != NULL) {
			c->in = p;
			c->in_cap = c->in_norm;
		}
	}
}

static void
conn_free(struct zr__conn *c)
{
	struct zr_socket *s = c->sock;

	conn_outq_pop(c, c->out_n);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	zr__timer_stop(conn_loop(c), &c->timer);
	if (c->connecter)
		zr__sock_pipes_add(s, -1);
	if (c->accepted)
		s->naccepted--;
	zr__subs_drop(&s->ps.subs, &c->subs);
	zr__zap_cancel(c);
	conn_rx_reader(c, false);
	zr_zmtp_fini(&c->z);
	conn_meta_drop(c);
	zr__tls_free(c->tls);
	free(c->tls_subject);
	free(c->tx_buf);
	free(c->outq);
	free(c->in);
	free(c->tx_iov);
	free(c);
}

/* Idempotent; called again from each completion until nothing is in flight. */
static void
conn_teardown(struct zr__conn *c)
{
	struct zr_socket *s = c->sock;
	bool was_active = c->state == ZR__CONN_ACTIVE;

	if (c->state != ZR__CONN_CLOSING) {
		/* An established link closed for the peer's protocol error says
		 * which (a handshake failure had its own event). */
		const char *why = NULL;

		if (c->drop_why[0] != '\0')
			why = c->drop_why; /* we dropped it (a subscription limit) */
		else if (was_active && c->fail_err <= -ZR_EBASE)
			why = zr_strerror(c->fail_err);
		if (c->state == ZR__CONN_HANDSHAKE || was_active)
			zr__sock_event_why(s, ZR_EVENT_DISCONNECTED, c->fd, c->endpoint, why);
		c->state = ZR__CONN_CLOSING;
		zr__timer_stop(conn_loop(c), &c->timer);
		zr__zap_cancel(c); /* a late reply finds nothing */
		if (was_active)
			zr__sock_conn_lost(s, c); /* out of routing at once */
		if (c->inproc)
			zr__inproc_detach(c);
		if (c->fd >= 0) {
			shutdown(c->fd, SHUT_RDWR);
			zr__op_cancel_fd(conn_loop(c), c->fd);
		}
	}
	if (c->rx_op.inflight || c->tx_op.inflight || c->connect_op.inflight ||
	    c->tls_tx_op.inflight)
		return;
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	conn_reset_buffers(c);
	c->rx_armed = false;
	c->tx_busy = false;
	c->tls_tx_busy = false;
	if (c->connecter && !c->no_reconnect && (!s->io_closing || zr__sock_unsent(s))) {
		conn_retry(c);
		return;
	}
	conn_free(c);
}

void
zr__conn_close(struct zr__conn *c)
{
	c->no_reconnect = true;
	if (c->state == ZR__CONN_WAITING) {
		c->state = ZR__CONN_CLOSING;
		conn_free(c);
		return;
	}
	conn_teardown(c);
}
