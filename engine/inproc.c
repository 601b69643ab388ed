/*
 * inproc:// — sockets of one context joined without a kernel socket, a
 * codec or a copy (engine/README.md, "inproc").
 *
 * A pipe is two struct zr__conn in inproc mode, one in each socket, each
 * the other's twin. The patterns see two ordinary connections: they route
 * to one with zr__conn_send and get messages from it through
 * zr__sock_deliver. Both live on the io thread, so a message moves by
 * pointer: zr__conn_send queues it in the sender's outq (bounded by SNDHWM
 * and SNDBYTES, as for tcp) and zr__inproc_flush hands it at once to the
 * receiving socket's delivery path (bounded by RCVHWM and RCVBYTES). When
 * the receiver's queue is full its connection pauses as a tcp one does,
 * the message stays at the head of the sender's outq, and the app's next
 * reads resume it (zr__conn_resume). So a pipe holds SNDHWM + RCVHWM
 * messages, libzmq's figure, and a full receiver holds the sender back.
 *
 * Subscriptions travel as the ZMTP 3.0 messages (0x01/0x00 + topic) the
 * pub/sub patterns already take; routing ids are the connecting side's
 * ROUTING_ID option (else the ROUTER draws one), as a handshake would give.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base.h"
#include "engine.h"

/* ---- the context's names (app threads, under ctx->lock) ------------------ */

int
zr__inproc_register(struct zr_socket *s, const char *name)
{
	struct zr_ctx *ctx = s->ctx;
	struct zr__inproc_name *n;
	int rc = 0;

	pthread_mutex_lock(&ctx->lock);
	for (n = ctx->inproc_names; n != NULL; n = n->next) {
		if (strcmp(n->name, name) == 0) {
			rc = -EADDRINUSE;
			break;
		}
	}
	if (rc == 0) {
		n = calloc(1, sizeof *n);
		if (n == NULL) {
			rc = -ENOMEM;
		} else {
			n->sock = s;
			strncpy(n->name, name, ZR__INPROC_NAME_MAX);
			n->next = ctx->inproc_names;
			ctx->inproc_names = n;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

void
zr__inproc_unregister(struct zr_socket *s, const char *name)
{
	struct zr_ctx *ctx = s->ctx;

	pthread_mutex_lock(&ctx->lock);
	for (struct zr__inproc_name **p = &ctx->inproc_names; *p != NULL;) {
		struct zr__inproc_name *n = *p;

		if (n->sock == s && (name == NULL || strcmp(n->name, name) == 0)) {
			*p = n->next;
			free(n);
		} else {
			p = &n->next;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
}

void
zr__inproc_ctx_fini(struct zr_ctx *ctx)
{
	while (ctx->inproc_names != NULL) {
		struct zr__inproc_name *n = ctx->inproc_names;

		ctx->inproc_names = n->next;
		free(n);
	}
}

/* ---- pairing (io thread) -------------------------------------------------- */

static const char *
ip_name_of(const struct zr__endpoint *ep, char *buf)
{
	memcpy(buf, &ep->addr, ep->addrlen);
	buf[ep->addrlen] = '\0';
	return buf;
}

/* The socket that bound name and is not closing, or NULL. */
static struct zr_socket *
ip_binder(struct zr_ctx *ctx, const char *name)
{
	for (struct zr_socket *s = ctx->sockets; s != NULL; s = zr__sock_list_next(s)) {
		if (s->io_closing)
			continue;
		for (const struct zr__inproc_name *n = s->ip_names; n != NULL; n = n->next) {
			if (strcmp(n->name, name) == 0)
				return s;
		}
	}
	return NULL;
}

/* The routing id a handshake would carry: the socket's ROUTING_ID, unless
 * it is empty or starts with 0x00 (reserved for generated ones). */
static void
ip_rid(struct zr__conn *c, const struct zr_socket *peer)
{
	const struct zr__options *o = &peer->opt;

	c->rid_len = 0;
	if (o->routing_id_len > 0 && o->routing_id[0] != 0) {
		memcpy(c->rid, o->routing_id, o->routing_id_len);
		c->rid_len = o->routing_id_len;
	}
}

/* Joins the waiting connecter c to a new connection of binder b. */
static void
ip_attach(struct zr__conn *c, struct zr_socket *b)
{
	struct zr_socket *s = c->sock;
	struct zr__conn *a;

	/* What the handshake would refuse, and a socket's own name. */
	if (b == s || !zr_socktype_compatible((int)s->type, (int)b->type) ||
	    (a = zr__conn_new(b)) == NULL) {
		zr__conn_close(c);
		return;
	}
	a->inproc = true;
	a->ep = c->ep;
	memcpy(a->endpoint, c->endpoint, sizeof a->endpoint);
	memcpy(a->peer_addr, c->endpoint, sizeof a->peer_addr);
	memcpy(c->peer_addr, c->endpoint, sizeof c->peer_addr);
	ip_rid(a, s);
	ip_rid(c, b);
	a->twin = c;
	c->twin = a;
	/* Both active before either socket counts its end: a pattern's
	 * conn_active may send at once (a SUB's subscriptions). Nothing is
	 * handed over until the receiving end is counted (ip_live). */
	a->state = ZR__CONN_ACTIVE;
	c->state = ZR__CONN_ACTIVE;
	zr__sock_event(s, ZR_EVENT_CONNECTED, -1, c->endpoint);
	zr__sock_event(b, ZR_EVENT_ACCEPTED, -1, a->endpoint);
	if (zr__sock_conn_active(b, a) < 0) {
		/* Refused (a second PAIR peer): neither end was counted. */
		a->state = ZR__CONN_HANDSHAKE;
		c->state = ZR__CONN_HANDSHAKE;
		zr__conn_close(a); /* detaches: c goes on the next turn */
		return;
	}
	a->ip_live = true;
	if (zr__sock_conn_active(s, c) < 0) {
		c->state = ZR__CONN_HANDSHAKE;
		zr__conn_close(c);
		return;
	}
	c->ip_live = true;
	zr__inproc_flush(a, true);
	zr__inproc_flush(c, true);
}

void
zr__inproc_bind(struct zr_socket *s, const struct zr__endpoint *ep)
{
	struct zr__inproc_name *n = calloc(1, sizeof *n);
	struct zr_ctx *ctx = s->ctx;

	if (n == NULL)
		return;
	n->sock = s;
	ip_name_of(ep, n->name);
	n->next = s->ip_names;
	s->ip_names = n;
	/* Connecters that came first were waiting for this name (libzmq 4.x). */
	for (struct zr_socket *o = ctx->sockets; o != NULL; o = zr__sock_list_next(o)) {
		for (struct zr__conn *c = o->conns, *next; c != NULL; c = next) {
			char name[ZR__INPROC_NAME_MAX + 1];

			next = c->next;
			if (c->inproc && c->connecter && c->twin == NULL &&
			    c->state == ZR__CONN_WAITING &&
			    strcmp(ip_name_of(&c->ep, name), n->name) == 0)
				ip_attach(c, s);
		}
	}
}

void
zr__inproc_unbind(struct zr_socket *s, const char *name)
{
	/* Only the name goes: pipes it made stay, as libzmq 4.3 keeps them
	 * (and as zr_unbind keeps accepted tcp connections). */
	for (struct zr__inproc_name **p = &s->ip_names; *p != NULL;) {
		struct zr__inproc_name *n = *p;

		if (name != NULL && strcmp(n->name, name) != 0) {
			p = &n->next;
			continue;
		}
		*p = n->next;
		free(n);
	}
}

void
zr__inproc_connect(struct zr__conn *c)
{
	char name[ZR__INPROC_NAME_MAX + 1];
	struct zr_socket *b = ip_binder(c->sock->ctx, ip_name_of(&c->ep, name));

	c->inproc = true;
	c->no_reconnect = true;      /* libzmq's inproc pipes are never re-made */
	c->state = ZR__CONN_WAITING; /* no timer: zr__inproc_bind ends the wait */
	if (b != NULL)
		ip_attach(c, b);
}

struct zr__conn *
zr__inproc_dial(struct zr_socket *s, const char *name)
{
	struct zr_socket *b = ip_binder(s->ctx, name);
	struct zr__conn *c;
	char text[ZR__ENDPOINT_TEXT_MAX];

	if (b == NULL)
		return NULL;
	snprintf(text, sizeof text, "inproc://%s", name);
	c = zr__conn_new(s);
	if (c == NULL)
		return NULL;
	if (zr__endpoint_parse(text, false, false, &c->ep) < 0) {
		c->state = ZR__CONN_WAITING;
		zr__conn_close(c);
		return NULL;
	}
	memcpy(c->endpoint, text, sizeof c->endpoint);
	c->inproc = true;
	c->no_reconnect = true;
	c->state = ZR__CONN_WAITING;
	ip_attach(c, b);
	/* ip_attach may have closed (and freed) c: look for it. */
	for (struct zr__conn *k = s->conns; k != NULL; k = k->next)
		if (k == c)
			return c->state == ZR__CONN_ACTIVE ? c : NULL;
	return NULL;
}

void
zr__inproc_detach(struct zr__conn *c)
{
	struct zr__conn *t = c->twin;
	struct zr_ctx *ctx = c->sock->ctx;

	if (c->ip_flush_queued) { /* not expected inside a pass; never left dangling */
		for (struct zr__conn **p = &ctx->ip_flush; *p != NULL; p = &(*p)->ip_flush_next) {
			if (*p == c) {
				*p = c->ip_flush_next;
				break;
			}
		}
		c->ip_flush_queued = false;
	}

	if (t == NULL)
		return;
	c->twin = NULL;
	t->twin = NULL;
	/* Not now: the caller may be walking the twin's socket's list. */
	zr__conn_kick_out(t);
}

/* ---- the data path (io thread) ------------------------------------------- */

/*
 * Makes the head message the receiver's: a fan-out's shared message is
 * copied (the app that receives it owns it), the sender's properties go,
 * and the receiving pattern's envelope (ROUTER, REP: the sender's routing
 * id) is put in front. A raw subscription becomes the ZMTP 3.0 message
 * 0x01/0x00 + topic that PUB and XPUB take. Returns 0 or -ENOMEM.
 */
static int
ip_prepare(struct zr__conn *t, zr_msg **mp)
{
	struct zr_socket *r = t->sock;
	zr_msg *m = *mp;
	int rc;

	if (m->raw) {
		/* sub_msg's 3.0 form: a frame header (short or long), then the body. */
		size_t hlen = m->len >= 1 && (m->data[0] & 0x02) ? 9u : 2u;

		if (m->len < hlen + 1)
			return -EINVAL;
		m->raw = false; /* a fresh message: its inline frame table */
		m->frames[0].off = hlen;
		m->frames[0].len = m->len - hlen;
		m->nframes = 1;
		return 0;
	}
	if (m->refs > 1) {
		zr_msg *copy;

		rc = zr__sock_msg_new(r, &copy, m->len);
		if (rc < 0)
			return rc;
		rc = zr__msg_reserve(copy, m->len);
		for (uint32_t i = 0; rc == 0 && i < m->nframes; i++)
			rc = zr_msg_add(copy, m->data + m->frames[i].off, m->frames[i].len);
		if (rc < 0) {
			zr_msg_free(copy);
			return rc;
		}
		m->refs--;
		*mp = m = copy;
	}
	if (m->meta != NULL) {
		zr__meta_unref(m->meta);
		m->meta = NULL;
	}
	if (r->ops->rx_begin != NULL) {
		uint32_t n = m->nframes, k;

		rc = r->ops->rx_begin(r, t, m);
		if (rc < 0)
			return rc;
		/* The hook appends as for an empty message: rotate its frames to
		 * the front (spans only; the bytes stay). */
		for (k = m->nframes - n; k > 0; k--) {
			struct zr__span last = m->frames[m->nframes - 1];

			memmove(m->frames + 1, m->frames, (m->nframes - 1) * sizeof *m->frames);
			m->frames[0] = last;
		}
	}
	return 0;
}

/* Takes outq's head off without a reference change (it was handed over). */
static void
ip_pop(struct zr__conn *c, size_t cost)
{
	c->out_bytes -= cost;
	c->out_head = (c->out_head + 1) & (c->out_cap - 1);
	c->out_n--;
	c->ip_head_ready = false;
}

/* One wake per receiver per routing pass (zr__inproc_route_end). */
static void
ip_wake_later(struct zr_socket *r)
{
	struct zr_ctx *ctx = r->ctx;

	if (r->ip_wake_queued)
		return;
	r->ip_wake_queued = true;
	r->ip_wake_next = ctx->ip_wake;
	ctx->ip_wake = r;
}

void
zr__inproc_route_begin(struct zr_ctx *ctx)
{
	ctx->ip_routing++;
}

void
zr__inproc_route_end(struct zr_ctx *ctx)
{
	if (--ctx->ip_routing > 0 || ctx->ip_draining)
		return; /* the outer pass (or the drain below) does it */
	ctx->ip_draining = true;
	/* A loop, not a recursion: a flush that makes room lets its socket
	 * route again (zr__sock_conn_room), and what that queues here is taken
	 * by this same loop. */
	while (ctx->ip_flush != NULL) {
		struct zr__conn *c = ctx->ip_flush;

		ctx->ip_flush = c->ip_flush_next;
		c->ip_flush_queued = false;
		zr__inproc_flush(c, true);
	}
	ctx->ip_draining = false;
	while (ctx->ip_wake != NULL) {
		struct zr_socket *r = ctx->ip_wake;

		ctx->ip_wake = r->ip_wake_next;
		r->ip_wake_queued = false;
		zr__sock_rx_flush(r);
	}
}

/*
 * The receiving app gives the messages it emptied back to the io thread
 * (rx_spare), and the sending app makes new ones from what the io thread
 * gives it (tx_spare). Over tcp each ring is fed by its own connection's
 * traffic; an inproc message goes from one app to the other, so without
 * this the sender would malloc every message and the receiver free it on
 * another thread. One spare back per message handed over.
 */
static void
ip_spare_back(struct zr_socket *r, struct zr_socket *s)
{
	zr_msg *m = zr__spsc_pop(&r->rx_spare);

	if (m != NULL)
		zr__sock_spare_give(&s->tx_spare, m);
}

void
zr__inproc_flush(struct zr__conn *c, bool resume)
{
	struct zr__conn *t = c->twin;
	struct zr_socket *r;
	bool moved = false;
	int rc = 1;

	if (t == NULL || !t->ip_live || t->rx_paused || t->state != ZR__CONN_ACTIVE)
		return;
	r = t->sock;
	if (!resume && r->ctx->ip_routing > 0 && c->out_n > 0 &&
	    (*zr__conn_outq(c, c->out_n - 1))->refs > 1) {
		/* A fan-out (PUB, XPUB, XSUB): after the pass (route_end). */
		if (!c->ip_flush_queued) {
			c->ip_flush_queued = true;
			c->ip_flush_next = r->ctx->ip_flush;
			r->ctx->ip_flush = c;
		}
		return;
	}
	while (c->out_n > 0) {
		zr_msg *m = c->outq[c->out_head];
		size_t cost = zr__msg_cost(m);

		if (!c->ip_head_ready) {
			rc = ip_prepare(t, &m);
			if (rc < 0) {
				/* Cannot be made the receiver's: lost, as a message cut
				 * off with a tcp connection is. */
				ip_pop(c, cost);
				zr__sock_msg_sent(c->sock, m);
				continue;
			}
			c->outq[c->out_head] = m;
			c->out_bytes = c->out_bytes - cost + zr__msg_cost(m);
			cost = zr__msg_cost(m);
			c->ip_head_ready = true;
		}
		rc = zr__sock_deliver(r, t, m);
		if (rc == 0) {
			/* Full: pause as conn_deliver does, and look once more in
			 * case the app made room between the try and the flag. */
			t->rx_paused = true;
			atomic_store(&r->rx_paused, 1);
			atomic_thread_fence(memory_order_seq_cst);
			rc = zr__sock_deliver(r, t, m);
			if (rc == 0)
				break;
			t->rx_paused = false;
		}
		ip_pop(c, cost); /* delivered (or taken and freed by the pattern) */
		moved = true;
		ip_spare_back(r, c->sock);
		if (rc < 0) {
			zr__conn_kick_out(t); /* a subscription limit: drop_why is set */
			break;
		}
	}
	if (moved) {
		if (!resume && r->ctx->ip_routing > 0)
			ip_wake_later(r);
		else
			zr__sock_rx_flush(r);
		/* Room again in c's half of the pipe: let its socket route. Never
		 * from a send, which is inside routing already. */
		if (resume)
			zr__sock_conn_room(c->sock, c);
	}
	if (c->out_n == 0)
		zr__sock_close_kick(c->sock); /* a lingering close waits for this */
}
