/*
 * Fuzz harness: command bodies and metadata. zr_zmtp_cmd_parse for each
 * mechanism, zr_zmtp_props_validate / _find / _next, and the encoders that
 * must reproduce what was parsed (zr_zmtp_cmd_encode, zr_zmtp_prop_encode),
 * plus zr_socktype_parse / _name / _compatible on the values found.
 *
 * Input layout:
 *   byte 0  bits 0-1 the mechanism (0 NULL, 1 PLAIN, 2 CURVE, 3 an unknown
 *           value); bits 2-7 and byte 1 pick a socket type pair to check
 *   rest    one command body (name length, name, data); the same bytes are
 *           also validated as a bare metadata block
 *
 * Each parse works on a heap copy of exactly the body's length. An
 * independent reading of RFC 23/24/37 judges the name and the metadata;
 * successful parses are checked field by field against the octets.
 */
#include <errno.h>

#include <zring/zmtp.h>

#include "fuzz_common.h"

/* ------------------------------------------------------------------------ */
/* Reference metadata rules (RFC 23 "Connection Metadata"). */

static bool
ref_name_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '+';
}

static uint8_t
ref_lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c;
}

static bool
ref_name_eq(const uint8_t *a, size_t alen, const char *b)
{
	size_t i;

	if (strlen(b) != alen)
		return false;
	for (i = 0; i < alen; i++) {
		if (ref_lower(a[i]) != ref_lower((uint8_t)b[i]))
			return false;
	}
	return true;
}

#define REF_OK 1u
#define REF_NAME 2u
#define REF_TRUNC 4u
#define REF_VALUE 8u

/* The set of verdicts RFC 23 allows for a block (more than one when two rules
 * are broken by the same property and the order is the codec's choice). */
static unsigned
ref_props(const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t nlen = p[off], i;
		unsigned bad = 0;
		uint64_t vlen;

		if (nlen == 0)
			return REF_NAME | (len - off - 1 < 4 ? REF_TRUNC : 0);
		if (nlen > len - off - 1) {
			bad = REF_TRUNC;
			for (i = off + 1; i < len; i++)
				if (!ref_name_char(p[i]))
					bad |= REF_NAME;
			return bad;
		}
		for (i = 0; i < nlen; i++)
			if (!ref_name_char(p[off + 1 + i]))
				bad |= REF_NAME;
		if (len - off - 1 - nlen < 4)
			return bad | REF_TRUNC;
		if (bad)
			return bad;
		vlen = fz_get32(p + off + 1 + nlen);
		if (vlen > 0x7fffffffu ||
		    (ref_name_eq(p + off + 1, nlen, "Identity") && vlen > 255))
			bad |= REF_VALUE;
		if (vlen > len - off - 1 - nlen - 4)
			bad |= REF_TRUNC;
		if (bad)
			return bad;
		off += 1 + nlen + 4 + (size_t)vlen;
	}
	return REF_OK;
}

static unsigned
props_code_bit(int rc)
{
	switch (rc) {
	case 0:
		return REF_OK;
	case -ZR_EPROPNAME:
		return REF_NAME;
	case -ZR_EPROPTRUNC:
		return REF_TRUNC;
	case -ZR_EPROPVALUE:
		return REF_VALUE;
	default:
		return 0;
	}
}

/* Iterates a validated block, re-encodes it property by property (it must come
 * out byte-identical) and checks props_find against a reference search. */
static uint64_t
check_props_block(const uint8_t *p, size_t len)
{
	struct zr_zmtp_prop_iter it = {p, p + len};
	const uint8_t *name, *value;
	size_t name_len, value_len, off = 0, count = 0;
	uint8_t *re = fz_alloc(len);
	uint64_t sum = 0;
	int rc;

	while ((rc = zr_zmtp_props_next(&it, &name, &name_len, &value, &value_len)) == 1) {
		char cname[256];
		const uint8_t *fv, *rv = NULL;
		size_t fl = 0, rl = 0;
		struct zr_zmtp_prop_iter it2 = {p, p + len};
		const uint8_t *n2, *v2;
		size_t nl2, vl2;
		int n;

		FZ_CHECK(++count <= len);
		FZ_CHECK(name == p + off + 1 && name_len == p[off] && name_len >= 1);
		FZ_CHECK(fz_within(value, value_len, p, len));
		FZ_CHECK(value == name + name_len + 4 && value_len == fz_get32(name + name_len));
		sum += fz_touch(name, name_len) + fz_touch(value, value_len);

		memcpy(cname, name, name_len);
		cname[name_len] = '\0';
		n = zr_zmtp_prop_encode(re + off, len - off, cname, value, value_len);
		FZ_CHECK(n > 0 && (size_t)n == 1 + name_len + 4 + value_len);
		/* Not enough room is refused, never overrun. */
		FZ_CHECK(zr_zmtp_prop_encode(re + off, (size_t)n - 1, cname, value, value_len) ==
		         -ENOBUFS);
		off += (size_t)n;

		/* props_find: the first property of that name, any case. */
		while (zr_zmtp_props_next(&it2, &n2, &nl2, &v2, &vl2) == 1) {
			if (ref_name_eq(n2, nl2, cname)) {
				rv = v2;
				rl = vl2;
				break;
			}
		}
		FZ_CHECK(rv != NULL);
		FZ_CHECK(zr_zmtp_props_find(p, len, cname, &fv, &fl) == 0);
		FZ_CHECK(fv == rv && fl == rl);
		if ((cname[0] >= 'a' && cname[0] <= 'z') || (cname[0] >= 'A' && cname[0] <= 'Z'))
			cname[0] = (char)(cname[0] ^ 0x20); /* the other case */
		FZ_CHECK(zr_zmtp_props_find(p, len, cname, &fv, &fl) == 0 && fv == rv);
	}
	FZ_CHECK(rc == 0);
	FZ_CHECK(off == len);
	FZ_CHECK(len == 0 || memcmp(re, p, len) == 0);
	free(re);
	FZ_CHECK(zr_zmtp_props_find(p, len, "No-Such-Property-Zz", &value, &value_len) == -ENOENT ||
	         ref_props(p, len) == REF_OK);
	return sum;
}

/* ------------------------------------------------------------------------ */

static const char *const socktype_names[ZR_SOCKTYPE_COUNT] = {
	"PAIR",  "PUB",  "SUB",    "REQ",     "REP",    "DEALER", "ROUTER",
	"PULL",  "PUSH", "XPUB",   "XSUB",    "STREAM", "SERVER", "CLIENT",
	"RADIO", "DISH", "GATHER", "SCATTER", "DGRAM",  "PEER",   "CHANNEL",
};

static void
check_socktype_value(const uint8_t *v, size_t len)
{
	int t = zr_socktype_parse(v, len), i, want = -ZR_ESOCKTYPE;

	for (i = 0; i < ZR_SOCKTYPE_COUNT; i++) {
		if (strlen(socktype_names[i]) == len && memcmp(socktype_names[i], v, len) == 0)
			want = i;
	}
	FZ_CHECK(t == want);
	if (t >= 0)
		FZ_CHECK(strcmp(zr_socktype_name(t), socktype_names[t]) == 0);
}

static void
check_socktype_pair(int a, int b)
{
	FZ_CHECK(zr_socktype_compatible(a, b) == zr_socktype_compatible(b, a));
	if (a >= 0 && a < ZR_SOCKTYPE_COUNT)
		FZ_CHECK(zr_socktype_name(a) != NULL);
	else
		FZ_CHECK(zr_socktype_name(a) == NULL);
}

/* ------------------------------------------------------------------------ */

static bool
name_is(const struct zr_zmtp_cmd *c, const char *n)
{
	return c->name_len == strlen(n) && memcmp(c->name, n, c->name_len) == 0;
}

/* zr_zmtp_cmd_encode of what was parsed gives back the very body. */
static void
check_cmd_reencode(const struct zr_zmtp_cmd *c, const uint8_t *body, size_t len)
{
	char name[256];
	size_t cap = len + ZR_ZMTP_HEADER_MAX;
	uint8_t *out = fz_alloc(cap);
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	size_t consumed = 0;
	int n;

	memcpy(name, c->name, c->name_len);
	name[c->name_len] = '\0';
	n = zr_zmtp_cmd_encode(out, cap, name, c->data, c->data_len);
	FZ_CHECK(n == (len <= 255 ? 2 : 9) + (int)len);
	FZ_CHECK(zr_zmtp_cmd_encode(out, (size_t)n - 1, name, c->data, c->data_len) == -ENOBUFS);
	zr_zmtp_dec_init(&d, ZR_ZMTP_DEFAULT_MAX_MSG_SIZE, UINT32_MAX);
	FZ_CHECK(zr_zmtp_dec_feed(&d, out, (size_t)n, &consumed, &f) == ZR_OK);
	FZ_CHECK(consumed == (size_t)n && (f.flags & ZR_ZMTP_COMMAND) && f.len == len);
	FZ_CHECK(memcmp(f.data, body, len) == 0);
	free(out);
}

static uint64_t
check_cmd(const uint8_t *body, size_t len, int mech)
{
	struct zr_zmtp_cmd c;
	bool name_ok = len >= 1 && body[0] >= 1 && body[0] <= len - 1;
	uint64_t sum = 0;
	size_t i;
	int rc;

	for (i = 0; name_ok && i < body[0]; i++) {
		uint8_t ch = body[1 + i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')))
			name_ok = false;
	}
	memset(&c, 0xa5, sizeof c);
	rc = zr_zmtp_cmd_parse(body, len, mech, &c);
	FZ_CHECK(rc == 0 || rc == -ZR_ECMDNAME || rc == -ZR_EERRORCMD || rc == -ZR_EPING ||
	         rc == -ZR_EPONG || rc == -ZR_EPLAIN || props_code_bit(rc) != 0);
	FZ_CHECK((rc == -ZR_ECMDNAME) == !name_ok);
	if (!name_ok)
		return 0;

	if (name_is(&c, "READY") || (mech == ZR_MECH_PLAIN && name_is(&c, "INITIATE"))) {
		unsigned ref = ref_props(body + 1 + body[0], len - 1 - body[0]);

		FZ_CHECK((props_code_bit(rc) & ref) != 0);
	}
	if (rc < 0)
		return 0;

	FZ_CHECK(c.name == body + 1 && c.name_len == body[0]);
	FZ_CHECK(c.data == body + 1 + c.name_len && c.data_len == len - 1 - c.name_len);
	sum += fz_touch(c.name, c.name_len) + fz_touch(c.data, c.data_len);
	if (c.type != ZR_CMD_UNKNOWN && c.type != ZR_CMD_HELLO && c.type != ZR_CMD_WELCOME) {
		FZ_CHECK(fz_within(c.value, c.value_len, c.data, c.data_len));
		sum += fz_touch(c.value, c.value_len);
	}

	if (name_is(&c, "READY")) {
		FZ_CHECK(c.type == ZR_CMD_READY && c.value == c.data && c.value_len == c.data_len);
	} else if (name_is(&c, "ERROR")) {
		FZ_CHECK(c.type == ZR_CMD_ERROR && c.data_len >= 1 && c.value == c.data + 1 &&
		         c.value_len == c.data[0]);
	} else if (name_is(&c, "SUBSCRIBE")) {
		FZ_CHECK(c.type == ZR_CMD_SUBSCRIBE && c.value == c.data &&
		         c.value_len == c.data_len);
	} else if (name_is(&c, "CANCEL")) {
		FZ_CHECK(c.type == ZR_CMD_CANCEL && c.value == c.data && c.value_len == c.data_len);
	} else if (name_is(&c, "PING")) {
		FZ_CHECK(c.type == ZR_CMD_PING && c.data_len >= 2);
		FZ_CHECK(c.ttl == (uint16_t)(c.data[0] << 8 | c.data[1]));
		FZ_CHECK(c.value == c.data + 2 && c.value_len == c.data_len - 2);
		FZ_CHECK(c.value_len <= ZR_ZMTP_PING_CONTEXT_MAX);
	} else if (name_is(&c, "PONG")) {
		FZ_CHECK(c.type == ZR_CMD_PONG && c.value == c.data && c.value_len == c.data_len);
		FZ_CHECK(c.value_len <= ZR_ZMTP_PING_CONTEXT_MAX);
	} else if (mech == ZR_MECH_PLAIN && name_is(&c, "HELLO")) {
		FZ_CHECK(c.type == ZR_CMD_HELLO);
		FZ_CHECK(c.data_len >= 2 && c.username == c.data + 1 &&
		         c.username_len == c.data[0]);
		FZ_CHECK(c.username_len + 2 <= c.data_len);
		FZ_CHECK(c.password == c.data + 2 + c.username_len &&
		         c.password_len == c.data[1 + c.username_len]);
		FZ_CHECK(c.data_len == 2 + c.username_len + c.password_len);
		sum += fz_touch(c.username, c.username_len) + fz_touch(c.password, c.password_len);
	} else if (mech == ZR_MECH_PLAIN && name_is(&c, "WELCOME")) {
		FZ_CHECK(c.type == ZR_CMD_WELCOME && c.data_len == 0);
	} else if (mech == ZR_MECH_PLAIN && name_is(&c, "INITIATE")) {
		FZ_CHECK(c.type == ZR_CMD_INITIATE && c.value == c.data &&
		         c.value_len == c.data_len);
	} else if (mech == ZR_MECH_NULL ||
	           !(name_is(&c, "HELLO") || name_is(&c, "WELCOME") || name_is(&c, "INITIATE"))) {
		FZ_CHECK(c.type == ZR_CMD_UNKNOWN);
	}

	if (c.type == ZR_CMD_READY || c.type == ZR_CMD_INITIATE) {
		const uint8_t *v;
		size_t vl;

		FZ_CHECK(zr_zmtp_props_validate(c.value, c.value_len) == 0);
		sum += check_props_block(c.value, c.value_len);
		if (zr_zmtp_props_find(c.value, c.value_len, "Socket-Type", &v, &vl) == 0)
			check_socktype_value(v, vl);
	}
	check_cmd_reencode(&c, body, len);
	return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int mechs[4] = {ZR_MECH_NULL, ZR_MECH_PLAIN, ZR_MECH_CURVE, 99};
	const uint8_t *body;
	uint8_t *copy;
	size_t len;
	unsigned ref;
	uint64_t sum = 0;
	int rc;

	if (size < 2)
		return 0;
	body = data + 2;
	len = size - 2;
	copy = fz_alloc(len);
	if (len > 0)
		memcpy(copy, body, len);

	check_socktype_pair((int)(data[0] >> 2) - 4, (int)data[1] % 32 - 4);
	sum += check_cmd(copy, len, mechs[data[0] & 3]);

	/* The same octets as a bare metadata block. */
	rc = zr_zmtp_props_validate(copy, len);
	ref = ref_props(copy, len);
	FZ_CHECK((props_code_bit(rc) & ref) != 0);
	if (rc == 0)
		sum += check_props_block(copy, len);
	check_socktype_value(copy, len < 16 ? len : 16);

	free(copy);
	/* Use the sum so the reads cannot be optimised away. */
	{
		volatile uint64_t sink = sum;

		(void)sink;
	}
	return 0;
}
