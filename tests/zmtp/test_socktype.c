/*
 * Socket types (RFC 23 "Connection Metadata"): names exactly as the RFC
 * spells them, and the table of which types may talk, written out here by
 * hand from RFC 23 and the draft type RFCs (41, 48, 49, 51, 52).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <zring/zmtp.h>

static const char *const names[ZR_SOCKTYPE_COUNT] = {
	"PAIR",  "PUB",  "SUB",    "REQ",     "REP",    "DEALER", "ROUTER",
	"PULL",  "PUSH", "XPUB",   "XSUB",    "STREAM", "SERVER", "CLIENT",
	"RADIO", "DISH", "GATHER", "SCATTER", "DGRAM",  "PEER",   "CHANNEL",
};

/* The valid pairs, each listed once (the relation is symmetric). */
static const int pairs[][2] = {
	{ZR_PAIR, ZR_PAIR},     {ZR_PUB, ZR_SUB},         {ZR_PUB, ZR_XSUB},
	{ZR_XPUB, ZR_SUB},      {ZR_XPUB, ZR_XSUB},       {ZR_REQ, ZR_REP},
	{ZR_REQ, ZR_ROUTER},    {ZR_DEALER, ZR_REP},      {ZR_DEALER, ZR_DEALER},
	{ZR_DEALER, ZR_ROUTER}, {ZR_ROUTER, ZR_ROUTER},   {ZR_PUSH, ZR_PULL},
	{ZR_CLIENT, ZR_SERVER}, {ZR_RADIO, ZR_DISH},      {ZR_SCATTER, ZR_GATHER},
	{ZR_PEER, ZR_PEER},     {ZR_CHANNEL, ZR_CHANNEL},
};

static bool
listed(int a, int b)
{
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if ((pairs[i][0] == a && pairs[i][1] == b) ||
		    (pairs[i][0] == b && pairs[i][1] == a))
			return true;
	return false;
}

Test(zmtp_socktype, names_every_type_as_rfc_23_spells_it)
{
	for (int t = 0; t < ZR_SOCKTYPE_COUNT; t++) {
		cr_assert_not_null(zr_socktype_name(t), "type %d", t);
		cr_assert_str_eq(zr_socktype_name(t), names[t], "type %d", t);
	}
}

Test(zmtp_socktype, names_nothing_outside_the_range)
{
	cr_assert_null(zr_socktype_name(-1));
	cr_assert_null(zr_socktype_name(ZR_SOCKTYPE_COUNT));
	cr_assert_null(zr_socktype_name(1000));
}

Test(zmtp_socktype, parses_every_name_back_to_its_type)
{
	for (int t = 0; t < ZR_SOCKTYPE_COUNT; t++)
		cr_assert_eq(zr_socktype_parse((const uint8_t *)names[t], strlen(names[t])), t,
		             "%s", names[t]);
}

Test(zmtp_socktype, refuses_lowercase_and_mixed_case_values)
{
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"push", 4), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"Push", 4), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"dealer", 6), -ZR_ESOCKTYPE);
}

Test(zmtp_socktype, refuses_unknown_prefixed_and_extended_values)
{
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"", 0), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"PUS", 3), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"PUSHX", 5), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"PUSH\0", 5), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"XREQ", 4), -ZR_ESOCKTYPE);
	cr_assert_eq(zr_socktype_parse((const uint8_t *)" PUB", 4), -ZR_ESOCKTYPE);
}

Test(zmtp_socktype, reads_only_the_given_length)
{
	/* "SUBX" with length 3 is SUB. */
	cr_assert_eq(zr_socktype_parse((const uint8_t *)"SUBX", 3), ZR_SUB);
}

Test(zmtp_socktype, allows_exactly_the_rfc_pairs_in_both_directions)
{
	int allowed = 0;

	for (int a = 0; a < ZR_SOCKTYPE_COUNT; a++)
		for (int b = 0; b < ZR_SOCKTYPE_COUNT; b++) {
			bool want = listed(a, b);

			cr_assert_eq(zr_socktype_compatible(a, b), want, "%s with %s: want %s",
			             names[a], names[b], want ? "compatible" : "incompatible");
			allowed += want;
		}
	/* 17 pairs, 5 of them with themselves: 2 * 12 + 5 ordered pairs. */
	cr_assert_eq(allowed, 29);
}

Test(zmtp_socktype, never_pairs_stream_or_dgram)
{
	for (int t = 0; t < ZR_SOCKTYPE_COUNT; t++) {
		cr_assert_not(zr_socktype_compatible(ZR_STREAM, t));
		cr_assert_not(zr_socktype_compatible(t, ZR_DGRAM));
	}
}

Test(zmtp_socktype, treats_out_of_range_types_as_incompatible)
{
	cr_assert_not(zr_socktype_compatible(-1, ZR_PAIR));
	cr_assert_not(zr_socktype_compatible(ZR_PAIR, ZR_SOCKTYPE_COUNT));
	cr_assert_not(zr_socktype_compatible(ZR_SOCKTYPE_COUNT, ZR_SOCKTYPE_COUNT));
}
