/*
 * zring probe --self: the old self-check of our ZMTP codec against a real
 * libzmq peer (pyzmq): handshake both ways, N messages sent and echoed back
 * byte-exact, with a transcript. `zring probe` without an endpoint runs it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zring.h>

#include "../zl_link.h"
#include "../zl_proc.h"
#include "probe.h"

#ifndef ZR_TOOL_VERSION
#define ZR_TOOL_VERSION "0.0.0"
#endif

/* The interpreter Debian's python3-zmq installs into (another python3 earlier
 * on PATH may not have zmq). */
#define PROBE_PYTHON "/usr/bin/python3"
#define PROBE_WAIT_MS 5000
#define PROBE_WINDOW 64 /* messages in flight: the peer relays, so bound the queue */

/*
 * The libzmq side of the probe: a PULL and a PUSH bound on loopback; every
 * message the PULL receives goes straight back out of the PUSH. "STATS" on
 * stdin asks for its count and checksum (CRC-32 over each frame as a 4-octet
 * big-endian length and the bytes), end of stdin ends it.
 */
static const char probe_script[] =
	"import os, sys, zlib\n"
	"try:\n"
	"    import zmq\n"
	"except ImportError as e:\n"
	"    print('FATAL cannot import zmq (%s)' % e, flush=True)\n"
	"    sys.exit(3)\n"
	"ctx = zmq.Context()\n"
	"pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)\n"
	"for s in (pull, push):\n"
	"    s.linger = 0\n"
	"    s.bind('tcp://127.0.0.1:*')\n"
	"port = lambda s: s.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(':', 1)[1]\n"
	"print('HELLO %s %s' % (zmq.zmq_version(), zmq.__version__), flush=True)\n"
	"print('PORTS %s %s' % (port(pull), port(push)), flush=True)\n"
	"n = nbytes = crc = 0\n"
	"poller = zmq.Poller()\n"
	"poller.register(pull, zmq.POLLIN)\n"
	"poller.register(0, zmq.POLLIN)\n"
	"while True:\n"
	"    ready = dict(poller.poll(1000))\n"
	"    while pull.poll(0):\n"
	"        frames = pull.recv_multipart()\n"
	"        n += 1\n"
	"        for f in frames:\n"
	"            crc = zlib.crc32(len(f).to_bytes(4, 'big') + f, crc)\n"
	"            nbytes += len(f)\n"
	"        push.send_multipart(frames)\n"
	"    if 0 in ready:\n"
	"        line = os.read(0, 4096)\n"
	"        if not line:\n"
	"            break\n"
	"        if line.startswith(b'STATS'):\n"
	"            print('STATS %d %d %08x' % (n, nbytes, crc), flush=True)\n"
	"pull.close(0)\n"
	"push.close(0)\n"
	"ctx.term()\n";

/* ---------------------------------------------------------------------- */
/* Helpers */

/* CRC-32 as zlib computes it (reflected, polynomial 0xEDB88320). */
static uint32_t
crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	if (table[1] == 0) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
			table[i] = c;
		}
	}
	uint32_t c = ~crc;
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ p[i]) & 0xffu] ^ (c >> 8);
	return ~c;
}

static uint32_t
crc32_frame(uint32_t crc, const uint8_t *p, size_t n)
{
	uint8_t len[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
	return crc32_update(crc32_update(crc, len, 4), p, n);
}

/* Message i of the probe: [8-octet sequence][empty][payload], the payload
 * sizes cycling over both sides of the 255/256 short/long boundary, with a
 * large frame now and then so bodies arrive in pieces. */
static size_t
probe_payload_size(size_t i)
{
	static const size_t sizes[] = {1, 255, 256, 0, 4096, 100, 65536 + 7};
	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void
probe_fill(uint8_t *buf, size_t n, size_t seq)
{
	for (size_t j = 0; j < n; j++)
		buf[j] = (uint8_t)(seq * 31u + j);
}

static void
print_value(const uint8_t *v, size_t n)
{
	bool text = true;
	for (size_t i = 0; i < n; i++)
		text = text && v[i] >= 0x20 && v[i] < 0x7f;
	if (text)
		printf("\"%.*s\"", (int)n, (const char *)v);
	else
		zl_hex(stdout, v, n, 32);
}

static void
print_props(const char *label, const uint8_t *p, size_t n)
{
	struct zr_zmtp_prop_iter it = {.p = p, .end = p + n};
	const uint8_t *name, *value;
	size_t name_len, value_len;
	printf("  %-15s", label);
	bool first = true;
	while (zr_zmtp_props_next(&it, &name, &name_len, &value, &value_len) == 1) {
		printf("%s%.*s=", first ? "" : ", ", (int)name_len, (const char *)name);
		print_value(value, value_len);
		first = false;
	}
	if (first)
		printf("(no properties)");
	printf("\n");
}

static void
print_greeting(const char *label, const uint8_t *g, size_t n)
{
	struct zr_zmtp_greeting gr;
	printf("  %-15s", label);
	zl_hex(stdout, g, n < 32 ? n : 32, 32);
	printf("\n  %-15s", "");
	if (n > 32)
		zl_hex(stdout, g + 32, n - 32, 32);
	int rc = zr_zmtp_greeting_parse(g, n, &gr);
	if (rc != ZR_OK) {
		printf("\n  %-15s= not a ZMTP 3 greeting: %s\n", "", zr_strerror(rc));
		return;
	}
	bool padded = false;
	for (size_t i = 1; i < 9; i++)
		padded = padded || g[i] != 0;
	/* libzmq writes its identity length + 1 there (a ZMTP 1.0 relic). */
	printf("\n  %-15s= ZMTP %u.%u, mechanism %s, as-server %d%s\n", "", gr.major, gr.minor,
	       gr.mechanism_name, gr.as_server ? 1 : 0,
	       padded ? ", non-zero padding (not judged)" : "");
}

/* Our READY: the first command after our greeting in what we wrote. */
static void
print_our_ready(const struct zl_link *l)
{
	struct zr_zmtp_dec d;
	struct zr_zmtp_frame f;
	struct zr_zmtp_cmd c;
	size_t used = 0;

	zr_zmtp_dec_init(&d, ZR_ZMTP_DEFAULT_MAX_MSG_SIZE, ZR_ZMTP_DEFAULT_MAX_CMD_SIZE);
	if (l->tx_log.len > ZR_ZMTP_GREETING_SIZE &&
	    zr_zmtp_dec_feed(&d, l->tx_log.p + ZR_ZMTP_GREETING_SIZE,
	                     l->tx_log.len - ZR_ZMTP_GREETING_SIZE, &used, &f) == ZR_OK &&
	    (f.flags & ZR_ZMTP_COMMAND) &&
	    zr_zmtp_cmd_parse(f.data, f.len, ZR_MECH_NULL, &c) == 0 && c.type == ZR_CMD_READY)
		print_props("READY sent", c.value, c.value_len);
	else
		printf("  %-15s(not found in what we wrote)\n", "READY sent");
}

struct probe {
	struct zl_proc peer;
	struct zl_link out; /* our PUSH -> libzmq PULL */
	struct zl_link in;  /* libzmq PUSH -> our PULL */
	bool out_open, in_open;
	char line[512];
};

static int probe_fail(struct probe *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
probe_fail(struct probe *d, const char *fmt, ...)
{
	va_list ap;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (d->out_open)
		zl_link_close(&d->out);
	if (d->in_open)
		zl_link_close(&d->in);
	zl_proc_stop(&d->peer, 1000);
	return 1;
}

/* Opens a link and waits for its READY; prints the handshake. */
static int
probe_handshake(struct probe *d, struct zl_link *l, bool *open, const char *title, uint16_t port,
                const struct zr_zmtp_config *cfg)
{
	struct zl_event ev;
	uint64_t t0 = zl_now_ms();

	int rc = zl_link_open(l, port, cfg, 4096, PROBE_WAIT_MS);
	*open = true;
	if (rc < 0)
		return probe_fail(d, "%s: connect to 127.0.0.1:%u: %s", title, port,
		                  zr_strerror(rc));
	rc = zl_link_next(l, &ev, PROBE_WAIT_MS);
	if (rc < 0)
		return probe_fail(d, "%s: handshake: %s", title, zr_strerror(rc));
	if (ev.type != ZL_EV_READY) {
		zl_event_free(&ev);
		return probe_fail(d, "%s: first event is not READY", title);
	}
	printf("%s\n", title);
	print_greeting("greeting sent", l->tx_log.p, l->tx_log.len < 64 ? l->tx_log.len : 64);
	print_greeting("greeting recv", l->rx_log.p, l->rx_log.len < 64 ? l->rx_log.len : 64);
	print_our_ready(l);
	print_props("READY recv", ev.data, ev.len);
	printf("  %-15s%s, handshake %llu ms\n\n", "peer", zr_socktype_name(ev.peer_type),
	       (unsigned long long)(l->ready_ms - t0));
	zl_event_free(&ev);
	return 0;
}

int
zl_probe_self(int argc, char **argv)
{
	size_t count = 1000;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			char *end;
			unsigned long long v = strtoull(argv[++i], &end, 10);
			if (*end != '\0' || v == 0 || v > 100000000ull) {
				fprintf(stderr, "zring probe: --count wants a number from 1 to "
				                "100000000\n");
				return 1;
			}
			count = (size_t)v;
		} else {
			fprintf(stderr, "zring probe --self: unknown option '%s'\n", argv[i]);
			return 1;
		}
	}

	struct probe d;
	memset(&d, 0, sizeof(d));
	if (access(PROBE_PYTHON, X_OK) != 0) {
		printf("FAIL: %s not found. The probe runs a libzmq peer through pyzmq: install "
		       "the "
		       "Debian "
		       "packages python3 and python3-zmq (apt-get install python3-zmq, or "
		       "scripts/deps.sh).\n",
		       PROBE_PYTHON);
		return 1;
	}
	char *pargv[] = {(char *)PROBE_PYTHON, (char *)"-c", (char *)probe_script, NULL};
	int rc = zl_proc_spawn(&d.peer, pargv);
	if (rc < 0) {
		printf("FAIL: cannot start %s: %s\n", PROBE_PYTHON, strerror(-rc));
		return 1;
	}
	rc = zl_proc_readline(&d.peer, d.line, sizeof(d.line), 15000);
	if (rc < 0 || strncmp(d.line, "FATAL", 5) == 0)
		return probe_fail(&d,
		                  "%s cannot run the libzmq peer (%s): install the Debian package "
		                  "python3-zmq (apt-get install python3-zmq, or scripts/deps.sh)",
		                  PROBE_PYTHON, rc < 0 ? strerror(-rc) : d.line);
	char zmq_ver[64] = "?", py_ver[64] = "?";
	if (sscanf(d.line, "HELLO %63s %63s", zmq_ver, py_ver) != 2)
		return probe_fail(&d, "unexpected line from the peer: %s", d.line);
	unsigned pull_port = 0, push_port = 0;
	rc = zl_proc_readline(&d.peer, d.line, sizeof(d.line), PROBE_WAIT_MS);
	if (rc < 0 || sscanf(d.line, "PORTS %u %u", &pull_port, &push_port) != 2 ||
	    pull_port == 0 || pull_port > 65535 || push_port == 0 || push_port > 65535)
		return probe_fail(&d, "the peer did not report its ports");

	printf("zring %s probe: our ZMTP codec against libzmq %s (pyzmq %s), TCP loopback\n",
	       ZR_TOOL_VERSION, zmq_ver, py_ver);
	printf("peer: libzmq PULL on 127.0.0.1:%u relays to libzmq PUSH on 127.0.0.1:%u\n\n",
	       pull_port, push_port);

	struct zr_zmtp_config push_cfg, pull_cfg;
	zr_zmtp_config_default(&push_cfg, ZR_PUSH);
	zr_zmtp_config_default(&pull_cfg, ZR_PULL);
	uint64_t t_hs = zl_now_ms();
	if (probe_handshake(&d, &d.out, &d.out_open, "[link 1] our PUSH -> libzmq PULL",
	                    (uint16_t)pull_port, &push_cfg) != 0)
		return 1;
	if (probe_handshake(&d, &d.in, &d.in_open, "[link 2] libzmq PUSH -> our PULL",
	                    (uint16_t)push_port, &pull_cfg) != 0)
		return 1;
	t_hs = zl_now_ms() - t_hs;

	/* Messages: send on link 1, receive them back on link 2, in order. */
	uint8_t *payload = malloc(65536 + 7);
	uint8_t *expect = malloc(65536 + 7);
	if (payload == NULL || expect == NULL) {
		free(payload);
		free(expect);
		return probe_fail(&d, "out of memory");
	}
	size_t sent = 0, received = 0, matched = 0;
	uint64_t octets = 0;
	uint32_t crc_sent = 0, crc_recv = 0;
	const char *why = NULL;
	int err = 0;
	uint64_t t0 = zl_now_ms();
	while (received < count && why == NULL) {
		if (sent < count && sent - received < PROBE_WINDOW) {
			uint8_t seq[8];
			for (int k = 0; k < 8; k++)
				seq[k] = (uint8_t)((uint64_t)sent >> (56 - 8 * k));
			size_t n = probe_payload_size(sent);
			probe_fill(payload, n, sent);
			struct zl_frame fr[3] = {{seq, 8}, {NULL, 0}, {payload, n}};
			err = zl_link_send(&d.out, fr, 3, PROBE_WAIT_MS);
			if (err < 0) {
				why = "send";
				break;
			}
			for (int k = 0; k < 3; k++) {
				crc_sent = crc32_frame(crc_sent, fr[k].data, fr[k].len);
				octets += fr[k].len;
			}
			sent++;
			continue;
		}
		struct zl_event ev;
		err = zl_link_next(&d.in, &ev, PROBE_WAIT_MS);
		if (err < 0) {
			why = "receive";
			break;
		}
		if (ev.type != ZL_EV_MSG) {
			zl_event_free(&ev);
			continue;
		}
		size_t n = probe_payload_size(received);
		probe_fill(expect, n, received);
		bool ok = ev.msg.count == 3 && ev.msg.frames[0].len == 8 &&
		          ev.msg.frames[1].len == 0 && ev.msg.frames[2].len == n &&
		          (n == 0 || memcmp(ev.msg.frames[2].data, expect, n) == 0);
		uint64_t seqv = 0;
		for (size_t k = 0; ok && k < 8; k++)
			seqv = (seqv << 8) | ev.msg.frames[0].data[k];
		ok = ok && seqv == received;
		for (size_t k = 0; k < ev.msg.count; k++)
			crc_recv =
				crc32_frame(crc_recv, ev.msg.frames[k].data, ev.msg.frames[k].len);
		if (ok)
			matched++;
		else if (why == NULL)
			why = "mismatch";
		received++;
		zl_event_free(&ev);
	}
	uint64_t t_xfer = zl_now_ms() - t0;
	free(payload);
	free(expect);

	/* The peer's own count and checksum of what it received from us. */
	unsigned long long peer_n = 0, peer_bytes = 0;
	unsigned peer_crc = 0;
	bool have_peer = false;
	if (zl_proc_writeline(&d.peer, "STATS") == 0 &&
	    zl_proc_readline(&d.peer, d.line, sizeof(d.line), PROBE_WAIT_MS) >= 0)
		have_peer =
			sscanf(d.line, "STATS %llu %llu %x", &peer_n, &peer_bytes, &peer_crc) == 3;

	printf("messages  %zu sent, %zu received back, %zu matched byte for byte\n", sent, received,
	       matched);
	printf("          3 frames each: 8-octet sequence, empty, payload of 0..65543 octets\n");
	printf("checksum  CRC-32 sent %08x, received back %08x, libzmq counted %llu msgs %llu "
	       "octets "
	       "crc %08x\n",
	       crc_sent, crc_recv, peer_n, peer_bytes, peer_crc);
	double secs = (double)(t_xfer ? t_xfer : 1) / 1000.0;
	printf("timing    handshakes %llu ms; %zu messages there and back in %llu ms "
	       "(%.0f msg/s, %.1f MB/s each way)\n",
	       (unsigned long long)t_hs, received, (unsigned long long)t_xfer,
	       (double)received / secs, (double)octets / secs / 1e6);

	if (why == NULL && !have_peer)
		why = "libzmq did not report its count";
	if (why == NULL && (crc_sent != crc_recv || crc_sent != peer_crc || peer_n != count ||
	                    peer_bytes != octets))
		why = "checksum";
	if (why != NULL) {
		if (err < 0)
			return probe_fail(&d, "%s after %zu of %zu messages: %s", why, received,
			                  count, zr_strerror(err));
		return probe_fail(&d, "%s (%zu of %zu messages matched)", why, matched, count);
	}
	zl_link_close(&d.out);
	zl_link_close(&d.in);
	zl_proc_stop(&d.peer, 1000);
	printf("PASS: ZMTP 3.1 NULL handshake both ways and %zu messages byte-exact through libzmq "
	       "%s\n",
	       count, zmq_ver);
	return 0;
}
