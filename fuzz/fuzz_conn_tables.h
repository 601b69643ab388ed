/*
 * Configuration tables shared by the connection harnesses: identities,
 * application properties and PLAIN credentials the codec is configured with
 * (borrowed by zr_zmtp_config, so they are static constants), chosen by input
 * bits.
 */
#ifndef ZR_FUZZ_FUZZ_CONN_TABLES_H
#define ZR_FUZZ_FUZZ_CONN_TABLES_H

#include <zring/zmtp.h>

#define CT_LONG_A                                                                                  \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaa"                                                                                     \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaa"                                                                                     \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* 255 octets. */
static const uint8_t ct_long[] = CT_LONG_A;

struct ct_identity {
	const uint8_t *p;
	size_t len;
};

static const uint8_t ct_zero_id[5] = {0, 0, 0, 0, 42};

static const struct ct_identity ct_identities[4] = {
	{NULL, 0},
	{(const uint8_t *)"A", 1},
	{ct_zero_id, sizeof ct_zero_id},
	{ct_long, 255},
};

static const struct zr_zmtp_prop ct_props_one[1] = {
	{"X-Fuzz", (const uint8_t *)"v", 1},
};
static const struct zr_zmtp_prop ct_props_two[2] = {
	{"X-Empty", NULL, 0},
	{"x.app_name+1", ct_long, 200},
};
static const struct zr_zmtp_prop ct_props_big[1] = {
	{"X-Big", ct_long, 255},
};

struct ct_props {
	const struct zr_zmtp_prop *p;
	size_t n;
};

static const struct ct_props ct_prop_sets[4] = {
	{NULL, 0},
	{ct_props_one, 1},
	{ct_props_two, 2},
	{ct_props_big, 1},
};

struct ct_creds {
	const uint8_t *user;
	size_t user_len;
	const uint8_t *pass;
	size_t pass_len;
};

static const struct ct_creds ct_cred_sets[4] = {
	{(const uint8_t *)"admin", 5, (const uint8_t *)"secret", 6},
	{NULL, 0, NULL, 0},
	{ct_long, 255, ct_long, 255},
	{(const uint8_t *)"u", 1, NULL, 0},
};

/* Socket types a handshake can carry (not STREAM, not DGRAM). */
static const int ct_socktypes[19] = {
	ZR_PAIR, ZR_PUB,    ZR_SUB,     ZR_REQ,  ZR_REP,     ZR_DEALER, ZR_ROUTER,
	ZR_PULL, ZR_PUSH,   ZR_XPUB,    ZR_XSUB, ZR_SERVER,  ZR_CLIENT, ZR_RADIO,
	ZR_DISH, ZR_GATHER, ZR_SCATTER, ZR_PEER, ZR_CHANNEL,
};

#endif /* ZR_FUZZ_FUZZ_CONN_TABLES_H */
