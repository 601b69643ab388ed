/*
 * zring tools — one ZMTP connection over a blocking-free TCP socket, driven
 * by the sans-IO codec (<zring/zmtp.h>) with poll(2).
 *
 * Shared by `zring probe` and the interop tests (they compile zl_link.c into
 * themselves), so the loop that feeds the codec exists once. It uses only the
 * public header. It is deliberately small and synchronous: the io_uring engine
 * replaces it; this is the reference for how the codec's contract is driven:
 *   - bytes the codec did not consume stay at the front of the input buffer
 *     and are presented again with the new bytes appended;
 *   - event spans are copied out before the buffer moves;
 *   - zr_zmtp_out is written before every message we write, and between
 *     messages only;
 *   - zr_zmtp_tick runs at zr_zmtp_deadline.
 *
 * Every wait is bounded by a timeout in milliseconds. Functions return 0 (or a
 * count) on success and a negative errno or -ZR_E... code otherwise.
 */
#ifndef ZR_TOOLS_ZL_LINK_H
#define ZR_TOOLS_ZL_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <zring/zmtp.h>

#include "zl_clock.h"

/* One frame of a message we send or received (received: heap-owned). */
struct zl_frame {
	uint8_t *data;
	size_t len;
};

/* A whole multipart message (heap-owned frames). */
struct zl_msg {
	struct zl_frame *frames;
	size_t count;
};

void zl_msg_free(struct zl_msg *m);

enum zl_ev_type {
	ZL_EV_READY = 1,  /* handshake done: peer_type, identity, meta */
	ZL_EV_MSG,        /* msg: one whole message */
	ZL_EV_SUBSCRIBE,  /* data: the topic */
	ZL_EV_CANCEL,     /* data: the topic */
	ZL_EV_PEER_ERROR, /* data: the reason from the peer's ERROR */
};

/* An event with everything copied out of the codec's spans. */
struct zl_event {
	int type; /* enum zl_ev_type */
	/* READY */
	int peer_type;
	bool has_identity;
	uint8_t identity[256];
	size_t identity_len;
	/* READY: the peer's metadata block; SUBSCRIBE, CANCEL, PEER_ERROR: the
	 * topic or reason. Heap-owned, NUL-terminated for convenience. */
	uint8_t *data;
	size_t len;
	/* MSG */
	struct zl_msg msg;
};

void zl_event_free(struct zl_event *ev);

#define ZL_LINK_IN_CAP (256u * 1024u)

/* A growable byte log (capture of the raw streams). */
struct zl_bytes {
	uint8_t *p;
	size_t len, cap, limit;
};

struct zl_link {
	int fd;
	struct zr_zmtp z;
	int err; /* sticky: the first failure */
	/* Input: the unconsumed bytes are in[in_off..in_len). */
	uint8_t *in;
	size_t in_off, in_len;
	/* The message being assembled from EV_FRAME pieces. */
	struct zl_msg part;
	bool part_open;  /* the last frame had MORE, or a frame is unfinished */
	bool frame_open; /* the last frame in part is not finished */
	uint64_t rx_bytes, tx_bytes;
	uint64_t ready_ms; /* when EV_READY came (0 before) */
	/* Raw byte captures, up to their limit (0 = none). */
	struct zl_bytes rx_log, tx_log;
	FILE *trace; /* every read and write hex-dumped here (stderr if ZRING_TRACE is set) */
};

/*
 * Connects to 127.0.0.1:port (a non-blocking socket from then on), within
 * timeout_ms, and starts the codec with cfg (which must stay alive through
 * the handshake, as zr_zmtp_init says). capture: how many bytes of each
 * direction to keep in rx_log / tx_log. Returns 0 or a negative code.
 */
int zl_link_open(struct zl_link *l, uint16_t port, const struct zr_zmtp_config *cfg, size_t capture,
                 int timeout_ms);

/*
 * Runs the connection until the next event, or timeout_ms. Returns 0 with
 * *ev filled (free it with zl_event_free), -ETIMEDOUT, -ECONNRESET when the
 * peer closed, or the codec's error (sticky; any ERROR it queued has been
 * written first, best effort). While it waits it answers PINGs and writes
 * whatever the codec queues.
 */
int zl_link_next(struct zl_link *l, struct zl_event *ev, int timeout_ms);

/* Writes one whole message (codec output first). */
int zl_link_send(struct zl_link *l, const struct zl_frame *frames, size_t count, int timeout_ms);

/* Writes a SUBSCRIBE (subscribe) or CANCEL in the form the peer's version
 * wants (zr_zmtp_sub_prefix). Only after the handshake. */
int zl_link_send_sub(struct zl_link *l, const void *topic, size_t len, bool subscribe,
                     int timeout_ms);

/* Writes whatever the codec has queued (greeting, READY, PONG, ERROR). */
int zl_link_flush(struct zl_link *l, int timeout_ms);

/* Closes the socket and frees everything. Idempotent. */
void zl_link_close(struct zl_link *l);

/* Writes "xx xx ..." (or the first max octets and "...") to f. */
void zl_hex(FILE *f, const uint8_t *p, size_t len, size_t max);

#endif /* ZR_TOOLS_ZL_LINK_H */
