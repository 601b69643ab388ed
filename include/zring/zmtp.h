/*
 * zring — the ZMTP 3.1 codec (RFC 23, 37; PLAIN RFC 24; CURVE RFC 25, 26).
 * Sans-IO.
 *
 * The codec never performs I/O, reads a clock, starts a thread or allocates.
 * (CURVE needs randomness: it comes from libsodium's randombytes_buf unless
 * the configuration supplies its own source, see zr_zmtp_config.random.)
 * The caller feeds it the bytes that arrived (in any chunking) and the time
 * (now_ms, any monotonic millisecond clock), takes typed events out, and
 * writes the bytes the codec asks it to write.
 *
 * The input contract (the same for zr_zmtp_feed and zr_zmtp_dec_feed):
 *   - Each call reports in *consumed how many leading bytes of buf it used.
 *     The caller may drop those; the rest it MUST present again at the start
 *     of buf on the next call, with any new bytes appended after them.
 *   - The codec consumes only whole units: the 64-octet greeting, a whole
 *     frame header, a whole command frame (header and body), or any part of a
 *     message frame's body. So the caller must be able to hold at least
 *     zr_zmtp_want() contiguous bytes; that is bounded by the configured
 *     command limits (plus 9 for a header), never by the peer.
 *   - Message frame bodies are never copied: an event points into buf. A body
 *     that is not yet all there comes out in pieces (offset, len), the last one
 *     flagged ZR_ZMTP_FRAME_END. Under CURVE a frame is one MESSAGE command
 *     whose box can only be opened whole, so message frames are consumed
 *     whole (zr_zmtp_want says how much to hold: up to max_msg_size + 42) and
 *     decrypted IN PLACE: the consumed bytes of buf are overwritten with the
 *     plaintext, which the event points at. That is why buf is not const. Split the input differently and the pieces
 *     differ, but the frames they join into, and every other event, are the
 *     same.
 *   - Every span in an event points into the buf of the call that returned
 *     it, and is valid while the caller keeps those bytes unchanged.
 *   - len == 0 is a harmless no-op that returns ZR_NEED_MORE.
 *
 * Errors are sticky: once a call fails, every later call on the same object
 * returns the same negative code. Codes are listed in <zring/error.h>.
 *
 * Thread affinity: none. An object may be used from one thread at a time.
 */
#ifndef ZR_ZMTP_H
#define ZR_ZMTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring/error.h>
#include <zring/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Socket types: the numbers libzmq gives them, names as RFC 23 spells them. */

enum zr_socktype {
	ZR_PAIR = 0,
	ZR_PUB = 1,
	ZR_SUB = 2,
	ZR_REQ = 3,
	ZR_REP = 4,
	ZR_DEALER = 5,
	ZR_ROUTER = 6,
	ZR_PULL = 7,
	ZR_PUSH = 8,
	ZR_XPUB = 9,
	ZR_XSUB = 10,
	ZR_STREAM = 11, /* raw TCP in libzmq; never appears in a ZMTP handshake */
	ZR_SERVER = 12,
	ZR_CLIENT = 13,
	ZR_RADIO = 14,
	ZR_DISH = 15,
	ZR_GATHER = 16,
	ZR_SCATTER = 17,
	ZR_DGRAM = 18, /* UDP only; never appears in a ZMTP handshake */
	ZR_PEER = 19,
	ZR_CHANNEL = 20,
	ZR_SOCKTYPE_COUNT
};

/* "PUSH", "ROUTER", ...; NULL for a value that is not a socket type. */
ZR_API const char *zr_socktype_name(int type);

/*
 * The socket type named by the len octets at s: exact, upper case, as RFC 23
 * spells it (libzmq compares the value exactly too, so "push" is refused).
 * Returns the type (>= 0) or -ZR_ESOCKTYPE.
 */
ZR_API int zr_socktype_parse(const uint8_t *s, size_t len);

/* Whether a socket of type ours may talk to a peer of type peer (RFC 23 and
 * the draft types of RFC 41/48/49/51/52). Symmetric. */
ZR_API bool zr_socktype_compatible(int ours, int peer);

/* ---------------------------------------------------------------------- */
/* Greeting (RFC 23 "Greeting"). */

enum zr_mechanism {
	ZR_MECH_NULL = 0,
	ZR_MECH_PLAIN = 1,
	ZR_MECH_CURVE = 2, /* CurveZMQ (RFC 26), libsodium's crypto_box */
};

#define ZR_ZMTP_GREETING_SIZE 64

struct zr_zmtp_greeting {
	uint8_t major;
	uint8_t minor;
	int mechanism;           /* enum zr_mechanism; -1 for a well-formed name we do not know */
	char mechanism_name[21]; /* NUL-terminated copy of the 20 octets */
	bool as_server;
};

/*
 * Writes our 64-octet greeting: 0xFF, 8 zero octets, 0x7F, 3, minor, the
 * mechanism name NUL-padded to 20, as_server, 31 zero octets. Returns 64, or
 * -EINVAL for a mechanism it does not know.
 */
ZR_API int zr_zmtp_greeting_encode(uint8_t out[ZR_ZMTP_GREETING_SIZE], uint8_t minor, int mechanism,
                                   bool as_server);

/*
 * Checks the first len octets (len may be below 64) of a peer's greeting.
 * Signature padding (octets 1..8) and the as-server octet's meaning are never
 * judged (libzmq puts an identity length in the padding). Returns
 *   ZR_NEED_MORE   len < 64 and nothing wrong so far (octet 0 is checked as
 *                  soon as it is there, octet 9 likewise, the version at 10),
 *   ZR_OK          len >= 64 and the greeting is well-formed; *g filled,
 *   -ZR_ESIGNATURE octet 0 is not 0xFF or octet 9 not 0x7F (ZMTP 1.0, not ZMTP),
 *   -ZR_EVERSION   major version below 3 (ZMTP 2.0 and older),
 *   -ZR_EMECHANISM mechanism octets malformed (characters outside A-Z 0-9
 *                  - _ . +, empty, or non-NUL bytes after the first NUL).
 * g may be NULL.
 */
ZR_API int zr_zmtp_greeting_parse(const uint8_t *buf, size_t len, struct zr_zmtp_greeting *g);

/* ---------------------------------------------------------------------- */
/* Frames (RFC 23 "Framing"). */

#define ZR_ZMTP_MORE 0x01u       /* flag octet: more frames follow in this message */
#define ZR_ZMTP_LONG 0x02u       /* flag octet: 8-octet size */
#define ZR_ZMTP_COMMAND 0x04u    /* flag octet: a command frame */
#define ZR_ZMTP_FRAME_END 0x100u /* event flag only: this piece completes its frame */

#define ZR_ZMTP_HEADER_MAX 9 /* flags + 8-octet size */

#define ZR_ZMTP_DEFAULT_MAX_MSG_SIZE ((uint64_t)64 * 1024 * 1024)
#define ZR_ZMTP_DEFAULT_MAX_CMD_SIZE (64u * 1024u)     /* after the handshake */
#define ZR_ZMTP_DEFAULT_MAX_HANDSHAKE_CMD (8u * 1024u) /* before it completes */
/* Frames in one message. MAXMSGSIZE counts only frame bodies, so without
 * this a peer could send empty MORE frames (2 octets each on the wire) for
 * ever and a caller that keeps one record per frame would grow without
 * bound. 65536 frames: a 1 MiB table of 16-octet spans in the engine. */
#define ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES 65536u

/*
 * Writes a frame header into out: 2 octets for size <= 255, 9 for larger
 * (network order). flags: ZR_ZMTP_MORE and/or ZR_ZMTP_COMMAND (a command must
 * not carry MORE). Returns the header length (2 or 9), or -EINVAL for bad
 * flags or a size above 2^63-1. The body is written by the caller: a send can
 * be one iovec for the header and one for the body.
 */
ZR_API int zr_zmtp_frame_header(uint8_t out[ZR_ZMTP_HEADER_MAX], uint64_t size, unsigned flags);

/* The largest frame body a 2-octet header carries. */
#define ZR_ZMTP_SHORT_MAX 255u

/*
 * zr_zmtp_frame_header's usual case, inline for an encoder's loop over many
 * small messages: a message frame (not a command) of size octets, at most
 * ZR_ZMTP_SHORT_MAX, with more ZR_ZMTP_MORE or 0. Writes the 2 octets
 * zr_zmtp_frame_header would.
 */
static inline void
zr_zmtp_short_header(uint8_t out[2], uint8_t size, unsigned more)
{
	out[0] = (uint8_t)(more & ZR_ZMTP_MORE);
	out[1] = size;
}

/* One frame, or a piece of one, as the decoder hands it out. */
struct zr_zmtp_frame {
	const uint8_t *data; /* this piece's bytes, in the caller's buffer */
	size_t len;          /* this piece's length (0 for an empty frame) */
	uint64_t size;       /* the whole frame body's declared size */
	uint64_t offset;     /* where this piece starts within the body */
	unsigned flags;      /* ZR_ZMTP_MORE, ZR_ZMTP_COMMAND, ZR_ZMTP_FRAME_END */
};

/* Private to the decoder (zmtp/frame.c), for struct zr_zmtp_dec; not API:
 * names and values may change. What the next octets are. */
enum zr__zmtp_dec_state {
	ZR__ZMTP_DEC_HEADER = 0,  /* a frame header, no message open */
	ZR__ZMTP_DEC_HEADER_MORE, /* a frame header inside a multipart message */
	ZR__ZMTP_DEC_BODY,        /* a message frame's body (body_flags says whether MORE) */
};

/* The frame decoder. Caller storage; initialise with zr_zmtp_dec_init. The
 * members are private: do not rely on their names or layout. */
struct zr_zmtp_dec {
	uint64_t max_msg_size;   /* limit on the sum of a message's frame sizes */
	uint32_t max_cmd_size;   /* limit on one command frame's body */
	uint64_t msg_total;      /* bytes of the current message so far */
	uint32_t max_msg_frames; /* limit on the frames of one message */
	uint32_t msg_frames;     /* frames of the current message so far */
	uint64_t body_size;      /* the frame whose body is being handed out */
	uint64_t body_off;
	unsigned body_flags;
	enum zr__zmtp_dec_state state;
	bool whole; /* a mode, not a state: message frames too come out whole (CURVE) */
	int err;    /* sticky */
};

/* Initialises d; its frame limit is ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES. */
ZR_API void zr_zmtp_dec_init(struct zr_zmtp_dec *d, uint64_t max_msg_size, uint32_t max_cmd_size);

/* Changes the limit on the frames of one message (commands do not count);
 * 0 means ZR_ZMTP_DEFAULT_MAX_MSG_FRAMES, UINT32_MAX in effect none. Set it
 * before the first message. */
ZR_API void zr_zmtp_dec_set_frame_limit(struct zr_zmtp_dec *d, uint32_t max_msg_frames);

/* Changes the command limit (the connection raises it once the handshake is done). */
ZR_API void zr_zmtp_dec_set_cmd_limit(struct zr_zmtp_dec *d, uint32_t max_cmd_size);

/*
 * Whole mode: message frames, like commands, are handed out only once their
 * whole body is in buf (one piece, offset 0, ZR_ZMTP_FRAME_END), so the
 * caller must hold up to max_msg_size + 9 bytes. CURVE needs it: a MESSAGE
 * box opens only whole. Off by default.
 */
ZR_API void zr_zmtp_dec_set_whole(struct zr_zmtp_dec *d, bool whole);

/*
 * Decodes from buf (see the input contract at the top). Returns
 *   ZR_OK         *f holds a command frame (whole: ZR_ZMTP_COMMAND and
 *                 ZR_ZMTP_FRAME_END set) or a piece of a message frame;
 *   ZR_NEED_MORE  nothing more can be decoded from buf;
 *   -ZR_EFLAGS, -ZR_ECMDMORE, -ZR_EFRAMESIZE, -ZR_ETOOLARGE, -ZR_ECMDSIZE,
 *   -ZR_ECMDINMSG, -ZR_ETOOMANYFRAMES  (sticky). Sizes and the frame count
 *                 are checked against the limits as soon as the header is
 *                 there, before any body byte is taken.
 */
ZR_API int zr_zmtp_dec_feed(struct zr_zmtp_dec *d, const uint8_t *buf, size_t len, size_t *consumed,
                            struct zr_zmtp_frame *f);

/* How many contiguous bytes, from the first unconsumed one, the next call
 * needs at least to make progress (1 while in a message body). */
ZR_API size_t zr_zmtp_dec_want(const struct zr_zmtp_dec *d, const uint8_t *buf, size_t len);

/*
 * Direct placement of a large body. Once the first piece of a message
 * frame's body has been handed out and more is to come, the caller may
 * receive the rest straight into its own copy of the frame instead of
 * presenting it in buf (saving one copy of every body byte):
 * zr_zmtp_dec_body_left says how many body octets are still to come (0 when
 * the decoder is not inside such a body, or none of it was handed out yet),
 * and zr_zmtp_dec_placed(d, n, f) takes n <= that many as if they had been
 * fed: *f is the piece (data NULL: the bytes are where the caller put
 * them), ZR_ZMTP_FRAME_END on the last one. Only while buf holds nothing
 * unconsumed: the placed octets are the next ones of the stream. Returns
 * ZR_OK, the sticky error, or -EINVAL (n is 0 or more than is left).
 */
ZR_API uint64_t zr_zmtp_dec_body_left(const struct zr_zmtp_dec *d);
ZR_API int zr_zmtp_dec_placed(struct zr_zmtp_dec *d, size_t n, struct zr_zmtp_frame *f);

/* ---------------------------------------------------------------------- */
/* Commands (RFC 23 "Commands", RFC 24, RFC 37). */

enum zr_zmtp_cmd_type {
	ZR_CMD_UNKNOWN = 0, /* a well-formed name we do not know */
	ZR_CMD_READY,
	ZR_CMD_ERROR,
	ZR_CMD_SUBSCRIBE,
	ZR_CMD_CANCEL,
	ZR_CMD_PING,
	ZR_CMD_PONG,
	ZR_CMD_HELLO,    /* PLAIN layout */
	ZR_CMD_WELCOME,  /* PLAIN: empty */
	ZR_CMD_INITIATE, /* PLAIN layout: metadata */
};

#define ZR_ZMTP_PING_CONTEXT_MAX 16

/* A parsed command. Spans point into the body given to zr_zmtp_cmd_parse. */
struct zr_zmtp_cmd {
	int type; /* enum zr_zmtp_cmd_type */
	const uint8_t *name;
	size_t name_len;
	const uint8_t *data; /* everything after the name */
	size_t data_len;
	/* READY, INITIATE: the metadata (already validated); ERROR: the reason;
	 * SUBSCRIBE, CANCEL: the topic; PING, PONG: the context. */
	const uint8_t *value;
	size_t value_len;
	uint16_t ttl; /* PING: tenths of a second */
	/* HELLO (PLAIN) */
	const uint8_t *username;
	size_t username_len;
	const uint8_t *password;
	size_t password_len;
};

/*
 * Parses one command body (the frame body, starting at the name length).
 * mechanism selects the layout of the mechanism commands (HELLO, WELCOME,
 * INITIATE); with ZR_MECH_NULL they parse as ZR_CMD_UNKNOWN. Returns 0, or
 * -ZR_ECMDNAME, -ZR_EERRORCMD, -ZR_EPING, -ZR_EPONG, -ZR_EPLAIN,
 * -ZR_EPROPNAME, -ZR_EPROPTRUNC, -ZR_EPROPVALUE.
 */
ZR_API int zr_zmtp_cmd_parse(const uint8_t *body, size_t len, int mechanism,
                             struct zr_zmtp_cmd *cmd);

/*
 * Writes a whole command frame (header, name, data) into out. Returns the
 * number of octets written, -ENOBUFS if cap is too small, -EINVAL for a name
 * of 0 or more than 255 octets.
 */
ZR_API int zr_zmtp_cmd_encode(uint8_t *out, size_t cap, const char *name, const uint8_t *data,
                              size_t len);

/* Metadata: name-length(1) name value-length(4, network order) value, repeated. */
struct zr_zmtp_prop {
	const char *name; /* 1..255 characters from A-Z a-z 0-9 - _ . + */
	const uint8_t *value;
	size_t value_len; /* < 2^31 */
};

/* Appends one property to out. Returns octets written, -ENOBUFS or -EINVAL. */
ZR_API int zr_zmtp_prop_encode(uint8_t *out, size_t cap, const char *name, const uint8_t *value,
                               size_t value_len);

/*
 * Validates a whole metadata block: every name well-formed, every length
 * inside the block, Identity (any case) at most 255 octets. Returns 0,
 * -ZR_EPROPNAME, -ZR_EPROPTRUNC or -ZR_EPROPVALUE.
 */
ZR_API int zr_zmtp_props_validate(const uint8_t *p, size_t len);

/*
 * Finds a property by name, matching names case-insensitively (RFC 23). The
 * block must have been validated. Returns 0 with *value / *value_len set, or
 * -ENOENT.
 */
ZR_API int zr_zmtp_props_find(const uint8_t *p, size_t len, const char *name, const uint8_t **value,
                              size_t *value_len);

/* Iterates a validated block: returns 1 with the next property, 0 at the end. */
struct zr_zmtp_prop_iter {
	const uint8_t *p;
	const uint8_t *end;
};
ZR_API int zr_zmtp_props_next(struct zr_zmtp_prop_iter *it, const uint8_t **name, size_t *name_len,
                              const uint8_t **value, size_t *value_len);

/*
 * The prefix of a subscription frame for a peer of minor version peer_minor:
 * the frame header and either the ZMTP 3.1 command name (\x09SUBSCRIBE,
 * \x06CANCEL) or the ZMTP 3.0 message octet (0x01, 0x00). The topic follows
 * it on the wire. Returns the prefix length.
 */
#define ZR_ZMTP_SUB_PREFIX_MAX (ZR_ZMTP_HEADER_MAX + 10)
ZR_API int zr_zmtp_sub_prefix(uint8_t out[ZR_ZMTP_SUB_PREFIX_MAX], uint8_t peer_minor,
                              bool subscribe, size_t topic_len);

/* ---------------------------------------------------------------------- */
/* The connection: greeting -> mechanism handshake -> traffic. */

#define ZR_ZMTP_USER_ID_MAX 255   /* octets of a user id an authenticator gives */
#define ZR_ZMTP_AUTH_TEXT_MAX 127 /* octets of its status text */

/*
 * PLAIN and CURVE servers ask the application about every client that
 * completed the mechanism's own checks (PLAIN: HELLO; CURVE: INITIATE with a
 * valid cookie, box and vouch), before the client is READY. The request
 * fields are the client's; the answer fields start empty and the callback may
 * fill them.
 */
struct zr_zmtp_auth_req {
	int mechanism;            /* ZR_MECH_PLAIN, ZR_MECH_CURVE, or ZR_MECH_NULL (auth_null) */
	const char *peer_address; /* zr_zmtp_config.peer_address (may be NULL) */
	/* zr_zmtp_config.tls_subject: on a tls:// connection with a client
	 * certificate, its subject ("CN=client,O=example"); else NULL or "". */
	const char *tls_subject;
	/* PLAIN: the HELLO credentials */
	const uint8_t *username;
	size_t username_len;
	const uint8_t *password;
	size_t password_len;
	/* CURVE: the client's long-term public key, ZR_CURVE_KEY_LEN octets */
	const uint8_t *client_key;

	/* Answer on accept (optional): the user id the client's messages carry
	 * as their "User-Id" property. NUL-terminated. */
	char user_id[ZR_ZMTP_USER_ID_MAX + 1];
	/* Answer on refusal (optional): why, for the local side's logs and
	 * monitor events. NUL-terminated. It is NOT sent: the ERROR carries the
	 * bare three-digit status, the only form libzmq peers recognise as an
	 * authentication failure (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH). */
	char text[ZR_ZMTP_AUTH_TEXT_MAX + 1];
};

/*
 * Returns a ZAP status code (RFC 27): 200 accepts; 300 (temporary), 400
 * (refused) or 500 (internal error) refuses (any other value counts as 500),
 * and the three digits are sent as the ERROR reason. Or it returns
 * ZR_ZMTP_AUTH_PENDING: the answer comes later, through zr_zmtp_auth_reply
 * (an asynchronous authenticator such as a ZAP handler). Called from inside
 * zr_zmtp_feed, on its thread; it must not call back into the same codec.
 * Everything req points at is valid only during the call: a pending
 * authenticator copies what it needs.
 */
typedef int zr_zmtp_auth_cb(void *arg, struct zr_zmtp_auth_req *req);

/*
 * The authenticator's "ask me later". The codec then parks the handshake:
 * zr_zmtp_feed takes nothing more (it returns ZR_NEED_MORE, leaving every
 * further byte unconsumed; under CURVE the INITIATE itself stays unconsumed,
 * its box already opened in place, so keep the bytes as they are), emits
 * nothing and queues nothing; it keeps no timer of its own, but the
 * handshake deadline (zr_zmtp_tick) still runs. zr_zmtp_auth_reply ends the
 * wait exactly as the same synchronous answer would have.
 */
#define ZR_ZMTP_AUTH_PENDING 1

/* A source of randomness (CURVE): fills buf with len unpredictable octets.
 * Must not fail. */
typedef void zr_zmtp_random_cb(void *arg, uint8_t *buf, size_t len);

struct zr_zmtp_config {
	int socket_type; /* enum zr_socktype: ours, sent as Socket-Type */
	int mechanism;   /* ZR_MECH_NULL, ZR_MECH_PLAIN or ZR_MECH_CURVE. Only a peer
	                    announcing the same mechanism is accepted: a PLAIN or
	                    CURVE codec never falls back to NULL (downgrade). */
	bool as_server;  /* the mechanism role (PLAIN / CURVE server). Sent in the
	                    greeting; the peer's as-server octet is never read
	                    (libzmq always sends 0). */
	uint8_t minor;   /* the minor version we announce: 1 (ZMTP 3.1, default) or 0 */

	/* Identity sent in READY for REQ, DEALER and ROUTER (empty if none), as
	 * libzmq does; at most 255 octets. Borrowed: keep it alive while the
	 * codec is in its handshake. */
	const uint8_t *routing_id;
	size_t routing_id_len;
	/* Extra metadata ("X-..." application properties). Borrowed likewise. */
	const struct zr_zmtp_prop *props;
	size_t props_count;

	/* PLAIN client credentials, 0..255 octets each. Borrowed likewise. */
	const uint8_t *username;
	size_t username_len;
	const uint8_t *password;
	size_t password_len;
	/* CURVE keys, ZR_CURVE_KEY_LEN octets each, copied at init (the codec
	 * wipes its copies when the handshake ends and in zr_zmtp_fini). Both
	 * roles: our long-term key pair (a server's is the one its clients know
	 * by the public half). Client: the server's public key as well. */
	const uint8_t *curve_public_key;
	const uint8_t *curve_secret_key;
	const uint8_t *curve_server_key;
	/* CURVE randomness; NULL: libsodium's randombytes_buf. Tests and fuzzers
	 * fix it to make the handshake reproducible. */
	zr_zmtp_random_cb *random;
	void *random_arg;

	/* PLAIN / CURVE server: asked about every client. NULL accepts every
	 * client that completes the handshake, as libzmq does without a ZAP
	 * handler. */
	zr_zmtp_auth_cb *auth;
	void *auth_arg;
	/* NULL mechanism: ask auth too (mechanism ZR_MECH_NULL, no credentials),
	 * right after the peer's greeting, and send READY only once it accepts
	 * (libzmq asks ZAP about NULL peers when ZAP_DOMAIN is set). Either
	 * role. Default false: NULL peers are not asked. */
	bool auth_null;
	/* Passed to auth as peer_address ("tcp://127.0.0.1:5555"). Borrowed. */
	const char *peer_address;
	/* Passed to auth as tls_subject; read when auth runs, so the caller
	 * may fill the string after zr_zmtp_init (once its TLS handshake is
	 * done). Borrowed; NULL: none. */
	const char *tls_subject;

	uint64_t max_msg_size; /* MAXMSGSIZE: default 64 MiB */
	/* Frames in one message (MAXFRAMES): default 65536; 0 means the default,
	 * UINT32_MAX in effect none. The frame that would be one more fails the
	 * connection with -ZR_ETOOMANYFRAMES as soon as its header is in, with
	 * the same ERROR policy as -ZR_ETOOLARGE (see zr_zmtp_feed). Under CURVE
	 * it counts the MESSAGE boxes of one message. */
	uint32_t max_msg_frames;
	uint32_t max_cmd_size;      /* command frames after the handshake: 64 KiB */
	uint32_t max_handshake_cmd; /* command frames before it completes: 8 KiB */

	uint32_t handshake_ivl_ms;     /* HANDSHAKE_IVL: 30000; 0 = no deadline */
	uint32_t heartbeat_ivl_ms;     /* HEARTBEAT_IVL: 0 = send no PING */
	uint32_t heartbeat_ttl_ms;     /* HEARTBEAT_TTL: sent in PING, rounded down to 100 ms */
	uint32_t heartbeat_timeout_ms; /* HEARTBEAT_TIMEOUT: 0 = heartbeat_ivl_ms */
};

/* Fills *cfg with the defaults above for a socket of the given type (NULL mechanism). */
ZR_API void zr_zmtp_config_default(struct zr_zmtp_config *cfg, int socket_type);

enum zr_zmtp_state {
	ZR_ZMTP_GREETING = 1, /* waiting for the peer's greeting */
	ZR_ZMTP_HANDSHAKE,    /* mechanism handshake */
	ZR_ZMTP_TRAFFIC,      /* READY done: messages flow */
	ZR_ZMTP_FAILED,       /* sticky error; drain zr_zmtp_out (it may hold ERROR), then close */
};

enum zr_zmtp_ev_type {
	ZR_ZMTP_EV_READY = 1,  /* handshake complete; peer_* fields and the metadata */
	ZR_ZMTP_EV_FRAME,      /* a message frame, or a piece of one */
	ZR_ZMTP_EV_SUBSCRIBE,  /* a SUBSCRIBE command (ZMTP 3.1 form); data = topic */
	ZR_ZMTP_EV_CANCEL,     /* a CANCEL command; data = topic */
	ZR_ZMTP_EV_PEER_ERROR, /* the peer sent ERROR; data = reason. The connection is
	                         now failed with -ZR_EPEERERROR: do not reconnect with
	                         the same credentials. */
};

struct zr_zmtp_event {
	int type;            /* enum zr_zmtp_ev_type */
	const uint8_t *data; /* see the type; READY: the peer's whole metadata block */
	size_t len;
	/* FRAME */
	uint64_t frame_size;
	uint64_t offset;
	unsigned flags; /* ZR_ZMTP_MORE, ZR_ZMTP_FRAME_END */
	/* READY */
	int peer_type;                /* enum zr_socktype */
	const uint8_t *peer_identity; /* the Identity property, or NULL */
	size_t peer_identity_len;
	const char *user_id; /* server: what the authenticator gave ("" if none) */
};

/* Room for the bytes the codec writes itself: greeting, one handshake
 * command (metadata, PLAIN HELLO, CURVE HELLO / INITIATE), PING, PONG, ERROR. */
#define ZR_ZMTP_OUT_MAX 2048

/* Room for a mechanism's private state inside struct zr_zmtp (CURVE). */
#define ZR_ZMTP_MECH_STATE_MAX 768

/* Private to the codec (zmtp/conn.c), for struct zr_zmtp; not API: names
 * and values may change. The mechanism's own step inside ZR_ZMTP_HANDSHAKE:
 * what the peer's next command must be (C: we are the client, S: the
 * server). */
enum zr__zmtp_step {
	ZR__ZMTP_STEP_NONE = 0, /* before the handshake */
	ZR__ZMTP_NULL_WAIT_READY,
	ZR__ZMTP_PLAIN_C_WAIT_WELCOME,
	ZR__ZMTP_PLAIN_C_WAIT_READY,
	ZR__ZMTP_PLAIN_S_WAIT_HELLO,
	ZR__ZMTP_PLAIN_S_WAIT_INITIATE,
	ZR__ZMTP_CURVE_C_WAIT_WELCOME,
	ZR__ZMTP_CURVE_C_WAIT_READY,
	ZR__ZMTP_CURVE_S_WAIT_HELLO,
	ZR__ZMTP_CURVE_S_WAIT_INITIATE,
};

/* The connection codec. Caller storage; initialise with zr_zmtp_init. The
 * members are private: do not rely on their names or layout. */
struct zr_zmtp {
	struct zr_zmtp_config cfg;
	struct zr_zmtp_dec dec;
	enum zr_zmtp_state state;
	enum zr__zmtp_step step; /* inside ZR_ZMTP_HANDSHAKE */
	int err;                 /* sticky */
	uint8_t peer_major, peer_minor;
	int peer_type;
	uint64_t hs_deadline; /* UINT64_MAX when none */
	uint64_t last_rx;
	uint64_t next_ping;     /* UINT64_MAX when none */
	uint64_t ping_deadline; /* UINT64_MAX unless a PING waits for traffic */
	uint32_t peer_ttl_ms;   /* from the peer's last PING; 0 = none */
	bool pong_pending;
	uint8_t pong_ctx_len;
	uint8_t pong_ctx[ZR_ZMTP_PING_CONTEXT_MAX];
	bool ping_pending;
	size_t unconsumed;   /* what the last feed left: re-presented bytes are not traffic */
	uint64_t msg_total;  /* CURVE: plaintext octets of the message so far */
	uint32_t msg_frames; /* CURVE: frames of the message so far */
	bool msg_more;       /* CURVE: the last frame had MORE */
	int auth_status;     /* server: the authenticator's answer (0: not asked) */
	bool auth_wait;      /* parked: the authenticator answered ZR_ZMTP_AUTH_PENDING */
	bool auth_ok;        /* it accepted (a parked CURVE INITIATE resumes on this) */
	uint32_t hold_off;   /* parked CURVE INITIATE: its metadata, from the body's start */
	uint32_t hold_len;
	char user_id[ZR_ZMTP_USER_ID_MAX + 1];
	char auth_text[ZR_ZMTP_AUTH_TEXT_MAX + 1];
	size_t out_head, out_len;
	uint8_t out[ZR_ZMTP_OUT_MAX];
	union {
		uint64_t align;
		unsigned char bytes[ZR_ZMTP_MECH_STATE_MAX];
	} mech; /* CURVE: the CurveZMQ state (keys, nonces) */
};

/*
 * Initialises z and queues our greeting in its output. Returns 0, or -EINVAL
 * (unknown socket type or mechanism, minor not 0/1, credentials or identity
 * over 255 octets, a bad property name, CURVE without its keys), -EMSGSIZE
 * (metadata too large for ZR_ZMTP_OUT_MAX), -ENOSYS (libsodium failed to
 * initialise). Call zr_zmtp_fini when done with z.
 */
ZR_API int zr_zmtp_init(struct zr_zmtp *z, const struct zr_zmtp_config *cfg, uint64_t now_ms);

/* Wipes z's key material (CURVE). Idempotent; z may be initialised again. */
ZR_API void zr_zmtp_fini(struct zr_zmtp *z);

/*
 * Feeds received bytes (see the input contract at the top). Returns
 *   ZR_OK         *ev holds an event;
 *   ZR_NEED_MORE  everything usable was consumed (or len was 0);
 *   a negative code (sticky) for a protocol error; the codec may have queued
 *                 an ERROR command: drain zr_zmtp_out before closing.
 * A call whose buf holds more than the previous call left unconsumed counts
 * as traffic for the heartbeat (re-presented bytes alone prove nothing about
 * the peer). PINGs are answered and PONGs and unknown commands (after the
 * handshake) are taken without an event.
 *
 * ERROR is queued for errors found after the greeting and before the
 * handshake completes (the peer learns why; RFC 23 "Error Handling"), not for
 * a bad greeting (no framing yet) nor for errors in traffic (the connection
 * is just closed, as libzmq does). A CURVE client never sends ERROR (in
 * RFC 26 only the server does; libzmq's CURVE server would take it as one
 * more protocol violation): it just closes.
 */
ZR_API int zr_zmtp_feed(struct zr_zmtp *z, uint8_t *buf, size_t len, size_t *consumed,
                        struct zr_zmtp_event *ev, uint64_t now_ms);

/* How many contiguous bytes the next feed needs at least (see the contract). */
ZR_API size_t zr_zmtp_want(const struct zr_zmtp *z, const uint8_t *buf, size_t len);

/*
 * Direct placement (see zr_zmtp_dec_placed) at the connection level: in
 * traffic without encryption (a CURVE box is opened whole), the octets of
 * the current message frame's body still to come once its first piece was
 * handed out (0 otherwise), and n <= that many of them taken as if fed: *ev
 * is their ZR_ZMTP_EV_FRAME piece with data NULL. They count as traffic for
 * the heartbeat. Only while nothing fed is left unconsumed. Returns ZR_OK,
 * the connection's sticky error, or -EINVAL (n is 0 or more than is left:
 * the caller's bug, not the peer's; nothing changes).
 */
ZR_API uint64_t zr_zmtp_body_left(const struct zr_zmtp *z);
ZR_API int zr_zmtp_feed_placed(struct zr_zmtp *z, size_t n, struct zr_zmtp_event *ev,
                               uint64_t now_ms);

/* A whole one-frame message, as zr_zmtp_feed_msgs hands it out: its body,
 * in the buf of that call. */
struct zr_zmtp_msg {
	const uint8_t *data;
	size_t len;
};

/*
 * The traffic fast path: the whole one-frame messages at the start of buf in
 * one call, where zr_zmtp_feed would hand them out one ZR_ZMTP_EV_FRAME each.
 * Up to max of them, each a short frame (two-octet header, flags 0: no MORE,
 * no COMMAND, no LONG) whose body is all in buf and within the limits. It
 * stops, consuming nothing of it, at anything else (a command, a frame of a
 * multi-frame message, a long header, a body not all there, a frame the
 * limits refuse), which zr_zmtp_feed then takes as usual; and it takes
 * nothing before traffic, under CURVE, while an authenticator's answer is
 * awaited, in the middle of a message, or after an error. Same input
 * contract as zr_zmtp_feed. Returns how many messages it wrote to out
 * (0 .. max); *consumed is the octets they span (0 with none), which count
 * as traffic for the heartbeat. Never fails: what would be an error is left
 * for zr_zmtp_feed to find and report.
 */
ZR_API size_t zr_zmtp_feed_msgs(struct zr_zmtp *z, const uint8_t *buf, size_t len, size_t *consumed,
                                struct zr_zmtp_msg *out, size_t max, uint64_t now_ms);

/*
 * Gives back the last n octets the latest zr_zmtp_feed_msgs call consumed
 * (messages its caller could not take): the caller presents them again at
 * the start of its next buf, and they are fed as if never consumed. n must
 * not exceed that call's *consumed.
 */
ZR_API void zr_zmtp_unfeed_msgs(struct zr_zmtp *z, size_t n);

/*
 * Outgoing frames in traffic. Under NULL and PLAIN a frame goes on the wire
 * as it is (zr_zmtp_frame_header, then the body by reference); under CURVE
 * every frame is a MESSAGE the codec encrypts, so the caller writes it with
 * this call instead. flags: ZR_ZMTP_MORE, or ZR_ZMTP_COMMAND for a command
 * (data = its body: name-length octet, name, data; under CURVE it travels
 * inside a MESSAGE flagged 0x02, as libzmq does). Writes the whole wire frame
 * (header and body) into out and returns its length, or -ENOBUFS (cap below
 * zr_zmtp_frame_wire_size), -EINVAL (flags, or not in traffic), or the sticky
 * error. Frames must go on the wire in the order they were encoded (CURVE
 * nonces only increase), and this call's frames after any bytes
 * zr_zmtp_out handed out earlier.
 */
ZR_API int zr_zmtp_encode_frame(struct zr_zmtp *z, unsigned flags, const uint8_t *data, size_t len,
                                uint8_t *out, size_t cap);

/* How many octets zr_zmtp_encode_frame writes for len octets of data. */
ZR_API size_t zr_zmtp_frame_wire_size(const struct zr_zmtp *z, size_t len);

/* Whether frames must go through zr_zmtp_encode_frame (CURVE in traffic). */
ZR_API bool zr_zmtp_encrypts(const struct zr_zmtp *z);

/*
 * Server: the authenticator's last answer (0 if it was not asked) and its
 * text (never NULL). A client refused by the server sees -ZR_EPEERERROR and
 * the peer's ERROR reason instead.
 */
ZR_API int zr_zmtp_auth_status(const struct zr_zmtp *z, const char **text);

/*
 * Ends a wait for the authenticator (it answered ZR_ZMTP_AUTH_PENDING) with
 * its answer: status as the callback would return it, user_id (accepted:
 * the User-Id, at most ZR_ZMTP_USER_ID_MAX octets kept) and text (refused:
 * why, at most ZR_ZMTP_AUTH_TEXT_MAX kept), each NULL for none. Accepted,
 * the handshake goes on: the codec queues what it would have queued
 * (WELCOME, READY), so call zr_zmtp_out, then zr_zmtp_feed with the bytes
 * still held (under CURVE the parked INITIATE completes there, with the
 * READY event). Refused, ERROR with the bare status is queued and the codec
 * fails with -ZR_EAUTH, which is returned. Returns 0, -ZR_EAUTH, the sticky
 * error if the codec failed meanwhile (a handshake timeout: the answer is
 * dropped), or -EINVAL when no answer is awaited (a late or second reply).
 */
ZR_API int zr_zmtp_auth_reply(struct zr_zmtp *z, int status, const char *user_id, const char *text);

/* Whether the codec waits for zr_zmtp_auth_reply. */
ZR_API bool zr_zmtp_auth_pending(const struct zr_zmtp *z);

/*
 * The bytes the codec wants written, in order: sets *data and returns their
 * length (0 when none). They stay at that address, unchanged, until acked,
 * even if the codec queues more meanwhile (so they may go to an asynchronous
 * send as they are). Write them before any message frame you write next,
 * and only between messages (never inside a multipart message). Under CURVE
 * the PING or PONG laid out here takes the next nonce, so a frame that
 * zr_zmtp_encode_frame wrote before this call goes on the wire first. Then call
 * zr_zmtp_out_ack with how many were written. A pending PONG or PING is laid
 * out here, so a burst of PINGs costs one PONG (answering the latest).
 */
ZR_API size_t zr_zmtp_out(struct zr_zmtp *z, const uint8_t **data);
ZR_API void zr_zmtp_out_ack(struct zr_zmtp *z, size_t n);

/*
 * Runs the timers at now_ms: the handshake deadline, sending PING every
 * heartbeat_ivl_ms (only to ZMTP 3.1 peers), the heartbeat timeout and the
 * peer's TTL. Returns 0, or -ZR_EHANDSHAKE_TIMEOUT / -ZR_EHEARTBEAT_TIMEOUT
 * (sticky).
 */
ZR_API int zr_zmtp_tick(struct zr_zmtp *z, uint64_t now_ms);

/*
 * Counts as traffic from the peer at now_ms without any bytes. For a caller
 * that stopped reading on purpose (backpressure): the peer's bytes, PINGs
 * included, wait unread in the kernel, so its silence proves nothing and
 * must not time it out.
 */
ZR_API void zr_zmtp_touch(struct zr_zmtp *z, uint64_t now_ms);

/* When zr_zmtp_tick must run next (absolute ms), UINT64_MAX if never. */
ZR_API uint64_t zr_zmtp_deadline(const struct zr_zmtp *z);

/*
 * Fails the connection on the engine's behalf (for a reason the codec cannot
 * see) with err (negative), queueing ERROR with reason if the handshake
 * framing is established (never from a CURVE client, nor in CURVE traffic,
 * where a plaintext command is what no peer expects). Returns err.
 */
ZR_API int zr_zmtp_abort(struct zr_zmtp *z, int err, const char *reason);

ZR_API int zr_zmtp_state(const struct zr_zmtp *z); /* enum zr_zmtp_state */
ZR_API int zr_zmtp_error(const struct zr_zmtp *z); /* the sticky error, or 0 */
/* The minor version in effect once the greeting is in: the lower of ours
 * and the peer's (a peer with a major above 3 counts as ours). Pass it to
 * zr_zmtp_sub_prefix. */
ZR_API uint8_t zr_zmtp_peer_minor(const struct zr_zmtp *z);
ZR_API int zr_zmtp_peer_type(const struct zr_zmtp *z); /* valid once ready, else -1 */

/* ---------------------------------------------------------------------------
 * Keys: Z85 text (RFC 32) and CURVE key pairs (RFC 26), byte-compatible with
 * libzmq's zmq_z85_encode / zmq_z85_decode / zmq_curve_keypair /
 * zmq_curve_public. A CURVE key is 32 octets (a Curve25519 crypto_box key),
 * written as 40 Z85 characters; the *_z85 buffers hold those plus a NUL.
 *
 * Z85 has no syscalls and no state. The key functions call libsodium
 * (sodium_init first: idempotent and thread-safe, so they may be called from
 * any thread at any time); zr_curve_keypair also draws randomness from the
 * operating system through libsodium, the one call in this header that does.
 * No function here keeps secret key octets after it returns (its own copies
 * are wiped); the caller owns every buffer it passes.
 */
#define ZR_CURVE_KEY_LEN 32     /* octets in a CURVE public or secret key */
#define ZR_CURVE_KEY_Z85_LEN 40 /* characters in its Z85 text, without the NUL */

/*
 * Z85-encodes len octets of data (len a multiple of 4; data may be NULL when
 * len is 0) into out as text followed by a NUL. Returns the text length
 * (len / 4 * 5), or -EINVAL (len not a multiple of 4, or so large the length
 * would not fit an int), -ENOSPC (out_cap < len / 4 * 5 + 1; out untouched).
 */
ZR_API int zr_z85_encode(char *out, size_t out_cap, const uint8_t *data, size_t len);

/*
 * Decodes text_len characters of Z85 text (no NUL needed; one is an invalid
 * character) into out. Strict: text_len must be a multiple of 5, every
 * character one of the 85 of the alphabet, and every 5-character group's
 * value must fit in 32 bits ("%%%%%" does not). Returns the octet count
 * (text_len / 5 * 4), or -EINVAL (bad length, character or group) or
 * -ENOSPC (a valid text, but out_cap is smaller than its octet count). On
 * failure out is untouched. The empty text decodes to no octets (libzmq's
 * zmq_z85_decode refuses it; every other verdict is the same as libzmq's).
 */
ZR_API int zr_z85_decode(uint8_t *out, size_t out_cap, const char *text, size_t text_len);

/*
 * A new CURVE key pair, each key as 40 Z85 characters and a NUL (libsodium's
 * crypto_box_keypair: a random secret key and its public key). Returns 0, or
 * -EINVAL (a NULL buffer), -EIO (libsodium could not initialise or failed).
 */
ZR_API int zr_curve_keypair(char public_z85[ZR_CURVE_KEY_Z85_LEN + 1],
                            char secret_z85[ZR_CURVE_KEY_Z85_LEN + 1]);

/*
 * The public key of a secret key (crypto_scalarmult_base), both as Z85 text:
 * secret_z85 is a NUL-terminated string of exactly 40 Z85 characters; the
 * public key is written as 40 characters and a NUL. Returns 0, or -EINVAL
 * (NULL, not exactly 40 characters, not valid Z85), -EIO (libsodium failed).
 */
ZR_API int zr_curve_public(char public_z85[ZR_CURVE_KEY_Z85_LEN + 1], const char *secret_z85);

/*
 * A key's 32 octets from its Z85 text: z85 is a NUL-terminated string of
 * exactly 40 Z85 characters (it is read up to its 41st character at most).
 * Returns 0, or -EINVAL (NULL, wrong length, not valid Z85; key untouched).
 */
ZR_API int zr_curve_key_decode(uint8_t key[ZR_CURVE_KEY_LEN], const char *z85);

/* A key's Z85 text: 40 characters and a NUL. Returns 0, or -EINVAL (NULL). */
ZR_API int zr_curve_key_encode(char z85[ZR_CURVE_KEY_Z85_LEN + 1],
                               const uint8_t key[ZR_CURVE_KEY_LEN]);

#ifdef __cplusplus
}
#endif

#endif /* ZR_ZMTP_H */
