/*
 * CURVE keys in Z85 (RFC 26, RFC 32): our key helpers against libsodium
 * itself and against a key pair published with libzmq (its CURVE test
 * suite's server pair). Agreement with live libzmq / pyzmq is in
 * tests/interop/test_keys_pyzmq.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include <zring/zmtp.h>

#include "guard.h"

/* libzmq's test_security_curve server key pair. */
#define LIBZMQ_SERVER_PUBLIC "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
#define LIBZMQ_SERVER_SECRET "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"

static void
init_sodium(void)
{
	cr_assert_geq(sodium_init(), 0);
}

TestSuite(zmtp_keys, .init = init_sodium);

Test(zmtp_keys, derives_the_public_key_libzmq_publishes_for_its_test_secret)
{
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];

	memset(pub, ZT_JUNK, sizeof(pub));
	cr_assert_eq(zr_curve_public(pub, LIBZMQ_SERVER_SECRET), 0);
	cr_assert_str_eq(pub, LIBZMQ_SERVER_PUBLIC);
}

Test(zmtp_keys, makes_a_key_pair_whose_public_key_is_libsodiums_for_its_secret)
{
	char pub[ZR_CURVE_KEY_Z85_LEN + 1], sec[ZR_CURVE_KEY_Z85_LEN + 1];
	uint8_t pk[32], sk[32], want[32];

	cr_assert_eq(zr_curve_keypair(pub, sec), 0);
	cr_assert_eq(strlen(pub), 40);
	cr_assert_eq(strlen(sec), 40);
	cr_assert_eq(zr_curve_key_decode(pk, pub), 0);
	cr_assert_eq(zr_curve_key_decode(sk, sec), 0);
	cr_assert_eq(crypto_scalarmult_base(want, sk), 0);
	cr_assert_arr_eq(pk, want, 32);
}

Test(zmtp_keys, makes_a_different_key_pair_each_call)
{
	char pub[2][41], sec[2][41];

	cr_assert_eq(zr_curve_keypair(pub[0], sec[0]), 0);
	cr_assert_eq(zr_curve_keypair(pub[1], sec[1]), 0);
	cr_assert_str_neq(pub[0], pub[1]);
	cr_assert_str_neq(sec[0], sec[1]);
	cr_assert_str_neq(pub[0], sec[0]);
}

Test(zmtp_keys, derives_the_same_public_key_as_libsodium_for_many_secrets)
{
	for (int i = 0; i < 200; i++) {
		uint8_t sk[32], pk[32], want[32];
		char sec[41], pub[41];

		/* Deterministic, and covering both ends of every octet. */
		for (int j = 0; j < 32; j++)
			sk[j] = (uint8_t)(i * 37 + j * 101 + (i == 1 ? 255 : 0));
		if (i == 0)
			memset(sk, 0xFF, sizeof(sk));
		cr_assert_eq(zr_curve_key_encode(sec, sk), 0);
		cr_assert_eq(zr_curve_public(pub, sec), 0);
		cr_assert_eq(zr_curve_key_decode(pk, pub), 0);
		cr_assert_eq(crypto_scalarmult_base(want, sk), 0);
		cr_assert_arr_eq(pk, want, 32, "secret %d", i);
	}
}

Test(zmtp_keys, encodes_and_decodes_a_key_as_40_characters)
{
	uint8_t key[32], back[32];
	char z85[41];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(i * 8 + 7);
	memset(z85, ZT_JUNK, sizeof(z85));
	cr_assert_eq(zr_curve_key_encode(z85, key), 0);
	cr_assert_eq(z85[40], '\0');
	cr_assert_eq(strlen(z85), 40);
	cr_assert_eq(zr_curve_key_decode(back, z85), 0);
	cr_assert_arr_eq(back, key, 32);
}

Test(zmtp_keys, refuses_a_key_text_that_is_not_exactly_40_characters)
{
	static const char *const bad[] = {
		"",
		"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh",       /* 39 */
		"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh60",     /* 41 */
		"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6JTKVS", /* 45: whole groups, still not a key */
		"HelloWorld",
	};
	uint8_t key[32];
	char pub[41];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(key, ZT_JUNK, sizeof(key));
		cr_assert_eq(zr_curve_key_decode(key, bad[i]), -EINVAL, "'%s'", bad[i]);
		for (size_t j = 0; j < sizeof(key); j++)
			cr_assert_eq(key[j], ZT_JUNK);
		cr_assert_eq(zr_curve_public(pub, bad[i]), -EINVAL, "'%s'", bad[i]);
	}
}

Test(zmtp_keys, refuses_a_key_text_with_a_character_outside_z85)
{
	uint8_t key[32];
	char pub[41];

	for (int pos = 0; pos < 40; pos++) {
		static const char outside[] = {' ', '"', '\'', ',', ';',    '\\',
		                               '_', '`', '|',  '~', '\x7f', '\x80'};
		char text[41];

		memcpy(text, LIBZMQ_SERVER_SECRET, 41);
		text[pos] = outside[(size_t)pos % sizeof(outside)];
		cr_assert_eq(zr_curve_key_decode(key, text), -EINVAL, "position %d", pos);
		cr_assert_eq(zr_curve_public(pub, text), -EINVAL, "position %d", pos);
	}
}

Test(zmtp_keys, refuses_a_key_text_with_a_group_past_32_bits)
{
	char text[41];
	uint8_t key[32];

	memcpy(text, LIBZMQ_SERVER_SECRET, 41);
	memcpy(text + 35, "%%%%%", 5);
	cr_assert_eq(zr_curve_key_decode(key, text), -EINVAL);
}

Test(zmtp_keys, refuses_null_arguments)
{
	uint8_t key[32] = {0};
	char z85[41];

	cr_assert_eq(zr_curve_keypair(NULL, z85), -EINVAL);
	cr_assert_eq(zr_curve_keypair(z85, NULL), -EINVAL);
	cr_assert_eq(zr_curve_public(NULL, LIBZMQ_SERVER_SECRET), -EINVAL);
	cr_assert_eq(zr_curve_public(z85, NULL), -EINVAL);
	cr_assert_eq(zr_curve_key_decode(NULL, LIBZMQ_SERVER_SECRET), -EINVAL);
	cr_assert_eq(zr_curve_key_decode(key, NULL), -EINVAL);
	cr_assert_eq(zr_curve_key_encode(NULL, key), -EINVAL);
	cr_assert_eq(zr_curve_key_encode(z85, NULL), -EINVAL);
}

Test(zmtp_keys, reads_a_key_text_no_further_than_its_41st_character)
{
	struct zt_guard g;
	const char *p;
	uint8_t key[32];
	char long_text[41];

	zt_guard_init(&g, 64);
	/* 40 characters and the NUL, the NUL last before the guard page. */
	p = (const char *)zt_guard_place(&g, LIBZMQ_SERVER_SECRET, 41);
	cr_assert_eq(zr_curve_key_decode(key, p), 0);
	/* 41 characters and no NUL at all: refused from the 41st alone. */
	memcpy(long_text, LIBZMQ_SERVER_SECRET, 40);
	long_text[40] = 'x';
	p = (const char *)zt_guard_place(&g, long_text, 41);
	cr_assert_eq(zr_curve_key_decode(key, p), -EINVAL);
	zt_guard_fini(&g);
}
