/*
 * A hand-written ZMTP peer on a plain TCP socket, for the subscription
 * tests: it says exactly the bytes a hostile (or old) subscriber would —
 * a NULL greeting of version 3.1 or 3.0, READY as a SUB, then SUBSCRIBE /
 * CANCEL commands (3.1) or 0x01/0x00 messages (3.0), as many and as fast
 * as the test wants — and reads the frames published to it.
 * Static inline; include after <criterion/criterion.h>.
 */
#ifndef ZR_TESTS_ENGINE_RAW_PEER_H
#define ZR_TESTS_ENGINE_RAW_PEER_H

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline long long
rp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads exactly n octets within timeout_ms: 0, -1 on EOF or error, -2 on time out. */
static inline int
rp_read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	long long end = rp_now_ms() + timeout_ms;
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long long left = end - rp_now_ms();

		if (left <= 0)
			return -2;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		ssize_t r = recv(fd, (char *)buf + got, n - got, 0);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Writes all of buf; false if the peer closed or reset the connection. */
static inline bool
rp_write_all(int fd, const void *buf, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = send(fd, (const char *)buf + off, n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		off += (size_t)w;
	}
	return true;
}

/* One frame: its flags, and its body in buf (cut to cap). Returns the body's
 * length, -1 on EOF or error, -2 on time out. */
static inline long
rp_read_frame(int fd, uint8_t *flags, uint8_t *buf, size_t cap, int timeout_ms)
{
	uint8_t h[8];
	uint64_t size = 0;
	int rc = rp_read_full(fd, flags, 1, timeout_ms);

	if (rc < 0)
		return rc;
	if (*flags & 0x02) {
		if ((rc = rp_read_full(fd, h, 8, timeout_ms)) < 0)
			return rc;
		for (int i = 0; i < 8; i++)
			size = size << 8 | h[i];
	} else {
		if ((rc = rp_read_full(fd, h, 1, timeout_ms)) < 0)
			return rc;
		size = h[0];
	}
	cr_assert(size <= (1u << 20), "a frame of %llu octets", (unsigned long long)size);
	uint8_t *body = malloc(size ? size : 1);

	cr_assert(body != NULL);
	rc = rp_read_full(fd, body, size, timeout_ms);
	if (rc == 0)
		memcpy(buf, body, size < cap ? size : cap);
	free(body);
	return rc < 0 ? rc : (long)size;
}

/* Connects to tcp://127.0.0.1:PORT as a type ("SUB", "PUB": three letters)
 * speaking ZMTP 3.minor with NULL security, and finishes the handshake.
 * Returns the fd. */
static inline int
rp_connect_as(const char *ep, int minor, const char type[3])
{
	const char *colon = strrchr(ep, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint8_t g[64] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, (uint8_t)minor, 'N', 'U', 'L', 'L'};
	uint8_t ready[27] = {0x04, 25,  5,   'R', 'E', 'A', 'D', 'Y', 11, 'S', 'o', 'c',
	                     'k',  'e', 't', '-', 'T', 'y', 'p', 'e', 0,  0,   0,   3};
	uint8_t peer[64], flags, body[512];
	int fd, one = 1;

	memcpy(ready + 24, type, 3);
	cr_assert(colon != NULL, "endpoint %s", ep);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "connect %s: %s", ep,
	             strerror(errno));
	cr_assert(rp_write_all(fd, g, sizeof g));
	cr_assert(rp_write_all(fd, ready, sizeof ready));
	cr_assert_eq(rp_read_full(fd, peer, sizeof peer, 20000), 0, "no greeting from %s", ep);
	cr_assert_eq(peer[0], 0xFF);
	long n = rp_read_frame(fd, &flags, body, sizeof body, 20000);

	cr_assert(n >= 6 && (flags & 0x04) && memcmp(body, "\5READY", 6) == 0, "no READY from %s",
	          ep);
	return fd;
}

/* The same as a SUB. */
static inline int
rp_connect(const char *ep, int minor)
{
	return rp_connect_as(ep, minor, "SUB");
}

/* Appends one (un)subscription to buf in the form for minor: a SUBSCRIBE /
 * CANCEL command (3.1) or a 0x01 / 0x00 message (3.0). Returns its size. */
static inline size_t
rp_sub_encode(uint8_t *buf, int minor, bool subscribe, const void *topic, size_t len)
{
	size_t body, at = 0;
	const char *name = subscribe ? "\011SUBSCRIBE" : "\006CANCEL";
	size_t nlen = subscribe ? 10 : 7;

	body = minor >= 1 ? nlen + len : 1 + len;
	buf[at++] = (uint8_t)((minor >= 1 ? 0x04 : 0x00) | (body > 255 ? 0x02 : 0));
	if (body > 255) {
		for (int i = 7; i >= 0; i--)
			buf[at++] = (uint8_t)(body >> (8 * i));
	} else {
		buf[at++] = (uint8_t)body;
	}
	if (minor >= 1) {
		memcpy(buf + at, name, nlen);
		at += nlen;
	} else {
		buf[at++] = subscribe ? 1 : 0;
	}
	memcpy(buf + at, topic, len);
	return at + len;
}

static inline void
rp_sub(int fd, int minor, bool subscribe, const char *topic)
{
	uint8_t buf[600];
	size_t len = strlen(topic);

	cr_assert(len < 512);
	cr_assert(rp_write_all(fd, buf, rp_sub_encode(buf, minor, subscribe, topic, len)));
}

/* The next message frame published to us (commands skipped), as a string.
 * Returns its length, -1 on EOF, -2 on time out. */
static inline long
rp_recv(int fd, char *buf, size_t cap, int timeout_ms)
{
	for (;;) {
		uint8_t flags;
		long n = rp_read_frame(fd, &flags, (uint8_t *)buf, cap - 1, timeout_ms);

		if (n < 0)
			return n;
		if (flags & 0x04)
			continue;
		buf[(size_t)n < cap - 1 ? (size_t)n : cap - 1] = '\0';
		return n;
	}
}

/* Whether the other end closed the connection within timeout_ms (anything
 * still arriving is read and dropped). */
static inline bool
rp_closed(int fd, int timeout_ms)
{
	long long end = rp_now_ms() + timeout_ms;
	char sink[4096];

	while (rp_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t r = recv(fd, sink, sizeof sink, 0);

		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return true;
	}
	return false;
}

#endif /* ZR_TESTS_ENGINE_RAW_PEER_H */
