/*
 * Fuzz harness: zr_zmtp_greeting_parse.
 *
 * Input: the peer's greeting bytes, any length. The harness parses every
 * prefix (0..66 octets, and the whole input), each from a heap block of
 * exactly that length so a read past len is caught, and checks:
 *   - the result is one of the documented codes, and NEED_MORE only below 64
 *     octets, OK only from 64;
 *   - an independent reference reading of RFC 23 (signature octets 0 and 9,
 *     major >= 3, mechanism grammar) agrees on every prefix (the mechanism
 *     may be judged at 64 octets only, the header does not promise earlier);
 *   - once a prefix fails, every longer prefix fails with the same code;
 *   - octets past 64 change nothing, and the filled struct matches the octets.
 * Also round-trips zr_zmtp_greeting_encode through the parser.
 */
#include <errno.h>

#include <zring/zmtp.h>

#include "fuzz_common.h"

#define GREETING_PREFIX_MAX 66

static bool
ref_mech_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       c == '.' || c == '+';
}

/* The reference verdict on the octets 0..64 of a full greeting. */
static int
ref_mechanism(const uint8_t *m)
{
	size_t n = 0, i;

	while (n < 20 && m[n] != 0) {
		if (!ref_mech_char(m[n]))
			return -ZR_EMECHANISM;
		n++;
	}
	if (n == 0)
		return -ZR_EMECHANISM;
	for (i = n; i < 20; i++) {
		if (m[i] != 0)
			return -ZR_EMECHANISM;
	}
	return 0;
}

/* The checks the header says happen as soon as the octet is there. */
static int
ref_early(const uint8_t *b, size_t len)
{
	if (len >= 1 && b[0] != 0xff)
		return -ZR_ESIGNATURE;
	if (len >= 10 && b[9] != 0x7f)
		return -ZR_ESIGNATURE;
	if (len >= 11 && b[10] < 3)
		return -ZR_EVERSION;
	return ZR_NEED_MORE;
}

static int
parse_exact(const uint8_t *data, size_t len, struct zr_zmtp_greeting *g)
{
	uint8_t *copy = fz_alloc(len);
	int rc;

	if (len > 0)
		memcpy(copy, data, len);
	memset(g, 0xa5, sizeof *g);
	rc = zr_zmtp_greeting_parse(copy, len, g);
	free(copy);
	return rc;
}

static void
check_struct(const uint8_t *b, const struct zr_zmtp_greeting *g)
{
	size_t n = 0;

	FZ_CHECK(g->major == b[10]);
	FZ_CHECK(g->minor == b[11]);
	while (n < 20 && b[12 + n] != 0)
		n++;
	FZ_CHECK(memchr(g->mechanism_name, 0, sizeof g->mechanism_name) != NULL);
	FZ_CHECK(strlen(g->mechanism_name) == n);
	FZ_CHECK(memcmp(g->mechanism_name, b + 12, n) == 0);
	if (strcmp(g->mechanism_name, "NULL") == 0)
		FZ_CHECK(g->mechanism == ZR_MECH_NULL);
	else if (strcmp(g->mechanism_name, "PLAIN") == 0)
		FZ_CHECK(g->mechanism == ZR_MECH_PLAIN);
	else if (strcmp(g->mechanism_name, "CURVE") == 0)
		FZ_CHECK(g->mechanism == ZR_MECH_CURVE);
	else
		FZ_CHECK(g->mechanism == -1);
	if (b[32] == 0)
		FZ_CHECK(!g->as_server);
	if (b[32] == 1)
		FZ_CHECK(g->as_server);
}

static void
check_encode_roundtrip(uint8_t sel)
{
	uint8_t out[ZR_ZMTP_GREETING_SIZE];
	struct zr_zmtp_greeting g;
	int mech = sel % 4 == 3 ? 7 : sel % 4;
	uint8_t minor = (uint8_t)(sel >> 2 & 1);
	bool server = (sel >> 3 & 1) != 0;
	int rc = zr_zmtp_greeting_encode(out, minor, mech, server);

	if (mech == 7) {
		FZ_CHECK(rc == -EINVAL);
		return;
	}
	FZ_CHECK(rc == ZR_ZMTP_GREETING_SIZE);
	FZ_CHECK(out[0] == 0xff && out[9] == 0x7f && out[10] == 3 && out[11] == minor);
	FZ_CHECK(out[32] == (server ? 1 : 0));
	FZ_CHECK(zr_zmtp_greeting_parse(out, sizeof out, &g) == ZR_OK);
	FZ_CHECK(g.mechanism == mech && g.minor == minor && g.major == 3 && g.as_server == server);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zr_zmtp_greeting g, g64;
	size_t k, kmax = size < GREETING_PREFIX_MAX ? size : GREETING_PREFIX_MAX;
	int first_err = 0, full = 0, rc;

	/* The verdict on the first 64 octets, when there are 64. */
	if (size >= ZR_ZMTP_GREETING_SIZE) {
		full = ref_early(data, ZR_ZMTP_GREETING_SIZE);
		if (full == ZR_NEED_MORE)
			full = ref_mechanism(data + 12);
	}

	for (k = 0; k <= kmax; k++) {
		int early = ref_early(data, k);

		rc = parse_exact(data, k, &g);
		FZ_CHECK(rc == ZR_OK || rc == ZR_NEED_MORE || rc == -ZR_ESIGNATURE ||
		         rc == -ZR_EVERSION || rc == -ZR_EMECHANISM);
		if (first_err != 0)
			FZ_CHECK(rc == first_err);
		if (k < ZR_ZMTP_GREETING_SIZE) {
			FZ_CHECK(rc != ZR_OK);
			if (early < 0)
				FZ_CHECK(rc == early);
			else /* the mechanism may be judged early, never wrongly */
				FZ_CHECK(rc == ZR_NEED_MORE ||
				         (rc == -ZR_EMECHANISM && full == -ZR_EMECHANISM));
		} else {
			FZ_CHECK(rc == (full < 0 ? full : ZR_OK));
			if (rc == ZR_OK)
				check_struct(data, &g);
		}
		if (rc < 0 && first_err == 0)
			first_err = rc;
	}

	if (size > kmax) {
		rc = parse_exact(data, size, &g);
		FZ_CHECK(rc == (full < 0 ? full : ZR_OK));
		if (rc == ZR_OK) {
			/* Octets past 64 are not part of the greeting. */
			FZ_CHECK(parse_exact(data, ZR_ZMTP_GREETING_SIZE, &g64) == ZR_OK);
			FZ_CHECK(g.major == g64.major && g.minor == g64.minor &&
			         g.mechanism == g64.mechanism && g.as_server == g64.as_server &&
			         strcmp(g.mechanism_name, g64.mechanism_name) == 0);
		}
	}

	/* g may be NULL. */
	if (size > 0) {
		uint8_t *copy = fz_alloc(kmax);

		memcpy(copy, data, kmax);
		rc = zr_zmtp_greeting_parse(copy, kmax, NULL);
		FZ_CHECK(rc == (kmax < ZR_ZMTP_GREETING_SIZE
		                        ? (first_err ? first_err : ZR_NEED_MORE)
		                        : (full < 0 ? full : ZR_OK)));
		free(copy);
		check_encode_roundtrip(data[0]);
	}
	return 0;
}
