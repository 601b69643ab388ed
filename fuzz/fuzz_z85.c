/*
 * Fuzz harness: zr_z85_decode, zr_z85_encode, zr_curve_key_decode (RFC 32).
 *
 * Input: any bytes, used three ways.
 *   1. As Z85 text: decoded from a heap block of exactly its length into a
 *      heap block of exactly the octet count (ASan sees a read or write one
 *      past either). The verdict must match an independent reference reading
 *      of RFC 32 (length, alphabet, each group's value within 32 bits), and a
 *      refused text must leave the output untouched. A text that decodes
 *      must re-encode to the same text; one octet less of room is -ENOSPC.
 *   2. As data: the input cut to whole 4-octet groups is encoded into a block
 *      of exactly the text length + 1, checked to be alphabet characters and
 *      a NUL, and decoded back to the same octets; one less of room is
 *      -ENOSPC with nothing written.
 *   3. Its first 41 octets (or fewer), NUL-terminated, as a key text:
 *      zr_curve_key_decode accepts exactly the 40-character valid texts.
 */
#include <errno.h>

#include <zring/zmtp.h>

#include "fuzz_common.h"

#define ALPHABET \
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#define JUNK 0xa5

/* RFC 32, read independently: -EINVAL or the octet count. */
static int
ref_decode(const uint8_t *t, size_t n, uint8_t *out)
{
	if (n % 5 != 0)
		return -EINVAL;
	for (size_t g = 0; g < n / 5; g++) {
		uint64_t v = 0;

		for (size_t i = 0; i < 5; i++) {
			const char *at = t[g * 5 + i] == 0 ? NULL : strchr(ALPHABET, t[g * 5 + i]);

			if (at == NULL)
				return -EINVAL;
			v = v * 85 + (uint64_t)(at - ALPHABET);
		}
		if (v > 0xFFFFFFFFu)
			return -EINVAL;
		if (out != NULL) {
			for (size_t i = 0; i < 4; i++)
				out[g * 4 + i] = (uint8_t)(v >> (24 - 8 * i));
		}
	}
	return (int)(n / 5 * 4);
}

static void
check_decode(const uint8_t *data, size_t size)
{
	char *text = fz_alloc(size);
	size_t cap = size / 5 * 4;
	uint8_t *out = fz_alloc(cap), *want = fz_alloc(cap);
	int ref, rc;

	if (size > 0)
		memcpy(text, data, size);
	if (cap > 0)
		memset(out, JUNK, cap);
	ref = ref_decode(data, size, want);
	rc = zr_z85_decode(out, cap, text, size);
	FZ_CHECK(rc == ref);
	if (rc < 0) {
		for (size_t i = 0; i < cap; i++)
			FZ_CHECK(out[i] == JUNK);
	} else {
		char *again = fz_alloc(size + 1);

		FZ_CHECK((size_t)rc == cap);
		FZ_CHECK(cap == 0 || memcmp(out, want, cap) == 0);
		FZ_CHECK(zr_z85_encode(again, size + 1, out, cap) == (int)size);
		FZ_CHECK(memcmp(again, text, size) == 0 && again[size] == '\0');
		free(again);
		if (cap > 0)
			FZ_CHECK(zr_z85_decode(out, cap - 1, text, size) == -ENOSPC);
	}
	free(want);
	free(out);
	free(text);
}

static void
check_encode(const uint8_t *data, size_t size)
{
	size_t n = size / 4 * 4, tlen = n / 4 * 5;
	uint8_t *in = fz_alloc(n), *back = fz_alloc(n);
	char *text = fz_alloc(tlen + 1);

	if (n > 0)
		memcpy(in, data, n);
	memset(text, JUNK, tlen + 1);
	FZ_CHECK(zr_z85_encode(text, tlen, in, n) == -ENOSPC);
	for (size_t i = 0; i <= tlen; i++)
		FZ_CHECK((uint8_t)text[i] == JUNK);
	FZ_CHECK(zr_z85_encode(text, tlen + 1, in, n) == (int)tlen);
	FZ_CHECK(text[tlen] == '\0');
	for (size_t i = 0; i < tlen; i++)
		FZ_CHECK(text[i] != '\0' && strchr(ALPHABET, text[i]) != NULL);
	FZ_CHECK(zr_z85_decode(back, n, text, tlen) == (int)n);
	FZ_CHECK(n == 0 || memcmp(back, in, n) == 0);
	if (size % 4 != 0)
		FZ_CHECK(zr_z85_encode(text, tlen + 1, data, size) == -EINVAL);
	free(text);
	free(back);
	free(in);
}

static void
check_key(const uint8_t *data, size_t size)
{
	size_t n = size < ZR_CURVE_KEY_Z85_LEN + 1 ? size : ZR_CURVE_KEY_Z85_LEN + 1;
	char *text = fz_alloc(n + 1);
	uint8_t key[ZR_CURVE_KEY_LEN], want[ZR_CURVE_KEY_LEN];
	size_t slen;
	int ok;

	if (n > 0)
		memcpy(text, data, n);
	text[n] = '\0';
	slen = strlen(text);
	ok = slen == ZR_CURVE_KEY_Z85_LEN &&
	     ref_decode((const uint8_t *)text, slen, want) == ZR_CURVE_KEY_LEN;
	memset(key, JUNK, sizeof(key));
	FZ_CHECK(zr_curve_key_decode(key, text) == (ok ? 0 : -EINVAL));
	if (ok)
		FZ_CHECK(memcmp(key, want, sizeof(key)) == 0);
	else
		for (size_t i = 0; i < sizeof(key); i++)
			FZ_CHECK(key[i] == JUNK);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_decode(data, size);
	check_encode(data, size);
	check_key(data, size);
	return 0;
}
