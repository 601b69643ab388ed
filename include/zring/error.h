/*
 * zring — error codes shared by every layer.
 *
 * Every zring call returns 0 (or a count) on success and a negative code on
 * failure. A negative code is either a plain errno value (-EAGAIN, -EINVAL,
 * -ETIMEDOUT, ...) or one of the protocol codes below (-ZR_E...), which live in
 * their own range above every errno so the two never collide. zr_strerror()
 * names both kinds; zr_errno() folds a protocol code into the errno class a
 * caller that only knows errno would expect (most become EPROTO).
 */
#ifndef ZR_ERROR_H
#define ZR_ERROR_H

#include <zring/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libzmq's own errno values, for the socket API (returned negated). */
#ifndef EFSM
#define EFSM 156384763 /* operation not valid in the socket's state (REQ sending twice) */
#endif
#ifndef ETERM
#define ETERM 156384765 /* the context was terminated */
#endif

/* Non-error outcomes of the codec's feed calls (never negative). */
enum {
	ZR_OK = 0,        /* progress: an event was produced */
	ZR_NEED_MORE = 1, /* all that could be used was consumed; feed more bytes */
};

/*
 * Protocol codes. Returned negated (-ZR_ESIGNATURE). Each one names one
 * specific way a peer (or a configuration) broke the rules, so a test or a log
 * line can say exactly what happened.
 */
enum zr_err {
	ZR_EBASE = 2000, /* first protocol code; every system errno is below it
	                    (EFSM and ETERM, libzmq's, sit far above and are not protocol codes) */

	/* greeting (RFC 23 "Greeting", RFC 37) */
	ZR_ESIGNATURE = ZR_EBASE, /* octet 0 is not 0xFF or octet 9 not 0x7F: not ZMTP 3 */
	ZR_EVERSION,              /* the peer speaks ZMTP below 3.0 */
	ZR_EMECHANISM,            /* mechanism name malformed or not one we know */
	ZR_EMECHMISMATCH,         /* a valid mechanism, but not the one we use */

	/* framing (RFC 23 "Framing") */
	ZR_EFLAGS,     /* reserved flag bits 7..3 set */
	ZR_ECMDMORE,   /* a command frame with MORE set */
	ZR_EFRAMESIZE, /* long size with the top bit set (> 2^63-1) */
	ZR_ETOOLARGE,  /* frame or message larger than max_msg_size */
	ZR_ECMDSIZE,   /* command frame larger than the command limit */
	ZR_ECMDINMSG,  /* a command frame between a MORE frame and the last frame */

	/* commands and metadata (RFC 23 "Commands", "Connection Metadata") */
	ZR_ECMDNAME,      /* command name length 0, past the body, or not ALPHA */
	ZR_EUNEXPECTED,   /* a command not allowed in this state (second READY, ...) */
	ZR_EEARLYMSG,     /* a message frame before the handshake completed */
	ZR_EPROPNAME,     /* property name empty or with a character outside the grammar */
	ZR_EPROPTRUNC,    /* property header or value runs past the end of the command */
	ZR_EPROPVALUE,    /* property value too long (Identity > 255, length >= 2^31) */
	ZR_ENOSOCKTYPE,   /* READY / INITIATE without Socket-Type */
	ZR_ESOCKTYPE,     /* Socket-Type value is not a ZeroMQ socket type */
	ZR_EINCOMPATIBLE, /* the two socket types may not talk (RFC 23 table) */
	ZR_EERRORCMD,     /* malformed ERROR command (reason length past the body) */
	ZR_EPING,         /* malformed PING (short body, context over 16 octets) */
	ZR_EPONG,         /* malformed PONG (context over 16 octets) */
	ZR_ESUBSCRIBE,    /* malformed SUBSCRIBE / CANCEL */

	/* mechanisms (RFC 23 NULL, RFC 24 PLAIN) */
	ZR_EPLAIN,     /* malformed PLAIN command (credential lengths, extra bytes) */
	ZR_EAUTH,      /* our authenticator refused the peer */
	ZR_EPEERERROR, /* the peer sent ERROR: fatal, do not reconnect with these credentials */

	/* timers */
	ZR_EHANDSHAKE_TIMEOUT, /* greeting + handshake not done within handshake_ivl */
	ZR_EHEARTBEAT_TIMEOUT, /* no traffic within heartbeat timeout or the peer's TTL */

	/* CURVE (RFC 26); appended so the codes above keep their numbers */
	ZR_ECURVECMD,     /* a CURVE command of the wrong size or layout */
	ZR_ECURVEBOX,     /* a box did not open: wrong server key, tampered bytes, foreign cookie */
	ZR_ECURVENONCE,   /* a short nonce replayed or not increasing */
	ZR_ECURVEVERSION, /* HELLO with a CurveZMQ version other than 1.0 */
	ZR_ECURVECOOKIE,  /* INITIATE with a cookie older than the cookie key's 60 s */
	ZR_ECURVEKEY,     /* vouch or cookie content does not match the keys */
	ZR_ECURVEHUNGUP,  /* the server closed the connection on our HELLO without a word:
	                     what libzmq does when the box does not open (wrong server key) */

	/* framing again; appended so the codes above keep their numbers */
	ZR_ETOOMANYFRAMES, /* a message with more frames than max_msg_frames */

	ZR_ELAST /* one past the last code */
};

/*
 * Human-readable text for any code this library returns: 0, a negative errno
 * or a negative protocol code (a positive value is read as its negation).
 * Never NULL; the string is static and constant. Thread-safe.
 */
ZR_API const char *zr_strerror(int err);

/*
 * The errno a protocol code corresponds to (ZR_ETOOLARGE, ZR_ECMDSIZE,
 * ZR_ETOOMANYFRAMES -> EMSGSIZE,
 * timeouts -> ETIMEDOUT, ZR_EAUTH/ZR_EPEERERROR -> EACCES/ECONNREFUSED,
 * ZR_ECURVEBOX/ZR_ECURVEKEY/ZR_ECURVEHUNGUP -> EACCES (the keys do not match: an
 * authentication failure), the rest -> EPROTO), negated; a negative errno is
 * returned as it is.
 */
ZR_API int zr_errno(int err);

#ifdef __cplusplus
}
#endif

#endif /* ZR_ERROR_H */
