/*
 * Publish-subscribe (RFC 29):
 *
 *   PUB, XPUB   every peer whose subscriptions match frame 0; a full peer's
 *               copy follows ZR_PUB_POLICY (dropped by default, libzmq's)
 *   SUB, XSUB   filter what arrives by their own subscriptions, which they
 *               send to every peer (again on each reconnect); XSUB also
 *               sends messages to all, and takes subscriptions as messages
 *               (0x01/0x00 + topic)
 *
 * The subscription sets are subs.c's tries: a PUB/XPUB's holds every
 * subscriber's (owner: the connection), a SUB/XSUB's its own (owner: self).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/base.h"
#include "engine.h"

/* ---- SUB, XSUB: our subscriptions on the wire --------------------------- */

/* A raw subscription frame for c's protocol version: the topic from topic,
 * or (topic NULL) from what h holds. */
static zr_msg *
sub_msg(const struct zr__conn *c, bool subscribe, const uint8_t *topic, size_t len,
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
sub_send(struct zr__conn *c, bool subscribe, const uint8_t *topic, size_t len,
         const struct zr__subs_hold *h)
{
	zr_msg *m = sub_msg(c, subscribe, topic, len, h);

	/* Forced past SNDHWM: subscriptions are never dropped by the data HWM
	 * (libzmq loses them on reconnect, #2258). */
	if (m != NULL && !zr__conn_send(c, m, true))
		zr__msg_unref(m);
}

/* SUB/XSUB: our own filter, counted; the wire hears only a change. The app
 * sets it, so no limit applies. */
static void
sub_subscribe(struct zr_socket *s, bool subscribe, const uint8_t *t, size_t len)
{
	struct zr__pat_pubsub *ps = &s->ps;
	int rc = subscribe ? zr__subs_add(&ps->subs, &ps->self, t, len, SIZE_MAX, SIZE_MAX)
	                   : zr__subs_remove(&ps->subs, &ps->self, t, len);

	if (rc <= 0 || (subscribe ? !(rc & ZR__SUBS_NEW_OWNER) : !(rc & ZR__SUBS_GONE_OWNER)))
		return;
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state == ZR__CONN_ACTIVE)
			sub_send(c, subscribe, t, len, NULL);
	}
}

/* A new peer hears every subscription we hold. */
static int
sub_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	for (const struct zr__subs_hold *h = s->ps.self.held; h != NULL; h = zr__subs_next(h))
		sub_send(c, true, NULL, zr__subs_topic(h, NULL), h);
	return 0;
}

static bool
sub_accept(struct zr_socket *s, const uint8_t *f0, size_t len)
{
	return zr__subs_match(&s->ps.subs, f0, len) != s->opt.invert_matching;
}

static int
sub_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);

	(void)c;
	if (!sub_accept(s, f0, len)) {
		zr_msg_free(m);
		return 1;
	}
	return ZR__PAT_RX;
}

/* XSUB: a subscription message changes our filter; anything else goes to
 * every peer. */
static bool
xsub_route(struct zr_socket *s, zr_msg *m)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);

	if (m->nframes == 1 && len >= 1 && (f0[0] == 0 || f0[0] == 1)) {
		sub_subscribe(s, f0[0] == 1, f0 + 1, len - 1);
		zr__msg_unref(m);
		return true;
	}
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state != ZR__CONN_ACTIVE)
			continue;
		m->refs++;
		if (!zr__conn_send(c, m, false))
			m->refs--;
	}
	zr__msg_unref(m);
	return true;
}

/* ---- PUB, XPUB: publishing ---------------------------------------------- */

/*
 * A copy to every subscriber whose subscriptions match frame 0, found by one
 * walk of the socket's trie (its cost grows with frame 0 and the matching
 * prefixes' holders, not with the topics subscribed). A matching subscriber
 * with a full queue is handled by ZR_PUB_POLICY; one that does not match
 * never holds the publisher back, whatever its state.
 */
/*
 * INVERT_MATCHING: every subscriber the collect did not find (its stamp is
 * not the walk's), linked the same way, as libzmq's reverse match (a peer
 * holding nothing at all gets everything).
 */
static struct zr__subs_owner *
pub_invert(struct zr_socket *s, struct zr__subs_owner *hit)
{
	struct zr__subs_owner *list = NULL;
	uint64_t stamp = s->ps.subs.stamp;

	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state != ZR__CONN_ACTIVE || (c->subs.stamp == stamp && hit != NULL))
			continue;
		c->subs.match_next = list;
		list = &c->subs;
	}
	return list;
}

/*
 * A run: the messages right behind m in the app's handoff that match the
 * same subscribers (zr__subs_same) go with it, so each subscriber's
 * connection is visited once per run and takes the run's messages in order,
 * instead of once per message. With 1,000 subscribers, the walks over their
 * connections (collect, room, queue) missed the cache at every one, for each
 * message (~40% of the publisher's io thread, perf). What each gets is the same as
 * routing the run's messages one by one: within a pass nothing frees room,
 * so a connection's room only shrinks, and ZR_PUB_BLOCK takes only as many
 * as every matched connection has room for.
 */
#define PUB_RUN_MAX 64

/* A PUB_BLOCK route's subscriber with this room left is waited for until
 * it has about half its SNDHWM and SNDBYTES free again (a run's worth). */
static bool
pub_short(const struct zr_socket *s, size_t slots, uint64_t bytes)
{
	const struct zr__options *o = &s->opt;
	size_t half = o->sndhwm > 1 ? (size_t)o->sndhwm / 2 : 1;

	if (o->sndhwm > 0 && slots < (half < PUB_RUN_MAX ? half : PUB_RUN_MAX))
		return true;
	return o->sndbytes > 0 && bytes < (uint64_t)o->sndbytes / 2;
}

/* Whether next goes to the same subscribers as the message whose frame 0
 * is f0 (a run: pub_route). */
static bool
pub_same(const struct zr_socket *s, const uint8_t *f0, size_t len, const zr_msg *next)
{
	size_t next_len;
	const uint8_t *nf0 = zr_msg_frame(next, 0, &next_len);

	return zr__subs_same(&s->ps.subs, f0, len, nf0, next_len);
}

/* One message of a run for c, under the socket's policy. */
static void
pub_give(struct zr_socket *s, struct zr__conn *c, zr_msg *m, int policy)
{
	bool room;

	if (s->conflate_tx) {
		zr__pat_send_conflated(c, m);
		return;
	}
	room = zr__conn_has_room(c);
	if (!room && policy == ZR_PUB_DROP_OLD)
		room = zr__conn_drop_oldest(c);
	if (!room) {
		if (policy == ZR_PUB_DISCONNECT)
			zr__conn_kick_out(c);
		return; /* DROP_NEW: this subscriber misses this message */
	}
	m->refs++;
	if (!zr__conn_send(c, m, true))
		m->refs--;
}

static bool
pub_route(struct zr_socket *s, zr_msg *m)
{
	size_t len, n = 1, slots = PUB_RUN_MAX;
	uint64_t bytes = UINT64_MAX;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);
	int policy = s->opt.pub_policy;
	struct zr__subs_owner *hit = zr__subs_collect(&s->ps.subs, f0, len), *o, *after;
	struct zr__conn *c;
	zr_msg *run[PUB_RUN_MAX], *next;

	if (s->opt.invert_matching)
		hit = pub_invert(s, hit);
	/* Whether the next message would join m's run. */
	next = zr__sock_tx_peek(s);
	bool runs = next != NULL && pub_same(s, f0, len, next);

	if (policy == ZR_PUB_BLOCK && !s->conflate_tx) {
		/* Lossless: all or nothing, so a retry never duplicates. When a
		 * run can form, a subscriber short of room is waited for until
		 * it has about half of it (pub_short; libzmq's pipes wake their
		 * writer at a low-water mark): taken a slot at a time, every
		 * message was a pass over all the subscribers (1,000 of them:
		 * runs of 1, perf). */
		for (o = hit; o != NULL; o = o->match_next) {
			size_t cs;
			uint64_t cb;

			c = ZR_CONTAINER_OF(o, struct zr__conn, subs);
			if (c->state != ZR__CONN_ACTIVE)
				continue;
			if (!zr__conn_room(c, &cs, &cb) ||
			    (runs && !c->inproc && pub_short(s, cs, cb))) {
				/* Only c's room can let m go now (zr__sock_conn_room);
				 * it has messages in flight, so room will come. An
				 * inproc pipe's room has more sources: any retries. */
				s->tx_blocked = c->inproc ? NULL : c;
				return false;
			}
			if (cs < slots)
				slots = cs;
			if (cb < bytes)
				bytes = cb;
		}
	}
	run[0] = m;
	for (uint64_t queued = zr__msg_cost(m); runs && n < slots && queued < bytes; n++) {
		zr__sock_tx_take(s);
		run[n] = next;
		queued += zr__msg_cost(next);
		next = zr__sock_tx_peek(s);
		runs = next != NULL && pub_same(s, f0, len, next);
	}

	bool matched = false;

	/* Nothing below changes the trie (a kick-out closes on a later turn),
	 * so the collected list stays valid. */
	for (o = hit; o != NULL; o = after) {
		after = o->match_next;
		c = ZR_CONTAINER_OF(o, struct zr__conn, subs);
		if (c->state != ZR__CONN_ACTIVE)
			continue;
		matched = true;
		for (size_t i = 0; i < n; i++)
			pub_give(s, c, run[i], policy);
	}
	if (!matched)
		atomic_fetch_add_explicit(&s->unmatched, n, memory_order_relaxed);
	/* As a connection's last reference does (conn.c): a message nobody
	 * took goes back to the sending thread as a spare, not to free() on
	 * this one (half the 10,000-topic publisher's messages match no one:
	 * its app thread malloc'd and the io thread freed each, ~12% of it). */
	for (size_t i = 0; i < n; i++)
		zr__sock_msg_put(s, run[i]);
	zr__spsc_publish(&s->tx_spare);
	return true;
}

/* ---- XPUB: notices to the app ------------------------------------------- */

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
 * in s->ps.xpub_pending, oldest first, and every later notice waits behind
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
xpub_notice(bool subscribe, const uint8_t *topic, size_t len, const struct zr__subs_hold *h)
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

/* XPUB_MANUAL: a notice's origin when no connection can be named (a lost
 * one's cancels). */
#define XPUB_NOBODY UINTPTR_MAX

/* A notice into rx, with (XPUB_MANUAL) its origin beside it. */
static bool
xpub_rx_push(struct zr_socket *s, zr_msg *m, uintptr_t serial)
{
	if (!zr__sock_rx_push(s, m))
		return false;
	/* The ring has room: it is twice rx's size and the app takes one
	 * entry for each notice it takes from rx. */
	if (s->ps.xpub_who != NULL)
		(void)zr__spsc_push(s->ps.xpub_who, (void *)serial);
	return true;
}

/* Pending cancels into rx while it has room; true when none is left. */
static bool
xpub_flush(struct zr_socket *s)
{
	struct zr__pat_pubsub *ps = &s->ps;
	bool pushed = false;

	while (ps->xpub_pending_n > 0) {
		if (!xpub_rx_push(s, ps->xpub_pending[ps->xpub_pending_head], XPUB_NOBODY))
			break;
		pushed = true;
		ps->xpub_pending_head = (ps->xpub_pending_head + 1) % ps->xpub_pending_cap;
		ps->xpub_pending_n--;
	}
	if (pushed)
		zr__sock_rx_flush(s);
	return ps->xpub_pending_n == 0;
}

/* Pending cancels wait for room: the app's next read must wake us (as a
 * paused connection's, conn.c), and room made before the flag is seen. */
static void
xpub_wait(struct zr_socket *s)
{
	atomic_store(&s->rx_paused, 1);
	atomic_thread_fence(memory_order_seq_cst);
	(void)xpub_flush(s);
}

/* Room in rx: a lost subscriber's cancels go first, as they are older than
 * any notice a paused connection offers again. */
static void
xpub_rx_room(struct zr_socket *s)
{
	if (s->ps.xpub_pending_n > 0 && !xpub_flush(s))
		xpub_wait(s);
}

static void
xpub_pend(struct zr_socket *s, zr_msg *m)
{
	struct zr__pat_pubsub *ps = &s->ps;

	if (ps->xpub_pending_n == ps->xpub_pending_cap) {
		size_t cap = ps->xpub_pending_cap ? ps->xpub_pending_cap * 2 : 16;
		zr_msg **v = malloc(cap * sizeof *v);

		if (v == NULL) {
			zr_msg_free(m); /* out of memory: the one way a notice is lost */
			return;
		}
		for (size_t i = 0; i < ps->xpub_pending_n; i++)
			v[i] = ps->xpub_pending[(ps->xpub_pending_head + i) % ps->xpub_pending_cap];
		free(ps->xpub_pending);
		ps->xpub_pending = v;
		ps->xpub_pending_cap = cap;
		ps->xpub_pending_head = 0;
	}
	ps->xpub_pending[(ps->xpub_pending_head + ps->xpub_pending_n) % ps->xpub_pending_cap] = m;
	ps->xpub_pending_n++;
}

/* Tells the app; 1, 0 when rx (or an older pending cancel) leaves no room,
 * -ENOMEM. */
static int
xpub_tell(struct zr_socket *s, const struct zr__conn *c, bool subscribe, const uint8_t *topic,
          size_t len)
{
	zr_msg *m;

	if (s->ps.xpub_pending_n > 0 && !xpub_flush(s))
		return 0;
	m = xpub_notice(subscribe, topic, len, NULL);
	if (m == NULL)
		return -ENOMEM;
	if (!xpub_rx_push(s, m, (uintptr_t)c->xpub_serial)) {
		zr_msg_free(m);
		return 0;
	}
	return 1;
}

/* c's subscriptions leave with it: the cancels the app must hear. */
static void
xpub_lost(struct zr_socket *s, struct zr__conn *c)
{
	for (const struct zr__subs_hold *h = c->subs.held; h != NULL; h = zr__subs_next(h)) {
		zr_msg *m;

		if (!zr__subs_sole(h) && s->opt.xpub_verbose < 2)
			continue;
		m = xpub_notice(false, NULL, zr__subs_topic(h, NULL), h);
		if (m == NULL)
			continue; /* out of memory */
		if (s->ps.xpub_pending_n > 0 || !xpub_rx_push(s, m, XPUB_NOBODY))
			xpub_pend(s, m);
	}
	zr__sock_rx_flush(s);
	if (s->ps.xpub_pending_n > 0)
		xpub_wait(s);
}

/* ---- PUB, XPUB: the subscribers' subscriptions -------------------------- */

/* The limit c went over, in words, for its DISCONNECTED event. */
static void
pub_subs_over(struct zr_socket *s, struct zr__conn *c)
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

/* zr__sock_subscription for PUB (xpub false) and XPUB. */
static inline int
pub_subscription_of(struct zr_socket *s, struct zr__conn *c, bool subscribe, const uint8_t *topic,
                    size_t len, bool xpub)
{
	const struct zr__options *o = &s->opt;
	struct zr__subs *t = &s->ps.subs;
	int rc, told;

	/* XPUB_MANUAL: the app hears every one and applies what it will
	 * (xpub_subscribe); 0 pauses c to offer it again, as below. */
	if (xpub && o->xpub_manual)
		return xpub_tell(s, c, subscribe, topic, len);
	if (!subscribe) {
		/* The message the route waits with may no longer need c. */
		zr__sock_tx_retry(s, c);
		rc = zr__subs_peek_remove(t, &c->subs, topic, len);
		if (rc == 0)
			return 1; /* not held: nothing to undo, nothing to tell */
		if (xpub && ((rc & ZR__SUBS_GONE_TRIE) || o->xpub_verbose == 2)) {
			told = xpub_tell(s, c, false, topic, len);
			if (told <= 0)
				return told;
		}
		(void)zr__subs_remove(t, &c->subs, topic, len);
		return 1;
	}
	rc = zr__subs_add(t, &c->subs, topic, len,
	                  o->subs_max >= 0 ? (size_t)o->subs_max : SIZE_MAX,
	                  o->subs_maxbytes >= 0 && (uint64_t)o->subs_maxbytes < SIZE_MAX
	                          ? (size_t)o->subs_maxbytes
	                          : SIZE_MAX);
	if (rc == -EDQUOT)
		pub_subs_over(s, c);
	if (rc < 0)
		return rc;
	if (xpub && ((rc & ZR__SUBS_NEW_TRIE) || o->xpub_verbose >= 1)) {
		told = xpub_tell(s, c, true, topic, len);
		if (told <= 0) {
			/* Undone, to be offered again with room (or c closes). */
			(void)zr__subs_remove(t, &c->subs, topic, len);
			return told;
		}
	}
	return 1;
}

static int
pub_subscription(struct zr_socket *s, struct zr__conn *c, bool subscribe, const uint8_t *topic,
                 size_t len)
{
	return pub_subscription_of(s, c, subscribe, topic, len, false);
}

static int
xpub_subscription(struct zr_socket *s, struct zr__conn *c, bool subscribe, const uint8_t *topic,
                  size_t len)
{
	return pub_subscription_of(s, c, subscribe, topic, len, true);
}

/* ZMTP 3.0 subscriptions arrive as messages: 0x01/0x00 + topic. Anything
 * else a subscriber sends is dropped. */
static inline int
pub_deliver_of(struct zr_socket *s, struct zr__conn *c, zr_msg *m, bool xpub)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);
	int rc = 1;

	if (m->nframes == 1 && len >= 1 && (f0[0] == 0 || f0[0] == 1))
		rc = pub_subscription_of(s, c, f0[0] == 1, f0 + 1, len - 1, xpub);
	if (rc != 0)
		zr_msg_free(m);
	return rc;
}

static int
pub_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	return pub_deliver_of(s, c, m, false);
}

static int
xpub_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	return pub_deliver_of(s, c, m, true);
}

/* XPUB_WELCOME_MSG: the first message a new subscriber gets (forced: never
 * over a limit). */
static int
xpub_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	size_t n = s->opt.xpub_welcome_msg_len;
	zr_msg *m;

	c->xpub_serial = ++s->ps.xpub_serial_next;
	if (s->type == ZR_XPUB && s->opt.xpub_manual && s->ps.xpub_who == NULL) {
		struct zr__spsc *q = malloc(sizeof *q);

		if (q == NULL || zr__spsc_init(q, 2 * zr__spsc_cap(&s->rx)) < 0) {
			free(q);
			return -ENOMEM; /* this peer is refused; the next one tries again */
		}
		s->ps.xpub_who = q;
	}
	if (n == 0 || zr_msg_new(&m) < 0)
		return 0;
	if (zr_msg_add(m, s->opt.xpub_welcome_msg, n) < 0 || !zr__conn_send(c, m, true))
		zr_msg_free(m);
	return 0;
}

/* App thread: the origin of the notice just received (XPUB_MANUAL). */
static int
xpub_recv_finish(struct zr_socket *s, zr_msg *m)
{
	(void)m;
	if (s->ps.xpub_who != NULL) {
		void *who = zr__spsc_pop(s->ps.xpub_who);

		s->ps.xpub_last = who != NULL ? (uint64_t)(uintptr_t)who : 0;
	}
	return 1;
}

/* io thread, XPUB_MANUAL: the app's SUBSCRIBE / UNSUBSCRIBE, applied to the
 * connection named in front of the topic (zr__sock_xpub_confirm). */
static void
xpub_subscribe(struct zr_socket *s, bool subscribe, const uint8_t *data, size_t len)
{
	const struct zr__options *o = &s->opt;
	uint64_t serial;

	if (!ZR_INVARIANT(len >= sizeof serial))
		return;
	memcpy(&serial, data, sizeof serial);
	data += sizeof serial;
	len -= sizeof serial;
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c->xpub_serial != serial || c->state != ZR__CONN_ACTIVE)
			continue;
		if (!subscribe) {
			zr__sock_tx_retry(s, c); /* as in pub_subscription */
			(void)zr__subs_remove(&s->ps.subs, &c->subs, data, len);
		} else if (zr__subs_add(&s->ps.subs, &c->subs, data, len,
		                        o->subs_max >= 0 ? (size_t)o->subs_max : SIZE_MAX,
		                        o->subs_maxbytes >= 0 &&
		                                        (uint64_t)o->subs_maxbytes < SIZE_MAX
		                                ? (size_t)o->subs_maxbytes
		                                : SIZE_MAX) == -EDQUOT) {
			pub_subs_over(s, c);
			zr__conn_kick_out(c); /* as a peer over the limit on its own */
		}
		return;
	}
}

/* A reconnected subscriber subscribes afresh. */
static void
pub_conn_lost(struct zr_socket *s, struct zr__conn *c)
{
	zr__subs_drop(&s->ps.subs, &c->subs);
}

static void
xpub_conn_lost(struct zr_socket *s, struct zr__conn *c)
{
	xpub_lost(s, c);
	zr__subs_drop(&s->ps.subs, &c->subs);
}

/* The trie's index hashes topics a peer chose: a key it cannot guess. */
static int
pubsub_init(struct zr_socket *s)
{
	uint8_t key[16];

	randombytes_buf(key, sizeof key);
	zr__subs_seed(&s->ps.subs, key);
	return 0;
}

static void
pubsub_fini(struct zr_socket *s)
{
	struct zr__pat_pubsub *ps = &s->ps;

	for (; ps->xpub_pending_n > 0; ps->xpub_pending_n--) {
		zr_msg_free(ps->xpub_pending[ps->xpub_pending_head]);
		ps->xpub_pending_head = (ps->xpub_pending_head + 1) % ps->xpub_pending_cap;
	}
	free(ps->xpub_pending);
	if (ps->xpub_who != NULL) {
		zr__spsc_fini(ps->xpub_who);
		free(ps->xpub_who);
	}
	zr__subs_drop(&ps->subs, &ps->self);
	zr__subs_fini(&ps->subs);
}

/* ---- the types ---------------------------------------------------------- */

const struct zr__sock_ops zr__pat_pub = {
	.can_send = true,
	.tx_burst = true,
	.route = pub_route,
	.deliver = pub_deliver,
	.peer_subscription = pub_subscription,
	.conn_active = xpub_conn_active, /* the welcome message */
	.conn_lost = pub_conn_lost,
	.init = pubsub_init,
	.fini = pubsub_fini,
};

const struct zr__sock_ops zr__pat_xpub = {
	.can_send = true,
	.can_recv = true,
	.tx_burst = true,
	.route = pub_route,
	.deliver = xpub_deliver,
	.app_subscribes = true, /* XPUB_MANUAL's confirmations (options.c) */
	.recv_finish = xpub_recv_finish,
	.subscribe = xpub_subscribe,
	.peer_subscription = xpub_subscription,
	.conn_active = xpub_conn_active,
	.conn_lost = xpub_conn_lost,
	.rx_room = xpub_rx_room,
	.init = pubsub_init,
	.fini = pubsub_fini,
};

const struct zr__sock_ops zr__pat_sub = {
	.can_recv = true,
	.app_subscribes = true,
	.route = zr__pat_route_drop,
	.deliver = sub_deliver,
	.rx_accept = sub_accept,
	.subscribe = sub_subscribe,
	.conn_active = sub_conn_active,
	.init = pubsub_init,
	.fini = pubsub_fini,
};

const struct zr__sock_ops zr__pat_xsub = {
	.can_send = true,
	.can_recv = true,
	.app_subscribes = true,
	.route = xsub_route,
	.subscribe = sub_subscribe,
	.conn_active = sub_conn_active,
	.init = pubsub_init,
	.fini = pubsub_fini,
};
