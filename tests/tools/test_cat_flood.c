/*
 * `zring cat -r -b PULL` against a peer that floods empty MORE frames and
 * never ends its message (issue 12): MAXMSGSIZE sees 0 octets, RCVHWM sees
 * no message, so only the frames-per-message limit (MAXFRAMES, 65536 by
 * default) stops it. Before that limit, 200 MiB of `01 00` took the tool
 * from 2 MiB to 1.6 GiB of RSS.
 *
 * The hostile client is a raw TCP socket driven by the codec's public API
 * (zring's own ZMTP client: it writes the greeting and READY, or the CURVE
 * handshake, and under CURVE encrypts each empty frame). Each test asserts
 * that the tool closed that connection well before the flood's cap, that its
 * peak RSS grew by less than FLOOD_RSS_BOUND (not in sanitizer builds, whose
 * shadow memory and quarantine make RSS meaningless), and that a client on a
 * new connection is still served.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zring/error.h>
#include <zring/zmtp.h>

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/tools/peers/cat_peer.py"

#include "tools/tool_proc.h"
/* after tool_proc.h: it needs WAIT_MS */
#include "tools/tool_peer.h"

/* What the tool's peak RSS may grow by during a flood. With the limit, one
 * message in assembly holds at most 65536 spans (1 MiB, 2 MiB while the
 * table doubles) and the connection's input buffer; without it the same
 * flood grows it by hundreds of MiB. */
#define FLOOD_RSS_BOUND (16u << 20)

static struct tool tool;

static void
teardown(void)
{
	tool_peer_fini(&tool);
}

static void
setup(void)
{
	tool_peer_init(&tool);
}

TestSuite(cat_flood, .init = setup, .fini = teardown, .timeout = 240);

/* ---- a raw ZMTP client: a TCP socket and the codec ------------------------ */

struct raw {
	int fd;
	struct zr_zmtp z;
	uint8_t in[8192];
	size_t in_len;
};

static void
raw_connect(struct raw *r, const char *ep)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const char *colon = strrchr(ep, ':');

	cr_assert(strncmp(ep, "tcp://127.0.0.1:", 16) == 0 && colon != NULL, "endpoint %s", ep);
	a.sin_port = htons((uint16_t)atoi(colon + 1));
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(r->fd, 0);
	cr_assert_eq(connect(r->fd, (struct sockaddr *)&a, sizeof a), 0, "connect %s: %s", ep,
	             strerror(errno));
	r->in_len = 0;
}

/* Writes all of buf (the socket is blocking until the flood). */
static void
raw_write_all(struct raw *r, const uint8_t *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(r->fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		cr_assert_gt(w, 0, "write: %s", strerror(errno));
		buf += w;
		n -= (size_t)w;
	}
}

static void
raw_flush(struct raw *r)
{
	const uint8_t *p;
	size_t n;

	while ((n = zr_zmtp_out(&r->z, &p)) > 0) {
		raw_write_all(r, p, n);
		zr_zmtp_out_ack(&r->z, n);
	}
}

/* Greeting and handshake with the codec until READY. */
static void
raw_handshake(struct raw *r, const char *ep, const struct zr_zmtp_config *cfg)
{
	long long deadline = tool_now_ms() + WAIT_MS;
	struct zr_zmtp_event ev;
	size_t used;
	int rc;

	raw_connect(r, ep);
	cr_assert_eq(zr_zmtp_init(&r->z, cfg, 0), 0);
	raw_flush(r);
	for (;;) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};

		cr_assert_lt(tool_now_ms(), deadline, "no handshake with the tool");
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(r->fd, r->in + r->in_len, sizeof r->in - r->in_len);

		cr_assert_gt(n, 0, "the tool closed the handshake: %s",
		             n < 0 ? strerror(errno) : "EOF");
		r->in_len += (size_t)n;
		do {
			rc = zr_zmtp_feed(&r->z, r->in, r->in_len, &used, &ev, 0);
			memmove(r->in, r->in + used, r->in_len - used);
			r->in_len -= used;
			cr_assert_geq(rc, 0, "handshake: %s", zr_strerror(rc));
			raw_flush(r);
		} while (rc == ZR_OK && ev.type != ZR_ZMTP_EV_READY);
		if (rc == ZR_OK)
			return;
	}
}

/* Lays out the next flood frames into buf (at most cap octets); returns how
 * many octets. */
typedef size_t flood_fill(struct raw *r, uint8_t *buf, size_t cap);

static size_t
fill_null(struct raw *r, uint8_t *buf, size_t cap)
{
	(void)r;
	for (size_t i = 0; i + 2 <= cap; i += 2) {
		buf[i] = ZR_ZMTP_MORE;
		buf[i + 1] = 0;
	}
	return cap & ~(size_t)1;
}

static size_t
fill_curve(struct raw *r, uint8_t *buf, size_t cap)
{
	size_t off = 0, unit = zr_zmtp_frame_wire_size(&r->z, 0);

	while (off + unit <= cap) {
		int n = zr_zmtp_encode_frame(&r->z, ZR_ZMTP_MORE, (const uint8_t *)"", 0, buf + off,
		                             cap - off);

		cr_assert_eq((size_t)n, unit, "encode: %d (%s)", n, zr_strerror(n));
		off += unit;
	}
	return off;
}

/*
 * Sends flood frames until the peer closes the connection or cap octets went
 * out, then waits for the close. Returns the octets sent; *closed says
 * whether the tool closed it (end of file, reset, or a failed write).
 */
static size_t
raw_flood(struct raw *r, flood_fill *fill, size_t cap, bool *closed)
{
	static uint8_t chunk[64 * 1024];
	long long deadline = tool_now_ms() + 4 * WAIT_MS;
	size_t sent = 0, off = 0, len = 0;
	uint8_t sink[4096];

	*closed = false;
	cr_assert_eq(fcntl(r->fd, F_SETFL, O_NONBLOCK), 0);
	while (!*closed && tool_now_ms() < deadline) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN | (sent < cap ? POLLOUT : 0)};

		if (poll(&p, 1, 100) <= 0)
			continue;
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(r->fd, sink, sizeof sink);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				*closed = true;
			continue;
		}
		if (!(p.revents & POLLOUT))
			continue;
		if (off == len) {
			len = fill(r, chunk,
			           sent + sizeof chunk <= cap ? sizeof chunk : cap - sent);
			off = 0;
			if (len == 0) {
				sent = cap;
				continue;
			}
		}
		ssize_t w = write(r->fd, chunk + off, len - off);

		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w < 0) {
			*closed = true; /* EPIPE, ECONNRESET: the tool closed it */
			continue;
		}
		off += (size_t)w;
		sent += (size_t)w;
		if (sent >= cap && deadline > tool_now_ms() + WAIT_MS)
			deadline = tool_now_ms() + WAIT_MS; /* all out: the close is due */
	}
	return sent;
}

/* ---- the floods ------------------------------------------------------------ */

/*
 * Floods the tool (already bound at ep) through a raw client set up by cfg,
 * with frames from fill, at most cap octets; asserts the close and the RSS
 * bound.
 */
static void
flood_and_check(const char *ep, const struct zr_zmtp_config *cfg, flood_fill *fill, size_t cap)
{
	struct raw r;
	size_t sent, wire_per_frame;
	bool closed;
	long before, peak;

	raw_handshake(&r, ep, cfg);
	wire_per_frame = zr_zmtp_frame_wire_size(&r.z, 0); /* 2; under CURVE 2 + 33 */
	before = tool_proc_kib(tool.pid, "VmRSS");
	sent = raw_flood(&r, fill, cap, &closed);
	peak = tool_proc_kib(tool.pid, "VmHWM");
	close(r.fd);
	zr_zmtp_fini(&r.z);
	cr_log_info("flood: %zu octets (%zu frames) sent; tool RSS %ld KiB before, peak %ld KiB",
	            sent, sent / wire_per_frame, before, peak);
	cr_assert(closed,
	          "the tool kept the flooding connection open after %zu octets (%zu frames)", sent,
	          sent / wire_per_frame);
	cr_assert_lt(sent, cap, "the close came only at the flood's cap");
	cr_assert_geq(sent / wire_per_frame, 65536, "closed before the limit: %zu frames",
	              sent / wire_per_frame);
	if (TOOL_SANITIZED) {
		cr_log_info("sanitizer build: RSS bound not checked");
		return;
	}
	cr_assert_lt((size_t)(peak - before) * 1024, (size_t)FLOOD_RSS_BOUND,
	             "the tool's peak RSS grew by %ld KiB under the flood (bound %u KiB)",
	             peak - before, FLOOD_RSS_BOUND / 1024);
}

/* The endpoint the tool reported binding to ("zring cat: bound to EP"). */
static const char *
tool_bound_endpoint(void)
{
	static char ep[256];

	return tool_stderr_after(&tool, "zring cat: bound to ", ep, sizeof ep, WAIT_MS);
}

Test(cat_flood, empty_more_frames_close_the_connection_and_a_libzmq_push_is_served_after)
{
	struct zr_zmtp_config cfg;
	const char *ep;

	tool_begin(&tool, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", NULL);
	ep = tool_bound_endpoint();
	zr_zmtp_config_default(&cfg, ZR_PUSH);
	/* 32 MiB cap: 16 M frames, far past the 65536 the tool should take. */
	flood_and_check(ep, &cfg, fill_null, (size_t)32 << 20);

	peer_start("PUSH", "connect", ep, "--send", "[\"after\",\"the flood\"]", NULL);
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "after\tthe flood\n", "nothing of the flood is printed");
}

/* Under CURVE each empty frame is a 35-octet MESSAGE box: the same flood
 * costs the attacker more but the tool just as much without the limit. */
Test(cat_flood, empty_more_curve_boxes_close_the_connection_and_a_client_is_served_after)
{
	char server_pub[ZR_CURVE_KEY_Z85_LEN + 1], server_sec[ZR_CURVE_KEY_Z85_LEN + 1];
	char client_pub[ZR_CURVE_KEY_Z85_LEN + 1], client_sec[ZR_CURVE_KEY_Z85_LEN + 1];
	uint8_t spk[ZR_CURVE_KEY_LEN], cpk[ZR_CURVE_KEY_LEN], csk[ZR_CURVE_KEY_LEN];
	char opt_sec[64 + ZR_CURVE_KEY_Z85_LEN];
	struct zr_zmtp_config cfg;
	struct raw r;
	uint8_t w[128];
	const char *ep;
	int n;

	cr_assert_eq(zr_curve_keypair(server_pub, server_sec), 0);
	cr_assert_eq(zr_curve_keypair(client_pub, client_sec), 0);
	cr_assert_eq(zr_curve_key_decode(spk, server_pub), 0);
	cr_assert_eq(zr_curve_key_decode(cpk, client_pub), 0);
	cr_assert_eq(zr_curve_key_decode(csk, client_sec), 0);
	snprintf(opt_sec, sizeof opt_sec, "CURVE_SECRETKEY=%s", server_sec);
	tool_begin(&tool, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-o",
	           "CURVE_SERVER=1", "-o", opt_sec, NULL);
	ep = tool_bound_endpoint();
	zr_zmtp_config_default(&cfg, ZR_PUSH);
	cfg.mechanism = ZR_MECH_CURVE;
	cfg.curve_public_key = cpk;
	cfg.curve_secret_key = csk;
	cfg.curve_server_key = spk;
	/* 64 MiB cap: 1.9 M boxes, far past the 65536 the tool should take. */
	flood_and_check(ep, &cfg, fill_curve, (size_t)64 << 20);

	/* A new CURVE client is served. */
	raw_handshake(&r, ep, &cfg);
	n = zr_zmtp_encode_frame(&r.z, 0, (const uint8_t *)"after", 5, w, sizeof w);
	cr_assert_gt(n, 0, "encode: %s", zr_strerror(n));
	raw_write_all(&r, w, (size_t)n);
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "after\n", "nothing of the flood is printed");
	close(r.fd);
	zr_zmtp_fini(&r.z);
}
