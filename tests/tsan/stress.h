/*
 * ThreadSanitizer stress programs: shared helpers (static inline, included
 * by each tests/tsan/<name>.c; no test framework, see CMakeLists.txt).
 *
 * A failed check prints "FAIL <file>:<line>: <what>" and ends the process
 * with status 1 at once, from whichever thread it ran on: the other threads
 * may be blocked inside zring, so nothing is unwound. A watchdog (alarm)
 * ends a program that hangs, so every program is bounded in time even when
 * a message is lost; every blocking call besides has a receive or send
 * timeout, and a timeout is a failed count.
 *
 * Endpoints: st_endpoint gives "tcp://127.0.0.1:0" (the kernel picks the
 * port) or a fresh abstract "ipc://@zring-tsan-<pid>-<n>"; st_bound reads
 * back what a bind got, for the connecting side.
 */
#ifndef ZR_TESTS_TSAN_STRESS_H
#define ZR_TESTS_TSAN_STRESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zt_clock.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

#define ST_WATCHDOG_S 90 /* the whole program; CTest's timeout is above it */
#define ST_WAIT_MS 20000 /* one expected message on a loaded machine under TSan */

static inline void st_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static inline void
st_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

#define ST_CHECK(cond, ...)                                       \
	do {                                                      \
		if (!(cond))                                      \
			st_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* A zring call that must return 0 (or a count). */
#define ST_OK(call)                                                                       \
	do {                                                                              \
		int st_rc_ = (call);                                                      \
		ST_CHECK(st_rc_ >= 0, "%s: %d (%s)", #call, st_rc_, zr_strerror(st_rc_)); \
	} while (0)

/* Arms the watchdog: SIGALRM's default action ends the process (non-zero). */
static inline void
st_start(const char *name)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("%s: pid %d\n", name, (int)getpid());
	alarm(ST_WATCHDOG_S);
}

static inline void
st_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(th, NULL, fn, arg);

	ST_CHECK(rc == 0, "pthread_create: %s", strerror(rc));
}

static inline void
st_join(pthread_t th)
{
	int rc = pthread_join(th, NULL);

	ST_CHECK(rc == 0, "pthread_join: %s", strerror(rc));
}

enum st_transport {
	ST_TCP,
	ST_IPC
};

static inline const char *
st_transport_name(enum st_transport t)
{
	return t == ST_TCP ? "tcp" : "ipc";
}

/* An endpoint to bind: loopback tcp on a port the kernel picks, or a fresh
 * abstract ipc name (nothing left behind on the file system). */
static inline void
st_endpoint(enum st_transport t, char *buf, size_t cap)
{
	static atomic_uint n;

	if (t == ST_TCP)
		snprintf(buf, cap, "tcp://127.0.0.1:0");
	else
		snprintf(buf, cap, "ipc://@zring-tsan-%d-%u", (int)getpid(),
		         atomic_fetch_add(&n, 1));
}

/* What s's last bind got (the kernel's port), to connect to. */
static inline void
st_bound(zr_socket *s, char *buf, size_t cap)
{
	size_t len = cap;

	ST_OK(zr_getsockopt(s, ZR_LAST_ENDPOINT, buf, &len));
}

/* Binds s on a fresh endpoint of transport t; ep receives the address. */
static inline void
st_bind(zr_socket *s, enum st_transport t, char *ep, size_t cap)
{
	char want[128];

	st_endpoint(t, want, sizeof want);
	ST_OK(zr_bind(s, want));
	st_bound(s, ep, cap);
}

static inline void
st_opt(zr_socket *s, int opt, int v)
{
	ST_OK(zr_setsockopt(s, opt, &v, sizeof v));
}

static inline zr_socket *
st_socket(zr_ctx *ctx, int type)
{
	zr_socket *s = NULL;

	ST_OK(zr_socket_open(ctx, type, &s));
	/* A lost message is a failed count, not a hang. */
	st_opt(s, ZR_RCVTIMEO, ST_WAIT_MS);
	st_opt(s, ZR_SNDTIMEO, ST_WAIT_MS);
	return s;
}

/* Payloads: 8 octets of sender id and sequence number, then filler whose
 * length varies with the sequence (an occasional large one), so frames of
 * every size class cross the engine. */
#define ST_BIG 70000u
#define ST_MAXLEN (8u + ST_BIG)

static inline size_t
st_payload_len(uint32_t seq)
{
	if (seq % 97 == 13)
		return 8u + ST_BIG; /* larger than one receive buffer */
	return 8u + (seq * 7u) % 300u;
}

static inline size_t
st_payload(uint8_t *buf, uint32_t sender, uint32_t seq)
{
	size_t len = st_payload_len(seq);

	memcpy(buf, &sender, 4);
	memcpy(buf + 4, &seq, 4);
	for (size_t i = 8; i < len; i++)
		buf[i] = (uint8_t)(seq + i);
	return len;
}

/* Checks a received payload: its length and filler match its sequence
 * number; returns the sender and sequence. */
static inline void
st_payload_check(const uint8_t *buf, size_t len, uint32_t *sender, uint32_t *seq)
{
	ST_CHECK(len >= 8, "payload of %zu octets", len);
	memcpy(sender, buf, 4);
	memcpy(seq, buf + 4, 4);
	ST_CHECK(len == st_payload_len(*seq), "sender %u seq %u: %zu octets, want %zu", *sender,
	         *seq, len, st_payload_len(*seq));
	for (size_t i = 8; i < len; i++)
		ST_CHECK(buf[i] == (uint8_t)(*seq + i), "sender %u seq %u: octet %zu wrong",
		         *sender, *seq, i);
}

static inline uint8_t *
st_buf(void)
{
	uint8_t *b = malloc(ST_MAXLEN);

	ST_CHECK(b != NULL, "malloc");
	return b;
}

/* Sends payload seq of sender (st_payload) as one frame; what names the
 * side in a failure. */
static inline void
st_send_payload(zr_socket *s, uint8_t *buf, uint32_t sender, uint32_t seq, const char *what)
{
	size_t len = st_payload(buf, sender, seq);
	int rc = zr_send_bytes(s, buf, len, 0);

	ST_CHECK(rc == 0, "%s: send %u of sender %u: %s", what, seq, sender, zr_strerror(rc));
}

/* Receives one single-frame payload and checks it; returns its length. */
static inline size_t
st_recv_payload(zr_socket *s, uint8_t *buf, const char *what, uint32_t *sender, uint32_t *seq)
{
	int rc = zr_recv_bytes(s, buf, ST_MAXLEN, 0);

	ST_CHECK(rc >= 0, "%s: receive: %s", what, zr_strerror(rc));
	ST_CHECK((size_t)rc <= ST_MAXLEN, "%s: %d octets", what, rc);
	st_payload_check(buf, (size_t)rc, sender, seq);
	return (size_t)rc;
}

/* Sends payloads 0..n-1 of sender, one frame each. */
static inline void
st_send_n(zr_socket *s, uint32_t sender, uint32_t n, const char *what)
{
	uint8_t *buf = st_buf();

	for (uint32_t i = 0; i < n; i++)
		st_send_payload(s, buf, sender, i, what);
	free(buf);
}

#endif /* ZR_TESTS_TSAN_STRESS_H */
