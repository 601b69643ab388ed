/*
 * What the rest of the engine may ask of a socket without looking inside
 * struct zr_socket (engine.h): the broker (broker.c, which includes only
 * this header of the socket's), the context (ctx.c), the option table
 * (options.c) and monitoring (monitor.c). Implemented in socket.c. Not
 * installed.
 */
#ifndef ZR_ENGINE_SOCK_H
#define ZR_ENGINE_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring/zring.h>

#define ZR__SUB_MAX 255 /* a routing id or a PLAIN credential */

/* ---- the broker (app threads) -------------------------------------------- */

/* The type the socket was opened with (ZR_PUSH, ...). */
int zr__sock_type(const zr_socket *s);
/* Listening fds of the socket not yet closed (an unbound address is free
 * again once its fd is). */
int zr__sock_listen_fds(zr_socket *s);
/* Peers past their handshake. */
int zr__sock_ready_peers(zr_socket *s);
/* Messages waiting to be received (0 before the first bind, connect, send
 * or receive made the queue), and the most it ever held. */
size_t zr__sock_rx_queued(zr_socket *s);
size_t zr__sock_rx_peak(zr_socket *s);
/* The owner stops reading for good: nothing more is put in the receive
 * queue; connections stop reading as they would for a full one. */
void zr__sock_rx_hold(zr_socket *s);
/* PUB/XPUB: messages no subscriber matched. */
uint64_t zr__sock_unmatched(zr_socket *s);
/* Before bind/connect: resume a paused connection at every slot the app
 * frees, not at half (the broker keeps its read_ahead channel full). */
void zr__sock_rx_refill_each(zr_socket *s);
/* zr_send with a timeout (-1: none) that a readable cancel_fd ends early
 * with -ECANCELED (the message stays with the caller). */
int zr__sock_send_cancellable(zr_socket *s, zr_msg **msg, int timeout_ms, int cancel_fd);

/* ---- the context (ctx.c) ----------------------------------------------------- */

/* App thread, zr__ctx_dirty_push: links s to the one below it on the
 * context's dirty stack. */
void zr__sock_dirty_link(zr_socket *s, zr_socket *below);
/* io thread: takes s off the dirty stack; returns the one below it. A
 * push from now on puts s back. */
zr_socket *zr__sock_dirty_pop(zr_socket *s);
/*
 * io thread: a socket whose look took two messages or more opens the loop's
 * coalescing window (ctx.c). With membarrier, it is also watched: drained
 * at every turn of the loop, so its senders neither mark it nor fence
 * (zr__ctx_dirty). zr__sock_watch puts s on *list (once). zr__sock_watch_turn
 * drains each one on *list; over (the window has ended), those that routed
 * nothing in it leave: their flags are cleared, one membarrier makes every
 * sender's earlier stores visible (none if each waits for room: it fenced),
 * and each is drained once more. Returns
 * the window the rest ask for (0: none left). zr__sock_unwatch takes s off
 * *list (it is freed).
 */
void zr__sock_watch(zr_socket **list, zr_socket *s);
int zr__sock_watch_turn(zr_socket **list, bool over);
void zr__sock_unwatch(zr_socket **list, zr_socket *s);
/* io thread: the context's list of its sockets (a socket joins once, on
 * its first command, and leaves when it is freed). */
void zr__sock_list_add(zr_socket **head, zr_socket *s);
void zr__sock_list_remove(zr_socket **head, zr_socket *s);
zr_socket *zr__sock_list_next(const zr_socket *s);
/* io thread: the context terminates: calls blocked in the socket return
 * -ETERM, and it closes as zr_socket_close would. */
void zr__sock_io_term(zr_socket *s);
/* The socket's ZR_BUSY_POLL (microseconds; 0: off). */
int zr__sock_busy_poll(const zr_socket *s);
/* The socket's ZR_WAKE_COALESCE (microseconds; 0: off). */
int zr__sock_wake_coalesce(const zr_socket *s);

/* ---- options and monitoring (app thread) ------------------------------------ */

/* SUB/XSUB: queues a (un)subscription for the io thread (-EINVAL on other
 * types, -ENOMEM). */
int zr__sock_subscribe(zr_socket *s, bool subscribe, const void *topic, size_t len);
/* The deadline of a call given its flags and timeout (0: do not wait,
 * UINT64_MAX: for ever), and a wait for fd until then: 0 when it turned
 * readable, -EAGAIN, -ETERM. */
uint64_t zr__sock_deadline(int flags, int timeout_ms);
int zr__sock_wait(zr_socket *s, int fd, uint64_t deadline);
/* An eventfd's wake, and clearing it. */
void zr__sock_signal(int fd);
void zr__sock_drain(int fd);

#endif /* ZR_ENGINE_SOCK_H */
