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
/*
 * Zero-copy: a new one-frame message over the caller's len octets at data,
 * which zring does not copy (libzmq's zmq_msg_init_data). The bytes must
 * stay valid and unchanged until ffn(data, hint) runs: exactly once, when
 * zring is done with them, which for a sent message is after they were
 * written to every peer that takes them (or dropped: the socket closed, a
 * PUB with no subscriber), and for one never sent, at zr_msg_free. It runs on
 * whichever thread lets go of the message: the context's io thread, usually,
 * so it must not block, nor wait on a zring socket of the same context;
 * zr_msg_free and a failed zr_send leave it to the caller's thread. ffn may
 * be NULL (constant bytes: nothing is called). Over inproc:// the receiver
 * gets the caller's bytes themselves, and ffn runs once it freed them.
 * Adding a frame (zr_msg_add) copies the bytes into the message first, and
 * ffn runs then. Returns 0, -EINVAL (data NULL with len > 0) or -ENOMEM.
 */
typedef void zr_free_fn(void *data, void *hint);
ZR_API int zr_msg_new_data(zr_msg **msg, void *data, size_t len, zr_free_fn *ffn, void *hint);
/*
 * ffn(NULL, hint) runs once zring is done with msg (a message made by
 * zr_msg_new or received), on the thread and at the moment zr_msg_new_data
 * says: e.g. to learn when a copied message has gone out (pyzmq's
 * MessageTracker). Returns 0, -EBUSY (msg has a callback already: one
 * each) or -ENOMEM.
 */
ZR_API int zr_msg_set_free(zr_msg *msg, zr_free_fn *ffn, void *hint);
/*
 * A property of the connection a received message came in on, as libzmq's
 * zmq_msg_gets: "User-Id" (what the socket's authenticator gave the client,
 * see zr_socket_set_auth; else, on tls:// with a client certificate, its
 * subject, see ZR_TLS_CA), "Peer-Address" ("tcp://127.0.0.1:40000";
 * "tls://..." on tls://), and the peer's handshake metadata: "Socket-Type",
 * "Identity", application properties ("X-..."). Names match
 * case-insensitively. Returns the value as
 * a NUL-terminated string (valid while the message lives; a value holding a
 * NUL octet reads as cut there), or NULL: no such property, or a message this
 * process made rather than received.
 */
ZR_API const char *zr_msg_gets(const zr_msg *msg, const char *property);

/* ---- contexts ----------------------------------------------------------- */

/* A context with its io thread. Returns 0 or -errno (-ENOMEM, io_uring setup). */
ZR_API int zr_ctx_new(zr_ctx **ctx);

/* zr_ctx_new_flags flags. */
enum {
	ZR_CTX_CALLER_IO = 1 /* app threads run the io while they wait: see below */
};

/*
 * zr_ctx_new with flags (0: the same as zr_ctx_new; an unknown flag:
 * -EINVAL).
 *
 * ZR_CTX_CALLER_IO is for request/reply latency. A thread blocked in zr_recv
 * (zr_recv_into, zr_recv_bytes) runs the context's io itself, waiting in
 * io_uring rather than for the io thread, and a zr_send that finds the io
 * free submits its message before it returns: a message crosses no thread on
 * either side, so a round trip costs the kernel's wakes alone (one per hop
 * instead of two), and with ZR_BUSY_POLL the waiting thread polls the ring
 * itself (one spinning thread per side instead of two). One thread at a time
 * runs the io: others wait on their sockets' eventfds as usual, and that
 * thread's io wakes them. The io thread stays, and runs the io when work
 * would otherwise wait for it (another thread's blocking wait, a bind,
 * connect or close) or when no call came for about a millisecond: so
 * handshakes, heartbeats, zr_socket_fd pollers and messages between calls go
 * on, up to that much later. While a call holds the io, the io thread looks
 * in every 10 ms.
 *
 * The cost: a zr_send that finds the io free and its connection idle
 * makes a system call (io_uring_enter) to put the message on the wire at
 * once; in a stream, messages sent while one is in flight join the next
 * batch as they do on the io thread (a 64 B PUSH/PULL stream between two
 * caller-io contexts measured level with default ones on 2 CPUs). The ring
 * is made without SINGLE_ISSUER and DEFER_TASKRUN (any thread may enter
 * it). Behaviour otherwise is that of any context.
 */
ZR_API int zr_ctx_new_flags(zr_ctx **ctx, unsigned flags);
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
 * kernel picks: read it back with ZR_LAST_ENDPOINT), "ipc://path" /
 * "ipc://@abstract", or "inproc://name": sockets of this context only, by
 * pointer, no kernel socket (name: 1 to 127 octets; a name bound already in
 * this context is -EADDRINUSE; no security mechanism applies). Returns 0,
 * -EINVAL, -EPROTONOSUPPORT, -EADDRINUSE, -ENAMETOOLONG, ...
 */
ZR_API int zr_bind(zr_socket *s, const char *endpoint);
/*
 * Connects to an endpoint; the connection is made (and remade after a loss,
 * every RECONNECT_IVL) by the io thread, so this returns at once. An
 * "inproc://name" nobody bound yet is joined when a socket of this context
 * binds it (sends queue meanwhile); an inproc pipe whose binder closes is
 * not remade (libzmq). Returns 0, -EINVAL, -EPROTONOSUPPORT,
 * -EHOSTUNREACH (name does not resolve).
 */
ZR_API int zr_connect(zr_socket *s, const char *endpoint);

/*
 * Stops listening on an endpoint this socket bound (give the text zr_bind got,
 * or for a wildcard bind the resolved one from ZR_LAST_ENDPOINT).
 * Connections already accepted through it stay (inproc pipes too, as in
 * libzmq 4.3; the inproc name is free again at once). Returns 0 or -ENOENT.
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
/*
 * As zr_recv, into msg, a message the caller keeps (from zr_msg_new or an
 * earlier receive): its frames, bytes and properties are replaced by the
 * next message's. A loop that receives into one message allocates nothing
 * per message of up to 256 octets. On failure msg is left as it was.
 */
ZR_API int zr_recv_into(zr_socket *s, zr_msg *msg, int flags);

/* Convenience: send / receive a single-frame message of bytes (zr_recv_bytes
 * truncates to cap and returns the message's full length). */
ZR_API int zr_send_bytes(zr_socket *s, const void *data, size_t len, int flags);
ZR_API int zr_recv_bytes(zr_socket *s, void *buf, size_t cap, int flags);

/*
 * A file descriptor that becomes readable when a message may be received:
 * after zr_recv returned -EAGAIN, the fd turns readable when the next message
 * arrives (fold it into poll/epoll; never read or close it). After
 * zr_socket_poll_events, also when what it left out may have come.
 */
ZR_API int zr_socket_fd(zr_socket *s);

/* zr_socket_poll_events' answer: bits of these. */
#define ZR_POLLIN 1
#define ZR_POLLOUT 2
/*
 * What the socket can do at once, without waiting:
 *   ZR_POLLIN   a message is waiting (and the type and its state allow a
 *               receive: REQ with a request out, REP without one to answer);
 *   ZR_POLLOUT  a zr_send would not block: the type and its state allow a
 *               send (REQ: no request out, unless ZR_REQ_RELAXED; REP: a
 *               request to answer), a type that waits for a peer (PUSH,
 *               DEALER, REQ, PAIR) has one (as libzmq's pipes: a connecter
 *               counts from zr_connect, an inproc one before the bind too),
 *               and the send queue has a free slot within SNDHWM and bytes
 *               left within SNDBYTES. A message larger than the bytes left
 *               may still get -EAGAIN.
 * It clears zr_socket_fd's wake, and each bit it leaves out arms the fd,
 * which then turns readable when that bit may have come: a message arrived,
 * or the send queue drained to half its slots or a first peer came. So the
 * fd is edge-triggered: after a wake, call this again to learn what changed,
 * and call it last before waiting on the fd (a zr_recv with ZR_DONTWAIT
 * finding nothing clears the fd too). It looks at both directions: call it
 * from the thread that sends and receives on the socket (not while another
 * thread does either). Returns the bits (0 when neither).
 */
ZR_API int zr_socket_poll_events(zr_socket *s);

/* ---- monitoring: libzmq's event names and numbers ------------------------ */

enum zr_event_type {
	ZR_EVENT_CONNECTED = 0x0001,       /* value: the fd */
	ZR_EVENT_CONNECT_RETRIED = 0x0004, /* value: the delay before the next try, ms */
	ZR_EVENT_LISTENING = 0x0008,       /* value: the fd */
	ZR_EVENT_ACCEPTED = 0x0020,        /* value: the fd */
	ZR_EVENT_ACCEPT_FAILED = 0x0040,   /* value: the negative errno */
	ZR_EVENT_CLOSED = 0x0080,          /* value: the fd */
	ZR_EVENT_DISCONNECTED = 0x0200,    /* value: the fd */
	ZR_EVENT_HANDSHAKE_SUCCEEDED = 0x1000,
	ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL = 0x2000, /* value: the negative zring code */
	ZR_EVENT_HANDSHAKE_FAILED_AUTH = 0x4000,     /* value: the ZAP status (e.g. 400);
	                                                on a server, the refused client's */
	ZR_EVENT_ALL = 0xffff,
};

#define ZR_EVENT_ENDPOINT_MAX 160
#define ZR_EVENT_REASON_MAX 256

struct zr_event {
	int type;                             /* one enum zr_event_type */
	int value;                            /* see the type */
	char endpoint[ZR_EVENT_ENDPOINT_MAX]; /* the connected-to or listening endpoint */
	/*
	 * HANDSHAKE_FAILED_*: why, in words, so that a wrong key does not look
	 * like a timeout: the check that failed ("CURVE box did not open (wrong
	 * server key or tampered data)"), the server's silence after our HELLO,
	 * the authenticator's refusal with its text, or the peer's ERROR reason.
	 * DISCONNECTED: why zring closed the connection, when it did so itself:
	 * a subscription limit ("subscriptions over SUBS_MAX (N)") or the
	 * peer's protocol error on an established connection ("message has
	 * more frames than the limit").
	 * ACCEPT_FAILED: what failed and when accepting resumes ("too many open
	 * files (RLIMIT_NOFILE); retrying in 100 ms"), or the CONNS_MAX refusal
	 * (see ZR_CONNS_MAX). Names the peer's address where known. Empty for
	 * other events.
	 */
	char reason[ZR_EVENT_REASON_MAX];
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
/*
 * As zr_socket_fd, for events: after zr_monitor_recv(s, ev, 0) returned
 * -EAGAIN, the fd turns readable when the next event is recorded, so a
 * program can poll a socket's messages and its events together. -EINVAL
 * before zr_socket_monitor. Never read or close it.
 */
ZR_API int zr_monitor_fd(zr_socket *s);

/* ---- options: libzmq's numbers, names, units and defaults ----------------- */

enum zr_option {
	ZR_ROUTING_ID = 5,         /* bytes, 1..255, not starting with 0x00 */
	ZR_SUBSCRIBE = 6,          /* bytes: a prefix (SUB, XSUB; XPUB: ZR_XPUB_MANUAL) */
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
	ZR_XPUB_VERBOSE = 40, /* int 0/1: XPUB hands over every subscribe (default 0: new ones) */
	ZR_IPV6 = 42,         /* int 0/1: "*" binds dual-stack "::", names may resolve to IPv6 */
	ZR_ROUTER_MANDATORY = 33, /* int 0/1: unknown peer -> -EHOSTUNREACH */
	ZR_MECHANISM = 43,        /* int, read only: ZR_MECH_NULL, _PLAIN or _CURVE */
	ZR_PLAIN_SERVER = 44,     /* int 0/1: be a PLAIN server */
	ZR_PLAIN_USERNAME = 45,   /* string: be a PLAIN client ((NULL, 0): back to NULL) */
	ZR_PLAIN_PASSWORD = 46,   /* string: likewise */
	ZR_CURVE_SERVER = 47,     /* int 0/1: be a CURVE server (needs CURVE_SECRETKEY) */
	ZR_CURVE_PUBLICKEY = 48,  /* key: our long-term public key */
	ZR_CURVE_SECRETKEY = 49,  /* key: our long-term secret key */
	ZR_CURVE_SERVERKEY = 50,  /* key: be a CURVE client of the server with this key */
	/* int 0/1 (DEALER, REQ, ROUTER): an empty one-frame message goes to each
	 * new peer as soon as its connection is up (libzmq's probe: a ROUTER
	 * learns of the peer before it asks anything). Default 0. */
	ZR_PROBE_ROUTER = 51,
	/* int 0/1 (REQ): each request carries a 4-octet request id frame before
	 * the empty delimiter (a uint32 in host order, starting at a random
	 * value, one more per request: libzmq's wire form), and a reply counts
	 * only when it starts with the id of the request last sent. Default 0. */
	ZR_REQ_CORRELATE = 52,
	/* int 0/1 (REQ): a new request may go while the last one waits for its
	 * reply (instead of -EFSM); the old reply is then discarded. Use with
	 * ZR_REQ_CORRELATE, or a late reply may pass for the new one's. Default 0. */
	ZR_REQ_RELAXED = 53,
	/* int 0/1, set before the first bind, connect, send or receive: keep only
	 * the newest message. PULL, SUB, DEALER receiving: the receive queue holds
	 * one message (for the socket, not per peer), each arrival replacing the
	 * unread one (RCVHWM and RCVBYTES ignored; peers are never held back).
	 * PUSH, PUB, DEALER sending: each peer's queue holds one unsent message, a newer one
	 * replacing it (SNDHWM and ZR_PUB_POLICY ignored; the send never waits
	 * for room, but a PUSH/DEALER still waits for a first peer). Messages
	 * stay whole (libzmq keeps one frame of a multipart one). Other types
	 * take and ignore it, as libzmq. Default 0. */
	ZR_CONFLATE = 54,
	ZR_ZAP_DOMAIN = 55, /* string, 0..255 octets: the ZAP domain (see below): "" */
	/* int 0/1 (PUB, XPUB): 1 is ZR_PUB_POLICY = ZR_PUB_BLOCK (a send waits,
	 * or gets -EAGAIN, while a matching subscriber is full), 0 is
	 * ZR_PUB_DROP_NEW; reads 1 when the policy is ZR_PUB_BLOCK. Default 0. */
	ZR_XPUB_NODROP = 69,
	/* int 0/1 (XPUB; PUB takes it and ignores it), set before the first
	 * bind, connect, send or receive: every subscribe and cancel a peer sends is handed to the app (each
	 * one, duplicates too), and none is applied until the app sets
	 * ZR_SUBSCRIBE / ZR_UNSUBSCRIBE on the XPUB, which applies the topic it
	 * gives (any topic) to the peer whose notice the app received last
	 * (none yet, or that peer gone: nothing). SUBS_MAX and SUBS_MAXBYTES
	 * still bound what a peer holds. Default 0. */
	ZR_XPUB_MANUAL = 71,
	/* bytes, 0..255 (XPUB, PUB): a message each new subscriber gets as soon
	 * as it connects (a SUB subscribed to it receives it first). Empty:
	 * none (default). */
	ZR_XPUB_WELCOME_MSG = 72,
	/* int 0/1 (PUB, XPUB, SUB; others take it and ignore it, and an XSUB
	 * does not filter): matching is inverted: a PUB sends to the
	 * subscribers that do NOT match frame 0 (one holding nothing too, as
	 * libzmq), a SUB takes the messages that match none of its
	 * subscriptions. Both ends must agree (libzmq's rule). Default 0. */
	ZR_INVERT_MATCHING = 74,
	ZR_HANDSHAKE_IVL = 66,     /* int, ms: 30000 */
	ZR_HEARTBEAT_IVL = 75,     /* int, ms: 0 */
	ZR_HEARTBEAT_TTL = 76,     /* int, ms: 0 */
	ZR_HEARTBEAT_TIMEOUT = 77, /* int, ms: 0 = HEARTBEAT_IVL */
	ZR_XPUB_VERBOSER = 78, /* int 0/1: XPUB_VERBOSE, and every cancel of a held subscription */
	ZR_ZAP_ENFORCE_DOMAIN = 93, /* int 0/1: no ZAP handler refuses instead of accepting: 0 */

	/* zring's own (no libzmq equivalent) */
	ZR_SNDBYTES =
		1001, /* int64, bytes per peer's send queue and in the socket's own send queue: 8 MiB */
	ZR_RCVBYTES = 1002,   /* int64, bytes in the receive queue: 8 MiB */
	ZR_PUB_POLICY = 1003, /* int: what PUB/XPUB do with a subscriber whose queue is full */
	ZR_MAXFRAMES = 1004,  /* int, frames per received message: 65536; -1 = no limit */
	ZR_SUBS_MAX =
		1005, /* int: subscriptions one PUB/XPUB peer may hold: 100000 (-1: no limit) */
	ZR_SUBS_MAXBYTES = 1006, /* int64, bytes: what they may cost: 16 MiB (-1: no limit) */
	ZR_CONNS_MAX = 1007,     /* int, connections: ZR_CONNS_MAX_DEFAULT; -1 = no limit */
	ZR_BUSY_POLL = 1008, /* int, microseconds of busy-polling before a wait sleeps: 0 (off) */
	ZR_WAKE_COALESCE = 1009, /* int, microseconds: see below; 20 (0: off) */
	/* tls:// endpoints (see below) */
	ZR_TLS_CERT = 1010,   /* string: our certificate chain, a PEM path or PEM text */
	ZR_TLS_KEY = 1011,    /* string: its private key, likewise (set only) */
	ZR_TLS_CA = 1012,     /* string: trust anchors, a PEM file, hashed directory or PEM text */
	ZR_TLS_VERIFY = 1013, /* int 0/1: clients verify the server: 1 */
	ZR_TLS_SERVER_NAME = 1014, /* string: the name the server's certificate must carry */
	ZR_TLS_VERSION_MIN = 1015, /* int: ZR_TLS_V13 (default) or ZR_TLS_V12 */
};

/*
 * ZR_BUSY_POLL trades CPU for latency. With it above 0, the context's io
 * thread, before it sleeps in the kernel, polls its io_uring for up to the
 * largest ZR_BUSY_POLL of the context's sockets; and, when the process may
 * run on 4 CPUs or more, a zr_recv (zr_send) that finds its queue empty
 * (full) spins on the queue for up to that many microseconds before it
 * sleeps on the socket's eventfd. (With fewer CPUs only the io thread
 * spins: four spinning threads of a local request/reply pair on 2 cores
 * measured slower than none.) In a ZR_CTX_CALLER_IO context the waiting
 * thread polls the ring itself instead, on any number of CPUs. A message
 * arriving within the window is then taken without a thread being woken.
 * A spin ends as soon as there is work; it pauses the core between looks
 * and yields it (sched_yield) every other look, so a thread it waits for on
 * the same core runs.
 *
 * The cost: a wait that lasts longer burns up to the full window of CPU in
 * the io thread (and in the calling thread where it spins too): about one
 * core per busy context while traffic flows with gaps shorter than the
 * window, nothing once it sleeps (an idle socket costs one window per wait,
 * then nothing). Worth it for request/reply traffic whose replies come
 * within the window, on machines with cores to spare. Microseconds, 0 to 1000000; other values
 * -EINVAL. Default 0: nothing spins. May be set at any time; a wait already
 * sleeping is not affected. The io thread follows the largest value set on
 * any socket of the context that has bound or connected, and lowers it
 * only when such a socket closes.
 */

/*
 * ZR_WAKE_COALESCE trades a little latency within a stream of sends for
 * fewer system calls. Each send that finds the io thread asleep wakes it (an
 * eventfd write: a system call in the sending thread, a wake of the io
 * thread); a sender slower than the io thread, such as a Python loop, paid
 * one every few messages. When one look of the io thread finds two or more
 * messages queued on a socket, it stops announcing that it sleeps for the
 * socket's ZR_WAKE_COALESCE microseconds: sends meanwhile only mark the
 * socket, with no system call, and the io thread takes them when the window
 * ends (it does not wait longer than that, so nothing is stranded). A window
 * in which nothing came ends it. So a message sent while a stream runs (or
 * within a window of its end) may wait up to the window before it goes; one
 * sent when no stream runs, such as a request or its reply (one message per
 * look), goes at once. Through pyzmq, 64 B PUSH/PULL went from 0.77 M to
 * 0.89 M msgs/s at 20 us (bench/README.md). Microseconds, 0 (off) to 1000;
 * other values -EINVAL. Default 20. Takes effect at the socket's next look.
 */

/*
 * tls://host:port is tcp:// (the same address forms, "*" host and port when
 * binding, LAST_ENDPOINT reads back "tls://addr:port") with a TLS session
 * (OpenSSL 3; TLS 1.3, or 1.2 with ZR_TLS_VERSION_MIN = ZR_TLS_V12) on
 * every connection, and the ZMTP connection, its mechanism included (NULL,
 * PLAIN, CURVE), inside it, unchanged. Every socket type takes it.
 *
 * Options, read when zr_bind / zr_connect first meets a tls:// endpoint,
 * which builds the socket's TLS context (one for its bound endpoints, one
 * for its connections) then and keeps it: set them before. A bad file or
 * PEM item fails that call (-ENOENT, -EACCES, -EBADMSG: the key does not
 * match the certificate or a PEM item does not parse; -EINVAL: a bound
 * tls:// endpoint without ZR_TLS_CERT and ZR_TLS_KEY).
 * - ZR_TLS_CERT, ZR_TLS_KEY: a value starting "-----BEGIN" is the PEM text
 *   itself, anything else a path (up to 1 MiB). The chain follows the leaf.
 *   Required for a server; a client offers its own when the server asks.
 * - ZR_TLS_CA: trust anchors (file, OpenSSL hashed directory, or PEM text).
 *   A client without it trusts the system store. A server with it requires
 *   a client certificate that chains to it (mutual TLS): the certificate's
 *   subject (RFC 2253, "CN=client,O=example") becomes the User-Id property
 *   of every message received on that connection (zr_msg_gets), unless a
 *   PLAIN/CURVE authenticator named another.
 * - ZR_TLS_VERIFY: 0 makes a client accept any server certificate (testing
 *   only). Servers verify when they have a CA.
 * - ZR_TLS_SERVER_NAME: default, the host of the tls:// endpoint as
 *   written. An IPv4/IPv6 literal is checked against the certificate's IP
 *   subjectAltNames, a name against its DNS ones (and sent as SNI).
 * A failed TLS handshake (unknown CA, name mismatch, expired certificate,
 * no client certificate, a plain ZMTP peer on a tls:// endpoint, or a TLS
 * peer on a tcp:// one) is a ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL event whose
 * reason says which, in OpenSSL's words ("name mismatch: hostname mismatch
 * ..."), and the connection closes; a connecter does not retry it.
 */
#define ZR_TLS_V12 12
#define ZR_TLS_V13 13

/*
 * ZR_MAXFRAMES bounds the frames of one received message, as MAXMSGSIZE
 * bounds its bytes: MAXMSGSIZE counts frame bodies only, so a peer sending
 * empty MORE frames (2 octets each on the wire, 16 octets of bookkeeping
 * each here) and never a last one would otherwise grow the message in
 * assembly without limit. The default, 65536, lets through any message a
 * real application sends and caps one message's frame table at 1 MiB. A
 * connection whose peer sends one frame more is closed (the codec's
 * -ZR_ETOOMANYFRAMES, ZR_EVENT_DISCONNECTED with that reason); nothing of
 * that message is delivered, and the socket goes on serving its other
 * connections (a connecting socket does not reconnect, as after any
 * protocol error). Sent messages are not limited. -1 removes the limit
 * (libzmq has none), which lets such a peer take all the memory; 0 or
 * below -1: -EINVAL. Applies to connections made after it is set.
 */

/*
 * Subscriptions (PUB, XPUB). Each peer's are bounded: at most SUBS_MAX
 * subscriptions (each SUBSCRIBE counts, duplicates included; a CANCEL gives
 * one back) costing at most SUBS_MAXBYTES, where a distinct topic costs its
 * length plus 352 octets (an upper bound of what it takes in the socket's
 * trie and its hash index, so the figure bounds memory: 16 MiB is ~45,000
 * topics of 16 octets). A peer that goes over either is disconnected, with
 * a ZR_EVENT_DISCONNECTED whose reason names the limit; what it held is
 * cancelled as on any loss. Setting -1 removes a limit; values below -1 are
 * -EINVAL. A message is matched by one walk of its first frame over the
 * socket's prefix trie or, when the topics held have at most 4 distinct
 * lengths and none is over 64 octets, by a hash lookup of each of those
 * prefixes of it.
 *
 * XPUB hands the app "\x01topic" when a topic gets its first holder among
 * the peers and "\x00topic" when its last holder cancels or leaves (as
 * libzmq; XPUB_VERBOSE and XPUB_VERBOSER as libzmq's). Unlike libzmq, a
 * CANCEL for a topic that peer does not hold is ignored (no notice), so one
 * peer cannot cancel a topic for the others. No notice is dropped: when the
 * receive queue is full, the peer that sent the (un)subscribe stops being
 * read until the app makes room; a lost peer's cancels wait in a list
 * bounded by what the lost peers held and go first once there is room.
 */

/*
 * ZR_CONNS_MAX bounds the connections a socket has accepted on its bound
 * endpoints at once (all of them together; connections it dialled do not
 * count), from accept until the connection is gone (its handshake included).
 * One more is closed as soon as it is accepted (the peer sees the
 * connection end and retries on its own schedule) and the monitor gets
 * ZR_EVENT_ACCEPT_FAILED with value -ECONNREFUSED and the reason
 * "connections at CONNS_MAX (N): a new one was closed". Set it before
 * zr_bind, as the other options. -1: no limit (as SUBS_MAX); 0 and values
 * below -1: -EINVAL.
 *
 * Separately, when accept itself fails for want of descriptors or memory
 * (EMFILE, ENFILE, ENOMEM, ENOBUFS or any error that is not the one
 * connection's), the listener stops accepting for 100 ms, doubling up to
 * 1 s while the failures go on, and resumes at 100 ms after a success; the
 * pending connections wait in the kernel's backlog meanwhile. Each such
 * pause is one ZR_EVENT_ACCEPT_FAILED with the negative errno and a reason
 * like "too many open files (RLIMIT_NOFILE); retrying in 100 ms".
 */
#define ZR_CONNS_MAX_DEFAULT 65536

/*
 * Byte budgets sit beside the message high-water marks, so memory is bounded
 * whatever the message size: a queue takes a message while it holds fewer than
 * its HWM messages and fewer than its budget in bytes (an empty queue takes
 * any one message, so one larger than the budget still passes). A message
 * counts its bytes plus 16 per frame (the record of where the frame lies),
 * so a queue of many-frame messages is bounded in bytes too. A full
 * receive queue stops the reading (the peer's sends wait: TCP flow control).
 */

/* ZR_PUB_POLICY values. */
enum zr_pub_policy {
	ZR_PUB_DROP_NEW = 0,   /* RFC 29 and libzmq: that subscriber misses this message */
	ZR_PUB_BLOCK = 1,      /* lossless: the send waits for the slowest *matching*
	                          subscriber (others are unaffected when it does not match);
	                          once that one is full, while messages queue behind, it is
	                          waited for until half its SNDHWM (at most 64 messages)
	                          and half its SNDBYTES are free, as libzmq's low-water mark */
	ZR_PUB_DROP_OLD = 2,   /* the subscriber's oldest unsent message makes room */
	ZR_PUB_DISCONNECT = 3, /* the slow subscriber is disconnected (it may reconnect) */
};

/*
 * Security, as libzmq: the last of PLAIN_SERVER, PLAIN_USERNAME,
 * CURVE_SERVER, CURVE_SERVERKEY set picks the mechanism and the role, and
 * every connection of the socket then uses it; there is no fallback to NULL
 * (a peer announcing another mechanism is refused: downgrade protection).
 * A CURVE key is 32 octets or its 40 Z85 characters (a 41st, NUL, is
 * allowed); reading one back gives the 32 octets when *len is 32, else the
 * Z85 text and a NUL (*len >= 41). A CURVE client needs PUBLICKEY,
 * SECRETKEY and SERVERKEY, a server SECRETKEY (its public key is derived
 * when not set): zr_bind / zr_connect return -EINVAL without them.
 * Servers accept every client that completes the handshake unless
 * zr_socket_set_auth installs an authenticator.
 */

/* Sets an option; integers are passed as int (or int64_t for MAXMSGSIZE) with
 * len = sizeof. Set options before bind/connect; they apply to connections
 * made afterwards. Returns 0 or -EINVAL. */
ZR_API int zr_setsockopt(zr_socket *s, int option, const void *value, size_t len);
/* Reads an option into value (*len: in, the room; out, the length). */
ZR_API int zr_getsockopt(zr_socket *s, int option, void *value, size_t *len);

/*
 * The socket's authenticator (PLAIN and CURVE servers): asked about every
 * client that completed the mechanism's checks, before the client is READY,
 * with the mechanism, the peer's address and the PLAIN credentials or the
 * CURVE client's public key, and on tls:// the client certificate's subject
 * (see struct zr_zmtp_auth_req in zmtp.h). It
 * returns 200 to accept (optionally filling req->user_id, which the client's
 * messages then carry as "User-Id", see zr_msg_gets) or 300 / 400 / 500 to
 * refuse (optionally filling req->text). A refused client gets ERROR with
 * the status, is closed, and nothing it sent is delivered; the socket's
 * monitor sees HANDSHAKE_FAILED_AUTH with the status and the text.
 *
 * A libzmq 4.3 PLAIN client reports our refusal as a protocol error, not
 * as ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: its PLAIN code only recognises its own
 * malformed spelling of ERROR, which we do not send (a conformant peer would
 * reject it). libzmq CURVE clients see AUTH with the status.
 *
 * It runs on the context's io thread while that thread waits, so it must be
 * quick and must not call zring functions on the same context; arg must stay
 * valid until zr_ctx_free returns (handshakes may still complete while a
 * closed socket lingers). Set it before bind/connect (NULL
 * removes it: every client is accepted). Returns 0.
 */
ZR_API int zr_socket_set_auth(zr_socket *s, zr_zmtp_auth_cb *cb, void *arg);

/*
 * ZAP (RFC 27), as libzmq 4.3. A socket without an authenticator of its
 * own (zr_socket_set_auth) asks the ZAP handler of its context, if any: a
 * socket of the same context bound at "inproc://zeromq.zap.01" (a REP or a
 * ROUTER; pyzmq's zmq.auth is one). PLAIN and CURVE servers ask about every
 * client; NULL sockets (either side) ask about every peer only when their
 * ZR_ZAP_DOMAIN is not empty, and send READY only once the handler
 * accepted. The request is libzmq's: an empty delimiter, "1.0", a request
 * id, ZR_ZAP_DOMAIN, the peer's IP address ("127.0.0.1", "" off tcp), our
 * ZR_ROUTING_ID, the mechanism ("NULL", "PLAIN", "CURVE") and the
 * credentials (PLAIN: username, password; CURVE: the client's 32-octet
 * public key). The reply (delimiter, "1.0", the same id, status "200" /
 * "300" / "400" / "500", status text, user id, metadata) decides: 200
 * accepts, and the client's messages carry the user id as "User-Id" and the
 * metadata's properties (zr_msg_gets); anything else refuses as the socket's
 * own authenticator would (ERROR with the status, HANDSHAKE_FAILED_AUTH with
 * it on the monitor). A malformed reply fails the handshake
 * (HANDSHAKE_FAILED_PROTOCOL, -EPROTO). The io thread never waits for the
 * handler: the handshake waits (HANDSHAKE_IVL still runs) while every other
 * connection goes on; a connection that closes meanwhile is forgotten and
 * its late reply dropped. Requests wait in the pipe to the handler (its
 * RCVHWM, then 1000 more) and at most 4096 per context: one more is refused
 * with 300; a handler that closes with requests outstanding refuses them
 * with 500.
 *
 * With no handler bound, every client is accepted (libzmq's rule), unless
 * ZR_ZAP_ENFORCE_DOMAIN is 1: then it is refused with 500 (libzmq closes
 * the connection without ERROR). A socket's own authenticator, when set,
 * is asked instead of the handler, about NULL peers too when ZR_ZAP_DOMAIN
 * is set (mechanism ZR_MECH_NULL).
 */

/* ---- the broker model: brokers, subscriptions, publishers ----------------
 *
 * The service-level model above the sockets (DESIGN.md, "The public model").
 * A broker is one pattern on one endpoint, bound or connected, and carries
 * read_ahead: how many messages each of its subscriptions reads off its socket
 * ahead of its handlers (default 1000). When a subscription's channel holds
 * read_ahead messages its connections stop reading, the kernel buffers fill,
 * TCP closes the window and the remote sender waits: memory stays bounded and
 * no message accepted off the wire is dropped.
 *
 * Wire layout (byte-compatible with the seed's broker, so any ZeroMQ peer can
 * take part): frame 0 the name (fan-out: also the prefix subscribers filter
 * on), frame 1 "name: value" header lines joined by '\n' (an empty frame when
 * there are none), frame 2 the payload. Two-frame messages [name, payload] and
 * one-frame messages [name] from minimal peers are accepted; frames after the
 * third are ignored. RPC requests carry a "correlation-id" header; a responder
 * sees a "reply-to: zmq-reply:<hex of the requester's routing id>" header and
 * replies go back as [routing id, "reply", headers, payload]. The broker sets
 * that header itself: a "reply-to" header (any case) the requester sent is
 * dropped on receipt, and the routing ids a responder's socket gives
 * requesters without an id of their own are random (0x00 + 4 octets, drawn
 * per connection), so one requester cannot name another's address.
 *
 * Errors: calls return 0 or a negative code; the object's error text (see
 * zr_broker_error, zr_publisher_error) names what failed and where (the
 * destination, the header, the address, the subscription):
 *   -EINVAL        a refused arrangement or argument (e.g. "inproc://" endpoint,
 *                  a second subscription on a bound endpoint, a batch responder)
 *   -ENOTCONN      the broker is not started or was shut down; "no connected
 *                  peer" after the 5 s retry window
 *   -EADDRINUSE... the endpoint could not be bound or dialled
 *   -EHOSTUNREACH  a reply address no connected requester holds
 *   -EILSEQ        a header name or value that is not UTF-8 (nothing was sent)
 *   -EPERM         a publish the pattern refuses (a bound queue's publisher may
 *                  only feed its own subscription; a dialling subscription's
 *                  broker cannot publish)
 *   -ETIMEDOUT     a publish or request ran out of time (nothing was sent, or
 *                  no correlated reply came)
 *   -ECANCELED     zr_publisher_cancel() gave up a waiting publish (nothing sent)
 * Threads: a broker, its subscriptions and its publishers may be created and
 * freed from any thread; one publisher is used by one thread at a time (make
 * one per thread; they are cheap), except zr_publisher_cancel.
 */

typedef struct zr_broker zr_broker;
typedef struct zr_subscription zr_subscription;
typedef struct zr_publisher zr_publisher;

enum zr_pattern {
	ZR_QUEUE = 1,  /* PUSH/PULL: every message to one subscriber, no filtering */
	ZR_FANOUT = 2, /* PUB/SUB: every subscriber whose name prefixes frame 0 */
	ZR_RPC = 3,    /* DEALER/ROUTER: request and reply */
};

enum zr_side {
	ZR_BIND = 1,    /* this process listens on the endpoint */
	ZR_CONNECT = 2, /* this process dials it */
};

#define ZR_READ_AHEAD_DEFAULT 1000
#define ZR_BATCH_WAIT_MS 20          /* a batch closes this long after its first message */
#define ZR_SEND_RETRY_WINDOW_MS 5000 /* "no peer yet": how long a send keeps trying */
#define ZR_SEND_RETRY_STEP_MS 50
#define ZR_DRAIN_DEFAULT_MS 5000 /* shutdown: how long in-flight handlers get */
#define ZR_ERRTEXT_MAX 512

/* One header: name and value, NUL-terminated UTF-8. */
struct zr_header {
	const char *name;
	const char *value;
};

/*
 * What a handler receives. Everything it points to lives until the handler
 * returns (copy what you keep), except a reply from zr_request, which lives
 * until zr_delivery_free.
 */
struct zr_delivery {
	const char *name;                /* frame 0, NUL-terminated */
	const struct zr_header *headers; /* in wire order */
	size_t nheaders;
	const void *payload;
	size_t payload_len;
	const char *reply_to;   /* RPC requests: "zmq-reply:<hex>"; else NULL */
	uint64_t seq;           /* arrival order in the subscription, from 1 */
	unsigned lane;          /* the worker or lane running the handler */
	int error;              /* 0, or an error item: -EPROTO (malformed
	                                    wire layout; the subscription keeps going) */
	const char *error_text; /* what was wrong, when error != 0 */
};

/* The value of the first header called name (ASCII case-insensitive), or NULL. */
ZR_API const char *zr_delivery_header(const struct zr_delivery *d, const char *name);
/* Frees a reply returned by zr_request. NULL is fine. */
ZR_API void zr_delivery_free(struct zr_delivery *d);

/* ---- brokers ---- */

/*
 * A broker of a pattern on an endpoint ("tcp://host:port", "ipc://path"),
 * bound or connected. Records the configuration only: no socket is opened and
 * the endpoint is checked at zr_broker_start. Returns 0, -EINVAL, -ENOMEM.
 */
ZR_API int zr_broker_new(zr_ctx *ctx, int pattern, const char *endpoint, int side, zr_broker **out);
/* Sets read_ahead (>= 1) for subscriptions opened afterwards. 0 or -EINVAL. */
ZR_API int zr_broker_set_read_ahead(zr_broker *b, unsigned read_ahead);
/* Sets the byte budget beside read_ahead (default 8 MiB, ZR_RCVBYTES's): a
 * channel takes a message while it holds fewer than read_ahead messages and
 * fewer than this many bytes (an empty channel takes any one message), for
 * subscriptions opened afterwards. 0 or -EINVAL. */
ZR_API int zr_broker_set_read_ahead_bytes(zr_broker *b, int64_t bytes);
/* Sets how long zr_broker_shutdown lets handlers finish (ms, -1: for ever). */
ZR_API int zr_broker_set_drain_timeout(zr_broker *b, int ms);
/* Checks the endpoint (tcp://, ipc:// or tls://) and opens the broker for
 * subscriptions and publishes; its socket options and authenticator are
 * fixed from now on. Idempotent. Returns 0 or -EINVAL (the text names the
 * address). */
ZR_API int zr_broker_start(zr_broker *b);
/*
 * Copies the address the bound subscription listens on (port 0 resolved) into
 * buf. Returns its length, -ENOENT while no subscription holds the endpoint,
 * -ENOSPC when buf is too small.
 */
ZR_API int zr_broker_bound_address(zr_broker *b, char *buf, size_t cap);
/*
 * Closes the broker: publishes and requests through any of its publishers fail
 * at once with -ENOTCONN (waiting ones wake and fail); every subscription stops
 * reading its socket, hands the messages it already accepted to its handlers
 * and waits for the handlers in flight, for at most the drain timeout; then
 * the sockets close. Returns 0, or -ETIMEDOUT when the drain timeout ran out
 * (messages still queued are discarded and counted; a handler still running
 * cannot be stopped in C: zr_broker_free waits for it).
 */
ZR_API int zr_broker_shutdown(zr_broker *b);
/* Shuts down if needed and frees the broker with every subscription and
 * publisher it still has. NULL is fine. */
ZR_API void zr_broker_free(zr_broker *b);
/* The text of the broker's last failed call (start, subscribe, setsockopt,
 * set_auth), or "". Valid until the next call on the broker. */
ZR_API const char *zr_broker_error(const zr_broker *b);

/*
 * Security for the broker's sockets: the broker opens its sockets itself, so
 * it takes their options here and sets them, in the order given, on every
 * socket it opens afterwards: its subscriptions' (PULL, SUB, ROUTER), its
 * publishers' (PUSH, PUB, XPUB) and the DEALER of each RPC requester. This is
 * how a broker speaks CURVE or PLAIN (the options and the libzmq rule of
 * "the last role option set picks the mechanism", above), and it carries any
 * other per-socket option the table takes (HANDSHAKE_IVL, HEARTBEAT_*,
 * MAXMSGSIZE, SNDHWM, CONNS_MAX, ... and options added later, such as a
 * transport's, with no change here).
 *
 * Call it after zr_broker_new and before zr_broker_start. The value is copied
 * (a secret key is wiped when the broker is freed) and checked at once on a
 * scratch socket of each type the pattern uses: an option none of them takes,
 * a wrong length or a value out of range returns -EINVAL with a
 * zr_broker_error text naming the option number. Options the broker sets
 * itself are refused the same way, naming the call that sets them instead:
 * SUBSCRIBE, UNSUBSCRIBE, RCVHWM, RCVBYTES, LINGER, ROUTER_MANDATORY,
 * PUB_POLICY, ROUTING_ID, XPUB_VERBOSE(R), RCVTIMEO, SNDTIMEO. A socket type
 * that does not take an option another of the pattern's types takes skips
 * it. -EINVAL too once started, -ENOMEM. At most 256 calls per broker.
 *
 * An incomplete set (a CURVE server without CURVE_SECRETKEY, a client
 * without its keys) is found when a socket binds or dials: zr_subscribe or
 * zr_publish fails with -EINVAL and a text that says so.
 *
 * Roles follow the sockets: a broker that binds with CURVE_SERVER (or
 * PLAIN_SERVER) is the server of every peer that dials it, and a broker that
 * dials is given the client's options (CURVE_SERVERKEY, CURVE_PUBLICKEY and
 * CURVE_SECRETKEY, or PLAIN_USERNAME and PLAIN_PASSWORD). A publisher or
 * requester that dials its own broker's bound subscription (one broker doing
 * both) becomes that server's client: with CURVE it presents the server's
 * own key pair (the authenticator sees the server's public key), with PLAIN
 * the PLAIN_USERNAME / PLAIN_PASSWORD set before PLAIN_SERVER, if any, and
 * on tls:// it does not verify the broker's own certificate (ZR_TLS_VERIFY
 * 0: the far end is the broker's own listener) and presents TLS_CERT.
 *
 * Once a broker has options, a publisher waiting for a peer watches its
 * socket's handshakes: a failed one ends the publish or request at once
 * with -EPROTO (a wrong server key, another mechanism) or -EACCES (the server
 * refused us), the text naming the endpoint and the reason of the
 * HANDSHAKE_FAILED event (a dialled socket does not retry a failed
 * handshake); the next publish dials anew. For this the broker monitors its
 * publishers' sockets (HANDSHAKE_FAILED_*) and reads their events while a
 * publish waits for a peer, so an app that monitors zr_publisher_socket
 * itself may miss events read then. A subscription's failed handshakes are
 * on its socket's monitor (zr_subscription_socket, zr_socket_monitor).
 */
ZR_API int zr_broker_setsockopt(zr_broker *b, int option, const void *value, size_t len);
/*
 * The authenticator of the broker's server sockets, as zr_socket_set_auth
 * (same callback, same rules: it runs on the io thread, and arg must stay
 * valid until zr_ctx_free returns), set on every socket the broker opens
 * afterwards; only a socket in a PLAIN or CURVE server role asks it. Call
 * it before zr_broker_start (NULL removes it). Returns 0, or -EINVAL (NULL
 * broker, or started).
 */
ZR_API int zr_broker_set_auth(zr_broker *b, zr_zmtp_auth_cb *cb, void *arg);

/* ---- subscriptions ---- */

typedef void (*zr_handler_fn)(const struct zr_delivery *d, void *arg);
typedef void (*zr_batch_fn)(const struct zr_delivery *const *batch, size_t n, void *arg);

struct zr_sub_opts {
	zr_handler_fn handler;     /* one delivery per call ... */
	zr_batch_fn batch_handler; /* ... or batches: set exactly one */
	void *arg;
	unsigned workers; /* handlers side by side (0 or 1: one at a time, in order) */
	int by_key;       /* with workers: lanes in rotation (1, 2, ..., 0, 1, ...),
	                     each lane in order; not with batches */
	unsigned batch;   /* batch size (batch_handler): a batch closes at this size
	                     or ZR_BATCH_WAIT_MS after its first message; never empty */
};

/*
 * Mounts a handler on a name: opens the subscription's socket (PULL, SUB
 * filtered on name, or ROUTER), binds or dials the endpoint and starts
 * delivering. A bound endpoint takes one subscription (a second is refused
 * with -EINVAL naming both); a dialling broker takes any number. An error item
 * (a malformed message) goes to the handler with d->error set. Returns 0,
 * -ENOTCONN (not started / shut down), -EINVAL, -EADDRINUSE, ...
 */
ZR_API int zr_subscribe(zr_broker *b, const char *name, const struct zr_sub_opts *opts,
                        zr_subscription **out);
/*
 * Drops a subscription: stops reading, waits for the handlers in flight,
 * discards what its channel still holds, closes the socket and frees the
 * endpoint for a later subscription. Never call it from its own handler.
 */
ZR_API void zr_unsubscribe(zr_subscription *sub);

struct zr_sub_stats {
	uint64_t received;  /* messages taken off the channel (errors included) */
	uint64_t handled;   /* handler calls returned (a batch counts its size) */
	uint64_t errors;    /* error items delivered */
	uint64_t discarded; /* accepted but dropped by unsubscribe or shutdown */
	size_t depth;       /* messages in the channel now */
	size_t peak_depth;  /* the most it ever held (<= read_ahead) */
	size_t in_flight;   /* taken off the channel, handler not yet returned */
	size_t read_ahead;
};
ZR_API void zr_subscription_stats(zr_subscription *sub, struct zr_sub_stats *st);
/* The subscription's socket, for zr_getsockopt, zr_socket_monitor and
 * zr_monitor_recv only: never send, receive on or close it. */
ZR_API zr_socket *zr_subscription_socket(zr_subscription *sub);

/* ---- publishers ---- */

/* A publisher of the broker. Its socket attaches at the first publish. */
ZR_API int zr_publisher_new(zr_broker *b, zr_publisher **out);
/* Frees it (its socket lingers out what it already took). NULL is fine. */
ZR_API void zr_publisher_free(zr_publisher *p);

/*
 * Publishes [name, headers, payload].
 *   Queue: to one peer with room (round robin); waits while none has room,
 *   and while there is no peer yet for up to ZR_SEND_RETRY_WINDOW_MS counted
 *   from the first refusal (then -ENOTCONN, "no connected peer").
 *   Fan-out: to every subscriber whose name prefixes name, waiting for the
 *   slowest matching one; a message nobody matches is dropped and counted
 *   (success).
 *   RPC: name must be a reply address "zmq-reply:<hex>" (see zr_reply).
 * timeout_ms bounds the wait (-1: for ever); -ETIMEDOUT then, with nothing of
 * the message taken. A message is taken whole or not at all: once taken it
 * goes out complete, before anything this publisher publishes next.
 */
ZR_API int zr_publish(zr_publisher *p, const char *name, const struct zr_header *headers,
                      size_t nheaders, const void *payload, size_t len, int timeout_ms);
/*
 * Makes the publish or request waiting on p (in another thread) return
 * -ECANCELED; nothing of its message was taken. Does nothing when none waits.
 */
ZR_API void zr_publisher_cancel(zr_publisher *p);
/*
 * RPC: sends a request with a "correlation-id" header (the caller's, or
 * "req-<pid>-<16 hex>") and waits up to timeout_ms for the reply carrying the
 * same id; other replies are discarded, and the reply to a request that timed
 * out never resolves a later one. *reply (free with zr_delivery_free) has name
 * "reply". Returns 0, -ETIMEDOUT, -ENOTCONN, ...
 */
ZR_API int zr_request(zr_publisher *p, const char *name, const struct zr_header *headers,
                      size_t nheaders, const void *payload, size_t len, int timeout_ms,
                      struct zr_delivery **reply);
/* RPC responder: answers request (a delivery of the broker's subscription)
 * with the payload, copying its correlation-id. */
ZR_API int zr_reply(zr_publisher *p, const struct zr_delivery *request,
                    const struct zr_header *headers, size_t nheaders, const void *payload,
                    size_t len);
/* The text of p's last failed call, or "". */
ZR_API const char *zr_publisher_error(const zr_publisher *p);

struct zr_pub_stats {
	uint64_t published;      /* publishes that succeeded */
	uint64_t unmatched;      /* fan-out: messages no subscriber matched (dropped);
	                        counted when the io thread routes them, a moment
	                        after zr_publish returned */
	uint64_t blocked_ms;     /* total time publishes waited for room */
	uint64_t blocked_now_ms; /* > 0: a publish is waiting, for this many ms so far */
};
ZR_API void zr_publisher_stats(zr_publisher *p, struct zr_pub_stats *st);
/* The publisher's socket once attached (else NULL); same rules as
 * zr_subscription_socket. */
ZR_API zr_socket *zr_publisher_socket(zr_publisher *p);

#ifdef __cplusplus
}
#endif

#endif /* ZR_ZRING_H */
