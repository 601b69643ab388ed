/*
 * The connection codec: greeting -> mechanism handshake -> traffic (RFC 23,
 * RFC 37, PLAIN RFC 24, CURVE RFC 26 through curve.h), with heartbeats and
 * the handshake deadline.
 *
 * One state enum (enum zr_zmtp_state) advanced in zr_zmtp_feed's switch, a
 * step enum inside the handshake (enum zr__zmtp_step, in zmtp.h because the
 * struct is caller storage), sticky errors; switches over them name every
 * value. The codec's own output (greeting, handshake commands, ERROR, PING,
 * PONG) goes into the inline buffer z->out; its size is checked at init
 * against the worst case this configuration can queue, so appending never
 * fails later (conn_out_reserve guards it).
 *
 * Decisions (checklist B1-B5, B7):
 *  - Our greeting goes out whole at init (no greeting dance needed: we never
 *    wait for the peer's octets before writing ours, so no deadlock with
 *    libzmq's 10/11/64 pattern).
 *  - NULL: READY is queued as soon as the peer's greeting is validated, never
 *    waiting for the peer's READY; a peer's READY may arrive before ours left.
 *  - The peer's Socket-Type must be present (libzmq always sends it, and a
 *    READY without it cannot be checked against RFC 23's table), a name
 *    spelled exactly, and compatible with ours; otherwise ERROR and close.
 *  - Identity: any 0..255 octets are reported; replacing ids that start with
 *    0x00 (RFC 37 reserves them) is the ROUTER's business, not the codec's.
 *  - PING: answered in any traffic state, also from peers that announced 3.0
 *    (libzmq sends them regardless); we send PING only to 3.1 peers. One PONG
 *    answers a burst (the latest context). A PING during the handshake is
 *    unexpected (B5.41).
 *  - Unknown commands after the handshake are ignored (libzmq drops them);
 *    during the handshake they are errors.
 *
 * CURVE (checklist B8), as libzmq 4.3 puts it on the wire:
 *  - Handshake commands are command frames; curve.c checks and writes them.
 *  - In traffic every frame is a MESSAGE in a plain data frame (flags 0x00):
 *    MORE travels inside the box (0x01), and so do our PING, PONG,
 *    SUBSCRIBE and CANCEL, as commands flagged 0x02. A MESSAGE in a command
 *    frame (RFC 26's form) is accepted too; anything else in traffic, a wire
 *    MORE flag included, closes the connection without ERROR.
 *  - The server answers a failed handshake with ERROR (a zring client can
 *    then say which check failed); the client just closes, as libzmq's does.
 *    Refused by the authenticator: ERROR with the bare status ("400").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include <zring/zmtp.h>

#include "common/base.h"
#include "curve.h"
#include "dec.h"
#include "wire.h"

_Static_assert(sizeof(struct zr__curve) <= ZR_ZMTP_MECH_STATE_MAX,
               "ZR_ZMTP_MECH_STATE_MAX too small for the CURVE state");
_Static_assert(_Alignof(struct zr__curve) <= _Alignof(uint64_t),
               "the CURVE state needs more alignment than struct zr_zmtp gives");

#define CONN_NEVER UINT64_MAX
/* Internal return: the authenticator's answer is pending and the frame just
 * decoded (a CURVE INITIATE) stays unconsumed until it comes. */
#define CONN_PARKED 2
#define CONN_ERROR_REASON_MAX 96
/* ERROR frame: header 2, name 6, length 1, reason. */
#define CONN_ERROR_CMD_MAX (2 + 6 + 1 + CONN_ERROR_REASON_MAX)
/* PING: header 2, name 5, TTL 2 (we send no context). PONG: 2 + 5 + 16. */
#define CONN_PING_CMD_MAX (2 + 5 + 2)
#define CONN_PONG_CMD_MAX (2 + 5 + ZR_ZMTP_PING_CONTEXT_MAX)

/* A PING or PONG as a CURVE MESSAGE: data frame header 2, MESSAGE 33, command body. */
#define CONN_CURVE_WRAP (2 + ZR__CURVE_MESSAGE_MIN)

static struct zr__curve *
conn_curve(struct zr_zmtp *z)
{
	return (struct zr__curve *)(void *)z->mech.bytes;
}

/* see zmtp.h */
void
zr_zmtp_config_default(struct zr_zmtp_config *cfg, int socket_type)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->socket_type = socket_type;
	cfg->mechanism = ZR_MECH_NULL;
	cfg->minor = 1;
	cfg->max_msg_size = ZR_ZMTP_DEFAULT_MAX_MSG_SIZE;
	cfg->max_msg_frames = ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES;
	cfg->max_cmd_size = ZR_ZMTP_DEFAULT_MAX_CMD_SIZE;
	cfg->max_handshake_cmd = ZR_ZMTP_DEFAULT_MAX_HANDSHAKE_CMD;
	cfg->handshake_ivl_ms = 30000;
}

/* libzmq sends Identity for these types (empty when none is set). */
static bool
conn_sends_identity(int type)
{
	return type == ZR_REQ || type == ZR_DEALER || type == ZR_ROUTER;
}

/* The size of our metadata block (READY / INITIATE data). */
static size_t
conn_metadata_size(const struct zr_zmtp_config *cfg)
{
	size_t n = 1 + strlen("Socket-Type") + 4 + strlen(zr_socktype_name(cfg->socket_type));
	size_t i;

	if (conn_sends_identity(cfg->socket_type))
		n += 1 + strlen("Identity") + 4 + cfg->routing_id_len;
	for (i = 0; i < cfg->props_count; i++)
		n += 1 + strlen(cfg->props[i].name) + 4 + cfg->props[i].value_len;
	return n;
}

static int
conn_config_check(const struct zr_zmtp_config *cfg)
{
	size_t i, nlen;

	if (cfg->socket_type < 0 || cfg->socket_type >= ZR_SOCKTYPE_COUNT ||
	    cfg->socket_type == ZR_STREAM || cfg->socket_type == ZR_DGRAM)
		return -EINVAL;
	if (cfg->mechanism != ZR_MECH_NULL && cfg->mechanism != ZR_MECH_PLAIN &&
	    cfg->mechanism != ZR_MECH_CURVE)
		return -EINVAL;
	/* A server's public key can be derived from its secret one. */
	if (cfg->mechanism == ZR_MECH_CURVE &&
	    (cfg->curve_secret_key == NULL || (!cfg->as_server && cfg->curve_public_key == NULL) ||
	     (!cfg->as_server && cfg->curve_server_key == NULL)))
		return -EINVAL;
	if (cfg->minor > 1)
		return -EINVAL;
	if (cfg->routing_id_len > 255 || (cfg->routing_id_len > 0 && cfg->routing_id == NULL))
		return -EINVAL;
	if (cfg->username_len > 255 || cfg->password_len > 255)
		return -EINVAL;
	if ((cfg->username_len > 0 && cfg->username == NULL) ||
	    (cfg->password_len > 0 && cfg->password == NULL))
		return -EINVAL;
	if (cfg->props_count > 0 && cfg->props == NULL)
		return -EINVAL;
	for (i = 0; i < cfg->props_count; i++) {
		const char *name = cfg->props[i].name;

		if (name == NULL)
			return -EINVAL;
		nlen = strlen(name);
		if (nlen == 0 || nlen > 255 || cfg->props[i].value_len > 0x7fffffffu ||
		    (cfg->props[i].value_len > 0 && cfg->props[i].value == NULL))
			return -EINVAL;
		for (size_t k = 0; k < nlen; k++) {
			if (!wire_is_name_char((uint8_t)name[k]))
				return -EINVAL;
		}
	}
	return 0;
}

/*
 * The most the codec can have queued at once with this configuration: the
 * greeting, PLAIN's HELLO, our metadata command, one ERROR, one PING, one
 * PONG (a misbehaving peer can make all of these due before the caller
 * drains any of them, e.g. a server sending WELCOME unasked).
 */
static size_t
conn_out_worst(const struct zr_zmtp_config *cfg, size_t meta)
{
	size_t n = ZR_ZMTP_GREETING_SIZE + ZR_ZMTP_HEADER_MAX + 1 + 8 + meta;

	if (cfg->mechanism == ZR_MECH_PLAIN)
		n += ZR_ZMTP_HEADER_MAX + 1 + 5 + 2 + cfg->username_len +
		     cfg->password_len       /* HELLO */
		     + 2 + 1 + 7;            /* WELCOME */
	if (cfg->mechanism == ZR_MECH_CURVE) /* HELLO (or WELCOME), INITIATE (or READY) boxes */
		return n + 2 + ZR__CURVE_HELLO_SIZE + ZR__CURVE_INITIATE_MIN + CONN_ERROR_CMD_MAX +
		       CONN_CURVE_WRAP + CONN_PING_CMD_MAX + CONN_CURVE_WRAP + CONN_PONG_CMD_MAX;
	return n + CONN_ERROR_CMD_MAX + CONN_PING_CMD_MAX + CONN_PONG_CMD_MAX;
}

static int
codec_fail(struct zr_zmtp *z, int err)
{
	z->err = err;
	z->state = ZR_ZMTP_FAILED;
	z->ping_pending = false;
	z->pong_pending = false;
	if (z->cfg.mechanism == ZR_MECH_CURVE)
		zr__curve_fini(conn_curve(z)); /* no key is needed any more */
	return err;
}

/*
 * Appends n bytes to the output. Nothing already queued ever moves: the
 * caller may have handed those bytes to an asynchronous send. Room is
 * certain: the buffer empties back to offset 0 whenever all is acked
 * (zr_zmtp_out_ack), PING and PONG are laid out only then, and between two
 * such moments the most that can be queued is conn_out_worst, checked at init.
 * This is the one place that guards it: should the bound ever be wrong, the
 * codec fails here (-ENOBUFS) and returns NULL, and the caller writes nothing
 * and returns z->err (or nothing).
 */
static uint8_t *
conn_out_reserve(struct zr_zmtp *z, size_t n)
{
	uint8_t *p;

	if (!ZR_INVARIANT(n <= sizeof z->out - z->out_len)) {
		codec_fail(z, -ENOBUFS);
		return NULL;
	}
	p = z->out + z->out_len;
	z->out_len += n;
	return p;
}

static void
conn_queue_cmd(struct zr_zmtp *z, const char *name, const uint8_t *data, size_t len)
{
	size_t need = ZR_ZMTP_HEADER_MAX + 1 + strlen(name) + len;
	uint8_t *p = conn_out_reserve(z, need);
	int n;

	if (p == NULL)
		return;
	n = zr_zmtp_cmd_encode(p, need, name, data, len);
	z->out_len -= need - (n > 0 ? (size_t)n : 0);
}

static void
conn_queue_error(struct zr_zmtp *z, const char *reason)
{
	uint8_t body[1 + CONN_ERROR_REASON_MAX];
	size_t n = strlen(reason);

	if (n > CONN_ERROR_REASON_MAX)
		n = CONN_ERROR_REASON_MAX;
	body[0] = (uint8_t)n;
	/* RFC 23: error-reason = OCTET 0*255VCHAR, so no spaces or controls;
	 * "incompatible socket types" goes out as "incompatible-socket-types". */
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)reason[i];

		body[1 + i] = c >= 0x21 && c <= 0x7e ? c : '-';
	}
	conn_queue_cmd(z, "ERROR", body, 1 + n);
}

/*
 * Whether we may tell the peer why with ERROR. Not a CURVE client: in
 * RFC 26's dialogue only the server sends ERROR, libzmq's CURVE client never
 * does, and its CURVE server takes a client's ERROR as one more protocol
 * violation. Nor anyone in CURVE traffic, where a plaintext command is
 * something no peer expects.
 */
static bool
conn_may_send_error(const struct zr_zmtp *z)
{
	if (z->cfg.mechanism != ZR_MECH_CURVE)
		return z->state == ZR_ZMTP_HANDSHAKE || z->state == ZR_ZMTP_TRAFFIC;
	return z->cfg.as_server && z->state == ZR_ZMTP_HANDSHAKE;
}

/* Fails in the handshake: tells the peer why with ERROR first (if we may). */
static int
codec_fail_handshake(struct zr_zmtp *z, int err)
{
	if (conn_may_send_error(z))
		conn_queue_error(z, zr_strerror(err));
	return codec_fail(z, err);
}

/* Writes our metadata block (conn_metadata_size octets) at p. */
static size_t
conn_metadata_write(const struct zr_zmtp_config *cfg, uint8_t *p)
{
	const char *type = zr_socktype_name(cfg->socket_type);
	size_t meta = conn_metadata_size(cfg), off = 0;

	/* Exact casing: libzmq matches these two names case-sensitively. */
	off += (size_t)zr_zmtp_prop_encode(p + off, meta - off, "Socket-Type",
	                                   (const uint8_t *)type, strlen(type));
	if (conn_sends_identity(cfg->socket_type))
		off += (size_t)zr_zmtp_prop_encode(p + off, meta - off, "Identity", cfg->routing_id,
		                                   cfg->routing_id_len);
	for (size_t i = 0; i < cfg->props_count; i++)
		off += (size_t)zr_zmtp_prop_encode(p + off, meta - off, cfg->props[i].name,
		                                   cfg->props[i].value, cfg->props[i].value_len);
	return off;
}

/* Queues READY or INITIATE with our metadata (NULL, PLAIN). */
static void
conn_queue_metadata(struct zr_zmtp *z, const char *name)
{
	size_t meta = conn_metadata_size(&z->cfg), nlen = strlen(name), off;
	uint8_t hdr[ZR_ZMTP_HEADER_MAX];
	int hlen = zr_zmtp_frame_header(hdr, 1 + nlen + meta, ZR_ZMTP_COMMAND);
	uint8_t *p = conn_out_reserve(z, (size_t)hlen + 1 + nlen + meta);

	if (p == NULL)
		return;
	memcpy(p, hdr, (size_t)hlen);
	off = (size_t)hlen;
	p[off++] = (uint8_t)nlen;
	memcpy(p + off, name, nlen);
	off += nlen;
	conn_metadata_write(&z->cfg, p + off);
}

static void
conn_queue_plain_hello(struct zr_zmtp *z)
{
	uint8_t body[2 + 255 + 255];
	size_t ul = z->cfg.username_len, pl = z->cfg.password_len;

	body[0] = (uint8_t)ul;
	if (ul > 0)
		memcpy(body + 1, z->cfg.username, ul);
	body[1 + ul] = (uint8_t)pl;
	if (pl > 0)
		memcpy(body + 2 + ul, z->cfg.password, pl);
	conn_queue_cmd(z, "HELLO", body, 2 + ul + pl);
}

/* Sets up the CurveZMQ state from the configured keys (copied, then wiped
 * from the stack). The codec keeps no pointer to the caller's keys. */
static int
conn_curve_init(struct zr_zmtp *z)
{
	const struct zr_zmtp_config *cfg = &z->cfg;
	struct zr__curve_config cc = {
		.as_server = cfg->as_server,
		.random = cfg->random,
		.random_arg = cfg->random_arg,
	};
	int rc;

	if (sodium_init() < 0)
		return -ENOSYS;
	memcpy(cc.secret_key, cfg->curve_secret_key, ZR__CURVE_KEY);
	if (cfg->curve_public_key != NULL)
		memcpy(cc.public_key, cfg->curve_public_key, ZR__CURVE_KEY);
	else
		crypto_scalarmult_base(cc.public_key, cc.secret_key);
	if (!cfg->as_server)
		memcpy(cc.server_key, cfg->curve_server_key, ZR__CURVE_KEY);
	rc = zr__curve_init(conn_curve(z), &cc);
	sodium_memzero(&cc, sizeof cc);
	/* The configured pointers are not needed again: drop them so a caller's
	 * freed key buffer can never be read through z->cfg. */
	z->cfg.curve_public_key = NULL;
	z->cfg.curve_secret_key = NULL;
	z->cfg.curve_server_key = NULL;
	return rc;
}

/* see zmtp.h */
int
zr_zmtp_init(struct zr_zmtp *z, const struct zr_zmtp_config *cfg, uint64_t now_ms)
{
	int rc = conn_config_check(cfg);
	uint8_t *p;

	if (rc < 0)
		return rc;
	if (conn_out_worst(cfg, conn_metadata_size(cfg)) > sizeof z->out)
		return -EMSGSIZE;

	memset(z, 0, sizeof *z);
	z->cfg = *cfg;
	if (cfg->mechanism == ZR_MECH_CURVE) {
		rc = conn_curve_init(z);
		if (rc < 0)
			return rc;
	}
	if (z->cfg.max_msg_frames == 0)
		z->cfg.max_msg_frames = ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES;
	zr_zmtp_dec_init(&z->dec, cfg->max_msg_size, cfg->max_handshake_cmd);
	zr_zmtp_dec_set_frame_limit(&z->dec, z->cfg.max_msg_frames);
	z->state = ZR_ZMTP_GREETING;
	z->peer_type = -1;
	z->hs_deadline = cfg->handshake_ivl_ms ? now_ms + cfg->handshake_ivl_ms : CONN_NEVER;
	z->last_rx = now_ms;
	z->next_ping = CONN_NEVER;
	z->ping_deadline = CONN_NEVER;

	p = conn_out_reserve(z, ZR_ZMTP_GREETING_SIZE);
	if (p == NULL)
		return z->err;
	/* as-server: 1 for a PLAIN or CURVE server as RFC 23 says; NULL sends 0. */
	zr_zmtp_greeting_encode(p, cfg->minor, cfg->mechanism,
	                        cfg->mechanism != ZR_MECH_NULL && cfg->as_server);
	return 0;
}

/* see zmtp.h */
void
zr_zmtp_fini(struct zr_zmtp *z)
{
	if (z->cfg.mechanism == ZR_MECH_CURVE)
		zr__curve_fini(conn_curve(z));
	sodium_memzero(z->mech.bytes, sizeof z->mech.bytes);
}

/* CURVE after the greeting: the client says HELLO, the server waits for it. */
static int
conn_curve_start(struct zr_zmtp *z)
{
	uint8_t *p;
	int n;

	if (z->cfg.as_server) {
		z->step = ZR__ZMTP_CURVE_S_WAIT_HELLO;
		return 0;
	}
	p = conn_out_reserve(z, 2 + ZR__CURVE_HELLO_SIZE);
	if (p == NULL)
		return z->err;
	zr_zmtp_frame_header(p, ZR__CURVE_HELLO_SIZE, ZR_ZMTP_COMMAND);
	n = zr__curve_client_hello(conn_curve(z), p + 2, ZR__CURVE_HELLO_SIZE);
	if (n < 0) {
		z->out_len -= 2 + ZR__CURVE_HELLO_SIZE;
		return codec_fail(z, n);
	}
	z->step = ZR__ZMTP_CURVE_C_WAIT_WELCOME;
	return 0;
}

static int conn_auth(struct zr_zmtp *z, struct zr_zmtp_auth_req *req);

/* The greeting is whole and valid: check the mechanism, start the handshake. */
static int
conn_on_greeting(struct zr_zmtp *z, const struct zr_zmtp_greeting *g)
{
	if (g->mechanism < 0)
		return codec_fail(z, -ZR_EMECHANISM);
	if (g->mechanism != z->cfg.mechanism)
		return codec_fail(z, -ZR_EMECHMISMATCH);
	z->peer_major = g->major;
	z->peer_minor = g->minor;
	z->state = ZR_ZMTP_HANDSHAKE;
	if (z->cfg.mechanism == ZR_MECH_NULL) {
		z->step = ZR__ZMTP_NULL_WAIT_READY;
		/* libzmq asks ZAP before its READY goes out: a refused peer
		 * learns nothing of our metadata. */
		if (z->cfg.auth != NULL && z->cfg.auth_null) {
			struct zr_zmtp_auth_req req = {.mechanism = ZR_MECH_NULL};
			int rc = conn_auth(z, &req);

			if (rc < 0 || z->auth_wait)
				return rc;
		}
		conn_queue_metadata(z, "READY");
	} else if (z->cfg.mechanism == ZR_MECH_CURVE) {
		return conn_curve_start(z);
	} else if (!z->cfg.as_server) {
		conn_queue_plain_hello(z);
		z->step = ZR__ZMTP_PLAIN_C_WAIT_WELCOME;
	} else {
		z->step = ZR__ZMTP_PLAIN_S_WAIT_HELLO;
	}
	return 0;
}

/* Checks the peer's metadata (READY / INITIATE, already validated) and fills
 * the READY event. */
static int
conn_check_metadata(struct zr_zmtp *z, const uint8_t *meta, size_t meta_len,
                    struct zr_zmtp_event *ev)
{
	const uint8_t *v;
	size_t vlen;
	int type;

	if (zr_zmtp_props_find(meta, meta_len, "Socket-Type", &v, &vlen) < 0)
		return -ZR_ENOSOCKTYPE;
	type = zr_socktype_parse(v, vlen);
	if (type < 0)
		return type;
	if (!zr_socktype_compatible(z->cfg.socket_type, type))
		return -ZR_EINCOMPATIBLE;
	z->peer_type = type;
	memset(ev, 0, sizeof *ev);
	ev->type = ZR_ZMTP_EV_READY;
	ev->data = meta;
	ev->len = meta_len;
	ev->peer_type = type;
	ev->user_id = z->user_id;
	if (zr_zmtp_props_find(meta, meta_len, "Identity", &v, &vlen) == 0) {
		ev->peer_identity = v;
		ev->peer_identity_len = vlen;
	}
	return 0;
}

static void
conn_enter_traffic(struct zr_zmtp *z, uint64_t now_ms)
{
	z->state = ZR_ZMTP_TRAFFIC;
	z->hs_deadline = CONN_NEVER;
	zr_zmtp_dec_set_cmd_limit(&z->dec, z->cfg.max_cmd_size);
	if (z->cfg.mechanism == ZR_MECH_CURVE) {
		/* Every frame is a MESSAGE box, opened whole: hold frames whole,
		 * up to the largest plaintext allowed plus the box around it. */
		uint64_t max = z->cfg.max_msg_size;

		zr_zmtp_dec_init(&z->dec,
		                 max > UINT64_MAX - ZR__CURVE_MESSAGE_MIN
		                         ? UINT64_MAX
		                         : max + ZR__CURVE_MESSAGE_MIN,
		                 z->cfg.max_cmd_size);
		zr_zmtp_dec_set_whole(&z->dec, true);
		/* dec_init put back the default. Each box is one frame on the wire
		 * (MORE travels inside), so conn_curve_traffic does the counting,
		 * but the decoder keeps the configured limit all the same. */
		zr_zmtp_dec_set_frame_limit(&z->dec, z->cfg.max_msg_frames);
	}
	if (z->cfg.heartbeat_ivl_ms > 0 && zr_zmtp_peer_minor(z) >= 1)
		z->next_ping = now_ms + z->cfg.heartbeat_ivl_ms;
}

static int
conn_peer_error(struct zr_zmtp *z, const struct zr_zmtp_cmd *cmd, struct zr_zmtp_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->type = ZR_ZMTP_EV_PEER_ERROR;
	ev->data = cmd->value;
	ev->len = cmd->value_len;
	codec_fail(z, -ZR_EPEERERROR);
	return ZR_OK;
}

/*
 * A server asks the application about a client (req: the mechanism and the
 * credentials). Keeps the answer (status, user id, text); on refusal queues
 * ERROR with the bare status and fails with -ZR_EAUTH.
 */
static int
conn_auth_answer(struct zr_zmtp *z, int status, const char *user_id, const char *text)
{
	char code[4];

	if (status != 200 && (status < 300 || status > 599))
		status = 500;
	z->auth_status = status;
	snprintf(z->auth_text, sizeof z->auth_text, "%s", text != NULL ? text : "");
	if (status == 200) {
		snprintf(z->user_id, sizeof z->user_id, "%s", user_id != NULL ? user_id : "");
		z->auth_ok = true;
		return 0;
	}
	/* libzmq recognises only "300", "400" and "500" (its handle_error_reason). */
	code[0] = (char)('0' + status / 100);
	code[1] = '0';
	code[2] = '0';
	code[3] = '\0';
	conn_queue_error(z, code);
	return codec_fail(z, -ZR_EAUTH);
}

/* Asks the authenticator; returns 0 with z->auth_wait set when it answered
 * ZR_ZMTP_AUTH_PENDING (zr_zmtp_auth_reply brings the answer). */
static int
conn_auth(struct zr_zmtp *z, struct zr_zmtp_auth_req *req)
{
	int status;

	req->peer_address = z->cfg.peer_address;
	req->tls_subject = z->cfg.tls_subject;
	req->user_id[0] = '\0';
	req->text[0] = '\0';
	status = z->cfg.auth ? z->cfg.auth(z->cfg.auth_arg, req) : 200;
	if (status == ZR_ZMTP_AUTH_PENDING && z->cfg.auth != NULL) {
		z->auth_wait = true;
		return 0;
	}
	req->user_id[ZR_ZMTP_USER_ID_MAX] = '\0';
	req->text[ZR_ZMTP_AUTH_TEXT_MAX] = '\0';
	return conn_auth_answer(z, status, req->user_id, req->text);
}

/* PLAIN server: ask the application about a HELLO. */
static int
conn_plain_auth(struct zr_zmtp *z, const struct zr_zmtp_cmd *cmd)
{
	struct zr_zmtp_auth_req req = {
		.mechanism = ZR_MECH_PLAIN,
		.username = cmd->username,
		.username_len = cmd->username_len,
		.password = cmd->password,
		.password_len = cmd->password_len,
	};

	return conn_auth(z, &req);
}

/*
 * A command during the handshake. Returns ZR_OK with an event, ZR_NEED_MORE
 * to go on without one, or a negative code.
 */
static int
conn_handshake_cmd(struct zr_zmtp *z, const struct zr_zmtp_cmd *cmd, struct zr_zmtp_event *ev,
                   uint64_t now_ms)
{
	int rc;

	if (cmd->type == ZR_CMD_ERROR)
		return conn_peer_error(z, cmd, ev);

	switch (z->step) {
	case ZR__ZMTP_NULL_WAIT_READY:
	case ZR__ZMTP_PLAIN_C_WAIT_READY:
		if (cmd->type != ZR_CMD_READY)
			break;
		rc = conn_check_metadata(z, cmd->value, cmd->value_len, ev);
		if (rc < 0)
			return codec_fail_handshake(z, rc);
		conn_enter_traffic(z, now_ms);
		return ZR_OK;
	case ZR__ZMTP_PLAIN_C_WAIT_WELCOME:
		if (cmd->type != ZR_CMD_WELCOME)
			break;
		conn_queue_metadata(z, "INITIATE");
		z->step = ZR__ZMTP_PLAIN_C_WAIT_READY;
		return ZR_NEED_MORE;
	case ZR__ZMTP_PLAIN_S_WAIT_HELLO:
		if (cmd->type != ZR_CMD_HELLO)
			break;
		rc = conn_plain_auth(z, cmd);
		if (rc < 0 || z->auth_wait)
			return rc < 0 ? rc
			              : ZR_NEED_MORE; /* HELLO is taken: the reply says WELCOME */
		conn_queue_cmd(z, "WELCOME", NULL, 0);
		z->step = ZR__ZMTP_PLAIN_S_WAIT_INITIATE;
		return ZR_NEED_MORE;
	case ZR__ZMTP_PLAIN_S_WAIT_INITIATE:
		if (cmd->type != ZR_CMD_INITIATE)
			break;
		rc = conn_check_metadata(z, cmd->value, cmd->value_len, ev);
		if (rc < 0)
			return codec_fail_handshake(z, rc);
		conn_queue_metadata(z, "READY");
		conn_enter_traffic(z, now_ms);
		return ZR_OK;
	case ZR__ZMTP_STEP_NONE:
	case ZR__ZMTP_CURVE_C_WAIT_WELCOME:
	case ZR__ZMTP_CURVE_C_WAIT_READY:
	case ZR__ZMTP_CURVE_S_WAIT_HELLO:
	case ZR__ZMTP_CURVE_S_WAIT_INITIATE:
		/* The greeting sets a step with the state; conn_on_frame hands
		 * CURVE's handshake to conn_curve_handshake. */
		(void)ZR_INVARIANT(!"a NULL or PLAIN handshake step");
		return codec_fail(z, -EINVAL);
	}
	return codec_fail_handshake(z, -ZR_EUNEXPECTED);
}

/* A command in traffic: same return convention as conn_handshake_cmd. */
static int
conn_traffic_cmd(struct zr_zmtp *z, const struct zr_zmtp_cmd *cmd, struct zr_zmtp_event *ev)
{
	switch (cmd->type) {
	case ZR_CMD_PING:
		z->pong_pending = true;
		z->pong_ctx_len = (uint8_t)cmd->value_len;
		if (cmd->value_len > 0)
			memcpy(z->pong_ctx, cmd->value, cmd->value_len);
		z->peer_ttl_ms = (uint32_t)cmd->ttl * 100u;
		return ZR_NEED_MORE;
	case ZR_CMD_PONG:
	case ZR_CMD_UNKNOWN:
		return ZR_NEED_MORE;
	case ZR_CMD_SUBSCRIBE:
	case ZR_CMD_CANCEL:
		memset(ev, 0, sizeof *ev);
		ev->type = cmd->type == ZR_CMD_SUBSCRIBE ? ZR_ZMTP_EV_SUBSCRIBE : ZR_ZMTP_EV_CANCEL;
		ev->data = cmd->value;
		ev->len = cmd->value_len;
		return ZR_OK;
	case ZR_CMD_ERROR:
		return conn_peer_error(z, cmd, ev);
	default: /* READY, HELLO, WELCOME, INITIATE once the handshake is over */
		return codec_fail(z, -ZR_EUNEXPECTED);
	}
}

/*
 * A CURVE mechanism call failed with rc. The peer's ERROR becomes the
 * PEER_ERROR event (the body is still in buf); a server tells the client why
 * in ERROR; a client just closes, as libzmq's does.
 */
static int
conn_curve_fail(struct zr_zmtp *z, int rc, const uint8_t *body, size_t len,
                struct zr_zmtp_event *ev)
{
	struct zr_zmtp_cmd cmd;

	if (rc == ZR__CURVE_EPEERERROR) {
		int prc = zr_zmtp_cmd_parse(body, len, ZR_MECH_CURVE, &cmd);

		if (prc < 0 || cmd.type != ZR_CMD_ERROR)
			return codec_fail(z, prc < 0 ? prc : -ZR_EERRORCMD);
		return conn_peer_error(z, &cmd, ev);
	}
	if (z->cfg.as_server && rc <= -ZR_EBASE)
		return codec_fail_handshake(z, rc);
	return codec_fail(z, rc);
}

/* Reserves a command frame of body_len octets in the output; returns where
 * the body goes (the header is written), NULL if it cannot fit. */
static uint8_t *
conn_out_command(struct zr_zmtp *z, size_t body_len)
{
	uint8_t hdr[ZR_ZMTP_HEADER_MAX];
	int h = zr_zmtp_frame_header(hdr, body_len, ZR_ZMTP_COMMAND);
	uint8_t *p = conn_out_reserve(z, (size_t)h + body_len);

	if (p == NULL)
		return NULL;
	memcpy(p, hdr, (size_t)h);
	return p + h;
}

/*
 * CURVE's READY (client) or INITIATE (server) opened: checks the peer's
 * metadata, the server answers READY, and traffic begins. Returns ZR_OK with
 * the READY event or a negative code.
 */
static int
conn_curve_opened(struct zr_zmtp *z, const uint8_t *meta, size_t meta_len, struct zr_zmtp_event *ev,
                  uint64_t now_ms)
{
	uint8_t ours[ZR_ZMTP_OUT_MAX];
	size_t ours_len, mark = z->out_len;
	uint8_t *p;
	int rc;

	rc = zr_zmtp_props_validate(meta, meta_len);
	if (rc == 0)
		rc = conn_check_metadata(z, meta, meta_len, ev);
	if (rc < 0)
		return z->cfg.as_server ? codec_fail_handshake(z, rc) : codec_fail(z, rc);
	if (z->cfg.as_server) {
		ours_len = conn_metadata_write(&z->cfg, ours);
		p = conn_out_command(z, ZR__CURVE_READY_MIN + ours_len);
		if (p == NULL)
			return z->err;
		rc = zr__curve_server_ready(conn_curve(z), ours, ours_len, p,
		                            ZR__CURVE_READY_MIN + ours_len);
		if (rc < 0) {
			z->out_len = mark;
			return codec_fail(z, rc);
		}
	}
	conn_enter_traffic(z, now_ms);
	return ZR_OK;
}

/*
 * A CURVE handshake command (body: the whole frame body, in the caller's
 * writable buf; boxes are opened in place). Same return convention as
 * conn_handshake_cmd.
 */
static int
conn_curve_handshake(struct zr_zmtp *z, uint8_t *body, size_t len, struct zr_zmtp_event *ev,
                     uint64_t now_ms)
{
	struct zr__curve *c = conn_curve(z);
	uint8_t ours[ZR_ZMTP_OUT_MAX];
	size_t ours_len, meta_len, mark = z->out_len;
	const uint8_t *meta;
	uint8_t *p;
	int rc;

	switch (z->step) {
	case ZR__ZMTP_CURVE_C_WAIT_WELCOME:
		ours_len = conn_metadata_write(&z->cfg, ours);
		p = conn_out_command(z, ZR__CURVE_INITIATE_MIN + ours_len);
		if (p == NULL)
			return z->err;
		rc = zr__curve_client_on_welcome(c, body, len, ours, ours_len, p,
		                                 ZR__CURVE_INITIATE_MIN + ours_len);
		if (rc < 0) {
			z->out_len = mark;
			return conn_curve_fail(z, rc, body, len, ev);
		}
		z->step = ZR__ZMTP_CURVE_C_WAIT_READY;
		return ZR_NEED_MORE;
	case ZR__ZMTP_CURVE_C_WAIT_READY:
		rc = zr__curve_client_on_ready(c, body, len, body, len, &meta, &meta_len);
		if (rc < 0)
			return conn_curve_fail(z, rc, body, len, ev);
		return conn_curve_opened(z, meta, meta_len, ev, now_ms);
	case ZR__ZMTP_CURVE_S_WAIT_HELLO:
		p = conn_out_command(z, ZR__CURVE_WELCOME_SIZE);
		if (p == NULL)
			return z->err;
		rc = zr__curve_server_on_hello(c, body, len, now_ms, p, ZR__CURVE_WELCOME_SIZE);
		if (rc < 0) {
			z->out_len = mark;
			return conn_curve_fail(z, rc, body, len, ev);
		}
		z->step = ZR__ZMTP_CURVE_S_WAIT_INITIATE;
		return ZR_NEED_MORE;
	case ZR__ZMTP_CURVE_S_WAIT_INITIATE: {
		struct zr_zmtp_auth_req req = {.mechanism = ZR_MECH_CURVE};

		if (z->auth_ok) {
			/* The INITIATE parked for an answer, presented again: its
			 * box is open already (in place), the nonce taken. */
			if ((size_t)z->hold_off + z->hold_len > len)
				return codec_fail(z, -EINVAL); /* not the bytes we left */
			return conn_curve_opened(z, body + z->hold_off, z->hold_len, ev, now_ms);
		}
		rc = zr__curve_server_on_initiate(c, body, len, now_ms, body, len, &meta,
		                                  &meta_len);
		if (rc < 0)
			return conn_curve_fail(z, rc, body, len, ev);
		/* Authenticate first, as libzmq does (its ZAP request goes out on
		 * INITIATE): a refused client learns nothing about its metadata. */
		req.client_key = zr__curve_peer_key(c);
		rc = conn_auth(z, &req);
		if (rc < 0)
			return rc;
		if (z->auth_wait) {
			z->hold_off = (uint32_t)(meta - body);
			z->hold_len = (uint32_t)meta_len;
			return CONN_PARKED;
		}
		return conn_curve_opened(z, meta, meta_len, ev, now_ms);
	}
	case ZR__ZMTP_STEP_NONE:
	case ZR__ZMTP_NULL_WAIT_READY:
	case ZR__ZMTP_PLAIN_C_WAIT_WELCOME:
	case ZR__ZMTP_PLAIN_C_WAIT_READY:
	case ZR__ZMTP_PLAIN_S_WAIT_HELLO:
	case ZR__ZMTP_PLAIN_S_WAIT_INITIATE:
		break;
	}
	/* conn_curve_start sets a CURVE step with the state: only our bug (or a
	 * step outside the enum) gets here. */
	(void)ZR_INVARIANT(!"a CURVE handshake step");
	return codec_fail(z, -EINVAL);
}

/*
 * A frame in CURVE traffic: one MESSAGE, opened in place (the event's data
 * points into the box, past its header and flags). Its plaintext is a
 * message frame (the event) or, flagged 0x02, a command (PING, SUBSCRIBE...).
 */
static int
conn_curve_traffic(struct zr_zmtp *z, uint8_t *body, const struct zr_zmtp_frame *f,
                   struct zr_zmtp_event *ev)
{
	struct zr_zmtp_cmd cmd;
	uint8_t mflags = 0;
	int n, rc;

	if (f->flags & ZR_ZMTP_MORE)
		return codec_fail(z, -ZR_ECURVECMD); /* MORE travels inside the box */
	n = zr__curve_open_message(conn_curve(z), body, f->len, &mflags);
	if (n < 0)
		return codec_fail(z, n == -EMSGSIZE ? -ZR_ETOOLARGE : n);
	body += ZR__CURVE_MESSAGE_DATA_OFFSET; /* opened in place: no pass to move it */
	if (mflags & 0x02) {
		if (mflags & 0x01)
			return codec_fail(z, -ZR_ECMDMORE);
		if (z->msg_more)
			return codec_fail(z, -ZR_ECMDINMSG);
		rc = zr_zmtp_cmd_parse(body, (size_t)n, ZR_MECH_CURVE, &cmd);
		if (rc < 0)
			return codec_fail(z, rc);
		return conn_traffic_cmd(z, &cmd, ev);
	}
	if ((uint64_t)n > z->cfg.max_msg_size - z->msg_total)
		return codec_fail(z, -ZR_ETOOLARGE);
	/* Empty MORE boxes pass the size check for ever: count them. */
	if (z->msg_frames >= z->cfg.max_msg_frames)
		return codec_fail(z, -ZR_ETOOMANYFRAMES);
	z->msg_more = (mflags & 0x01) != 0;
	z->msg_total = z->msg_more ? z->msg_total + (uint64_t)n : 0;
	z->msg_frames = z->msg_more ? z->msg_frames + 1 : 0;
	memset(ev, 0, sizeof *ev);
	ev->type = ZR_ZMTP_EV_FRAME;
	ev->data = body;
	ev->len = (size_t)n;
	ev->frame_size = (uint64_t)n;
	ev->offset = 0;
	ev->flags = ZR_ZMTP_FRAME_END | ((mflags & 0x01) ? ZR_ZMTP_MORE : 0);
	return ZR_OK;
}

/*
 * libzmq 4.3's PLAIN mechanism writes its ERROR command from the C literal
 * "\x05ERROR", where "\x05E" is a single hex escape (0x5E): the body on the
 * wire is 5E 'R' 'R' 'O' 'R', reason length, reason. Read literally that is a
 * 94-octet name that cannot fit, so a strict parser reports a malformed
 * command instead of the refusal it is. Accept exactly that form, only in
 * the PLAIN handshake, where libzmq sends it; it cannot be mistaken for a
 * valid command. We always send the conformant form ourselves.
 */
static bool
conn_libzmq_plain_error(const struct zr_zmtp *z, const struct zr_zmtp_frame *f,
                        struct zr_zmtp_cmd *cmd)
{
	static const uint8_t prefix[5] = {0x5e, 'R', 'R', 'O', 'R'};

	if (z->cfg.mechanism != ZR_MECH_PLAIN || z->state != ZR_ZMTP_HANDSHAKE || f->len < 6 ||
	    memcmp(f->data, prefix, sizeof prefix) != 0 || f->data[5] != f->len - 6)
		return false;
	memset(cmd, 0, sizeof *cmd);
	cmd->type = ZR_CMD_ERROR;
	cmd->value = f->data + 6;
	cmd->value_len = f->len - 6;
	return true;
}

/* One frame (or piece) from the decoder. */
static int
conn_on_frame(struct zr_zmtp *z, const struct zr_zmtp_frame *f, struct zr_zmtp_event *ev,
              uint64_t now_ms)
{
	struct zr_zmtp_cmd cmd;
	int mech = z->cfg.mechanism;
	/* The frame lies in zr_zmtp_feed's buf, which is the caller's writable
	 * memory: CURVE opens its boxes there. */
	uint8_t *body = (uint8_t *)(uintptr_t)f->data;
	int rc;

	if (mech == ZR_MECH_CURVE && z->state == ZR_ZMTP_TRAFFIC)
		return conn_curve_traffic(z, body, f, ev);
	if (!(f->flags & ZR_ZMTP_COMMAND)) {
		if (z->state != ZR_ZMTP_TRAFFIC)
			return codec_fail_handshake(z, -ZR_EEARLYMSG);
		memset(ev, 0, sizeof *ev);
		ev->type = ZR_ZMTP_EV_FRAME;
		ev->data = f->data;
		ev->len = f->len;
		ev->frame_size = f->size;
		ev->offset = f->offset;
		ev->flags = f->flags & (ZR_ZMTP_MORE | ZR_ZMTP_FRAME_END);
		return ZR_OK;
	}
	if (conn_libzmq_plain_error(z, f, &cmd))
		return conn_peer_error(z, &cmd, ev);
	if (mech == ZR_MECH_CURVE && z->state == ZR_ZMTP_HANDSHAKE)
		return conn_curve_handshake(z, body, f->len, ev, now_ms);
	rc = zr_zmtp_cmd_parse(f->data, f->len, mech, &cmd);
	if (rc < 0)
		return z->state == ZR_ZMTP_HANDSHAKE ? codec_fail_handshake(z, rc)
		                                     : codec_fail(z, rc);
	if (z->state == ZR_ZMTP_HANDSHAKE)
		return conn_handshake_cmd(z, &cmd, ev, now_ms);
	return conn_traffic_cmd(z, &cmd, ev);
}

static int
conn_feed(struct zr_zmtp *z, uint8_t *buf, size_t len, size_t *consumed, struct zr_zmtp_event *ev,
          uint64_t now_ms)
{
	struct zr_zmtp_greeting g;
	/* Set: inlined, the decoder's "ZR_OK means f is filled" is more than
	 * gcc can follow through the sticky error. */
	struct zr_zmtp_frame f = {0};
	size_t off = 0, used;
	int rc;

	for (;;) {
		switch (z->state) {
		case ZR_ZMTP_GREETING:
			rc = zr_zmtp_greeting_parse(buf, len, &g);
			if (rc < 0)
				return codec_fail(z, rc);
			if (rc == ZR_NEED_MORE)
				return ZR_NEED_MORE;
			off = ZR_ZMTP_GREETING_SIZE;
			*consumed = off;
			rc = conn_on_greeting(z, &g);
			if (rc < 0)
				return rc;
			continue;
		case ZR_ZMTP_HANDSHAKE:
		case ZR_ZMTP_TRAFFIC:
			if (z->auth_wait) {
				*consumed = off;
				return ZR_NEED_MORE; /* parked until zr_zmtp_auth_reply */
			}
			rc = dec_feed(&z->dec, buf + off, len - off, &used, &f);
			if (rc < 0) {
				if (z->state == ZR_ZMTP_HANDSHAKE)
					return codec_fail_handshake(z, rc);
				return codec_fail(z, rc);
			}
			if (rc == ZR_NEED_MORE) {
				*consumed = off + used;
				return ZR_NEED_MORE;
			}
			rc = conn_on_frame(z, &f, ev, now_ms);
			if (rc == CONN_PARKED) {
				/* The frame stays: a command frame leaves the decoder
				 * at a header, so the same bytes decode again. */
				*consumed = off;
				return ZR_NEED_MORE;
			}
			off += used;
			*consumed = off;
			if (rc != ZR_NEED_MORE)
				return rc;
			continue;
		case ZR_ZMTP_FAILED:
			return z->err;
		}
		/* A state outside the enum: z is not an initialised codec (our
		 * bug or the caller's), never the peer's doing. */
		(void)ZR_INVARIANT(!"z->state is an enum zr_zmtp_state");
		return codec_fail(z, -EINVAL);
	}
}

/* A feed of len octets: more than the leftover of the last call (the
 * caller presents that again) means new bytes, and the peer is alive. */
static void
conn_heard(struct zr_zmtp *z, size_t len, uint64_t now_ms)
{
	if (len > z->unconsumed)
		zr_zmtp_touch(z, now_ms);
}

/* see zmtp.h */
int
zr_zmtp_feed(struct zr_zmtp *z, uint8_t *buf, size_t len, size_t *consumed,
             struct zr_zmtp_event *ev, uint64_t now_ms)
{
	int rc;

	*consumed = 0;
	if (z->err)
		return z->err;
	if (len == 0)
		return ZR_NEED_MORE;
	conn_heard(z, len, now_ms);
	rc = conn_feed(z, buf, len, consumed, ev, now_ms);
	z->unconsumed = len - *consumed;
	return rc;
}

/* see zmtp.h. Each message taken is what dec_feed and conn_on_frame make of
 * a short final data frame in traffic without CURVE: ZR_OK, an
 * ZR_ZMTP_EV_FRAME of the whole body, and the decoder back at a header with
 * no message open (its counters zero, as they were). So nothing of the
 * codec changes but the heartbeat's view of the input. */
size_t
zr_zmtp_feed_msgs(struct zr_zmtp *z, const uint8_t *buf, size_t len, size_t *consumed,
                  struct zr_zmtp_msg *out, size_t max, uint64_t now_ms)
{
	const struct zr_zmtp_dec *d = &z->dec;
	size_t off = 0, n = 0;

	*consumed = 0;
	if (z->err || z->state != ZR_ZMTP_TRAFFIC || z->auth_wait ||
	    z->cfg.mechanism == ZR_MECH_CURVE || d->err || d->state != ZR__ZMTP_DEC_HEADER)
		return 0;
	/* The decoder's own header check decides what the limits allow. */
	while (n < max && len - off >= 2 && buf[off] == 0) {
		uint64_t size = 0;

		if (dec_header_check(d, buf + off, len - off, &size) != 2 || size > len - off - 2)
			break;
		out[n].data = buf + off + 2;
		out[n].len = (size_t)size;
		n++;
		off += 2 + (size_t)size;
	}
	if (n == 0)
		return 0;
	conn_heard(z, len, now_ms);
	z->unconsumed = len - off;
	*consumed = off;
	return n;
}

/* see zmtp.h */
void
zr_zmtp_unfeed_msgs(struct zr_zmtp *z, size_t n)
{
	z->unconsumed += n;
}

/* see zmtp.h */
uint64_t
zr_zmtp_body_left(const struct zr_zmtp *z)
{
	if (z->err || z->state != ZR_ZMTP_TRAFFIC || zr_zmtp_encrypts(z) || z->auth_wait ||
	    z->unconsumed > 0)
		return 0;
	return zr_zmtp_dec_body_left(&z->dec);
}

/* see zmtp.h */
int
zr_zmtp_feed_placed(struct zr_zmtp *z, size_t n, struct zr_zmtp_event *ev, uint64_t now_ms)
{
	struct zr_zmtp_frame f;
	int rc;

	if (z->err)
		return z->err;
	if (n == 0 || n > zr_zmtp_body_left(z))
		return -EINVAL;
	rc = zr_zmtp_dec_placed(&z->dec, n, &f);
	if (rc < 0)
		return codec_fail(z, rc);
	zr_zmtp_touch(z, now_ms);
	memset(ev, 0, sizeof *ev);
	ev->type = ZR_ZMTP_EV_FRAME;
	ev->len = f.len;
	ev->frame_size = f.size;
	ev->offset = f.offset;
	ev->flags = f.flags & (ZR_ZMTP_MORE | ZR_ZMTP_FRAME_END);
	return ZR_OK;
}

/* see zmtp.h */
size_t
zr_zmtp_want(const struct zr_zmtp *z, const uint8_t *buf, size_t len)
{
	switch (z->state) {
	case ZR_ZMTP_GREETING:
		return ZR_ZMTP_GREETING_SIZE;
	case ZR_ZMTP_HANDSHAKE:
	case ZR_ZMTP_TRAFFIC:
		return zr_zmtp_dec_want(&z->dec, buf, len);
	case ZR_ZMTP_FAILED:
		return 0;
	}
	(void)ZR_INVARIANT(!"z->state is an enum zr_zmtp_state");
	return 0;
}

/* see zmtp.h */
bool
zr_zmtp_encrypts(const struct zr_zmtp *z)
{
	return z->cfg.mechanism == ZR_MECH_CURVE && z->state == ZR_ZMTP_TRAFFIC;
}

/* see zmtp.h */
size_t
zr_zmtp_frame_wire_size(const struct zr_zmtp *z, size_t len)
{
	size_t body = len + (zr_zmtp_encrypts(z) ? ZR__CURVE_MESSAGE_MIN : 0);

	return (body > 255 ? 9 : 2) + body;
}

/* see zmtp.h */
int
zr_zmtp_encode_frame(struct zr_zmtp *z, unsigned flags, const uint8_t *data, size_t len,
                     uint8_t *out, size_t cap)
{
	size_t need;
	int h, n;

	if (z->err)
		return z->err;
	if (z->state != ZR_ZMTP_TRAFFIC || (flags & ~(ZR_ZMTP_MORE | ZR_ZMTP_COMMAND)) != 0 ||
	    flags == (ZR_ZMTP_MORE | ZR_ZMTP_COMMAND) || (len > 0 && data == NULL))
		return -EINVAL;
	need = zr_zmtp_frame_wire_size(z, len);
	if (len > (size_t)INT32_MAX - ZR__CURVE_MESSAGE_MIN - ZR_ZMTP_HEADER_MAX)
		return -EINVAL; /* the int return (and crypto_box) limit */
	if (cap < need)
		return -ENOBUFS;
	if (!zr_zmtp_encrypts(z)) {
		h = zr_zmtp_frame_header(out, len, flags);
		if (len > 0)
			memcpy(out + h, data, len);
		return h + (int)len;
	}
	/* libzmq's form: a data frame; MORE and COMMAND go inside the box. */
	h = zr_zmtp_frame_header(out, ZR__CURVE_MESSAGE_MIN + len, 0);
	n = zr__curve_encode_message(conn_curve(z),
	                             (uint8_t)(((flags & ZR_ZMTP_MORE) ? 0x01 : 0) |
	                                       ((flags & ZR_ZMTP_COMMAND) ? 0x02 : 0)),
	                             data, len, out + h, cap - (size_t)h);
	if (n < 0)
		return zr__curve_error(conn_curve(z)) ? codec_fail(z, n) : n;
	return h + n;
}

/* Queues a traffic command (PING, PONG): as it is, or inside a CURVE MESSAGE. */
static void
conn_queue_traffic_cmd(struct zr_zmtp *z, const char *name, const uint8_t *data, size_t len)
{
	uint8_t body[1 + 4 + ZR_ZMTP_PING_CONTEXT_MAX];
	size_t nlen = strlen(name), need;
	uint8_t *p;
	int n;

	if (!zr_zmtp_encrypts(z)) {
		conn_queue_cmd(z, name, data, len);
		return;
	}
	body[0] = (uint8_t)nlen;
	memcpy(body + 1, name, nlen);
	if (len > 0)
		memcpy(body + 1 + nlen, data, len);
	need = zr_zmtp_frame_wire_size(z, 1 + nlen + len);
	p = conn_out_reserve(z, need);
	if (p == NULL)
		return;
	n = zr_zmtp_encode_frame(z, ZR_ZMTP_COMMAND, body, 1 + nlen + len, p, need);
	z->out_len -= need - (n > 0 ? (size_t)n : 0);
}

/* see zmtp.h */
size_t
zr_zmtp_out(struct zr_zmtp *z, const uint8_t **data)
{
	/* PONG and PING are laid out only once everything before them went:
	 * a caller that polls without acking (its socket is full) must not pile
	 * up PONGs until an ERROR no longer fits. The pending flags keep them. */
	bool idle = z->out_head == z->out_len;

	if (idle && z->pong_pending) {
		conn_queue_traffic_cmd(z, "PONG", z->pong_ctx, z->pong_ctx_len);
		z->pong_pending = false;
	}
	if (idle && z->ping_pending) {
		uint8_t ttl[2];

		wire_put16(ttl, (uint16_t)(z->cfg.heartbeat_ttl_ms / 100u > 0xffffu
		                                   ? 0xffffu
		                                   : z->cfg.heartbeat_ttl_ms / 100u));
		conn_queue_traffic_cmd(z, "PING", ttl, sizeof ttl);
		z->ping_pending = false;
	}
	*data = z->out + z->out_head;
	return z->out_len - z->out_head;
}

/* see zmtp.h */
void
zr_zmtp_out_ack(struct zr_zmtp *z, size_t n)
{
	if (n > z->out_len - z->out_head)
		n = z->out_len - z->out_head;
	z->out_head += n;
	if (z->out_head == z->out_len) {
		z->out_head = 0;
		z->out_len = 0;
	}
}

/* see zmtp.h */
int
zr_zmtp_tick(struct zr_zmtp *z, uint64_t now_ms)
{
	if (z->err)
		return z->err;
	if (z->state != ZR_ZMTP_TRAFFIC) {
		if (now_ms >= z->hs_deadline)
			return codec_fail(z, -ZR_EHANDSHAKE_TIMEOUT);
		return 0;
	}
	if (now_ms >= z->ping_deadline)
		return codec_fail(z, -ZR_EHEARTBEAT_TIMEOUT);
	if (z->peer_ttl_ms > 0 && now_ms >= z->last_rx + z->peer_ttl_ms)
		return codec_fail(z, -ZR_EHEARTBEAT_TIMEOUT);
	if (now_ms >= z->next_ping) {
		uint32_t timeout = z->cfg.heartbeat_timeout_ms ? z->cfg.heartbeat_timeout_ms
		                                               : z->cfg.heartbeat_ivl_ms;

		z->ping_pending = true;
		if (z->ping_deadline == CONN_NEVER)
			z->ping_deadline = now_ms + timeout;
		z->next_ping = now_ms + z->cfg.heartbeat_ivl_ms;
	}
	return 0;
}

/* see zmtp.h */
void
zr_zmtp_touch(struct zr_zmtp *z, uint64_t now_ms)
{
	z->last_rx = now_ms;
	z->ping_deadline = CONN_NEVER;
}

/* see zmtp.h */
uint64_t
zr_zmtp_deadline(const struct zr_zmtp *z)
{
	uint64_t d;

	if (z->state == ZR_ZMTP_FAILED)
		return CONN_NEVER;
	if (z->state != ZR_ZMTP_TRAFFIC)
		return z->hs_deadline;
	d = z->next_ping < z->ping_deadline ? z->next_ping : z->ping_deadline;
	if (z->peer_ttl_ms > 0 && z->last_rx + z->peer_ttl_ms < d)
		d = z->last_rx + z->peer_ttl_ms;
	return d;
}

/* see zmtp.h */
int
zr_zmtp_abort(struct zr_zmtp *z, int err, const char *reason)
{
	if (z->err)
		return z->err;
	if (conn_may_send_error(z))
		conn_queue_error(z, reason ? reason : zr_strerror(err));
	return codec_fail(z, err);
}

/* see zmtp.h */
int
zr_zmtp_state(const struct zr_zmtp *z)
{
	return (int)z->state;
}

/* see zmtp.h */
int
zr_zmtp_error(const struct zr_zmtp *z)
{
	return z->err;
}

/* see zmtp.h */
uint8_t
zr_zmtp_peer_minor(const struct zr_zmtp *z)
{
	if (z->peer_major > 3 || z->peer_minor > z->cfg.minor)
		return z->cfg.minor;
	return z->peer_minor;
}

/* see zmtp.h */
int
zr_zmtp_peer_type(const struct zr_zmtp *z)
{
	return z->state == ZR_ZMTP_TRAFFIC || z->state == ZR_ZMTP_FAILED ? z->peer_type : -1;
}

/* see zmtp.h */
int
zr_zmtp_auth_status(const struct zr_zmtp *z, const char **text)
{
	if (text != NULL)
		*text = z->auth_text;
	return z->auth_status;
}

/* see zmtp.h */
int
zr_zmtp_auth_reply(struct zr_zmtp *z, int status, const char *user_id, const char *text)
{
	int rc;

	if (z->err)
		return z->err;
	if (!z->auth_wait)
		return -EINVAL;
	z->auth_wait = false;
	rc = conn_auth_answer(z, status, user_id, text);
	if (rc < 0)
		return rc;
	switch (z->step) {
	case ZR__ZMTP_NULL_WAIT_READY:
		conn_queue_metadata(z, "READY");
		return 0;
	case ZR__ZMTP_PLAIN_S_WAIT_HELLO:
		conn_queue_cmd(z, "WELCOME", NULL, 0);
		z->step = ZR__ZMTP_PLAIN_S_WAIT_INITIATE;
		return 0;
	case ZR__ZMTP_CURVE_S_WAIT_INITIATE:
		return 0; /* the next feed completes the parked INITIATE */
	case ZR__ZMTP_STEP_NONE:
	case ZR__ZMTP_PLAIN_C_WAIT_WELCOME:
	case ZR__ZMTP_PLAIN_C_WAIT_READY:
	case ZR__ZMTP_PLAIN_S_WAIT_INITIATE:
	case ZR__ZMTP_CURVE_C_WAIT_WELCOME:
	case ZR__ZMTP_CURVE_C_WAIT_READY:
	case ZR__ZMTP_CURVE_S_WAIT_HELLO:
		break;
	}
	(void)ZR_INVARIANT(!"a wait for the authenticator only at a step that asks it");
	return codec_fail(z, -EINVAL);
}

/* see zmtp.h */
bool
zr_zmtp_auth_pending(const struct zr_zmtp *z)
{
	return z->auth_wait && z->err == 0;
}
