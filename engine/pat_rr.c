/*
 * Round robin and REQ (RFC 28, 30, 31):
 *
 *   PUSH, DEALER, REQ   round-robin over peers with room; none: the send waits
 *   PAIR                the one peer; a second one is turned away
 *   PULL                receives from all; PUSH receives nothing
 *
 * REQ is DEALER with the envelope kept on the app side: it adds the empty
 * delimiter and takes one reply, only from the peer it asked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <sodium.h>

#include "engine.h"

/* The next connection after the cursor that ok() takes, or NULL. */
static struct zr__conn *
rr_next(struct zr_socket *s, bool (*ok)(const struct zr__conn *))
{
	struct zr__conn *cur = s->rr.cursor;
	struct zr__conn *start = cur != NULL && cur->next != NULL ? cur->next : s->conns;
	struct zr__conn *c = start;

	if (c == NULL)
		return NULL;
	do {
		if (ok(c))
			return c;
		c = c->next != NULL ? c->next : s->conns;
	} while (c != start);
	return NULL;
}

/* m to the next peer with room (REQ's one request: req_route). */
static bool
rr_send(struct zr_socket *s, zr_msg *m)
{
	struct zr__conn *c;

	if (s->conflate_tx) {
		c = rr_next(s, zr__pat_conn_up); /* CONFLATE: up, full or not */
		if (c == NULL)
			return false; /* no peer up yet: it waits in the handoff */
		s->rr.cursor = c;
		zr__pat_send_conflated(c, m);
		zr__msg_unref(m);
		return true;
	}
	c = rr_next(s, zr__conn_has_room);
	if (c == NULL)
		return false;
	s->rr.cursor = c;
	/* Room was just seen: forced, not asked again (~20 instructions a
	 * message, callgrind). Refused only for want of memory to grow the
	 * queue: the message then waits in the handoff for the next pass. */
	return zr__conn_send(c, m, true);
}

/* m, and with one peer the messages behind it too, in one run: the round
 * robin would give each of them to that peer anyway. */
static bool
rr_route(struct zr_socket *s, zr_msg *m)
{
	if (!rr_send(s, m))
		return false;
	if (!s->conflate_tx && s->conns->next == NULL)
		(void)zr__conn_send_run(s->conns);
	return true;
}

static void
rr_conn_lost(struct zr_socket *s, struct zr__conn *c)
{
	if (s->rr.cursor == c)
		s->rr.cursor = NULL;
	if (s->rr.req_peer == c)
		s->rr.req_peer = NULL;
}

/* ---- PUSH, PAIR --------------------------------------------------------- */

static int
push_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	(void)s;
	(void)c;
	zr_msg_free(m);
	return 1;
}

/* RFC 31: a PAIR talks to one peer. */
static int
pair_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	(void)c;
	return s->nconns_active > 0 ? -EISCONN : 0;
}

/* ---- REQ ---------------------------------------------------------------- */

/* libzmq starts the request ids at a random value. */
static int
req_init(struct zr_socket *s)
{
	if (getrandom(&s->rr.req_id, sizeof s->rr.req_id, GRND_NONBLOCK) !=
	    (ssize_t)sizeof s->rr.req_id)
		randombytes_buf(&s->rr.req_id, sizeof s->rr.req_id);
	return 0;
}

static int
req_send_check(struct zr_socket *s)
{
	return s->rr.req_waiting && !s->opt.req_relaxed ? -EFSM : 0;
}

/*
 * The envelope: the empty delimiter and, with REQ_CORRELATE, the request id
 * before it, 4 octets of a uint32 in host order as libzmq writes it. A
 * relaxed REQ may send while a request is out: the new one supersedes it.
 */
static int
req_send_prepare(struct zr_socket *s, zr_msg *m, uint32_t *added)
{
	int rc = req_send_check(s);

	if (rc < 0)
		return rc;
	rc = zr__msg_push_front(m, "", 0);
	if (rc < 0)
		return rc;
	*added = 1;
	if (s->opt.req_correlate) {
		uint32_t id = s->rr.req_id + 1;

		rc = zr__msg_push_front(m, &id, sizeof id);
		if (rc < 0) {
			zr__msg_drop_front(m, 1); /* a refusal leaves m as it was */
			*added = 0;
			return rc;
		}
		s->rr.req_id = id;
		*added = 2;
	}
	return 0;
}

static void
req_send_done(struct zr_socket *s)
{
	s->rr.req_waiting = true;
}

static int
req_recv_check(struct zr_socket *s)
{
	return s->rr.req_waiting ? 0 : -EFSM;
}

/* Only an answer to the request we have out, behind its delimiter (and,
 * with REQ_CORRELATE, its id). */
static int
req_recv_finish(struct zr_socket *s, zr_msg *m)
{
	uint32_t head = 0;
	size_t len;

	if (!s->rr.req_waiting)
		return 0;
	if (s->opt.req_correlate) {
		const void *id = zr_msg_frame(m, 0, &len);

		if (m->nframes < 2 || len != sizeof s->rr.req_id ||
		    memcmp(id, &s->rr.req_id, sizeof s->rr.req_id) != 0)
			return 0;
		head = 1;
	}
	if (m->nframes < head + 2 || (zr_msg_frame(m, head, &len), len != 0))
		return 0;
	zr__msg_drop_front(m, head + 1);
	s->rr.req_waiting = false;
	return 1;
}

static bool
req_route(struct zr_socket *s, zr_msg *m)
{
	if (!rr_send(s, m))
		return false;
	s->rr.req_peer = s->rr.cursor;
	return true;
}

static int
req_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	if (c != s->rr.req_peer) {
		zr_msg_free(m); /* RFC 28: only from the peer we asked */
		return 1;
	}
	return ZR__PAT_RX;
}

/* ---- the types ---------------------------------------------------------- */

const struct zr__sock_ops zr__pat_push = {
	.can_send = true,
	.waits_for_peer = true,
	.route = rr_route,
	.deliver = push_deliver,
	.conn_lost = rr_conn_lost,
};

const struct zr__sock_ops zr__pat_pull = {
	.can_recv = true,
	.route = zr__pat_route_drop,
};

const struct zr__sock_ops zr__pat_dealer = {
	.can_send = true,
	.can_recv = true,
	.waits_for_peer = true,
	.route = rr_route,
	.conn_active = zr__pat_probe,
	.conn_lost = rr_conn_lost,
};

const struct zr__sock_ops zr__pat_pair = {
	.can_send = true,
	.can_recv = true,
	.waits_for_peer = true,
	.route = rr_route,
	.conn_active = pair_conn_active,
	.conn_lost = rr_conn_lost,
};

const struct zr__sock_ops zr__pat_req = {
	.can_send = true,
	.can_recv = true,
	.waits_for_peer = true,
	.send_check = req_send_check,
	.send_prepare = req_send_prepare,
	.init = req_init,
	.send_done = req_send_done,
	.recv_check = req_recv_check,
	.recv_finish = req_recv_finish,
	.route = req_route,
	.deliver = req_deliver,
	.conn_active = zr__pat_probe,
	.conn_lost = rr_conn_lost,
};
