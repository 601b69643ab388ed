/* zring tools — `zring bench`. See zl_bench.h and bench/README.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zl_bench.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zl_args.h"
#include "zl_clock.h"
#include "zl_proc.h"

#define BENCH_READY_MS 10000   /* receiver's READY line */
#define BENCH_RESULT_MS 330000 /* a run; the programs alarm themselves at 300 s */
#define BENCH_PAIRS_FULL 5
#define BENCH_PAIRS_QUICK 3
#define BENCH_PAIRS_MAX 15 /* --pairs */
#define BENCH_METRICS_MAX 4
#define BENCH_ENDPOINT "tcp://127.0.0.1:0"
#define BENCH_TLS_ENDPOINT "tls://127.0.0.1:0"
#define BENCH_TLS_PATTERN "pushpull-tls"
#define BENCH_STUNNEL_MS 10000 /* a stunnel listening */
#define BENCH_OPENSSL_MS 60000 /* the run's certificate made */

enum bench_kind {
	KIND_THR,   /* thr-recv / thr-send */
	KIND_LAT,   /* lat-rep / lat */
	KIND_STALL, /* stall-recv / stall-send: told to go on after the sender gave up */
	KIND_IDLE   /* idle-recv / idle-send: the sender measures once the receiver has all */
};

/* Which way is better, for the ratio's legend. */
enum bench_dir {
	DIR_HIGHER,
	DIR_LOWER,
	DIR_INFO /* neither: a figure to read the others by */
};

struct bench_metric {
	const char *key;   /* in the RESULT line */
	const char *label; /* in the table */
	bool from_sender;  /* read it from the sender's line (else the receiver's) */
	enum bench_dir dir;
};

static const struct bench_metric thr_metrics[BENCH_METRICS_MAX] = {
	{"msgs_per_s", "msgs/s", false, DIR_HIGHER},
	{"mb_per_s", "MB/s", false, DIR_HIGHER},
	{"cpu_s_per_M", "recv CPU s/M msgs", false, DIR_LOWER},
	{"cpu_s_per_M", "send CPU s/M msgs", true, DIR_LOWER},
};

static const struct bench_metric lat_metrics[BENCH_METRICS_MAX] = {
	{"p50_us", "p50 us", true, DIR_LOWER},
	{"p99_us", "p99 us", true, DIR_LOWER},
	{"p999_us", "p99.9 us", true, DIR_LOWER},
	{"cpu_s_per_M", "asker CPU s/M trips", true, DIR_LOWER},
};

static const struct bench_metric stall_metrics[BENCH_METRICS_MAX] = {
	{"peak_rss_mb", "recv peak RSS MB", false, DIR_LOWER},
	{"growth_mb", "recv RSS growth MB", false, DIR_LOWER},
	{"peak_rss_mb", "send peak RSS MB", true, DIR_LOWER},
	{"sent", "msgs sent until full", true, DIR_INFO},
};

static const struct bench_metric idle_metrics[BENCH_METRICS_MAX] = {
	{"kb_per_conn", "bound KB/conn", false, DIR_LOWER},
	{"growth_mb", "bound growth MB", false, DIR_LOWER},
	{"kb_per_conn", "connecting KB/conn", true, DIR_LOWER},
	{"growth_mb", "connecting growth MB", true, DIR_LOWER},
};

/* The programs' modes per kind: receiver (binds), sender (connects). */
static const char *const kind_modes[][2] = {
	[KIND_THR] = {"thr-recv", "thr-send"},
	[KIND_LAT] = {"lat-rep", "lat"},
	[KIND_STALL] = {"stall-recv", "stall-send"},
	[KIND_IDLE] = {"idle-recv", "idle-send"},
};

/* Which programs run a scenario. */
enum bench_api {
	API_NATIVE, /* bench_zr on zring's API, bench_zmq on libzmq's */
	/* One program, bench_zmqapi (bench/zmq_api.c, written only against zmq.h,
	 * linked to the system's libzmq.so.5), run as it is ("libzmq") and with
	 * LD_LIBRARY_PATH at the libzmq.so.5 drop-in ("zring"). */
	API_ZMQH,
	API_PYZMQ /* the same with bench_zmqapi.py run by Python (pyzmq) */
};

struct bench_scenario {
	const char *name; /* in the table and CSV */
	enum bench_kind kind;
	const char *pattern; /* thr: pushpull, pushpull-curve, pubsub, pubsub8, dealerrouter */
	bool ipc;            /* ipc:// (abstract) in place of tcp://127.0.0.1 */
	unsigned long size;
	/* Messages (round trips, connections) per run; a quick count of 0:
	 * the scenario runs only in full and smoke mode. */
	unsigned long count_full, count_quick, count_smoke;
	int senders;   /* connecting processes (idle: they share the count) */
	int pairs_max; /* at most this many pairs (0: as the mode says) */
	/* A reference: plain sockets, no library (the programs' raw-* modes,
	 * run from bench_zr once per pair): the kernel's ceiling or floor that
	 * the scenarios naming it in ref are printed against. */
	bool reference;
	const char *ref;               /* the reference scenario to compare with */
	bool tx_binds;                 /* fan-out: the publisher binds, the SUBs connect */
	const char *rx_mode, *tx_mode; /* the programs' modes, if not the kind's */
	enum bench_api api;
	/* zring rows of the same run this one's zring msgs/s is set against
	 * (plain and CURVE beside TLS); --only picks them with this one. */
	const char *beside[2];
};
#define BENCH_SENDERS_MAX 4

#define REF_THR_64 "raw TCP batched writes 64 B"
#define REF_LAT_64 "raw TCP ping-pong 64 B latency"
#define REF_LAT_1K "raw TCP ping-pong 1024 B latency"
#define REF_THR_1M "raw TCP 1 MiB writes"
#define REF_THR_8K "raw TCP batched writes 8 KiB"
#define REF_THR_64K "raw TCP batched writes 64 KiB"
#define REF_THR_BOX64K "raw TCP + XSalsa20-Poly1305 64 KiB"

static const struct bench_scenario scenarios[] = {
	/* The loopback's ceiling for 64 B records: one plain sender writing
	 * them back to back in 64 KiB writes, one plain reader. */
	{REF_THR_64, KIND_THR, "raw", false, 64, 40000000, 10000000, 1000, 1, 0, .reference = true,
         .rx_mode = "raw-thr-recv", .tx_mode = "raw-thr-send"},
	{"PUSH/PULL 1 B", KIND_THR, "pushpull", false, 1, 2000000, 500000, 1000, 1, 0,
         .reference = false},
	{"PUSH/PULL 64 B", KIND_THR, "pushpull", false, 64, 2000000, 500000, 1000, 1, 0,
         .ref = REF_THR_64},
	{"PUSH/PULL 256 B", KIND_THR, "pushpull", false, 256, 1000000, 200000, 1000, 1, 0,
         .reference = false},
	{"PUSH/PULL 1024 B", KIND_THR, "pushpull", false, 1024, 500000, 100000, 1000, 1, 0,
         .reference = false},
	/* The kernel's own price of a large record, for the CPU per message
	 * above 1 KiB: plain sockets, records written as many as fit in a
	 * 1 MiB write and read a write's worth at a time, with no API's copy
	 * in front. */
	{REF_THR_8K, KIND_THR, "raw", false, 8192, 100000, 10000, 500, 1, 0, .reference = true,
         .rx_mode = "raw-thr-recv", .tx_mode = "raw-thr-send"},
	{"PUSH/PULL 8192 B", KIND_THR, "pushpull", false, 8192, 100000, 10000, 500, 1, 0,
         .ref = REF_THR_8K},
	{REF_THR_64K, KIND_THR, "raw", false, 65536, 20000, 5000, 200, 1, 0, .reference = true,
         .rx_mode = "raw-thr-recv", .tx_mode = "raw-thr-send"},
	{"PUSH/PULL 65536 B", KIND_THR, "pushpull", false, 65536, 20000, 5000, 200, 1, 0,
         .ref = REF_THR_64K},
	/* The loopback's ceiling at 1 MiB: one plain 1 MiB send per record, a
	 * reader taking each record whole (MSG_WAITALL); the kernel's two
	 * copies and nothing else (a library's API adds one on each side). */
	{REF_THR_1M, KIND_THR, "raw", false, 1048576, 2000, 200, 20, 1, 0, .reference = true,
         .rx_mode = "raw-thr-recv", .tx_mode = "raw-thr-send"},
	{"PUSH/PULL 1048576 B", KIND_THR, "pushpull", false, 1048576, 1000, 100, 20, 1, 0,
         .ref = REF_THR_1M},
	{"PUSH/PULL 64 B ipc", KIND_THR, "pushpull", true, 64, 2000000, 500000, 1000, 1, 0,
         .reference = false},
	{"PUB/SUB 64 B 1 sub", KIND_THR, "pubsub", false, 64, 1000000, 300000, 1000, 1, 0,
         .reference = false},
	/* Eight SUB sockets, one thread each, in one receiving process. */
	{"PUB/SUB 64 B 8 subs", KIND_THR, "pubsub8", false, 64, 300000, 30000, 500, 1, 0,
         .reference = false},
	/* Fan-out: the XPUB binds, N SUB sockets in one receiving process (one
	 * context, one thread polling them all) connect; msgs/s counts each
	 * published message once (it is delivered N times). */
	{"PUB/SUB 64 B 100 subs", KIND_THR, "fanout100", false, 64, 100000, 30000, 200, 1, 0,
         .tx_binds = true},
	{"PUB/SUB 64 B 1000 subs", KIND_THR, "fanout1000", false, 64, 10000, 3000, 20, 1, 0,
         .tx_binds = true},
	/* 10 SUBs holding 1,000 distinct topics each; half the messages match
	 * one of them, half none. */
	{"PUB/SUB 64 B 10000 topics", KIND_THR, "topics10000", false, 64, 4000000, 1000000, 2000, 1,
         0, .tx_binds = true},
	/* ROUTER binds and receives [id, body], DEALER connects and sends. */
	{"DEALER/ROUTER 64 B", KIND_THR, "dealerrouter", false, 64, 2000000, 500000, 1000, 1, 0,
         .reference = false},
	/* The floor: a plain blocking ping-pong (both ends sleep in recv), and
	 * a spinning one (non-blocking recv in a loop) for a busy-poll mode. */
	{REF_LAT_64, KIND_LAT, "raw", false, 64, 20000, 5000, 200, 1, 0, .reference = true,
         .rx_mode = "raw-lat-rep", .tx_mode = "raw-lat"},
	{REF_LAT_1K, KIND_LAT, "raw", false, 1024, 20000, 3000, 200, 1, 0, .reference = true,
         .rx_mode = "raw-lat-rep", .tx_mode = "raw-lat"},
	{"raw TCP busy-poll ping-pong 64 B latency", KIND_LAT, "raw-busy", false, 64, 20000, 5000,
         200, 1, 0, .reference = true, .rx_mode = "raw-busy-lat-rep", .tx_mode = "raw-busy-lat"},
	{"REQ/REP 64 B latency", KIND_LAT, "reqrep", false, 64, 20000, 5000, 200, 1, 0,
         .ref = REF_LAT_64},
	/* zring with ZR_BUSY_POLL on both sides and ZR_CTX_CALLER_IO contexts;
	 * libzmq has no busy-poll mode, so its side is its plain REQ/REP
	 * (bench/README.md). */
	{"REQ/REP 64 B busy-poll latency", KIND_LAT, "reqrep-busy", false, 64, 20000, 5000, 200, 1,
         0, .ref = "raw TCP busy-poll ping-pong 64 B latency", .rx_mode = "busy-lat-rep",
         .tx_mode = "busy-lat"},
	{"REQ/REP 1024 B latency", KIND_LAT, "reqrep", false, 1024, 20000, 3000, 200, 1, 0,
         .ref = REF_LAT_1K},
	/* zring's contexts ZR_CTX_CALLER_IO (the waiting thread runs the io),
	 * no busy-polling; libzmq has no such mode: its plain REQ/REP. */
	{"REQ/REP 64 B caller-io latency", KIND_LAT, "reqrep-cio", false, 64, 20000, 5000, 200, 1,
         0, .ref = REF_LAT_64, .rx_mode = "cio-lat-rep", .tx_mode = "cio-lat"},
	{"REQ/REP 1024 B caller-io latency", KIND_LAT, "reqrep-cio", false, 1024, 20000, 3000, 200,
         1, 0, .ref = REF_LAT_1K, .rx_mode = "cio-lat-rep", .tx_mode = "cio-lat"},
	{"REQ/REP 65536 B latency", KIND_LAT, "reqrep", false, 65536, 5000, 1000, 100, 1, 0,
         .reference = false},
	/* ROUTER binds and echoes [id, body]; DEALER connects and asks. */
	{"DEALER/ROUTER 64 B latency", KIND_LAT, "dealerrouter", false, 64, 20000, 3000, 200, 1, 0,
         .rx_mode = "lat-router", .tx_mode = "lat-dealer"},
	{"DEALER/ROUTER 65536 B latency", KIND_LAT, "dealerrouter", false, 65536, 5000, 1000, 100,
         1, 0, .rx_mode = "lat-router", .tx_mode = "lat-dealer"},
	/* PUSH/PULL under CURVE: the receiver is the server, fresh keys per run. */
	{"CURVE PUSH/PULL 64 B", KIND_THR, "pushpull-curve", false, 64, 1000000, 300000, 1000, 1, 0,
         .reference = false},
	/* CURVE's ceiling at 64 KiB: plain sockets and the crypto of a CURVE
	 * MESSAGE (XSalsa20-Poly1305, libsodium's secretbox), each record sealed
	 * and written by one thread, read whole and opened by another; a
	 * library adds its copies and handoffs to that. */
	{REF_THR_BOX64K, KIND_THR, "raw", false, 65536, 20000, 5000, 200, 1, 0, .reference = true,
         .rx_mode = "raw-box-thr-recv", .tx_mode = "raw-box-thr-send"},
	{"CURVE PUSH/PULL 65536 B", KIND_THR, "pushpull-curve", false, 65536, 20000, 5000, 200, 1,
         0, .ref = REF_THR_BOX64K},
	/* PUSH/PULL under TLS 1.3 with one certificate made per bench run: zring
	 * on tls://, libzmq on tcp:// through a stunnel client and a stunnel
	 * server (what libzmq users run today), so both sides pay TLS. */
	{"TLS PUSH/PULL 64 B", KIND_THR, BENCH_TLS_PATTERN, false, 64, 1000000, 300000, 1000, 1, 0,
         .beside = {"PUSH/PULL 64 B", "CURVE PUSH/PULL 64 B"}},
	{"TLS PUSH/PULL 65536 B", KIND_THR, BENCH_TLS_PATTERN, false, 65536, 20000, 5000, 200, 1, 0,
         .beside = {"PUSH/PULL 65536 B", "CURVE PUSH/PULL 65536 B"}},
	/* A PULL that takes one message and stops reading; the PUSH sends until
	 * a send waits 0.5 s (at most this many). Default HWMs and budgets. */
	{"stalled PULL 64 B", KIND_STALL, "pushpull", false, 64, 2000000, 2000000, 2000, 1, 0,
         .reference = false},
	{"stalled PULL 65536 B", KIND_STALL, "pushpull", false, 65536, 20000, 20000, 200, 1, 0,
         .reference = false},
	/* Connections (one PUSH socket each) to one bound PULL, one message each. */
	{"idle connections 1000", KIND_IDLE, "pushpull", false, 1, 1000, 0, 20, 1, 0,
         .reference = false},
	/* Two connecting processes of 5000 sockets each: a libzmq socket holds
	 * two descriptors (its mailbox and its connection), and 20000 is a
	 * common hard limit. One pair: a run takes 20-25 s here, and the
	 * figures hardly move from run to run. */
	{"idle connections 10000", KIND_IDLE, "pushpull", false, 1, 10000, 0, 20, 2, 1,
         .reference = false},
	/* Existing zmq.h programs on the drop-in: one binary, libzmq's own idiom
	 * (zmq_msg_send / zmq_msg_recv loops), run on the system's libzmq and on
	 * the drop-in; each RESULT line says which library really ran it. The
	 * smoke test runs the two throughput rows only. */
	{"zmq.h API PUSH/PULL 64 B", KIND_THR, "pushpull", false, 64, 2000000, 500000, 1000, 1, 0,
         .api = API_ZMQH},
	/* The other common idiom: zmq_send / zmq_recv of the caller's buffer,
	 * no zmq_msg_t (at 64 B a zmq_msg_t's bytes are a malloc and a free in
	 * both libraries). */
	{"zmq.h API PUSH/PULL 64 B zmq_send", KIND_THR, "pushpull-bytes", false, 64, 2000000,
         500000, 1000, 1, 0, .api = API_ZMQH},
	{"zmq.h API REQ/REP 64 B latency", KIND_LAT, "reqrep", false, 64, 20000, 5000, 0, 1, 0,
         .api = API_ZMQH},
	/* A PULL that never reads; the PUSH sends until a send waits 0.5 s. */
	{"zmq.h API stalled PULL 64 B", KIND_STALL, "pushpull", false, 64, 2000000, 2000000, 0, 1,
         0, .api = API_ZMQH},
	{"zmq.h API stalled PULL 65536 B", KIND_STALL, "pushpull", false, 65536, 20000, 20000, 0, 1,
         0, .api = API_ZMQH},
	{"zmq.h API via pyzmq PUSH/PULL 64 B", KIND_THR, "pushpull", false, 64, 1000000, 300000, 0,
         1, 0, .api = API_PYZMQ},
};
#define BENCH_NSCEN (sizeof scenarios / sizeof scenarios[0])
#define BENCH_HEADLINE "PUSH/PULL 64 B" /* the scenario of the last line's ratio */

enum {
	LIB_ZR,
	LIB_ZMQ,
	LIB_N
};
static const char *const lib_names[LIB_N] = {"zring", "libzmq"};
static const char *const lib_bins[LIB_N] = {"bench_zr", "bench_zmq"};
#define BENCH_ZMQH_BIN "bench_zmqapi"
#define BENCH_PYZMQ_SCRIPT "bench_zmqapi.py"
#define BENCH_DROPIN "libzmq.so.5"
#define BENCH_ENV "/usr/bin/env"

struct bench_opts {
	bool quick, smoke;
	const char *out_dir;
	const char *bin_dir;
	char dropin_dir[PATH_MAX]; /* the drop-in's folder, resolved; "" if none */
	const char *dropin_arg;    /* --dropin */
	const char *python;        /* runs bench_zmqapi.py */
	const char *only;          /* run only scenarios whose name contains this (any case) */
	int pairs;
	int pairs_arg; /* --pairs (0: as the mode says) */
	/* TLS scenarios: the run's certificate folder and stunnel, or why not. */
	char tls_dir[PATH_MAX];
	char stunnel[PATH_MAX];
	const char *tls_missing;
};

/* Samples of one scenario, one library: [metric][pair]. */
struct bench_samples {
	double v[BENCH_METRICS_MAX][BENCH_PAIRS_MAX]; /* good runs, in order */
	double first[BENCH_PAIRS_MAX]; /* the first metric by pair (for the worst pair) */
	bool ok[BENCH_PAIRS_MAX];      /* ... and whether that pair's run was good */
	int n;                         /* good runs */
	int failed;                    /* failed runs */
};

/* dir/name into buf; -1 (and an empty buf) if it does not fit. */
static int
path_join(char *buf, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= cap) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

static const struct bench_metric *
scenario_metrics(const struct bench_scenario *sc)
{
	switch (sc->kind) {
	case KIND_THR:
		return thr_metrics;
	case KIND_LAT:
		return lat_metrics;
	case KIND_STALL:
		return stall_metrics;
	case KIND_IDLE:
		return idle_metrics;
	}
	return thr_metrics;
}

static const char *
scenario_unit(const struct bench_scenario *sc)
{
	switch (sc->kind) {
	case KIND_LAT:
		return "round trips";
	case KIND_STALL:
		return "messages at most";
	case KIND_IDLE:
		return "connections";
	default:
		return "messages";
	}
}

static unsigned long
scenario_count(const struct bench_scenario *sc, const struct bench_opts *o)
{
	if (o->smoke)
		return sc->count_smoke;
	return o->quick ? sc->count_quick : sc->count_full;
}

/* The value of " key=" in a RESULT line, or -1 if absent. */
static int
result_get(const char *line, const char *key, double *v)
{
	char pat[64];
	const char *p;
	char *end;

	snprintf(pat, sizeof pat, " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	*v = strtod(p + strlen(pat), &end);
	return end == p + strlen(pat) ? -1 : 0;
}

/* Reads lines from p until one starts with "RESULT "; checks its count. */
static int
read_result(struct zl_proc *p, const char *who, unsigned long count, char *line, size_t cap,
            int timeout_ms)
{
	double n;

	for (;;) {
		int rc = zl_proc_readline(p, line, cap, timeout_ms);
		if (rc < 0) {
			fprintf(stderr, "zring bench: %s gave no RESULT line (%s)\n", who,
			        rc == -ETIMEDOUT ? "timed out" : "exited");
			return -1;
		}
		if (strncmp(line, "RESULT ", 7) == 0)
			break;
	}
	if (result_get(line, "count", &n) < 0 || n != (double)count) {
		fprintf(stderr, "zring bench: %s reports a wrong count: %s\n", who, line);
		return -1;
	}
	return 0;
}

static int
stop_checked(struct zl_proc *p, const char *who)
{
	int st = zl_proc_stop(p, 10000);

	if (st == 0)
		return 0;
	if (st == -1)
		fprintf(stderr, "zring bench: %s hung and was killed\n", who);
	else if (WIFEXITED(st))
		fprintf(stderr, "zring bench: %s exited with status %d\n", who, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		fprintf(stderr, "zring bench: %s died of signal %d\n", who, WTERMSIG(st));
	return -1;
}

/* A fresh abstract ipc:// name per run, so no file is left behind. */
static void
ipc_endpoint(char *buf, size_t cap)
{
	static unsigned seq;

	snprintf(buf, cap, "ipc://@zring-bench-%ld-%u", (long)getpid(), seq++);
}

/*
 * Starts argv: as it is for the native programs; for the zmq.h API ones
 * through env(1), with LD_LIBRARY_PATH at the drop-in for "zring" and
 * without one for "libzmq" (so an inherited one cannot pick the library),
 * and for pyzmq with Python in front of the script (argv[0]).
 */
static int
bench_spawn(struct zl_proc *p, const struct bench_opts *o, const struct bench_scenario *sc, int lib,
            char *const argv[])
{
	char *full[16];
	char env_lib[PATH_MAX + 32];
	size_t n = 0;

	if (sc->api == API_NATIVE)
		return zl_proc_spawn(p, argv);
	full[n++] = BENCH_ENV;
	if (lib == LIB_ZR) {
		snprintf(env_lib, sizeof env_lib, "LD_LIBRARY_PATH=%s", o->dropin_dir);
		full[n++] = env_lib;
	} else {
		full[n++] = "-u";
		full[n++] = "LD_LIBRARY_PATH";
	}
	if (sc->api == API_PYZMQ)
		full[n++] = (char *)o->python;
	for (size_t k = 0; argv[k] && n < sizeof full / sizeof full[0] - 1; k++)
		full[n++] = argv[k];
	full[n] = NULL;
	return zl_proc_spawn(p, full);
}

/* What the zmq.h API runs of a scenario reported about their library, per
 * library, for the table: "PATH (zmq_version X.Y.Z...)"; "" until known. */
struct bench_ident {
	char lib[LIB_N][PATH_MAX + 64];
};

/*
 * A zmq.h API run counts only on the library it claims: its RESULT line ends
 * with "zring=0|1 libzmq_path=PATH" (zmq_has("zring") and the libzmq.so
 * mapped in the process). "zring": the drop-in's marker and a path in the
 * drop-in's folder; "libzmq": neither. Returns 0, or -1 (said).
 */
static int
api_check(const struct bench_opts *o, int lib, const char *who, const char *line,
          struct bench_ident *id)
{
	double marker;
	const char *path = strstr(line, " libzmq_path=");
	const char *ver = strstr(line, " zmq_version=");
	size_t dl = strlen(o->dropin_dir);

	if (!path || !ver || result_get(line, "zring", &marker) < 0) {
		fprintf(stderr, "zring bench: REFUSED: %s does not say which libzmq ran it: %s\n",
		        who, line);
		return -1;
	}
	path += strlen(" libzmq_path=");
	bool in_dropin = strncmp(path, o->dropin_dir, dl) == 0 && path[dl] == '/';
	bool ok = lib == LIB_ZR ? marker == 1 && in_dropin
	                        : marker == 0 && !in_dropin && path[0] == '/';
	if (!ok) {
		fprintf(stderr,
		        "zring bench: REFUSED: %s was to run on %s but ran on %s "
		        "(zmq_has(\"zring\") "
		        "%.0f)\n",
		        who, lib == LIB_ZR ? "the drop-in" : "the system's libzmq", path, marker);
		return -1;
	}
	if (!id->lib[lib][0]) {
		ver += strlen(" zmq_version=");
		snprintf(id->lib[lib], sizeof id->lib[lib], "%s (zmq_version %.*s%s)", path,
		         (int)strcspn(ver, " "), ver, marker == 1 ? ", zmq_has(\"zring\")" : "");
	}
	return 0;
}

/* name's first match in $PATH into out. Returns 0 or -1. */
static int
find_in_path(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH");

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		if (n && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, p, name) < cap &&
		    access(out, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

/* A loopback TCP port free at the moment (stunnel cannot announce one). */
static int
free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Whether something listens on 127.0.0.1:port, from /proc/net/tcp: probing
 * with a connect would start a TLS session (and a log line) in stunnel. */
static bool
port_listening(int port)
{
	char line[512];
	unsigned long addr;
	unsigned int lport, st;
	bool found = false;
	FILE *f = fopen("/proc/net/tcp", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof line, f))
		if (sscanf(line, " %*d: %8lx:%4x %*8x:%*4x %2x", &addr, &lport, &st) == 3)
			found = lport == (unsigned int)port && st == 0x0A &&
			        (addr == 0x0100007FUL || addr == 0);
	fclose(f);
	return found;
}

/*
 * Starts one stunnel (TLS 1.3, the run's certificate) in p: the server takes
 * TLS on accept_port and passes plain TCP to connect_port; the client the
 * reverse, verifying the server's certificate against the same file as CA
 * and its IP address. Waits until it listens. Returns 0 or -1 (said).
 */
static int
stunnel_start(struct zl_proc *p, const struct bench_opts *o, bool client, int accept_port,
              int connect_port)
{
	const char *role = client ? "client" : "server";
	char conf[PATH_MAX + 32];
	FILE *f;

	snprintf(conf, sizeof conf, "%s/stunnel-%s.conf", o->tls_dir, role);
	f = fopen(conf, "w");
	if (!f) {
		fprintf(stderr, "zring bench: cannot write %s: %s\n", conf, strerror(errno));
		return -1;
	}
	fprintf(f,
	        "foreground = quiet\n"
	        "pid =\n"
	        "output = %s/stunnel-%s.log\n"
	        "debug = notice\n"
	        "[bench]\n"
	        "accept = 127.0.0.1:%d\n"
	        "connect = 127.0.0.1:%d\n"
	        "sslVersionMin = TLSv1.3\n",
	        o->tls_dir, role, accept_port, connect_port);
	if (client)
		fprintf(f,
		        "client = yes\n"
		        "CAfile = %s/cert.pem\n"
		        "verifyChain = yes\n"
		        "checkIP = 127.0.0.1\n",
		        o->tls_dir);
	else
		fprintf(f, "cert = %s/cert.pem\nkey = %s/key.pem\n", o->tls_dir, o->tls_dir);
	if (fclose(f) != 0) {
		fprintf(stderr, "zring bench: cannot write %s\n", conf);
		return -1;
	}
	char *argv[] = {(char *)o->stunnel, conf, NULL};
	int rc = zl_proc_spawn(p, argv);
	if (rc < 0) {
		fprintf(stderr, "zring bench: cannot start %s: %s\n", o->stunnel, strerror(-rc));
		return -1;
	}
	for (uint64_t end = zl_now_ns() + (uint64_t)BENCH_STUNNEL_MS * 1000000u;;) {
		if (port_listening(accept_port))
			return 0;
		int st;
		bool gone = waitpid(p->pid, &st, WNOHANG) == p->pid;
		if (gone || zl_now_ns() > end) {
			fprintf(stderr,
			        "zring bench: stunnel %s never listened on port %d (see "
			        "%s/stunnel-%s.log)\n",
			        role, accept_port, o->tls_dir, role);
			if (gone)
				p->pid = 0; /* reaped */
			else
				kill(p->pid, SIGTERM);
			zl_proc_stop(p, 2000);
			return -1;
		}
		usleep(10000);
	}
}

/* CPU seconds (user + system) a live process has used so far, or 0. */
static double
proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	long hz = sysconf(_SC_CLK_TCK);

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields 14 and 15, counted after the command name's ")". */
	const char *p = strrchr(buf, ')');
	if (!p || hz <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)hz;
}

/* stunnel ends on SIGTERM; its status is not the run's. */
static void
stunnel_stop(struct zl_proc *p)
{
	if (p->pid > 0)
		kill(p->pid, SIGTERM);
	if (zl_proc_stop(p, 5000) == -1)
		fprintf(stderr, "zring bench: a stunnel hung and was killed\n");
}

/*
 * One run: receiver (binding side) first, then sender with the endpoint it
 * announced. Fills vals[] with the scenario's metrics. Returns 0 or -1.
 */
static int
run_one(const struct bench_opts *o, const struct bench_scenario *sc, int lib, double *vals,
        FILE *runs, int pair, struct bench_ident *id)
{
	static struct zl_proc rx, txs[BENCH_SENDERS_MAX];
	struct zl_proc *tx = &txs[0];
	const char *lib_name = sc->reference ? "raw" : lib_names[lib];
	int nsend = sc->kind == KIND_IDLE && sc->senders > 1 ? sc->senders : 1;
	static char ep[ZL_PROC_LINE_MAX], key[64], bind_ep[128];
	char bin[PATH_MAX], count_s[32], size_s[32];
	static char line[ZL_PROC_LINE_MAX], rx_line[ZL_PROC_LINE_MAX], tx_line[ZL_PROC_LINE_MAX];
	unsigned long count = scenario_count(sc, o);
	/* Throughput modes take a pattern; the raw ones do not. */
	bool thr = sc->kind == KIND_THR && !sc->reference;
	const char *rx_mode = sc->rx_mode ? sc->rx_mode : kind_modes[sc->kind][0];
	const char *tx_mode = sc->tx_mode ? sc->tx_mode : kind_modes[sc->kind][1];
	char rx_who[160], tx_who[160];
	int rc;

	const char *prog = sc->api == API_ZMQH    ? BENCH_ZMQH_BIN
	                   : sc->api == API_PYZMQ ? BENCH_PYZMQ_SCRIPT
	                                          : lib_bins[lib];
	if (path_join(bin, sizeof bin, o->bin_dir, prog) < 0)
		return -1;
	snprintf(count_s, sizeof count_s, "%lu", count);
	snprintf(size_s, sizeof size_s, "%lu", sc->size);
	const char *who_lib = sc->api == API_NATIVE ? ""
	                      : lib == LIB_ZR       ? " (drop-in)"
	                                            : " (libzmq)";
	snprintf(rx_who, sizeof rx_who, "%s%s %s %s", prog, who_lib, rx_mode, sc->name);
	snprintf(tx_who, sizeof tx_who, "%s%s %s %s", prog, who_lib, tx_mode, sc->name);
	/* The binding side starts first and announces its endpoint. */
	struct zl_proc *binder = sc->tx_binds ? tx : &rx;
	const char *binder_who = sc->tx_binds ? tx_who : rx_who;
	bool tls = strcmp(sc->pattern, BENCH_TLS_PATTERN) == 0;
	if (sc->ipc)
		ipc_endpoint(bind_ep, sizeof bind_ep);
	else
		snprintf(bind_ep, sizeof bind_ep, "%s",
		         tls && lib == LIB_ZR ? BENCH_TLS_ENDPOINT : BENCH_ENDPOINT);

	/* The receiver's endpoint: the one it binds, or the publisher's. */
	char *rx_ep = sc->tx_binds ? ep : bind_ep;
	char *rx_argv_thr[] = {bin,
	                       "thr-recv",
	                       (char *)sc->pattern,
	                       rx_ep,
	                       count_s,
	                       size_s,
	                       tls ? (char *)o->tls_dir : NULL,
	                       NULL};
	char *rx_argv[] = {bin, (char *)rx_mode, rx_ep, count_s, size_s, NULL};
	if (sc->tx_binds) {
		char *pub_argv[] = {bin,    "thr-send", (char *)sc->pattern, bind_ep, count_s,
		                    size_s, NULL};
		rc = bench_spawn(tx, o, sc, lib, pub_argv);
	} else {
		rc = bench_spawn(&rx, o, sc, lib, thr ? rx_argv_thr : rx_argv);
	}
	if (rc < 0) {
		fprintf(stderr, "zring bench: cannot start %s: %s\n", bin, strerror(-rc));
		return -1;
	}
	/* "READY <endpoint>[,<endpoint>...]", and a CURVE server's public key after it. */
	bool curve = strcmp(sc->pattern, "pushpull-curve") == 0;
	key[0] = '\0';
	rc = zl_proc_readline(binder, line, sizeof line, BENCH_READY_MS);
	char *sp = rc >= 0 && strncmp(line, "READY ", 6) == 0 ? line + 6 : NULL;
	if (sp) {
		size_t n = strcspn(sp, " ");
		memcpy(ep, sp, n);
		ep[n] = '\0';
		if (sp[n] == ' ')
			snprintf(key, sizeof key, "%s", sp + n + 1);
	}
	if (!sp || !ep[0] || (curve && !key[0])) {
		fprintf(stderr, "zring bench: %s did not announce its endpoint%s\n", binder_who,
		        curve ? " and key" : "");
		stop_checked(binder, binder_who);
		return -1;
	}
	/* libzmq under TLS: its PUSH speaks to a stunnel client, which speaks
	 * TLS to a stunnel server, which speaks to the PULL. */
	static struct zl_proc tunnels[2];
	bool tunneled = tls && lib == LIB_ZMQ;
	if (tunneled) {
		const char *port = strrchr(ep, ':');
		int srv = free_port(), cli = free_port();
		if (!port || srv < 0 || cli < 0 || srv == cli ||
		    stunnel_start(&tunnels[0], o, false, srv, atoi(port + 1)) < 0) {
			stop_checked(binder, binder_who);
			return -1;
		}
		if (stunnel_start(&tunnels[1], o, true, cli, srv) < 0) {
			stunnel_stop(&tunnels[0]);
			stop_checked(binder, binder_who);
			return -1;
		}
		snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", cli);
	}
	char *tx_argv_thr[] = {bin,
	                       "thr-send",
	                       (char *)sc->pattern,
	                       ep,
	                       count_s,
	                       size_s,
	                       curve ? key
	                       : tls ? (char *)o->tls_dir
	                             : NULL,
	                       NULL};
	char each_s[32];
	snprintf(each_s, sizeof each_s, "%lu", count / (unsigned long)nsend);
	char *tx_argv[] = {bin, (char *)tx_mode, ep, nsend > 1 ? each_s : count_s, size_s, NULL};
	if (sc->tx_binds)
		rc = bench_spawn(&rx, o, sc, lib, rx_argv_thr);
	else
		rc = bench_spawn(tx, o, sc, lib, thr ? tx_argv_thr : tx_argv);
	if (rc < 0) {
		fprintf(stderr, "zring bench: cannot start %s: %s\n", bin, strerror(-rc));
		if (tunneled) {
			stunnel_stop(&tunnels[1]);
			stunnel_stop(&tunnels[0]);
		}
		stop_checked(binder, binder_who);
		return -1;
	}
	int bad = 0;
	for (int k = 1; k < nsend; k++) {
		if (bench_spawn(&txs[k], o, sc, lib, tx_argv) < 0) {
			fprintf(stderr, "zring bench: cannot start %s\n", bin);
			while (k-- > 0)
				stop_checked(&txs[k], tx_who);
			stop_checked(&rx, rx_who);
			return -1;
		}
	}
	if (sc->kind == KIND_IDLE) {
		/* The receiver has a message from every connection: now the senders
		 * measure, then all may close. Several senders: their growths add
		 * up, per connection over all of them. */
		double growth = 0, g;
		unsigned long each = count / (unsigned long)nsend;
		if (read_result(&rx, rx_who, count, rx_line, sizeof rx_line, BENCH_RESULT_MS) < 0)
			bad = 1;
		for (int k = 0; k < nsend && !bad; k++)
			if (zl_proc_writeline(&txs[k], "go") < 0)
				bad = 1;
		for (int k = 0; k < nsend && !bad; k++) {
			if (read_result(&txs[k], tx_who, nsend > 1 ? each : count, tx_line,
			                sizeof tx_line, BENCH_RESULT_MS) < 0 ||
			    result_get(tx_line, "growth_mb", &g) < 0)
				bad = 1;
			else
				growth += g;
		}
		if (!bad && nsend > 1)
			snprintf(tx_line, sizeof tx_line,
			         "RESULT senders=%d kb_per_conn=%.2f growth_mb=%.2f", nsend,
			         growth * 1024 / (double)count, growth);
	} else {
		/* The sender finishes first: in throughput runs its context waits
		 * for delivery, then the receiver still counts the last ones; a
		 * stalled receiver measures once told the sender gave up. */
		if (read_result(tx, tx_who, count, tx_line, sizeof tx_line, BENCH_RESULT_MS) < 0)
			bad = 1;
		if (!bad && sc->kind == KIND_STALL && zl_proc_writeline(&rx, "go") < 0)
			bad = 1;
		if (!bad &&
		    read_result(&rx, rx_who, count, rx_line, sizeof rx_line, BENCH_RESULT_MS) < 0)
			bad = 1;
	}
	for (int k = 0; k < nsend; k++)
		if (stop_checked(&txs[k], tx_who) < 0)
			bad = 1;
	if (stop_checked(&rx, rx_who) < 0)
		bad = 1;
	/* The stunnels' CPU is libzmq's price of TLS: the server's goes with
	 * the receiver's, the client's with the sender's. */
	double tunnel_cpu[2] = {0, 0};
	if (tunneled) {
		for (int k = 0; k < 2; k++)
			tunnel_cpu[k] = proc_cpu_s(tunnels[k].pid);
		stunnel_stop(&tunnels[1]);
		stunnel_stop(&tunnels[0]);
	}
	if (bad)
		return -1;
	if (sc->api != API_NATIVE && (api_check(o, lib, rx_who, rx_line, id) < 0 ||
	                              api_check(o, lib, tx_who, tx_line, id) < 0))
		return -1;

	/* Fan-out receivers look at every socket after a second without a
	 * wakeup; what only that found is a wakeup the library never gave. */
	double rescued;
	if (result_get(rx_line, "rescued", &rescued) == 0 && rescued > 0)
		fprintf(stderr,
		        "zring bench: warning: %s: %.0f messages were found only by the "
		        "receiver's periodic rescan (their wakeup never came)\n",
		        rx_who, rescued);

	const struct bench_metric *m = scenario_metrics(sc);
	for (int k = 0; k < BENCH_METRICS_MAX; k++) {
		if (result_get(m[k].from_sender ? tx_line : rx_line, m[k].key, &vals[k]) < 0) {
			fprintf(stderr, "zring bench: no %s in: %s\n", m[k].key,
			        m[k].from_sender ? tx_line : rx_line);
			return -1;
		}
	}
	for (int k = 0; tunneled && k < BENCH_METRICS_MAX; k++)
		if (strcmp(m[k].key, "cpu_s_per_M") == 0)
			vals[k] += tunnel_cpu[m[k].from_sender ? 1 : 0] * 1e6 / (double)count;
	if (runs) {
		fprintf(runs, "\"%s\",%s,%d,%lu,%lu", sc->name, lib_name, pair, count, sc->size);
		for (int k = 0; k < BENCH_METRICS_MAX; k++)
			fprintf(runs, ",%.6g", vals[k]);
		fputc('\n', runs);
		fflush(runs);
	}
	return 0;
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

struct bench_stat {
	double med, min, max;
};

static struct bench_stat
stat_of(const double *v, int n)
{
	double s[BENCH_PAIRS_MAX];
	struct bench_stat st = {0, 0, 0};

	if (n <= 0)
		return st;
	memcpy(s, v, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	st.min = s[0];
	st.max = s[n - 1];
	st.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	return st;
}

/* The chart: one group per throughput scenario, msgs/s with libzmq = 1. */
struct bench_bar {
	const char *name;
	double ratio; /* zring msgs/s over libzmq msgs/s, medians */
};

#define SVG_GROUP_W 64
#define SVG_BAR_W 22
#define SVG_PLOT_H 300
#define SVG_LEFT 56
#define SVG_TOP 56
#define SVG_BOTTOM 150

/* Text for SVG: the scenario names are ours, but escape the XML specials anyway. */
static void
svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

static int
write_svg(const char *path, const struct bench_bar *bars, int n, const char *subtitle)
{
	FILE *f = fopen(path, "w");
	double top = 1;

	if (!f)
		return -1;
	for (int i = 0; i < n; i++)
		if (bars[i].ratio > top)
			top = bars[i].ratio;
	double step = top <= 2 ? 0.5 : top <= 5 ? 1 : top <= 10 ? 2 : 5;
	top = step * (double)(int)(top / step + 1);
	int w = SVG_LEFT + n * SVG_GROUP_W + 150, h = SVG_TOP + SVG_PLOT_H + SVG_BOTTOM;
	double y0 = SVG_TOP + SVG_PLOT_H, scale = SVG_PLOT_H / top;

	fprintf(f,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	        "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">zring beside "
	        "libzmq: throughput (msgs/s, libzmq = 1)</text>\n"
	        "<text x=\"%d\" y=\"40\" fill=\"#555\">",
	        w, h, w, h, SVG_LEFT, SVG_LEFT);
	svg_text(f, subtitle);
	fputs("</text>\n", f);
	for (double t = 0; t <= top + 1e-9; t += step) {
		double y = y0 - t * scale;
		fprintf(f,
		        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"%s/>\n"
		        "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
		        SVG_LEFT, y, SVG_LEFT + n * SVG_GROUP_W, y, t == 1 ? "#333" : "#ddd",
		        t == 1 ? " stroke-dasharray=\"4 3\"" : "", SVG_LEFT - 6, y + 4, t);
	}
	for (int i = 0; i < n; i++) {
		double gx = SVG_LEFT + i * SVG_GROUP_W + (SVG_GROUP_W - 2 * SVG_BAR_W) / 2.0;
		double hz = bars[i].ratio * scale, hq = scale;
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
		        "fill=\"#1f77b4\"><title>zring %.2fx</title></rect>\n"
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#aaa\"/>\n"
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
		        "font-weight=\"bold\">%.2f</text>\n",
		        gx, y0 - hz, SVG_BAR_W, hz, bars[i].ratio, gx + SVG_BAR_W, y0 - hq,
		        SVG_BAR_W, hq, gx + SVG_BAR_W / 2.0, y0 - hz - 4, bars[i].ratio);
		double lx = SVG_LEFT + i * SVG_GROUP_W + SVG_GROUP_W / 2.0;
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
		        "transform=\"rotate(-45 %.1f %.1f)\">",
		        lx, y0 + 14, lx, y0 + 14);
		svg_text(f, bars[i].name);
		fputs("</text>\n", f);
	}
	int lx = SVG_LEFT + n * SVG_GROUP_W + 16;
	fprintf(f,
	        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n"
	        "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#1f77b4\"/>"
	        "<text x=\"%d\" y=\"%d\">zring (ratio on top)</text>\n"
	        "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#aaa\"/>"
	        "<text x=\"%d\" y=\"%d\">libzmq = 1</text>\n"
	        "<text x=\"%d\" y=\"%d\" fill=\"#555\">higher: zring faster</text>\n"
	        "</svg>\n",
	        SVG_LEFT, y0, SVG_LEFT + n * SVG_GROUP_W, y0, lx, SVG_TOP, lx + 20, SVG_TOP + 11,
	        lx, SVG_TOP + 22, lx + 20, SVG_TOP + 33, lx, SVG_TOP + 55);
	return fclose(f) == 0 ? 0 : -1;
}

static const char bench_usage_head[] =
	"usage: zring bench [--quick|--smoke] [--pairs N] [--only TEXT] [--out DIR] [--bin DIR]\n"
	"\n"
	"Runs zring's and libzmq's benchmark programs (bench/, built with\n"
	"-DZR_BENCH=ON) alternately, sender and receiver in separate processes\n"
	"over tcp://127.0.0.1, and prints per scenario the medians, min-max and\n"
	"the ratio zring/libzmq. Writes zring-bench-<time>.csv (summary),\n"
	"zring-bench-<time>-runs.csv (every run) and zring-bench-<time>.svg (a\n"
	"chart of the throughput ratios) into DIR (default: .). Raw TCP\n"
	"reference scenarios (plain sockets, no library) measure the loopback's\n"
	"ceiling and floor in the same run (and, with CURVE's crypto, the 64 KiB\n"
	"CURVE ceiling); PUSH/PULL 64 B and 1 MiB, CURVE 64 KiB and REQ/REP are\n"
	"printed against them. The \"zmq.h API\" scenarios run one program written\n"
	"against zmq.h (bench_zmqapi; bench_zmqapi.py through pyzmq) on the\n"
	"system's libzmq and, with LD_LIBRARY_PATH at it, on zring's libzmq.so.5\n"
	"drop-in (the \"zring\" column); a run that did not load the library it\n"
	"was meant to is refused. The \"TLS\" scenarios run zring on tls:// and\n"
	"libzmq on tcp:// through a stunnel client and server (TLS 1.3), with a\n"
	"certificate made by the openssl CLI into DIR; without stunnel4 or\n"
	"openssl in PATH they are not run. Each throughput scenario also prints\n"
	"its worst pair (the lowest of the pairs' ratios), and each scenario the\n"
	"share of the machine's CPU time the hypervisor took while it ran (steal,\n"
	"from /proc/stat): ratios from a run with much steal are noise.\n"
	"\n"
	"options:\n";

enum bench_opt {
	BENCH_ARG_QUICK,
	BENCH_ARG_SMOKE,
	BENCH_ARG_PAIRS,
	BENCH_ARG_ONLY,
	BENCH_ARG_OUT,
	BENCH_ARG_BIN,
	BENCH_ARG_DROPIN,
	BENCH_ARG_PYTHON,
	BENCH_ARG_HELP,
};

static const struct zl_opt bench_opts[] = {
	{BENCH_ARG_QUICK, "quick", 0, NULL,
         "fewer messages and 3 pairs instead of 5, no idle-connection\n"
         "scenarios (under 2 minutes)"},
	{BENCH_ARG_SMOKE, "smoke", 0, NULL,
         "tiny counts, one pair: checks every program pair works"},
	{BENCH_ARG_PAIRS, "pairs", 0, "N",
         "runs of each library per scenario, alternately (1-15; default 5,\n"
         "--quick 3, --smoke 1): more pairs steady the medians on a noisy machine"},
	{BENCH_ARG_ONLY, "only", 0, "TEXT",
         "only the scenarios whose name contains TEXT (any case),\n"
         "e.g. --only curve"},
	{BENCH_ARG_OUT, "out", 0, "DIR", "where the CSV files go"},
	{BENCH_ARG_BIN, "bin", 0, "DIR",
         "where bench_zr and bench_zmq are (default: the build's bench/)"},
	{BENCH_ARG_DROPIN, "dropin", 0, "DIR",
         "the folder of zring's libzmq.so.5 for the zmq.h API scenarios\n"
         "(default: the build's compat/)"},
	{BENCH_ARG_PYTHON, "python", 0, "PATH",
         "the Python with pyzmq for \"zmq.h API via pyzmq\"\n"
         "(default: /usr/bin/python3)"},
	{BENCH_ARG_HELP, "help", 'h', NULL, "print this help"},
};

static void
bench_usage(FILE *f)
{
	fputs(bench_usage_head, f);
	zl_args_help(f, ZL_OPTS(bench_opts));
}

/* Reads the command line into o; -1 to go on, else the exit status. */
static int
bench_parse(struct bench_opts *o, int argc, char **argv)
{
	struct zl_args p;
	const char *v;
	bool help = false;
	int id;

	zl_args_init(&p, ZL_OPTS(bench_opts), argc, argv);
	while ((id = zl_args_next(&p, &v)) != ZL_ARG_END) {
		switch (id) {
		case BENCH_ARG_QUICK:
			o->quick = true;
			break;
		case BENCH_ARG_SMOKE:
			o->smoke = true;
			break;
		case BENCH_ARG_PAIRS: {
			long long n;

			if (!zl_parse_int(v, 1, BENCH_PAIRS_MAX, &n)) {
				fprintf(stderr, "zring bench: --pairs takes 1 to %d, not '%s'\n",
				        BENCH_PAIRS_MAX, v);
				return 2;
			}
			o->pairs_arg = (int)n;
			break;
		}
		case BENCH_ARG_ONLY:
			o->only = v;
			break;
		case BENCH_ARG_OUT:
			o->out_dir = v;
			break;
		case BENCH_ARG_BIN:
			o->bin_dir = v;
			break;
		case BENCH_ARG_DROPIN:
			o->dropin_arg = v;
			break;
		case BENCH_ARG_PYTHON:
			o->python = v;
			break;
		case BENCH_ARG_HELP:
			help = true;
			break;
		case ZL_ARG_ERROR:
			fprintf(stderr, "zring bench: %s\n\n", p.error);
			bench_usage(stderr);
			return 2;
		default:
			fprintf(stderr, "zring bench: unexpected argument '%s'\n\n", v);
			bench_usage(stderr);
			return 2;
		}
	}
	if (help) {
		bench_usage(stdout);
		return 0;
	}
	return -1;
}

/* The build's bench/ directory: CMake tells us, else next to our own dir. */
static void
default_bin_dir(char *dir, size_t cap)
{
#ifdef ZR_BENCH_BIN_DIR
	snprintf(dir, cap, "%s", ZR_BENCH_BIN_DIR);
	char probe[PATH_MAX];
	if (path_join(probe, sizeof probe, dir, lib_bins[LIB_ZR]) == 0 && access(probe, X_OK) == 0)
		return;
#endif
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		snprintf(dir, cap, "bench");
		return;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if (path_join(dir, cap, self, "../bench") < 0)
		snprintf(dir, cap, "bench");
}

/*
 * The drop-in's folder, resolved (the mapped path a run reports is), into
 * o->dropin_dir: --dropin, else the build's compat/, else ../compat beside the
 * programs; "" when none holds libzmq.so.5.
 */
static void
find_dropin(struct bench_opts *o)
{
	char cand[PATH_MAX], lib[PATH_MAX];
	const char *dirs[3];
	size_t n = 0;

	o->dropin_dir[0] = '\0';
	if (o->dropin_arg) {
		dirs[n++] = o->dropin_arg;
	} else {
#ifdef ZR_COMPAT_LIB_DIR
		dirs[n++] = ZR_COMPAT_LIB_DIR;
#endif
		if (path_join(cand, sizeof cand, o->bin_dir, "../compat") == 0)
			dirs[n++] = cand;
	}
	for (size_t k = 0; k < n; k++)
		if (path_join(lib, sizeof lib, dirs[k], BENCH_DROPIN) == 0 &&
		    access(lib, R_OK) == 0 && realpath(dirs[k], o->dropin_dir))
			return;
	o->dropin_dir[0] = '\0';
}

/* Why a zmq.h API scenario cannot run here, or NULL if it can. */
static const char *
api_missing(const struct bench_opts *o, const struct bench_scenario *sc)
{
	char path[PATH_MAX];

	if (!o->dropin_dir[0])
		return "no libzmq.so.5 drop-in (build with -DZR_COMPAT=ON, or pass --dropin DIR)";
	if (path_join(path, sizeof path, o->bin_dir,
	              sc->api == API_PYZMQ ? BENCH_PYZMQ_SCRIPT : BENCH_ZMQH_BIN) < 0 ||
	    access(path, R_OK) != 0)
		return "no " BENCH_ZMQH_BIN " program in the --bin folder";
	if (sc->api == API_PYZMQ && access(o->python, X_OK) != 0)
		return "no Python at --python";
	return NULL;
}

/* The scenario of that name, or -1. */
static int
scenario_find(const char *name)
{
	for (size_t s = 0; s < BENCH_NSCEN; s++)
		if (strcmp(scenarios[s].name, name) == 0)
			return (int)s;
	return -1;
}

/* Whether --only picks scenario s: by name, or as the reference of one it picks. */
static bool
scenario_selected(const struct bench_opts *o, size_t s)
{
	if (!o->only || strcasestr(scenarios[s].name, o->only))
		return true;
	for (size_t u = 0; u < BENCH_NSCEN; u++)
		for (size_t k = 0; k < sizeof scenarios[u].beside / sizeof scenarios[u].beside[0];
		     k++)
			if (scenarios[u].beside[k] &&
			    strcmp(scenarios[u].beside[k], scenarios[s].name) == 0 &&
			    strcasestr(scenarios[u].name, o->only))
				return true;
	if (!scenarios[s].reference)
		return false;
	for (size_t u = 0; u < BENCH_NSCEN; u++)
		if (scenarios[u].ref && strcmp(scenarios[u].ref, scenarios[s].name) == 0 &&
		    strcasestr(scenarios[u].name, o->only))
			return true;
	return false;
}

/* The machine's CPU time so far, in clock ticks, from /proc/stat's first
 * line: all of it, and what the hypervisor gave to others while this guest
 * had work (steal). On a shared VM it is one of what moves a run's ratios. */
struct bench_cpu {
	unsigned long long total, steal;
	bool ok;
};

static struct bench_cpu
machine_cpu(void)
{
	struct bench_cpu c = {0, 0, false};
	unsigned long long v[8];
	FILE *f = fopen("/proc/stat", "r");

	if (f == NULL)
		return c;
	/* user nice system idle iowait irq softirq steal (guest time is in user) */
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
	           &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			c.total += v[i];
		c.steal = v[7];
		c.ok = true;
	}
	fclose(f);
	return c;
}

/* Steal's share of the machine's CPU time from a to now, percent; -1 if
 * /proc/stat says nothing. A span shorter than a clock tick (a smoke run's
 * 200 round trips) counted no tick at all, so none stolen: 0. */
static double
steal_since(const struct bench_cpu *a)
{
	struct bench_cpu b = machine_cpu();

	if (!a->ok || !b.ok)
		return -1;
	if (b.total <= a->total)
		return 0;
	return 100.0 * (double)(b.steal - a->steal) / (double)(b.total - a->total);
}

/* ", steal N%" for a scenario's heading, or nothing when unknown. */
static void
steal_text(char *buf, size_t cap, double pct)
{
	if (pct < 0)
		buf[0] = '\0';
	else
		snprintf(buf, cap, ", steal %.0f%%", pct);
}

/* A summary CSV row: the figures (median, min, max) of each side, or blanks. */
static void
sum_row(FILE *sum, const char *scenario, const char *metric, const char *better,
        const struct bench_stat *z, const struct bench_stat *q, const double *ratio)
{
	fprintf(sum, "\"%s\",\"%s\",%s,", scenario, metric, better);
	if (z)
		fprintf(sum, "%.6g,%.6g,%.6g,", z->med, z->min, z->max);
	else
		fputs(",,,", sum);
	if (q)
		fprintf(sum, "%.6g,%.6g,%.6g,", q->med, q->min, q->max);
	else
		fputs(",,,", sum);
	if (ratio)
		fprintf(sum, "%.4f\n", *ratio);
	else
		fputs("\n", sum);
}

/*
 * The TLS scenarios' certificate, made once per bench run into
 * OUT/zring-bench-STAMP-tls/ by the openssl CLI: a self-signed ECDSA P-256
 * certificate (CN and subjectAltName IP 127.0.0.1, one day), which the
 * servers present and the clients trust. Finds stunnel too. On failure
 * o->tls_missing says why, and the scenarios are not run.
 */
static void
tls_prepare(struct bench_opts *o, const char *stamp)
{
	char openssl[PATH_MAX], name[64], key[PATH_MAX + 16], cert[PATH_MAX + 16];
	struct zl_proc p;

	if (!ZR_TOOL_TLS) {
		o->tls_missing = "this zring was built without TLS (cmake -DZR_TLS=OFF)";
		return;
	}
	if (find_in_path("openssl", openssl, sizeof openssl) < 0) {
		o->tls_missing = "no openssl command in PATH (Debian: openssl)";
		return;
	}
	if (find_in_path("stunnel4", o->stunnel, sizeof o->stunnel) < 0 &&
	    find_in_path("stunnel", o->stunnel, sizeof o->stunnel) < 0) {
		o->tls_missing =
			"no stunnel4 or stunnel in PATH for libzmq's side (Debian: stunnel4)";
		return;
	}
	snprintf(name, sizeof name, "zring-bench-%s-tls", stamp);
	if (path_join(o->tls_dir, sizeof o->tls_dir, o->out_dir, name) < 0 ||
	    (mkdir(o->tls_dir, 0700) < 0 && errno != EEXIST)) {
		o->tls_missing = "cannot make the certificate folder in --out";
		return;
	}
	snprintf(key, sizeof key, "%s/key.pem", o->tls_dir);
	snprintf(cert, sizeof cert, "%s/cert.pem", o->tls_dir);
	char *argv[] = {openssl,
	                "req",
	                "-x509",
	                "-newkey",
	                "ec",
	                "-pkeyopt",
	                "ec_paramgen_curve:P-256",
	                "-nodes",
	                "-days",
	                "1",
	                "-subj",
	                "/CN=127.0.0.1",
	                "-addext",
	                "subjectAltName=IP:127.0.0.1",
	                "-keyout",
	                key,
	                "-out",
	                cert,
	                NULL};
	if (zl_proc_spawn(&p, argv) < 0 || zl_proc_stop(&p, BENCH_OPENSSL_MS) != 0 ||
	    access(key, R_OK) != 0 || access(cert, R_OK) != 0)
		o->tls_missing = "openssl req could not make the certificate";
}

#define BENCH_NOTES_MAX 32 /* lines against references, printed again at the end */

/*
 * Throughput: the pair (one run of each library, back to back) with the
 * lowest ratio of the first metric, beside the medians. The medians hide
 * a bad pair; a goal such as "no pair below 2.5x" reads this line.
 */
static void
worst_pair(FILE *sum, const struct bench_scenario *sc, const struct bench_metric *m,
           const struct bench_samples *z, const struct bench_samples *q, int pairs)
{
	int worst = -1;
	double ratio = 0;

	for (int p = 0; p < pairs; p++) {
		if (!z->ok[p] || !q->ok[p] || q->first[p] <= 0)
			continue;
		double r = z->first[p] / q->first[p];
		if (worst < 0 || r < ratio) {
			worst = p;
			ratio = r;
		}
	}
	if (worst < 0)
		return;
	char label[64], za[64], qa[64];
	struct bench_stat a = {z->first[worst], z->first[worst], z->first[worst]};
	struct bench_stat b = {q->first[worst], q->first[worst], q->first[worst]};
	snprintf(label, sizeof label, "worst pair %s", m[0].label);
	snprintf(za, sizeof za, "%.4g (pair %d of %d)", a.med, worst + 1, pairs);
	snprintf(qa, sizeof qa, "%.4g", b.med);
	printf("  %-20s %30s %30s %8.2f  (the lowest pair's ratio)\n", label, za, qa, ratio);
	sum_row(sum, sc->name, label, "higher", &a, &b, &ratio);
}

int
zl_bench_main(int argc, char **argv)
{
	struct bench_opts o = {
		.out_dir = ".", .pairs = BENCH_PAIRS_FULL, .python = "/usr/bin/python3"};
	char bin_dir[PATH_MAX];

	int status = bench_parse(&o, argc, argv);

	if (status >= 0)
		return status;
	if (o.smoke)
		o.pairs = 1;
	else if (o.quick)
		o.pairs = BENCH_PAIRS_QUICK;
	if (o.pairs_arg > 0)
		o.pairs = o.pairs_arg;
	if (o.only) {
		size_t n = 0;
		for (size_t s = 0; s < BENCH_NSCEN; s++)
			n += scenario_selected(&o, s);
		if (n == 0) {
			fprintf(stderr, "zring bench: no scenario's name contains \"%s\"\n",
			        o.only);
			return 2;
		}
	}
	if (!o.bin_dir) {
		default_bin_dir(bin_dir, sizeof bin_dir);
		o.bin_dir = bin_dir;
	}
	for (int lib = 0; lib < LIB_N; lib++) {
		char probe[PATH_MAX];
		if (path_join(probe, sizeof probe, o.bin_dir, lib_bins[lib]) < 0 ||
		    access(probe, X_OK) != 0) {
			fprintf(stderr,
			        "zring bench: no %s (configure with -DZR_BENCH=ON and build, or "
			        "pass --bin DIR)\n",
			        probe);
			return 1;
		}
	}

	find_dropin(&o);
	if (o.dropin_arg && !o.dropin_dir[0]) {
		fprintf(stderr, "zring bench: no %s in %s\n", BENCH_DROPIN, o.dropin_arg);
		return 2;
	}

	char stamp[32], sum_path[PATH_MAX], runs_path[PATH_MAX];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	char sum_name[64], runs_name[64], svg_name[64], svg_path[PATH_MAX];
	snprintf(sum_name, sizeof sum_name, "zring-bench-%s.csv", stamp);
	snprintf(svg_name, sizeof svg_name, "zring-bench-%s.svg", stamp);
	snprintf(runs_name, sizeof runs_name, "zring-bench-%s-runs.csv", stamp);
	if (path_join(sum_path, sizeof sum_path, o.out_dir, sum_name) < 0 ||
	    path_join(runs_path, sizeof runs_path, o.out_dir, runs_name) < 0 ||
	    path_join(svg_path, sizeof svg_path, o.out_dir, svg_name) < 0) {
		fprintf(stderr, "zring bench: --out path too long\n");
		return 2;
	}
	FILE *runs = fopen(runs_path, "w");
	FILE *sum = runs ? fopen(sum_path, "w") : NULL;
	if (!runs || !sum) {
		fprintf(stderr, "zring bench: cannot write into %s: %s\n", o.out_dir,
		        strerror(errno));
		if (runs)
			fclose(runs);
		return 1;
	}
	for (size_t s = 0; s < BENCH_NSCEN; s++)
		if (strcmp(scenarios[s].pattern, BENCH_TLS_PATTERN) == 0 &&
		    scenario_selected(&o, s) && scenario_count(&scenarios[s], &o) > 0) {
			tls_prepare(&o, stamp);
			break;
		}
	fputs("scenario,lib,pair,count,size,m1,m2,m3,m4\n", runs);
	fputs("scenario,metric,better,zring_median,zring_min,zring_max,libzmq_median,"
	      "libzmq_min,libzmq_max,ratio_zring_over_libzmq\n",
	      sum);

	struct bench_cpu run_cpu0 = machine_cpu();

	printf("zring bench: %d pairs, zring and libzmq alternately, sender and receiver in "
	       "separate processes over %s (ipc:// where the name says); programs in %s\n",
	       o.pairs, BENCH_ENDPOINT, o.bin_dir);
	fflush(stdout);

	static struct bench_samples samples[BENCH_NSCEN][LIB_N];
	static struct bench_bar bars[BENCH_NSCEN];
	static char notes[BENCH_NOTES_MAX][256];
	int nnotes = 0;
	int nbars = 0;
	int failures = 0;
	double headline = 0;
	bool have_headline = false;
	/* msgs/s ratios of the zmq.h API throughput scenarios, for the end. */
	char api_ratios[256] = "";
	static struct bench_ident ident;

	for (size_t s = 0; s < BENCH_NSCEN; s++) {
		const struct bench_scenario *sc = &scenarios[s];
		const struct bench_metric *m = scenario_metrics(sc);

		if (!scenario_selected(&o, s))
			continue;
		if (scenario_count(sc, &o) == 0)
			continue; /* full mode only */
		const char *missing = sc->api != API_NATIVE ? api_missing(&o, sc) : NULL;
		if (strcmp(sc->pattern, BENCH_TLS_PATTERN) == 0)
			missing = o.tls_missing;
		if (missing) {
			printf("\n%s: not run: %s\n", sc->name, missing);
			fflush(stdout);
			continue;
		}
		memset(&ident, 0, sizeof ident);
		uint64_t started = zl_now_ns();
		struct bench_cpu cpu0 = machine_cpu();
		int pairs = sc->pairs_max > 0 && sc->pairs_max < o.pairs ? sc->pairs_max : o.pairs;
		/* A reference runs once per pair, from bench_zr (its raw modes use
		 * neither library). */
		int nlibs = sc->reference ? 1 : LIB_N;
		for (int pair = 0; pair < pairs; pair++) {
			for (int lib = 0; lib < nlibs; lib++) {
				struct bench_samples *b = &samples[s][lib];
				double vals[BENCH_METRICS_MAX];
				if (run_one(&o, sc, lib, vals, runs, pair, &ident) < 0) {
					fprintf(stderr, "zring bench: FAILED: %s, %s, pair %d\n",
					        sc->name, sc->reference ? "raw" : lib_names[lib],
					        pair + 1);
					b->failed++;
					failures++;
					continue;
				}
				for (int k = 0; k < BENCH_METRICS_MAX; k++)
					b->v[k][b->n] = vals[k];
				b->first[pair] = vals[0];
				b->ok[pair] = true;
				b->n++;
			}
		}

		struct bench_samples *z = &samples[s][LIB_ZR], *q = &samples[s][LIB_ZMQ];
		double steal = steal_since(&cpu0);
		char steal_s[32];
		steal_text(steal_s, sizeof steal_s, steal);
		if (steal >= 0) {
			struct bench_stat st = {steal, steal, steal};
			sum_row(sum, sc->name, "machine steal %", "info", &st, NULL, NULL);
		}
		if (sc->reference) {
			/* One column; the summary CSV has it in the zring_* columns,
			 * "reference" in the better column. */
			printf("\n%s (%lu %s, %d/%d reference runs good, %.0f s%s; plain sockets, "
			       "no library)\n",
			       sc->name, scenario_count(sc, &o),
			       sc->kind == KIND_THR ? "records" : scenario_unit(sc), z->n, pairs,
			       (double)(zl_now_ns() - started) * 1e-9, steal_s);
			printf("  %-20s %30s\n", "", "raw median [min-max]");
			for (int k = 0; k < BENCH_METRICS_MAX; k++) {
				struct bench_stat a = stat_of(z->v[k], z->n);
				char za[64];
				snprintf(za, sizeof za, "%.4g [%.4g-%.4g]", a.med, a.min, a.max);
				printf("  %-20s %30s\n", m[k].label, z->n ? za : "FAILED");
				sum_row(sum, sc->name, m[k].label, "reference", z->n ? &a : NULL,
				        NULL, NULL);
			}
			fflush(stdout);
			continue;
		}
		printf("\n%s (%lu %s, %d/%d zring and %d/%d libzmq runs good, %.0f s%s)\n",
		       sc->name, scenario_count(sc, &o), scenario_unit(sc), z->n, pairs, q->n,
		       pairs, (double)(zl_now_ns() - started) * 1e-9, steal_s);
		if (sc->api != API_NATIVE)
			for (int lib = 0; lib < LIB_N; lib++)
				printf("  %s: %s\n", lib == LIB_ZR ? "zring " : "libzmq",
				       ident.lib[lib][0] ? ident.lib[lib] : "(no good run)");
		printf("  %-20s %30s %30s %8s\n", "", "zring median [min-max]",
		       "libzmq median [min-max]", "ratio");
		for (int k = 0; k < BENCH_METRICS_MAX; k++) {
			struct bench_stat a = stat_of(z->v[k], z->n), b = stat_of(q->v[k], q->n);
			char za[64], qa[64];
			bool ok = z->n > 0 && q->n > 0 && b.med > 0;
			double ratio = ok ? a.med / b.med : 0;
			snprintf(za, sizeof za, "%.4g [%.4g-%.4g]", a.med, a.min, a.max);
			snprintf(qa, sizeof qa, "%.4g [%.4g-%.4g]", b.med, b.min, b.max);
			if (ok)
				printf("  %-20s %30s %30s %8.2f  (%s)\n", m[k].label,
				       z->n ? za : "FAILED", q->n ? qa : "FAILED", ratio,
				       m[k].dir == DIR_HIGHER  ? ">1: zring faster"
				       : m[k].dir == DIR_LOWER ? "<1: zring better"
				                               : "information");
			else
				printf("  %-20s %30s %30s %8s\n", m[k].label, z->n ? za : "FAILED",
				       q->n ? qa : "FAILED", "n/a");
			sum_row(sum, sc->name, m[k].label,
			        m[k].dir == DIR_HIGHER  ? "higher"
			        : m[k].dir == DIR_LOWER ? "lower"
			                                : "info",
			        z->n ? &a : NULL, q->n ? &b : NULL, ok ? &ratio : NULL);
			if (sc->kind == KIND_THR && k == 0 && ok)
				bars[nbars++] = (struct bench_bar){sc->name, ratio};
			if (sc->api != API_NATIVE && sc->kind == KIND_THR && k == 0 && ok) {
				size_t used = strlen(api_ratios);
				snprintf(api_ratios + used, sizeof api_ratios - used, "%s%.2f (%s)",
				         used ? ", " : "", ratio,
				         sc->api == API_PYZMQ                   ? "pyzmq"
				         : strcmp(sc->pattern, "pushpull") == 0 ? "C"
				                                                : "C, zmq_send");
			}
			if (strcmp(sc->name, BENCH_HEADLINE) == 0 && k == 0 && ok) {
				headline = ratio;
				have_headline = true;
			}
		}
		if (sc->kind == KIND_THR)
			worst_pair(sum, sc, m, z, q, pairs);
		/* zring's own price of the security layer: these msgs/s against
		 * zring's rows of the same run without it and under CURVE. */
		if (sc->beside[0] && z->n > 0) {
			char cmp[256];
			size_t used = 0;
			double mine = stat_of(z->v[0], z->n).med;
			for (size_t k = 0; k < sizeof sc->beside / sizeof sc->beside[0]; k++) {
				int b = sc->beside[k] ? scenario_find(sc->beside[k]) : -1;
				struct bench_samples *bs = b >= 0 ? &samples[b][LIB_ZR] : NULL;
				double other = bs && bs->n ? stat_of(bs->v[0], bs->n).med : 0;
				if (other <= 0)
					continue;
				used += (size_t)snprintf(cmp + used, sizeof cmp - used,
				                         "%s%.2f of %s", used ? ", " : "",
				                         mine / other, sc->beside[k]);
				if (used >= sizeof cmp)
					break;
			}
			if (used)
				printf("  zring msgs/s here: %s (zring medians of this run)\n",
				       cmp);
		}
		int r = sc->ref ? scenario_find(sc->ref) : -1;
		struct bench_samples *rs = r >= 0 ? &samples[r][0] : NULL;
		if (rs && rs->n > 0 && z->n > 0 && q->n > 0) {
			/* Against the kernel: throughput as a share of the raw ceiling,
			 * CPU per message as a multiple of the raw sockets' own, latency
			 * as a multiple of the raw floor (p50 and p99). Medians over the
			 * reference's median; min-max: each side's own spread over that
			 * same median. */
			bool lat = sc->kind == KIND_LAT;
			static const int thr_k[] = {0, 2, 3}, lat_k[] = {0, 1};
			const int *ks = lat ? lat_k : thr_k;
			int nk = lat ? 2 : 3;
			double cpu_x[2][2] = {{0, 0}, {0, 0}}; /* [zring, libzmq][recv, send] */
			for (int i = 0; i < nk; i++) {
				int k = ks[i];
				struct bench_stat a = stat_of(z->v[k], z->n),
						  b = stat_of(q->v[k], q->n);
				double rm = stat_of(rs->v[k], rs->n).med;
				const char *label =
					lat      ? (k ? "p99 / raw floor" : "p50 / raw floor")
					: k == 2 ? "recv CPU / raw"
					: k == 3 ? "send CPU / raw"
						 : "share of raw ceiling";
				/* A smoke run's reference can end inside one tick of
				 * CPU accounting: nothing to divide by. Said, not skipped. */
				if (rm <= 0) {
					printf("  %-20s n/a (the reference's figure is 0: a "
					       "short run)\n",
					       label);
					continue;
				}
				struct bench_stat fa = {a.med / rm, a.min / rm, a.max / rm};
				struct bench_stat fb = {b.med / rm, b.min / rm, b.max / rm};
				double ratio = fa.med / fb.med;
				char za[64], qa[64];
				bool lower = lat || k > 0; /* latency and CPU */
				snprintf(za, sizeof za, "%.3f [%.3f-%.3f]", fa.med, fa.min, fa.max);
				snprintf(qa, sizeof qa, "%.3f [%.3f-%.3f]", fb.med, fb.min, fb.max);
				printf("  %-20s %30s %30s %8.2f  (%s)\n", label, za, qa, ratio,
				       lower ? "<1: zring better" : ">1: zring faster");
				sum_row(sum, sc->name, label, lower ? "lower" : "higher", &fa, &fb,
				        &ratio);
				if (!lat && k > 0) {
					cpu_x[0][k - 2] = fa.med;
					cpu_x[1][k - 2] = fb.med;
					continue; /* one note for both, below */
				}
				if (nnotes < BENCH_NOTES_MAX)
					snprintf(notes[nnotes++], sizeof notes[0],
					         lat ? "%s %s: zring %.2fx, libzmq %.2fx the %s's "
					               "%.4g us"
					             : "%s %s: zring %.0f%%, libzmq %.0f%% of the "
					               "%s's %.4g "
					               "msgs/s",
					         sc->name, lat ? (k ? "p99" : "p50") : "msgs/s",
					         lat ? fa.med : fa.med * 100,
					         lat ? fb.med : fb.med * 100, sc->ref, rm);
			}
			/* Half of libzmq's CPU below 1x here is below what the
			 * kernel alone spends on the same records. */
			bool cpu_known = cpu_x[0][0] > 0 && cpu_x[0][1] > 0 && cpu_x[1][0] > 0 &&
			                 cpu_x[1][1] > 0;
			if (!lat && !cpu_known && nnotes < BENCH_NOTES_MAX)
				snprintf(
					notes[nnotes++], sizeof notes[0],
					"%s CPU per message (recv / send): n/a (a run too short to "
					"measure its CPU)",
					sc->name);
			else if (!lat && nnotes < BENCH_NOTES_MAX)
				snprintf(notes[nnotes++], sizeof notes[0],
				         "%s CPU per message (recv / send): zring %.2fx / %.2fx, "
				         "libzmq %.2fx / %.2fx (half of it %.2fx / %.2fx) of %s "
				         "(%.3g / %.3g s/M msgs)",
				         sc->name, cpu_x[0][0], cpu_x[0][1], cpu_x[1][0],
				         cpu_x[1][1], cpu_x[1][0] / 2, cpu_x[1][1] / 2, sc->ref,
				         stat_of(rs->v[2], rs->n).med,
				         stat_of(rs->v[3], rs->n).med);
		}
		fflush(stdout);
	}
	fclose(runs);
	fclose(sum);

	printf("\nCSV: %s (summary), %s (every run)\n", sum_path, runs_path);
	if (nbars) {
		char sub[128];
		snprintf(sub, sizeof sub, "medians of %d pair%s%s, %s UTC", o.pairs,
		         o.pairs == 1 ? "" : "s",
		         o.smoke   ? " (smoke: tiny counts)"
		         : o.quick ? " (quick)"
		                   : "",
		         stamp);
		if (write_svg(svg_path, bars, nbars, sub) == 0)
			printf("SVG: %s (msgs/s, libzmq = 1)\n", svg_path);
		else
			fprintf(stderr, "zring bench: cannot write %s: %s\n", svg_path,
			        strerror(errno));
	}
	if (failures)
		printf("FAILED: %d run(s) failed (lost or wrong messages, a crash or a hang): see "
		       "stderr\n",
		       failures);
	if (nnotes) {
		printf("Against the raw TCP references of this run:\n");
		for (int k = 0; k < nnotes; k++)
			printf("  %s\n", notes[k]);
	}
	double run_steal = steal_since(&run_cpu0);
	if (run_steal >= 0)
		printf("The hypervisor took %.1f%% of this machine's CPU time during the run "
		       "(steal, /proc/stat): the larger, the noisier the ratios\n",
		       run_steal);
	if (api_ratios[0])
		printf("drop-in/libzmq zmq.h API PUSH/PULL 64 B throughput ratio: %s\n",
		       api_ratios);
	if (have_headline)
		printf("zring/libzmq %s throughput ratio: %.2f\n", BENCH_HEADLINE, headline);
	else
		printf("zring/libzmq %s throughput ratio: n/a%s\n", BENCH_HEADLINE,
		       o.only && !strcasestr(BENCH_HEADLINE, o.only) ? " (not run: --only)" : "");
	return failures ? 1 : 0;
}
