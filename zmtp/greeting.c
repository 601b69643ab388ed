/*
 * The 64-octet greeting (RFC 23 "Greeting", RFC 37):
 *   signature  0xFF, 8 padding octets, 0x7F
 *   version    major, minor
 *   mechanism  20 octets, the name NUL-padded
 *   as-server  1 octet
 *   filler     31 zero octets
 *
 * Decisions (checklist B1): the padding octets are never judged (libzmq puts
 * its identity length + 1 there for ZMTP 1.0 compatibility); every major >= 3
 * is accepted, and our own framing is used with it; the as-server octet is
 * reported but never acted on (libzmq, JeroMQ and NetMQ always send 0); the
 * filler is not checked (RFC 23 does not ask the receiver to).
 */
#include <errno.h>
#include <string.h>

#include <zring/zmtp.h>

#include "wire.h"

#define GREETING_MECH_OFF 12
#define GREETING_MECH_LEN 20
#define GREETING_SERVER_OFF 32

static const char *const greeting_mech_names[] = {
	[ZR_MECH_NULL] = "NULL",
	[ZR_MECH_PLAIN] = "PLAIN",
	[ZR_MECH_CURVE] = "CURVE",
};

/* see zmtp.h */
int
zr_zmtp_greeting_encode(uint8_t out[ZR_ZMTP_GREETING_SIZE], uint8_t minor, int mechanism,
                        bool as_server)
{
	const char *name;

	if (mechanism < ZR_MECH_NULL || mechanism > ZR_MECH_CURVE)
		return -EINVAL;
	name = greeting_mech_names[mechanism];
	memset(out, 0, ZR_ZMTP_GREETING_SIZE);
	out[0] = 0xff;
	out[9] = 0x7f;
	out[10] = 3;
	out[11] = minor;
	memcpy(out + GREETING_MECH_OFF, name, strlen(name));
	out[GREETING_SERVER_OFF] = as_server ? 1 : 0;
	return ZR_ZMTP_GREETING_SIZE;
}

/*
 * The mechanism field: 1..20 characters from A-Z 0-9 - _ . + (RFC 23
 * "mechanism = 20mechanism-char"), then NUL octets only. A lowercase name is
 * malformed, not another spelling: libzmq compares the 20 octets exactly.
 */
static int
greeting_mechanism_check(const uint8_t *m)
{
	size_t n = 0, i;

	while (n < GREETING_MECH_LEN && m[n] != 0) {
		uint8_t c = m[n];

		if (!((c >= 'A' && c <= 'Z') || wire_is_digit(c) || c == '-' || c == '_' ||
		      c == '.' || c == '+'))
			return -ZR_EMECHANISM;
		n++;
	}
	if (n == 0)
		return -ZR_EMECHANISM;
	for (i = n; i < GREETING_MECH_LEN; i++) {
		if (m[i] != 0)
			return -ZR_EMECHANISM;
	}
	return (int)n;
}

/* see zmtp.h */
int
zr_zmtp_greeting_parse(const uint8_t *buf, size_t len, struct zr_zmtp_greeting *g)
{
	int n;
	size_t i;

	if (len >= 1 && buf[0] != 0xff)
		return -ZR_ESIGNATURE;
	if (len >= 10 && buf[9] != 0x7f)
		return -ZR_ESIGNATURE;
	if (len >= 11 && buf[10] < 3)
		return -ZR_EVERSION;
	if (len < ZR_ZMTP_GREETING_SIZE)
		return ZR_NEED_MORE;

	n = greeting_mechanism_check(buf + GREETING_MECH_OFF);
	if (n < 0)
		return n;
	if (g != NULL) {
		g->major = buf[10];
		g->minor = buf[11];
		memcpy(g->mechanism_name, buf + GREETING_MECH_OFF, (size_t)n);
		g->mechanism_name[n] = '\0';
		g->mechanism = -1;
		for (i = 0; i < sizeof greeting_mech_names / sizeof greeting_mech_names[0]; i++) {
			if (strcmp(g->mechanism_name, greeting_mech_names[i]) == 0)
				g->mechanism = (int)i;
		}
		g->as_server = buf[GREETING_SERVER_OFF] != 0;
	}
	return ZR_OK;
}
