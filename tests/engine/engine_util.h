/*
 * Engine tests: shared helpers (static, included by each tests/engine/test_*.c).
 *
 * A "side" is one end of a socket pair: either a zring socket in this process
 * or a libzmq socket in a pyzmq peer process (tests/engine/peers/epeer.py),
 * driven by lines on its stdin/stdout. Both are used through the same calls,
 * so one scenario runs zring <-> libzmq in either role and zring <-> zring.
 *
 * Messages are compared as text: frame tokens joined by ':' where a token is
 * the hex of a frame of up to 512 octets or "g<len>,<seed>" for a generated
 * frame (octet i = (i % 251 + seed) & 0xff), exactly as epeer.py writes them.
 * Every wait is bounded; peers die with the test (and on teardown).
 */
#ifndef ZR_TESTS_ENGINE_ENGINE_UTIL_H
#define ZR_TESTS_ENGINE_ENGINE_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, vasprintf; first, before any system header */
#endif
#include "tools/zl_proc.c"
#include "zt_clock.h"
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define ET_PEER_SCRIPT ZR_SOURCE_DIR "/tests/engine/peers/epeer.py"
#define ET_WAIT_MS 15000 /* any single expected event: generous, only failing runs wait it out */
#define ET_QUIET_MS 400  /* "nothing arrives" windows */
#define ET_LINE_MAX (1u << 20)

/* ---- generated frames and tokens ------------------------------------------ */

static inline uint8_t
et_gen_byte(size_t i, unsigned seed)
{
	return (uint8_t)((i % 251 + seed) & 0xff);
}

static inline uint32_t
et_crc32(const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	static bool ready;
	uint32_t c = 0xffffffffu;

	if (!ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;

			for (int k = 0; k < 8; k++)
				v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
			table[i] = v;
		}
		ready = true;
	}
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* A growable string. */
struct et_str {
	char *p;
	size_t len, cap;
};

static inline void __attribute__((format(printf, 2, 3)))
et_str_add(struct et_str *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = s->cap - s->len;

		va_start(ap, fmt);
		n = vsnprintf(s->p != NULL ? s->p + s->len : NULL, room, fmt, ap);
		va_end(ap);
		cr_assert_geq(n, 0);
		if ((size_t)n < room) {
			s->len += (size_t)n;
			return;
		}
		s->cap = (s->cap + (size_t)n + 1) * 2;
		s->p = realloc(s->p, s->cap);
		cr_assert_not_null(s->p);
	}
}

static inline void
et_str_frame(struct et_str *s, const uint8_t *f, size_t len)
{
	if (len <= 512) {
		if (len == 0)
			et_str_add(s, "%s", "");
		for (size_t i = 0; i < len; i++)
			et_str_add(s, "%02x", f[i]);
		return;
	}
	bool gen = true;

	for (size_t i = 0; i < len && gen; i++)
		gen = f[i] == et_gen_byte(i, f[0]);
	if (gen)
		et_str_add(s, "g%zu,%u", len, (unsigned)f[0]);
	else
		et_str_add(s, "x%zu,%u", len, (unsigned)et_crc32(f, len));
}

/* A message as tokens (malloc'd). */
static inline char *
et_msg_text(const zr_msg *m)
{
	struct et_str s = {0};

	et_str_add(&s, "%s", "");
	for (size_t i = 0; i < zr_msg_frames(m); i++) {
		size_t len;
		const uint8_t *f = zr_msg_frame(m, i, &len);

		if (i > 0)
			et_str_add(&s, ":");
		et_str_frame(&s, f, len);
	}
	return s.p;
}

static inline int
et_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Tokens -> a new message. */
static inline zr_msg *
et_msg_make(const char *text)
{
	zr_msg *m;
	const char *p = text;

	cr_assert_eq(zr_msg_new(&m), 0);
	for (;;) {
		const char *end = strchr(p, ':');
		size_t tl = end != NULL ? (size_t)(end - p) : strlen(p);

		if (tl > 0 && p[0] == 'g') {
			size_t len = 0;
			unsigned seed = 0;

			cr_assert_eq(sscanf(p, "g%zu,%u", &len, &seed), 2, "bad token in %s", text);
			uint8_t *buf = malloc(len);

			cr_assert(buf != NULL || len == 0);
			for (size_t i = 0; i < len; i++)
				buf[i] = et_gen_byte(i, seed);
			cr_assert_eq(zr_msg_add(m, buf, len), 0);
			free(buf);
		} else {
			uint8_t buf[512];

			cr_assert(tl % 2 == 0 && tl / 2 <= sizeof buf, "bad token in %s", text);
			for (size_t i = 0; i < tl / 2; i++) {
				int hi = et_hexval(p[2 * i]), lo = et_hexval(p[2 * i + 1]);

				cr_assert(hi >= 0 && lo >= 0, "bad hex in %s", text);
				buf[i] = (uint8_t)(hi << 4 | lo);
			}
			cr_assert_eq(zr_msg_add(m, buf, tl / 2), 0);
		}
		if (end == NULL)
			return m;
		p = end + 1;
	}
}

/* The canonical text of tokens (small g-frames become hex). malloc'd. */
static inline char *
et_canon(const char *text)
{
	zr_msg *m = et_msg_make(text);
	char *t = et_msg_text(m);

	zr_msg_free(m);
	return t;
}

/* "a" "b" -> "a:b" (malloc'd). */
static inline char *
et_join(const char *a, const char *b)
{
	struct et_str s = {0};

	et_str_add(&s, "%s:%s", a, b);
	return s.p;
}

/* The token of a string's octets ("hi" -> "6869"), malloc'd. */
static inline char *
et_hex(const char *str)
{
	struct et_str s = {0};

	et_str_add(&s, "%s", "");
	et_str_frame(&s, (const uint8_t *)str, strlen(str));
	return s.p;
}

/* The standard payloads: multipart, empty frames first/middle/last, a lone
 * empty frame, both sides of the 255/256 octet frame-size boundary, 1 MiB. */
static const char *const et_payloads[] = {
	"68656c6c6f",           "",           ":61:62",        "61::62", "61:62:", "g255,1:g256,2",
	"31:32:33:34:35:36:37", "g1048576,7", "41:g300000,9:",
};
#define ET_NPAYLOADS (sizeof et_payloads / sizeof et_payloads[0])

/* ---- pyzmq peers -------------------------------------------------------------- */

struct et_peer {
	pid_t pid;
	int in_fd, out_fd;
	char *buf;
	size_t len;
	char line[ET_LINE_MAX];
};

#define ET_MAX_PEERS 4
static struct et_peer *et_peers[ET_MAX_PEERS];

static inline void
et_peer_kill(struct et_peer *p)
{
	if (p == NULL || p->pid <= 0)
		return;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	p->pid = 0;
	close(p->in_fd);
	close(p->out_fd);
}

/* Reads one line (without '\n') into p->line; false on timeout or EOF. */
static inline bool
et_peer_readline(struct et_peer *p, int timeout_ms)
{
	uint64_t deadline = zt_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		char *nl = p->len > 0 ? memchr(p->buf, '\n', p->len) : NULL;

		if (nl != NULL) {
			size_t n = (size_t)(nl - p->buf);

			cr_assert_lt(n, sizeof p->line);
			memcpy(p->line, p->buf, n);
			p->line[n] = '\0';
			memmove(p->buf, nl + 1, p->len - n - 1);
			p->len -= n + 1;
			if (strncmp(p->line, "FATAL", 5) == 0)
				cr_assert_fail("pyzmq peer: %s", p->line);
			return true;
		}
		uint64_t now = zt_now_ms();

		if (now >= deadline)
			return false;
		struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};

		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		cr_assert_lt(p->len, (size_t)ET_LINE_MAX, "peer line too long");
		ssize_t r = read(p->out_fd, p->buf + p->len, ET_LINE_MAX - p->len);

		if (r <= 0)
			return false;
		p->len += (size_t)r;
	}
}

/* Starts ZR_PYTHON with args (a script and its arguments, NULL-terminated)
 * as a peer that dies with the test and is killed at teardown. */
static inline struct et_peer *
et_peer_spawn(const char *const *args)
{
	char *argv[32];
	int argc = 0;
	struct et_peer *p = calloc(1, sizeof *p);

	cr_assert_not_null(p);
	p->buf = malloc(ET_LINE_MAX);
	cr_assert_not_null(p->buf);
	cr_assert_eq(access(ZR_PYTHON, X_OK), 0,
	             "%s not found: install python3-zmq (scripts/deps.sh)", ZR_PYTHON);
	argv[argc++] = (char *)ZR_PYTHON;
	for (size_t i = 0; args[i] != NULL && argc < 31; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	signal(SIGPIPE, SIG_IGN);
	/* The same spawner as the zring tool's demo (dies with the test). */
	{
		static struct zl_proc child;
		int rc = zl_proc_spawn(&child, argv);

		cr_assert_eq(rc, 0, "cannot start %s: %s", args[0], strerror(-rc));
		p->pid = child.pid;
		p->in_fd = child.in_fd;
		p->out_fd = child.out_fd;
	}
	for (size_t i = 0; i < ET_MAX_PEERS; i++) {
		if (et_peers[i] == NULL) {
			et_peers[i] = p;
			return p;
		}
	}
	return p; /* beyond the table: not killed at teardown (dies with the test) */
}

/* Starts epeer.py TYPE bind|connect ENDPOINT [opts] (opts NULL-terminated
 * array or NULL); returns the peer, its endpoint in p->line + 9. */
static inline struct et_peer *
et_peer_start(const char *type, const char *how, const char *ep, const char *const *opts)
{
	const char *args[24] = {ET_PEER_SCRIPT, type, how, ep};
	size_t n = 4;

	for (size_t i = 0; opts != NULL && opts[i] != NULL && n < 23; i++)
		args[n++] = opts[i];
	args[n] = NULL;
	struct et_peer *p = et_peer_spawn(args);

	cr_assert(et_peer_readline(p, 15000), "no first line from the pyzmq peer (%s %s %s)", type,
	          how, ep);
	cr_assert(strncmp(p->line, "ENDPOINT ", 9) == 0, "peer said \"%s\"", p->line);
	return p;
}

/* Sends a command line and returns the answer line (asserts one came). */
static inline const char *__attribute__((format(printf, 3, 4)))
et_peer_ask(struct et_peer *p, int timeout_ms, const char *fmt, ...)
{
	struct et_str s = {0};
	va_list ap;
	char *tmp;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&tmp, fmt, ap);
	va_end(ap);
	cr_assert_geq(n, 0);
	et_str_add(&s, "%s\n", tmp);
	free(tmp);
	for (size_t off = 0; off < s.len;) {
		ssize_t w = write(p->in_fd, s.p + off, s.len - off);

		cr_assert_gt(w, 0, "cannot write to the pyzmq peer: %s", strerror(errno));
		off += (size_t)w;
	}
	free(s.p);
	cr_assert(et_peer_readline(p, timeout_ms + 5000), "the pyzmq peer did not answer \"%.60s\"",
	          fmt);
	return p->line;
}

static inline void
et_peers_stop(void)
{
	for (size_t i = 0; i < ET_MAX_PEERS; i++) {
		if (et_peers[i] != NULL) {
			et_peer_kill(et_peers[i]);
			free(et_peers[i]->buf);
			free(et_peers[i]);
			et_peers[i] = NULL;
		}
	}
}

/* ---- zring --------------------------------------------------------------------- */

#define ET_MAX_CTX 2
static zr_ctx *et_ctx[ET_MAX_CTX];
#define ET_MAX_SOCKS 8
static zr_socket *et_socks[ET_MAX_SOCKS];
static char et_ipc_paths[4][108];

static inline zr_ctx *
et_ctx_get(int i)
{
	if (et_ctx[i] == NULL)
		cr_assert_eq(zr_ctx_new(&et_ctx[i]), 0);
	return et_ctx[i];
}

static inline void
et_zopt_int(zr_socket *s, int opt, int v)
{
	cr_assert_eq(zr_setsockopt(s, opt, &v, sizeof v), 0, "setsockopt %d", opt);
}

/* A zring socket with LINGER 0 and ET_WAIT_MS send/receive timeouts. */
static inline zr_socket *
et_zopen(int ctx_index, int type)
{
	zr_socket *s;

	cr_assert_eq(zr_socket_open(et_ctx_get(ctx_index), type, &s), 0);
	et_zopt_int(s, ZR_LINGER, 0);
	et_zopt_int(s, ZR_SNDTIMEO, ET_WAIT_MS);
	et_zopt_int(s, ZR_RCVTIMEO, ET_WAIT_MS);
	for (size_t i = 0; i < ET_MAX_SOCKS; i++) {
		if (et_socks[i] == NULL) {
			et_socks[i] = s;
			return s;
		}
	}
	cr_assert_fail("too many sockets");
	return NULL;
}

static inline void
et_zclose(zr_socket *s)
{
	for (size_t i = 0; i < ET_MAX_SOCKS; i++) {
		if (et_socks[i] == s)
			et_socks[i] = NULL;
	}
	zr_socket_close(s);
}

/* Binds to tcp://127.0.0.1:0 or a fresh ipc path; returns the endpoint text. */
static inline const char *
et_zbind(zr_socket *s, bool ipc)
{
	static char ep[256];
	size_t len = sizeof ep;

	if (ipc) {
		static unsigned n;
		char *path = NULL;

		for (size_t i = 0; i < 4; i++) {
			if (et_ipc_paths[i][0] == '\0') {
				path = et_ipc_paths[i];
				break;
			}
		}
		cr_assert_not_null(path);
		snprintf(path, 108, "/tmp/zr-et-%d-%u.ipc", (int)getpid(), n++);
		snprintf(ep, sizeof ep, "ipc://%s", path);
		cr_assert_eq(zr_bind(s, ep), 0, "bind %s", ep);
		return ep;
	}
	cr_assert_eq(zr_bind(s, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert(strncmp(ep, "tcp://127.0.0.1:", 16) == 0 && strcmp(ep, "tcp://127.0.0.1:0") != 0,
	          "LAST_ENDPOINT is \"%s\"", ep);
	return ep;
}

/* An endpoint for a pyzmq peer to bind (ipc: a fresh path; tcp: port 0). */
static inline const char *
et_peer_bind_ep(bool ipc)
{
	static char ep[128];

	if (!ipc)
		return "tcp://127.0.0.1:*";
	static unsigned n;
	char *path = NULL;

	for (size_t i = 0; i < 4; i++) {
		if (et_ipc_paths[i][0] == '\0') {
			path = et_ipc_paths[i];
			break;
		}
	}
	cr_assert_not_null(path);
	snprintf(path, 108, "/tmp/zr-et-%d-p%u.ipc", (int)getpid(), n++);
	snprintf(ep, sizeof ep, "ipc://%s", path);
	return ep;
}

static inline void
et_teardown(void)
{
	et_peers_stop();
	for (size_t i = 0; i < ET_MAX_SOCKS; i++) {
		if (et_socks[i] != NULL) {
			zr_socket_close(et_socks[i]);
			et_socks[i] = NULL;
		}
	}
	for (size_t i = 0; i < ET_MAX_CTX; i++) {
		zr_ctx_free(et_ctx[i]);
		et_ctx[i] = NULL;
	}
	for (size_t i = 0; i < 4; i++) {
		if (et_ipc_paths[i][0] != '\0')
			unlink(et_ipc_paths[i]);
		et_ipc_paths[i][0] = '\0';
	}
}

/* ---- sides ---------------------------------------------------------------------- */

struct et_side {
	const char *name; /* for messages: "zring PUSH", "libzmq PULL" */
	int type;
	zr_socket *z;      /* zring side */
	struct et_peer *p; /* pyzmq side */
};

static inline const char *
et_type_name(int type)
{
	switch (type) {
	case ZR_PAIR:
		return "PAIR";
	case ZR_PUB:
		return "PUB";
	case ZR_SUB:
		return "SUB";
	case ZR_REQ:
		return "REQ";
	case ZR_REP:
		return "REP";
	case ZR_DEALER:
		return "DEALER";
	case ZR_ROUTER:
		return "ROUTER";
	case ZR_PULL:
		return "PULL";
	case ZR_PUSH:
		return "PUSH";
	case ZR_XPUB:
		return "XPUB";
	case ZR_XSUB:
		return "XSUB";
	default:
		return "?";
	}
}

/* Sends a message given as tokens; asserts it was taken. */
static inline void
et_send(struct et_side *s, const char *text)
{
	if (s->p != NULL) {
		const char *r = et_peer_ask(s->p, ET_WAIT_MS, "send %s", text);

		cr_assert_str_eq(r, "SENT", "%s send [%.80s]: %s", s->name, text, r);
		return;
	}
	zr_msg *m = et_msg_make(text);
	int rc = zr_send(s->z, &m, 0);

	cr_assert_eq(rc, 0, "%s zr_send [%.80s]: %s", s->name, text, zr_strerror(rc));
	cr_assert_null(m);
}

/* Receives one message as tokens within timeout_ms (malloc'd), or NULL. */
static inline char *
et_recv(struct et_side *s, int timeout_ms)
{
	if (s->p != NULL) {
		const char *r = et_peer_ask(s->p, timeout_ms, "recv %d", timeout_ms);

		if (strcmp(r, "TIMEOUT") == 0)
			return NULL;
		cr_assert(strncmp(r, "MSG ", 4) == 0, "%s recv: %s", s->name, r);
		return strdup(r + 4);
	}
	zr_msg *m = NULL;

	et_zopt_int(s->z, ZR_RCVTIMEO, timeout_ms);
	int rc = zr_recv(s->z, &m, 0);

	et_zopt_int(s->z, ZR_RCVTIMEO, ET_WAIT_MS);
	if (rc == -EAGAIN)
		return NULL;
	cr_assert_eq(rc, 0, "%s zr_recv: %s", s->name, zr_strerror(rc));
	char *t = et_msg_text(m);

	zr_msg_free(m);
	return t;
}

/* Receives within timeout_ms and asserts the message equals want (tokens). */
static inline void
et_expect_within(struct et_side *s, const char *want, int timeout_ms)
{
	char *w = et_canon(want);
	char *got = et_recv(s, timeout_ms);

	cr_assert_not_null(got, "%s: nothing received within %d ms, want [%.200s]", s->name,
	                   timeout_ms, w);
	cr_assert_str_eq(got, w, "%s received [%.200s], want [%.200s]", s->name, got, w);
	free(got);
	free(w);
}

/* The same within ET_WAIT_MS. */
static inline void
et_expect(struct et_side *s, const char *want)
{
	et_expect_within(s, want, ET_WAIT_MS);
}

/* Asserts nothing arrives within ms. */
static inline void
et_expect_none(struct et_side *s, int ms)
{
	char *got = et_recv(s, ms);

	cr_assert_null(got, "%s received [%.200s], want nothing", s->name, got);
}

/*
 * Sends probe from a until b receives it (the slow joiner, or a ROUTER that
 * drops messages for peers it does not know yet), then a fence, and discards
 * at b the probes still in flight before the fence. probe_in / fence_in are
 * what b sees of them (NULL: the same as sent; a ROUTER sees the sender's id
 * instead of the destination's).
 */
static inline void
et_sync2(struct et_side *a, struct et_side *b, const char *probe, const char *probe_in,
         const char *fence, const char *fence_in)
{
	uint64_t deadline = zt_now_ms() + ET_WAIT_MS;
	char *p = et_canon(probe_in != NULL ? probe_in : probe);
	char *f = et_canon(fence_in != NULL ? fence_in : fence);
	bool got = false;

	while (!got) {
		cr_assert_lt(zt_now_ms(), deadline, "%s never received a probe from %s", b->name,
		             a->name);
		et_send(a, probe);
		char *r = et_recv(b, 50);

		if (r != NULL) {
			cr_assert_str_eq(r, p, "%s received [%.200s] while probing", b->name, r);
			got = true;
		}
		free(r);
	}
	et_send(a, fence);
	for (;;) {
		char *r = et_recv(b, ET_WAIT_MS);

		cr_assert_not_null(r, "%s: the fence never came", b->name);
		if (strcmp(r, f) == 0) {
			free(r);
			break;
		}
		cr_assert_str_eq(r, p, "%s received [%.200s] before the fence", b->name, r);
		free(r);
	}
	free(p);
	free(f);
}

static inline void
et_sync(struct et_side *a, struct et_side *b, const char *probe, const char *fence)
{
	et_sync2(a, b, probe, NULL, fence, NULL);
}

/* Options for a side: "identity=HEX", "sub=HEX" (both kinds), others only for
 * pyzmq (passed through). */
static inline void
et_zapply(zr_socket *z, const char *const *opts)
{
	for (size_t i = 0; opts != NULL && opts[i] != NULL; i++) {
		const char *o = opts[i];
		zr_msg *m;
		size_t len;
		const void *f;

		if (strncmp(o, "identity=", 9) == 0 || strncmp(o, "sub=", 4) == 0) {
			bool id = o[0] == 'i';

			m = et_msg_make(o + (id ? 9 : 4));
			f = zr_msg_frame(m, 0, &len);
			cr_assert_eq(zr_setsockopt(z, id ? ZR_ROUTING_ID : ZR_SUBSCRIBE, f, len), 0,
			             "%s", o);
			zr_msg_free(m);
		} else if (strncmp(o, "sndhwm=", 7) == 0) {
			et_zopt_int(z, ZR_SNDHWM, atoi(o + 7));
		} else if (strncmp(o, "rcvhwm=", 7) == 0) {
			et_zopt_int(z, ZR_RCVHWM, atoi(o + 7));
		} else {
			cr_assert_fail("no zring option %s", o);
		}
	}
}

/*
 * Connects side a (type ta) and side b (type tb). a_py / b_py: which is a
 * pyzmq peer (not both); a_binds: a binds, b connects; ipc: the transport.
 * Two zring sides use two contexts over tcp and one over ipc, so both
 * shapes are covered.
 */
static inline void
et_pair(struct et_side *a, int ta, bool a_py, const char *const *aopts, struct et_side *b, int tb,
        bool b_py, const char *const *bopts, bool a_binds, bool ipc)
{
	struct et_side *binder = a_binds ? a : b, *conn = a_binds ? b : a;
	int tbind = a_binds ? ta : tb, tconn = a_binds ? tb : ta;
	bool pybind = a_binds ? a_py : b_py, pyconn = a_binds ? b_py : a_py;
	const char *const *obind = a_binds ? aopts : bopts, *const *oconn = a_binds ? bopts : aopts;
	char ep[256];
	static char names[2][64];

	memset(a, 0, sizeof *a);
	memset(b, 0, sizeof *b);
	a->type = ta;
	b->type = tb;
	snprintf(names[0], sizeof names[0], "%s %s (%s)", a_py ? "libzmq" : "zring",
	         et_type_name(ta), a_binds ? "bound" : "connected");
	snprintf(names[1], sizeof names[1], "%s %s (%s)", b_py ? "libzmq" : "zring",
	         et_type_name(tb), a_binds ? "connected" : "bound");
	a->name = names[0];
	b->name = names[1];
	if (pybind) {
		binder->p = et_peer_start(et_type_name(tbind), "bind", et_peer_bind_ep(ipc), obind);
		snprintf(ep, sizeof ep, "%s", binder->p->line + 9);
	} else {
		binder->z = et_zopen(0, tbind);
		et_zapply(binder->z, obind);
		snprintf(ep, sizeof ep, "%s", et_zbind(binder->z, ipc));
	}
	if (pyconn) {
		conn->p = et_peer_start(et_type_name(tconn), "connect", ep, oconn);
	} else {
		conn->z = et_zopen(!pybind && !ipc ? 1 : 0, tconn);
		et_zapply(conn->z, oconn);
		cr_assert_eq(zr_connect(conn->z, ep), 0, "connect %s", ep);
	}
}

#endif /* ZR_TESTS_ENGINE_ENGINE_UTIL_H */
