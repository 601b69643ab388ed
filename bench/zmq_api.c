/*
 * bench_zmqapi — a benchmark program written only against zmq.h, in libzmq's
 * own throughput and latency idiom (local_thr / remote_thr, local_lat /
 * remote_lat: zmq_msg_init, zmq_msg_send, zmq_msg_recv loops). It is compiled
 * once, against the system's zmq.h, and linked to the system's libzmq.so.5;
 * `zring bench` runs the same binary twice: as it is (libzmq), and with
 * LD_LIBRARY_PATH at zring's drop-in libzmq.so.5 (compat/).
 *
 *   bench_zmqapi thr-recv pushpull ENDPOINT COUNT SIZE   PULL binds, receives, reports
 *   bench_zmqapi thr-send pushpull ENDPOINT COUNT SIZE   PUSH connects, sends, reports
 *   (pattern pushpull-bytes: the same with zmq_send / zmq_recv of the caller's
 *   buffer, the other common idiom, with no zmq_msg_t per message)
 *   bench_zmqapi lat-rep ENDPOINT COUNT SIZE             REP binds, echoes COUNT+warm-up
 *   bench_zmqapi lat ENDPOINT COUNT SIZE                 REQ connects, COUNT round trips
 *   bench_zmqapi stall-recv ENDPOINT COUNT SIZE          PULL binds and never reads
 *   bench_zmqapi stall-send ENDPOINT COUNT SIZE          PUSH sends until a send times out
 *   bench_zmqapi which                                   the library line alone
 *
 * The protocol with the driver is bench.c's: a binding side prints "READY
 * <endpoint>" first; every side ends with one line "RESULT lib=zmq.h
 * mode=... count=... key=value ..." and exits 0, or prints "FAIL ..." on
 * stderr and exits 1. Every RESULT line ends with which library really ran
 * it, so the driver can refuse a run on the wrong one:
 *
 *   ... zmq_version=4.3.4 zring=0|1 libzmq_path=/the/mapped/libzmq.so.5...
 *
 * zring=1 when zmq_has("zring") says so (the drop-in's marker; libzmq answers
 * 0 for a capability it does not know); libzmq_path is the file of the first
 * libzmq.so mapping in /proc/self/maps (always the last key: a path may hold
 * spaces).
 *
 * Settings as bench.c's: one io thread, SNDHWM = RCVHWM = 1000, LINGER for
 * ever on senders, 0 on receivers, RCVTIMEO 10 s (a missing message fails the
 * run), SIGALRM after 300 s. Throughput is timed on the receiver from the first
 * message to the last; CPU is getrusage(RUSAGE_SELF), io thread included.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#define BENCH_HWM 1000
#define BENCH_WAIT_S 10   /* longest wait for any one message */
#define BENCH_ALARM_S 300 /* a whole run */
#define BENCH_LAT_WARMUP 100
#define BENCH_STALL_MS 500 /* stall-send: a send waiting this long means the peer is full */
#define BENCH_ENDPOINT_MAX 256
#define BENCH_PATH_MAX 4096

struct args {
	const char *mode;
	bool bytes; /* pushpull-bytes: zmq_send / zmq_recv, not zmq_msg_t */
	const char *endpoint;
	unsigned long count;
	size_t size;
};

/* Which library this process really runs on, for every RESULT line. */
static char lib_path[BENCH_PATH_MAX] = "none";

static void
lib_identify(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[BENCH_PATH_MAX + 128];

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/');
		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		const char *base = strrchr(p, '/') + 1;
		if (strncmp(base, "libzmq.so", 9) == 0) {
			snprintf(lib_path, sizeof lib_path, "%s", p);
			break;
		}
	}
	fclose(f);
}

static void
lib_tail(void)
{
	int major, minor, patch;

	zmq_version(&major, &minor, &patch);
	printf(" zmq_version=%d.%d.%d zring=%d libzmq_path=%s\n", major, minor, patch,
	       zmq_has("zring") ? 1 : 0, lib_path);
}

static int
fail(const char *what)
{
	fprintf(stderr, "FAIL zmq.h %s: %s (%s)\n", what, zmq_strerror(zmq_errno()), lib_path);
	return 1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The value of "key:" in /proc/self/status, in kB, or -1. */
static long
status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void
result_head(const struct args *a)
{
	printf("RESULT lib=zmq.h mode=%s size=%zu count=%lu", a->mode, a->size, a->count);
}

static void *
ctx_new(void)
{
	void *ctx = zmq_ctx_new();

	/* The default, said out loud: one io thread like zring's context. */
	if (ctx && zmq_ctx_set(ctx, ZMQ_IO_THREADS, 1) != 0) {
		zmq_ctx_term(ctx);
		return NULL;
	}
	return ctx;
}

static int
set_int(void *s, int opt, int v)
{
	return zmq_setsockopt(s, opt, &v, sizeof v);
}

/* A socket with the common settings, or NULL. */
static void *
sock_open(void *ctx, int type, int linger)
{
	void *s = zmq_socket(ctx, type);

	if (s && (set_int(s, ZMQ_SNDHWM, BENCH_HWM) != 0 ||
	          set_int(s, ZMQ_RCVHWM, BENCH_HWM) != 0 || set_int(s, ZMQ_LINGER, linger) != 0 ||
	          set_int(s, ZMQ_RCVTIMEO, BENCH_WAIT_S * 1000) != 0)) {
		zmq_close(s);
		return NULL;
	}
	return s;
}

/* Binds, then prints "READY <endpoint>" (port 0 resolved). */
static int
bind_and_announce(void *s, const char *ep)
{
	char bound[BENCH_ENDPOINT_MAX];
	size_t len = sizeof bound;

	if (zmq_bind(s, ep) != 0 || zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, bound, &len) != 0)
		return -1;
	bound[len < sizeof bound ? len : sizeof bound - 1] = '\0';
	printf("READY %s\n", bound);
	fflush(stdout);
	return 0;
}

/* local_thr: one zmq_msg_t, zmq_msg_recv into it COUNT times (bytes:
 * zmq_recv into one buffer). */
static int
thr_recv(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	zmq_msg_t msg;
	double t0 = 0, c0 = 0;
	char *buf = malloc(a->size + 1);

	if (!buf)
		return fail("malloc");
	if (!ctx || !(s = sock_open(ctx, ZMQ_PULL, 0)))
		return fail("socket");
	if (bind_and_announce(s, a->endpoint) != 0)
		return fail("bind");
	if (zmq_msg_init(&msg) != 0)
		return fail("zmq_msg_init");
	for (unsigned long i = 0; i < a->count; i++) {
		/* One octet more room than expected: a longer message shows. */
		int rc = a->bytes ? zmq_recv(s, buf, a->size + 1, 0) : zmq_msg_recv(&msg, s, 0);
		if (rc < 0) {
			fprintf(stderr, "FAIL zmq.h thr-recv: got %lu of %lu messages (%s)\n", i,
			        a->count, zmq_strerror(zmq_errno()));
			return 1;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL zmq.h thr-recv: message %lu has %d bytes, want %zu\n",
			        i, rc, a->size);
			return 1;
		}
		if (i == 0) {
			t0 = now_s();
			c0 = cpu_s();
		}
	}
	double t1 = now_s(), c1 = cpu_s();
	zmq_msg_close(&msg);
	free(buf);
	zmq_close(s);
	zmq_ctx_term(ctx);

	double secs = t1 - t0;
	double msgs = a->count > 1 ? (double)(a->count - 1) : 1.0;
	double rate = secs > 0 ? msgs / secs : 0;
	result_head(a);
	printf(" secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f", secs, rate,
	       rate * (double)a->size / 1e6, (c1 - c0) / msgs * 1e6);
	lib_tail();
	return 0;
}

/* remote_thr: zmq_msg_init_size, fill, zmq_msg_send, COUNT times (bytes:
 * fill one buffer, zmq_send it). */
static int
thr_send(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	zmq_msg_t msg;
	char *buf = malloc(a->size ? a->size : 1);

	if (!buf)
		return fail("malloc");
	if (!ctx || !(s = sock_open(ctx, ZMQ_PUSH, -1)))
		return fail("socket");
	if (zmq_connect(s, a->endpoint) != 0)
		return fail("connect");
	double t0 = now_s(), c0 = cpu_s();
	for (unsigned long i = 0; i < a->count; i++) {
		if (a->bytes) {
			memset(buf, 'z', a->size);
			if (zmq_send(s, buf, a->size, 0) < 0)
				return fail("zmq_send");
			continue;
		}
		if (zmq_msg_init_size(&msg, a->size) != 0)
			return fail("zmq_msg_init_size");
		memset(zmq_msg_data(&msg), 'z', a->size);
		if (zmq_msg_send(&msg, s, 0) < 0)
			return fail("zmq_msg_send");
	}
	zmq_close(s);
	zmq_ctx_term(ctx); /* LINGER -1: returns when everything is out */
	free(buf);
	double secs = now_s() - t0, cpu = cpu_s() - c0;
	double msgs = (double)a->count;
	result_head(a);
	printf(" secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f", secs,
	       secs > 0 ? msgs / secs : 0, secs > 0 ? msgs * (double)a->size / secs / 1e6 : 0,
	       cpu / msgs * 1e6);
	lib_tail();
	return 0;
}

/* local_lat: receive into a message, send that message back. */
static int
lat_rep(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	zmq_msg_t msg;
	unsigned long n = a->count + BENCH_LAT_WARMUP;

	if (!ctx || !(s = sock_open(ctx, ZMQ_REP, -1)))
		return fail("socket");
	if (bind_and_announce(s, a->endpoint) != 0)
		return fail("bind");
	if (zmq_msg_init(&msg) != 0)
		return fail("zmq_msg_init");
	for (unsigned long i = 0; i < n; i++) {
		if (zmq_msg_recv(&msg, s, 0) < 0) {
			fprintf(stderr, "FAIL zmq.h lat-rep: got %lu of %lu requests (%s)\n", i, n,
			        zmq_strerror(zmq_errno()));
			return 1;
		}
		if (zmq_msg_size(&msg) != a->size) {
			fprintf(stderr, "FAIL zmq.h lat-rep: request %lu has %zu bytes, want %zu\n",
			        i, zmq_msg_size(&msg), a->size);
			return 1;
		}
		if (zmq_msg_send(&msg, s, 0) < 0)
			return fail("reply");
	}
	zmq_msg_close(&msg);
	zmq_close(s);
	zmq_ctx_term(ctx);
	result_head(a);
	printf(" replies=%lu", n);
	lib_tail();
	return 0;
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* The p-th percentile of sorted v[0..n), nearest rank. */
static double
pct(const double *v, unsigned long n, double p)
{
	unsigned long k = (unsigned long)(p / 100.0 * (double)n + 0.999999);

	return v[k ? (k > n ? n : k) - 1 : 0];
}

/* remote_lat: a message of SIZE, sent and received back, COUNT+warm-up times. */
static int
lat_req(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	zmq_msg_t msg;
	double *rtt = calloc(a->count, sizeof *rtt), c0 = 0;
	unsigned long n = a->count + BENCH_LAT_WARMUP;

	if (!rtt) {
		fprintf(stderr, "FAIL zmq.h lat: out of memory\n");
		return 1;
	}
	if (!ctx || !(s = sock_open(ctx, ZMQ_REQ, -1)))
		return fail("socket");
	if (zmq_connect(s, a->endpoint) != 0)
		return fail("connect");
	if (zmq_msg_init_size(&msg, a->size) != 0)
		return fail("zmq_msg_init_size");
	memset(zmq_msg_data(&msg), 'q', a->size);
	for (unsigned long i = 0; i < n; i++) {
		if (i == BENCH_LAT_WARMUP)
			c0 = cpu_s();
		double t = now_s();
		if (zmq_msg_send(&msg, s, 0) < 0)
			return fail("request");
		if (zmq_msg_recv(&msg, s, 0) < 0) {
			fprintf(stderr, "FAIL zmq.h lat: got %lu of %lu replies (%s)\n", i, n,
			        zmq_strerror(zmq_errno()));
			return 1;
		}
		if (zmq_msg_size(&msg) != a->size) {
			fprintf(stderr, "FAIL zmq.h lat: reply %lu has %zu bytes, want %zu\n", i,
			        zmq_msg_size(&msg), a->size);
			return 1;
		}
		if (i >= BENCH_LAT_WARMUP)
			rtt[i - BENCH_LAT_WARMUP] = (now_s() - t) * 1e6;
	}
	double cpu = cpu_s() - c0, sum = 0;
	zmq_msg_close(&msg);
	zmq_close(s);
	zmq_ctx_term(ctx);
	for (unsigned long i = 0; i < a->count; i++)
		sum += rtt[i];
	qsort(rtt, a->count, sizeof *rtt, cmp_double);
	result_head(a);
	printf(" p50_us=%.2f p99_us=%.2f p999_us=%.2f mean_us=%.2f cpu_s_per_M=%.4f",
	       pct(rtt, a->count, 50), pct(rtt, a->count, 99), pct(rtt, a->count, 99.9),
	       sum / (double)a->count, cpu / (double)a->count * 1e6);
	lib_tail();
	free(rtt);
	return 0;
}

/*
 * Stalled receiver: a PULL binds and its application never reads, until the
 * driver says (a line on stdin, after the sender gave up). Its peak RSS then
 * is what the library let pile up for it.
 */
static int
stall_recv(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	char line[64];

	if (!ctx || !(s = sock_open(ctx, ZMQ_PULL, 0)))
		return fail("socket");
	if (bind_and_announce(s, a->endpoint) != 0)
		return fail("bind");
	long rss0 = status_kb("VmRSS");
	if (!fgets(line, sizeof line, stdin))
		line[0] = '\0';
	long hwm = status_kb("VmHWM"), rss = status_kb("VmRSS");
	zmq_close(s);
	zmq_ctx_term(ctx);
	result_head(a);
	printf(" peak_rss_mb=%.2f rss_mb=%.2f growth_mb=%.2f", (double)hwm / 1024,
	       (double)rss / 1024, (double)(hwm - rss0) / 1024);
	lib_tail();
	return 0;
}

/* Its sender: up to COUNT messages, stopping at the first send (after the
 * first message) that waits BENCH_STALL_MS. */
static int
stall_send(const struct args *a)
{
	void *ctx = ctx_new(), *s;
	zmq_msg_t msg;
	unsigned long i;
	double t0 = now_s();

	/* LINGER 0: what the stalled peer never takes is dropped at the end. */
	if (!ctx || !(s = sock_open(ctx, ZMQ_PUSH, 0)) ||
	    set_int(s, ZMQ_SNDTIMEO, BENCH_STALL_MS) != 0)
		return fail("socket");
	if (zmq_connect(s, a->endpoint) != 0)
		return fail("connect");
	for (i = 0; i < a->count; i++) {
		if (zmq_msg_init_size(&msg, a->size) != 0)
			return fail("zmq_msg_init_size");
		memset(zmq_msg_data(&msg), 'z', a->size);
		int rc = zmq_msg_send(&msg, s, 0);
		if (rc < 0) {
			int err = zmq_errno();
			zmq_msg_close(&msg);
			/* The first may wait for the connection (a loaded machine). */
			if (err == EAGAIN && i == 0 && now_s() - t0 < BENCH_WAIT_S) {
				i--;
				continue;
			}
			if (err == EAGAIN && i > 0)
				break;
			errno = err;
			return fail("zmq_msg_send");
		}
	}
	/* COUNT sent without a stall (a short run): deliver them, as bench.c. */
	if (i == a->count && set_int(s, ZMQ_LINGER, BENCH_WAIT_S * 1000) != 0)
		return fail("linger");
	long hwm = status_kb("VmHWM");
	zmq_close(s);
	zmq_ctx_term(ctx);
	result_head(a);
	printf(" sent=%lu peak_rss_mb=%.2f", i, (double)hwm / 1024);
	lib_tail();
	return 0;
}

static int
parse_ulong(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return (errno || end == s || *end || s[0] == '-') ? -1 : 0;
}

static int
usage(const char *prog)
{
	fprintf(stderr,
	        "usage: %s thr-recv|thr-send pushpull|pushpull-bytes ENDPOINT COUNT SIZE\n"
	        "       %s lat-rep|lat|stall-recv|stall-send ENDPOINT COUNT SIZE\n"
	        "       %s which\n",
	        prog, prog, prog);
	return 2;
}

static const struct {
	const char *mode;
	int (*run)(const struct args *a);
} modes[] = {
	{"thr-recv", thr_recv}, {"thr-send", thr_send},     {"lat-rep", lat_rep},
	{"lat", lat_req},       {"stall-recv", stall_recv}, {"stall-send", stall_send},
};

int
main(int argc, char **argv)
{
	struct args a = {0};
	unsigned long size;
	size_t m;
	int i = 2;

	lib_identify();
	if (argc == 2 && strcmp(argv[1], "which") == 0) {
		printf("LIBZMQ");
		lib_tail();
		return 0;
	}
	if (argc < 5)
		return usage(argv[0]);
	a.mode = argv[1];
	for (m = 0; m < sizeof modes / sizeof modes[0]; m++)
		if (strcmp(a.mode, modes[m].mode) == 0)
			break;
	if (m == sizeof modes / sizeof modes[0])
		return usage(argv[0]);
	bool thr = strncmp(a.mode, "thr-", 4) == 0;
	if (argc != (thr ? 6 : 5))
		return usage(argv[0]);
	if (thr) {
		a.bytes = strcmp(argv[i], "pushpull-bytes") == 0;
		if (!a.bytes && strcmp(argv[i], "pushpull") != 0)
			return usage(argv[0]);
		i++;
	}
	a.endpoint = argv[i++];
	if (parse_ulong(argv[i++], &a.count) < 0 || a.count == 0 ||
	    parse_ulong(argv[i++], &size) < 0 || size > (1ul << 30))
		return usage(argv[0]);
	a.size = (size_t)size;
	alarm(BENCH_ALARM_S);
	return modes[m].run(&a);
}
