/*
 * Socket type names (RFC 23 "Connection Metadata") and the table of which
 * types may talk to which (RFC 23, and RFC 41/48/49/51/52 for the draft
 * thread-safe types libzmq also speaks).
 */
#include <string.h>

#include <zring/zmtp.h>

static const char *const socktype_names[ZR_SOCKTYPE_COUNT] = {
	[ZR_PAIR] = "PAIR",     [ZR_PUB] = "PUB",       [ZR_SUB] = "SUB",
	[ZR_REQ] = "REQ",       [ZR_REP] = "REP",       [ZR_DEALER] = "DEALER",
	[ZR_ROUTER] = "ROUTER", [ZR_PULL] = "PULL",     [ZR_PUSH] = "PUSH",
	[ZR_XPUB] = "XPUB",     [ZR_XSUB] = "XSUB",     [ZR_STREAM] = "STREAM",
	[ZR_SERVER] = "SERVER", [ZR_CLIENT] = "CLIENT", [ZR_RADIO] = "RADIO",
	[ZR_DISH] = "DISH",     [ZR_GATHER] = "GATHER", [ZR_SCATTER] = "SCATTER",
	[ZR_DGRAM] = "DGRAM",   [ZR_PEER] = "PEER",     [ZR_CHANNEL] = "CHANNEL",
};

#define SOCKTYPE_BIT(t) (1u << (t))

/* For each type, the set of peer types it accepts. STREAM and DGRAM never
 * take part in a ZMTP handshake, so they accept nothing. */
static const unsigned socktype_peers[ZR_SOCKTYPE_COUNT] = {
	[ZR_PAIR] = SOCKTYPE_BIT(ZR_PAIR),
	[ZR_PUB] = SOCKTYPE_BIT(ZR_SUB) | SOCKTYPE_BIT(ZR_XSUB),
	[ZR_SUB] = SOCKTYPE_BIT(ZR_PUB) | SOCKTYPE_BIT(ZR_XPUB),
	[ZR_REQ] = SOCKTYPE_BIT(ZR_REP) | SOCKTYPE_BIT(ZR_ROUTER),
	[ZR_REP] = SOCKTYPE_BIT(ZR_REQ) | SOCKTYPE_BIT(ZR_DEALER),
	[ZR_DEALER] = SOCKTYPE_BIT(ZR_REP) | SOCKTYPE_BIT(ZR_DEALER) | SOCKTYPE_BIT(ZR_ROUTER),
	[ZR_ROUTER] = SOCKTYPE_BIT(ZR_REQ) | SOCKTYPE_BIT(ZR_DEALER) | SOCKTYPE_BIT(ZR_ROUTER),
	[ZR_PULL] = SOCKTYPE_BIT(ZR_PUSH),
	[ZR_PUSH] = SOCKTYPE_BIT(ZR_PULL),
	[ZR_XPUB] = SOCKTYPE_BIT(ZR_SUB) | SOCKTYPE_BIT(ZR_XSUB),
	[ZR_XSUB] = SOCKTYPE_BIT(ZR_PUB) | SOCKTYPE_BIT(ZR_XPUB),
	[ZR_STREAM] = 0,
	[ZR_SERVER] = SOCKTYPE_BIT(ZR_CLIENT),
	[ZR_CLIENT] = SOCKTYPE_BIT(ZR_SERVER),
	[ZR_RADIO] = SOCKTYPE_BIT(ZR_DISH),
	[ZR_DISH] = SOCKTYPE_BIT(ZR_RADIO),
	[ZR_GATHER] = SOCKTYPE_BIT(ZR_SCATTER),
	[ZR_SCATTER] = SOCKTYPE_BIT(ZR_GATHER),
	[ZR_DGRAM] = 0,
	[ZR_PEER] = SOCKTYPE_BIT(ZR_PEER),
	[ZR_CHANNEL] = SOCKTYPE_BIT(ZR_CHANNEL),
};

/* see zmtp.h */
const char *
zr_socktype_name(int type)
{
	if (type < 0 || type >= ZR_SOCKTYPE_COUNT)
		return NULL;
	return socktype_names[type];
}

/* see zmtp.h */
int
zr_socktype_parse(const uint8_t *s, size_t len)
{
	int t;

	for (t = 0; t < ZR_SOCKTYPE_COUNT; t++) {
		if (strlen(socktype_names[t]) == len && memcmp(socktype_names[t], s, len) == 0)
			return t;
	}
	return -ZR_ESOCKTYPE;
}

/* see zmtp.h */
bool
zr_socktype_compatible(int ours, int peer)
{
	if (ours < 0 || ours >= ZR_SOCKTYPE_COUNT || peer < 0 || peer >= ZR_SOCKTYPE_COUNT)
		return false;
	return (socktype_peers[ours] & SOCKTYPE_BIT(peer)) != 0;
}
