/*
 * Malformed peers: one row per way a peer can break RFC 23 / 37 / 24, each
 * with the specific error the connection codec must return, whether it must
 * queue an ERROR command for the peer (handshake-phase errors after a valid
 * greeting do; greeting errors and traffic-phase errors do not), and what may
 * have been delivered before. Every row runs under every chunking (whole,
 * byte by byte, every split point, sampled double splits) against a guard
 * page; the error must be identical and sticky in all of them.
 */
/* Wire vectors are written as adjacent literals, one per field, the way the
 * bytes sit on the wire; the formatter would put each on a line of its own. */
/* clang-format off */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include <zring/zmtp.h>

#include "feed.h"
#include "rows.h"
#include "vectors.h"

enum cfg_kind {
	PUSH_NULL = 1, /* PUSH, NULL, defaults */
	PULL_NULL,
	XPUB_NULL,
	PULL_SMALL,    /* PULL, max_msg_size 10 */
	PULL_CMD16,    /* PULL, max_cmd_size 16 */
	PULL_HS32,     /* PULL, max_handshake_cmd 32 */
	PLAIN_CLIENT,  /* PUSH, PLAIN client admin/secret */
	PLAIN_SERVER,  /* PULL, PLAIN server, accepts everyone */
	PLAIN_SERVER_400, /* PULL, PLAIN server whose authenticator says 400 */
	PULL_FRAMES3,     /* PULL, max_msg_frames 3 */
};

static int
auth_400_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	(void)arg;
	(void)req;
	return 400;
}

static struct zr_zmtp_config
make_cfg(int kind)
{
	struct zr_zmtp_config c;

	zr_zmtp_config_default(&c, ZR_PULL);
	switch (kind) {
	case PUSH_NULL:
		c.socket_type = ZR_PUSH;
		break;
	case PULL_NULL:
		break;
	case XPUB_NULL:
		c.socket_type = ZR_XPUB;
		break;
	case PULL_SMALL:
		c.max_msg_size = 10;
		break;
	case PULL_CMD16:
		c.max_cmd_size = 16;
		break;
	case PULL_HS32:
		c.max_handshake_cmd = 32;
		break;
	case PULL_FRAMES3:
		c.max_msg_frames = 3;
		break;
	case PLAIN_CLIENT:
		c.socket_type = ZR_PUSH;
		c.mechanism = ZR_MECH_PLAIN;
		c.username = (const uint8_t *)"admin";
		c.username_len = 5;
		c.password = (const uint8_t *)"secret";
		c.password_len = 6;
		break;
	case PLAIN_SERVER:
	case PLAIN_SERVER_400:
		c.mechanism = ZR_MECH_PLAIN;
		c.as_server = true;
		if (kind == PLAIN_SERVER_400)
			c.auth = auth_400_cb;
		break;
	default:
		cr_assert_fail("bad config kind %d", kind);
	}
	return c;
}

struct bad_row {
	const char *name;
	int line;
	int cfg;
	struct seg in[MAX_SEGS];
	int code;           /* the error zr_zmtp_feed must return */
	bool error_queued;  /* an ERROR command follows `out` in our output */
	const char *reason; /* if not NULL: that ERROR's exact reason */
	size_t nev;         /* events delivered before the error */
	struct seg out;     /* what we wrote before any ERROR */
};

/* Our own output, by configuration. */
#define O_PULL L(G_NULL_31)
#define O_PULL_R L(G_NULL_31 READY_PULL)
#define O_PUSH_R L(G_NULL_31 READY_PUSH)
#define O_XPUB_R L(G_NULL_31 "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "XPUB"))
#define O_CLIENT L(G_PLAIN_31_CLIENT)
#define O_CLIENT_H L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET)
#define O_SERVER L(G_PLAIN_31_SERVER)
#define O_SERVER_W L(G_PLAIN_31_SERVER WELCOME)

/* A 3.1 NULL greeting and a PUSH READY: the way into traffic for PULL. */
#define IN_TRAFFIC G_NULL_31 READY_PUSH

static const struct bad_row bad_rows[] = {
	/* -- greeting: refused without ERROR (no framing agreed yet) -- */
	{"bad signature octet 0", __LINE__, PULL_NULL, {L("\xfe" Z8 "\x7f" "\x03\x01" MECH_NULL "\x00" Z31)},
	 -ZR_ESIGNATURE, false, NULL, 0, O_PULL},
	{"bad signature octet 9", __LINE__, PULL_NULL, {L("\xff" Z8 "\x7e" "\x03\x01" MECH_NULL "\x00" Z31)},
	 -ZR_ESIGNATURE, false, NULL, 0, O_PULL},
	{"ZMTP 1.0 first octet", __LINE__, PULL_NULL, {L("\x01\x00" "\x06\x00" "hello")}, -ZR_ESIGNATURE,
	 false, NULL, 0, O_PULL},
	{"ZMTP 2.0 greeting (revision 1)", __LINE__, PULL_NULL, {L(SIG "\x01" "\x08" "\x00\x00")},
	 -ZR_EVERSION, false, NULL, 0, O_PULL},
	{"major version 0", __LINE__, PULL_NULL, {L(GREETING("\x00\x01", MECH_NULL, "\x00"))}, -ZR_EVERSION,
	 false, NULL, 0, O_PULL},
	{"unknown mechanism FOO", __LINE__, PULL_NULL, {L(GREETING("\x03\x01", "FOO" Z16 "\0", "\x00"))},
	 -ZR_EMECHANISM, false, NULL, 0, O_PULL},
	{"lowercase mechanism null", __LINE__, PULL_NULL, {L(GREETING("\x03\x01", "null" Z16, "\x00"))},
	 -ZR_EMECHANISM, false, NULL, 0, O_PULL},
	{"junk after the NUL in the mechanism", __LINE__, PULL_NULL,
	 {L(GREETING("\x03\x01", "NULL\0X" Z8 Z4 "\0\0", "\x00"))}, -ZR_EMECHANISM, false, NULL, 0, O_PULL},
	{"empty mechanism", __LINE__, PULL_NULL, {L(GREETING("\x03\x01", Z16 Z4, "\x00"))}, -ZR_EMECHANISM,
	 false, NULL, 0, O_PULL},
	{"mechanism mismatch: we NULL, peer PLAIN", __LINE__, PULL_NULL, {L(G_PLAIN_31_CLIENT)},
	 -ZR_EMECHMISMATCH, false, NULL, 0, O_PULL},
	{"mechanism mismatch: we PLAIN, peer NULL (no downgrade)", __LINE__, PLAIN_CLIENT,
	 {L(G_NULL_31 READY_PULL)}, -ZR_EMECHMISMATCH, false, NULL, 0, O_CLIENT},
	{"mechanism mismatch: we NULL, peer CURVE", __LINE__, PULL_NULL,
	 {L(GREETING("\x03\x01", MECH_CURVE, "\x00"))}, -ZR_EMECHMISMATCH, false, NULL, 0, O_PULL},

	/* -- framing during the handshake: ERROR queued -- */
	{"reserved flag bit 3 in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x0c\x00")}, -ZR_EFLAGS,
	 true, NULL, 0, O_PULL_R},
	{"reserved flag bit 4 in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x14\x00")}, -ZR_EFLAGS,
	 true, NULL, 0, O_PULL_R},
	{"reserved flag bit 5 in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x24\x00")}, -ZR_EFLAGS,
	 true, NULL, 0, O_PULL_R},
	{"reserved flag bit 6 in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x44\x00")}, -ZR_EFLAGS,
	 true, NULL, 0, O_PULL_R},
	{"reserved flag bit 7 in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x84\x00")}, -ZR_EFLAGS,
	 true, NULL, 0, O_PULL_R},
	{"READY with MORE", __LINE__, PULL_NULL, {L(G_NULL_31 "\x05\x1a" "\x05" "READY" PROP_ST("\x04", "PUSH"))},
	 -ZR_ECMDMORE, true, NULL, 0, O_PULL_R},
	{"handshake command over the handshake limit", __LINE__, PULL_HS32,
	 {L(G_NULL_31 "\x04\x21")}, -ZR_ECMDSIZE, true, NULL, 0, O_PULL_R},
	{"message before the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x00\x01" "x")}, -ZR_EEARLYMSG,
	 true, NULL, 0, O_PULL_R},
	{"empty message before the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x00\x00")},
	 -ZR_EEARLYMSG, true, NULL, 0, O_PULL_R},

	/* -- commands during the handshake: ERROR queued, nothing delivered -- */
	{"command name length 0", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x01" "\x00")}, -ZR_ECMDNAME, true,
	 NULL, 0, O_PULL_R},
	{"command name length past the body", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x03" "\x05" "RE")},
	 -ZR_ECMDNAME, true, NULL, 0, O_PULL_R},
	{"empty command frame", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x00")}, -ZR_ECMDNAME, true, NULL, 0,
	 O_PULL_R},
	{"unknown command during the handshake", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x09" "\x04" "JOIN" "abcd")}, -ZR_EUNEXPECTED, true, NULL, 0, O_PULL_R},
	{"PING during the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x07" "\x04" "PING" "\x00\x00")},
	 -ZR_EUNEXPECTED, true, NULL, 0, O_PULL_R},
	{"SUBSCRIBE during the handshake", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x0a" "\x09" "SUBSCRIBE")}, -ZR_EUNEXPECTED, true, NULL, 0, O_PULL_R},
	{"truncated property header", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x0b" "\x05" "READY" "\x0b" "Sock")},
	 -ZR_EPROPTRUNC, true, NULL, 0, O_PULL_R},
	{"property value length cut short", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x14" "\x05" "READY" "\x0b" "Socket-Type" "\x00\x00")}, -ZR_EPROPTRUNC, true, NULL,
	 0, O_PULL_R},
	{"property value length past the body", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x1a" "\x05" "READY" "\x0b" "Socket-Type" "\x00\x00\x00\x05" "PUSH")},
	 -ZR_EPROPTRUNC, true, NULL, 0, O_PULL_R},
	{"property name length 0", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x0b" "\x05" "READY" "\x00" "\x00\x00\x00\x00")}, -ZR_EPROPNAME, true, NULL, 0,
	 O_PULL_R},
	{"bad character in a property name", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x1a" "\x05" "READY" "\x0b" "Socket Type" "\x00\x00\x00\x04" "PUSH")},
	 -ZR_EPROPNAME, true, NULL, 0, O_PULL_R},
	{"property value length 2^31", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x11" "\x05" "READY" "\x04" "X-Go" "\x80\x00\x00\x00" "ab")}, -ZR_EPROPVALUE, true,
	 NULL, 0, O_PULL_R},
	/* 6 + 20 + 1 + 8 + 4 + 256 = 295 = 0x127 */
	{"Identity over 255 octets", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x06" "\0\0\0\0\0\0\x01\x27" "\x05" "READY" PROP_ST("\x04", "PUSH") "\x08" "Identity"
	    "\x00\x00\x01\x00"),
	  F(256)},
	 -ZR_EPROPVALUE, true, NULL, 0, O_PULL_R},
	{"READY without Socket-Type", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x13" "\x05" "READY" PROP_ID_EMPTY)}, -ZR_ENOSOCKTYPE, true, NULL, 0, O_PULL_R},
	{"READY with no properties", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x06" "\x05" "READY")},
	 -ZR_ENOSOCKTYPE, true, NULL, 0, O_PULL_R},
	{"unknown Socket-Type value", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x19" "\x05" "READY" PROP_ST("\x03", "FOO"))}, -ZR_ESOCKTYPE, true, NULL, 0,
	 O_PULL_R},
	{"lowercase Socket-Type value", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "push"))}, -ZR_ESOCKTYPE, true, NULL, 0,
	 O_PULL_R},
	{"Socket-Type value with a trailing NUL", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x1b" "\x05" "READY" PROP_ST("\x05", "PUSH\0"))}, -ZR_ESOCKTYPE, true, NULL, 0,
	 O_PULL_R},
	{"incompatible socket types: PUSH and PUB", __LINE__, PUSH_NULL, {L(G_NULL_31 READY_PUB)},
	 -ZR_EINCOMPATIBLE, true, NULL, 0, O_PUSH_R},
	{"incompatible socket types: PULL and PULL", __LINE__, PULL_NULL, {L(G_NULL_31 READY_PULL)},
	 -ZR_EINCOMPATIBLE, true, NULL, 0, O_PULL_R},
	{"ERROR reason length past the body", __LINE__, PULL_NULL,
	 {L(G_NULL_31 "\x04\x0a" "\x05" "ERROR" "\x04" "400")}, -ZR_EERRORCMD, true, NULL, 0, O_PULL_R},
	{"ERROR without a reason length", __LINE__, PULL_NULL, {L(G_NULL_31 "\x04\x06" "\x05" "ERROR")},
	 -ZR_EERRORCMD, true, NULL, 0, O_PULL_R},
	{"peer ERROR in the handshake", __LINE__, PULL_NULL, {L(G_NULL_31 ERROR_400)}, -ZR_EPEERERROR, false,
	 NULL, 1, O_PULL_R},

	/* -- PLAIN -- */
	{"HELLO username length past the body", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT "\x04\x0c" "\x05" "HELLO" "\x06" "admin")}, -ZR_EPLAIN, true, NULL, 0, O_SERVER},
	{"HELLO password length past the body", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT "\x04\x13" "\x05" "HELLO" "\x05" "admin" "\x07" "secret")}, -ZR_EPLAIN, true,
	 NULL, 0, O_SERVER},
	{"HELLO with bytes after the password", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT "\x04\x14" "\x05" "HELLO" "\x05" "admin" "\x06" "secret" "!")}, -ZR_EPLAIN, true,
	 NULL, 0, O_SERVER},
	{"HELLO without a password length", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT "\x04\x0c" "\x05" "HELLO" "\x05" "admin")}, -ZR_EPLAIN, true, NULL, 0, O_SERVER},
	{"WELCOME sent to a server", __LINE__, PLAIN_SERVER, {L(G_PLAIN_31_CLIENT WELCOME)}, -ZR_EUNEXPECTED,
	 true, NULL, 0, O_SERVER},
	{"INITIATE before HELLO / WELCOME", __LINE__, PLAIN_SERVER, {L(G_PLAIN_31_CLIENT INITIATE_PUSH)},
	 -ZR_EUNEXPECTED, true, NULL, 0, O_SERVER},
	{"READY from a PLAIN client", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET READY_PUSH)}, -ZR_EUNEXPECTED, true, NULL, 0, O_SERVER_W},
	{"second HELLO", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET HELLO_ADMIN_SECRET)}, -ZR_EUNEXPECTED, true, NULL, 0,
	 O_SERVER_W},
	{"INITIATE without Socket-Type", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET "\x04\x09" "\x08" "INITIATE")}, -ZR_ENOSOCKTYPE, true, NULL, 0,
	 O_SERVER_W},
	{"INITIATE from an incompatible type", __LINE__, PLAIN_SERVER,
	 {L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PULL)}, -ZR_EINCOMPATIBLE, true, NULL, 0, O_SERVER_W},
	{"authenticator refuses with 400", __LINE__, PLAIN_SERVER_400,
	 {L(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PUSH)}, -ZR_EAUTH, true, "400", 0, O_SERVER},
	{"HELLO sent to a client", __LINE__, PLAIN_CLIENT, {L(G_PLAIN_31_SERVER HELLO_ADMIN_SECRET)},
	 -ZR_EUNEXPECTED, true, NULL, 0, O_CLIENT_H},
	{"READY before WELCOME", __LINE__, PLAIN_CLIENT, {L(G_PLAIN_31_SERVER READY_PULL)}, -ZR_EUNEXPECTED, true,
	 NULL, 0, O_CLIENT_H},
	{"WELCOME with data", __LINE__, PLAIN_CLIENT, {L(G_PLAIN_31_SERVER "\x04\x09" "\x07" "WELCOME" "x")},
	 -ZR_EPLAIN, true, NULL, 0, O_CLIENT_H},
	{"server ERROR to the client", __LINE__, PLAIN_CLIENT, {L(G_PLAIN_31_SERVER ERROR_400)}, -ZR_EPEERERROR,
	 false, NULL, 1, O_CLIENT_H},

	/* -- traffic: no ERROR queued; what came before was delivered -- */
	{"second READY", __LINE__, PULL_NULL, {L(IN_TRAFFIC READY_PUSH)}, -ZR_EUNEXPECTED, false, NULL, 1,
	 O_PULL_R},
	{"reserved flag bit 3 in traffic", __LINE__, PULL_NULL, {L(IN_TRAFFIC "\x08\x01" "x")}, -ZR_EFLAGS,
	 false, NULL, 1, O_PULL_R},
	{"command with MORE in traffic", __LINE__, PULL_NULL, {L(IN_TRAFFIC "\x05\x05" "\x04" "PONG")},
	 -ZR_ECMDMORE, false, NULL, 1, O_PULL_R},
	{"long size with the top bit set", __LINE__, PULL_NULL, {L(IN_TRAFFIC "\x02" "\x80\0\0\0\0\0\0\x01")},
	 -ZR_EFRAMESIZE, false, NULL, 1, O_PULL_R},
	{"frame over max_msg_size, header only", __LINE__, PULL_SMALL, {L(IN_TRAFFIC "\x00\x0b")},
	 -ZR_ETOOLARGE, false, NULL, 1, O_PULL_R},
	{"long frame over max_msg_size, header only", __LINE__, PULL_NULL,
	 {L(IN_TRAFFIC "\x02" "\0\0\0\0\x04\0\0\x01")}, -ZR_ETOOLARGE, false, NULL, 1, O_PULL_R},
	{"multipart sum over max_msg_size", __LINE__, PULL_SMALL,
	 {L(IN_TRAFFIC "\x01\x05" "abcde" "\x01\x05" "fghij" "\x00\x01")}, -ZR_ETOOLARGE, false, NULL, 3,
	 O_PULL_R},
	{"empty MORE frames over max_msg_frames", __LINE__, PULL_FRAMES3,
	 {L(IN_TRAFFIC "\x01\x00" "\x01\x00" "\x01\x00" "\x01\x00")}, -ZR_ETOOMANYFRAMES, false, NULL, 4,
	 O_PULL_R},
	{"a last frame over max_msg_frames, header only", __LINE__, PULL_FRAMES3,
	 {L(IN_TRAFFIC "\x01\x01" "a" "\x01\x00" "\x03" Z8 "\x00\x05")}, -ZR_ETOOMANYFRAMES, false, NULL, 4,
	 O_PULL_R},
	{"empty MORE frames over max_msg_frames from a ZMTP 3.0 peer", __LINE__, PULL_FRAMES3,
	 {L(G_NULL_30 READY_PUSH "\x01\x00" "\x01\x00" "\x01\x00" "\x01\x00")}, -ZR_ETOOMANYFRAMES, false,
	 NULL, 4, O_PULL_R},
	{"command over the command limit", __LINE__, PULL_CMD16, {L(IN_TRAFFIC "\x04\x11")}, -ZR_ECMDSIZE,
	 false, NULL, 1, O_PULL_R},
	{"command between a MORE frame and the last", __LINE__, PULL_NULL,
	 {L(IN_TRAFFIC "\x01\x01" "a" "\x04\x05" "\x04" "PONG" "\x00\x01" "b")}, -ZR_ECMDINMSG, false, NULL, 2,
	 O_PULL_R},
	{"command name with a digit in traffic", __LINE__, PULL_NULL, {L(IN_TRAFFIC "\x04\x05" "\x04" "JO1N")},
	 -ZR_ECMDNAME, false, NULL, 1, O_PULL_R},
	{"PING body too short", __LINE__, PULL_NULL, {L(IN_TRAFFIC "\x04\x06" "\x04" "PING" "\x00")},
	 -ZR_EPING, false, NULL, 1, O_PULL_R},
	{"PING context over 16 octets", __LINE__, PULL_NULL,
	 {L(IN_TRAFFIC "\x04\x18" "\x04" "PING" "\x00\x00" "0123456789abcdefg")}, -ZR_EPING, false, NULL, 1,
	 O_PULL_R},
	{"PONG context over 16 octets", __LINE__, PULL_NULL,
	 {L(IN_TRAFFIC "\x04\x16" "\x04" "PONG" "0123456789abcdefg")}, -ZR_EPONG, false, NULL, 1, O_PULL_R},
	{"ERROR reason length overflow in traffic", __LINE__, PULL_NULL,
	 {L(IN_TRAFFIC "\x04\x08" "\x05" "ERROR" "\x02" "x")}, -ZR_EERRORCMD, false, NULL, 1, O_PULL_R},
	{"peer ERROR in traffic", __LINE__, XPUB_NULL,
	 {L(G_NULL_31 READY_SUB "\x00\x01" "m" "\x04\x0a" "\x05" "ERROR" "\x03" "bye")}, -ZR_EPEERERROR, false,
	 NULL, 3, O_XPUB_R},
};

ParameterizedTestParameters(zmtp_malformed, fails_with_the_specific_code)
{
	ROW_PARAMS(bad_rows);
}

ParameterizedTest(int *i, zmtp_malformed, fails_with_the_specific_code)
{
	const struct bad_row *row = &bad_rows[*i];
	struct zr_zmtp_config cfg = make_cfg(row->cfg);
	struct zt_target t = zt_conn_target(&cfg);
	struct zt_run r;
	size_t n, out_n, off;
	uint8_t *in = row_build(row->in, MAX_SEGS, &n);
	uint8_t *out = row_build(&row->out, 1, &out_n);

	cr_log_info("row \"%s\" (line %d)", row->name, row->line);
	zt_check_splits(&t, in, n, row->line, &r);

	cr_assert_eq(r.rc, row->code, "line %d (%s): got %d (%s), want %d (%s)", row->line, row->name, r.rc,
	             zr_strerror(r.rc), row->code, zr_strerror(row->code));
	cr_assert_eq(r.sticky_rc, row->code, "line %d: not sticky", row->line);
	cr_assert_eq(r.state, ZR_ZMTP_FAILED, "line %d", row->line);

	cr_assert_eq(r.nev, row->nev, "line %d (%s): %zu events delivered, want %zu", row->line, row->name,
	             r.nev, row->nev);
	if (row->code == -ZR_EPEERERROR)
		cr_assert_eq(r.ev[r.nev - 1].type, ZR_ZMTP_EV_PEER_ERROR, "line %d", row->line);
	for (size_t k = 0; k < r.nev; k++)
		if (r.ev[k].type == ZR_ZMTP_EV_FRAME)
			cr_assert(r.ev[k].complete, "line %d: a partial frame was handed out", row->line);

	cr_assert_geq(r.out_len, out_n, "line %d (%s): wrote %zu octets, want at least %zu", row->line, row->name,
	              r.out_len, out_n);
	zt_assert_bytes("our output before the error", r.out, out_n, out, out_n, row->line);
	off = out_n;
	if (row->error_queued) {
		size_t rlen;

		cr_assert_geq(r.out_len, off + 9, "line %d (%s): no ERROR queued", row->line, row->name);
		cr_assert_eq(r.out[off], 0x04, "line %d: ERROR flags", row->line);
		zt_assert_bytes("ERROR name", r.out + off + 2, 6, "\x05" "ERROR", 6, row->line);
		rlen = r.out[off + 8];
		cr_assert_eq(r.out[off + 1], 7 + rlen, "line %d: ERROR size", row->line);
		cr_assert_eq(r.out_len, off + 9 + rlen, "line %d: octets after ERROR", row->line);
		if (row->reason != NULL)
			zt_assert_bytes("ERROR reason", r.out + off + 9, rlen, row->reason, strlen(row->reason),
			                row->line);
	} else {
		cr_assert_eq(r.out_len, off, "line %d (%s): %zu unexpected octets after our output: %s", row->line,
		             row->name, r.out_len - off, zt_hex(r.out + off, r.out_len - off));
	}
	zt_run_free(&r);
	free(in);
	free(out);
}

Test(zmtp_malformed, has_at_least_forty_rows_covering_every_producible_code)
{
	bool seen[ZR_ELAST - ZR_EBASE] = {false};

	cr_assert_geq(sizeof(bad_rows) / sizeof(bad_rows[0]), 40);
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++)
		seen[-bad_rows[i].code - ZR_EBASE] = true;
	for (int c = ZR_EBASE; c < ZR_ELAST; c++) {
		/* Timers are in test_conn.c. ESUBSCRIBE: any SUBSCRIBE/CANCEL topic is
		 * well-formed, so no input can produce it through the codec. The
		 * CURVE codes need a keyed handshake first: their rows are in
		 * tests/zmtp/test_conn_curve.c, whose
		 * has_a_hostile_row_for_every_curve_code_bytes_can_produce keeps
		 * this check for them. ECURVEHUNGUP is the engine's reading of a
		 * close, not something bytes produce. */
		if (c == ZR_EHANDSHAKE_TIMEOUT || c == ZR_EHEARTBEAT_TIMEOUT || c == ZR_ESUBSCRIBE ||
		    (c >= ZR_ECURVECMD && c <= ZR_ECURVEHUNGUP))
			continue;
		cr_expect(seen[c - ZR_EBASE], "no malformed row produces %d (%s)", c, zr_strerror(-c));
	}
}
/* clang-format on */
