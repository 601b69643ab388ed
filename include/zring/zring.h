/*
 * zring — ZeroMQ sockets on io_uring: contexts, sockets, messages.
 *
 * The ZeroMQ model, for users coming from libzmq: a context owns one io
 * thread; sockets of the usual types bind and connect over tcp:// and ipc://
 * and speak ZMTP 3.1 to any ZeroMQ peer. Option names, numbers, units and
 * defaults are libzmq's.
 *
 * Errors: every call returns 0 (or a count) on success and a negative code on
 * failure: -EAGAIN (would block, or a timeout ran out), -EINVAL, -ENOTSUP
 * (not for this socket type), -EFSM (wrong state, e.g. REQ sending twice),
 * -EHOSTUNREACH (ROUTER_MANDATORY, unknown peer), -ETERM (the context is
 * closing), or a protocol code; zr_strerror() names each.
 *
 * Threads: a context may be used from any thread. A socket, like a libzmq
 * socket, is used by one thread at a time (it may move between threads with a
 * memory barrier, e.g. a mutex handover). Messages belong to whoever holds
 * them: zr_send takes a message on success and leaves it with the caller on
 * failure; zr_recv hands a new message to the caller.
 */
#ifndef ZR_ZRING_H
#define ZR_ZRING_H

#include <stddef.h>
#include <stdint.h>

#include <zring/error.h>
#include <zring/export.h>
#include <zring/zmtp.h> /* enum zr_socktype: ZR_PUSH, ZR_PULL, ... */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zr_ctx zr_ctx;
typedef struct zr_socket zr_socket;
typedef struct zr_msg zr_msg;


/* ---- messages: multipart, each frame a byte string ---------------------- */

/* A new empty message. Returns 0 or -ENOMEM. */
ZR_API int zr_msg_new(zr_msg **msg);
/* Appends a frame, copying len bytes (len may be 0). Returns 0 or -ENOMEM. */
ZR_API int zr_msg_add(zr_msg *msg, const void *data, size_t len);
/* Number of frames. */
ZR_API size_t zr_msg_frames(const zr_msg *msg);
/* Frame i's bytes (valid until the message is freed) and length; NULL if no such frame. */
ZR_API const void *zr_msg_frame(const zr_msg *msg, size_t i, size_t *len);
/* Sum of the frame lengths. */
ZR_API size_t zr_msg_size(const zr_msg *msg);
/* Frees a message; NULL is fine. */
ZR_API void zr_msg_free(zr_msg *msg);

/* ---- contexts ----------------------------------------------------------- */

/* A context with its io thread. Returns 0 or -errno (-ENOMEM, io_uring setup). */
ZR_API int zr_ctx_new(zr_ctx **ctx);
/*
 * Closes every socket still open, waits while their queued messages go out
 * (each socket's LINGER bounds that), stops the io thread and frees the
 * context. Blocking sends and receives in other threads return -ETERM.
 */
ZR_API void zr_ctx_free(zr_ctx *ctx);

/* ---- sockets ------------------------------------------------------------ */

/* A socket of the given type (ZR_PAIR ... ZR_ROUTER, PUB/SUB/XPUB/XSUB,
 * PUSH/PULL). Returns 0, -EINVAL (unknown or unsupported type) or -ENOMEM. */
ZR_API int zr_socket_open(zr_ctx *ctx, int type, zr_socket **s);
/*
 * Closes the socket: no more sends or receives; messages already sent keep
 * going out for up to LINGER ms (default: until delivered or the peer goes),
 * then connections close. Returns at once; zr_ctx_free waits for the rest.
 */
ZR_API void zr_socket_close(zr_socket *s);

/*
 * Binds to "tcp://addr:port" ("*" for any address, port "*" or 0 for one the
 * kernel picks: read it back with ZR_LAST_ENDPOINT) or "ipc://path" /
 * "ipc://@abstract". Returns 0, -EINVAL, -EPROTONOSUPPORT, -EADDRINUSE, ...
 */
ZR_API int zr_bind(zr_socket *s, const char *endpoint);
/*
 * Connects to an endpoint; the connection is made (and remade after a loss,
 * every RECONNECT_IVL) by the io thread, so this returns at once. Returns 0,
 * -EINVAL, -EPROTONOSUPPORT, -EHOSTUNREACH (name does not resolve).
 */
ZR_API int zr_connect(zr_socket *s, const char *endpoint);

/*
 * Stops listening on an endpoint this socket bound (give the text zr_bind got,
 * or for a wildcard bind the resolved one from ZR_LAST_ENDPOINT).
 * Connections already accepted through it stay. Returns 0 or -ENOENT.
 */
ZR_API int zr_unbind(zr_socket *s, const char *endpoint);
/*
 * Closes the connection made by zr_connect(endpoint) and stops redialling it;
 * messages queued on it are dropped. Returns 0 or -ENOENT.
 */
ZR_API int zr_disconnect(zr_socket *s, const char *endpoint);

/* Send and receive flags. */
#define ZR_DONTWAIT 1

/*
 * Sends *msg (all its frames, atomically). On success the socket owns the
 * message and *msg is set to NULL. Blocks while the socket cannot take it
 * (no peer with room, for types that never drop), up to SNDTIMEO (-1, the
 * default, waits for ever); with ZR_DONTWAIT or when the time runs out,
 * returns -EAGAIN. ROUTER: frame 0 names the peer. REQ: one request at a
 * time (-EFSM otherwise). SUB and PULL cannot send (-ENOTSUP).
 */
ZR_API int zr_send(zr_socket *s, zr_msg **msg, int flags);
/*
 * Receives the next message into *msg (the caller frees it). Blocks up to
 * RCVTIMEO (-1: for ever); -EAGAIN when none came. ROUTER: frame 0 is the
 * peer's routing id. REP: the envelope is kept for the reply.
 */
ZR_API int zr_recv(zr_socket *s, zr_msg **msg, int flags);

/* Convenience: send / receive a single-frame message of bytes (zr_recv_bytes
 * truncates to cap and returns the message's full length). */
ZR_API int zr_send_bytes(zr_socket *s, const void *data, size_t len, int flags);
ZR_API int zr_recv_bytes(zr_socket *s, void *buf, size_t cap, int flags);

/*
 * A file descriptor that becomes readable when a message may be received:
 * after zr_recv returned -EAGAIN, the fd turns readable when the next message
 * arrives (fold it into poll/epoll; never read or close it).
 */
ZR_API int zr_socket_fd(zr_socket *s);

/* ---- monitoring: libzmq's event names and numbers ------------------------ */

enum zr_event_type {
	ZR_EVENT_CONNECTED = 0x0001,        /* value: the fd */
	ZR_EVENT_CONNECT_RETRIED = 0x0004,  /* value: the delay before the next try, ms */
	ZR_EVENT_LISTENING = 0x0008,        /* value: the fd */
	ZR_EVENT_ACCEPTED = 0x0020,         /* value: the fd */
	ZR_EVENT_ACCEPT_FAILED = 0x0040,    /* value: the negative errno */
	ZR_EVENT_CLOSED = 0x0080,           /* value: the fd */
	ZR_EVENT_DISCONNECTED = 0x0200,     /* value: the fd */
	ZR_EVENT_HANDSHAKE_SUCCEEDED = 0x1000,
	ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL = 0x2000, /* value: the negative zring code */
	ZR_EVENT_HANDSHAKE_FAILED_AUTH = 0x4000,     /* value: the ZAP status (e.g. 400) */
	ZR_EVENT_ALL = 0xffff,
};

#define ZR_EVENT_ENDPOINT_MAX 160

struct zr_event {
	int type;  /* one enum zr_event_type */
	int value; /* see the type */
	char endpoint[ZR_EVENT_ENDPOINT_MAX]; /* the connected-to or listening endpoint */
};

/*
 * Starts recording the events in the mask (ZR_EVENT_ALL for all; 0 stops),
 * for connections made from now on and the ones already there. At most 1024
 * events wait unread; later ones are dropped until the app reads. Returns 0.
 */
ZR_API int zr_socket_monitor(zr_socket *s, int events);
/* The next recorded event, waiting up to timeout_ms (-1: for ever, 0: not at
 * all). Returns 0 or -EAGAIN. Same thread rules as zr_recv. */
ZR_API int zr_monitor_recv(zr_socket *s, struct zr_event *ev, int timeout_ms);

/* ---- options: libzmq's numbers, names, units and defaults ----------------- */

enum zr_option {
	ZR_ROUTING_ID = 5,         /* bytes, 1..255, not starting with 0x00 */
	ZR_SUBSCRIBE = 6,          /* bytes: a prefix (SUB, XSUB) */
	ZR_UNSUBSCRIBE = 7,        /* bytes */
	ZR_SNDBUF = 11,            /* int, bytes: SO_SNDBUF (0 = kernel default) */
	ZR_RCVBUF = 12,            /* int, bytes: SO_RCVBUF (0 = kernel default) */
	ZR_LINGER = 17,            /* int, ms: -1 (default) for ever */
	ZR_RECONNECT_IVL = 18,     /* int, ms: 100 */
	ZR_RECONNECT_IVL_MAX = 21, /* int, ms: 0 = no backoff growth */
	ZR_MAXMSGSIZE = 22,        /* int64, bytes: 64 MiB (libzmq: unlimited) */
	ZR_SNDHWM = 23,            /* int, messages per peer: 1000 */
	ZR_RCVHWM = 24,            /* int, messages: 1000 */
	ZR_RCVTIMEO = 27,          /* int, ms: -1 */
	ZR_SNDTIMEO = 28,          /* int, ms: -1 */
	ZR_LAST_ENDPOINT = 32,     /* string, read only: the last bound endpoint */
	ZR_IPV6 = 42,              /* int 0/1: "*" binds dual-stack "::", names may resolve to IPv6 */
	ZR_ROUTER_MANDATORY = 33,  /* int 0/1: unknown peer -> -EHOSTUNREACH */
	ZR_PLAIN_SERVER = 44,      /* int 0/1 */
	ZR_PLAIN_USERNAME = 45,    /* string */
	ZR_PLAIN_PASSWORD = 46,    /* string */
	ZR_HANDSHAKE_IVL = 66,     /* int, ms: 30000 */
	ZR_HEARTBEAT_IVL = 75,     /* int, ms: 0 */
	ZR_HEARTBEAT_TTL = 76,     /* int, ms: 0 */
	ZR_HEARTBEAT_TIMEOUT = 77, /* int, ms: 0 = HEARTBEAT_IVL */

	/* zring's own (no libzmq equivalent) */
	ZR_SNDBYTES = 1001,   /* int64, bytes per peer's send queue: 8 MiB */
	ZR_RCVBYTES = 1002,   /* int64, bytes in the receive queue: 8 MiB */
	ZR_PUB_POLICY = 1003, /* int: what PUB/XPUB do with a subscriber whose queue is full */
};

/*
 * Byte budgets sit beside the message high-water marks, so memory is bounded
 * whatever the message size: a queue takes a message while it holds fewer than
 * its HWM messages and fewer than its budget in bytes (an empty queue takes
 * any one message, so one larger than the budget still passes). A full
 * receive queue stops the reading (the peer's sends wait: TCP flow control).
 */

/* ZR_PUB_POLICY values. */
enum zr_pub_policy {
	ZR_PUB_DROP_NEW = 0,   /* RFC 29 and libzmq: that subscriber misses this message */
	ZR_PUB_BLOCK = 1,      /* lossless: the send waits for the slowest *matching*
	                          subscriber (others are unaffected when it does not match) */
	ZR_PUB_DROP_OLD = 2,   /* the subscriber's oldest unsent message makes room */
	ZR_PUB_DISCONNECT = 3, /* the slow subscriber is disconnected (it may reconnect) */
};

/* Sets an option; integers are passed as int (or int64_t for MAXMSGSIZE) with
 * len = sizeof. Set options before bind/connect; they apply to connections
 * made afterwards. Returns 0 or -EINVAL. */
ZR_API int zr_setsockopt(zr_socket *s, int option, const void *value, size_t len);
/* Reads an option into value (*len: in, the room; out, the length). */
ZR_API int zr_getsockopt(zr_socket *s, int option, void *value, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* ZR_ZRING_H */
