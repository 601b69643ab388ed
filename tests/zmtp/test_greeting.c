/*
 * The 64-octet greeting (RFC 23 "Greeting", RFC 37): our encoder against
 * hand-written octets, the parser against every prefix length, every version
 * and the malformed mechanism names. Connection-level greeting behaviour
 * (mechanism mismatch, split invariance) is in test_conn.c / test_malformed.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/zmtp.h>

#include "feed.h"
#include "guard.h"
#include "vectors.h"

static void
check_encode(uint8_t minor, int mech, bool server, struct zt_bytes want, int line)
{
	uint8_t out[ZR_ZMTP_GREETING_SIZE];
	int rc;

	cr_assert_eq(want.n, 64);
	memset(out, ZT_JUNK, sizeof(out));
	rc = zr_zmtp_greeting_encode(out, minor, mech, server);
	cr_assert_eq(rc, 64, "line %d: encode returned %d", line, rc);
	zt_assert_bytes("greeting", out, sizeof(out), want.p, want.n, line);
}

Test(zmtp_greeting, encodes_null_client_for_zmtp_3_1_byte_exact)
{
	check_encode(1, ZR_MECH_NULL, false, ZT_LIT(G_NULL_31), __LINE__);
}

Test(zmtp_greeting, encodes_null_for_zmtp_3_0_byte_exact)
{
	check_encode(0, ZR_MECH_NULL, false, ZT_LIT(G_NULL_30), __LINE__);
}

Test(zmtp_greeting, encodes_plain_client_with_as_server_zero)
{
	check_encode(1, ZR_MECH_PLAIN, false, ZT_LIT(G_PLAIN_31_CLIENT), __LINE__);
}

Test(zmtp_greeting, encodes_plain_server_with_as_server_one)
{
	check_encode(1, ZR_MECH_PLAIN, true, ZT_LIT(G_PLAIN_31_SERVER), __LINE__);
}

Test(zmtp_greeting, encodes_plain_server_for_zmtp_3_0)
{
	check_encode(0, ZR_MECH_PLAIN, true, ZT_LIT(G_PLAIN_30_SERVER), __LINE__);
}

Test(zmtp_greeting, encodes_curve_mechanism_name)
{
	check_encode(1, ZR_MECH_CURVE, false, ZT_LIT(GREETING("\x03\x01", MECH_CURVE, "\x00")),
	             __LINE__);
}

Test(zmtp_greeting, refuses_to_encode_an_unknown_mechanism)
{
	uint8_t out[ZR_ZMTP_GREETING_SIZE];

	cr_assert_eq(zr_zmtp_greeting_encode(out, 1, 3, false), -EINVAL);
	cr_assert_eq(zr_zmtp_greeting_encode(out, 1, -1, false), -EINVAL);
}

/* Parses in[0..n) placed flush against a guard page. */
static int
parse_guarded(const void *in, size_t n, struct zr_zmtp_greeting *g)
{
	struct zt_guard guard;
	int rc;

	zt_guard_init(&guard, n + 1);
	if (g != NULL)
		memset(g, ZT_JUNK, sizeof(*g));
	rc = zr_zmtp_greeting_parse(zt_guard_place(&guard, in, n), n, g);
	zt_guard_fini(&guard);
	return rc;
}

Test(zmtp_greeting, parses_a_null_3_1_greeting)
{
	struct zt_bytes v = ZT_LIT(G_NULL_31);
	struct zr_zmtp_greeting g;

	cr_assert_eq(parse_guarded(v.p, v.n, &g), ZR_OK);
	cr_assert_eq(g.major, 3);
	cr_assert_eq(g.minor, 1);
	cr_assert_eq(g.mechanism, ZR_MECH_NULL);
	cr_assert_str_eq(g.mechanism_name, "NULL");
	cr_assert_eq(g.as_server, false);
}

Test(zmtp_greeting, parses_a_plain_server_greeting)
{
	struct zt_bytes v = ZT_LIT(G_PLAIN_30_SERVER);
	struct zr_zmtp_greeting g;

	cr_assert_eq(parse_guarded(v.p, v.n, &g), ZR_OK);
	cr_assert_eq(g.major, 3);
	cr_assert_eq(g.minor, 0);
	cr_assert_eq(g.mechanism, ZR_MECH_PLAIN);
	cr_assert_str_eq(g.mechanism_name, "PLAIN");
	cr_assert_eq(g.as_server, true);
}

Test(zmtp_greeting, parses_with_a_null_result_pointer)
{
	struct zt_bytes v = ZT_LIT(G_NULL_31);

	cr_assert_eq(parse_guarded(v.p, v.n, NULL), ZR_OK);
}

Test(zmtp_greeting, needs_more_for_every_prefix_of_a_valid_greeting)
{
	struct zt_bytes v = ZT_LIT(G_PLAIN_31_SERVER);

	for (size_t n = 0; n < 64; n++)
		cr_assert_eq(parse_guarded(v.p, n, NULL), ZR_NEED_MORE, "prefix of %zu octets", n);
}

Test(zmtp_greeting, reads_only_64_octets_of_a_longer_buffer)
{
	uint8_t in[70];
	struct zr_zmtp_greeting g;

	memcpy(in, G_NULL_31, 64);
	memset(in + 64, 0xff, 6); /* the peer's first frame would follow: not ours to judge */
	cr_assert_eq(parse_guarded(in, sizeof(in), &g), ZR_OK);
	cr_assert_eq(g.mechanism, ZR_MECH_NULL);
}

Test(zmtp_greeting, accepts_every_major_from_3_up_with_any_minor)
{
	static const uint8_t versions[][2] = {{3, 0}, {3, 1}, {3, 9}, {4, 0}, {255, 255}};

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		uint8_t in[64];
		struct zr_zmtp_greeting g;

		memcpy(in, G_NULL_31, 64);
		in[10] = versions[i][0];
		in[11] = versions[i][1];
		cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK, "version %u.%u", in[10], in[11]);
		cr_assert_eq(g.major, versions[i][0]);
		cr_assert_eq(g.minor, versions[i][1]);
	}
}

Test(zmtp_greeting, never_judges_the_signature_padding)
{
	/* libzmq writes its identity length + 1 as a big-endian 64-bit value. */
	struct zt_bytes libzmq = ZT_LIT("\xff"
	                                "\0\0\0\0\0\0\0\x01"
	                                "\x7f"
	                                "\x03\x01" MECH_NULL "\x00" Z31);
	struct zt_bytes noise = ZT_LIT("\xff"
	                               "\xde\xad\xbe\xef\x01\x02\x03\xff"
	                               "\x7f"
	                               "\x03\x01" MECH_NULL "\x00" Z31);

	cr_assert_eq(libzmq.n, 64);
	cr_assert_eq(noise.n, 64);
	cr_assert_eq(parse_guarded(libzmq.p, libzmq.n, NULL), ZR_OK);
	cr_assert_eq(parse_guarded(noise.p, noise.n, NULL), ZR_OK);
}

Test(zmtp_greeting, does_not_check_the_filler)
{
	uint8_t in[64];

	memcpy(in, G_NULL_31, 64);
	memset(in + 33, 0xaa, 31);
	cr_assert_eq(parse_guarded(in, 64, NULL), ZR_OK);
}

Test(zmtp_greeting, reports_as_server_without_judging_it)
{
	uint8_t in[64];
	struct zr_zmtp_greeting g;

	memcpy(in, G_PLAIN_31_CLIENT, 64);
	cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK);
	cr_assert_eq(g.as_server, false);
	in[32] = 1;
	cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK);
	cr_assert_eq(g.as_server, true);
	memcpy(in, G_NULL_31, 64);
	in[32] = 1; /* NULL with as-server 1: reported, not refused */
	cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK);
	cr_assert_eq(g.as_server, true);
}

Test(zmtp_greeting, rejects_bad_octet_0_as_soon_as_it_arrives)
{
	uint8_t in[64];

	memcpy(in, G_NULL_31, 64);
	in[0] = 0xfe;
	cr_assert_eq(parse_guarded(in, 1, NULL), -ZR_ESIGNATURE);
	cr_assert_eq(parse_guarded(in, 64, NULL), -ZR_ESIGNATURE);
}

Test(zmtp_greeting, rejects_a_zmtp_1_0_first_octet)
{
	/* ZMTP 1.0 starts with a frame: length octet 0x01, flags 0x00. */
	static const uint8_t in[] = {0x01, 0x00};

	cr_assert_eq(parse_guarded(in, 1, NULL), -ZR_ESIGNATURE);
	cr_assert_eq(parse_guarded(in, 2, NULL), -ZR_ESIGNATURE);
}

Test(zmtp_greeting, rejects_bad_octet_9_as_soon_as_it_arrives)
{
	uint8_t in[64];

	memcpy(in, G_NULL_31, 64);
	in[9] = 0x7e;
	cr_assert_eq(parse_guarded(in, 9, NULL), ZR_NEED_MORE);
	cr_assert_eq(parse_guarded(in, 10, NULL), -ZR_ESIGNATURE);
	cr_assert_eq(parse_guarded(in, 64, NULL), -ZR_ESIGNATURE);
}

Test(zmtp_greeting, rejects_a_zmtp_2_0_greeting_at_its_revision_octet)
{
	/* ZMTP 2.0: signature, revision 0x01, socket type, then frames. */
	struct zt_bytes v = ZT_LIT(SIG "\x01"
	                               "\x05"
	                               "\x00\x00");

	cr_assert_eq(parse_guarded(v.p, 10, NULL), ZR_NEED_MORE);
	cr_assert_eq(parse_guarded(v.p, 11, NULL), -ZR_EVERSION);
	cr_assert_eq(parse_guarded(v.p, v.n, NULL), -ZR_EVERSION);
}

Test(zmtp_greeting, rejects_majors_0_to_2)
{
	for (uint8_t major = 0; major < 3; major++) {
		uint8_t in[64];

		memcpy(in, G_NULL_31, 64);
		in[10] = major;
		cr_assert_eq(parse_guarded(in, 11, NULL), -ZR_EVERSION, "major %u", major);
		cr_assert_eq(parse_guarded(in, 64, NULL), -ZR_EVERSION, "major %u", major);
	}
}

static int
parse_mech(const char *mech20)
{
	uint8_t in[64];

	memcpy(in, G_NULL_31, 64);
	memcpy(in + 12, mech20, 20);
	return parse_guarded(in, 64, NULL);
}

Test(zmtp_greeting, rejects_a_lowercase_mechanism_name)
{
	cr_assert_eq(parse_mech("null" Z16), -ZR_EMECHANISM);
	cr_assert_eq(parse_mech("Plain" Z8 Z4 "\0\0\0"), -ZR_EMECHANISM);
}

Test(zmtp_greeting, rejects_junk_after_the_nul_in_the_mechanism)
{
	cr_assert_eq(parse_mech("NULL\0X" Z8 Z4 "\0\0"), -ZR_EMECHANISM);
	cr_assert_eq(parse_mech("NULL" Z8 Z4 "\0\0\0"
	                        "\x01"),
	             -ZR_EMECHANISM);
}

Test(zmtp_greeting, rejects_an_empty_mechanism)
{
	cr_assert_eq(parse_mech(Z16 Z4), -ZR_EMECHANISM);
}

Test(zmtp_greeting, rejects_characters_outside_the_mechanism_grammar)
{
	cr_assert_eq(parse_mech("NU LL" Z8 Z4 "\0\0\0"), -ZR_EMECHANISM);
	cr_assert_eq(parse_mech("NULL!" Z8 Z4 "\0\0\0"), -ZR_EMECHANISM);
	cr_assert_eq(parse_mech("\xc3\x89"
	                        "T" Z16 "\0"),
	             -ZR_EMECHANISM);
}

Test(zmtp_greeting, accepts_a_well_formed_unknown_mechanism_as_minus_one)
{
	uint8_t in[64];
	struct zr_zmtp_greeting g;

	memcpy(in, G_NULL_31, 64);
	memcpy(in + 12, "FOO" Z16 "\0", 20);
	cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK);
	cr_assert_eq(g.mechanism, -1);
	cr_assert_str_eq(g.mechanism_name, "FOO");
}

Test(zmtp_greeting, accepts_a_twenty_character_mechanism_and_its_whole_grammar)
{
	uint8_t in[64];
	struct zr_zmtp_greeting g;

	memcpy(in, G_NULL_31, 64);
	memcpy(in + 12, "AZ09-_.+GSSAPIXYZ123", 20);
	cr_assert_eq(parse_guarded(in, 64, &g), ZR_OK);
	cr_assert_eq(g.mechanism, -1);
	cr_assert_str_eq(g.mechanism_name, "AZ09-_.+GSSAPIXYZ123");
}

Test(zmtp_greeting, recognises_curve_by_name)
{
	struct zt_bytes v = ZT_LIT(GREETING("\x03\x01", MECH_CURVE, "\x00"));
	struct zr_zmtp_greeting g;

	cr_assert_eq(parse_guarded(v.p, v.n, &g), ZR_OK);
	cr_assert_eq(g.mechanism, ZR_MECH_CURVE);
}
