/*
 * Backpressure tests of the broker model: shared helpers (static, included by
 * tests/broker/test_kernel_proof.c and tests/broker/test_backpressure.c).
 *
 *  - pyzmq peers driven by lines (tests/broker/peers/flood_peer.py, kp_sub.py)
 *    through the zring tool's spawner, stopped on teardown;
 *  - a delivery log whose handler can be held: it records each delivery,
 *    checks it is the next in sequence with the expected bytes, then waits
 *    for a permit before returning (so "the handler is stalled" is exact);
 *  - the kernel's view of a zring connection: the fd from the ACCEPTED
 *    monitor event, SIOCINQ (bytes waiting in its receive queue), SO_RCVBUF,
 *    and this process's resident set (VmRSS).
 *
 * Messages are the broker wire layout [name, "x-seq: <n>", payload]; the
 * payload is n as 8 big-endian octets, then octet i = (i * 7 + 3) & 0xff, as
 * flood_peer.py writes it. Every wait is bounded.
 */
#ifndef ZR_TESTS_BROKER_KP_UTIL_H
#define ZR_TESTS_BROKER_KP_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, vasprintf; first, before any system header */
#endif
#include "tools/zl_proc.c"
#include "zt_clock.h"
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/sockios.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_snd_wnd (glibc's lacks it) */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

#include "engine/sock_helpers.h" /* sleep_ms, free_tcp_port */

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define KP_FLOOD_PEER ZR_SOURCE_DIR "/tests/broker/peers/flood_peer.py"
#define KP_SUB_PEER ZR_SOURCE_DIR "/tests/broker/peers/kp_sub.py"
#define KP_WAIT_MS 10000 /* any single expected event */
#define KP_BIG 65536u    /* the seed's test: 64 KiB bodies */

/* ---- payloads ------------------------------------------------------------------ */

/* Fills buf (len octets) with message seq's payload. */
static inline void
kp_payload(uint8_t *buf, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 7 + 3) & 0xff);
	for (size_t i = 0; i < 8 && i < len; i++)
		buf[i] = (uint8_t)(seq >> (56 - 8 * i));
}

/* ---- pyzmq peers ----------------------------------------------------------------- */

#define KP_MAX_PEERS 6

struct kp_peer {
	struct zl_proc proc;
	char line[ZL_PROC_LINE_MAX];
};

static struct kp_peer *kp_peers[KP_MAX_PEERS];

/* Starts ZR_PYTHON script args... (NULL-terminated array); waits for "READY". */
static inline struct kp_peer *
kp_peer_start(const char *script, const char *const *args)
{
	char *argv[24];
	int argc = 0;
	struct kp_peer *p = calloc(1, sizeof *p);
	size_t slot = KP_MAX_PEERS;

	cr_assert_not_null(p);
	cr_assert_eq(access(ZR_PYTHON, X_OK), 0,
	             "%s not found: install python3-zmq (scripts/deps.sh)", ZR_PYTHON);
	argv[argc++] = (char *)ZR_PYTHON;
	argv[argc++] = (char *)script;
	for (size_t i = 0; args[i] != NULL && argc < 23; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	for (size_t i = 0; i < KP_MAX_PEERS; i++) {
		if (kp_peers[i] == NULL) {
			slot = i;
			break;
		}
	}
	cr_assert_lt(slot, (size_t)KP_MAX_PEERS);
	int rc = zl_proc_spawn(&p->proc, argv);

	cr_assert_eq(rc, 0, "cannot start %s: %s", script, strerror(-rc));
	kp_peers[slot] = p;
	rc = zl_proc_readline(&p->proc, p->line, sizeof p->line, 15000);
	cr_assert_geq(rc, 0, "no first line from %s (%s): is python3-zmq installed?", script,
	              strerror(-rc));
	cr_assert_str_eq(p->line, "READY", "the pyzmq peer said \"%s\"", p->line);
	return p;
}

/* Writes a command line to the peer (no answer awaited). */
static inline void __attribute__((format(printf, 2, 3)))
kp_tell(struct kp_peer *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	int rc = zl_proc_writeline(&p->proc, buf);

	cr_assert_eq(rc, 0, "cannot write \"%s\" to the pyzmq peer: %s", buf, strerror(-rc));
}

/* Reads the peer's next line (asserts one came within timeout_ms). */
static inline const char *
kp_answer(struct kp_peer *p, int timeout_ms)
{
	int rc = zl_proc_readline(&p->proc, p->line, sizeof p->line, timeout_ms);

	cr_assert_geq(rc, 0, "the pyzmq peer gave no answer within %d ms: %s", timeout_ms,
	              strerror(-rc));
	return p->line;
}

static inline void
kp_peers_stop(void)
{
	for (size_t i = 0; i < KP_MAX_PEERS; i++) {
		if (kp_peers[i] != NULL) {
			zl_proc_stop(&kp_peers[i]->proc, 1000);
			free(kp_peers[i]);
			kp_peers[i] = NULL;
		}
	}
}

/* A start argument "name=value" in a static buffer per slot (for peer argv). */
static inline const char *kp_arg(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline const char *
kp_arg(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return buf;
}

/* ---- a delivery log with a handler that can be held ----------------------------- */

struct kp_log {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const char *name; /* the expected frame 0, or NULL for any */
	size_t size;      /* the expected payload length */
	uint8_t *expect;  /* scratch: the expected payload */
	long permits;     /* handler calls that may still return; < 0: all */
	uint64_t n;       /* deliveries seen */
	uint64_t next;    /* the sequence number expected next */
	uint64_t bad;     /* deliveries that were not the expected next one */
	char why[200];    /* what was wrong with the first bad one */
};

static inline void
kp_log_init(struct kp_log *l, const char *name, size_t size, bool held)
{
	memset(l, 0, sizeof *l);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->name = name;
	l->size = size;
	l->expect = malloc(size > 0 ? size : 1);
	cr_assert_not_null(l->expect);
	l->permits = held ? 0 : -1;
}

static inline void
kp_log_fini(struct kp_log *l)
{
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->expect);
	l->expect = NULL;
}

static inline void kp_log_bad(struct kp_log *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void
kp_log_bad(struct kp_log *l, const char *fmt, ...)
{
	va_list ap;

	if (l->bad++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(l->why, sizeof l->why, fmt, ap);
	va_end(ap);
}

/* The handler: records and checks the delivery, then waits for a permit. */
static inline void
kp_log_handler(const struct zr_delivery *d, void *arg)
{
	struct kp_log *l = arg;
	uint64_t seq = 0;

	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < 8 && i < d->payload_len; i++)
		seq = seq << 8 | ((const uint8_t *)d->payload)[i];
	if (d->error != 0) {
		kp_log_bad(l, "delivery %" PRIu64 " is an error item (%d): %s", l->n, d->error,
		           d->error_text != NULL ? d->error_text : "");
	} else if (l->name != NULL && strcmp(d->name, l->name) != 0) {
		kp_log_bad(l, "delivery %" PRIu64 " is named \"%s\", not \"%s\"", l->n, d->name,
		           l->name);
	} else if (d->payload_len != l->size) {
		kp_log_bad(l, "delivery %" PRIu64 " carries %zu octets, not %zu", l->n,
		           d->payload_len, l->size);
	} else if (seq != l->next) {
		kp_log_bad(l, "delivery %" PRIu64 " is message %" PRIu64 ", expected %" PRIu64,
		           l->n, seq, l->next);
	} else {
		const char *h = zr_delivery_header(d, "x-seq");
		char want[32];

		snprintf(want, sizeof want, "%" PRIu64, seq);
		kp_payload(l->expect, l->size, seq);
		if (h == NULL || strcmp(h, want) != 0)
			kp_log_bad(l, "message %" PRIu64 " has x-seq \"%s\"", seq,
			           h != NULL ? h : "(none)");
		else if (memcmp(d->payload, l->expect, l->size) != 0)
			kp_log_bad(l, "message %" PRIu64 "'s payload differs", seq);
	}
	l->next = seq + 1;
	l->n++;
	pthread_cond_broadcast(&l->cv);
	while (l->permits == 0)
		pthread_cond_wait(&l->cv, &l->mu);
	if (l->permits > 0)
		l->permits--;
	pthread_mutex_unlock(&l->mu);
}

/* Lets n more handler calls return (n < 0: every call from now on). */
static inline void
kp_log_release(struct kp_log *l, long n)
{
	pthread_mutex_lock(&l->mu);
	if (n < 0 || l->permits < 0)
		l->permits = -1;
	else
		l->permits += n;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* Deliveries seen so far. */
static inline uint64_t
kp_log_count(struct kp_log *l)
{
	pthread_mutex_lock(&l->mu);
	uint64_t n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

/* Waits until at least n deliveries were seen; returns how many were. */
static inline uint64_t
kp_log_wait(struct kp_log *l, uint64_t n, int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->mu);
	while (l->n < n && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
		;
	uint64_t got = l->n;
	pthread_mutex_unlock(&l->mu);
	return got;
}

/* Asserts the log holds exactly messages 0 .. n-1, each once, in order. */
static inline void
kp_log_assert_all(struct kp_log *l, uint64_t n)
{
	pthread_mutex_lock(&l->mu);
	uint64_t got = l->n, bad = l->bad, next = l->next;
	char why[sizeof l->why];

	memcpy(why, l->why, sizeof why);
	pthread_mutex_unlock(&l->mu);
	cr_assert_eq(bad, 0, "%" PRIu64 " deliveries out of sequence or damaged; the first: %s",
	             bad, why);
	cr_assert_eq(got, n, "%" PRIu64 " deliveries, expected %" PRIu64, got, n);
	cr_assert_eq(next, n);
}

/* ---- brokers, released on teardown ------------------------------------------------ */

#define KP_MAX_BROKERS 4
#define KP_MAX_LOGS 4

static zr_ctx *kp_ctx;
static zr_broker *kp_brokers[KP_MAX_BROKERS];
static struct kp_log kp_logs[KP_MAX_LOGS];
static bool kp_log_used[KP_MAX_LOGS];
static char kp_ipc_paths[4][108];

static inline zr_ctx *
kp_context(void)
{
	if (kp_ctx == NULL)
		cr_assert_eq(zr_ctx_new(&kp_ctx), 0);
	return kp_ctx;
}

/* A log slot for a subscription's handler (freed on teardown). */
static inline struct kp_log *
kp_log_new(const char *name, size_t size, bool held)
{
	for (size_t i = 0; i < KP_MAX_LOGS; i++) {
		if (!kp_log_used[i]) {
			kp_log_used[i] = true;
			kp_log_init(&kp_logs[i], name, size, held);
			return &kp_logs[i];
		}
	}
	cr_assert_fail("more than %d logs", KP_MAX_LOGS);
	return NULL;
}

/* An endpoint for a bound broker: tcp on an ephemeral loopback port, or a
 * fresh ipc path (removed on teardown). */
static inline const char *
kp_endpoint(bool ipc, char *buf, size_t cap)
{
	if (!ipc) {
		snprintf(buf, cap, "tcp://127.0.0.1:0");
		return buf;
	}
	for (size_t i = 0; i < 4; i++) {
		if (kp_ipc_paths[i][0] == '\0') {
			snprintf(kp_ipc_paths[i], sizeof kp_ipc_paths[i], "/tmp/zr-kp-%ld-%zu.sock",
			         (long)getpid(), i);
			unlink(kp_ipc_paths[i]);
			snprintf(buf, cap, "ipc://%s", kp_ipc_paths[i]);
			return buf;
		}
	}
	cr_assert_fail("more than 4 ipc endpoints");
	return NULL;
}

static inline zr_broker *
kp_broker(int pattern, const char *endpoint, int side, unsigned read_ahead)
{
	zr_broker *b = NULL;

	cr_assert_eq(zr_broker_new(kp_context(), pattern, endpoint, side, &b), 0, "%s", endpoint);
	if (read_ahead > 0)
		cr_assert_eq(zr_broker_set_read_ahead(b, read_ahead), 0);
	/* Teardown releases every held handler first; what is still queued then
	 * need not all be handled. */
	cr_assert_eq(zr_broker_set_drain_timeout(b, 2000), 0);
	cr_assert_eq(zr_broker_start(b), 0, "%s", zr_broker_error(b));
	for (size_t i = 0; i < KP_MAX_BROKERS; i++) {
		if (kp_brokers[i] == NULL) {
			kp_brokers[i] = b;
			return b;
		}
	}
	cr_assert_fail("more than %d brokers", KP_MAX_BROKERS);
	return NULL;
}

/* Subscribes log's handler to name on b (one worker: in order). */
static inline zr_subscription *
kp_subscribe(zr_broker *b, const char *name, struct kp_log *l)
{
	struct zr_sub_opts o = {.handler = kp_log_handler, .arg = l};
	zr_subscription *sub = NULL;
	int rc = zr_subscribe(b, name, &o, &sub);

	cr_assert_eq(rc, 0, "subscribe %s: %s (%s)", name, zr_strerror(rc), zr_broker_error(b));
	return sub;
}

/* The resolved address the bound subscription listens on. */
static inline const char *
kp_bound(zr_broker *b, char *buf, size_t cap)
{
	int rc = zr_broker_bound_address(b, buf, cap);

	cr_assert_gt(rc, 0, "bound address: %s", zr_strerror(rc));
	return buf;
}

static inline void
kp_teardown(void)
{
	for (size_t i = 0; i < KP_MAX_LOGS; i++)
		if (kp_log_used[i])
			kp_log_release(&kp_logs[i], -1);
	kp_peers_stop();
	for (size_t i = 0; i < KP_MAX_BROKERS; i++) {
		zr_broker_free(kp_brokers[i]);
		kp_brokers[i] = NULL;
	}
	if (kp_ctx != NULL)
		zr_ctx_free(kp_ctx);
	kp_ctx = NULL;
	for (size_t i = 0; i < KP_MAX_LOGS; i++) {
		if (kp_log_used[i])
			kp_log_fini(&kp_logs[i]);
		kp_log_used[i] = false;
	}
	for (size_t i = 0; i < 4; i++) {
		if (kp_ipc_paths[i][0] != '\0')
			unlink(kp_ipc_paths[i]);
		kp_ipc_paths[i][0] = '\0';
	}
}

/* ---- the kernel's view -------------------------------------------------------------- */

/* Starts recording accepted connections on s (before any peer connects). */
static inline void
kp_watch_accepts(zr_socket *s)
{
	cr_assert_not_null(s);
	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_ACCEPTED), 0);
}

/* The fd of the next connection s accepted (its ACCEPTED event's value). */
static inline int
kp_accepted_fd(zr_socket *s, int timeout_ms)
{
	uint64_t deadline = zt_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct zr_event ev;
		uint64_t now = zt_now_ms();

		cr_assert_lt(now, deadline, "no connection was accepted within %d ms", timeout_ms);
		if (zr_monitor_recv(s, &ev, (int)(deadline - now)) == 0 &&
		    ev.type == ZR_EVENT_ACCEPTED) {
			cr_assert_geq(ev.value, 0);
			return ev.value;
		}
	}
}

/* Bytes waiting in the fd's kernel receive queue (tcp or unix stream). */
static inline int
kp_inq(int fd)
{
	int n = -1;

	cr_assert_eq(ioctl(fd, SIOCINQ, &n), 0, "SIOCINQ on fd %d: %s", fd, strerror(errno));
	return n;
}

static inline int
kp_rcvbuf(int fd)
{
	int v = 0;
	socklen_t len = sizeof v;

	cr_assert_eq(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	return v;
}

/* The receive window this end last advertised (TCP_INFO tcpi_rcv_wnd,
 * Linux >= 6.2: the u32 right after tcpi_snd_wnd, past what older
 * <linux/tcp.h> declare), or -1 when the kernel does not report it. */
static inline long
kp_rcv_wnd(int fd)
{
	uint8_t info[sizeof(struct tcp_info) + 64];
	socklen_t len = sizeof info;
	size_t off = offsetof(struct tcp_info, tcpi_snd_wnd) + 4;
	uint32_t w;

	memset(info, 0, sizeof info);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len) != 0 || len < off + 4)
		return -1;
	memcpy(&w, info + off, 4);
	return (long)w;
}

/* This process's resident set, bytes (VmRSS). */
static inline size_t
kp_rss(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kb = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmRSS: %zu kB", &kb) == 1)
			break;
	fclose(f);
	cr_assert_gt(kb, 0);
	return kb * 1024;
}

static inline double
kp_mib(size_t bytes)
{
	return (double)bytes / 1048576.0;
}

#endif /* ZR_TESTS_BROKER_KP_UTIL_H */
