/*
 * CURVE keys (RFC 26) in their Z85 text form (RFC 32), as libzmq's
 * zmq_curve_keypair / zmq_curve_public give and take them: a 32-octet
 * Curve25519 key is 40 Z85 characters plus a NUL.
 *
 * All the cryptography is libsodium's: crypto_box_keypair draws a secret key
 * from the operating system's random source and derives its public key;
 * crypto_scalarmult_base derives a public key from a secret one. Secret key
 * octets in our own stack frames are wiped with sodium_memzero before return.
 *
 * sodium_init: libsodium asks for it before any other call. It is idempotent
 * and thread-safe (later calls return 1 and do nothing), so every function
 * here that calls into libsodium calls it first; the codec keeps no "already
 * initialised" flag of its own (no global mutable state).
 */
#include <errno.h>

#include <sodium.h>

#include <zring/zmtp.h>

_Static_assert(ZR_CURVE_KEY_LEN == crypto_box_PUBLICKEYBYTES,
               "a CURVE public key is a crypto_box key");
_Static_assert(ZR_CURVE_KEY_LEN == crypto_box_SECRETKEYBYTES,
               "a CURVE secret key is a crypto_box key");
_Static_assert(ZR_CURVE_KEY_LEN == crypto_scalarmult_BYTES, "scalarmult_base yields a public key");
_Static_assert(ZR_CURVE_KEY_Z85_LEN == ZR_CURVE_KEY_LEN / 4 * 5, "Z85: 5 characters per 4 octets");

static int
keys_sodium_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

/* strnlen(z85, 41), in C11: the length of a string, counting no further
 * than one past a key's text. */
static size_t
keys_text_len(const char *z85)
{
	size_t n = 0;

	while (n < ZR_CURVE_KEY_Z85_LEN + 1 && z85[n] != '\0')
		n++;
	return n;
}

/* see zmtp.h */
int
zr_curve_key_encode(char z85[ZR_CURVE_KEY_Z85_LEN + 1], const uint8_t key[ZR_CURVE_KEY_LEN])
{
	int rc;

	if (z85 == NULL || key == NULL)
		return -EINVAL;
	rc = zr_z85_encode(z85, ZR_CURVE_KEY_Z85_LEN + 1, key, ZR_CURVE_KEY_LEN);
	return rc < 0 ? rc : 0;
}

/* see zmtp.h */
int
zr_curve_key_decode(uint8_t key[ZR_CURVE_KEY_LEN], const char *z85)
{
	int rc;

	if (key == NULL || z85 == NULL)
		return -EINVAL;
	/* Exactly 40 characters; a longer text is found by reading one more,
	 * never by walking to its end. */
	if (keys_text_len(z85) != ZR_CURVE_KEY_Z85_LEN)
		return -EINVAL;
	rc = zr_z85_decode(key, ZR_CURVE_KEY_LEN, z85, ZR_CURVE_KEY_Z85_LEN);
	return rc < 0 ? rc : 0;
}

/* see zmtp.h */
int
zr_curve_keypair(char public_z85[ZR_CURVE_KEY_Z85_LEN + 1],
                 char secret_z85[ZR_CURVE_KEY_Z85_LEN + 1])
{
	uint8_t pk[ZR_CURVE_KEY_LEN], sk[ZR_CURVE_KEY_LEN];
	int rc;

	if (public_z85 == NULL || secret_z85 == NULL)
		return -EINVAL;
	rc = keys_sodium_init();
	if (rc < 0)
		return rc;
	if (crypto_box_keypair(pk, sk) != 0) {
		rc = -EIO;
		goto out;
	}
	rc = zr_curve_key_encode(public_z85, pk);
	if (rc == 0)
		rc = zr_curve_key_encode(secret_z85, sk);
out:
	sodium_memzero(sk, sizeof(sk));
	return rc;
}

/* see zmtp.h */
int
zr_curve_public(char public_z85[ZR_CURVE_KEY_Z85_LEN + 1], const char *secret_z85)
{
	uint8_t pk[ZR_CURVE_KEY_LEN], sk[ZR_CURVE_KEY_LEN];
	int rc;

	if (public_z85 == NULL)
		return -EINVAL;
	rc = zr_curve_key_decode(sk, secret_z85);
	if (rc < 0)
		return rc;
	rc = keys_sodium_init();
	if (rc == 0 && crypto_scalarmult_base(pk, sk) != 0)
		rc = -EIO;
	if (rc == 0)
		rc = zr_curve_key_encode(public_z85, pk);
	sodium_memzero(sk, sizeof(sk));
	return rc;
}
