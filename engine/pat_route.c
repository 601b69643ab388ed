/*
 * Routing by id (RFC 28, 37):
 *
 *   ROUTER, REP   frame 0 names the peer; unknown or full: dropped
 *
 * Every incoming message gets its sender's routing id in front: the id the
 * peer gave in its handshake, or one made here. REP is ROUTER with the
 * envelope kept on the app side: it keeps the envelope of the request it
 * answers and puts it back in front of the reply.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sodium.h>

#include "engine.h"

/* ---- the routing-id table ----------------------------------------------- */

/* The active connection with routing id rid, other than except. */
static struct zr__conn *
route_find(struct zr_socket *s, const void *rid, size_t len, const struct zr__conn *except)
{
	for (struct zr__conn *c = s->conns; c != NULL; c = c->next) {
		if (c != except && c->state == ZR__CONN_ACTIVE && c->rid_len == len &&
		    memcmp(c->rid, rid, len) == 0)
			return c;
	}
	return NULL;
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
route_rid_generate(struct zr_socket *s, struct zr__conn *c)
{
	do {
		if (getrandom(c->rid + 1, 4, GRND_NONBLOCK) != 4)
			randombytes_buf(c->rid + 1, 4); /* early boot: sodium waits for entropy */
		c->rid[0] = 0;
		c->rid_len = 5;
	} while (route_find(s, c->rid, c->rid_len, c) != NULL);
}

/* io thread: publish or withdraw a ROUTER peer's id for ROUTER_MANDATORY. */
static void
route_rid_publish(struct zr_socket *s, const struct zr__conn *c, bool add)
{
	struct zr__pat_route *r = &s->route;

	pthread_mutex_lock(&r->rid_lock);
	if (add) {
		if (r->nrids == r->rids_cap) {
			size_t cap = r->rids_cap ? r->rids_cap * 2 : 16;
			struct zr__rid *v = realloc(r->rids, cap * sizeof *v);

			if (v != NULL) {
				r->rids = v;
				r->rids_cap = cap;
			}
		}
		if (r->nrids < r->rids_cap) {
			r->rids[r->nrids].len = (uint8_t)c->rid_len;
			memcpy(r->rids[r->nrids].id, c->rid, c->rid_len);
			r->nrids++;
		}
	} else {
		for (size_t i = 0; i < r->nrids; i++) {
			if (r->rids[i].len == c->rid_len &&
			    memcmp(r->rids[i].id, c->rid, c->rid_len) == 0) {
				r->rids[i] = r->rids[--r->nrids];
				break;
			}
		}
	}
	pthread_mutex_unlock(&r->rid_lock);
}

/* ROUTER_MANDATORY: is frame 0 the routing id of a connected peer? */
static bool
route_rid_known(struct zr_socket *s, const zr_msg *m)
{
	struct zr__pat_route *r = &s->route;
	size_t len;
	const uint8_t *id = zr_msg_frame(m, 0, &len);
	bool found = false;

	pthread_mutex_lock(&r->rid_lock);
	for (size_t i = 0; i < r->nrids && !found; i++)
		found = r->rids[i].len == len && memcmp(r->rids[i].id, id, len) == 0;
	pthread_mutex_unlock(&r->rid_lock);
	return found;
}

/* ---- ROUTER and REP ----------------------------------------------------- */

static bool
route_route(struct zr_socket *s, zr_msg *m)
{
	size_t len;
	const uint8_t *f0 = zr_msg_frame(m, 0, &len);
	struct zr__conn *c = route_find(s, f0, len, NULL);

	if (c == NULL || !zr__conn_has_room(c)) {
		zr__msg_unref(m); /* unknown or full peer: dropped (RFC 28) */
		return true;
	}
	zr__msg_drop_front(m, 1);
	if (!zr__conn_send(c, m, true))
		zr__msg_unref(m); /* no memory to queue it: dropped as if full */
	return true;
}

/* The app sees who sent it: the routing id first. */
static int
route_rx_begin(struct zr_socket *s, struct zr__conn *c, zr_msg *m)
{
	(void)s;
	return zr_msg_add(m, c->rid, c->rid_len);
}

/* The peer's Identity if it gave a usable one, else 0x00 + uint32 as
 * libzmq generates (RFC 37 reserves the 0x00 prefix for this). */
static int
rep_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	if (c->rid_len == 0 || route_find(s, c->rid, c->rid_len, c) != NULL)
		route_rid_generate(s, c);
	return 0;
}

static int
router_conn_active(struct zr_socket *s, struct zr__conn *c)
{
	(void)rep_conn_active(s, c);
	route_rid_publish(s, c, true);
	return zr__pat_probe(s, c);
}

static void
router_conn_lost(struct zr_socket *s, struct zr__conn *c)
{
	route_rid_publish(s, c, false);
}

static int
router_send_prepare(struct zr_socket *s, zr_msg *m, uint32_t *added)
{
	(void)added;
	if (s->opt.router_mandatory && !route_rid_known(s, m))
		return -EHOSTUNREACH;
	return 0;
}

static int
router_init(struct zr_socket *s)
{
	return -pthread_mutex_init(&s->route.rid_lock, NULL);
}

static void
router_fini(struct zr_socket *s)
{
	pthread_mutex_destroy(&s->route.rid_lock);
	free(s->route.rids);
}

/* ---- REP's envelope ----------------------------------------------------- */

static int
rep_send_check(struct zr_socket *s)
{
	return s->route.rep_has_request ? 0 : -EFSM;
}

static int
rep_send_prepare(struct zr_socket *s, zr_msg *m, uint32_t *added)
{
	zr_msg *env = s->route.rep_envelope;

	if (!s->route.rep_has_request)
		return -EFSM;
	for (size_t i = env->nframes; i-- > 0;) {
		size_t len;
		const void *f = zr_msg_frame(env, i, &len);
		int rc = zr__msg_push_front(m, f, len);

		if (rc < 0) {
			zr__msg_drop_front(m, *added);
			*added = 0;
			return rc;
		}
		(*added)++;
	}
	return 0;
}

static void
rep_send_done(struct zr_socket *s)
{
	s->route.rep_has_request = false;
	zr_msg_free(s->route.rep_envelope);
	s->route.rep_envelope = NULL;
}

static int
rep_recv_check(struct zr_socket *s)
{
	return s->route.rep_has_request ? -EFSM : 0;
}

/* Keeps the envelope (the ids up to the empty delimiter) for the reply. */
static int
rep_recv_finish(struct zr_socket *s, zr_msg *m)
{
	uint32_t delim = 1;
	size_t len;
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
	s->route.rep_envelope = env;
	s->route.rep_has_request = true;
	return 1;
}

static void
rep_fini(struct zr_socket *s)
{
	zr_msg_free(s->route.rep_envelope);
}

/* ---- the types ---------------------------------------------------------- */

const struct zr__sock_ops zr__pat_router = {
	.can_send = true,
	.can_recv = true,
	.tx_burst = true,
	.send_prepare = router_send_prepare,
	.route = route_route,
	.rx_begin = route_rx_begin,
	.conn_active = router_conn_active,
	.conn_lost = router_conn_lost,
	.init = router_init,
	.fini = router_fini,
};

const struct zr__sock_ops zr__pat_rep = {
	.can_send = true,
	.can_recv = true,
	.send_check = rep_send_check,
	.send_prepare = rep_send_prepare,
	.send_done = rep_send_done,
	.recv_check = rep_recv_check,
	.recv_finish = rep_recv_finish,
	.route = route_route,
	.rx_begin = route_rx_begin,
	.conn_active = rep_conn_active,
	.fini = rep_fini,
};
