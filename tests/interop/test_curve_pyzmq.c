/*
 * Interop: the CurveZMQ core (zmtp/curve.h) against libzmq 4.3 (pyzmq), over
 * real TCP, WITHOUT the codec's connection state machine or the engine.
 *
 * The test holds a plain blocking TCP socket (with receive timeouts), sends
 * the ZMTP 3.1 greeting with mechanism CURVE (as-server 0), frames each
 * CurveZMQ command itself (zr_zmtp_frame_header) and drives one side of the
 * handshake with zr__curve; tests/interop/peers/curve_peer.py is the other
 * side, a pyzmq PULL server or PUSH client with fresh CURVE keys. What libzmq
 * received is reported back as hex lines, so every assertion is about exact
 * bytes that crossed into libzmq and back.
 *
 * A missing interpreter or pyzmq fails the test: this is the proof of
 * byte compatibility and must not skip.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <zring/zmtp.h>

#include "curve.h"
#include "tools/zl_proc.c"

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/interop/peers/curve_peer.py"
#define WAIT_MS 5000

static struct zl_proc peer;
static char line[ZL_PROC_LINE_MAX];
static int fd = -1;
static int listen_fd = -1;
static struct zr__curve cv;
static uint8_t my_pk[32], my_sk[32];
static uint8_t body[1 << 16];
static uint8_t cmd[1 << 16];
static uint8_t plain[1 << 16];

static const uint8_t push_meta[] = "\x0bSocket-Type\x00\x00\x00\x04PUSH";
static const uint8_t pull_meta[] = "\x0bSocket-Type\x00\x00\x00\x04PULL";

static void
setup(void)
{
	cr_assert_geq(sodium_init(), 0);
	crypto_box_keypair(my_pk, my_sk);
}

static void
teardown(void)
{
	zr__curve_fini(&cv);
	if (fd >= 0)
		close(fd);
	if (listen_fd >= 0)
		close(listen_fd);
	fd = listen_fd = -1;
	zl_proc_stop(&peer, 2000);
}

TestSuite(interop_curve, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the pyzmq peer ---------------------------------------------------------------- */

static void
peer_start(char *const args[])
{
	char *argv[16];
	int argc = 0;
	if (access(ZR_PYTHON, X_OK) != 0)
		cr_assert_fail("%s not found: the interop tests need python3 with python3-zmq",
		               ZR_PYTHON);
	argv[argc++] = (char *)ZR_PYTHON;
	argv[argc++] = (char *)PEER_SCRIPT;
	for (int i = 0; args[i] != NULL && argc < 15; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	int rc = zl_proc_spawn(&peer, argv);
	cr_assert_eq(rc, 0, "cannot start %s: %s", ZR_PYTHON, strerror(-rc));
}

/* Reads peer lines until one starts with prefix; false on timeout or exit. */
static bool
peer_wait(const char *prefix, int timeout_ms)
{
	for (;;) {
		int rc = zl_proc_readline(&peer, line, sizeof line, timeout_ms);
		if (rc < 0)
			return false;
		if (strncmp(line, "FATAL", 5) == 0)
			cr_assert_fail("pyzmq peer: %s", line);
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			return true;
	}
}

static void
key_from_z85(uint8_t key[32], const char *z85)
{
	char text[41];
	memcpy(text, z85, 40);
	text[40] = '\0';
	cr_assert_eq(zr_curve_key_decode(key, text), 0, "bad z85 key from the peer: %s", text);
}

/* ---- the raw socket ---------------------------------------------------------------- */

static void
sock_timeouts(int s)
{
	struct timeval tv = {.tv_sec = WAIT_MS / 1000, .tv_usec = 0};
	cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void
sock_connect(uint16_t port)
{
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s",
	             strerror(errno));
	sock_timeouts(fd);
}

static uint16_t
sock_listen(void)
{
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(listen_fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(listen_fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(listen_fd, 1), 0);
	socklen_t al = sizeof a;
	cr_assert_eq(getsockname(listen_fd, (struct sockaddr *)&a, &al), 0);
	return ntohs(a.sin_port);
}

static void
sock_accept(void)
{
	struct pollfd p = {.fd = listen_fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "the pyzmq client did not connect");
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(fd, 0);
	sock_timeouts(fd);
}

static void
sock_write(const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		b += w;
		n -= (size_t)w;
	}
}

/* Reads exactly n octets: 0, or -1 on end of stream, reset or timeout. */
static int
sock_read(void *p, size_t n)
{
	uint8_t *b = p;
	while (n > 0) {
		ssize_t r = recv(fd, b, n, 0);
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void
greeting_exchange(void)
{
	uint8_t g[ZR_ZMTP_GREETING_SIZE], peer_g[ZR_ZMTP_GREETING_SIZE];
	cr_assert_eq(zr_zmtp_greeting_encode(g, 1, ZR_MECH_CURVE, false), 64);
	sock_write(g, sizeof g);
	cr_assert_eq(sock_read(peer_g, sizeof peer_g), 0, "no greeting from libzmq");
	struct zr_zmtp_greeting pg;
	cr_assert_eq(zr_zmtp_greeting_parse(peer_g, sizeof peer_g, &pg), ZR_OK);
	cr_assert_str_eq(pg.mechanism_name, "CURVE");
	cr_assert_eq(pg.major, 3);
}

/* One frame: a CURVE command or a MESSAGE. */
static void
frame_write(const uint8_t *b, size_t n, unsigned flags)
{
	uint8_t h[ZR_ZMTP_HEADER_MAX];
	int hl = zr_zmtp_frame_header(h, n, flags);
	cr_assert_gt(hl, 0);
	sock_write(h, (size_t)hl);
	sock_write(b, n);
}

/* Reads one frame into body. Returns its size, or -1 when the stream ended. */
static long
frame_read(unsigned *flags)
{
	uint8_t f, s[8];
	if (sock_read(&f, 1) != 0)
		return -1;
	uint64_t size;
	if (f & 0x02) {
		if (sock_read(s, 8) != 0)
			return -1;
		size = 0;
		for (int i = 0; i < 8; i++)
			size = (size << 8) | s[i];
	} else {
		if (sock_read(s, 1) != 0)
			return -1;
		size = s[0];
	}
	cr_assert_leq(size, sizeof body, "frame of %llu octets", (unsigned long long)size);
	if (sock_read(body, (size_t)size) != 0)
		return -1;
	*flags = f & ~0x02u; /* without LONG: MORE and COMMAND only */
	return (long)size;
}

static void
curve_open(bool as_server, const uint8_t server_key[32])
{
	struct zr__curve_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.as_server = as_server;
	memcpy(cfg.public_key, my_pk, 32);
	memcpy(cfg.secret_key, my_sk, 32);
	if (server_key != NULL)
		memcpy(cfg.server_key, server_key, 32);
	cr_assert_eq(zr__curve_init(&cv, &cfg), 0);
}

/* Our client side up to READY against the pyzmq server on port. */
static void
client_handshake(uint16_t port, const uint8_t server_key[32])
{
	curve_open(false, server_key);
	sock_connect(port);
	greeting_exchange();
	int n = zr__curve_client_hello(&cv, cmd, sizeof cmd);
	cr_assert_eq(n, 200);
	frame_write(cmd, (size_t)n, ZR_ZMTP_COMMAND);

	unsigned flags;
	long len = frame_read(&flags);
	cr_assert_eq(len, 168, "WELCOME is 168 octets");
	cr_assert_eq(flags, ZR_ZMTP_COMMAND);
	n = zr__curve_client_on_welcome(&cv, body, (size_t)len, push_meta, sizeof push_meta - 1,
	                                cmd, sizeof cmd);
	cr_assert_eq(n, (int)(257 + sizeof push_meta - 1), "WELCOME refused: %d", n);
	frame_write(cmd, (size_t)n, ZR_ZMTP_COMMAND);

	len = frame_read(&flags);
	cr_assert_gt(len, 0, "no READY from libzmq");
	cr_assert_eq(flags, ZR_ZMTP_COMMAND);
	const uint8_t *meta;
	size_t meta_len;
	cr_assert_eq(zr__curve_client_on_ready(&cv, body, (size_t)len, plain, sizeof plain, &meta,
	                                       &meta_len),
	             0);
	const uint8_t *v;
	size_t vl;
	cr_assert_eq(zr_zmtp_props_find(meta, meta_len, "Socket-Type", &v, &vl), 0,
	             "READY metadata has Socket-Type");
	cr_assert_eq(vl, 4);
	cr_assert_arr_eq(v, "PULL", 4);
}

static uint16_t
server_peer_start(bool heartbeat, uint8_t server_key[32])
{
	char *args_hb[] = {"server", "--heartbeat", "50", NULL};
	char *args[] = {"server", NULL};
	peer_start(heartbeat ? args_hb : args);
	cr_assert(peer_wait("PORT ", 15000), "the pyzmq server did not start");
	unsigned port = 0;
	char key[64];
	cr_assert_eq(sscanf(line, "PORT %u %63s", &port, key), 2);
	key_from_z85(server_key, key);
	return (uint16_t)port;
}

/* ---- our client, libzmq's server --------------------------------------------------------- */

Test(interop_curve, our_client_completes_the_handshake_and_libzmq_receives_messages_intact)
{
	uint8_t skey[32];
	uint16_t port = server_peer_start(false, skey);
	client_handshake(port, skey);

	/* one single-frame message, then a two-frame one (MORE inside the box) */
	int n = zr__curve_encode_message(&cv, 0, (const uint8_t *)"hello curve", 11, cmd,
	                                 sizeof cmd);
	cr_assert_eq(n, 44);
	frame_write(cmd, (size_t)n, 0); /* libzmq sends MESSAGE as a plain frame too */
	n = zr__curve_encode_message(&cv, 0x01, (const uint8_t *)"part1", 5, cmd, sizeof cmd);
	frame_write(cmd, (size_t)n, 0);
	static uint8_t big[3000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)i;
	n = zr__curve_encode_message(&cv, 0x00, big, sizeof big, cmd, sizeof cmd);
	frame_write(cmd, (size_t)n, 0);

	cr_assert(peer_wait("RECV ", WAIT_MS), "libzmq received nothing");
	cr_assert_str_eq(line, "RECV 68656c6c6f206375727665");
	cr_assert(peer_wait("RECV ", WAIT_MS), "libzmq did not receive the multipart message");
	cr_assert_eq(strncmp(line, "RECV 7061727431:000102", 22), 0, "got %.60s", line);
	cr_assert_eq(strlen(line), 5 + 10 + 1 + 2 * sizeof big);
}

Test(interop_curve, our_client_decodes_a_libzmq_ping_carried_in_message_with_flag_0x02)
{
	uint8_t skey[32];
	uint16_t port = server_peer_start(true, skey);
	client_handshake(port, skey);
	/* libzmq heartbeats every 50 ms: a MESSAGE whose plaintext is flags 0x02 +
	 * the PING command body ("\x04PING", TTL, context). */
	unsigned flags;
	long len = frame_read(&flags);
	cr_assert_gt(len, 0, "no MESSAGE from libzmq");
	cr_assert_eq(flags, 0, "a data frame: the command is inside the box");
	uint8_t mflags = 0;
	int n = zr__curve_decode_message(&cv, body, (size_t)len, plain, sizeof plain, &mflags);
	cr_assert_geq(n, 7, "decode: %d", n);
	cr_assert_eq(mflags, 0x02, "COMMAND flag");
	cr_assert_arr_eq(plain, "\x04PING", 5);
	/* a second one decodes too: its short nonce is above the first */
	len = frame_read(&flags);
	cr_assert_gt(len, 0);
	cr_assert_geq(
		zr__curve_decode_message(&cv, body, (size_t)len, plain, sizeof plain, &mflags), 7);
}

Test(interop_curve, libzmq_server_drops_a_client_with_the_wrong_server_key)
{
	uint8_t skey[32], wrong[32], wrong_sk[32];
	uint16_t port = server_peer_start(false, skey);
	crypto_box_keypair(wrong, wrong_sk);
	curve_open(false, wrong);
	sock_connect(port);
	greeting_exchange();
	int n = zr__curve_client_hello(&cv, cmd, sizeof cmd);
	frame_write(cmd, (size_t)n, ZR_ZMTP_COMMAND);
	unsigned flags;
	cr_assert_eq(frame_read(&flags), -1, "libzmq must close, not send WELCOME");
	cr_assert(peer_wait("EVENT HANDSHAKE_FAILED_PROTOCOL", WAIT_MS),
	          "libzmq reports a failed handshake");
	unsigned v = 0;
	cr_assert_eq(sscanf(line, "EVENT HANDSHAKE_FAILED_PROTOCOL %u", &v), 1);
	cr_assert_eq(v, 0x11000001u, "ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC");
}

/* ---- libzmq's client, our server ---------------------------------------------------------- */

static void
client_peer_start(uint16_t port, const uint8_t server_key[32], char *type, char *arg)
{
	char k[41], p[8];
	cr_assert_eq(zr_curve_key_encode(k, server_key), 0);
	snprintf(p, sizeof p, "%u", port);
	char *args[] = {"client", p, k, type, arg, NULL};
	peer_start(args);
}

/* Our server side up to READY with the pyzmq client of type `type`. */
static void
server_handshake(const char *type, const uint8_t *our_meta, size_t our_meta_len)
{
	cr_assert(peer_wait("KEY ", 15000));
	uint8_t client_key[32];
	key_from_z85(client_key, line + 4);
	sock_accept();
	curve_open(true, NULL);
	greeting_exchange();

	unsigned flags;
	long len = frame_read(&flags);
	cr_assert_eq(len, 200, "HELLO is 200 octets");
	cr_assert_eq(flags, ZR_ZMTP_COMMAND);
	int n = zr__curve_server_on_hello(&cv, body, (size_t)len, 0, cmd, sizeof cmd);
	cr_assert_eq(n, 168, "HELLO refused: %d", n);
	frame_write(cmd, (size_t)n, ZR_ZMTP_COMMAND);

	len = frame_read(&flags);
	cr_assert_geq(len, 257, "INITIATE");
	cr_assert_eq(flags, ZR_ZMTP_COMMAND, "INITIATE frame flags 0x%02x", flags);
	const uint8_t *meta;
	size_t meta_len;
	cr_assert_eq(zr__curve_server_on_initiate(&cv, body, (size_t)len, 10, plain, sizeof plain,
	                                          &meta, &meta_len),
	             0);
	cr_assert_arr_eq(zr__curve_peer_key(&cv), client_key, 32, "C is the client's public key");
	const uint8_t *v;
	size_t vl;
	cr_assert_eq(zr_zmtp_props_find(meta, meta_len, "Socket-Type", &v, &vl), 0);
	cr_assert_eq(vl, strlen(type));
	cr_assert_arr_eq(v, type, vl);
	n = zr__curve_server_ready(&cv, our_meta, our_meta_len, cmd, sizeof cmd);
	cr_assert_eq(n, (int)(30 + our_meta_len));
	frame_write(cmd, (size_t)n, ZR_ZMTP_COMMAND);
}

Test(interop_curve, our_server_accepts_a_libzmq_client_and_decodes_its_message)
{
	uint16_t port = sock_listen();
	client_peer_start(port, my_pk, "PUSH", "6d756c7469:7061727473");
	server_handshake("PUSH", pull_meta, sizeof pull_meta - 1);

	/* "multi" (MORE) then "parts" */
	static const struct {
		const char *data;
		uint8_t flags;
	} want[] = {{"multi", 0x01}, {"parts", 0x00}};
	for (size_t i = 0; i < 2; i++) {
		unsigned flags;
		long len = frame_read(&flags);
		cr_assert_gt(len, 0, "no MESSAGE from libzmq");
		/* libzmq sends MESSAGE as a data frame, MORE inside the box */
		cr_assert_eq(flags, 0, "frame flags 0x%02x", flags);
		uint8_t mflags = 0xff;
		int n = zr__curve_decode_message(&cv, body, (size_t)len, plain, sizeof plain,
		                                 &mflags);
		cr_assert_eq(n, 5, "decode: %d", n);
		cr_assert_eq(mflags, want[i].flags);
		cr_assert_arr_eq(plain, want[i].data, 5);
	}
}

Test(interop_curve, our_server_sends_messages_a_libzmq_client_receives_intact)
{
	uint16_t port = sock_listen();
	client_peer_start(port, my_pk, "PULL", NULL);
	server_handshake("PULL", push_meta, sizeof push_meta - 1);
	int n = zr__curve_encode_message(&cv, 0x01, (const uint8_t *)"from", 4, cmd, sizeof cmd);
	frame_write(cmd, (size_t)n, 0);
	n = zr__curve_encode_message(&cv, 0x00, (const uint8_t *)"server", 6, cmd, sizeof cmd);
	frame_write(cmd, (size_t)n, 0);
	cr_assert(peer_wait("RECV ", WAIT_MS), "libzmq received nothing");
	cr_assert_str_eq(line, "RECV 66726f6d:736572766572");
}

Test(interop_curve, our_server_decodes_a_libzmq_subscribe_carried_in_message_with_flag_0x02)
{
	static const uint8_t pub_meta[] = "\x0bSocket-Type\x00\x00\x00\x03PUB";
	uint16_t port = sock_listen();
	client_peer_start(port, my_pk, "SUB", "746f706963");
	server_handshake("SUB", pub_meta, sizeof pub_meta - 1);
	unsigned flags;
	long len = frame_read(&flags);
	cr_assert_gt(len, 0, "no MESSAGE from libzmq");
	uint8_t mflags = 0;
	int n = zr__curve_decode_message(&cv, body, (size_t)len, plain, sizeof plain, &mflags);
	cr_assert_eq(n, 15, "decode: %d", n);
	cr_assert_eq(mflags, 0x02, "COMMAND flag");
	cr_assert_arr_eq(plain, "\x09SUBSCRIBEtopic", 15);
}

Test(interop_curve, our_server_reports_a_box_error_for_a_libzmq_client_with_the_wrong_key)
{
	uint8_t wrong[32], wrong_sk[32];
	crypto_box_keypair(wrong, wrong_sk);
	uint16_t port = sock_listen();
	client_peer_start(port, wrong, "PUSH", "00");
	cr_assert(peer_wait("KEY ", 15000));
	sock_accept();
	curve_open(true, NULL);
	greeting_exchange();
	unsigned flags;
	long len = frame_read(&flags);
	cr_assert_eq(len, 200);
	cr_assert_eq(zr__curve_server_on_hello(&cv, body, (size_t)len, 0, cmd, sizeof cmd),
	             ZR__CURVE_EBOX);
}
