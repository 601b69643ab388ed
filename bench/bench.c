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
 *   bench_X lat-router / lat-dealer ...            the same with ROUTER (echoes [id, body]) and DEALER
 *   bench_X busy-lat-rep / busy-lat ...           lat-rep / lat with ZR_BUSY_POLL set on
 *                                                  ZR_CTX_CALLER_IO contexts (zring; libzmq
 *                                                  has no such mode: its plain REQ/REP)
 *   bench_X cio-lat-rep / cio-lat ...             lat-rep / lat on ZR_CTX_CALLER_IO contexts
 *                                                  (zring; libzmq: its plain REQ/REP)
 *   bench_X stall-recv / stall-send ENDPOINT COUNT SIZE   stalled receiver's peak RSS
 *   bench_X idle-recv / idle-send ENDPOINT COUNT SIZE     RSS per idle connection
 *
 * PATTERN is "pushpull" (PULL binds, PUSH connects) or "pubsub" (SUB binds
 * with an empty subscription, a lossless publisher connects and waits for
 * that subscription before it sends: zring's XPUB with ZR_PUB_POLICY =
 * ZR_PUB_BLOCK, libzmq's XPUB with ZMQ_XPUB_NODROP; both make a blocking send
 * wait for a full subscriber rather than drop), or "pushpull-curve": PUSH/PULL
 * under CURVE, the receiver the server, the sender the client, each with a
 * key pair made for the run (zr_curve_keypair / zmq_curve_keypair). Both
 * check that the socket's mechanism option reads CURVE before the first
 * message, so neither library can quietly run in the clear. "pushpull-tls":
 * PUSH/PULL with TLSDIR (cert.pem, key.pem) as a last argument on both sides;
 * bench_zr runs it on a tls:// endpoint (the receiver serves the certificate,
 * the sender verifies it), bench_zmq plainly on the tcp:// one it is given
 * (the driver runs stunnel between them: bench/README.md).
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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BENCH_HWM 1000
#define BENCH_WAIT_S 10   /* longest wait for any one message */
#define BENCH_ALARM_S 300 /* a whole run */
#define BENCH_LAT_WARMUP 100
#define BENCH_BUSY_POLL_US 200 /* busy-lat, busy-lat-rep: ZR_BUSY_POLL on both sides */
#define BENCH_ENDPOINT_MAX 256
#define BENCH_SUBS_MAX 8      /* "pubsub8" */
#define BENCH_STALL_MS 500    /* stall-send: a send waiting this long means the peer is full */
#define BENCH_IDLE_WAIT_S 60  /* idle-recv: many connections take a while */
#define BENCH_FANOUT_MAX 4096 /* "fanoutN": subscribers in one receiving process */
#define BENCH_TOPIC_SUBS 10   /* "topicsT": subscribers sharing the T topics */
#define BENCH_TOPIC_LEN 6     /* "t%05u": fixed width, so no topic prefixes another */
#define BENCH_TOPIC_MAX 49999 /* 2T - 1 still has 5 digits */
#define BENCH_TOPIC_BUF 8
#define BENCH_TOPIC_STRIDE 7919ul /* prime: message i's topic walks all 2T of them */
#define BENCH_RESCAN_MS 1000      /* fan-out receiver: look at every socket this often */
#define BENCH_RAW_BATCH 65536     /* raw-thr-send: bytes per write */
#define BENCH_RAW_BIG 1048576     /* ... for records of BENCH_RAW_LARGE and more */
#define BENCH_RAW_LARGE 8192      /* raw-thr-*: a record this large goes by BENCH_RAW_BIG */
#define BENCH_RAW_RBUF 262144     /* raw-thr-recv: bytes per read at most */

/* A ROUTER peer's routing id. */
struct bench_rid {
	unsigned char id[255];
	size_t len;
};

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
	B_REP = ZMQ_REP,
	B_DEALER = ZMQ_DEALER,
	B_ROUTER = ZMQ_ROUTER
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

/* libzmq has no caller-io mode: its plain context. */
static int
bench_ctx_new_caller_io(struct bench_ctx *c)
{
	return bench_ctx_new(c);
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

/*
 * ROUTER: receives a [routing id, body] message, copies the body into buf
 * (truncated to cap) and returns its full length, -EPROTO if the message is
 * not two frames, or -errno.
 */
static long
bench_recv_routed(struct bench_sock *s, void *buf, size_t cap, struct bench_rid *rid)
{
	unsigned char id[256];
	int more = 0;
	size_t len = sizeof more;
	long rc = bench_recv(s, id, sizeof id);

	if (rc < 0)
		return rc;
	if (rid) {
		rid->len = rc < (long)sizeof rid->id ? (size_t)rc : sizeof rid->id;
		memcpy(rid->id, id, rid->len);
	}
	if (zmq_getsockopt(s->s, ZMQ_RCVMORE, &more, &len) < 0)
		return -errno;
	if (!more)
		return -EPROTO;
	rc = bench_recv(s, buf, cap);
	if (rc < 0)
		return rc;
	if (zmq_getsockopt(s->s, ZMQ_RCVMORE, &more, &len) < 0)
		return -errno;
	return more ? -EPROTO : rc;
}

/* As bench_recv, but -EAGAIN at once when no message waits. */
static long
bench_recv_nb(struct bench_sock *s, void *buf, size_t cap)
{
	int rc;

	do
		rc = zmq_recv(s->s, buf, cap, ZMQ_DONTWAIT);
	while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : rc;
}

/* A descriptor to poll for readability (ZMQ_FD; never read it). */
static int
bench_sock_fd(struct bench_sock *s)
{
	int fd = -1;
	size_t len = sizeof fd;

	return zmq_getsockopt(s->s, ZMQ_FD, &fd, &len) == 0 ? fd : -errno;
}

/* ROUTER: sends [routing id, body]. */
static int
bench_send_routed(struct bench_sock *s, const struct bench_rid *rid, const void *buf, size_t len)
{
	int rc;

	do
		rc = zmq_send(s->s, rid->id, rid->len, ZMQ_SNDMORE);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return bench_send(s, buf, len);
}

/* Room for n sockets in the context (libzmq's default is 1023). */
static int
bench_ctx_max_sockets(struct bench_ctx *c, int n)
{
	return zmq_ctx_set(c->ctx, ZMQ_MAX_SOCKETS, n) == 0 ? 0 : -errno;
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

/* pushpull-tls: libzmq has no TLS; its side runs plain tcp:// and the driver
 * puts a pair of stunnel processes between sender and receiver (the way
 * libzmq users do TLS), so the certificate folder is not ours to use. */
static int
bench_tls_setup(struct bench_sock *s, const char *dir, bool server)
{
	(void)s;
	(void)dir;
	(void)server;
	return 0;
}

/* libzmq has no busy-poll mode: its "busy" scenario is its plain REQ/REP. */
static int
bench_busy_poll(struct bench_sock *s, int us)
{
	(void)s;
	(void)us;
	return 0;
}

#define B_SNDHWM ZMQ_SNDHWM
#define B_RCVHWM ZMQ_RCVHWM
#define B_LINGER ZMQ_LINGER
#define B_RCVTIMEO ZMQ_RCVTIMEO
#define B_SNDTIMEO ZMQ_SNDTIMEO
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
	/* bench_recv_routed's: one message taken over and over (zr_recv_into),
	 * as the libzmq side receives its frames into buffers (zmq_recv): no
	 * allocation per message on either side. */
	zr_msg *in;
};

enum {
	B_PUSH = ZR_PUSH,
	B_PULL = ZR_PULL,
	B_XPUB = ZR_XPUB,
	B_SUB = ZR_SUB,
	B_REQ = ZR_REQ,
	B_REP = ZR_REP,
	B_DEALER = ZR_DEALER,
	B_ROUTER = ZR_ROUTER
};

static int
bench_ctx_new(struct bench_ctx *c)
{
	return zr_ctx_new(&c->ctx);
}

/* The latency modes named busy or cio: the app thread runs the io while it
 * waits (ZR_CTX_CALLER_IO). */
static int
bench_ctx_new_caller_io(struct bench_ctx *c)
{
	return zr_ctx_new_flags(&c->ctx, ZR_CTX_CALLER_IO);
}

static void
bench_ctx_free(struct bench_ctx *c)
{
	zr_ctx_free(c->ctx);
}

static int
bench_sock_open(struct bench_ctx *c, int type, struct bench_sock *s)
{
	s->in = NULL;
	return zr_socket_open(c->ctx, type, &s->s);
}

static void
bench_sock_close(struct bench_sock *s)
{
	zr_msg_free(s->in);
	s->in = NULL;
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

static long
bench_recv_nb(struct bench_sock *s, void *buf, size_t cap)
{
	return zr_recv_bytes(s->s, buf, cap, ZR_DONTWAIT);
}

static int
bench_sock_fd(struct bench_sock *s)
{
	return zr_socket_fd(s->s);
}

static long
bench_recv_routed(struct bench_sock *s, void *buf, size_t cap, struct bench_rid *rid)
{
	size_t len, idlen;
	int rc = s->in != NULL ? 0 : zr_msg_new(&s->in);

	if (rc == 0)
		rc = zr_recv_into(s->s, s->in, 0);
	if (rc < 0)
		return rc;
	const void *body = zr_msg_frame(s->in, 1, &len);
	const void *id = zr_msg_frame(s->in, 0, &idlen);
	if (zr_msg_frames(s->in) != 2 || !body || !id)
		return -EPROTO;
	if (rid) {
		rid->len = idlen < sizeof rid->id ? idlen : sizeof rid->id;
		memcpy(rid->id, id, rid->len);
	}
	memcpy(buf, body, len < cap ? len : cap);
	return (long)len;
}

static int
bench_send_routed(struct bench_sock *s, const struct bench_rid *rid, const void *buf, size_t len)
{
	zr_msg *m;
	int rc = zr_msg_new(&m);

	if (rc < 0)
		return rc;
	rc = zr_msg_add(m, rid->id, rid->len);
	if (rc == 0)
		rc = zr_msg_add(m, buf, len);
	if (rc == 0)
		rc = zr_send(s->s, &m, 0);
	zr_msg_free(m);
	return rc;
}

static int
bench_ctx_max_sockets(struct bench_ctx *c, int n)
{
	(void)c;
	(void)n; /* no limit */
	return 0;
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

static int
bench_busy_poll(struct bench_sock *s, int us)
{
	return bench_sock_setopt(s, ZR_BUSY_POLL, &us, sizeof us);
}

/* pushpull-tls on tls://: the receiver serves DIR/cert.pem with DIR/key.pem,
 * the sender trusts DIR/cert.pem (self-signed, subjectAltName IP 127.0.0.1)
 * and verifies it (ZR_TLS_VERIFY is on by default for clients). */
static int
bench_tls_setup(struct bench_sock *s, const char *dir, bool server)
{
	char cert[PATH_MAX], key[PATH_MAX];

	if (snprintf(cert, sizeof cert, "%s/cert.pem", dir) >= (int)sizeof cert ||
	    snprintf(key, sizeof key, "%s/key.pem", dir) >= (int)sizeof key)
		return -ENAMETOOLONG;
	if (!server)
		return bench_sock_setopt(s, ZR_TLS_CA, cert, strlen(cert));
	int rc = bench_sock_setopt(s, ZR_TLS_CERT, cert, strlen(cert));
	return rc < 0 ? rc : bench_sock_setopt(s, ZR_TLS_KEY, key, strlen(key));
}

#define B_SNDHWM ZR_SNDHWM
#define B_RCVHWM ZR_RCVHWM
#define B_LINGER ZR_LINGER
#define B_RCVTIMEO ZR_RCVTIMEO
#define B_SNDTIMEO ZR_SNDTIMEO
#define B_SUBSCRIBE ZR_SUBSCRIBE
#define B_LAST_ENDPOINT ZR_LAST_ENDPOINT
#define B_MECHANISM ZR_MECHANISM
#define B_MECH_CURVE ZR_MECH_CURVE
#define B_CURVE_SERVER ZR_CURVE_SERVER
#define B_CURVE_PUBLICKEY ZR_CURVE_PUBLICKEY
#define B_CURVE_SECRETKEY ZR_CURVE_SECRETKEY
#define B_CURVE_SERVERKEY ZR_CURVE_SERVERKEY
#endif

/*
 * raw-box-*: CURVE's cost with no library. A CURVE MESSAGE is an
 * XSalsa20-Poly1305 box (RFC 26), crypto_secretbox in libsodium's terms once
 * the shared key is made, so these seal and open each record with it: what
 * plain sockets plus the same crypto reach is the ceiling the CURVE rows are
 * printed against. Only bench_zr has them (zring links libsodium; the driver
 * runs every reference from bench_zr).
 */
#define BENCH_BOX_MAC 16
#ifdef BENCH_LIBZMQ
static int
box_seal(unsigned char *out, const unsigned char *in, size_t len, unsigned long long n)
{
	(void)out, (void)in, (void)len, (void)n;
	return -ENOTSUP;
}
static int
box_open(unsigned char *out, const unsigned char *in, size_t len, unsigned long long n)
{
	(void)out, (void)in, (void)len, (void)n;
	return -ENOTSUP;
}
#else
#include <sodium.h>

/* The record's nonce: its number, little-endian, in a nonce otherwise zero;
 * a fixed key (both ends know it: this measures cost, not secrecy). */
static void
box_nonce(unsigned char nonce[crypto_secretbox_NONCEBYTES], unsigned long long n)
{
	memset(nonce, 0, crypto_secretbox_NONCEBYTES);
	for (int i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(n >> (8 * i));
}

static const unsigned char box_key[crypto_secretbox_KEYBYTES] = "zring bench raw-box key 32 bytes";

/* out: len + BENCH_BOX_MAC octets. */
static int
box_seal(unsigned char *out, const unsigned char *in, size_t len, unsigned long long n)
{
	unsigned char nonce[crypto_secretbox_NONCEBYTES];

	box_nonce(nonce, n);
	return crypto_secretbox_easy(out, in, len, nonce, box_key) == 0 ? 0 : -EIO;
}

/* in: len + BENCH_BOX_MAC octets; -EBADMSG when it does not open. */
static int
box_open(unsigned char *out, const unsigned char *in, size_t len, unsigned long long n)
{
	unsigned char nonce[crypto_secretbox_NONCEBYTES];

	box_nonce(nonce, n);
	return crypto_secretbox_open_easy(out, in, len + BENCH_BOX_MAC, nonce, box_key) == 0
	               ? 0
	               : -EBADMSG;
}
#endif

/* ---- common ------------------------------------------------------------ */

struct bench_args {
	const char *mode;
	const char *pattern; /* "pushpull", "pushpull-curve", "pubsub", "reqrep" */
	const char *endpoint;
	unsigned long count;
	size_t size;
	bool curve;            /* pushpull-curve */
	bool tls;              /* pushpull-tls */
	const char *tls_dir;   /* pushpull-tls: the folder of cert.pem and key.pem */
	bool raw;              /* raw-*: plain TCP sockets, no library */
	bool box;              /* raw-box-*: each record sealed / opened (box_seal) */
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

/* Binds, and puts the bound endpoint (port 0 resolved) into bound. */
static int
bind_endpoint(struct bench_sock *s, const char *ep, char *bound, size_t cap)
{
	size_t len = cap;
	int rc = bench_bind(s, ep);

	if (rc < 0)
		return rc;
	rc = bench_sock_getopt(s, B_LAST_ENDPOINT, bound, &len);
	if (rc < 0)
		return rc;
	bound[len < cap ? len : cap - 1] = '\0';
	return 0;
}

/* Binds, then prints "READY <endpoint>", or "READY <endpoint> <key>" when
 * key is not NULL (a CURVE server's public key, for the sender). */
static int
bind_and_announce(struct bench_sock *s, const char *ep, const char *key)
{
	char bound[BENCH_ENDPOINT_MAX];
	int rc = bind_endpoint(s, ep, bound, sizeof bound);

	if (rc < 0)
		return rc;
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
	printf("RESULT lib=%s mode=%s pattern=%s size=%zu count=%lu", a->raw ? "raw" : BENCH_LIB,
	       a->mode, a->pattern, a->size, a->count);
}

/* The RESULT line of a throughput run up to its last field: msgs messages of
 * a->size bytes in secs, cpu seconds of CPU; the caller ends the line. */
static void
thr_result(const struct bench_args *a, double secs, double msgs, double cpu)
{
	double rate = secs > 0 ? msgs / secs : 0;

	result_head(a);
	printf(" secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f", secs, rate,
	       rate * (double)a->size / 1e6, cpu / msgs * 1e6);
}

static int
parse_ulong(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return (errno || end == s || *end || s[0] == '-') ? -1 : 0;
}

/* What a throughput pattern name says. */
struct bench_pattern {
	int rx_type, tx_type;
	int subs;    /* pubsub: subscribers (SUB sockets in the receiver) */
	bool routed; /* dealerrouter: the ROUTER receives [id, body] */
	bool fanout; /* fanoutN, topicsT: the publisher binds, the SUBs connect */
	int topics;  /* topicsT: T distinct topics over BENCH_TOPIC_SUBS SUBs */
};

static int
pattern_parse(const char *name, struct bench_pattern *p)
{
	unsigned long n = 1;

	*p = (struct bench_pattern){B_PULL, B_PUSH, 0, false, false, 0};
	if (strcmp(name, "pushpull") == 0 || strcmp(name, "pushpull-curve") == 0 ||
	    strcmp(name, "pushpull-tls") == 0)
		return 0;
	if (strcmp(name, "dealerrouter") == 0) {
		*p = (struct bench_pattern){B_ROUTER, B_DEALER, 0, true, false, 0};
		return 0;
	}
	if (strncmp(name, "pubsub", 6) == 0) {
		if (name[6] && (parse_ulong(name + 6, &n) < 0 || n < 1 || n > BENCH_SUBS_MAX))
			return -1;
		*p = (struct bench_pattern){B_SUB, B_XPUB, (int)n, false, false, 0};
		return 0;
	}
	if (strncmp(name, "fanout", 6) == 0) {
		if (parse_ulong(name + 6, &n) < 0 || n < 1 || n > BENCH_FANOUT_MAX)
			return -1;
		*p = (struct bench_pattern){B_SUB, B_XPUB, (int)n, false, true, 0};
		return 0;
	}
	if (strncmp(name, "topics", 6) == 0) {
		/* Every subscriber an equal share; 2T coprime with the stride. */
		if (parse_ulong(name + 6, &n) < 0 || n < BENCH_TOPIC_SUBS || n > BENCH_TOPIC_MAX ||
		    n % BENCH_TOPIC_SUBS || (2 * n) % BENCH_TOPIC_STRIDE == 0)
			return -1;
		*p = (struct bench_pattern){B_SUB, B_XPUB, BENCH_TOPIC_SUBS, false, true, (int)n};
		return 0;
	}
	return -1;
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

/* Waits for a line (or the end) on stdin: the driver's "go on". */
static void
wait_for_driver(void)
{
	char line[64];

	if (!fgets(line, sizeof line, stdin))
		return;
}

/* As many file descriptors as the hard limit allows (idle connections, fan-out). */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Message i's topic number in a "topicsT" run: 0 .. 2T-1, those below T held
 * by a subscriber (T / BENCH_TOPIC_SUBS each, in order), the rest by none. */
static unsigned
topic_of(unsigned long i, int topics)
{
	return (unsigned)(i * BENCH_TOPIC_STRIDE % (2ul * (unsigned long)topics));
}

static void
topic_name(char out[BENCH_TOPIC_BUF], unsigned t)
{
	snprintf(out, BENCH_TOPIC_BUF, "t%05u", t % 100000u);
}

/* One receiving socket's share of a throughput run. */
struct recv_job {
	const struct bench_args *a;
	struct bench_sock s;
	bool routed;
	double t_first, t_last;
	int rc; /* 0 or 1 (failed; said on stderr) */
};

static _Atomic int cpu_started;
static double cpu_start;

static void *
recv_job_run(void *arg)
{
	struct recv_job *j = arg;
	const struct bench_args *a = j->a;
	char *buf = malloc(a->size + 1);
	unsigned long i;
	long rc;

	j->rc = 1;
	if (!buf) {
		fail("malloc", -ENOMEM);
		return NULL;
	}
	for (i = 0; i < a->count; i++) {
		/* One byte more room than expected: a longer message shows. */
		rc = j->routed ? bench_recv_routed(&j->s, buf, a->size + 1, NULL)
		               : bench_recv(&j->s, buf, a->size + 1);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s thr-recv: got %lu of %lu messages (%s)\n",
			        BENCH_LIB, i, a->count, strerror((int)-rc));
			free(buf);
			return NULL;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL %s thr-recv: message %lu has %ld bytes, want %zu\n",
			        BENCH_LIB, i, rc, a->size);
			free(buf);
			return NULL;
		}
		if (i == 0) {
			j->t_first = now_s();
			int no = 0;
			if (atomic_compare_exchange_strong(&cpu_started, &no, 1))
				cpu_start = cpu_s();
		}
	}
	j->t_last = now_s();
	free(buf);
	j->rc = 0;
	return NULL;
}

/* The fan-out receiver's state: N SUB sockets read by one thread. */
struct fanout {
	const struct bench_args *a;
	const struct bench_pattern *pat;
	struct bench_sock *s;
	unsigned long *want, *got;
	unsigned long done, total;
	char *buf;
	double t_first, t_last;
};

/*
 * Takes every message socket k holds now (until EAGAIN: only then does the
 * socket's descriptor signal the next one). Returns how many, or -1 (said).
 */
static long
fanout_drain(struct fanout *f, int k)
{
	const struct bench_args *a = f->a;
	long n = 0;

	for (;;) {
		long rc = bench_recv_nb(&f->s[k], f->buf, a->size + 1);
		if (rc == -EAGAIN)
			return n;
		if (rc < 0) {
			fail("fan-out receive", rc);
			return -1;
		}
		if ((size_t)rc != a->size) {
			fprintf(stderr, "FAIL %s thr-recv: subscriber %d got %ld bytes, want %zu\n",
			        BENCH_LIB, k, rc, a->size);
			return -1;
		}
		if (f->pat->topics) {
			/* Only the topics this subscriber holds may reach it. */
			int per = f->pat->topics / f->pat->subs;
			unsigned t = 0;
			for (int d = 1; d < BENCH_TOPIC_LEN; d++)
				t = t * 10 + (unsigned)(f->buf[d] - '0');
			if (f->buf[0] != 't' || t >= (unsigned)f->pat->topics ||
			    (int)t / per != k) {
				fprintf(stderr, "FAIL %s thr-recv: subscriber %d got topic %.6s\n",
				        BENCH_LIB, k, f->buf);
				return -1;
			}
		}
		if (++f->got[k] > f->want[k]) {
			fprintf(stderr,
			        "FAIL %s thr-recv: subscriber %d got more than %lu messages\n",
			        BENCH_LIB, k, f->want[k]);
			return -1;
		}
		if (f->done++ == 0) {
			f->t_first = now_s();
			cpu_start = cpu_s();
		}
		n++;
	}
}

/*
 * Fan-out receiver ("fanoutN", "topicsT"): N SUB sockets in one context, each
 * connected to the publisher's endpoint, all read by this one thread: epoll
 * on their descriptors (zr_socket_fd, ZMQ_FD: the same shape on both
 * libraries), each ready socket drained until EAGAIN. N threads would not
 * fit 2 cores; N processes would not fit either. Every BENCH_RESCAN_MS
 * without a wakeup every socket is looked at anyway, and what that finds is
 * reported as "rescued" (messages whose wakeup never came; 0 in a sound
 * run, and a run with any is a finding, not a figure).
 */
static int
fanout_recv(const struct bench_args *a, const struct bench_pattern *pat)
{
	struct fanout f = {.a = a, .pat = pat};
	struct bench_ctx c;
	struct epoll_event ev[64];
	int n = pat->subs, ep;
	unsigned long rescued = 0;
	long rc;

	f.s = calloc((size_t)n, sizeof *f.s);
	f.want = calloc((size_t)n, sizeof *f.want);
	f.got = calloc((size_t)n, sizeof *f.got);
	f.buf = malloc(a->size + 1);
	if (!f.s || !f.want || !f.got || !f.buf)
		return fail("malloc", -ENOMEM);
	raise_fd_limit();
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return fail("epoll", -errno);
	if ((rc = bench_ctx_new(&c)) < 0 || (rc = bench_ctx_max_sockets(&c, n + 16)) < 0)
		return fail("context", rc);
	int per = pat->topics ? pat->topics / n : 0;
	for (int k = 0; k < n; k++) {
		char topic[BENCH_TOPIC_BUF], mark[16];

		if ((rc = sock_open(&c, B_SUB, 0, &f.s[k])) < 0)
			return fail("socket", rc);
		if (pat->topics) {
			for (int t = k * per; t < (k + 1) * per && rc == 0; t++) {
				topic_name(topic, (unsigned)t);
				rc = bench_sock_setopt(&f.s[k], B_SUBSCRIBE, topic,
				                       BENCH_TOPIC_LEN);
			}
		} else {
			/* Everything, and a mark of its own so the publisher can count
			 * its subscribers (as in thr_recv). */
			int len = snprintf(mark, sizeof mark, "\xff%d", k);
			rc = bench_sock_setopt(&f.s[k], B_SUBSCRIBE, "", 0);
			if (rc == 0)
				rc = bench_sock_setopt(&f.s[k], B_SUBSCRIBE, mark, (size_t)len);
		}
		if (rc < 0)
			return fail("subscribe", rc);
		if ((rc = bench_connect(&f.s[k], a->endpoint)) < 0)
			return fail("connect", rc);
		int fd = bench_sock_fd(&f.s[k]);
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)k};
		if (fd < 0)
			return fail("socket descriptor", fd);
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0)
			return fail("epoll_ctl", -errno);
	}
	if (pat->topics) {
		for (unsigned long i = 0; i < a->count; i++) {
			unsigned t = topic_of(i, pat->topics);
			if (t < (unsigned)pat->topics)
				f.want[t / (unsigned)per]++;
		}
	} else {
		for (int k = 0; k < n; k++)
			f.want[k] = a->count;
	}
	for (int k = 0; k < n; k++)
		f.total += f.want[k];

	/* A socket's descriptor signals only after a receive found nothing: one
	 * look at each arms them all (and takes what already came). */
	for (int k = 0; k < n; k++)
		if (fanout_drain(&f, k) < 0)
			return 1;
	double last_msg = now_s();
	while (f.done < f.total) {
		int nev = epoll_wait(ep, ev, (int)(sizeof ev / sizeof ev[0]), BENCH_RESCAN_MS);
		long got = 0;
		if (nev < 0 && errno != EINTR)
			return fail("epoll_wait", -errno);
		for (int e = 0; e < nev; e++) {
			if ((rc = fanout_drain(&f, (int)ev[e].data.u32)) < 0)
				return 1;
			got += rc;
		}
		if (nev == 0) {
			for (int k = 0; k < n; k++) {
				if ((rc = fanout_drain(&f, k)) < 0)
					return 1;
				got += rc;
			}
			rescued += (unsigned long)got;
		}
		if (got)
			last_msg = now_s();
		else if (now_s() - last_msg > BENCH_WAIT_S) {
			fprintf(stderr,
			        "FAIL %s thr-recv: got %lu of %lu deliveries (%d subscribers)\n",
			        BENCH_LIB, f.done, f.total, n);
			return 1;
		}
	}
	f.t_last = now_s();
	double c1 = cpu_s();
	for (int k = 0; k < n; k++)
		bench_sock_close(&f.s[k]);
	bench_ctx_free(&c);
	close(ep);

	thr_result(a, f.t_last - f.t_first, a->count > 1 ? (double)(a->count - 1) : 1.0,
	           c1 - cpu_start);
	printf(" deliveries=%lu rescued=%lu\n", f.total, rescued);
	free(f.s);
	free(f.want);
	free(f.got);
	free(f.buf);
	return 0;
}

/*
 * The receiver: one socket (PULL, ROUTER, SUB), or for "pubsubN" N SUB
 * sockets, each bound to its own endpoint and read by its own thread; READY
 * names them all, separated by commas. Times run from the first message any
 * socket got to the last one the slowest got; msgs/s counts each published
 * message once.
 */
static int
thr_recv(const struct bench_args *a)
{
	struct bench_pattern pat;
	struct bench_ctx c;
	static struct recv_job jobs[BENCH_SUBS_MAX];
	pthread_t th[BENCH_SUBS_MAX];
	char eps[BENCH_SUBS_MAX * BENCH_ENDPOINT_MAX] = "";
	char key[BENCH_Z85_KEY + 1];
	long rc;

	pattern_parse(a->pattern, &pat);
	if (pat.fanout)
		return fanout_recv(a, &pat);
	int n = pat.subs > 1 ? pat.subs : 1;
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	for (int k = 0; k < n; k++) {
		struct recv_job *j = &jobs[k];
		char bound[BENCH_ENDPOINT_MAX];

		j->a = a;
		j->routed = pat.routed;
		if ((rc = sock_open(&c, pat.rx_type, 0, &j->s)) < 0)
			return fail("socket", rc);
		if (pat.subs && (rc = bench_sock_setopt(&j->s, B_SUBSCRIBE, "", 0)) < 0)
			return fail("subscribe", rc);
		if (pat.subs > 1) {
			/* A topic no message matches, unique to this subscriber, so
			 * the publisher can tell when all of them are there (libzmq's
			 * XPUB passes on only the first of equal subscriptions). */
			char mark[8];
			int len = snprintf(mark, sizeof mark, "\xff%d", k);
			if ((rc = bench_sock_setopt(&j->s, B_SUBSCRIBE, mark, (size_t)len)) < 0)
				return fail("subscribe", rc);
		}
		if (a->curve && (rc = curve_server_setup(&j->s, key)) < 0)
			return fail("CURVE server keys", rc);
		if (a->tls && (rc = bench_tls_setup(&j->s, a->tls_dir, true)) < 0)
			return fail("TLS certificate", rc);
		if ((rc = bind_endpoint(&j->s, a->endpoint, bound, sizeof bound)) < 0)
			return fail("bind", rc);
		if (a->curve && require_curve(&j->s) != 0)
			return 1;
		if (k)
			strcat(eps, ",");
		strcat(eps, bound);
	}
	if (a->curve)
		printf("READY %s %s\n", eps, key);
	else
		printf("READY %s\n", eps);
	fflush(stdout);

	if (n == 1) {
		recv_job_run(&jobs[0]);
	} else {
		for (int k = 0; k < n; k++)
			if (pthread_create(&th[k], NULL, recv_job_run, &jobs[k]) != 0)
				return fail("thread", -EAGAIN);
		for (int k = 0; k < n; k++)
			pthread_join(th[k], NULL);
	}
	double t1 = now_s(), c1 = cpu_s(), t0 = jobs[0].t_first;
	int bad = 0;
	for (int k = 0; k < n; k++) {
		bad |= jobs[k].rc;
		if (jobs[k].t_first < t0)
			t0 = jobs[k].t_first;
	}
	if (bad)
		return 1;
	for (int k = 0; k < n; k++)
		bench_sock_close(&jobs[k].s);
	bench_ctx_free(&c);

	thr_result(a, t1 - t0, a->count > 1 ? (double)(a->count - 1) : 1.0, c1 - cpu_start);
	printf("\n");
	return 0;
}

/* Connects s to every endpoint of a comma-separated list. */
static int
connect_all(struct bench_sock *s, const char *list)
{
	char ep[BENCH_ENDPOINT_MAX];

	while (*list) {
		size_t n = strcspn(list, ",");
		if (n >= sizeof ep)
			return -EINVAL;
		memcpy(ep, list, n);
		ep[n] = '\0';
		int rc = bench_connect(s, ep);
		if (rc < 0)
			return rc;
		list += n + (list[n] == ',');
	}
	return 0;
}

/* Waits until every k in [0, n) came as a subscription "\x01" TAG <k> (len
 * octets, when len > 0). */
static int
wait_indexed(struct bench_sock *s, int n, unsigned char tag, long len)
{
	bool *seen = calloc((size_t)n, sizeof *seen);
	char sub[64];
	int have = 0;

	if (!seen)
		return fail("malloc", -ENOMEM);
	while (have < n) {
		long rc = bench_recv(s, sub, sizeof sub);
		if (rc < 0)
			return fail("waiting for the subscriptions", rc);
		if (rc >= 3 && rc < (long)sizeof sub && (len == 0 || rc == len) && sub[0] == 1 &&
		    (unsigned char)sub[1] == tag) {
			sub[rc] = '\0';
			int k = atoi(sub + 2);
			if (k >= 0 && k < n && !seen[k]) {
				seen[k] = true;
				have++;
			}
		}
	}
	free(seen);
	return 0;
}

/*
 * The publisher waits for every subscription, from which on nothing is
 * dropped: "topicsT" for all T topics; one subscriber's "\x01" (subscribe to
 * all); or, of several, each one's unique topic "\x01\xff<k>".
 */
static int
wait_subscriptions(struct bench_sock *s, const struct bench_pattern *pat)
{
	char sub[64];
	long rc;

	if (pat->topics)
		return wait_indexed(s, pat->topics, 't', 1 + BENCH_TOPIC_LEN);
	if (pat->subs > 1)
		return wait_indexed(s, pat->subs, 0xff, 0);
	if (pat->subs == 0)
		return 0;
	rc = bench_recv(s, sub, sizeof sub);
	if (rc < 0)
		return fail("waiting for the subscriptions", rc);
	if (rc != 1 || sub[0] != 1)
		return fail("subscription is not \\x01 (subscribe to all)", rc);
	return 0;
}

static int
thr_send(const struct bench_args *a)
{
	struct bench_pattern pat;
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size ? a->size : 1);
	double t0, c0;
	unsigned long i;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	pattern_parse(a->pattern, &pat);
	memset(buf, 'z', a->size ? a->size : 1);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, pat.tx_type, -1, &s)) < 0)
		return fail("socket", rc);
	if (pat.subs && (rc = bench_pub_lossless(&s)) < 0)
		return fail("lossless publisher", rc);
	if (a->curve && (rc = curve_client_setup(&s, a->serverkey)) < 0)
		return fail("CURVE client keys", rc);
	if (a->tls && (rc = bench_tls_setup(&s, a->tls_dir, false)) < 0)
		return fail("TLS trust anchor", rc);
	/* Fan-out: the publisher binds, its many subscribers connect. */
	if (pat.fanout) {
		raise_fd_limit();
		rc = bind_and_announce(&s, a->endpoint, NULL);
	} else {
		rc = connect_all(&s, a->endpoint);
	}
	if (rc < 0)
		return fail(pat.fanout ? "bind" : "connect", rc);
	if (a->curve && require_curve(&s) != 0)
		return 1;
	if (wait_subscriptions(&s, &pat) != 0)
		return 1;
	/* Every topic's name, made before the clock starts. */
	char(*names)[BENCH_TOPIC_BUF] = NULL;
	if (pat.topics) {
		names = calloc(2 * (size_t)pat.topics, sizeof *names);
		if (!names)
			return fail("malloc", -ENOMEM);
		for (unsigned t = 0; t < 2 * (unsigned)pat.topics; t++)
			topic_name(names[t], t);
	}
	t0 = now_s();
	c0 = cpu_s();
	for (i = 0; i < a->count; i++) {
		if (names)
			memcpy(buf, names[topic_of(i, pat.topics)], BENCH_TOPIC_LEN);
		rc = bench_send(&s, buf, a->size);
		if (rc < 0)
			return fail("send", rc);
	}
	bench_sock_close(&s);
	bench_ctx_free(&c); /* LINGER -1: returns when everything is out */
	double secs = now_s() - t0;
	double cpu = cpu_s() - c0;
	free(buf);
	free(names);

	thr_result(a, secs, (double)a->count, cpu);
	printf("\n");
	return 0;
}

/*
 * Stalled receiver: a PULL binds, takes one message, then its application
 * stops reading until the driver says (a line on stdin, after the sender gave
 * up). Its peak RSS then is what the library let pile up for it.
 */
static int
stall_recv(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size + 1);
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, B_PULL, 0, &s)) < 0)
		return fail("socket", rc);
	if ((rc = bind_and_announce(&s, a->endpoint, NULL)) < 0)
		return fail("bind", rc);
	long rss0 = status_kb("VmRSS");
	rc = bench_recv(&s, buf, a->size + 1);
	if (rc < 0)
		return fail("the first message", rc);
	if ((size_t)rc != a->size)
		return fail("the first message's size", rc);
	wait_for_driver();
	long hwm = status_kb("VmHWM"), rss = status_kb("VmRSS");
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);
	result_head(a);
	printf(" peak_rss_mb=%.2f rss_mb=%.2f growth_mb=%.2f\n", (double)hwm / 1024,
	       (double)rss / 1024, (double)(hwm - rss0) / 1024);
	return 0;
}

/* The stalled receiver's sender: sends up to COUNT messages, stops at the
 * first that waits longer than BENCH_STALL_MS. */
static int
stall_send(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size ? a->size : 1);
	unsigned long i;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	memset(buf, 'z', a->size ? a->size : 1);
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	/* LINGER 0: what the stalled peer never takes is dropped at the end. */
	if ((rc = sock_open(&c, B_PUSH, 0, &s)) < 0 ||
	    (rc = set_int(&s, B_SNDTIMEO, BENCH_STALL_MS)) < 0)
		return fail("socket", rc);
	if ((rc = bench_connect(&s, a->endpoint)) < 0)
		return fail("connect", rc);
	for (i = 0; i < a->count; i++) {
		rc = bench_send(&s, buf, a->size);
		if (rc == -EAGAIN && i > 0)
			break;
		if (rc < 0)
			return fail("send", rc);
	}
	/* COUNT sent without a stall (a short run): nothing is stuck, so close
	 * as a normal sender would, delivering them; LINGER 0 would throw away
	 * what the io thread had not written yet, perhaps the very first
	 * message the receiver waits for (2 in 400 smoke runs on a loaded
	 * machine). */
	if (i == a->count && (rc = set_int(&s, B_LINGER, BENCH_WAIT_S * 1000)) < 0)
		return fail("linger", rc);
	long hwm = status_kb("VmHWM");
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);
	result_head(a);
	printf(" sent=%lu peak_rss_mb=%.2f\n", i, (double)hwm / 1024);
	return 0;
}

/*
 * Idle connections: a PULL binds; COUNT peers connect (one PUSH socket each)
 * and send one SIZE-byte message, so every connection is through its
 * handshake. The receiver's RSS growth from bind to the last message, per
 * connection, is the bound side's cost of an idle connection.
 */
static int
idle_recv(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	char *buf = malloc(a->size + 1);
	unsigned long i;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	raise_fd_limit();
	if ((rc = bench_ctx_new(&c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, B_PULL, 0, &s)) < 0 ||
	    (rc = set_int(&s, B_RCVTIMEO, BENCH_IDLE_WAIT_S * 1000)) < 0)
		return fail("socket", rc);
	if ((rc = bind_and_announce(&s, a->endpoint, NULL)) < 0)
		return fail("bind", rc);
	long rss0 = status_kb("VmRSS");
	for (i = 0; i < a->count; i++) {
		rc = bench_recv(&s, buf, a->size + 1);
		if (rc < 0) {
			fprintf(stderr, "FAIL %s idle-recv: got %lu of %lu messages (%s)\n",
			        BENCH_LIB, i, a->count, strerror((int)-rc));
			return 1;
		}
		if ((size_t)rc != a->size)
			return fail("a message's size", rc);
	}
	long rss1 = status_kb("VmRSS");
	result_head(a);
	printf(" kb_per_conn=%.2f growth_mb=%.2f\n", (double)(rss1 - rss0) / (double)a->count,
	       (double)(rss1 - rss0) / 1024);
	fflush(stdout);
	wait_for_driver(); /* keep the connections until the sender measured */
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);
	return 0;
}

static int
idle_send(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock *s = calloc(a->count, sizeof *s);
	char *buf = malloc(a->size ? a->size : 1);
	unsigned long i;
	long rc;

	if (!buf || !s)
		return fail("malloc", -ENOMEM);
	memset(buf, 'z', a->size ? a->size : 1);
	raise_fd_limit();
	if ((rc = bench_ctx_new(&c)) < 0 ||
	    (rc = bench_ctx_max_sockets(&c, (int)a->count + 16)) < 0)
		return fail("context", rc);
	long rss0 = status_kb("VmRSS");
	for (i = 0; i < a->count; i++) {
		if ((rc = sock_open(&c, B_PUSH, 0, &s[i])) < 0)
			return fail("socket", rc);
		if ((rc = bench_connect(&s[i], a->endpoint)) < 0)
			return fail("connect", rc);
		if ((rc = bench_send(&s[i], buf, a->size)) < 0)
			return fail("send", rc);
	}
	wait_for_driver(); /* the receiver has every message: all connected */
	long rss1 = status_kb("VmRSS");
	for (i = 0; i < a->count; i++)
		bench_sock_close(&s[i]);
	bench_ctx_free(&c);
	free(buf);
	free(s);
	result_head(a);
	printf(" kb_per_conn=%.2f growth_mb=%.2f\n", (double)(rss1 - rss0) / (double)a->count,
	       (double)(rss1 - rss0) / 1024);
	return 0;
}

/* The context of a latency mode: caller-io for the busy and cio modes. */
static int
lat_ctx_new(const struct bench_args *a, struct bench_ctx *c)
{
	if (strstr(a->pattern, "busy") != NULL || strstr(a->pattern, "cio") != NULL)
		return bench_ctx_new_caller_io(c);
	return bench_ctx_new(c);
}

static int
lat_rep(const struct bench_args *a)
{
	struct bench_ctx c;
	struct bench_sock s;
	struct bench_rid rid;
	bool routed = strcmp(a->pattern, "dealerrouter") == 0;
	char *buf = malloc(a->size + 1);
	unsigned long i, n = a->count + BENCH_LAT_WARMUP;
	long rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	if ((rc = lat_ctx_new(a, &c)) < 0)
		return fail("context", rc);
	if ((rc = sock_open(&c, routed ? B_ROUTER : B_REP, -1, &s)) < 0)
		return fail("socket", rc);
	if (strstr(a->pattern, "busy") && (rc = bench_busy_poll(&s, BENCH_BUSY_POLL_US)) < 0)
		return fail("busy-poll", rc);
	if ((rc = bind_and_announce(&s, a->endpoint, NULL)) < 0)
		return fail("bind", rc);
	for (i = 0; i < n; i++) {
		rc = routed ? bench_recv_routed(&s, buf, a->size + 1, &rid)
		            : bench_recv(&s, buf, a->size + 1);
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
		rc = routed ? bench_send_routed(&s, &rid, buf, a->size)
		            : bench_send(&s, buf, a->size);
		if (rc < 0)
			return fail("reply", rc);
	}
	bench_sock_close(&s);
	bench_ctx_free(&c);
	free(buf);
	result_head(a);
	printf(" replies=%lu\n", n);
	return 0;
}

/* ---- raw TCP references -------------------------------------------------
 *
 * No library: plain sockets, what the kernel's loopback gives at most. Both
 * programs hold the same code (it touches neither library); the driver runs
 * it from bench_zr. TCP_NODELAY on both ends, as both libraries set it;
 * kernel default socket buffers, as in every other scenario.
 */

/* "tcp://A.B.C.D:PORT" (an IPv4 literal) into sa. */
static int
raw_addr(const char *ep, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon;
	unsigned long port;

	if (strncmp(ep, "tcp://", 6) != 0 || !(colon = strrchr(ep + 6, ':')) ||
	    (size_t)(colon - (ep + 6)) >= sizeof host || parse_ulong(colon + 1, &port) < 0 ||
	    port > 65535)
		return -EINVAL;
	memcpy(host, ep + 6, (size_t)(colon - (ep + 6)));
	host[colon - (ep + 6)] = '\0';
	*sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static void
raw_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Listens on ep, prints "READY tcp://ADDR:PORT", accepts one peer. */
static int
raw_accept(const char *ep)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int one = 1, lfd, fd;
	char host[INET_ADDRSTRLEN];

	if (raw_addr(ep, &sa) < 0)
		return -EINVAL;
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) < 0) {
		int e = -errno;
		close(lfd);
		return e;
	}
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
	printf("READY tcp://%s:%u\n", host, ntohs(sa.sin_port));
	fflush(stdout);
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int rc = poll(&p, 1, BENCH_WAIT_S * 1000);
	fd = rc == 1 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
	int e = rc == 0 ? -ETIMEDOUT : -errno;
	close(lfd);
	if (fd < 0)
		return e;
	raw_nodelay(fd);
	return fd;
}

static int
raw_connect(const char *ep)
{
	struct sockaddr_in sa;
	int fd;

	if (raw_addr(ep, &sa) < 0)
		return -EINVAL;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	raw_nodelay(fd);
	return fd;
}

/*
 * Reads exactly len bytes. busy: the socket is non-blocking and an empty
 * read is retried at once (a spin), up to BENCH_WAIT_S. 0, -EPIPE (the peer
 * closed first) or -errno.
 */
static int
raw_read_full(int fd, void *buf, size_t len, bool busy)
{
	char *p = buf;
	unsigned long spins = 0;
	double since = 0;

	while (len) {
		ssize_t n = recv(fd, p, len, busy ? MSG_DONTWAIT : 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			spins = 0;
		} else if (n == 0) {
			return -EPIPE;
		} else if (errno == EAGAIN && busy) {
			/* Look at the clock only now and then: a spin is the point. */
			if ((++spins & 0xffff) == 1) {
				if (spins == 1)
					since = now_s();
				else if (now_s() - since > BENCH_WAIT_S)
					return -ETIMEDOUT;
			}
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

static int
raw_write_full(int fd, const void *buf, size_t len, bool busy)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | (busy ? MSG_DONTWAIT : 0));
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR && !(busy && errno == EAGAIN)) {
			return -errno;
		}
	}
	return 0;
}

/* raw-thr-send's bytes per write for SIZE-byte records (raw-thr-recv waits
 * for as many per read from 8 KiB up): 64 KiB, or from BENCH_RAW_LARGE up as
 * many whole records as fit in 1 MiB, or one larger record. */
static size_t
raw_write_size(size_t size)
{
	if (size < BENCH_RAW_LARGE)
		return BENCH_RAW_BATCH;
	return size > BENCH_RAW_BIG ? size : BENCH_RAW_BIG / size * size;
}

/*
 * raw-thr-recv: the batched-writes ceiling's reader. Reads COUNT SIZE-byte
 * records (COUNT x SIZE bytes, as they come, into one 256 KiB buffer; a
 * larger record whole into one of its size; raw-box-thr-recv: each record
 * of SIZE + 16 whole, opened, failing the run if it does not), then
 * wants the end of the stream: a byte short or a byte over fails the run.
 * Timed like thr-recv, from the first bytes to the last.
 */
static int
raw_thr_recv(const struct bench_args *a)
{
	size_t rec = a->size + (a->box ? BENCH_BOX_MAC : 0); /* octets per record */
	unsigned long long want = (unsigned long long)a->count * rec, got = 0;
	/* A record larger than the buffer is read whole, waiting for all of
	 * it (MSG_WAITALL): one wakeup per record, not one per piece (1 MiB
	 * read as it came, 256 KiB at most, made the ceiling lower than a
	 * library's). So is a box, which opens whole. */
	bool whole = a->box || rec > BENCH_RAW_RBUF;
	size_t rbuf = whole ? rec : BENCH_RAW_RBUF;
	/* Records of 8 KiB and more, not boxed, come in the sender's 1 MiB
	 * writes (raw_thr_send): each read waits for one such write's worth.
	 * Read as they came, 256 KiB at most, 8 KiB and 64 KiB records cost
	 * the reader more than a library's receiver spends on the same
	 * messages (zring's passed that "ceiling" in msgs/s). */
	if (!a->box && rec >= BENCH_RAW_LARGE) {
		whole = true;
		rbuf = raw_write_size(rec);
	}
	char *buf = malloc(rbuf);
	unsigned char *plain = a->box ? malloc(a->size ? a->size : 1) : NULL;
	double t0 = 0, c0 = 0;
	int fd;

	if (!buf || (a->box && !plain))
		return fail("malloc", -ENOMEM);
	if ((fd = raw_accept(a->endpoint)) < 0)
		return fail("listen/accept", fd);
	while (got < want) {
		size_t cap = want - got < rbuf ? (size_t)(want - got) : rbuf;
		ssize_t n = recv(fd, buf, cap, whole ? MSG_WAITALL : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "FAIL raw thr-recv: got %llu of %llu bytes (%s)\n", got,
			        want, n ? strerror(errno) : "end of stream");
			return 1;
		}
		if (got == 0) {
			t0 = now_s();
			c0 = cpu_s();
		}
		if (a->box && (size_t)n != rec) {
			fprintf(stderr, "FAIL raw thr-recv: a short record (%zd of %zu bytes)\n", n,
			        rec);
			return 1;
		}
		if (a->box && box_open(plain, (unsigned char *)buf, a->size, got / rec) < 0) {
			fprintf(stderr, "FAIL raw thr-recv: record %llu does not open\n",
			        got / rec);
			return 1;
		}
		got += (unsigned long long)n;
	}
	double t1 = now_s(), c1 = cpu_s();
	ssize_t n;
	while ((n = recv(fd, buf, 1, 0)) < 0 && errno == EINTR)
		;
	if (n != 0) {
		fprintf(stderr, "FAIL raw thr-recv: more than %llu bytes\n", want);
		return 1;
	}
	close(fd);
	free(buf);
	free(plain);

	thr_result(a, t1 - t0, a->count > 1 ? (double)(a->count - 1) : 1.0, c1 - c0);
	printf("\n");
	return 0;
}

/*
 * raw-thr-send: COUNT SIZE-byte records, back to back, in writes of 64 KiB
 * (many records each: the most batching a sender can do), or for records of
 * 8 KiB and more as many whole ones as fit in 1 MiB (the loopback's send
 * costs less per byte in larger writes: 64 KiB records written one per write
 * cost their sender more than a library's batched writev of them);
 * raw-box-thr-send: each record sealed into SIZE + 16 octets and written
 * alone. Then it half-closes and waits for the reader's close, so its time
 * includes delivery as a library sender's LINGER -1 does.
 */
static int
raw_thr_send(const struct bench_args *a)
{
	unsigned long long left = (unsigned long long)a->count * a->size;
	size_t batch = raw_write_size(a->size);
	char *buf = malloc(batch);
	unsigned char *sealed = a->box ? malloc(a->size + BENCH_BOX_MAC) : NULL;
	int fd;

	if (!buf || (a->box && !sealed))
		return fail("malloc", -ENOMEM);
	memset(buf, 'z', batch);
	if ((fd = raw_connect(a->endpoint)) < 0)
		return fail("connect", fd);
	double t0 = now_s(), c0 = cpu_s();
	/* raw-box: one record per write, sealed just before it. */
	for (unsigned long long r = 0; a->box && r < a->count; r++) {
		int rc = box_seal(sealed, (unsigned char *)buf, a->size, r);
		if (rc == 0)
			rc = raw_write_full(fd, (char *)sealed, a->size + BENCH_BOX_MAC, false);
		if (rc < 0)
			return fail("seal/write", rc);
	}
	if (a->box)
		left = 0; /* every record went above */
	while (left) {
		size_t n = left < batch ? (size_t)left : batch;
		int rc = raw_write_full(fd, buf, n, false);
		if (rc < 0)
			return fail("write", rc);
		left -= n;
	}
	shutdown(fd, SHUT_WR);
	char c;
	ssize_t n;
	while ((n = recv(fd, &c, 1, 0)) < 0 && errno == EINTR)
		;
	double secs = now_s() - t0, cpu = cpu_s() - c0;
	close(fd);
	free(buf);
	free(sealed);
	thr_result(a, secs, (double)a->count, cpu);
	printf("\n");
	return 0;
}

/* raw-lat-rep, raw-busy-lat-rep: echo COUNT + warm-up SIZE-byte requests. */
static int
raw_lat_rep(const struct bench_args *a)
{
	bool busy = strstr(a->mode, "busy") != NULL;
	char *buf = malloc(a->size ? a->size : 1);
	unsigned long i, n = a->count + BENCH_LAT_WARMUP;
	int fd, rc;

	if (!buf)
		return fail("malloc", -ENOMEM);
	if ((fd = raw_accept(a->endpoint)) < 0)
		return fail("listen/accept", fd);
	if (busy)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < n; i++) {
		if ((rc = raw_read_full(fd, buf, a->size, busy)) < 0) {
			fprintf(stderr, "FAIL raw lat-rep: got %lu of %lu requests (%s)\n", i, n,
			        strerror(-rc));
			return 1;
		}
		if ((rc = raw_write_full(fd, buf, a->size, busy)) < 0)
			return fail("reply", rc);
	}
	close(fd);
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

/* The RESULT line of a latency run: percentiles of rtt[0..count) (sorted here). */
static void
lat_report(const struct bench_args *a, double *rtt, double cpu)
{
	unsigned long i, m = a->count;
	double sum = 0;

	for (i = 0; i < m; i++)
		sum += rtt[i];
	qsort(rtt, m, sizeof *rtt, cmp_double);
	result_head(a);
	printf(" p50_us=%.2f p99_us=%.2f p999_us=%.2f mean_us=%.2f cpu_s_per_M=%.4f\n",
	       m ? pct(rtt, m, 50) : 0, m ? pct(rtt, m, 99) : 0, m ? pct(rtt, m, 99.9) : 0,
	       m ? sum / (double)m : 0, m ? cpu / (double)m * 1e6 : 0);
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
	if ((rc = lat_ctx_new(a, &c)) < 0)
		return fail("context", rc);
	bool routed = strcmp(a->pattern, "dealerrouter") == 0;
	if ((rc = sock_open(&c, routed ? B_DEALER : B_REQ, -1, &s)) < 0)
		return fail("socket", rc);
	if (strstr(a->pattern, "busy") && (rc = bench_busy_poll(&s, BENCH_BUSY_POLL_US)) < 0)
		return fail("busy-poll", rc);
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
	lat_report(a, rtt, cpu);
	free(rtt);
	return 0;
}

/*
 * raw-lat, raw-busy-lat: the asker of the raw ping-pong, timed like lat:
 * one write of SIZE bytes, one read of SIZE bytes. busy: a non-blocking
 * socket and a read retried at once, never sleeping in the kernel.
 */
static int
raw_lat(const struct bench_args *a)
{
	bool busy = strstr(a->mode, "busy") != NULL;
	char *buf = malloc(a->size ? a->size : 1);
	double *rtt = calloc(a->count ? a->count : 1, sizeof *rtt);
	double c0 = 0;
	unsigned long i, n = a->count + BENCH_LAT_WARMUP;
	int fd, rc;

	if (!buf || !rtt)
		return fail("malloc", -ENOMEM);
	memset(buf, 'q', a->size ? a->size : 1);
	if ((fd = raw_connect(a->endpoint)) < 0)
		return fail("connect", fd);
	if (busy)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < n; i++) {
		if (i == BENCH_LAT_WARMUP)
			c0 = cpu_s();
		double t = now_s();
		if ((rc = raw_write_full(fd, buf, a->size, busy)) < 0)
			return fail("request", rc);
		if ((rc = raw_read_full(fd, buf, a->size, busy)) < 0) {
			fprintf(stderr, "FAIL raw lat: got %lu of %lu replies (%s)\n", i, n,
			        strerror(-rc));
			return 1;
		}
		if (i >= BENCH_LAT_WARMUP)
			rtt[i - BENCH_LAT_WARMUP] = (now_s() - t) * 1e6;
	}
	double cpu = cpu_s() - c0;
	close(fd);
	free(buf);
	lat_report(a, rtt, cpu);
	free(rtt);
	return 0;
}

static int
usage(const char *prog)
{
	fprintf(stderr,
	        "usage: %s thr-recv PATTERN ENDPOINT COUNT SIZE\n"
	        "       %s thr-send PATTERN ENDPOINT[,ENDPOINT...] COUNT SIZE\n"
	        "       %s thr-send pushpull-curve ENDPOINT COUNT SIZE SERVERKEY\n"
	        "       %s thr-recv|thr-send pushpull-tls ENDPOINT COUNT SIZE TLSDIR\n"
	        "       %s "
	        "lat-rep|lat|lat-router|lat-dealer|busy-lat-rep|busy-lat|cio-lat-rep|cio-lat|"
	        "stall-recv|stall-send|"
	        "idle-recv|idle-send "
	        "ENDPOINT COUNT SIZE\n"
	        "       %s raw-thr-recv|raw-thr-send|raw-box-thr-recv|raw-box-thr-send|"
	        "raw-lat-rep|raw-lat|raw-busy-lat-rep|raw-busy-lat ENDPOINT COUNT SIZE\n"
	        "PATTERN: pushpull, pushpull-curve, dealerrouter, pubsub, pubsub2 ... pubsub%d,\n"
	        "         fanoutN (N <= %d: the publisher binds, N SUBs connect), topicsT\n"
	        "         (%d SUBs share T distinct topics; SIZE >= %d)\n",
	        prog, prog, prog, prog, prog, prog, BENCH_SUBS_MAX, BENCH_FANOUT_MAX,
	        BENCH_TOPIC_SUBS, BENCH_TOPIC_LEN);
	return 2;
}

static const struct {
	const char *mode;
	int (*run)(const struct bench_args *a);
} modes[] = {
	{"thr-recv", thr_recv},
	{"thr-send", thr_send},
	{"lat-rep", lat_rep},
	{"lat", lat_req},
	{"lat-router", lat_rep},
	{"lat-dealer", lat_req},
	{"busy-lat-rep", lat_rep},
	{"busy-lat", lat_req},
	{"cio-lat-rep", lat_rep},
	{"cio-lat", lat_req},
	{"stall-recv", stall_recv},
	{"stall-send", stall_send},
	{"idle-recv", idle_recv},
	{"idle-send", idle_send},
	{"raw-thr-recv", raw_thr_recv},
	{"raw-thr-send", raw_thr_send},
	{"raw-box-thr-recv", raw_thr_recv},
	{"raw-box-thr-send", raw_thr_send},
	{"raw-lat-rep", raw_lat_rep},
	{"raw-lat", raw_lat},
	{"raw-busy-lat-rep", raw_lat_rep},
	{"raw-busy-lat", raw_lat},
};

int
main(int argc, char **argv)
{
	struct bench_args a = {0};
	struct bench_pattern pat = {0};
	unsigned long size;
	size_t m;
	int i = 2;

	if (argc < 5)
		return usage(argv[0]);
	a.mode = argv[1];
	for (m = 0; m < sizeof modes / sizeof modes[0]; m++)
		if (strcmp(a.mode, modes[m].mode) == 0)
			break;
	if (m == sizeof modes / sizeof modes[0])
		return usage(argv[0]);
	bool thr = strncmp(a.mode, "thr-", 4) == 0;
	a.raw = strncmp(a.mode, "raw-", 4) == 0;
	a.box = strncmp(a.mode, "raw-box-", 8) == 0;
#ifdef BENCH_LIBZMQ
	if (a.box) {
		fprintf(stderr, "%s: raw-box-* is bench_zr's (libsodium)\n", argv[0]);
		return 2;
	}
#else
	/* Picks libsodium's fastest code for this CPU, as zring's context does:
	 * without it the portable Salsa20 ran three times slower. */
	if (a.box && sodium_init() < 0)
		return fail("sodium_init", -EIO);
#endif
	if (a.raw)
		a.pattern = strstr(a.mode, "busy") ? "raw-busy" : "raw";
	else if (thr)
		a.pattern = argv[i++];
	else if (strcmp(a.mode, "lat-router") == 0 || strcmp(a.mode, "lat-dealer") == 0)
		a.pattern = "dealerrouter"; /* ROUTER binds and echoes, DEALER asks */
	else if (strncmp(a.mode, "busy-", 5) == 0)
		a.pattern = "reqrep-busy";
	else if (strncmp(a.mode, "cio-", 4) == 0)
		a.pattern = "reqrep-cio";
	else
		a.pattern = strncmp(a.mode, "lat", 3) == 0 ? "reqrep" : "pushpull";
	if (thr && pattern_parse(a.pattern, &pat) < 0)
		return usage(argv[0]);
	a.curve = thr && strcmp(a.pattern, "pushpull-curve") == 0;
	/* The CURVE sender takes the server's key as a last argument. */
	bool with_key = a.curve && strcmp(a.mode, "thr-send") == 0;
	/* Both TLS sides take the certificate folder as a last argument. */
	a.tls = thr && strcmp(a.pattern, "pushpull-tls") == 0;
	if (argc != (thr ? 6 : 5) + (with_key || a.tls ? 1 : 0))
		return usage(argv[0]);
	if (a.tls)
		a.tls_dir = argv[argc - 1];
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
	if (thr && pat.topics && a.size < BENCH_TOPIC_LEN)
		return usage(argv[0]);
	alarm(BENCH_ALARM_S);
	return modes[m].run(&a);
}
