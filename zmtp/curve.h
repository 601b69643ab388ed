/*
 * zmtp/curve.h — the CurveZMQ mechanism core (RFC 25 + RFC 26), sans-IO.
 *
 * INTERNAL header: the codec's connection state machine (zmtp/conn.c) drives
 * it; nothing here is public API. It does no I/O, reads no clock (time comes
 * in as now_ms), never allocates: every byte of state lives in the caller's
 * struct zr__curve, every command is written into a caller buffer. The only
 * outside input is randomness, taken through cfg.random (default:
 * libsodium's randombytes_buf) so tests and fuzzers can fix it. All the
 * cryptography is libsodium's: crypto_box / crypto_secretbox for the
 * handshake; MESSAGE boxes are the same XSalsa20-Poly1305 built from its
 * parts (HSalsa20 once per direction, Salsa20, Poly1305; see curve.c).
 *
 * Byte layouts, as libzmq 4.3 puts them on the wire. A "body" is a ZMTP
 * command frame body as the codec sees it: name-length octet, name, data.
 * Short nonces are 8 octets, network order; long nonces 16 random octets.
 * A box is libsodium's "easy" layout: 16-octet MAC, then the ciphertext.
 *
 *   HELLO     200 = "\x05HELLO" 1 0 | 72 x 0 (padding) | C' (32) |
 *                   short nonce | box[64 x 0](C'->S)              (80)
 *   WELCOME   168 = "\x07WELCOME" | long nonce |
 *                   box[S' + cookie](S->C')                       (144)
 *             cookie (96) = long nonce | secretbox[C' + s'](K)     (80)
 *   INITIATE  257 + m = "\x08INITIATE" | cookie (96) | short nonce |
 *                   box[C + vouch nonce + vouch + metadata](C'->S') (144 + m)
 *             vouch (80) = box[C' + S](C->S'), nonce "VOUCH---" + 16
 *   READY     30 + m = "\x05READY" | short nonce | box[metadata](S'->C')
 *   MESSAGE   33 + n = "\x07MESSAGE" | short nonce | box[flags + data]
 *   ERROR     plaintext, as RFC 23 ("\x05ERROR" | reason length | reason)
 *
 * Nonce prefixes (24-octet nonce = prefix + short or long nonce):
 * "CurveZMQHELLO---", "WELCOME-", "COOKIE--", "CurveZMQINITIATE",
 * "VOUCH---", "CurveZMQREADY---", "CurveZMQMESSAGEC" (client to server),
 * "CurveZMQMESSAGES" (server to client). RFC 26's grammar shows
 * "CurveZMQMESSAGE-"; its prose and libzmq use C/S, and so do we.
 *
 * MESSAGE flags octet: 0x01 MORE; 0x02 COMMAND — libzmq (not RFC 26) sends
 * PING, PONG, SUBSCRIBE and CANCEL as a MESSAGE with 0x02 set and the whole
 * command body (name-length octet, name, data) as the data. Other bits are
 * passed through to the caller, who decides.
 *
 * The dialogue and the calls that drive it:
 *
 *   client                                      server
 *   zr__curve_client_hello()        HELLO  ->   zr__curve_server_on_hello()
 *   zr__curve_client_on_welcome() <- WELCOME   (writes WELCOME)
 *   (writes INITIATE)            INITIATE  ->   zr__curve_server_on_initiate()
 *                                                (auth on zr__curve_peer_key())
 *   zr__curve_client_on_ready()   <- READY      zr__curve_server_ready()
 *   then zr__curve_encode_message() / zr__curve_decode_message() both ways.
 *
 * Our short nonces start at 1 and go up by one per command we send (as
 * libzmq's). The peer's short nonces must strictly increase over the whole
 * connection (HELLO < INITIATE < MESSAGE..., READY < MESSAGE...): a nonce
 * equal to or below the last one we accepted is ZR__CURVE_ENONCE. (libzmq
 * only checks MESSAGE nonces; its own peers always increase.)
 *
 * Choices where libzmq and RFC 26 leave room (tests assert each):
 * - HELLO padding: NOT checked. libzmq does not check it; the padding only
 *   makes HELLO as large as WELCOME (anti-amplification), it carries nothing.
 * - HELLO signature box: it must open AND hold 64 zero octets (libzmq only
 *   opens it). Every libzmq client sends zeros.
 * - HELLO version must be exactly 1.0 (as libzmq).
 * - Vouch: both C' and S are compared (libzmq compares C' only).
 * - Cookie: a fresh cookie key (and server transient key pair) per HELLO,
 *   as libzmq. It expires ZR__CURVE_COOKIE_TTL_MS after the WELCOME was
 *   written and is wiped once an INITIATE was processed (good or bad).
 *
 * Errors. Every call returns a count or 0 on success, a negative code on
 * failure. Codes the PEER causes make the failure sticky: the state becomes
 * FAILED and every later call returns the same code (keys are wiped). Codes
 * the CALLER causes (-EINVAL: wrong role or state; -ENOBUFS: out too small)
 * change nothing. The codes (macros, so the codec can name them in one place):
 */
#ifndef ZR_ZMTP_CURVE_H
#define ZR_ZMTP_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <errno.h>

#include <zring/error.h>

/* Malformed: wrong size, truncated, oversized, bad layout, bad name-length. */
#define ZR__CURVE_EMALFORMED (-ZR_ECURVECMD)
/* A box did not open: wrong server key, tampered bytes, foreign cookie. */
#define ZR__CURVE_EBOX (-ZR_ECURVEBOX)
/* A short nonce equal to or below the last accepted one (replay). */
#define ZR__CURVE_ENONCE (-ZR_ECURVENONCE)
/* HELLO announces a CurveZMQ version other than 1.0. */
#define ZR__CURVE_EVERSION (-ZR_ECURVEVERSION)
/* INITIATE's cookie was made more than ZR__CURVE_COOKIE_TTL_MS ago. */
#define ZR__CURVE_ECOOKIE (-ZR_ECURVECOOKIE)
/* Boxes opened but the keys inside disagree (vouch != C' + S, cookie != C'). */
#define ZR__CURVE_EKEY (-ZR_ECURVEKEY)
/* A well-formed command that is not the one this state expects. */
#define ZR__CURVE_EUNEXPECTED (-ZR_EUNEXPECTED)
/* The server sent ERROR (client side); zr__curve_error_reason() has it. */
#define ZR__CURVE_EPEERERROR (-ZR_EPEERERROR)
/* Our short nonce would wrap (2^64 - 1 commands sent). */
#define ZR__CURVE_EEXHAUSTED (-EOVERFLOW)

#define ZR__CURVE_KEY 32 /* public, secret, shared keys */
#define ZR__CURVE_COOKIE_TTL_MS 60000u

#define ZR__CURVE_HELLO_SIZE 200u
#define ZR__CURVE_WELCOME_SIZE 168u
#define ZR__CURVE_INITIATE_MIN 257u /* + metadata */
#define ZR__CURVE_READY_MIN 30u     /* + metadata */
#define ZR__CURVE_MESSAGE_MIN 33u   /* + data */
/* Where the data sits in an encoded MESSAGE (after name, nonce, MAC, flags). */
#define ZR__CURVE_MESSAGE_DATA_OFFSET 33u
/* INITIATE plaintext before the metadata: C, vouch nonce, vouch box. */
#define ZR__CURVE_INITIATE_PLAIN_MIN 128u

enum zr__curve_state {
	ZR__CURVE_CLIENT_START,    /* client: next call zr__curve_client_hello */
	ZR__CURVE_CLIENT_WELCOME,  /* client: HELLO written, expecting WELCOME */
	ZR__CURVE_CLIENT_READY,    /* client: INITIATE written, expecting READY */
	ZR__CURVE_SERVER_HELLO,    /* server: expecting HELLO */
	ZR__CURVE_SERVER_INITIATE, /* server: WELCOME written, expecting INITIATE */
	ZR__CURVE_SERVER_ACCEPT,   /* server: INITIATE good, next zr__curve_server_ready */
	ZR__CURVE_TRAFFIC,         /* handshake done: MESSAGE both ways */
	ZR__CURVE_FAILED,          /* sticky error */
};

/* Fills buf with len random octets. Must not fail. */
typedef void zr__curve_random_fn(void *arg, uint8_t *buf, size_t len);

struct zr__curve_config {
	bool as_server;
	uint8_t public_key[ZR__CURVE_KEY]; /* our long-term key pair (server: S, s) */
	uint8_t secret_key[ZR__CURVE_KEY];
	uint8_t server_key[ZR__CURVE_KEY]; /* client only: the server's long-term S */
	zr__curve_random_fn *random;       /* NULL: randombytes_buf */
	void *random_arg;
};

/*
 * One connection's mechanism state. Caller storage; treat as opaque (the
 * layout may change). Holds secrets: zr__curve_fini wipes it.
 */
struct zr__curve {
	int state; /* enum zr__curve_state */
	int err;   /* the sticky error once FAILED */
	bool as_server;
	bool peer_nonce_seen;
	uint64_t nonce;      /* our next short nonce */
	uint64_t peer_nonce; /* the last short nonce accepted from the peer */
	uint64_t cookie_ms;  /* server: when the cookie key was made */
	zr__curve_random_fn *random;
	void *random_arg;
	uint8_t public_key[ZR__CURVE_KEY];
	uint8_t secret_key[ZR__CURVE_KEY];
	uint8_t server_key[ZR__CURVE_KEY]; /* S (the server's own public key on the server) */
	uint8_t cn_public[ZR__CURVE_KEY];  /* our transient key pair (C' c' or S' s') */
	uint8_t cn_secret[ZR__CURVE_KEY];
	uint8_t cn_peer[ZR__CURVE_KEY];    /* the peer's transient public key */
	uint8_t peer_key[ZR__CURVE_KEY];   /* server: the client's long-term C */
	uint8_t cookie_key[ZR__CURVE_KEY]; /* server: K, one per HELLO */
	union {
		uint8_t cookie[96]; /* client, until READY: the cookie from WELCOME */
		/* TRAFFIC: HSalsa20(precom, MESSAGE nonce prefix), ours and the
		 * peer's: XSalsa20's first step, the same for every MESSAGE one way.
		 * Made after the cookie is wiped (it shares the storage). */
		struct {
			uint8_t tx_key[ZR__CURVE_KEY];
			uint8_t rx_key[ZR__CURVE_KEY];
		};
	};
	uint8_t precom[ZR__CURVE_KEY]; /* crypto_box_beforenm(peer transient, our transient) */
	uint8_t reason_len;
	char reason[256]; /* client: the server's ERROR reason, NUL-terminated */
};

/*
 * Initialises c from cfg (copied; cfg may go away). Calls sodium_init().
 * Returns 0, -EINVAL (cfg NULL), or -ENOSYS (libsodium failed to initialise).
 */
int zr__curve_init(struct zr__curve *c, const struct zr__curve_config *cfg);

/* Wipes every key and nonce in c. Idempotent. */
void zr__curve_fini(struct zr__curve *c);

/* enum zr__curve_state, and the sticky error (0 unless FAILED). */
int zr__curve_state(const struct zr__curve *c);
int zr__curve_error(const struct zr__curve *c);

/* Client, START: makes the transient key pair and writes HELLO (200). */
int zr__curve_client_hello(struct zr__curve *c, uint8_t *out, size_t cap);

/*
 * Client, WELCOME expected: validates body (WELCOME, or ERROR), keeps the
 * cookie, precomputes the shared key and writes INITIATE carrying meta (our
 * ZMTP metadata, RFC 23 property list, may be empty) into out. Returns the
 * INITIATE length (257 + meta_len). An ERROR body gives ZR__CURVE_EPEERERROR.
 */
int zr__curve_client_on_welcome(struct zr__curve *c, const uint8_t *body, size_t len,
                                const uint8_t *meta, size_t meta_len, uint8_t *out, size_t cap);

/*
 * Client, READY expected: validates body (READY, or ERROR), decrypts the
 * server's metadata into out (cap >= len - 30) and points *meta (inside out)
 * and *meta_len at it. out may overlap body. Returns 0; the state is TRAFFIC.
 */
int zr__curve_client_on_ready(struct zr__curve *c, const uint8_t *body, size_t len, uint8_t *out,
                              size_t cap, const uint8_t **meta, size_t *meta_len);

/*
 * Server, HELLO expected: validates HELLO, makes a fresh transient key pair
 * and cookie key (dated now_ms) and writes WELCOME (168) into out.
 */
int zr__curve_server_on_hello(struct zr__curve *c, const uint8_t *body, size_t len, uint64_t now_ms,
                              uint8_t *out, size_t cap);

/*
 * Server, INITIATE expected: checks the cookie (age, box, contents), the
 * INITIATE box and the vouch, precomputes the shared key, then wipes the
 * cookie key. The plaintext goes to out (cap >= len - 129: 128 + metadata;
 * out may overlap body); *meta / *meta_len point at the client's metadata
 * inside it. zr__curve_peer_key() then gives the client's long-term key for
 * authentication. Returns 0; the state is ACCEPT (send READY or refuse with a
 * plaintext ERROR).
 */
int zr__curve_server_on_initiate(struct zr__curve *c, const uint8_t *body, size_t len,
                                 uint64_t now_ms, uint8_t *out, size_t cap, const uint8_t **meta,
                                 size_t *meta_len);

/* Server, ACCEPT: writes READY carrying meta (30 + meta_len). State TRAFFIC. */
int zr__curve_server_ready(struct zr__curve *c, const uint8_t *meta, size_t meta_len, uint8_t *out,
                           size_t cap);

/* Server after INITIATE: the client's long-term public key C; else NULL. */
const uint8_t *zr__curve_peer_key(const struct zr__curve *c);

/* Client after ZR__CURVE_EPEERERROR: the reason (NUL-terminated, may be ""). */
const char *zr__curve_error_reason(const struct zr__curve *c);

/*
 * TRAFFIC: encrypts one frame (flags: 0x01 MORE, 0x02 COMMAND) into a
 * MESSAGE command body in out (cap >= 33 + len). Returns 33 + len. data is
 * read where it is, never copied first: it may sit at out +
 * ZR__CURVE_MESSAGE_DATA_OFFSET or anywhere outside out; any other overlap
 * with out is not allowed.
 */
int zr__curve_encode_message(struct zr__curve *c, uint8_t flags, const uint8_t *data, size_t len,
                             uint8_t *out, size_t cap);

/*
 * TRAFFIC: checks and decrypts one MESSAGE body in place, the fast form:
 * nothing is moved, the data is left at body + ZR__CURVE_MESSAGE_DATA_OFFSET
 * (n octets) and its flags octet goes to *flags; returns n = len - 33. On any
 * failure body is as it came. Errors as zr__curve_decode_message.
 */
int zr__curve_open_message(struct zr__curve *c, uint8_t *body, size_t len, uint8_t *flags);

/*
 * TRAFFIC: checks and decrypts one MESSAGE body. The data goes to out[0..n)
 * and its flags octet to *flags; returns n = len - 33. cap must be at least
 * len - 32 (the flags octet is decrypted in front of the data, then the data
 * is moved down). out may overlap body. The whole body must be present: the
 * MAC covers all of it. A body over INT32_MAX octets is -EMSGSIZE (not
 * sticky; the codec's max_msg_size keeps bodies far below it).
 */
int zr__curve_decode_message(struct zr__curve *c, const uint8_t *body, size_t len, uint8_t *out,
                             size_t cap, uint8_t *flags);

#endif /* ZR_ZMTP_CURVE_H */
