/*
 * The connection codec (RFC 23, RFC 37, PLAIN RFC 24): whole handshake
 * transcripts in both directions (what we must emit, byte-exact, and what we
 * must accept), under every chunking; two codecs back to back; heartbeats,
 * TTL and the handshake deadline on a fake clock; subscriptions; ERROR.
 */
/* Wire vectors are written as adjacent literals, one per field, the way the
 * bytes sit on the wire; the formatter would put each on a line of its own. */
/* clang-format off */
#include <criterion/criterion.h>
#include <stdio.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <zring/zmtp.h>

#include "conn_util.h"
#include "feed.h"
#include "vectors.h"

#define MS 1000 /* the feeders' clock (zt_conn_target) */

static struct zr_zmtp_config
cfg_null(int type)
{
	struct zr_zmtp_config c;

	zr_zmtp_config_default(&c, type);
	return c;
}

static struct zr_zmtp_config
cfg_plain_client(int type)
{
	struct zr_zmtp_config c = cfg_null(type);

	c.mechanism = ZR_MECH_PLAIN;
	c.username = (const uint8_t *)"admin";
	c.username_len = 5;
	c.password = (const uint8_t *)"secret";
	c.password_len = 6;
	return c;
}

struct auth_seen {
	int calls;
	int status;
	int mechanism;
	char user[256];
	char pass[256];
};

static int
auth_record_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	struct auth_seen *a = arg;

	a->calls++;
	a->mechanism = req->mechanism;
	/* NULL (auth_null) has no credentials: no pointers to copy from. */
	if (req->username_len > 0)
		memcpy(a->user, req->username, req->username_len);
	a->user[req->username_len] = '\0';
	if (req->password_len > 0)
		memcpy(a->pass, req->password, req->password_len);
	a->pass[req->password_len] = '\0';
	return a->status;
}

static struct zr_zmtp_config
cfg_plain_server(int type, struct auth_seen *a)
{
	struct zr_zmtp_config c = cfg_null(type);

	c.mechanism = ZR_MECH_PLAIN;
	c.as_server = true;
	if (a != NULL) {
		c.auth = auth_record_cb;
		c.auth_arg = a;
	}
	return c;
}

/* Runs a transcript under every chunking; returns the whole run (free it). */
#define TRANSCRIPT(cfgv, lit, run)                                                                   \
	do {                                                                                         \
		struct zt_target t_ = zt_conn_target(&(cfgv));                                      \
		zt_check_splits(&t_, (const uint8_t *)(lit), sizeof(lit) - 1, __LINE__, (run));     \
	} while (0)

static size_t
cstr_len(const char *s)
{
	return s != NULL ? strlen(s) : 0;
}

static void
check_ready(const struct zt_ev *e, int peer_type, const char *ident, size_t ident_len, const void *meta,
            size_t meta_len, int line)
{
	cr_assert_eq(e->type, ZR_ZMTP_EV_READY, "line %d", line);
	cr_assert_eq(e->peer_type, peer_type, "line %d: peer type %d", line, e->peer_type);
	if (ident == NULL) {
		cr_assert_not(e->has_identity, "line %d: unexpected identity", line);
	} else {
		cr_assert(e->has_identity, "line %d: no identity", line);
		zt_assert_bytes("identity", e->identity, e->identity_len, ident, ident_len, line);
	}
	zt_assert_bytes("READY metadata", e->data, e->len, meta, meta_len, line);
}
#define READY_IS(e, type, ident, meta_lit)                                                           \
	check_ready((e), (type), (ident), cstr_len(ident), (meta_lit), sizeof(meta_lit) - 1, __LINE__)

static void
check_frame(const struct zt_ev *e, unsigned flags, const void *body, size_t n, int line)
{
	cr_assert_eq(e->type, ZR_ZMTP_EV_FRAME, "line %d: type %d", line, e->type);
	cr_assert(e->complete, "line %d", line);
	cr_assert_eq(e->flags, flags, "line %d: flags 0x%x", line, e->flags);
	cr_assert_eq(e->size, n, "line %d", line);
	zt_assert_bytes("frame", e->data, e->len, body, n, line);
}
#define FRAME_IS(e, flags, lit) check_frame((e), (flags), (lit), sizeof(lit) - 1, __LINE__)

#define BYTES_IS(got, got_len, lit) zt_assert_bytes("bytes", (got), (got_len), (lit), sizeof(lit) - 1, __LINE__)

/* ---------------------------------------------------------------- */
/* What we emit before the peer says anything. */

Test(zmtp_conn, queues_only_its_greeting_at_init)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);

	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_GREETING);
	cr_assert_eq(zr_zmtp_peer_type(z), -1);
	OUT_IS(z, G_NULL_31);
	OUT_NONE(z);
	free(z);
}

Test(zmtp_conn, sends_as_server_zero_with_null_even_when_configured_as_server)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.as_server = true;
	z = conn_new(&c, 0);
	OUT_IS(z, G_NULL_31);
	free(z);
}

Test(zmtp_conn, announces_minor_0_when_configured)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUB);
	struct zr_zmtp *z;

	c.minor = 0;
	z = conn_new(&c, 0);
	OUT_IS(z, G_NULL_30);
	free(z);
}

Test(zmtp_conn, sends_plain_greetings_with_the_role_in_as_server)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zr_zmtp_config s = cfg_plain_server(ZR_PULL, NULL);
	struct zr_zmtp *zc = conn_new(&c, 0), *zs = conn_new(&s, 0);

	OUT_IS(zc, G_PLAIN_31_CLIENT);
	OUT_IS(zs, G_PLAIN_31_SERVER);
	free(zc);
	free(zs);
}

Test(zmtp_conn, acknowledges_output_in_parts)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	const uint8_t *p;
	size_t n;

	n = zr_zmtp_out(z, &p);
	cr_assert_eq(n, 64);
	zr_zmtp_out_ack(z, 10);
	n = zr_zmtp_out(z, &p);
	cr_assert_eq(n, 54);
	zt_assert_bytes("rest of greeting", p, n, &G_NULL_31[10], 54, __LINE__);
	zr_zmtp_out_ack(z, 54);
	cr_assert_eq(zr_zmtp_out(z, &p), 0);
	free(z);
}

Test(zmtp_conn, wants_a_whole_greeting_first)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);

	cr_assert_eq(zr_zmtp_want(z, (const uint8_t *)"\xff", 1), 64);
	free(z);
}

/* ---------------------------------------------------------------- */
/* NULL transcripts, under every chunking. */

Test(zmtp_conn, null_push_handshake_emits_and_accepts_the_rfc_bytes)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_NULL_31 READY_PULL, &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.state, ZR_ZMTP_TRAFFIC);
	cr_assert_eq(r.nev, 1);
	READY_IS(&r.ev[0], ZR_PULL, NULL, PROP_ST("\x04", "PULL"));
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_PUSH);
	zt_run_free(&r);
}

Test(zmtp_conn, queues_ready_as_soon_as_the_peer_greeting_is_valid)
{
	struct zr_zmtp_config c = cfg_null(ZR_PULL);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	OUT_IS(z, G_NULL_31);
	cr_assert_eq(FEED(z, 5, G_NULL_31, &r), ZR_NEED_MORE);
	cr_assert_eq(r.nev, 0);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_HANDSHAKE);
	OUT_IS(z, READY_PULL);
	cr_assert_eq(FEED(z, 6, READY_PUSH, &r), ZR_NEED_MORE);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_TRAFFIC);
	cr_assert_eq(zr_zmtp_peer_type(z), ZR_PUSH);
	OUT_NONE(z);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, router_reports_a_dealer_identity_and_a_multipart_message)
{
	struct zr_zmtp_config c = cfg_null(ZR_ROUTER);
	struct zt_run r;

	/* DEALER READY with Identity "abc": 6 + 22 + (1 + 8 + 4 + 3) = 44 */
	TRANSCRIPT(c,
	           G_NULL_31 "\x04\x2c" "\x05" "READY" PROP_ST("\x06", "DEALER") "\x08" "Identity"
	                     "\x00\x00\x00\x03" "abc"
	                     "\x01\x03" "abc" "\x01\x00" "\x00\x05" "hello",
	           &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.nev, 4);
	READY_IS(&r.ev[0], ZR_DEALER, "abc",
	         PROP_ST("\x06", "DEALER") "\x08" "Identity" "\x00\x00\x00\x03" "abc");
	FRAME_IS(&r.ev[1], ZR_ZMTP_MORE, "abc");
	FRAME_IS(&r.ev[2], ZR_ZMTP_MORE, "");
	FRAME_IS(&r.ev[3], 0, "hello");
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_ROUTER);
	zt_run_free(&r);
}

Test(zmtp_conn, sends_its_routing_id_as_identity_in_ready)
{
	struct zr_zmtp_config c = cfg_null(ZR_DEALER);
	struct zt_run r;

	c.routing_id = (const uint8_t *)"peer-1";
	c.routing_id_len = 6;
	TRANSCRIPT(c, G_NULL_31 READY_ROUTER, &r);
	cr_assert_eq(r.nev, 1);
	READY_IS(&r.ev[0], ZR_ROUTER, "", PROP_ST("\x06", "ROUTER") PROP_ID_EMPTY);
	/* 6 + 22 + (1 + 8 + 4 + 6) = 47 */
	BYTES_IS(r.out, r.out_len,
	         G_NULL_31 "\x04\x2f" "\x05" "READY" PROP_ST("\x06", "DEALER") "\x08" "Identity"
	                   "\x00\x00\x00\x06" "peer-1");
	zt_run_free(&r);
}

Test(zmtp_conn, sends_an_empty_identity_for_req_as_libzmq_does)
{
	struct zr_zmtp_config c = cfg_null(ZR_REQ);
	struct zt_run r;

	TRANSCRIPT(c, G_NULL_31 READY_REP, &r);
	cr_assert_eq(r.nev, 1);
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_REQ);
	zt_run_free(&r);
}

Test(zmtp_conn, appends_application_properties_after_its_own)
{
	static const struct zr_zmtp_prop props[] = {
		{"X-Color", (const uint8_t *)"blue", 4},
		{"X-Empty", NULL, 0},
	};
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zt_run r;

	c.props = props;
	c.props_count = 2;
	/* 26 + (1 + 7 + 4 + 4) + (1 + 7 + 4) = 54 */
	TRANSCRIPT(c, G_NULL_31 READY_PULL, &r);
	BYTES_IS(r.out, r.out_len,
	         G_NULL_31 "\x04\x36" "\x05" "READY" PROP_ST("\x04", "PUSH") "\x07" "X-Color" "\x00\x00\x00\x04"
	                   "blue" "\x07" "X-Empty" "\x00\x00\x00\x00");
	zt_run_free(&r);
}

Test(zmtp_conn, zmtp_3_0_pub_takes_subscriptions_as_messages)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUB);
	struct zt_run r;

	c.minor = 0;
	TRANSCRIPT(c, G_NULL_30 READY_SUB "\x00\x02" "\x01" "A" "\x00\x01" "\x00", &r);
	cr_assert_eq(r.nev, 3);
	READY_IS(&r.ev[0], ZR_SUB, NULL, PROP_ST("\x03", "SUB"));
	FRAME_IS(&r.ev[1], 0, "\x01" "A");
	FRAME_IS(&r.ev[2], 0, "\x00");
	BYTES_IS(r.out, r.out_len, G_NULL_30 READY_PUB);
	zt_run_free(&r);
}

Test(zmtp_conn, traffic_transcript_answers_ping_and_reports_subscriptions)
{
	struct zr_zmtp_config c = cfg_null(ZR_XPUB);
	struct zt_run r;

	TRANSCRIPT(c,
	           G_NULL_31 READY_SUB
	           "\x04\x09" "\x04" "PING" "\x00\x00" "ab"
	           "\x04\x0d" "\x09" "SUBSCRIBE" "abc"
	           "\x04\x0a" "\x06" "CANCEL" "abc"
	           "\x04\x09" "\x04" "JOIN" "abcd"
	           "\x04\x05" "\x04" "PONG"
	           "\x04\x0a" "\x09" "SUBSCRIBE"
	           "\x00\x02" "hi",
	           &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.nev, 5);
	READY_IS(&r.ev[0], ZR_SUB, NULL, PROP_ST("\x03", "SUB"));
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_SUBSCRIBE);
	BYTES_IS(r.ev[1].data, r.ev[1].len, "abc");
	cr_assert_eq(r.ev[2].type, ZR_ZMTP_EV_CANCEL);
	BYTES_IS(r.ev[2].data, r.ev[2].len, "abc");
	cr_assert_eq(r.ev[3].type, ZR_ZMTP_EV_SUBSCRIBE);
	cr_assert_eq(r.ev[3].len, 0);
	FRAME_IS(&r.ev[4], 0, "hi");
	BYTES_IS(r.out, r.out_len,
	         G_NULL_31 "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "XPUB") "\x04\x07" "\x04" "PONG" "ab");
	zt_run_free(&r);
}

Test(zmtp_conn, accepts_libzmq_padding_and_lowercase_property_names)
{
	struct zr_zmtp_config c = cfg_null(ZR_PULL);
	struct zt_run r;

	TRANSCRIPT(c,
	           "\xff" "\0\0\0\0\0\0\0\x01" "\x7f" "\x03\x01" MECH_NULL "\x00" Z31
	           "\x04\x1a" "\x05" "READY" "\x0b" "socket-type" "\x00\x00\x00\x04" "PUSH",
	           &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.ev[0].peer_type, ZR_PUSH);
	zt_run_free(&r);
}

Test(zmtp_conn, accepts_uppercase_property_names_and_reports_the_identity)
{
	struct zr_zmtp_config c = cfg_null(ZR_ROUTER);
	struct zt_run r;

	TRANSCRIPT(c,
	           G_NULL_31 "\x04\x2a" "\x05" "READY" "\x0b" "SOCKET-TYPE" "\x00\x00\x00\x03" "REQ"
	                     "\x08" "IDENTITY" "\x00\x00\x00\x04" "req1",
	           &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.ev[0].peer_type, ZR_REQ);
	cr_assert(r.ev[0].has_identity);
	BYTES_IS(r.ev[0].identity, r.ev[0].identity_len, "req1");
	zt_run_free(&r);
}

Test(zmtp_conn, accepts_a_higher_version_and_speaks_its_own)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zt_run r;
	struct zr_zmtp *z = conn_new(&c, 0);

	TRANSCRIPT(c, GREETING("\x04\x07", MECH_NULL, "\x00") READY_PULL, &r);
	cr_assert_eq(r.nev, 1);
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_PUSH);
	zt_run_free(&r);
	memset(&r, 0, sizeof(r));
	FEED(z, 1, GREETING("\x04\x07", MECH_NULL, "\x00") READY_PULL, &r);
	cr_assert_eq(zr_zmtp_peer_minor(z), 1, "ZMTP 4.7 peer: we speak 3.1");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, delivers_ready_and_a_message_that_arrive_in_one_chunk)
{
	struct zr_zmtp_config c = cfg_null(ZR_PULL);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	OUT_IS(z, G_NULL_31);
	FEED(z, 1, G_NULL_31, &r);
	OUT_IS(z, READY_PULL);
	cr_assert_eq(FEED(z, 2, READY_PUSH "\x00\x03" "msg", &r), ZR_NEED_MORE);
	cr_assert_eq(r.nev, 2);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_READY);
	FRAME_IS(&r.ev[1], 0, "msg");
	zt_run_free(&r);
	free(z);
}

/* Direct placement at the connection level: after the body's first piece
 * the rest may be placed by the caller; it is traffic for the heartbeat and
 * comes out as the same frame event with data NULL. Before traffic, or with
 * unconsumed bytes in hand, there is nothing to place. */
Test(zmtp_conn, takes_a_body_rest_the_caller_placed)
{
	struct zr_zmtp_config c = cfg_null(ZR_PULL);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zr_zmtp_event ev;
	struct zt_run r = {0};
	uint8_t piece[] = "\x00\x0a" "abcd";
	size_t used;

	cr_assert_eq(zr_zmtp_body_left(z), 0, "before the greeting");
	FEED(z, 1, G_NULL_31, &r);
	FEED(z, 2, READY_PUSH, &r);
	cr_assert_eq(zr_zmtp_body_left(z), 0, "in traffic, no body begun");
	cr_assert_eq(zr_zmtp_feed_placed(z, 1, &ev, 3), -EINVAL);
	cr_assert_eq(zr_zmtp_feed(z, piece, 2, &used, &ev, 3), ZR_NEED_MORE);
	cr_assert_eq(used, 2);
	cr_assert_eq(zr_zmtp_body_left(z), 0, "a header alone: no piece handed out yet");
	cr_assert_eq(zr_zmtp_feed(z, piece + 2, 4, &used, &ev, 3), ZR_OK);
	cr_assert_eq(used, 4);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_FRAME);
	cr_assert_eq(ev.len, 4);
	cr_assert_eq(zr_zmtp_body_left(z), 6);
	cr_assert_eq(zr_zmtp_feed_placed(z, 7, &ev, 4), -EINVAL);
	cr_assert_eq(zr_zmtp_error(z), 0, "a caller's mistake does not fail the connection");
	cr_assert_eq(zr_zmtp_feed_placed(z, 6, &ev, 4), ZR_OK);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_FRAME);
	cr_assert_null(ev.data);
	cr_assert_eq(ev.len, 6);
	cr_assert_eq(ev.offset, 4);
	cr_assert_eq(ev.frame_size, 10);
	cr_assert_eq(ev.flags, ZR_ZMTP_FRAME_END);
	cr_assert_eq(zr_zmtp_body_left(z), 0);
	cr_assert_eq(FEED(z, 5, "\x00\x01" "z", &r), ZR_NEED_MORE);
	FRAME_IS(&r.ev[r.nev - 1], 0, "z");
	zt_run_free(&r);
	free(z);
}

/* ---------------------------------------------------------------- */
/* PLAIN transcripts. */

Test(zmtp_conn, plain_client_handshake_emits_hello_then_initiate)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_SERVER WELCOME READY_PULL "\x00\x01" "m", &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.state, ZR_ZMTP_TRAFFIC);
	cr_assert_eq(r.nev, 2);
	READY_IS(&r.ev[0], ZR_PULL, NULL, PROP_ST("\x04", "PULL"));
	FRAME_IS(&r.ev[1], 0, "m");
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PUSH);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_client_sends_hello_only_after_the_server_greeting)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	OUT_IS(z, G_PLAIN_31_CLIENT);
	FEED(z, 1, G_PLAIN_31_SERVER, &r);
	OUT_IS(z, HELLO_ADMIN_SECRET);
	FEED(z, 1, WELCOME, &r);
	OUT_IS(z, INITIATE_PUSH);
	cr_assert_eq(r.nev, 0);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_HANDSHAKE);
	FEED(z, 1, READY_PULL, &r);
	cr_assert_eq(r.nev, 1);
	OUT_NONE(z);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, plain_client_sends_empty_credentials)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.username = NULL;
	c.username_len = 0;
	c.password = NULL;
	c.password_len = 0;
	z = conn_new(&c, 0);
	OUT_IS(z, G_PLAIN_31_CLIENT);
	FEED(z, 1, G_PLAIN_31_SERVER, &r);
	OUT_IS(z, "\x04\x08" "\x05" "HELLO" "\x00" "\x00");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, plain_client_accepts_a_server_greeting_with_as_server_zero)
{
	/* libzmq's PLAIN server sends as-server 0. */
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_CLIENT WELCOME READY_PULL, &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.state, ZR_ZMTP_TRAFFIC);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_server_handshake_emits_welcome_then_ready)
{
	struct auth_seen a = {.status = 200};
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PUSH "\x00\x01" "m", &r);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.nev, 2);
	READY_IS(&r.ev[0], ZR_PUSH, NULL, PROP_ST("\x04", "PUSH"));
	FRAME_IS(&r.ev[1], 0, "m");
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_SERVER WELCOME READY_PULL);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_server_asks_its_authenticator_once_with_the_credentials)
{
	struct auth_seen a = {.status = 200};
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	FEED(z, 1, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET, &r);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.mechanism, ZR_MECH_PLAIN);
	cr_assert_str_eq(a.user, "admin");
	cr_assert_str_eq(a.pass, "secret");
	OUT_IS(z, G_PLAIN_31_SERVER WELCOME);
	FEED(z, 1, INITIATE_PUSH, &r);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(r.nev, 1);
	OUT_IS(z, READY_PULL);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, plain_server_without_authenticator_accepts_everyone)
{
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, NULL);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_CLIENT "\x04\x08" "\x05" "HELLO" "\x00" "\x00" INITIATE_PUSH, &r);
	cr_assert_eq(r.nev, 1);
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_SERVER WELCOME READY_PULL);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_server_refusal_sends_the_zap_status_as_error)
{
	struct auth_seen a = {.status = 400};
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PUSH "\x00\x01" "m", &r);
	cr_assert_eq(r.rc, -ZR_EAUTH);
	cr_assert_eq(r.nev, 0, "nothing delivered");
	cr_assert_eq(r.state, ZR_ZMTP_FAILED);
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_SERVER ERROR_400);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_server_sends_300_and_500_as_given)
{
	int statuses[] = {300, 500};

	for (int i = 0; i < 2; i++) {
		struct auth_seen a = {.status = statuses[i]};
		struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
		struct zr_zmtp *z = conn_new(&c, 0);
		struct zt_run r = {0};
		char want[] = G_PLAIN_31_SERVER "\x04\x0a" "\x05" "ERROR" "\x03" "?00";

		want[64 + 2 + 6 + 1] = (char)('0' + statuses[i] / 100);
		conn_feed(z, 1, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET, sizeof(G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET) - 1,
		          &r, __LINE__);
		cr_assert_eq(r.rc, -ZR_EAUTH);
		conn_out_is(z, want, sizeof(want) - 1, __LINE__);
		zt_run_free(&r);
		free(z);
	}
}

Test(zmtp_conn, plain_client_reports_the_server_error_and_fails)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_SERVER ERROR_400, &r);
	cr_assert_eq(r.rc, -ZR_EPEERERROR);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	BYTES_IS(r.ev[0].data, r.ev[0].len, "400");
	cr_assert_eq(r.state, ZR_ZMTP_FAILED);
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET);
	zt_run_free(&r);
}

Test(zmtp_conn, reports_a_peer_error_after_the_handshake)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_NULL_31 READY_PULL "\x04\x0a" "\x05" "ERROR" "\x03" "bye" "\x00\x01" "x", &r);
	cr_assert_eq(r.rc, -ZR_EPEERERROR);
	cr_assert_eq(r.nev, 2);
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_PEER_ERROR);
	BYTES_IS(r.ev[1].data, r.ev[1].len, "bye");
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_PUSH);
	zt_run_free(&r);
}

/* ---------------------------------------------------------------- */
/* Two of our codecs back to back. */

Test(zmtp_conn, null_dealer_and_router_handshake_and_exchange_multipart_messages)
{
	struct zr_zmtp_config cd = cfg_null(ZR_DEALER), cr = cfg_null(ZR_ROUTER);
	struct side d, rt;

	cd.routing_id = (const uint8_t *)"D1";
	cd.routing_id_len = 2;
	side_init(&d, &cd, 0);
	side_init(&rt, &cr, 0);
	link_pump(&d, &rt, 1);
	cr_assert_eq(zr_zmtp_state(d.z), ZR_ZMTP_TRAFFIC);
	cr_assert_eq(zr_zmtp_state(rt.z), ZR_ZMTP_TRAFFIC);
	cr_assert_eq(d.ev.nev, 1);
	cr_assert_eq(rt.ev.nev, 1);
	cr_assert_eq(d.ev.ev[0].peer_type, ZR_ROUTER);
	cr_assert_eq(rt.ev.ev[0].peer_type, ZR_DEALER);
	BYTES_IS(rt.ev.ev[0].identity, rt.ev.ev[0].identity_len, "D1");

	link_send(&d, &rt, "\x01\x00" "\x01\x03" "req" "\x00\x04" "body", 13);
	link_send(&rt, &d, "\x01\x00" "\x00\x05" "reply", 9);
	link_pump(&d, &rt, 2);
	cr_assert_eq(rt.ev.nev, 4);
	FRAME_IS(&rt.ev.ev[1], ZR_ZMTP_MORE, "");
	FRAME_IS(&rt.ev.ev[2], ZR_ZMTP_MORE, "req");
	FRAME_IS(&rt.ev.ev[3], 0, "body");
	cr_assert_eq(d.ev.nev, 3);
	FRAME_IS(&d.ev.ev[1], ZR_ZMTP_MORE, "");
	FRAME_IS(&d.ev.ev[2], 0, "reply");
	cr_assert_eq(zr_zmtp_error(d.z), 0);
	cr_assert_eq(zr_zmtp_error(rt.z), 0);
	side_fini(&d);
	side_fini(&rt);
}

Test(zmtp_conn, plain_client_and_server_handshake_back_to_back)
{
	struct auth_seen a = {.status = 200};
	struct zr_zmtp_config cc = cfg_plain_client(ZR_PUSH), cs = cfg_plain_server(ZR_PULL, &a);
	struct side c, s;

	side_init(&c, &cc, 0);
	side_init(&s, &cs, 0);
	link_pump(&c, &s, 1);
	cr_assert_eq(a.calls, 1);
	cr_assert_str_eq(a.user, "admin");
	cr_assert_str_eq(a.pass, "secret");
	cr_assert_eq(zr_zmtp_state(c.z), ZR_ZMTP_TRAFFIC);
	cr_assert_eq(zr_zmtp_state(s.z), ZR_ZMTP_TRAFFIC);
	cr_assert_eq(c.ev.nev, 1);
	cr_assert_eq(c.ev.ev[0].peer_type, ZR_PULL);
	cr_assert_eq(s.ev.nev, 1);
	cr_assert_eq(s.ev.ev[0].peer_type, ZR_PUSH);
	link_send(&c, &s, "\x01\x01" "a" "\x00\x01" "b", 6);
	link_pump(&c, &s, 2);
	cr_assert_eq(s.ev.nev, 3);
	FRAME_IS(&s.ev.ev[1], ZR_ZMTP_MORE, "a");
	FRAME_IS(&s.ev.ev[2], 0, "b");
	side_fini(&c);
	side_fini(&s);
}

Test(zmtp_conn, plain_refusal_reaches_the_client_as_peer_error_400_and_delivers_nothing)
{
	struct auth_seen a = {.status = 400};
	struct zr_zmtp_config cc = cfg_plain_client(ZR_PUSH), cs = cfg_plain_server(ZR_PULL, &a);
	struct side c, s;

	side_init(&c, &cc, 0);
	side_init(&s, &cs, 0);
	link_pump(&c, &s, 1);
	cr_assert_eq(a.calls, 1);
	cr_assert_str_eq(a.user, "admin");
	cr_assert_str_eq(a.pass, "secret");
	cr_assert_eq(zr_zmtp_error(s.z), -ZR_EAUTH);
	cr_assert_eq(s.ev.nev, 0);
	cr_assert_eq(zr_zmtp_error(c.z), -ZR_EPEERERROR);
	cr_assert_eq(c.ev.nev, 1);
	cr_assert_eq(c.ev.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	BYTES_IS(c.ev.ev[0].data, c.ev.ev[0].len, "400");
	cr_assert_eq(zr_zmtp_peer_type(c.z), -1);
	side_fini(&c);
	side_fini(&s);
}

Test(zmtp_conn, incompatible_types_fail_both_sides_with_nothing_delivered)
{
	struct zr_zmtp_config ca = cfg_null(ZR_PUSH), cb = cfg_null(ZR_PUB);
	struct side a, b;

	side_init(&a, &ca, 0);
	side_init(&b, &cb, 0);
	link_pump(&a, &b, 1);
	cr_assert_eq(zr_zmtp_error(a.z), -ZR_EINCOMPATIBLE);
	cr_assert_eq(zr_zmtp_error(b.z), -ZR_EINCOMPATIBLE);
	for (size_t i = 0; i < a.ev.nev; i++)
		cr_assert_eq(a.ev.ev[i].type, ZR_ZMTP_EV_PEER_ERROR);
	for (size_t i = 0; i < b.ev.nev; i++)
		cr_assert_eq(b.ev.ev[i].type, ZR_ZMTP_EV_PEER_ERROR);
	side_fini(&a);
	side_fini(&b);
}

/* ---------------------------------------------------------------- */
/* ERROR we emit. */

Test(zmtp_conn, queues_an_error_whose_reason_follows_the_rfc_grammar)
{
	/* RFC 23: error-reason = OCTET 0*255VCHAR, VCHAR = %x21-7E (RFC 5234). */
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0}, out;
	size_t off = 64 + sizeof(READY_PUSH) - 1, rlen;

	cr_assert_eq(FEED(z, 1, G_NULL_31 READY_PUB, &r), -ZR_EINCOMPATIBLE);
	out = conn_take_out(z);
	cr_assert_gt(out.out_len, off + 8, "no ERROR queued");
	BYTES_IS(out.out + off + 2, 6, "\x05" "ERROR");
	cr_assert_eq(out.out[off], 0x04);
	rlen = out.out[off + 8];
	cr_assert_eq(out.out[off + 1], 7 + rlen, "ERROR size");
	cr_assert_eq(out.out_len, off + 9 + rlen);
	for (size_t i = 0; i < rlen; i++) {
		uint8_t ch = out.out[off + 9 + i];

		cr_expect(ch >= 0x21 && ch <= 0x7e, "reason octet %zu is 0x%02x, not VCHAR (reason \"%.*s\")", i, ch,
		          (int)rlen, (const char *)out.out + off + 9);
	}
	zt_run_free(&out);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, abort_queues_error_with_the_given_reason_and_sticks)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	FEED(z, 1, G_NULL_31 READY_PULL, &r);
	OUT_IS(z, G_NULL_31 READY_PUSH);
	cr_assert_eq(zr_zmtp_abort(z, -ECONNRESET, "gone"), -ECONNRESET);
	OUT_IS(z, "\x04\x0b" "\x05" "ERROR" "\x04" "gone");
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_FAILED);
	cr_assert_eq(zr_zmtp_error(z), -ECONNRESET);
	cr_assert_eq(FEED(z, 2, "\x00\x01" "x", &r), -ECONNRESET);
	cr_assert_eq(zr_zmtp_tick(z, 100000), -ECONNRESET);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, abort_before_the_peer_greeting_queues_no_error)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);

	OUT_IS(z, G_NULL_31);
	cr_assert_eq(zr_zmtp_abort(z, -ECONNRESET, "gone"), -ECONNRESET);
	OUT_NONE(z);
	free(z);
}

/* ---------------------------------------------------------------- */
/* Heartbeats, TTL and the handshake deadline on a fake clock. */

#define PING_TTL0 "\x04\x07" "\x04" "PING" "\x00\x00"

/* A PUSH codec in traffic with a PULL peer of the given greeting, at t. */
static struct zr_zmtp *
ready_codec(struct zr_zmtp_config *c, const char *greeting, uint64_t t)
{
	struct zr_zmtp *z = conn_new(c, t);
	struct zt_run r = {0};

	conn_feed(z, t, greeting, 64, &r, __LINE__);
	FEED(z, t, READY_PULL, &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_TRAFFIC);
	zt_run_free(&r);
	r = conn_take_out(z);
	zt_run_free(&r);
	return z;
}

Test(zmtp_conn, sends_ping_every_heartbeat_interval_to_a_3_1_peer)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_timeout_ms = 10000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_deadline(z), 1000);
	cr_assert_eq(zr_zmtp_tick(z, 999), 0);
	OUT_NONE(z);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	OUT_IS(z, PING_TTL0);
	cr_assert_eq(zr_zmtp_tick(z, 1500), 0);
	OUT_NONE(z);
	FEED(z, 1600, "\x04\x05" "\x04" "PONG", &r);
	cr_assert_eq(r.nev, 0, "PONG gives no event");
	cr_assert_eq(zr_zmtp_tick(z, 2000), 0);
	OUT_IS(z, PING_TTL0);
	cr_assert_eq(zr_zmtp_tick(z, 3000), 0);
	OUT_IS(z, PING_TTL0);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, sends_its_ttl_in_tenths_of_a_second)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_ttl_ms = 2599; /* rounded down to 25 tenths */
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	OUT_IS(z, "\x04\x07" "\x04" "PING" "\x00\x19");
	free(z);
}

Test(zmtp_conn, sends_no_ping_to_a_3_0_peer)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.heartbeat_ivl_ms = 1000;
	z = ready_codec(&c, G_NULL_30, 0);
	cr_assert_eq(zr_zmtp_peer_minor(z), 0);
	for (uint64_t t = 500; t <= 10000; t += 500) {
		cr_assert_eq(zr_zmtp_tick(z, t), 0, "t=%" PRIu64, t);
		OUT_NONE(z);
	}
	cr_assert_eq(zr_zmtp_deadline(z), UINT64_MAX);
	free(z);
}

Test(zmtp_conn, sends_no_ping_without_a_heartbeat_interval)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);

	cr_assert_eq(zr_zmtp_deadline(z), UINT64_MAX);
	cr_assert_eq(zr_zmtp_tick(z, 1000000), 0);
	OUT_NONE(z);
	free(z);
}

Test(zmtp_conn, answers_ping_with_pong_echoing_the_context)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);
	struct zt_run r = {0};

	FEED(z, 10, "\x04\x09" "\x04" "PING" "\x00\x00" "ab", &r);
	cr_assert_eq(r.nev, 0);
	OUT_IS(z, "\x04\x07" "\x04" "PONG" "ab");
	FEED(z, 11, "\x04\x17" "\x04" "PING" "\x00\x00" "0123456789abcdef", &r);
	OUT_IS(z, "\x04\x15" "\x04" "PONG" "0123456789abcdef");
	FEED(z, 12, PING_TTL0, &r);
	OUT_IS(z, "\x04\x05" "\x04" "PONG");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, answers_a_burst_of_pings_with_one_pong_for_the_latest)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);
	struct zt_run r = {0};

	FEED(z, 10,
	     "\x04\x08" "\x04" "PING" "\x00\x00" "1"
	     "\x04\x09" "\x04" "PING" "\x00\x00" "22"
	     "\x04\x0a" "\x04" "PING" "\x00\x00" "333",
	     &r);
	FEED(z, 11, "\x04\x0b" "\x04" "PING" "\x00\x00" "4444", &r);
	OUT_IS(z, "\x04\x09" "\x04" "PONG" "4444");
	OUT_NONE(z);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, answers_pings_from_a_peer_that_announced_3_0)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_30, 0);
	struct zt_run r = {0};

	FEED(z, 10, "\x04\x08" "\x04" "PING" "\x00\x00" "x", &r);
	OUT_IS(z, "\x04\x06" "\x04" "PONG" "x");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, times_out_after_heartbeat_timeout_without_traffic)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_timeout_ms = 3000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0); /* PING, answer due by 4000 */
	cr_assert_eq(zr_zmtp_tick(z, 2000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 3000), 0);
	cr_assert_eq(zr_zmtp_deadline(z), 4000);
	cr_assert_eq(zr_zmtp_tick(z, 3999), 0);
	cr_assert_eq(zr_zmtp_tick(z, 4000), -ZR_EHEARTBEAT_TIMEOUT);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_FAILED);
	cr_assert_eq(zr_zmtp_tick(z, 4001), -ZR_EHEARTBEAT_TIMEOUT, "sticky");
	cr_assert_eq(FEED(z, 4002, "\x00\x01" "x", &r), -ZR_EHEARTBEAT_TIMEOUT);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, uses_the_heartbeat_interval_when_the_timeout_is_zero)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.heartbeat_ivl_ms = 1000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 1999), 0);
	cr_assert_eq(zr_zmtp_tick(z, 2000), -ZR_EHEARTBEAT_TIMEOUT);
	free(z);
}

Test(zmtp_conn, refreshes_liveness_on_any_inbound_traffic)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_timeout_ms = 3000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 2000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 3000), 0);
	FEED(z, 3500, "\x00\x01" "x", &r); /* a message, not a PONG */
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(zr_zmtp_tick(z, 4000), 0, "traffic at 3500 cancels the 4000 deadline");
	cr_assert_eq(zr_zmtp_tick(z, 5000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 6000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 6999), 0);
	cr_assert_eq(zr_zmtp_tick(z, 7000), -ZR_EHEARTBEAT_TIMEOUT, "PING at 4000 unanswered");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, honours_the_ttl_of_the_peer_ping)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);
	struct zt_run r = {0};

	FEED(z, 100, "\x04\x07" "\x04" "PING" "\x00\x14", &r); /* TTL 2.0 s */
	cr_assert_eq(zr_zmtp_deadline(z), 2100);
	cr_assert_eq(zr_zmtp_tick(z, 1500), 0);
	FEED(z, 1500, "\x00\x01" "x", &r);
	cr_assert_eq(zr_zmtp_deadline(z), 3500);
	cr_assert_eq(zr_zmtp_tick(z, 3499), 0);
	cr_assert_eq(zr_zmtp_tick(z, 3500), -ZR_EHEARTBEAT_TIMEOUT);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, fails_the_handshake_at_its_deadline)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.handshake_ivl_ms = 5000;
	z = conn_new(&c, 100);
	cr_assert_eq(zr_zmtp_deadline(z), 5100);
	cr_assert_eq(zr_zmtp_tick(z, 5099), 0);
	FEED(z, 200, G_NULL_31, &r); /* greeting done, READY still missing */
	cr_assert_eq(zr_zmtp_deadline(z), 5100);
	cr_assert_eq(zr_zmtp_tick(z, 5099), 0);
	cr_assert_eq(zr_zmtp_tick(z, 5100), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_FAILED);
	cr_assert_eq(zr_zmtp_error(z), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_eq(FEED(z, 5200, READY_PULL, &r), -ZR_EHANDSHAKE_TIMEOUT);
	cr_assert_eq(r.nev, 0);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, fails_a_silent_peer_at_the_handshake_deadline)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.handshake_ivl_ms = 30000;
	z = conn_new(&c, 0);
	cr_assert_eq(zr_zmtp_tick(z, 29999), 0);
	cr_assert_eq(zr_zmtp_tick(z, 30000), -ZR_EHANDSHAKE_TIMEOUT);
	free(z);
}

Test(zmtp_conn, drops_the_handshake_deadline_once_ready)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.handshake_ivl_ms = 5000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_deadline(z), UINT64_MAX);
	cr_assert_eq(zr_zmtp_tick(z, 100000), 0);
	free(z);
}

Test(zmtp_conn, has_no_handshake_deadline_when_the_interval_is_zero)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.handshake_ivl_ms = 0;
	z = conn_new(&c, 0);
	cr_assert_eq(zr_zmtp_deadline(z), UINT64_MAX);
	cr_assert_eq(zr_zmtp_tick(z, UINT64_MAX - 1), 0);
	free(z);
}

/* ---------------------------------------------------------------- */
/* Subscriptions and versions. */

Test(zmtp_conn, ignores_unknown_commands_after_the_handshake)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);
	struct zt_run r = {0};

	cr_assert_eq(FEED(z, 1, "\x04\x09" "\x04" "JOIN" "abcd" "\x04\x06" "\x05" "LEAVE" "\x00\x01" "m", &r),
	             ZR_NEED_MORE);
	cr_assert_eq(r.nev, 1);
	FRAME_IS(&r.ev[0], 0, "m");
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_TRAFFIC);
	OUT_NONE(z);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, reports_subscribe_and_cancel_commands)
{
	struct zr_zmtp_config c = cfg_null(ZR_XPUB);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	FEED(z, 1, G_NULL_31 READY_SUB "\x04\x0c" "\x09" "SUBSCRIBE" "\x00\xff" "\x04\x07" "\x06" "CANCEL",
	     &r);
	cr_assert_eq(r.nev, 3);
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_SUBSCRIBE);
	BYTES_IS(r.ev[1].data, r.ev[1].len, "\x00\xff");
	cr_assert_eq(r.ev[2].type, ZR_ZMTP_EV_CANCEL);
	cr_assert_eq(r.ev[2].len, 0);
	zt_run_free(&r);
	free(z);
}

static uint8_t
minor_with(uint8_t ours, const char *greeting)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	uint8_t m;

	c.minor = ours;
	z = ready_codec(&c, greeting, 0);
	m = zr_zmtp_peer_minor(z);
	free(z);
	return m;
}

Test(zmtp_conn, negotiates_the_lower_minor_for_subscriptions)
{
	uint8_t out[ZR_ZMTP_SUB_PREFIX_MAX];
	int n;

	cr_assert_eq(minor_with(1, G_NULL_31), 1);
	cr_assert_eq(minor_with(1, G_NULL_30), 0);
	cr_assert_eq(minor_with(0, G_NULL_31), 0);
	cr_assert_eq(minor_with(1, GREETING("\x03\x09", MECH_NULL, "\x00")), 1);

	n = zr_zmtp_sub_prefix(out, minor_with(1, G_NULL_31), true, 1);
	zt_assert_bytes("3.1 SUBSCRIBE", out, (size_t)n, "\x04\x0b" "\x09" "SUBSCRIBE", 12, __LINE__);
	n = zr_zmtp_sub_prefix(out, minor_with(1, G_NULL_30), true, 1);
	zt_assert_bytes("3.0 subscribe", out, (size_t)n, "\x00\x02" "\x01", 3, __LINE__);
}

Test(zmtp_conn, reports_the_peer_type_once_ready)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};

	cr_assert_eq(zr_zmtp_peer_type(z), -1);
	FEED(z, 1, G_NULL_31, &r);
	cr_assert_eq(zr_zmtp_peer_type(z), -1);
	FEED(z, 1, READY_PULL, &r);
	cr_assert_eq(zr_zmtp_peer_type(z), ZR_PULL);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, raises_the_command_limit_after_the_handshake)
{
	struct zr_zmtp_config c = cfg_null(ZR_XPUB);
	struct zr_zmtp *z;
	struct zt_run r = {0};
	uint8_t sub[9 + 10 + 600];

	c.max_handshake_cmd = 64;
	c.max_cmd_size = 1024;
	z = conn_new(&c, 0);
	FEED(z, 1, G_NULL_31 READY_SUB, &r);
	/* SUBSCRIBE with a 600-octet topic: body 610 = 0x262 */
	memcpy(sub, "\x06" "\0\0\0\0\0\0\x02\x62" "\x09" "SUBSCRIBE", 19);
	memset(sub + 19, 't', 600);
	conn_feed(z, 2, sub, sizeof(sub), &r, __LINE__);
	cr_assert_eq(r.rc, ZR_NEED_MORE);
	cr_assert_eq(r.nev, 2);
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_SUBSCRIBE);
	cr_assert_eq(r.ev[1].len, 600);
	zt_run_free(&r);
	free(z);
}

/* ---------------------------------------------------------------- */
/* Configuration. */

Test(zmtp_conn, fills_the_documented_defaults)
{
	struct zr_zmtp_config c;

	memset(&c, ZT_JUNK, sizeof(c));
	zr_zmtp_config_default(&c, ZR_DEALER);
	cr_assert_eq(c.socket_type, ZR_DEALER);
	cr_assert_eq(c.mechanism, ZR_MECH_NULL);
	cr_assert_eq(c.as_server, false);
	cr_assert_eq(c.minor, 1);
	cr_assert_eq(c.routing_id_len, 0);
	cr_assert_eq(c.props_count, 0);
	cr_assert_null(c.auth);
	cr_assert_eq(c.max_msg_size, 64u * 1024u * 1024u);
	cr_assert_eq(c.max_cmd_size, 64u * 1024u);
	cr_assert_eq(c.max_handshake_cmd, 8u * 1024u);
	cr_assert_eq(c.handshake_ivl_ms, 30000);
	cr_assert_eq(c.heartbeat_ivl_ms, 0);
	cr_assert_eq(c.heartbeat_ttl_ms, 0);
	cr_assert_eq(c.heartbeat_timeout_ms, 0);
}

static int
init_with(struct zr_zmtp_config *c)
{
	struct zr_zmtp z;

	memset(&z, ZT_JUNK, sizeof(z));
	return zr_zmtp_init(&z, c, 0);
}

Test(zmtp_conn, refuses_bad_configurations)
{
	static uint8_t big[300];
	static const struct zr_zmtp_prop bad_prop[] = {{"X Bad", NULL, 0}};
	static const struct zr_zmtp_prop empty_prop[] = {{"", NULL, 0}};
	struct zr_zmtp_config c;

	c = cfg_null(ZR_SOCKTYPE_COUNT);
	cr_assert_eq(init_with(&c), -EINVAL, "unknown socket type");
	c = cfg_null(-1);
	cr_assert_eq(init_with(&c), -EINVAL, "negative socket type");
	c = cfg_null(ZR_PUSH);
	c.mechanism = 7;
	cr_assert_eq(init_with(&c), -EINVAL, "unknown mechanism");
	c = cfg_null(ZR_PUSH);
	c.mechanism = ZR_MECH_CURVE;
	cr_assert_eq(init_with(&c), -EINVAL, "CURVE without keys");
	c = cfg_null(ZR_PUSH);
	c.minor = 2;
	cr_assert_eq(init_with(&c), -EINVAL, "minor 2");
	c = cfg_null(ZR_DEALER);
	c.routing_id = big;
	c.routing_id_len = 256;
	cr_assert_eq(init_with(&c), -EINVAL, "identity 256");
	c = cfg_plain_client(ZR_PUSH);
	c.username = big;
	c.username_len = 256;
	cr_assert_eq(init_with(&c), -EINVAL, "username 256");
	c = cfg_plain_client(ZR_PUSH);
	c.password = big;
	c.password_len = 256;
	cr_assert_eq(init_with(&c), -EINVAL, "password 256");
	c = cfg_null(ZR_PUSH);
	c.props = bad_prop;
	c.props_count = 1;
	cr_assert_eq(init_with(&c), -EINVAL, "property name with a space");
	c.props = empty_prop;
	cr_assert_eq(init_with(&c), -EINVAL, "empty property name");
}

Test(zmtp_conn, accepts_the_largest_identity_and_credentials)
{
	static uint8_t big[255];
	struct zr_zmtp_config c = cfg_null(ZR_DEALER);

	c.routing_id = big;
	c.routing_id_len = 255;
	cr_assert_eq(init_with(&c), 0);
	c = cfg_plain_client(ZR_PUSH);
	c.username = big;
	c.username_len = 255;
	c.password = big;
	c.password_len = 255;
	cr_assert_eq(init_with(&c), 0);
}

Test(zmtp_conn, refuses_metadata_too_large_for_its_output_buffer)
{
	static uint8_t big[ZR_ZMTP_OUT_MAX];
	struct zr_zmtp_prop p = {"X-Big", big, sizeof(big)};
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);

	c.props = &p;
	c.props_count = 1;
	cr_assert_eq(init_with(&c), -EMSGSIZE);
}

Test(zmtp_conn, treats_zero_length_input_as_a_no_op)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zr_zmtp_event ev;
	size_t used = 99;

	uint8_t none[1] = {0};

	cr_assert_eq(zr_zmtp_feed(z, none, 0, &used, &ev, 1), ZR_NEED_MORE);
	cr_assert_eq(used, 0);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_GREETING);
	cr_assert_eq(zr_zmtp_error(z), 0);
	free(z);
}

Test(zmtp_conn, sends_no_ping_before_the_handshake_completes)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 100;
	c.handshake_ivl_ms = 0;
	z = conn_new(&c, 0);
	OUT_IS(z, G_NULL_31);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	OUT_NONE(z);
	FEED(z, 1000, G_NULL_31, &r);
	OUT_IS(z, READY_PUSH);
	cr_assert_eq(zr_zmtp_tick(z, 2000), 0);
	OUT_NONE(z);
	FEED(z, 2000, READY_PULL, &r);
	cr_assert_eq(zr_zmtp_deadline(z), 2100, "first PING one interval after READY");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, caps_the_ttl_it_sends_at_the_field_maximum)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_ttl_ms = 10000000; /* 100000 tenths: more than 16 bits */
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	OUT_IS(z, "\x04\x07" "\x04" "PING" "\xff\xff");
	free(z);
}

Test(zmtp_conn, answers_a_ping_and_sends_its_own_in_one_output)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 1000;
	z = ready_codec(&c, G_NULL_31, 0);
	FEED(z, 900, "\x04\x08" "\x04" "PING" "\x00\x00" "q", &r);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	OUT_IS(z, "\x04\x06" "\x04" "PONG" "q" PING_TTL0);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, accepts_the_3_1_subscribe_command_from_a_3_0_peer)
{
	struct zr_zmtp_config c = cfg_null(ZR_XPUB);
	struct zt_run r;

	TRANSCRIPT(c, G_NULL_30 READY_SUB "\x04\x0b" "\x09" "SUBSCRIBE" "t", &r);
	cr_assert_eq(r.nev, 2);
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_SUBSCRIBE);
	BYTES_IS(r.ev[1].data, r.ev[1].len, "t");
	zt_run_free(&r);
}

Test(zmtp_conn, keeps_output_order_across_partial_acknowledgements)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct zt_run r = {0};
	const uint8_t *p;
	size_t n;

	n = zr_zmtp_out(z, &p);
	cr_assert_eq(n, 64);
	zr_zmtp_out_ack(z, 30);
	FEED(z, 1, G_NULL_31 READY_PULL "\x04\x08" "\x04" "PING" "\x00\x00" "z", &r);
	{
		static const char rest[] = READY_PUSH "\x04\x06" "\x04" "PONG" "z";
		uint8_t want[34 + sizeof(rest) - 1];

		memcpy(want, &G_NULL_31[30], 34);
		memcpy(want + 34, rest, sizeof(rest) - 1);
		conn_out_is(z, want, sizeof(want), __LINE__);
	}
	zt_run_free(&r);
	free(z);
}

/* libzmq 4.3 writes its PLAIN ERROR from the C literal "\x05ERROR", where
 * "\x05E" is one hex escape: the body is 5E 'RROR', reason length, reason.
 * The codec header says it reads exactly that form as ERROR, in the PLAIN
 * handshake only. */
#define LIBZMQ_PLAIN_ERROR_400 "\x04\x09" "\x5e" "RROR" "\x03" "400"

Test(zmtp_conn, reads_libzmq_malformed_plain_error_as_the_refusal)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(c, G_PLAIN_31_SERVER LIBZMQ_PLAIN_ERROR_400, &r);
	cr_assert_eq(r.rc, -ZR_EPEERERROR);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_PEER_ERROR);
	BYTES_IS(r.ev[0].data, r.ev[0].len, "400");
	BYTES_IS(r.out, r.out_len, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET);
	zt_run_free(&r);
}

Test(zmtp_conn, reads_libzmq_malformed_error_only_in_the_plain_handshake)
{
	struct zr_zmtp_config n = cfg_null(ZR_PUSH), c = cfg_plain_client(ZR_PUSH);
	struct zt_run r;

	TRANSCRIPT(n, G_NULL_31 LIBZMQ_PLAIN_ERROR_400, &r);
	cr_assert_eq(r.rc, -ZR_ECMDNAME, "NULL handshake: %d", r.rc);
	cr_assert_eq(r.nev, 0);
	zt_run_free(&r);
	TRANSCRIPT(c, G_PLAIN_31_SERVER WELCOME READY_PULL LIBZMQ_PLAIN_ERROR_400, &r);
	cr_assert_eq(r.rc, -ZR_ECMDNAME, "PLAIN traffic: %d", r.rc);
	cr_assert_eq(r.nev, 1);
	zt_run_free(&r);
	/* The reason length must match the body exactly. */
	TRANSCRIPT(c, G_PLAIN_31_SERVER "\x04\x09" "\x5e" "RROR" "\x04" "400", &r);
	cr_assert_eq(r.rc, -ZR_ECMDNAME);
	cr_assert_eq(r.nev, 0);
	zt_run_free(&r);
}

Test(zmtp_conn, sends_abort_reasons_as_vchar)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);

	struct zt_run out;

	cr_assert_eq(zr_zmtp_abort(z, -EPROTO, "a b\tc"), -EPROTO);
	out = conn_take_out(z);
	/* RFC 23 error-reason is VCHAR only; how SP and HT are replaced is the
	 * codec's choice, so only the grammar and the kept octets are checked. */
	cr_assert_eq(out.out_len, 14);
	BYTES_IS(out.out, 9, "\x04\x0c" "\x05" "ERROR" "\x05");
	cr_assert_eq(out.out[9], 'a');
	cr_assert_eq(out.out[11], 'b');
	cr_assert_eq(out.out[13], 'c');
	for (size_t i = 9; i < 14; i++)
		cr_assert(out.out[i] >= 0x21 && out.out[i] <= 0x7e, "octet %zu is 0x%02x", i, out.out[i]);
	zt_run_free(&out);
	free(z);
}

Test(zmtp_conn, still_queues_error_after_many_pings_polled_but_not_acknowledged)
{
	/* A caller whose socket is full polls zr_zmtp_out without acknowledging
	 * anything while the peer keeps pinging; a later abort must still queue
	 * its ERROR (init promises appending never fails). */
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z = ready_codec(&c, G_NULL_31, 0);
	struct zt_run r = {0}, out;
	static const char err[] = "\x04\x0b" "\x05" "ERROR" "\x04" "full";
	const uint8_t *p;
	size_t n = 0;

	for (int i = 0; i < 300; i++) {
		FEED(z, (uint64_t)i, PING_TTL0, &r);
		n = zr_zmtp_out(z, &p);
		cr_assert_leq(n, ZR_ZMTP_OUT_MAX);
	}
	cr_assert_eq(zr_zmtp_abort(z, -EPROTO, "full"), -EPROTO);
	out = conn_take_out(z);
	cr_assert_geq(out.out_len, sizeof(err) - 1);
	zt_assert_bytes("tail of the output", out.out + out.out_len - (sizeof(err) - 1), sizeof(err) - 1, err,
	                sizeof(err) - 1, __LINE__);
	zt_run_free(&out);
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, sends_no_identity_for_types_libzmq_sends_none_for)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zt_run r;

	c.routing_id = (const uint8_t *)"id";
	c.routing_id_len = 2;
	TRANSCRIPT(c, G_NULL_31 READY_PULL, &r);
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_PUSH);
	zt_run_free(&r);
}

Test(zmtp_conn, plain_dealer_client_sends_its_identity_in_initiate)
{
	struct zr_zmtp_config c = cfg_plain_client(ZR_DEALER);
	struct zt_run r;

	c.routing_id = (const uint8_t *)"D7";
	c.routing_id_len = 2;
	/* INITIATE: 1 + 8 + (1 + 11 + 4 + 6) + (1 + 8 + 4 + 2) = 46 */
	TRANSCRIPT(c, G_PLAIN_31_SERVER WELCOME READY_ROUTER, &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(r.ev[0].peer_type, ZR_ROUTER);
	BYTES_IS(r.out, r.out_len,
	         G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET "\x04\x2e" "\x08" "INITIATE" PROP_ST("\x06", "DEALER")
	                           "\x08" "Identity" "\x00\x00\x00\x02" "D7");
	zt_run_free(&r);
}

Test(zmtp_conn, touch_counts_as_traffic_for_heartbeat_and_ttl)
{
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;
	struct zt_run r = {0};

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_timeout_ms = 3000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0); /* PING, answer due by 4000 */
	zr_zmtp_touch(z, 3900);
	cr_assert_eq(zr_zmtp_tick(z, 4000), 0, "touch at 3900 is traffic");
	FEED(z, 4100, "\x04\x07" "\x04" "PING" "\x00\x0a", &r); /* peer TTL 1 s */
	zr_zmtp_touch(z, 5000);
	cr_assert_eq(zr_zmtp_tick(z, 5999), 0, "TTL counts from the touch at 5000");
	cr_assert_eq(zr_zmtp_tick(z, 6000), -ZR_EHEARTBEAT_TIMEOUT, "and ends 1 s after it");
	zt_run_free(&r);
	free(z);
}

Test(zmtp_conn, times_out_without_touch_or_traffic)
{
	/* The control case for the test above. */
	struct zr_zmtp_config c = cfg_null(ZR_PUSH);
	struct zr_zmtp *z;

	c.heartbeat_ivl_ms = 1000;
	c.heartbeat_timeout_ms = 3000;
	z = ready_codec(&c, G_NULL_31, 0);
	cr_assert_eq(zr_zmtp_tick(z, 1000), 0);
	cr_assert_eq(zr_zmtp_tick(z, 4000), -ZR_EHEARTBEAT_TIMEOUT);
	free(z);
}

/* ---------------------------------------------------------------- */
/* The frames-per-message limit: 0 in the configuration is the default. */

Test(zmtp_conn, max_msg_frames_0_means_65536)
{
	static const uint8_t hs[] = G_NULL_31 READY_PUSH;
	struct zr_zmtp_config c = cfg_null(ZR_PULL);
	struct zr_zmtp_event ev;
	struct zr_zmtp *z;
	size_t n = 2 * 65537, off = 0, used, frames = 0;
	uint8_t *in = malloc(sizeof hs - 1 + n);
	int rc;

	cr_assert_not_null(in);
	c.max_msg_frames = 0;
	z = conn_new(&c, 0);
	memcpy(in, hs, sizeof hs - 1);
	for (size_t i = 0; i < n; i += 2) {
		in[sizeof hs - 1 + i] = ZR_ZMTP_MORE;
		in[sizeof hs - 1 + i + 1] = 0;
	}
	n += sizeof hs - 1;
	while ((rc = zr_zmtp_feed(z, in + off, n - off, &used, &ev, 0)) == ZR_OK) {
		off += used;
		frames += ev.type == ZR_ZMTP_EV_FRAME;
	}
	cr_assert_eq(rc, -ZR_ETOOMANYFRAMES, "%d (%s)", rc, zr_strerror(rc));
	cr_assert_eq(frames, 65536);
	cr_assert_eq(zr_zmtp_state(z), ZR_ZMTP_FAILED);
	free(in);
	free(z);
}
/* clang-format on */

/* ---------------------------------------------------------------- */
/* An authenticator that answers later (ZR_ZMTP_AUTH_PENDING). */

struct ev_rec {
	int type;
	char user_id[ZR_ZMTP_USER_ID_MAX + 1];
};

struct small_run {
	struct ev_rec ev[8];
	size_t nev;
};
/* Feeds buf[0..*len) until the codec needs more or fails, keeping the
 * unconsumed rest at buf's start; events into r. Returns the last result. */
static int
feed_keep(struct zr_zmtp *z, uint8_t *buf, size_t *len, struct small_run *r)
{
	for (;;) {
		struct zr_zmtp_event ev;
		size_t used = 0;
		int rc = zr_zmtp_feed(z, buf, *len, &used, &ev, 5);

		cr_assert_leq(used, *len);
		memmove(buf, buf + used, *len - used);
		*len -= used;
		if (rc != ZR_OK)
			return rc;
		cr_assert_lt(r->nev, 8);
		r->ev[r->nev].type = ev.type;
		if (ev.type == ZR_ZMTP_EV_READY)
			snprintf(r->ev[r->nev].user_id, sizeof r->ev[r->nev].user_id, "%s",
			         ev.user_id);
		r->nev++;
	}
}

#define LIT(buf, len, lit)                             \
	do {                                           \
		memcpy((buf), (lit), sizeof(lit) - 1); \
		(len) = sizeof(lit) - 1;               \
	} while (0)

Test(zmtp_conn, plain_server_pending_answer_parks_after_hello_and_resumes_on_reply)
{
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct small_run r = {0};
	uint8_t buf[512];
	size_t len;

	LIT(buf, len,
	    G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET INITIATE_PUSH "\x00\x01"
	                                                       "m");
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE);
	cr_assert_eq(a.calls, 1);
	cr_assert_str_eq(a.user, "admin");
	cr_assert(zr_zmtp_auth_pending(z));
	cr_assert_eq(len,
	             sizeof(INITIATE_PUSH "\x00\x01"
	                                  "m") -
	                     1,
	             "INITIATE on is left");
	cr_assert_eq(r.nev, 0);
	OUT_IS(z, G_PLAIN_31_SERVER); /* no WELCOME yet */
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE, "parked: takes nothing");
	cr_assert_eq(len, sizeof(INITIATE_PUSH "\x00\x01"
	                                       "m") -
	                          1);
	cr_assert_eq(zr_zmtp_auth_reply(z, 200, "admin-id", NULL), 0);
	OUT_IS(z, WELCOME);
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE);
	cr_assert_eq(len, 0);
	cr_assert_eq(r.nev, 2);
	cr_assert_eq(r.ev[0].type, ZR_ZMTP_EV_READY);
	cr_assert_str_eq(r.ev[0].user_id, "admin-id");
	cr_assert_eq(r.ev[1].type, ZR_ZMTP_EV_FRAME);
	OUT_IS(z, READY_PULL);
	cr_assert_eq(a.calls, 1, "asked once");
	cr_assert_eq(zr_zmtp_auth_reply(z, 200, NULL, NULL), -EINVAL, "nothing awaited");
	free(z);
}

Test(zmtp_conn, plain_server_pending_refusal_sends_error_and_fails)
{
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	struct zr_zmtp_config c = cfg_plain_server(ZR_PULL, &a);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct small_run r = {0};
	const char *text;
	uint8_t buf[512];
	size_t len;

	LIT(buf, len, G_PLAIN_31_CLIENT HELLO_ADMIN_SECRET);
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE);
	cr_assert(zr_zmtp_auth_pending(z));
	cr_assert_eq(zr_zmtp_auth_reply(z, 400, "ignored", "bad password"), -ZR_EAUTH);
	cr_assert_eq(zr_zmtp_error(z), -ZR_EAUTH);
	cr_assert_eq(zr_zmtp_auth_status(z, &text), 400);
	cr_assert_str_eq(text, "bad password");
	OUT_IS(z, G_PLAIN_31_SERVER ERROR_400);
	free(z);
}

static struct zr_zmtp_config
cfg_null_auth(int type, struct auth_seen *a)
{
	struct zr_zmtp_config c = cfg_null(type);

	c.auth = auth_record_cb;
	c.auth_arg = a;
	c.auth_null = true;
	return c;
}

Test(zmtp_conn, null_with_auth_null_asks_before_its_ready_goes_out)
{
	struct auth_seen a = {.status = 200};
	struct zr_zmtp_config c = cfg_null_auth(ZR_PULL, &a);
	struct zt_run r;

	TRANSCRIPT(c,
	           G_NULL_31 READY_PUSH "\x00\x01"
	                                "m",
	           &r);
	cr_assert_eq(r.nev, 2);
	BYTES_IS(r.out, r.out_len, G_NULL_31 READY_PULL);
	zt_run_free(&r);
	cr_assert_gt(a.calls, 0);
	cr_assert_eq(a.mechanism, ZR_MECH_NULL);

	a.status = 400;
	TRANSCRIPT(c,
	           G_NULL_31 READY_PUSH "\x00\x01"
	                                "m",
	           &r);
	cr_assert_eq(r.rc, -ZR_EAUTH);
	cr_assert_eq(r.nev, 0, "a refused NULL peer gets nothing, not even our READY");
	BYTES_IS(r.out, r.out_len, G_NULL_31 ERROR_400);
	zt_run_free(&r);
}

Test(zmtp_conn, null_without_auth_null_never_asks)
{
	struct auth_seen a = {.status = 400};
	struct zr_zmtp_config c = cfg_null_auth(ZR_PULL, &a);
	struct zt_run r;

	c.auth_null = false;
	TRANSCRIPT(c, G_NULL_31 READY_PUSH, &r);
	cr_assert_eq(r.nev, 1);
	cr_assert_eq(a.calls, 0);
	zt_run_free(&r);
}

Test(zmtp_conn, null_pending_answer_holds_ready_until_the_reply)
{
	struct auth_seen a = {.status = ZR_ZMTP_AUTH_PENDING};
	struct zr_zmtp_config c = cfg_null_auth(ZR_PULL, &a);
	struct zr_zmtp *z = conn_new(&c, 0);
	struct small_run r = {0};
	uint8_t buf[512];
	size_t len;

	LIT(buf, len,
	    G_NULL_31 READY_PUSH "\x00\x01"
	                         "m");
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE);
	cr_assert(zr_zmtp_auth_pending(z));
	cr_assert_eq(len,
	             sizeof(READY_PUSH "\x00\x01"
	                               "m") -
	                     1,
	             "the peer's READY waits");
	OUT_IS(z, G_NULL_31);
	cr_assert_eq(zr_zmtp_auth_reply(z, 200, "anon", NULL), 0);
	OUT_IS(z, READY_PULL);
	cr_assert_eq(feed_keep(z, buf, &len, &r), ZR_NEED_MORE);
	cr_assert_eq(r.nev, 2);
	cr_assert_str_eq(r.ev[0].user_id, "anon");
	free(z);
}
