/*
 * bench — one benchmark program, built twice: bench_zr (zring) and bench_zmq
 * (libzmq, with -DBENCH_LIBZMQ). Both builds run the same code; only the
 * handful of bench_sock_* wrappers below differ, so the two programs have the
 * same shape, the same settings and the same copies per message.
 *
 *   bench_X thr-recv PATTERN ENDPOINT COUNT SIZE   bind, receive, report
 *   bench_X thr-send PATTERN ENDPOINT COUNT SIZE [SERVERKEY]   connect, send, report
 *   bench_X lat-rep ENDPOINT COUNT SIZE            bind, echo COUNT+warm-up requests
 *   bench_X lat ENDPOINT COUNT SIZE                connect, COUNT round trips, report
 *
 * PATTERN is "pushpull" (PULL binds, PUSH connects) or "pubsub" (SUB binds
 * with an empty subscription, a lossless publisher connects and waits for
 * that subscription before it sends: zring's XPUB with ZR_PUB_POLICY =
 * ZR_PUB_BLOCK, libzmq's XPUB with ZMQ_XPUB_NODROP; both make a blocking send
 * wait for a full subscriber rather than drop), or "pushpull-curve": PUSH/PULL
 * under CURVE, the receiver the server, the sender the client, each with a
 * key pair made for the run (zr_curve_keypair / zmq_curve_keypair). Both
 * check that the socket's mechanism option reads CURVE before the first
 * message, so neither library can quietly run in the clear.
 *
 * A binding side prints "READY <endpoint>" (the bound endpoint, so port 0
 * works) on stdout first; a CURVE receiver prints "READY <endpoint> <key>",
 * its public key in Z85, which the sender takes as SERVERKEY. Every side ends with one line
 *   RESULT lib=... mode=... pattern=... size=... count=... key=value ...
 * and exits 0, or prints "FAIL ..." on stderr and exits 1. The receiver
 * counts exactly: a missing message (it waits at most BENCH_WAIT_S for each)
 * or one of the wrong size fails the run. SIGALRM after BENCH_ALARM_S ends a
 * run that hangs.
 *
 * Settings, equal on both sides: one io thread, SNDHWM = RCVHWM = 1000,
 * kernel default socket buffers, LINGER for ever on senders (closing waits
 * until everything is out), 0 on receivers.
 *
 * Numbers: throughput is timed on the receiver from the first message to the
 * last (msgs/s = (COUNT - 1) / elapsed); CPU is getrusage(RUSAGE_SELF)
 * user+sys of the whole process (io thread included) over the same span on
 * the receiver, and from the first send to the end of the context on the
 * sender, scaled to seconds per million messages.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BENCH_HWM 1000
#define BENCH_WAIT_S 10   /* longest wait for any one message */
#define BENCH_ALARM_S 300 /* a whole run */
#define BENCH_LAT_WARMUP 100
#define BENCH_ENDPOINT_MAX 256

#ifdef BENCH_LIBZMQ
/* ---- libzmq ------------------------------------------------------------ */
#include <zmq.h>

#define BENCH_LIB "libzmq"

struct bench_ctx {
	void *ctx;
};
struct bench_sock {
	void *s;
};

enum {
	B_PUSH = ZMQ_PUSH,
	B_PULL = ZMQ_PULL,
	B_XPUB = ZMQ_XPUB,
	B_SUB = ZMQ_SUB,
	B_REQ = ZMQ_REQ,
	B_REP = ZMQ_REP
};

static int
bench_ctx_new(struct bench_ctx *c)
{
	c->ctx = zmq_ctx_new();
	if (!c->ctx)
		return -errno;
	/* The default, said out loud: one io thread like zring's context. */
	return zmq_ctx_set(c->ctx, ZMQ_IO_THREADS, 1) == 0 ? 0 : -errno;
}

static void
bench_ctx_free(struct bench_ctx *c)
{
	zmq_ctx_term(c->ctx);
}

static int
bench_sock_open(struct bench_ctx *c, int type, struct bench_sock *s)
{
	s->s = zmq_socket(c->ctx, type);
	return s->s ? 0 : -errno;
}

static void
bench_sock_close(struct bench_sock *s)
{
	zmq_close(s->s);
}

static int
bench_sock_setopt(struct bench_sock *s, int opt, const void *v, size_t len)
{
	return zmq_setsockopt(s->s, opt, v, len) == 0 ? 0 : -errno;
}

static int
bench_sock_getopt(struct bench_sock *s, int opt, void *v, size_t *len)
{
	return zmq_getsockopt(s->s, opt, v, len) == 0 ? 0 : -errno;
}

static int
bench_bind(struct bench_sock *s, const char *ep)
{
	return zmq_bind(s->s, ep) == 0 ? 0 : -errno;
}

static int
bench_connect(struct bench_sock *s, const char *ep)
{
	return zmq_connect(s->s, ep) == 0 ? 0 : -errno;
}

static int
bench_send(struct bench_sock *s, const void *buf, size_t len)
{
	int rc;

	do
		rc = zmq_send(s->s, buf, len, 0);
	while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : 0;
}

/* Returns the message's full length, or -errno (-EAGAIN: timed out). */
static long
bench_recv(struct bench_sock *s, void *buf, size_t cap)
{
	int rc;

	do
		rc = zmq_recv(s->s, buf, cap, 0);
	while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : rc;
}

/* The publisher: lossless XPUB (a blocking send waits for room). */
static int
bench_pub_lossless(struct bench_sock *s)
{
	int one = 1;

	return bench_sock_setopt(s, ZMQ_XPUB_NODROP, &one, sizeof one);
}

/* A fresh CURVE key pair as Z85 text (40 characters and a NUL each). */
static int
bench_curve_keypair(char *public_z85, char *secret_z85)
{
	if (!zmq_has("curve"))
		return -ENOTSUP;
	return zmq_curve_keypair(public_z85, secret_z85) == 0 ? 0 : -errno;
}

#define B_SNDHWM ZMQ_SNDHWM
#define B_RCVHWM ZMQ_RCVHWM
#define B_LINGER ZMQ_LINGER
#define B_RCVTIMEO ZMQ_RCVTIMEO
#define B_SUBSCRIBE ZMQ_SUBSCRIBE
#define B_LAST_ENDPOINT ZMQ_LAST_ENDPOINT
#define B_MECHANISM ZMQ_MECHANISM
#define B_MECH_CURVE ZMQ_CURVE
#define B_CURVE_SERVER ZMQ_CURVE_SERVER
#define B_CURVE_PUBLICKEY ZMQ_CURVE_PUBLICKEY
#define B_CURVE_SECRETKEY ZMQ_CURVE_SECRETKEY
#define B_CURVE_SERVERKEY ZMQ_CURVE_SERVERKEY

#else
/* ---- zring ------------------------------------------------------------- */
#include <zring.h>

#define BENCH_LIB "zring"

struct bench_ctx {
	zr_ctx *ctx;
};
struct bench_sock {
	zr_socket *s;
};

enum {
	B_PUSH = ZR_PUSH,
	B_PULL = ZR_PULL,
	B_XPUB = ZR_XPUB,
	B_SUB = ZR_SUB,
	B_REQ = ZR_REQ,
	B_REP = ZR_REP
};

static int
bench_ctx_new(struct bench_ctx *c)
{
	return zr_ctx_new(&c->ctx);
}

static void
bench_ctx_free(struct bench_ctx *c)
{
	zr_ctx_free(c->ctx);
}

static int
bench_sock_open(struct bench_ctx *c, int type, struct bench_sock *s)
{
	return zr_socket_open(c->ctx, type, &s->s);
}

static void
bench_sock_close(struct bench_sock *s)
{
	zr_socket_close(s->s);
}

static int
bench_sock_setopt(struct bench_sock *s, int opt, const void *v, size_t len)
{
	return zr_setsockopt(s->s, opt, v, len);
}

static int
bench_sock_getopt(struct bench_sock *s, int opt, void *v, size_t *len)
{
	return zr_getsockopt(s->s, opt, v, len);
}

static int
bench_bind(struct bench_sock *s, const char *ep)
{
	return zr_bind(s->s, ep);
}

static int
bench_connect(struct bench_sock *s, const char *ep)
{
	return zr_connect(s->s, ep);
}

static int
bench_send(struct bench_sock *s, const void *buf, size_t len)
{
	int rc = zr_send_bytes(s->s, buf, len, 0);

	return rc < 0 ? rc : 0;
}

static long
bench_recv(struct bench_sock *s, void *buf, size_t cap)
{
	return zr_recv_bytes(s->s, buf, cap, 0);
}

static int
bench_pub_lossless(struct bench_sock *s)
{
	int policy = ZR_PUB_BLOCK;

	return bench_sock_setopt(s, ZR_PUB_POLICY, &policy, sizeof policy);
}

static int
bench_curve_keypair(char *public_z85, char *secret_z85)
{
	return zr_curve_keypair(public_z85, secret_z85);
}

#define B_SNDHWM ZR_SNDHWM
#define B_RCVHWM ZR_RCVHWM
#define B_LINGER ZR_LINGER
#define B_RCVTIMEO ZR_RCVTIMEO
#define B_SUBSCRIBE ZR_SUBSCRIBE
#define B_LAST_ENDPOINT ZR_LAST_ENDPOINT
#define B_MECHANISM ZR_MECHANISM
#define B_MECH_CURVE ZR_MECH_CURVE
#define B_CURVE_SERVER ZR_CURVE_SERVER
#define B_CURVE_PUBLICKEY ZR_CURVE_PUBLICKEY
#define B_CURVE_SECRETKEY ZR_CURVE_SECRETKEY
#define B_CURVE_SERVERKEY ZR_CURVE_SERVERKEY
#endif

/* ---- common ------------------------------------------------------------ */

struct bench_args {
	const char *mode;
	const char *pattern; /* "pushpull", "pushpull-curve", "pubsub", "reqrep" */
	const char *endpoint;
	unsigned long count;
	size_t size;
	bool curve;            /* pushpull-curve */
	const char *serverkey; /* thr-send pushpull-curve: the receiver's public key, Z85 */
};

#define BENCH_Z85_KEY 40 /* characters in a Z85 CURVE key */

static int
fail(const char *what, long rc)
{
	fprintf(stderr, "FAIL %s %s: %s (%ld)\n", BENCH_LIB, what, rc < 0 ? strerror((int)-rc) : "",
	        rc);
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

static int
set_int(struct bench_sock *s, int opt, int v)
{
	return bench_sock_setopt(s, opt, &v, sizeof v);
}

/* Opens a socket with the common settings. */
static int
sock_open(struct bench_ctx *c, int type, int linger, struct bench_sock *s)
{
	int rc = bench_sock_open(c, type, s);

	if (rc == 0)
		rc = set_int(s, B_SNDHWM, BENCH_HWM);
	if (rc == 0)
		rc = set_int(s, B_RCVHWM, BENCH_HWM);
	if (rc == 0)
		rc = set_int(s, B_LINGER, linger);
	if (rc == 0)
		rc = set_int(s, B_RCVTIMEO, BENCH_WAIT_S * 1000);
	return rc;
}

/*
 * Both libraries must really encrypt: the mechanism option, read back after
 * the keys are set and the socket is bound or connected, must say CURVE.
 */
static int
require_curve(struct bench_sock *s)
{
	int mech = -1;
	size_t len = sizeof mech;
	int rc = bench_sock_getopt(s, B_MECHANISM, &mech, &len);

	if (rc < 0)
		return fail("reading the mechanism", rc);
	if (len != sizeof mech || mech != B_MECH_CURVE) {
		fprintf(stderr, "FAIL %s: the socket's mechanism is %d, not CURVE (%d)\n",
		        BENCH_LIB, mech, B_MECH_CURVE);
		return 1;
	}
	return 0;
}

/* The receiver as CURVE server with a fresh key pair; its public key into pub. */
static int
curve_server_setup(struct bench_sock *s, char pub[BENCH_Z85_KEY + 1])
{
	char sec[BENCH_Z85_KEY + 1];
	int rc = bench_curve_keypair(pub, sec);

	if (rc == 0)
		rc = set_int(s, B_CURVE_SERVER, 1);
	if (rc == 0)
		rc = bench_sock_setopt(s, B_CURVE_SECRETKEY, sec, BENCH_Z85_KEY);
	if (rc == 0)
		rc = bench_sock_setopt(s, B_CURVE_PUBLICKEY, pub, BENCH_Z85_KEY);
	return rc;
}

/* The sender as CURVE client of the server with that key, with a fresh key pair. */
static int
curve_client_setup(struct bench_sock *s, const char *serverkey)
{
	char pub[BENCH_Z85_KEY + 1], sec[BENCH_Z85_KEY + 1];
	int rc = bench_curve_keypair(pub, sec);

	if (rc == 0)
		rc = bench_sock_setopt(s, B_CURVE_PUBLICKEY, pub, BENCH_Z85_KEY);
	if (rc == 0)
		rc = bench_sock_setopt(s, B_CURVE_SECRETKEY, sec, BENCH_Z85_KEY);
	if (rc == 0)
		rc = bench_sock_setopt(s, B_CURVE_SERVERKEY, serverkey, BENCH_Z85_KEY);
	return rc;
}

/* Binds, then prints "READY <endpoint>", or "READY <endpoint> <key>" when
 * key is not NULL (a CURVE server's public key, for the sender). */
static int
bind_and_announce(struct bench_sock *s, const char *ep, const char *key)
{
	char bound[BENCH_ENDPOINT_MAX];
	size_t len = sizeof bound;
	int rc = bench_bind(s, ep);

	if (rc < 0)
		return rc;
	rc = bench_sock_getopt(s, B_LAST_ENDPOINT, bound, &len);
	if (rc < 0)
		return rc;
	bound[len < sizeof bound ? len : sizeof bound - 1] = '\0';
	if (key)
		printf("READY %s %s\n", bound, key);
	else
		printf("READY %s\n", bound);
	fflush(stdout);
	return 0;
}

static void
result_head(const struct bench_args *a)
{
	printf("RESULT lib=%s mode=%s pattern=%s size=%zu count=%lu", BENCH_LIB, a->mode,
	       a->pattern, a->size, a->count);
}

static int
thr_recv(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	bool pubsub = strcmp(a->pattern, "pubsub") == 0;
	char *buf = malloc(a->size + 1);
	double t0 = 0, c0 = 0, t1, c1;
	unsigned long i;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, pubsub ? B_SUB : B_PULL, 0, &s)) < 0)
		return fail("socket", rc);
	if (pubsub && (rc = bench_sock_setopt(&s, B_SUBSCRIBE, "", 0)) < 0)
		return fail("subscribe", rc);
	char key[BENCH_Z85_KEY + 1];
	if (a->curve && (rc = curve_server_setup(&s, key)) < 0)
		return fail("CURVE server keys", rc);
	if ((rc = bind_and_announce(&s, a->endpoint, a->curve ? key : NULL)) < 0)
		return fail("bind", rc);
	if (a->curve && require_curve(&s) != 0)
		return 1;
	for (i = 0; i < a->count; i++) {
		/* One byte more room than expected: a longer message shows. */
		rc = bench_recv(&s, buf, a->size + 1);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s thr-recv: got %lu of %lu messages (%s)\n",
			        BENCH_LIB, i, a->count, strerror((int)-rc));
			return 1;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL %s thr-recv: message %lu has %ld bytes, want %zu\n",
			        BENCH_LIB, i, rc, a->size);
			return 1;
		}
		if (i == 0) {
			t0 = now_s();
			c0 = cpu_s();
		}
	}
	t1 = now_s();
	c1 = cpu_s();
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);

	double secs = t1 - t0;
	double msgs = a->count > 1 ? (double)(a->count - 1) : 1.0;
	double rate = secs > 0 ? msgs / secs : 0;
	result_head(a);
	printf(" secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f\n", secs, rate,
	       rate * (double)a->size / 1e6, (c1 - c0) / msgs * 1e6);
	return 0;
}

static int
thr_send(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	bool pubsub = strcmp(a->pattern, "pubsub") == 0;
	char *buf = malloc(a->size ? a->size : 1);
	char sub[64];
	double t0, c0;
	unsigned long i;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	memset(buf, 'z', a->size ? a->size : 1);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, pubsub ? B_XPUB : B_PUSH, -1, &s)) < 0)
		return fail("socket", rc);
	if (pubsub && (rc = bench_pub_lossless(&s)) < 0)
		return fail("lossless publisher", rc);
	if (a->curve && (rc = curve_client_setup(&s, a->serverkey)) < 0)
		return fail("CURVE client keys", rc);
	if ((rc = bench_connect(&s, a->endpoint)) < 0)
		return fail("connect", rc);
	if (a->curve && require_curve(&s) != 0)
		return 1;
	if (pubsub) {
		/* The subscriber's subscription: from here on nothing is dropped. */
		rc = bench_recv(&s, sub, sizeof sub);
		if (rc < 0)
			return fail("waiting for the subscription", rc);
		if (rc != 1 || sub[0] != 1)
			return fail("subscription is not \\x01 (subscribe to all)", rc);
	}
	t0 = now_s();
	c0 = cpu_s();
	for (i = 0; i < a->count; i++) {
		rc = bench_send(&s, buf, a->size);
		if (rc < 0)
			return fail("send", rc);
	}
	bench_sock_close(&s);
	bench_ctx_free(&c); /* LINGER -1: returns when everything is out */
	double secs = now_s() - t0;
	double cpu = cpu_s() - c0;
	free(buf);

	double msgs = (double)a->count;
	result_head(a);
	printf(" secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f\n", secs,
	       secs > 0 ? msgs / secs : 0, secs > 0 ? msgs * (double)a->size / secs / 1e6 : 0,
	       cpu / msgs * 1e6);
	return 0;
}

static int
lat_rep(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size + 1);
	unsigned long i, n = a->count + BENCH_LAT_WARMUP;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, B_REP, -1, &s)) < 0)
		return fail("socket", rc);
	if ((rc = bind_and_announce(&s, a->endpoint, NULL)) < 0)
		return fail("bind", rc);
	for (i = 0; i < n; i++) {
		rc = bench_recv(&s, buf, a->size + 1);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s lat-rep: got %lu of %lu requests (%s)\n",
			        BENCH_LIB, i, n, strerror((int)-rc));
			return 1;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL %s lat-rep: request %lu has %ld bytes, want %zu\n",
			        BENCH_LIB, i, rc, a->size);
			return 1;
		}
		if ((rc = bench_send(&s, buf, a->size)) < 0)
			return fail("reply", rc);
	}
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);
	result_head(a);
	printf(" replies=%lu\n", n);
	return 0;
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double
pct(const double *v, unsigned long n, double p)
{
	unsigned long k = (unsigned long)(p / 100.0 * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	return v[(k > n ? n : k) - 1];
}

static int
lat_req(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size + 1);
	double *rtt = calloc(a->count ? a->count : 1, sizeof *rtt);
	double c0 = 0, cpu;
	unsigned long i, n = a->count + BENCH_LAT_WARMUP;
	long rc;

	if (!buf || !rtt)
		return fail("malloc", -ENOMEM);
	memset(buf, 'q', a->size + 1);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, B_REQ, -1, &s)) < 0)
		return fail("socket", rc);
	if ((rc = bench_connect(&s, a->endpoint)) < 0)
		return fail("connect", rc);
	for (i = 0; i < n; i++) {
		if (i == BENCH_LAT_WARMUP)
			c0 = cpu_s();
		double t = now_s();
		if ((rc = bench_send(&s, buf, a->size)) < 0)
			return fail("request", rc);
		rc = bench_recv(&s, buf, a->size + 1);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s lat: got %lu of %lu replies (%s)\n", BENCH_LIB, i,
			        n, strerror((int)-rc));
			return 1;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL %s lat: reply %lu has %ld bytes, want %zu\n",
			        BENCH_LIB, i, rc, a->size);
			return 1;
		}
		if (i >= BENCH_LAT_WARMUP)
			rtt[i - BENCH_LAT_WARMUP] = (now_s() - t) * 1e6;
	}
	cpu = cpu_s() - c0;
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);

	unsigned long m = a->count;
	double sum = 0;
	for (i = 0; i < m; i++)
		sum += rtt[i];
	qsort(rtt, m, sizeof *rtt, cmp_double);
	result_head(a);
	printf(" p50_us=%.2f p99_us=%.2f p999_us=%.2f mean_us=%.2f cpu_s_per_M=%.4f\n",
	       m ? pct(rtt, m, 50) : 0, m ? pct(rtt, m, 99) : 0, m ? pct(rtt, m, 99.9) : 0,
	       m ? sum / (double)m : 0, m ? cpu / (double)m * 1e6 : 0);
	free(rtt);
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
	        "usage: %s thr-recv pushpull|pushpull-curve|pubsub ENDPOINT COUNT SIZE\n"
	        "       %s thr-send pushpull|pubsub ENDPOINT COUNT SIZE\n"
	        "       %s thr-send pushpull-curve ENDPOINT COUNT SIZE SERVERKEY\n"
	        "       %s lat-rep|lat ENDPOINT COUNT SIZE\n",
	        prog, prog, prog, prog);
	return 2;
}

int
main(int argc, char **argv)
{
	struct bench_args a = {0};
	unsigned long size;
	int i = 2;

	if (argc < 2)
		return usage(argv[0]);
	a.mode = argv[1];
	bool thr = strcmp(a.mode, "thr-recv") == 0 || strcmp(a.mode, "thr-send") == 0;
	bool lat = strcmp(a.mode, "lat-rep") == 0 || strcmp(a.mode, "lat") == 0;
	if (!thr && !lat)
		return usage(argv[0]);
	if (argc < 5)
		return usage(argv[0]);
	a.pattern = thr ? argv[i++] : "reqrep";
	a.curve = thr && strcmp(a.pattern, "pushpull-curve") == 0;
	if (thr && !a.curve && strcmp(a.pattern, "pushpull") != 0 &&
	    strcmp(a.pattern, "pubsub") != 0)
		return usage(argv[0]);
	/* The CURVE sender takes the server's key as a last argument. */
	bool with_key = a.curve && strcmp(a.mode, "thr-send") == 0;
	if (argc != (thr ? 6 : 5) + (with_key ? 1 : 0))
		return usage(argv[0]);
	if (with_key) {
		a.serverkey = argv[argc - 1];
		if (strlen(a.serverkey) != BENCH_Z85_KEY)
			return usage(argv[0]);
	}
	a.endpoint = argv[i++];
	if (parse_ulong(argv[i++], &a.count) < 0 || a.count == 0 ||
	    parse_ulong(argv[i++], &size) < 0 || size > (1ul << 30))
		return usage(argv[0]);
	a.size = (size_t)size;
	alarm(BENCH_ALARM_S);

	if (strcmp(a.mode, "thr-recv") == 0)
		return thr_recv(&a);
	if (strcmp(a.mode, "thr-send") == 0)
		return thr_send(&a);
	if (strcmp(a.mode, "lat-rep") == 0)
		return lat_rep(&a);
	return lat_req(&a);
}
