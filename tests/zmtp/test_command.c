/*
 * Commands (RFC 23 "Commands", "Connection Metadata"; RFC 37 PING/PONG,
 * SUBSCRIBE/CANCEL; RFC 24 PLAIN): the body parser, the metadata validator
 * and finder, the encoders and the subscription prefix. Bodies are
 * hand-written from the grammars and parsed flush against a guard page.
 */
/* Wire vectors are written as adjacent literals, one per field, the way the
 * bytes sit on the wire; the formatter would put each on a line of its own. */
/* clang-format off */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/zmtp.h>

#include "feed.h"
#include "guard.h"
#include "vectors.h"

static struct zt_guard guard;
static struct zr_zmtp_cmd cmd;

/* Parses a body (a literal) placed flush against a guard page. */
#define PARSE(lit, mech) parse_body((const uint8_t *)(lit), sizeof(lit) - 1, (mech))

static int
parse_body(const uint8_t *p, size_t n, int mech)
{
	zt_guard_fini(&guard);
	zt_guard_init(&guard, n + 1);
	memset(&cmd, ZT_JUNK, sizeof(cmd));
	return zr_zmtp_cmd_parse(zt_guard_place(&guard, p, n), n, mech, &cmd);
}

#define VALIDATE(lit) validate_block((const uint8_t *)(lit), sizeof(lit) - 1)

static int
validate_block(const uint8_t *p, size_t n)
{
	zt_guard_fini(&guard);
	zt_guard_init(&guard, n + 1);
	return zr_zmtp_props_validate(zt_guard_place(&guard, p, n), n);
}

static void
span_is(const uint8_t *p, size_t n, const char *want, size_t want_n, int line)
{
	zt_assert_bytes("span", p, n, want, want_n, line);
}
#define SPAN_IS(p, n, lit) span_is((p), (n), (lit), sizeof(lit) - 1, __LINE__)

Test(zmtp_command, parses_ready_with_socket_type_and_identity)
{
	/* 6 + (1 + 11 + 4 + 6) + (1 + 8 + 4 + 3) */
	const uint8_t *v;
	size_t vlen;

	cr_assert_eq(PARSE("\x05" "READY" PROP_ST("\x06", "DEALER") "\x08" "Identity" "\x00\x00\x00\x03" "abc",
	                   ZR_MECH_NULL),
	             0);
	cr_assert_eq(cmd.type, ZR_CMD_READY);
	SPAN_IS(cmd.name, cmd.name_len, "READY");
	cr_assert_eq(cmd.data_len, 22 + 16);
	cr_assert_eq(cmd.value, cmd.data);
	cr_assert_eq(cmd.value_len, cmd.data_len);
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Socket-Type", &v, &vlen), 0);
	SPAN_IS(v, vlen, "DEALER");
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Identity", &v, &vlen), 0);
	SPAN_IS(v, vlen, "abc");
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Resource", &v, &vlen), -ENOENT);
}

Test(zmtp_command, parses_ready_with_no_properties)
{
	cr_assert_eq(PARSE("\x05" "READY", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_READY);
	cr_assert_eq(cmd.value_len, 0);
}

Test(zmtp_command, finds_property_names_case_insensitively)
{
	const uint8_t *v;
	size_t vlen;

	cr_assert_eq(PARSE("\x05" "READY" "\x0b" "socket-type" "\x00\x00\x00\x03" "SUB"
	                   "\x0d" "X-Application" "\x00\x00\x00\x00",
	                   ZR_MECH_NULL),
	             0);
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Socket-Type", &v, &vlen), 0);
	SPAN_IS(v, vlen, "SUB");
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "SOCKET-TYPE", &v, &vlen), 0);
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "x-application", &v, &vlen), 0);
	cr_assert_eq(vlen, 0);
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Socket-Typ", &v, &vlen), -ENOENT);
	cr_assert_eq(zr_zmtp_props_find(cmd.value, cmd.value_len, "Socket-TypeX", &v, &vlen), -ENOENT);
}

Test(zmtp_command, iterates_properties_in_wire_order)
{
	static const char block[] = "\x01" "A" "\x00\x00\x00\x01" "1" "\x02" "B." "\x00\x00\x00\x00"
	                            "\x03" "c-+" "\x00\x00\x00\x02" "zz";
	struct zr_zmtp_prop_iter it;
	const uint8_t *n, *v;
	size_t nl, vl;

	cr_assert_eq(VALIDATE(block), 0);
	it.p = guard.end - (sizeof(block) - 1);
	it.end = guard.end;
	cr_assert_eq(zr_zmtp_props_next(&it, &n, &nl, &v, &vl), 1);
	SPAN_IS(n, nl, "A");
	SPAN_IS(v, vl, "1");
	cr_assert_eq(zr_zmtp_props_next(&it, &n, &nl, &v, &vl), 1);
	SPAN_IS(n, nl, "B.");
	cr_assert_eq(vl, 0);
	cr_assert_eq(zr_zmtp_props_next(&it, &n, &nl, &v, &vl), 1);
	SPAN_IS(n, nl, "c-+");
	SPAN_IS(v, vl, "zz");
	cr_assert_eq(zr_zmtp_props_next(&it, &n, &nl, &v, &vl), 0);
}

Test(zmtp_command, parses_error_with_its_reason)
{
	cr_assert_eq(PARSE("\x05" "ERROR" "\x03" "400", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_ERROR);
	SPAN_IS(cmd.value, cmd.value_len, "400");
	cr_assert_eq(PARSE("\x05" "ERROR" "\x00", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_ERROR);
	cr_assert_eq(cmd.value_len, 0);
}

Test(zmtp_command, rejects_error_whose_reason_length_overflows_the_body)
{
	cr_assert_eq(PARSE("\x05" "ERROR" "\x04" "400", ZR_MECH_NULL), -ZR_EERRORCMD);
	cr_assert_eq(PARSE("\x05" "ERROR", ZR_MECH_NULL), -ZR_EERRORCMD);
}

Test(zmtp_command, rejects_error_with_bytes_after_the_reason)
{
	cr_assert_eq(PARSE("\x05" "ERROR" "\x02" "400", ZR_MECH_NULL), -ZR_EERRORCMD);
}

Test(zmtp_command, parses_subscribe_and_cancel_topics)
{
	cr_assert_eq(PARSE("\x09" "SUBSCRIBE" "weather", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_SUBSCRIBE);
	SPAN_IS(cmd.value, cmd.value_len, "weather");
	cr_assert_eq(PARSE("\x09" "SUBSCRIBE", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_SUBSCRIBE);
	cr_assert_eq(cmd.value_len, 0, "empty topic: everything");
	cr_assert_eq(PARSE("\x06" "CANCEL" "\x00\x01\xff", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_CANCEL);
	SPAN_IS(cmd.value, cmd.value_len, "\x00\x01\xff");
}

Test(zmtp_command, parses_ping_ttl_in_network_order_and_context)
{
	cr_assert_eq(PARSE("\x04" "PING" "\x01\x2c" "ctx", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_PING);
	cr_assert_eq(cmd.ttl, 300);
	SPAN_IS(cmd.value, cmd.value_len, "ctx");
	cr_assert_eq(PARSE("\x04" "PING" "\x00\x00", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.ttl, 0);
	cr_assert_eq(cmd.value_len, 0);
	cr_assert_eq(PARSE("\x04" "PING" "\xff\xff" "0123456789abcdef", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.ttl, 65535);
	cr_assert_eq(cmd.value_len, 16);
}

Test(zmtp_command, rejects_ping_shorter_than_its_ttl)
{
	cr_assert_eq(PARSE("\x04" "PING", ZR_MECH_NULL), -ZR_EPING);
	cr_assert_eq(PARSE("\x04" "PING" "\x00", ZR_MECH_NULL), -ZR_EPING);
}

Test(zmtp_command, rejects_ping_context_over_16_octets)
{
	cr_assert_eq(PARSE("\x04" "PING" "\x00\x0a" "0123456789abcdefg", ZR_MECH_NULL), -ZR_EPING);
}

Test(zmtp_command, parses_pong_context)
{
	cr_assert_eq(PARSE("\x04" "PONG" "0123456789abcdef", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_PONG);
	SPAN_IS(cmd.value, cmd.value_len, "0123456789abcdef");
	cr_assert_eq(PARSE("\x04" "PONG", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.value_len, 0);
}

Test(zmtp_command, rejects_pong_context_over_16_octets)
{
	cr_assert_eq(PARSE("\x04" "PONG" "0123456789abcdefg", ZR_MECH_NULL), -ZR_EPONG);
}

Test(zmtp_command, parses_plain_hello_credentials)
{
	cr_assert_eq(PARSE("\x05" "HELLO" "\x05" "admin" "\x06" "secret", ZR_MECH_PLAIN), 0);
	cr_assert_eq(cmd.type, ZR_CMD_HELLO);
	SPAN_IS(cmd.username, cmd.username_len, "admin");
	SPAN_IS(cmd.password, cmd.password_len, "secret");
	cr_assert_eq(PARSE("\x05" "HELLO" "\x00" "\x00", ZR_MECH_PLAIN), 0);
	cr_assert_eq(cmd.username_len, 0);
	cr_assert_eq(cmd.password_len, 0);
}

Test(zmtp_command, rejects_plain_hello_with_bad_lengths)
{
	cr_assert_eq(PARSE("\x05" "HELLO" "\x06" "admin", ZR_MECH_PLAIN), -ZR_EPLAIN, "username past body");
	cr_assert_eq(PARSE("\x05" "HELLO" "\x05" "admin" "\x07" "secret", ZR_MECH_PLAIN), -ZR_EPLAIN,
	             "password past body");
	cr_assert_eq(PARSE("\x05" "HELLO" "\x05" "admin" "\x06" "secret" "!", ZR_MECH_PLAIN), -ZR_EPLAIN,
	             "trailing octet");
	cr_assert_eq(PARSE("\x05" "HELLO" "\x05" "admin", ZR_MECH_PLAIN), -ZR_EPLAIN, "no password length");
	cr_assert_eq(PARSE("\x05" "HELLO", ZR_MECH_PLAIN), -ZR_EPLAIN, "empty");
}

Test(zmtp_command, parses_plain_welcome_and_initiate)
{
	cr_assert_eq(PARSE("\x07" "WELCOME", ZR_MECH_PLAIN), 0);
	cr_assert_eq(cmd.type, ZR_CMD_WELCOME);
	cr_assert_eq(PARSE("\x08" "INITIATE" PROP_ST("\x04", "PUSH"), ZR_MECH_PLAIN), 0);
	cr_assert_eq(cmd.type, ZR_CMD_INITIATE);
	cr_assert_eq(cmd.value_len, 20);
}

Test(zmtp_command, rejects_plain_welcome_with_data)
{
	cr_assert_eq(PARSE("\x07" "WELCOME" "x", ZR_MECH_PLAIN), -ZR_EPLAIN);
}

Test(zmtp_command, validates_initiate_metadata)
{
	cr_assert_eq(PARSE("\x08" "INITIATE" "\x00", ZR_MECH_PLAIN), -ZR_EPROPNAME);
}

Test(zmtp_command, parses_plain_commands_as_unknown_under_null)
{
	cr_assert_eq(PARSE("\x05" "HELLO" "\x05" "admin", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_UNKNOWN);
	cr_assert_eq(PARSE("\x07" "WELCOME" "x", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_UNKNOWN);
}

Test(zmtp_command, parses_an_unknown_name_with_its_data)
{
	cr_assert_eq(PARSE("\x04" "JOIN" "group", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_UNKNOWN);
	SPAN_IS(cmd.name, cmd.name_len, "JOIN");
	SPAN_IS(cmd.data, cmd.data_len, "group");
}

Test(zmtp_command, matches_command_names_case_sensitively)
{
	cr_assert_eq(PARSE("\x05" "ready", ZR_MECH_NULL), 0);
	cr_assert_eq(cmd.type, ZR_CMD_UNKNOWN);
}

Test(zmtp_command, rejects_name_length_zero)
{
	cr_assert_eq(PARSE("\x00" "READY", ZR_MECH_NULL), -ZR_ECMDNAME);
}

Test(zmtp_command, rejects_name_length_past_the_body)
{
	cr_assert_eq(PARSE("\x06" "READY", ZR_MECH_NULL), -ZR_ECMDNAME);
	cr_assert_eq(PARSE("", ZR_MECH_NULL), -ZR_ECMDNAME);
}

Test(zmtp_command, rejects_non_alpha_name_characters)
{
	cr_assert_eq(PARSE("\x05" "READ1", ZR_MECH_NULL), -ZR_ECMDNAME);
	cr_assert_eq(PARSE("\x05" "RE-DY", ZR_MECH_NULL), -ZR_ECMDNAME);
	cr_assert_eq(PARSE("\x05" "READ" "\x00", ZR_MECH_NULL), -ZR_ECMDNAME);
}

Test(zmtp_command, validates_metadata_names_and_lengths)
{
	cr_assert_eq(VALIDATE(""), 0);
	cr_assert_eq(VALIDATE("\x00" "\x00\x00\x00\x00"), -ZR_EPROPNAME, "name length 0");
	cr_assert_eq(VALIDATE("\x04" "Na e" "\x00\x00\x00\x00"), -ZR_EPROPNAME, "space");
	cr_assert_eq(VALIDATE("\x04" "Na:e" "\x00\x00\x00\x00"), -ZR_EPROPNAME, "colon");
	cr_assert_eq(VALIDATE("\x04" "Na" "\xc3\xa9" "\x00\x00\x00\x00"), -ZR_EPROPNAME, "non-ASCII");
	cr_assert_eq(VALIDATE("\x05" "Name"), -ZR_EPROPTRUNC, "name past block");
	cr_assert_eq(VALIDATE("\x04" "Name" "\x00\x00\x00"), -ZR_EPROPTRUNC, "value length cut");
	cr_assert_eq(VALIDATE("\x04" "Name"), -ZR_EPROPTRUNC, "no value length");
	cr_assert_eq(VALIDATE("\x04" "Name" "\x00\x00\x00\x02" "a"), -ZR_EPROPTRUNC, "value past block");
	cr_assert_eq(VALIDATE("\x04" "Name" "\x00\x00\x00\x00" "\x01"), -ZR_EPROPTRUNC, "trailing octet");
	cr_assert_eq(VALIDATE("\x04" "Name" "\x80\x00\x00\x00"), -ZR_EPROPVALUE, "value length 2^31");
}

Test(zmtp_command, limits_identity_to_255_octets_in_any_case)
{
	uint8_t block[1 + 8 + 4 + 256];

	block[0] = 8;
	memcpy(block + 1, "Identity", 8);
	memcpy(block + 9, "\x00\x00\x00\xff", 4);
	memset(block + 13, 'i', 256);
	cr_assert_eq(validate_block(block, 13 + 255), 0);
	memcpy(block + 9, "\x00\x00\x01\x00", 4);
	cr_assert_eq(validate_block(block, 13 + 256), -ZR_EPROPVALUE);
	memcpy(block + 1, "IDENTITY", 8);
	cr_assert_eq(validate_block(block, 13 + 256), -ZR_EPROPVALUE);
}

/* ---------------------------------------------------------------- */
/* Encoders. */

Test(zmtp_command, encodes_a_command_frame_byte_exact)
{
	uint8_t out[64];
	static const char want[] = "\x04\x0a" "\x05" "ERROR" "\x03" "400";

	memset(out, ZT_JUNK, sizeof(out));
	cr_assert_eq(zr_zmtp_cmd_encode(out, sizeof(out), "ERROR", (const uint8_t *)"\x03" "400", 4), 12);
	zt_assert_bytes("ERROR", out, 12, want, sizeof(want) - 1, __LINE__);
}

Test(zmtp_command, encodes_ready_from_properties_byte_exact)
{
	uint8_t meta[64], out[64];
	int n, m;
	static const char want[] = READY_PUSH;

	n = zr_zmtp_prop_encode(meta, sizeof(meta), "Socket-Type", (const uint8_t *)"PUSH", 4);
	cr_assert_eq(n, 20);
	m = zr_zmtp_cmd_encode(out, sizeof(out), "READY", meta, (size_t)n);
	zt_assert_bytes("READY", out, (size_t)m, want, sizeof(want) - 1, __LINE__);
}

Test(zmtp_command, encodes_a_long_command_in_long_form)
{
	uint8_t data[300], out[320];

	memset(data, 'd', sizeof(data));
	/* body 1 + 4 + 300 = 305 = 0x131 */
	cr_assert_eq(zr_zmtp_cmd_encode(out, sizeof(out), "JOIN", data, sizeof(data)), 9 + 305);
	zt_assert_bytes("header", out, 14, "\x06" "\0\0\0\0\0\0\x01\x31" "\x04" "JOIN", 14, __LINE__);
}

Test(zmtp_command, refuses_bad_command_names_and_small_buffers)
{
	uint8_t out[16];
	char longname[257];

	memset(longname, 'A', 256);
	longname[256] = '\0';
	cr_assert_eq(zr_zmtp_cmd_encode(out, sizeof(out), "", NULL, 0), -EINVAL);
	cr_assert_eq(zr_zmtp_cmd_encode(out, sizeof(out), longname, NULL, 0), -EINVAL);
	cr_assert_eq(zr_zmtp_cmd_encode(out, 11, "ERROR", (const uint8_t *)"\x03" "400", 4), -ENOBUFS);
}

Test(zmtp_command, refuses_bad_property_names_and_small_buffers)
{
	uint8_t out[32];

	cr_assert_eq(zr_zmtp_prop_encode(out, sizeof(out), "", NULL, 0), -EINVAL);
	cr_assert_eq(zr_zmtp_prop_encode(out, sizeof(out), "A B", NULL, 0), -EINVAL);
	cr_assert_eq(zr_zmtp_prop_encode(out, 8, "Identity", NULL, 0), -ENOBUFS);
	cr_assert_eq(zr_zmtp_prop_encode(out, 13, "Identity", NULL, 0), 13);
}

/* RFC 37: SUBSCRIBE / CANCEL commands to 3.1 peers; RFC 23: 0x01 / 0x00
 * message frames to 3.0 peers. */
static void
check_prefix(uint8_t minor, bool sub, size_t topic_len, const char *want, size_t want_n, int line)
{
	uint8_t out[ZR_ZMTP_SUB_PREFIX_MAX];
	int n;

	memset(out, ZT_JUNK, sizeof(out));
	n = zr_zmtp_sub_prefix(out, minor, sub, topic_len);
	cr_assert_eq(n, (int)want_n, "line %d: prefix length %d, want %zu", line, n, want_n);
	zt_assert_bytes("subscription prefix", out, (size_t)n, want, want_n, line);
}
#define PREFIX(minor, sub, tlen, lit) check_prefix(minor, sub, tlen, lit, sizeof(lit) - 1, __LINE__)

Test(zmtp_command, gives_the_3_1_command_form_of_subscriptions_for_minor_1)
{
	PREFIX(1, true, 3, "\x04\x0d" "\x09" "SUBSCRIBE");
	PREFIX(1, false, 3, "\x04\x0a" "\x06" "CANCEL");
	PREFIX(1, true, 0, "\x04\x0a" "\x09" "SUBSCRIBE");
	PREFIX(1, true, 245, "\x04\xff" "\x09" "SUBSCRIBE");               /* body 255 */
	PREFIX(1, true, 246, "\x06" "\0\0\0\0\0\0\x01\x00" "\x09" "SUBSCRIBE"); /* body 256 */
	PREFIX(1, false, 250, "\x06" "\0\0\0\0\0\0\x01\x01" "\x06" "CANCEL");  /* body 257 */
}

Test(zmtp_command, gives_the_3_0_message_form_of_subscriptions_for_minor_0)
{
	PREFIX(0, true, 3, "\x00\x04" "\x01");
	PREFIX(0, false, 3, "\x00\x04" "\x00");
	PREFIX(0, true, 0, "\x00\x01" "\x01");
	PREFIX(0, true, 254, "\x00\xff" "\x01");                             /* body 255 */
	PREFIX(0, false, 255, "\x02" "\0\0\0\0\0\0\x01\x00" "\x00");          /* body 256 */
}
/* clang-format on */
