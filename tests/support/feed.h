/*
 * Test support: run the ZMTP codec over an input with a given chunking and
 * record what it produced as a normalised event list.
 *
 * The feeders honour the codec's input contract the way a real caller would:
 * every call sees the bytes it left unconsumed last time followed by the next
 * chunk, placed flush against a guard page (see guard.h), and the codec
 * struct is filled with junk before its init. Message bodies come out in
 * pieces whose boundaries depend on the chunking, so the feeders join them:
 * a recorded frame is the whole frame, every other event is recorded field by
 * field with a copy of its bytes. Two runs of the same input under different
 * chunkings must then record identical lists.
 *
 * While it runs, a feeder also checks the contract itself (consumed <= len,
 * spans inside the buffer, pieces contiguous with FRAME_END exactly on the
 * last one, want() above what is left after NEED_MORE, errors sticky) and
 * notes the first breach in run->violation.
 */
#ifndef ZR_TESTS_SUPPORT_FEED_H
#define ZR_TESTS_SUPPORT_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring/zmtp.h>

/* Event type recorded for a frame out of the bare decoder (the connection's
 * events keep their ZR_ZMTP_EV_* types). */
#define ZT_EV_DEC_FRAME 100

struct zt_ev {
	int type;
	unsigned flags; /* ZR_ZMTP_MORE / ZR_ZMTP_COMMAND as delivered (FRAME_END dropped) */
	uint64_t size;  /* frames: the declared body size */
	bool complete;  /* frames: the piece flagged FRAME_END was seen */
	uint8_t *data;  /* frames: the joined body; others: a copy of ev->data */
	size_t len;
	int peer_type; /* READY */
	bool has_identity;
	uint8_t *identity;
	size_t identity_len;
};

struct zt_run {
	struct zt_ev *ev;
	size_t nev, cap;
	int rc;          /* the last return: ZR_NEED_MORE, or the error */
	int sticky_rc;   /* after an error: what one more call returned */
	size_t consumed; /* bytes consumed in total */
	size_t calls;
	uint8_t *out; /* connection: all zr_zmtp_out bytes, drained at the end */
	size_t out_len;
	int state;           /* connection: zr_zmtp_state at the end */
	char violation[512]; /* first breach of the input contract; "" if none */
};

enum zt_kind {
	ZT_CONN = 1,
	ZT_DEC = 2
};

/* What a run drives: a fresh connection codec or a fresh frame decoder. */
struct zt_target {
	int kind;
	struct zr_zmtp_config cfg; /* ZT_CONN */
	uint64_t now_ms;           /* ZT_CONN: the clock for init and every feed */
	uint64_t max_msg_size;     /* ZT_DEC */
	uint32_t max_cmd_size;     /* ZT_DEC */
	uint32_t max_msg_frames;   /* ZT_DEC: 0 = the decoder's default */
};

struct zt_target zt_conn_target(const struct zr_zmtp_config *cfg);
struct zt_target zt_dec_target(uint64_t max_msg_size, uint32_t max_cmd_size);

/* Runs a fresh codec over in[0..n) cut at the ncuts ascending positions in
 * cuts (each in 1..n-1). Init failure is a test failure. */
void zt_run_cuts(const struct zt_target *t, const uint8_t *in, size_t n, const size_t *cuts,
                 size_t ncuts, struct zt_run *r);

/* The same on an existing codec (already initialised; events appended to r,
 * which must be zeroed before its first use). The bytes left unconsumed at the
 * end are returned through *leftover (and not kept). */
void zt_conn_feed_cuts(struct zr_zmtp *z, uint64_t now_ms, const uint8_t *in, size_t n,
                       const size_t *cuts, size_t ncuts, struct zt_run *r, size_t *leftover);
void zt_dec_feed_cuts(struct zr_zmtp_dec *d, const uint8_t *in, size_t n, const size_t *cuts,
                      size_t ncuts, struct zt_run *r, size_t *leftover);

/* Appends everything z wants written to r->out and acknowledges it. */
void zt_conn_drain(struct zr_zmtp *z, struct zt_run *r);

void zt_run_free(struct zt_run *r);

/* Whether two runs recorded the same thing; if not, why says where. */
bool zt_run_same(const struct zt_run *a, const struct zt_run *b, char *why, size_t why_len);

/*
 * Runs t over the input whole, byte by byte, at every single split point and
 * at a sample of double split points (all of them for short inputs); asserts
 * that no run breached the contract and that all recorded the same as the
 * whole run, which is returned in *whole (free it). Failures name the vector's
 * line and the chunking.
 */
void zt_check_splits(const struct zt_target *t, const uint8_t *in, size_t n, int line,
                     struct zt_run *whole);

/* Hex of up to 64 bytes, for messages; returns a static buffer. */
const char *zt_hex(const void *p, size_t n);

/* Asserts that a run's out bytes from offset off on equal want[0..n). */
void zt_assert_bytes(const char *what, const uint8_t *got, size_t got_len, const void *want,
                     size_t want_len, int line);

/* A byte string written as a C literal: V("\x01" "ab") -> pointer + length. */
struct zt_bytes {
	const uint8_t *p;
	size_t n;
};
#define ZT_LIT(lit) ((struct zt_bytes){(const uint8_t *)(lit), sizeof(lit) - 1})

#endif /* ZR_TESTS_SUPPORT_FEED_H */
