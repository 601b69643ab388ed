/*
 * Commands (RFC 23 "Commands"): a frame with the COMMAND flag whose body is a
 * 1-octet name length, the name (ALPHA, case-sensitive as libzmq matches it),
 * and the command's data. Metadata (READY, INITIATE) is a list of properties:
 * 1-octet name length, name, 4-octet network-order value length, value.
 *
 * Decisions: command names follow the grammar's length prefix (RFC 23's prose
 * about a NUL separator and RFCs 24/25/38's "8 characters space-padded" are
 * obsolete, checklist B12); ERROR must be exactly its length octet plus the
 * reason; PING/PONG contexts over 16 octets are errors (libzmq truncates);
 * property names are matched case-insensitively on receive (RFC 23) and an
 * Identity over 255 octets is refused; PLAIN credential octets are not
 * checked for VCHAR (libzmq does not either), only their lengths.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <zring/zmtp.h>

#include "wire.h"

#define PROP_VALUE_MAX 0x7fffffffu
#define PROP_IDENTITY_MAX 255u

static bool
cmd_name_is(const struct zr_zmtp_cmd *cmd, const char *name)
{
	return strlen(name) == cmd->name_len && memcmp(cmd->name, name, cmd->name_len) == 0;
}

static int
cmd_parse_plain_hello(struct zr_zmtp_cmd *cmd)
{
	const uint8_t *p = cmd->data;
	size_t len = cmd->data_len, ulen, plen;

	if (len < 1)
		return -ZR_EPLAIN;
	ulen = p[0];
	if (len < 1 + ulen + 1)
		return -ZR_EPLAIN;
	plen = p[1 + ulen];
	if (len != 1 + ulen + 1 + plen)
		return -ZR_EPLAIN;
	cmd->username = p + 1;
	cmd->username_len = ulen;
	cmd->password = p + 2 + ulen;
	cmd->password_len = plen;
	return 0;
}

/* see zmtp.h */
int
zr_zmtp_cmd_parse(const uint8_t *body, size_t len, int mechanism, struct zr_zmtp_cmd *cmd)
{
	size_t nlen, i;
	int rc;

	memset(cmd, 0, sizeof *cmd);
	if (len < 1)
		return -ZR_ECMDNAME;
	nlen = body[0];
	if (nlen == 0 || nlen > len - 1)
		return -ZR_ECMDNAME;
	for (i = 0; i < nlen; i++) {
		if (!wire_is_alpha(body[1 + i]))
			return -ZR_ECMDNAME;
	}
	cmd->type = ZR_CMD_UNKNOWN;
	cmd->name = body + 1;
	cmd->name_len = nlen;
	cmd->data = body + 1 + nlen;
	cmd->data_len = len - 1 - nlen;

	if (cmd_name_is(cmd, "READY")) {
		cmd->type = ZR_CMD_READY;
		rc = zr_zmtp_props_validate(cmd->data, cmd->data_len);
		if (rc < 0)
			return rc;
		cmd->value = cmd->data;
		cmd->value_len = cmd->data_len;
	} else if (cmd_name_is(cmd, "ERROR")) {
		cmd->type = ZR_CMD_ERROR;
		if (cmd->data_len < 1 || (size_t)cmd->data[0] != cmd->data_len - 1)
			return -ZR_EERRORCMD;
		cmd->value = cmd->data + 1;
		cmd->value_len = cmd->data[0];
	} else if (cmd_name_is(cmd, "SUBSCRIBE") || cmd_name_is(cmd, "CANCEL")) {
		cmd->type = cmd->name_len == 9 ? ZR_CMD_SUBSCRIBE : ZR_CMD_CANCEL;
		cmd->value = cmd->data;
		cmd->value_len = cmd->data_len;
	} else if (cmd_name_is(cmd, "PING")) {
		cmd->type = ZR_CMD_PING;
		if (cmd->data_len < 2 || cmd->data_len - 2 > ZR_ZMTP_PING_CONTEXT_MAX)
			return -ZR_EPING;
		cmd->ttl = (uint16_t)(cmd->data[0] << 8 | cmd->data[1]);
		cmd->value = cmd->data + 2;
		cmd->value_len = cmd->data_len - 2;
	} else if (cmd_name_is(cmd, "PONG")) {
		cmd->type = ZR_CMD_PONG;
		if (cmd->data_len > ZR_ZMTP_PING_CONTEXT_MAX)
			return -ZR_EPONG;
		cmd->value = cmd->data;
		cmd->value_len = cmd->data_len;
	} else if (mechanism == ZR_MECH_PLAIN && cmd_name_is(cmd, "HELLO")) {
		cmd->type = ZR_CMD_HELLO;
		return cmd_parse_plain_hello(cmd);
	} else if (mechanism == ZR_MECH_PLAIN && cmd_name_is(cmd, "WELCOME")) {
		cmd->type = ZR_CMD_WELCOME;
		if (cmd->data_len != 0)
			return -ZR_EPLAIN;
	} else if (mechanism == ZR_MECH_PLAIN && cmd_name_is(cmd, "INITIATE")) {
		cmd->type = ZR_CMD_INITIATE;
		rc = zr_zmtp_props_validate(cmd->data, cmd->data_len);
		if (rc < 0)
			return rc;
		cmd->value = cmd->data;
		cmd->value_len = cmd->data_len;
	}
	return 0;
}

/* see zmtp.h */
int
zr_zmtp_cmd_encode(uint8_t *out, size_t cap, const char *name, const uint8_t *data, size_t len)
{
	size_t nlen = strlen(name), body;
	uint8_t hdr[ZR_ZMTP_HEADER_MAX];
	int hlen;

	if (nlen == 0 || nlen > 255)
		return -EINVAL;
	body = 1 + nlen + len;
	if (body < len || body > (size_t)INT_MAX - ZR_ZMTP_HEADER_MAX)
		return -ENOBUFS;
	hlen = zr_zmtp_frame_header(hdr, body, ZR_ZMTP_COMMAND);
	if (hlen < 0)
		return hlen;
	if ((size_t)hlen + body > cap)
		return -ENOBUFS;
	memcpy(out, hdr, (size_t)hlen);
	out[hlen] = (uint8_t)nlen;
	memcpy(out + hlen + 1, name, nlen);
	if (len > 0)
		memcpy(out + (size_t)hlen + 1 + nlen, data, len);
	return hlen + (int)body;
}

static bool
prop_name_ok(const uint8_t *name, size_t len)
{
	size_t i;

	if (len == 0 || len > 255)
		return false;
	for (i = 0; i < len; i++) {
		if (!wire_is_name_char(name[i]))
			return false;
	}
	return true;
}

/* see zmtp.h */
int
zr_zmtp_prop_encode(uint8_t *out, size_t cap, const char *name, const uint8_t *value,
                    size_t value_len)
{
	size_t nlen = strlen(name), total;

	if (!prop_name_ok((const uint8_t *)name, nlen) || value_len > PROP_VALUE_MAX)
		return -EINVAL;
	total = 1 + nlen + 4 + value_len;
	if (total > cap || total > (size_t)INT_MAX)
		return -ENOBUFS;
	out[0] = (uint8_t)nlen;
	memcpy(out + 1, name, nlen);
	wire_put32(out + 1 + nlen, (uint32_t)value_len);
	if (value_len > 0)
		memcpy(out + 1 + nlen + 4, value, value_len);
	return (int)total;
}

/* see zmtp.h */
int
zr_zmtp_props_validate(const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t nlen = p[off];
		const uint8_t *name = p + off + 1;
		uint32_t vlen;

		if (nlen == 0)
			return -ZR_EPROPNAME;
		if (nlen > len - off - 1)
			return -ZR_EPROPTRUNC;
		if (!prop_name_ok(name, nlen))
			return -ZR_EPROPNAME;
		off += 1 + nlen;
		if (len - off < 4)
			return -ZR_EPROPTRUNC;
		vlen = wire_get32(p + off);
		off += 4;
		if (vlen > PROP_VALUE_MAX)
			return -ZR_EPROPVALUE;
		if (wire_name_eq(name, nlen, "Identity") && vlen > PROP_IDENTITY_MAX)
			return -ZR_EPROPVALUE;
		if (vlen > len - off)
			return -ZR_EPROPTRUNC;
		off += vlen;
	}
	return 0;
}

/* see zmtp.h */
int
zr_zmtp_props_next(struct zr_zmtp_prop_iter *it, const uint8_t **name, size_t *name_len,
                   const uint8_t **value, size_t *value_len)
{
	size_t nlen;
	uint32_t vlen;

	if (it->p >= it->end)
		return 0;
	nlen = it->p[0];
	*name = it->p + 1;
	*name_len = nlen;
	vlen = wire_get32(it->p + 1 + nlen);
	*value = it->p + 1 + nlen + 4;
	*value_len = vlen;
	it->p += 1 + nlen + 4 + vlen;
	return 1;
}

/* see zmtp.h */
int
zr_zmtp_props_find(const uint8_t *p, size_t len, const char *name, const uint8_t **value,
                   size_t *value_len)
{
	struct zr_zmtp_prop_iter it = {p, p + len};
	const uint8_t *n, *v;
	size_t nl, vl;

	while (zr_zmtp_props_next(&it, &n, &nl, &v, &vl) == 1) {
		if (wire_name_eq(n, nl, name)) {
			*value = v;
			*value_len = vl;
			return 0;
		}
	}
	return -ENOENT;
}

/* see zmtp.h */
int
zr_zmtp_sub_prefix(uint8_t out[ZR_ZMTP_SUB_PREFIX_MAX], uint8_t peer_minor, bool subscribe,
                   size_t topic_len)
{
	const char *name = subscribe ? "SUBSCRIBE" : "CANCEL";
	size_t nlen = strlen(name);
	int hlen;

	if (peer_minor >= 1) {
		hlen = zr_zmtp_frame_header(out, 1 + nlen + (uint64_t)topic_len, ZR_ZMTP_COMMAND);
		if (hlen < 0)
			return hlen;
		out[hlen] = (uint8_t)nlen;
		memcpy(out + hlen + 1, name, nlen);
		return hlen + 1 + (int)nlen;
	}
	hlen = zr_zmtp_frame_header(out, 1 + (uint64_t)topic_len, 0);
	if (hlen < 0)
		return hlen;
	out[hlen] = subscribe ? 1 : 0;
	return hlen + 1;
}
