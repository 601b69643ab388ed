/*
 * ZAP (RFC 27): the context's requester to a handler bound at
 * inproc://zeromq.zap.01 (engine/README.md, "ZAP").
 *
 * The requester is a socket of the context's own, never listed with the
 * app's sockets and never seen by an app thread: a DEALER to the wire (a
 * REP or ROUTER handler takes it), with its own hooks: it routes nothing
 * (requests go straight into its one pipe with zr__conn_send) and its
 * deliver hook takes the replies. The pipe is an ordinary inproc pair
 * (inproc.c), dialled when a request finds none, so requests and replies
 * move by pointer on the io thread, bounded as any inproc pipe is (the
 * handler's RCVHWM, then the requester's SNDHWM), and a connection waiting
 * for its answer parks its codec (ZR_ZMTP_AUTH_PENDING) while the io thread
 * goes on with everything else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base.h"
#include "engine.h"
#include "zap.h"

struct zr__zap {
	struct zr_socket *sock;   /* the requester */
	struct zr__conn *conn;    /* its pipe to the handler; NULL: none now */
	struct zr__conn *pending; /* connections waiting for a reply (zap_next) */
	size_t npending;
	uint32_t next_id;
};

static int zap_deliver(struct zr_socket *s, struct zr__conn *c, zr_msg *m);
static void zap_conn_lost(struct zr_socket *s, struct zr__conn *c);

static bool
zap_route(struct zr_socket *s, zr_msg *m)
{
	(void)s;
	zr_msg_free(m); /* nothing is ever queued for it: no app sends */
	return true;
}

static const struct zr__sock_ops zap_ops = {
	.can_send = true,
	.can_recv = true,
	.route = zap_route,
	.deliver = zap_deliver,
	.conn_lost = zap_conn_lost,
};

static struct zr__zap *
zap_of(struct zr_ctx *ctx)
{
	struct zr__zap *z = ctx->zap;
	struct zr_socket *s;

	if (z != NULL)
		return z;
	z = calloc(1, sizeof *z);
	s = aligned_alloc(_Alignof(struct zr_socket), sizeof *s);
	if (z == NULL || s == NULL) {
		free(z);
		free(s);
		return NULL;
	}
	memset(s, 0, sizeof *s);
	s->ctx = ctx;
	s->ops = &zap_ops;
	s->type = ZR_DEALER;
	/* The pipe's bounds (zr__conn_has_room reads these); the spares ring
	 * exists because inproc.c hands spares across a pipe. */
	s->opt.sndhwm = 1000;
	s->opt.rcvhwm = 1000;
	s->opt.linger_ms = 0;
	s->efd_rx = -1;
	s->efd_tx = -1;
	zr__monitor_init(&s->mon);
	if (zr__spsc_init(&s->tx_spare, 16) < 0 || zr__spsc_init(&s->rx_spare, 16) < 0) {
		zr__spsc_fini(&s->tx_spare);
		free(s);
		free(z);
		return NULL;
	}
	z->sock = s;
	ctx->zap = z;
	return z;
}

/* The pipe to the handler, dialled if there is none. */
static struct zr__conn *
zap_pipe(struct zr__zap *z)
{
	struct zr__conn *c = z->conn;

	if (c != NULL && c->state == ZR__CONN_ACTIVE && c->twin != NULL)
		return c;
	/* A pipe whose handler went closes on its own timer turn: a new
	 * handler (bound since) gets a new pipe. */
	z->conn = zr__inproc_dial(z->sock, ZR__ZAP_NAME);
	return z->conn;
}

/* The client's address as libzmq's ZAP requests carry it: the IP alone
 * ("127.0.0.1", "::1"), empty for other transports. */
static size_t
zap_address(const char *peer, char *out, size_t cap)
{
	const char *p, *end;
	size_t n;

	out[0] = '\0';
	if (strncmp(peer, "tcp://", 6) != 0 && strncmp(peer, "tls://", 6) != 0)
		return 0;
	p = peer + 6;
	if (*p == '[') {
		p++;
		end = strchr(p, ']');
	} else {
		end = strrchr(p, ':');
	}
	n = end != NULL ? (size_t)(end - p) : strlen(p);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

static void
zap_unlink(struct zr__zap *z, struct zr__conn *c)
{
	for (struct zr__conn **p = &z->pending; *p != NULL; p = &(*p)->zap_next) {
		if (*p == c) {
			*p = c->zap_next;
			c->zap_next = NULL;
			c->zap_id = 0;
			c->zap_pipe = NULL;
			z->npending--;
			return;
		}
	}
}

int
zr__zap_ask(struct zr__conn *c, const struct zr_zmtp_auth_req *req)
{
	static const char *const mech[] = {"NULL", "PLAIN", "CURVE"};
	const struct zr__options *o = &c->sock->opt;
	struct zr__zap *z = zap_of(c->sock->ctx);
	struct zr__conn *pipe = z != NULL ? zap_pipe(z) : NULL;
	char id[16], addr[ZR__ENDPOINT_TEXT_MAX];
	zr_msg *m = NULL;
	int rc;

	if (pipe == NULL) {
		if (z == NULL)
			return 500; /* no memory for the requester */
		/* libzmq: no handler accepts every client (its "Stonehouse"
		 * mode), unless ZAP_ENFORCE_DOMAIN requires one. */
		return o->zap_enforce_domain ? 500 : 200;
	}
	if (z->npending >= ZR__ZAP_PENDING_MAX)
		return 300;
	if (req->mechanism < ZR_MECH_NULL || req->mechanism > ZR_MECH_CURVE)
		return 500;
	if (++z->next_id == 0)
		z->next_id = 1;
	snprintf(id, sizeof id, "%" PRIu32, z->next_id);
	zap_address(c->peer_addr, addr, sizeof addr);
	rc = zr_msg_new(&m);
	/* delimiter, version, request id, domain, address, identity, mechanism */
	if (rc == 0)
		rc = zr_msg_add(m, NULL, 0);
	if (rc == 0)
		rc = zr_msg_add(m, "1.0", 3);
	if (rc == 0)
		rc = zr_msg_add(m, id, strlen(id));
	if (rc == 0)
		rc = zr_msg_add(m, o->zap_domain, o->zap_domain_len);
	if (rc == 0)
		rc = zr_msg_add(m, addr, strlen(addr));
	if (rc == 0)
		rc = zr_msg_add(m, o->routing_id, o->routing_id_len);
	if (rc == 0)
		rc = zr_msg_add(m, mech[req->mechanism], strlen(mech[req->mechanism]));
	/* credentials: PLAIN's two, CURVE's key, none for NULL */
	if (rc == 0 && req->mechanism == ZR_MECH_PLAIN) {
		rc = zr_msg_add(m, req->username, req->username_len);
		if (rc == 0)
			rc = zr_msg_add(m, req->password, req->password_len);
	}
	if (rc == 0 && req->mechanism == ZR_MECH_CURVE)
		rc = zr_msg_add(m, req->client_key, ZR_CURVE_KEY_LEN);
	if (rc < 0) {
		zr_msg_free(m);
		return 500;
	}
	if (!zr__conn_send(pipe, m, false)) {
		zr_msg_free(m);
		return 300; /* the handler is that far behind: try again later */
	}
	c->zap_id = z->next_id;
	c->zap_pipe = pipe;
	c->zap_next = z->pending;
	z->pending = c;
	z->npending++;
	return ZR_ZMTP_AUTH_PENDING;
}

void
zr__zap_cancel(struct zr__conn *c)
{
	struct zr__zap *z = c->sock->ctx->zap;

	if (c->zap_id != 0 && z != NULL)
		zap_unlink(z, c);
	free(c->zap_props);
	c->zap_props = NULL;
	c->zap_props_len = 0;
	c->zap_resume = false;
}

/* Frame i of m (the reply), bounds checked by the caller. */
static const uint8_t *
zap_frame(const zr_msg *m, size_t i, size_t *len)
{
	return zr_msg_frame(m, i, len);
}

/* Copies a frame as a C string (cut at cap - 1). */
static void
zap_text(const uint8_t *p, size_t n, char *out, size_t cap)
{
	if (n >= cap)
		n = cap - 1;
	if (n > 0)
		memcpy(out, p, n);
	out[n] = '\0';
}

/*
 * A reply: delimiter, "1.0", request id, status code, status text, user id,
 * metadata. A reply for no waiting connection (it closed, timed out) is
 * dropped; a malformed one for a waiting connection fails its handshake as
 * a protocol error, as libzmq does.
 */
static int
zap_deliver(struct zr_socket *s, struct zr__conn *pipe, zr_msg *m)
{
	struct zr__zap *z = s->ctx->zap;
	const uint8_t *f[7];
	size_t n[7], nf = zr_msg_frames(m);
	char idtext[16], user[ZR_ZMTP_USER_ID_MAX + 1], text[ZR_ZMTP_AUTH_TEXT_MAX + 1];
	unsigned long id;
	struct zr__conn *c;
	int status = 0;
	bool ok;

	if (z == NULL || nf < 3) {
		zr_msg_free(m);
		return 1;
	}
	for (size_t i = 0; i < 7; i++) {
		n[i] = 0;
		f[i] = i < nf ? zap_frame(m, i, &n[i]) : NULL;
	}
	zap_text(f[2], n[2], idtext, sizeof idtext);
	id = strtoul(idtext, NULL, 10);
	for (c = z->pending; c != NULL && (c->zap_id != id || c->zap_pipe != pipe); c = c->zap_next)
		;
	if (c == NULL || id == 0) {
		zr_msg_free(m); /* a late reply: its connection went */
		return 1;
	}
	zap_unlink(z, c);
	ok = nf == 7 && n[0] == 0 && n[1] == 3 && memcmp(f[1], "1.0", 3) == 0 && n[3] == 3 &&
	     f[3][1] == '0' && f[3][2] == '0' &&
	     (f[3][0] == '2' || f[3][0] == '3' || f[3][0] == '4' || f[3][0] == '5') &&
	     (n[6] == 0 || zr_zmtp_props_validate(f[6], n[6]) == 0);
	if (!ok) {
		zr_zmtp_abort(&c->z, -EPROTO, "malformed ZAP reply");
	} else {
		status = (f[3][0] - '0') * 100;
		zap_text(f[4], n[4], text, sizeof text);
		zap_text(f[5], n[5], user, sizeof user);
		free(c->zap_props);
		c->zap_props = NULL;
		c->zap_props_len = 0;
		if (status == 200 && n[6] > 0) {
			c->zap_props = malloc(n[6]);
			if (c->zap_props != NULL) {
				memcpy(c->zap_props, f[6], n[6]);
				c->zap_props_len = n[6];
			}
		}
		zr_zmtp_auth_reply(&c->z, status, user, text);
	}
	zr_msg_free(m);
	zr__conn_auth_done(c);
	return 1;
}

/* The handler went (its socket closed): those whose requests went to it
 * are told with a 500, as a handler that answers nothing more is an
 * internal error. Requests on a newer pipe (a handler bound since) wait on. */
static void
zap_conn_lost(struct zr_socket *s, struct zr__conn *pipe)
{
	struct zr__zap *z = s->ctx->zap;

	if (z == NULL)
		return;
	if (z->conn == pipe)
		z->conn = NULL;
	for (struct zr__conn *c = z->pending, *next; c != NULL; c = next) {
		next = c->zap_next;
		if (c->zap_pipe != pipe)
			continue;
		zap_unlink(z, c);
		zr_zmtp_auth_reply(&c->z, 500, NULL, "ZAP handler went away");
		zr__conn_auth_done(c);
	}
}

void
zr__zap_ctx_fini(struct zr_ctx *ctx)
{
	struct zr__zap *z = ctx->zap;
	struct zr_socket *s;
	zr_msg *m;

	if (z == NULL)
		return;
	s = z->sock;
	while (s->conns != NULL) {
		struct zr__conn *c = s->conns;

		zr__conn_close(c);
		if (s->conns == c) { /* not freed (cannot happen: no fd, no op) */
			(void)ZR_INVARIANT(!"an inproc pipe frees at once");
			break;
		}
	}
	while ((m = zr__spsc_pop(&s->tx_spare)) != NULL)
		zr_msg_free(m);
	while ((m = zr__spsc_pop(&s->rx_spare)) != NULL)
		zr_msg_free(m);
	zr__spsc_fini(&s->tx_spare);
	zr__spsc_fini(&s->rx_spare);
	zr__monitor_fini(&s->mon);
	free(s);
	free(z);
	ctx->zap = NULL;
}
