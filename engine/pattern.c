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
