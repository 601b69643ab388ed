/*
 * The socket types zring implements, each with its hooks (pattern.h). A
 * socket looks its type up once, at zr_socket_open.
 */
#include "common/base.h"
#include "engine.h"

static const struct zr__sock_ops *const pat_table[] = {
	[ZR_PAIR] = &zr__pat_pair,     [ZR_PUB] = &zr__pat_pub,   [ZR_SUB] = &zr__pat_sub,
	[ZR_REQ] = &zr__pat_req,       [ZR_REP] = &zr__pat_rep,   [ZR_DEALER] = &zr__pat_dealer,
	[ZR_ROUTER] = &zr__pat_router, [ZR_PULL] = &zr__pat_pull, [ZR_PUSH] = &zr__pat_push,
	[ZR_XPUB] = &zr__pat_xpub,     [ZR_XSUB] = &zr__pat_xsub,
};

const struct zr__sock_ops *
zr__sock_ops_of(int type)
{
	if (type < 0 || (size_t)type >= ZR_ARRAY_LEN(pat_table))
		return NULL;
	return pat_table[type]; /* NULL in a gap: a type zring does not implement */
}

bool
zr__pat_route_drop(struct zr_socket *s, zr_msg *m)
{
	(void)s;
	zr__msg_unref(m);
	return true;
}

bool
zr__pat_conn_up(const struct zr__conn *c)
{
	return c->state == ZR__CONN_ACTIVE && (!c->inproc || c->twin != NULL);
}

void
zr__pat_send_conflated(struct zr__conn *c, zr_msg *m)
{
	/* Every unsent message goes: m is the one this peer gets next. */
	while (zr__conn_drop_oldest(c)) {
	}
	m->refs++;
	if (!zr__conn_send(c, m, true))
		m->refs--;
}

int
zr__pat_probe(struct zr_socket *s, struct zr__conn *c)
{
	zr_msg *m;

	if (!s->opt.probe_router || zr_msg_new(&m) < 0)
		return 0;
	/* Forced: the first message on a new connection, never over a limit. */
	if (zr_msg_add(m, "", 0) < 0 || !zr__conn_send(c, m, true))
		zr_msg_free(m);
	return 0;
}
