/*
 * zring tools — `zring probe`: a conformance and robustness tester for any
 * ZMTP 3.x peer. Shared declarations of the runner (zl_probe.c), the raw
 * connection helpers (probe/pr_conn.c) and the case catalogue
 * (probe/pr_cases.c).
 *
 * The probe talks to the peer under test over plain sockets: the codec of
 * <zring/zmtp.h> builds the valid parts of a conversation (greetings,
 * commands, frames, the PLAIN and CURVE handshakes) and the cases write
 * around it what no well-behaved peer would. It never uses the engine.
 */
#ifndef ZR_TOOLS_PROBE_PROBE_H
#define ZR_TOOLS_PROBE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "../zl_clock.h"

#include <zring/zmtp.h>

struct pr_case;

enum pr_verdict {
	PR_PASS,      /* the peer did what the RFC says */
	PR_LENIENT,   /* it accepted what it should refuse, harmlessly */
	PR_VIOLATION, /* it did what the RFC forbids */
	PR_CRASH,     /* it stopped accepting connections (or its process is gone) */
	PR_HANG,      /* no answer within the case's limit */
	PR_DEGRADED,  /* a well-behaved connection beside it is no longer served */
	PR_SKIP,      /* not run: the reason is in the observation */
	PR_VERDICTS
};

const char *pr_verdict_name(int v);

/* What the peer must do with the case's input. */
enum pr_expect {
	EXP_CLOSE,  /* refuse it: close the connection (an ERROR first is fine) */
	EXP_SERVE,  /* accept it and go on serving the connection */
	EXP_EITHER, /* either is conformant; only silence is wrong */
	EXP_CUSTOM, /* the case judges by itself */
};

/* Case requirements (pr_case.flags). */
#define PRF_NULL 0x01u    /* needs the NULL mechanism (raw handshake bytes) */
#define PRF_PLAIN 0x02u   /* needs --mechanism plain */
#define PRF_CURVE 0x04u   /* needs --mechanism curve */
#define PRF_HSIVL 0x08u   /* needs --peer-handshake-ivl */
#define PRF_HBTMO 0x10u   /* needs --peer-heartbeat-timeout */
#define PRF_CONNECT 0x20u /* needs to open connections (not --listen) */
#define PRF_V31 0x40u     /* needs a ZMTP 3.1 peer */
/* needs --listen --mechanism plain: the probe is the PLAIN server */
#define PRF_PLAIN_SERVER 0x80u
/* no liveness oracle after it: the case refuses the client, and a refused
 * client may never connect again (libzmq does not) */
#define PRF_NO_ORACLE 0x100u
/* needs --listen --mechanism curve: the probe is the CURVE server */
#define PRF_CURVE_SERVER 0x200u

struct pr_opts {
	const char *endpoint;
	bool listen;
	int peer_type; /* -1: learn it from the peer's READY */
	int our_type;  /* a type compatible with peer_type */
	int mechanism; /* enum zr_mechanism */
	const char *username, *password;
	bool have_server_key, have_client_keys;
	uint8_t server_key[ZR_CURVE_KEY_LEN];
	/* ours; under --listen --mechanism curve the server's long-term pair */
	uint8_t public_key[ZR_CURVE_KEY_LEN], secret_key[ZR_CURVE_KEY_LEN];
	uint32_t peer_hs_ivl; /* ms; 0 unknown */
	uint32_t peer_hb_tmo; /* ms; 0 unknown */
	pid_t pid;            /* 0 unknown */
	uint32_t limit_ms;    /* per-case answer limit */
	const char *only;     /* run only cases whose name starts with this */
	const char *json;
	bool list;
	bool quiet;
	/* fuzz / replay */
	bool fuzz;
	unsigned seconds;
	uint64_t seed;
	const char *out_dir;
	const char *replay;
};

/* The endpoint resolved once. */
struct pr_target {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	int listen_fd; /* --listen */
};

/* One connection to (or from) the peer under test. */
struct pr_conn {
	int fd;
	bool closed; /* the peer closed it (EOF or reset) */
	bool reset;  /* ... by a reset */
	uint64_t closed_ms;
	uint8_t *in; /* unparsed input */
	size_t in_len, in_cap;
	uint64_t rx_total;
	/* after the handshake */
	bool ready;
	uint8_t peer_major, peer_minor;
	int peer_type;
	bool codec; /* the codec (not raw bytes) runs the connection: PLAIN, CURVE */
	struct zr_zmtp z;
	struct zr_zmtp_dec dec; /* raw (NULL) parsing after the handshake */
	char peer_error[64];    /* the reason of an ERROR the peer sent, escaped */
	bool got_error;
	bool got_pong;
	bool noping;  /* judge by silence, not by a PING (the peer waits for a body) */
	uint8_t *cap; /* when set: everything written is copied here */
	size_t cap_len, cap_max;
	uint64_t pong_seen;    /* counter of PONGs (raw) or of traffic after a PING (codec) */
	uint8_t pong_ctx[256]; /* the context of the last PONG (raw mode) */
	size_t pong_ctx_len;
};

struct pr_ctx {
	struct pr_opts *o;
	struct pr_target t;
	bool peer_pongs; /* a fresh connection's PING is answered (the oracle uses it) */
	uint8_t peer_minor;
	bool client_gone; /* --listen: the client under test stopped connecting */
	char obs[320];    /* what the running case observed */
	uint64_t t0;
};

/* Handshake options (all optional). */
struct pr_hs {
	uint8_t minor; /* the minor we announce: 1 (default) or 0 */
	bool minor_set;
	const uint8_t *greeting; /* NULL mechanism: 64 octets sent instead of ours */
	size_t chunk;            /* write the greeting this many octets at a time */
	unsigned chunk_delay_ms;
	const uint8_t *ready; /* NULL mechanism: READY metadata sent instead of ours */
	size_t ready_len;
	bool ready_set;
	const uint8_t *frame; /* NULL mechanism: these bytes instead of the READY frame */
	size_t frame_len;
	int our_type; /* -1 / 0 by default: ctx's */
	bool our_type_set;
	bool refuse; /* --listen --mechanism plain: refuse the client (ERROR "400") */
};

void pr_obs(struct pr_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pr_escape(char *out, size_t cap, const uint8_t *p, size_t len);

int pr_target_init(struct pr_ctx *c, const char *endpoint);
/* Opens a connection (connect, or accept under --listen), within ms. */
int pr_open(struct pr_ctx *c, struct pr_conn *k, unsigned ms);
void pr_close(struct pr_conn *k);
int pr_write(struct pr_conn *k, const void *buf, size_t len, unsigned ms);
int pr_write_slow(struct pr_conn *k, const void *buf, size_t len, size_t chunk, unsigned delay_ms);
/* Reads what arrives within ms (appended to k->in). Returns bytes, 0 on
 * timeout, -EPIPE once closed. */
int pr_read(struct pr_conn *k, unsigned ms);

/* The whole handshake (greeting, mechanism, READY) as our type. With
 * --listen and PLAIN the probe plays the PLAIN server and admits only
 * --username with --password. Returns 0,
 * -EPIPE (the peer closed), -ETIMEDOUT, or a codec error. */
int pr_handshake(struct pr_ctx *c, struct pr_conn *k, const struct pr_hs *hs);

/* After the handshake. */
int pr_send_frame(struct pr_conn *k, unsigned flags, const void *data, size_t len);
int pr_send_cmd(struct pr_conn *k, const char *name, const void *data, size_t len);
int pr_send_ping(struct pr_conn *k, uint16_t ttl, const void *ctx, size_t ctx_len);
/* Reads and parses input for up to ms. Returns 1 when the awaited thing came
 * (PONG if want_pong), 0 on timeout, -EPIPE when the peer closed, or a decode
 * error of the peer's bytes. */
int pr_pump(struct pr_conn *k, unsigned ms, bool want_pong);

/* What became of a connection after the case's input. */
enum pr_outcome {
	OUT_CLOSED,
	OUT_SERVED,
	OUT_SILENT
};
int pr_settle(struct pr_ctx *c, struct pr_conn *k, unsigned ms);
/* The verdict for an expectation, writing the observation. */
int pr_judge(struct pr_ctx *c, struct pr_conn *k, int expect, int accepted, unsigned ms);

/* The liveness oracle: a fresh connection completes the handshake and, if
 * the peer answers PINGs, a PING gets its PONG. PR_PASS, PR_CRASH (no
 * connection, or --pid gone) or PR_DEGRADED; why says what failed. */
int pr_live(struct pr_ctx *c, char *why, size_t cap);
/* The context of the last PONG the raw parser saw. */
size_t pr_last_pong(const struct pr_conn *k, const uint8_t **ctx);

/* Marks a connection whose handshake the caller ran by hand as ready, so
 * that pr_pump and pr_settle parse what follows (clear frames). */
void pr_mark_ready(struct pr_conn *k);

/* Waits up to the case limit for one whole frame (a command: the caller
 * checks); returns its body length (name included) with *body pointing into
 * k->in and *frame_len the octets to consume, -EPIPE when the peer closed
 * (or sent ERROR), -ETIMEDOUT, or -EPROTO past 4 KiB. */
int pr_cmd_wait(struct pr_ctx *c, struct pr_conn *k, const uint8_t **body, size_t *frame_len);
void pr_consume(struct pr_conn *k, size_t n);

/*
 * A CurveZMQ session run by hand (probe/pr_curve.c): the probe holds the
 * short-term keys, so it can box what the codec never would (a chosen
 * nonce, a damaged box, any plaintext flags).
 */
struct pr_cv {
	uint8_t my_sk[ZR_CURVE_KEY_LEN];   /* our short-term secret key (c' or s') */
	uint8_t peer_pk[ZR_CURVE_KEY_LEN]; /* the peer's short-term public key (S' or C') */
	uint64_t nonce;                    /* our next short nonce */
	bool server;                       /* we are the CurveZMQ server */
};

/* A CurveZMQ box with a long nonce of prefix16 and short nonce n: writes the
 * short nonce (8 octets) and then the box of plain (crypto_box_MACBYTES +
 * plen octets) at out. Returns 0 or -EINVAL. */
int pr_cv_seal(uint8_t *out, const char *prefix16, uint64_t n, const uint8_t *plain, size_t plen,
               const uint8_t *pk, const uint8_t *sk);
/* The body of a MESSAGE command ("\x07MESSAGE", nonce, box of plain) with
 * short nonce n. Returns its length or -ENOBUFS/-EINVAL. */
int pr_cv_message(const struct pr_cv *s, uint64_t n, const uint8_t *plain, size_t plen,
                  uint8_t *body, size_t cap);
/* Opens a MESSAGE body from the peer into plain; returns the plaintext
 * length (flags octet included), or -EBADMSG. */
int pr_cv_open(const struct pr_cv *s, const uint8_t *body, size_t len, uint8_t *plain, size_t cap);
/* Opens k (connect, or accept under --listen) and runs the whole handshake
 * by hand in the run's role (--listen: server). Leaves the session ready for
 * traffic; returns 0 or a negative errno. */
int pr_cv_handshake(struct pr_ctx *c, struct pr_conn *k, struct pr_cv *s);
/* The client role by hand (probe/pr_cases.c). */
int pr_cv_client(struct pr_ctx *c, struct pr_conn *k, struct pr_cv *s);

/* Cases of the server roles (probe/pr_curve.c). */
int pr_case_curve_server(struct pr_ctx *c, const struct pr_case *k);
int pr_case_plain_client(struct pr_ctx *c, const struct pr_case *k);

enum {
	CS_WELCOME_SHORT,     /* WELCOME one octet short */
	CS_WELCOME_BAD_BOX,   /* a WELCOME box with one bit flipped */
	CS_WELCOME_OTHER_KEY, /* a WELCOME sealed by another long-term key */
	CS_ERROR_WELCOME,     /* ERROR instead of WELCOME */
	CS_READY_BAD_BOX,     /* a READY box that does not open */
	CS_READY_SHORT,       /* READY of name and nonce only */
	CS_READY_NO_TYPE,     /* READY metadata without Socket-Type */
	CS_ERROR_READY,       /* ERROR instead of READY */
	CS_MSG_REPLAY,        /* the same MESSAGE twice */
	CS_MSG_BACKWARDS,     /* nonce N+2, then N+1 */
	CS_MSG_READY_NONCE,   /* the first MESSAGE reuses READY's short nonce */
	CS_MSG_BAD_BOX,       /* a MESSAGE box that does not open */
};

enum {
	PC_WELCOME_GARBAGE,     /* WELCOME, then octets that are no frame */
	PC_ERROR_OVERRUN,       /* ERROR whose reason length runs past the frame */
	PC_READY_NO_TYPE,       /* READY without Socket-Type */
	PC_READY_BEFORE_WELCOME /* READY right after HELLO */
};

/* --fuzz and --replay under PLAIN and CURVE (probe/pr_fuzz.c): exit statuses
 * of zl_probe.h. */
int pr_fuzz_mech(struct pr_ctx *c);
int pr_replay_mech(struct pr_ctx *c);
/* After a fuzz conversation (both fuzzers): reads and drops what the peer
 * says for 20 ms, then closes k. */
void pr_fuzz_close(struct pr_conn *k);

/* Peer memory (--pid): VmRSS in KiB, or -1. */
long pr_rss_kib(pid_t pid);
bool pr_pid_alive(pid_t pid);

struct pr_case {
	const char *name;
	const char *group;
	const char *rfc;
	const char *expected;
	int expect;   /* enum pr_expect */
	int accepted; /* the verdict when the peer accepts what it should refuse */
	unsigned flags;
	int (*fn)(struct pr_ctx *c, const struct pr_case *k);
	long arg;
};

extern const struct pr_case pr_cases[];
extern const size_t pr_case_count;

/* The old self-check (our codec against pyzmq), `zring probe --self`. */
int zl_probe_self(int argc, char **argv);

#endif /* ZR_TOOLS_PROBE_PROBE_H */
