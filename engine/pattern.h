/*
 * engine/ — internal: the socket patterns behind one const table of hooks
 * (nng's shape). The socket core (socket.c) keeps the queues, the send and
 * receive loops, the counts, the listeners and close; everything that
 * depends on the socket type is a hook or a flag here, chosen once at
 * zr_socket_open and never tested again. Not installed.
 *
 * Families, one file each, each ending with its const tables:
 *   pat_rr.c      PUSH, PULL, DEALER, PAIR, REQ (round robin, REQ's envelope)
 *   pat_route.c   ROUTER, REP (routing ids, ROUTER_MANDATORY, REP's envelope)
 *   pat_pubsub.c  PUB, XPUB, SUB, XSUB (subscription sets, matching, notices)
 *   pattern.c     the table indexed by type
 *
 * A NULL hook is the common behaviour spelled out beside it, so the hot
 * paths of most types pay one load and one test, and a type that needs the
 * hook one indirect call. No hook allocates per message.
 */
#ifndef ZR_ENGINE_PATTERN_H
#define ZR_ENGINE_PATTERN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring/zmtp.h>
#include <zring/zring.h>

#include "subs.h"

struct zr_socket;
struct zr__conn;

/* A deliver hook's answer for "push it to the app's queue as it is". */
#define ZR__PAT_RX 2

struct zr__sock_ops {
	/* zr_send is -ENOTSUP (PULL, SUB) / zr_recv is -ENOTSUP (PUSH, PUB). A
	 * direction the type never uses also gets the smallest rings. */
	bool can_send, can_recv;
	/* A send waits while there is no peer at all, as libzmq's types that
	 * never drop do while they have no pipe (PUSH, DEALER, REQ, PAIR). */
	bool waits_for_peer;
	/* The io thread empties the app -> io handoff at once (the limit is each
	 * peer's queue, never a wait): at least 1024 slots to absorb a burst
	 * between two turns of the loop, whatever SNDHWM says. */
	bool tx_burst;

	/* ---- app thread ---- */

	/* Before a send: envelope frames put in front of m (*added of them,
	 * dropped again if the send fails) or a refusal (-EFSM, -EHOSTUNREACH).
	 * NULL: nothing to do. */
	int (*send_prepare)(struct zr_socket *s, zr_msg *m, uint32_t *added);
	/* Whether the state allows a send now (zr_socket_poll_events): 0 or
	 * -EFSM, as send_prepare would answer. NULL: 0. */
	int (*send_check)(struct zr_socket *s);
	/* The message went into the handoff. NULL: nothing to do. */
	void (*send_done)(struct zr_socket *s);
	/* Before a receive: 0 or -EFSM. NULL: 0. */
	int (*recv_check)(struct zr_socket *s);
	/* After a receive: 1 to hand m to the app, 0 to drop it. NULL: 1. */
	int (*recv_finish)(struct zr_socket *s, zr_msg *m);
	/* ZR_SUBSCRIBE / ZR_UNSUBSCRIBE are accepted (and their command runs
	 * the subscribe hook on the io thread). */
	bool app_subscribes;

	/* ---- io thread ---- */

	/* One message from the handoff: true when it was routed (or dropped),
	 * false when it must wait for room (it stays pending). Never NULL. */
	bool (*route)(struct zr_socket *s, zr_msg *m);
	/* A new incoming message is about to get its first frame (ROUTER and
	 * REP put the sender's routing id in front). NULL: nothing. */
	int (*rx_begin)(struct zr_socket *s, struct zr__conn *c, zr_msg *m);
	/* A whole message arrived on c: ZR__PAT_RX (the core pushes it to the
	 * app's queue), or zr__sock_deliver's own answer with m taken care of.
	 * NULL: ZR__PAT_RX. */
	int (*deliver)(struct zr_socket *s, struct zr__conn *c, zr_msg *m);
	/* deliver's whole work when it only filters on frame 0 (SUB): true to
	 * take a message whose first frame is f0. A connection's run of
	 * one-frame messages asks it before making each one, and drops what it
	 * refuses unmade (zr__sock_rx_room). NULL: a type with a deliver hook
	 * takes no such run. */
	bool (*rx_accept)(struct zr_socket *s, const uint8_t *f0, size_t len);
	/* A peer's SUBSCRIBE / CANCEL (zr__sock_subscription's contract). NULL:
	 * ignored (1). */
	int (*peer_subscription)(struct zr_socket *s, struct zr__conn *c, bool subscribe,
	                         const uint8_t *topic, size_t len);
	/* The app's ZR_SUBSCRIBE / ZR_UNSUBSCRIBE, on the io thread. Set when
	 * app_subscribes is. */
	void (*subscribe)(struct zr_socket *s, bool subscribe, const uint8_t *topic, size_t len);
	/* c finished its handshake, before the socket counts it: <0 refuses it
	 * (a second PAIR peer). NULL: 0. */
	int (*conn_active)(struct zr_socket *s, struct zr__conn *c);
	/* An active c went away, after the socket uncounted it. NULL: nothing. */
	void (*conn_lost)(struct zr_socket *s, struct zr__conn *c);
	/* The app made room in rx, before paused connections resume (XPUB's
	 * pending notices go first). NULL: nothing. */
	void (*rx_room)(struct zr_socket *s);
	/* Opening / freeing the socket: the family's own state. NULL: nothing. */
	int (*init)(struct zr_socket *s);
	void (*fini)(struct zr_socket *s);
};

/* ---- each family's state inside the socket (engine.h) ---- */

/* PUSH, DEALER, PAIR, REQ */
struct zr__pat_rr {
	struct zr__conn *cursor;   /* io: round-robin position */
	struct zr__conn *req_peer; /* io, REQ: where the request went */
	bool req_waiting;          /* app, REQ: a request is out, waiting for its reply */
	uint32_t req_id;           /* app, REQ: REQ_CORRELATE's id of the last request */
};

struct zr__rid {
	uint8_t len;
	uint8_t id[UINT8_MAX]; /* len is a uint8_t: ZR__SUB_MAX at most */
};

/* ROUTER, REP */
struct zr__pat_route {
	/* ROUTER: the routing ids of the connected peers, for ROUTER_MANDATORY's
	 * synchronous answer. io thread writes, app reads, under rid_lock (taken
	 * on send only when the option is set). */
	pthread_mutex_t rid_lock;
	struct zr__rid *rids;
	size_t nrids, rids_cap;
	zr_msg *rep_envelope; /* app, REP: the envelope of the request being answered */
	bool rep_has_request;
};

/* PUB, XPUB, SUB, XSUB (io thread) */
struct zr__pat_pubsub {
	struct zr__subs subs; /* PUB/XPUB: the subscribers' (owner: each connection);
	                         SUB/XSUB: ours, re-sent on connect (owner: self) */
	struct zr__subs_owner self;
	/* XPUB: cancels a lost subscriber left that rx had no room for, oldest
	 * first (see pat_pubsub.c for the bound). */
	zr_msg **xpub_pending;
	size_t xpub_pending_head, xpub_pending_n, xpub_pending_cap;
	/* XPUB_MANUAL: for each notice put in rx, in the same order, the serial
	 * of the connection it came from (io -> app; made with the first
	 * subscriber), and the app's copy of the last one it received. */
	uint64_t xpub_serial_next; /* io */
	struct zr__spsc *xpub_who; /* written before the first notice it covers */
	uint64_t xpub_last;        /* app */
};

/* The hooks of a socket type; NULL for a type zring does not implement. */
const struct zr__sock_ops *zr__sock_ops_of(int type);

extern const struct zr__sock_ops zr__pat_push, zr__pat_pull, zr__pat_dealer, zr__pat_pair,
	zr__pat_req;
extern const struct zr__sock_ops zr__pat_router, zr__pat_rep;
extern const struct zr__sock_ops zr__pat_pub, zr__pat_xpub, zr__pat_sub, zr__pat_xsub;

/* The route of a type that never sends (its handoff stays empty). */
bool zr__pat_route_drop(struct zr_socket *s, zr_msg *m);

/* c takes messages (a handshaken connection, an inproc pipe with its
 * other end). */
bool zr__pat_conn_up(const struct zr__conn *c);
/* CONFLATE: m (a reference of its own is taken) replaces whatever c has
 * not started to send. */
void zr__pat_send_conflated(struct zr__conn *c, zr_msg *m);

/* PROBE_ROUTER: a conn_active that sends c one empty frame when the option
 * is set (DEALER, REQ; ROUTER calls it from its own). Returns 0. */
int zr__pat_probe(struct zr_socket *s, struct zr__conn *c);

/* ---- what the socket core offers the patterns (socket.c) ---- */

/* io thread: m into the app's queue within RCVHWM and RCVBYTES; false when
 * there is no room (m stays the caller's). The wake waits for
 * zr__sock_rx_flush. */
bool zr__sock_rx_push(struct zr_socket *s, zr_msg *m);

#endif /* ZR_ENGINE_PATTERN_H */
