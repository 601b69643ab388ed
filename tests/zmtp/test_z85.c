/*
 * Z85 (RFC 32): the RFC's test vector both ways, every octet value through a
 * round trip, the alphabet's edges, and every way a text can be refused:
 * a character outside the alphabet (each of the 171), a group whose value
 * passes 2^32 - 1, a length that is not whole groups, a buffer too small.
 * Agreement with libzmq and pyzmq is in tests/interop/test_keys_pyzmq.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <zring/zmtp.h>

#include "guard.h"

#define Z85_ALPHABET \
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

/* RFC 32, "Test Case": these 8 octets are "HelloWorld". */
static const uint8_t hello_octets[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};

Test(zmtp_z85, encodes_the_rfc_32_test_vector_as_HelloWorld)
{
	char out[11];

	memset(out, ZT_JUNK, sizeof(out));
	cr_assert_eq(zr_z85_encode(out, sizeof(out), hello_octets, 8), 10);
	cr_assert_str_eq(out, "HelloWorld");
}

Test(zmtp_z85, decodes_HelloWorld_to_the_rfc_32_test_vector)
{
	uint8_t out[8];

	memset(out, ZT_JUNK, sizeof(out));
	cr_assert_eq(zr_z85_decode(out, sizeof(out), "HelloWorld", 10), 8);
	cr_assert_arr_eq(out, hello_octets, 8);
}

Test(zmtp_z85, round_trips_every_octet_value_in_every_position_of_a_group)
{
	/* 256 octets, value i at index i: each value lands once in each of
	 * the 4 positions across 4 rotations. */
	for (int rot = 0; rot < 4; rot++) {
		uint8_t data[256], back[256];
		char text[321];

		for (int i = 0; i < 256; i++)
			data[i] = (uint8_t)(i + rot);
		cr_assert_eq(zr_z85_encode(text, sizeof(text), data, sizeof(data)), 320);
		cr_assert_eq(strlen(text), 320);
		cr_assert_eq(strspn(text, Z85_ALPHABET), 320);
		cr_assert_eq(zr_z85_decode(back, sizeof(back), text, 320), 256);
		cr_assert_arr_eq(back, data, sizeof(data));
	}
}

Test(zmtp_z85, encodes_zero_and_the_largest_group_at_the_alphabet_edges)
{
	static const uint8_t zero[4] = {0, 0, 0, 0};
	static const uint8_t ones[4] = {0xFF, 0xFF, 0xFF, 0xFF};
	char out[6];
	uint8_t back[4];

	cr_assert_eq(zr_z85_encode(out, sizeof(out), zero, 4), 5);
	cr_assert_str_eq(out, "00000");
	/* 2^32 - 1 = 82*85^4 + 84*85^3 + 18*85^2 + 38*85 + 0 */
	cr_assert_eq(zr_z85_encode(out, sizeof(out), ones, 4), 5);
	cr_assert_str_eq(out, "%nSc0");
	cr_assert_eq(zr_z85_decode(back, sizeof(back), "%nSc0", 5), 4);
	cr_assert_arr_eq(back, ones, 4);
}

Test(zmtp_z85, maps_each_digit_value_to_its_alphabet_character)
{
	/* Value d in the last position of a group is the character d. */
	for (uint32_t d = 0; d < 85; d++) {
		uint8_t data[4] = {0, 0, 0, (uint8_t)d}, back[4];
		char out[6];
		char want[6] = {'0', '0', '0', '0', Z85_ALPHABET[d], '\0'};

		cr_assert_eq(zr_z85_encode(out, sizeof(out), data, 4), 5);
		cr_assert_str_eq(out, want, "digit %u", d);
		cr_assert_eq(zr_z85_decode(back, sizeof(back), want, 5), 4);
		cr_assert_arr_eq(back, data, 4);
	}
}

Test(zmtp_z85, encodes_and_decodes_the_empty_text)
{
	char out[1] = {'x'};
	uint8_t back[1] = {0x5c};

	cr_assert_eq(zr_z85_encode(out, sizeof(out), NULL, 0), 0);
	cr_assert_eq(out[0], '\0');
	cr_assert_eq(zr_z85_decode(back, sizeof(back), "", 0), 0);
	cr_assert_eq(zr_z85_decode(NULL, 0, NULL, 0), 0);
	cr_assert_eq(back[0], 0x5c);
}

Test(zmtp_z85, refuses_every_character_outside_the_alphabet_in_every_position)
{
	int refused = 0;

	for (int c = 0; c < 256; c++) {
		if (c != 0 && strchr(Z85_ALPHABET, c) != NULL)
			continue;
		for (int pos = 0; pos < 10; pos++) {
			char text[10];
			uint8_t out[8];

			memcpy(text, "HelloWorld", 10);
			text[pos] = (char)c;
			memset(out, ZT_JUNK, sizeof(out));
			cr_assert_eq(zr_z85_decode(out, sizeof(out), text, 10), -EINVAL,
			             "character 0x%02x at %d", c, pos);
			for (size_t i = 0; i < sizeof(out); i++)
				cr_assert_eq(out[i], ZT_JUNK, "a refused text wrote octet %zu", i);
		}
		refused++;
	}
	cr_assert_eq(refused, 256 - 85);
}

Test(zmtp_z85, refuses_a_group_whose_value_passes_32_bits)
{
	static const char *const over[] = {
		"%nSc1", /* 2^32: the smallest value too large */
		"%nSd0", "%nT00", "%o000", "$0000",
		"#0000", "%%%%%", "#####", /* 85^5 - 1, the largest a group can spell */
	};
	uint8_t out[8];

	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		cr_assert_eq(zr_z85_decode(out, 4, over[i], 5), -EINVAL, "%s", over[i]);
		/* also when it is not the first group */
		char two[11];
		memcpy(two, "00000", 5);
		memcpy(two + 5, over[i], 6);
		cr_assert_eq(zr_z85_decode(out, 8, two, 10), -EINVAL, "%s second", two);
	}
}

Test(zmtp_z85, refuses_a_text_that_is_not_whole_groups)
{
	uint8_t out[16];

	for (size_t n = 1; n < 15; n++) {
		if (n % 5 == 0)
			continue;
		cr_assert_eq(zr_z85_decode(out, sizeof(out), "HelloWorldHello", n), -EINVAL,
		             "length %zu", n);
	}
}

Test(zmtp_z85, refuses_to_encode_a_length_that_is_not_whole_groups)
{
	char out[64];

	for (size_t n = 1; n < 8; n++) {
		if (n % 4 == 0)
			continue;
		cr_assert_eq(zr_z85_encode(out, sizeof(out), hello_octets, n), -EINVAL,
		             "length %zu", n);
	}
}

Test(zmtp_z85, refuses_to_encode_into_a_buffer_without_room_for_the_nul)
{
	char out[11];

	memset(out, ZT_JUNK, sizeof(out));
	cr_assert_eq(zr_z85_encode(out, 10, hello_octets, 8), -ENOSPC);
	cr_assert_eq(zr_z85_encode(out, 0, hello_octets, 8), -ENOSPC);
	cr_assert_eq(zr_z85_encode(NULL, 0, hello_octets, 8), -ENOSPC);
	for (size_t i = 0; i < sizeof(out); i++)
		cr_assert_eq((uint8_t)out[i], ZT_JUNK);
	cr_assert_eq(zr_z85_encode(out, 0, NULL, 0), -ENOSPC, "even the empty text needs its NUL");
}

Test(zmtp_z85, refuses_to_decode_into_a_buffer_too_small)
{
	uint8_t out[8];

	memset(out, ZT_JUNK, sizeof(out));
	cr_assert_eq(zr_z85_decode(out, 7, "HelloWorld", 10), -ENOSPC);
	cr_assert_eq(zr_z85_decode(NULL, 0, "HelloWorld", 10), -ENOSPC);
	for (size_t i = 0; i < sizeof(out); i++)
		cr_assert_eq(out[i], ZT_JUNK);
}

Test(zmtp_z85, judges_the_text_before_the_buffer_size)
{
	uint8_t out[4];

	/* A bad text is -EINVAL whatever the room; only a good one can be -ENOSPC. */
	cr_assert_eq(zr_z85_decode(out, 0, "Hello%%%%%", 10), -EINVAL);
	cr_assert_eq(zr_z85_decode(out, 4, "HelloWorld", 10), -ENOSPC);
}

Test(zmtp_z85, refuses_a_length_whose_result_would_not_fit_an_int)
{
	char out[8];
	uint8_t back[8];
	size_t huge = ((size_t)INT_MAX / 5 + 1) * 4; /* text would pass INT_MAX */

	cr_assert_eq(zr_z85_encode(out, sizeof(out), hello_octets, huge), -EINVAL);
	cr_assert_eq(zr_z85_decode(back, sizeof(back), "HelloWorld", ((size_t)INT_MAX / 4 + 1) * 5),
	             -EINVAL);
}

Test(zmtp_z85, decodes_input_flush_against_an_unreadable_page)
{
	struct zt_guard g;
	const char *text;
	uint8_t out[8];

	zt_guard_init(&g, 16);
	text = (const char *)zt_guard_place(&g, "HelloWorld", 10);
	cr_assert_eq(zr_z85_decode(out, sizeof(out), text, 10), 8);
	cr_assert_arr_eq(out, hello_octets, 8);
	zt_guard_fini(&g);
}

Test(zmtp_z85, decodes_a_text_that_is_not_nul_terminated_and_stops_at_text_len)
{
	uint8_t out[4];

	/* "HelloWorld" read as 5 characters: just "Hello". */
	cr_assert_eq(zr_z85_decode(out, sizeof(out), "HelloWorld", 5), 4);
	cr_assert_arr_eq(out, hello_octets, 4);
}
