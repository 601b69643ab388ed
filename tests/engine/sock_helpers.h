/*
 * Small helpers for the engine tests that drive zring sockets in-process:
 * set an option or fail, read the bound endpoint, sleep.
 */
#ifndef ZR_TESTS_ENGINE_SOCK_HELPERS_H
#define ZR_TESTS_ENGINE_SOCK_HELPERS_H

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

static inline void
sopt_int(zr_socket *s, int opt, int v)
{
	cr_assert_eq(zr_setsockopt(s, opt, &v, sizeof v), 0, "option %d", opt);
}

static inline void
sopt_i64(zr_socket *s, int opt, int64_t v)
{
	cr_assert_eq(zr_setsockopt(s, opt, &v, sizeof v), 0, "option %d", opt);
}

/* The endpoint the socket last bound (with the port the kernel chose). */
static inline void
endpoint_of(zr_socket *s, char *ep, size_t cap)
{
	size_t len = cap;

	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, ep, &len), 0);
}

/* Binds bound to endpoint and connects connecting to the address it got
 * (the port or name the kernel chose); ep receives that address. */
static inline void
sock_bind_connect(zr_socket *bound, const char *endpoint, zr_socket *connecting, char *ep,
                  size_t cap)
{
	cr_assert_eq(zr_bind(bound, endpoint), 0, "bind %s", endpoint);
	endpoint_of(bound, ep, cap);
	cr_assert_eq(zr_connect(connecting, ep), 0, "connect %s", ep);
}

/* Closes two sockets without lingering and frees their context. */
static inline void
sock_pair_free(zr_ctx *ctx, zr_socket *a, zr_socket *b)
{
	sopt_int(a, ZR_LINGER, 0);
	sopt_int(b, ZR_LINGER, 0);
	zr_socket_close(a);
	zr_socket_close(b);
	zr_ctx_free(ctx);
}

static inline void
sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * A loopback tcp port nobody listens on right now (for a peer that must be
 * restarted on the same port, or an address nobody answers), chosen below
 * the kernel's ephemeral range: no bind to port 0 of a test running beside
 * this one can take it, and redialling it cannot connect a socket to itself
 * (a connecting socket's own port is always ephemeral).
 */
static inline unsigned
free_tcp_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	unsigned lo = 32768, hi = 60999, base = 10000;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	struct timespec ts;
	uint64_t x;

	if (f != NULL) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	cr_assert_gt(lo, base + 1000, "the ephemeral port range starts at %u", lo);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec;
	for (int tries = 0; tries < 200; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

		x = x * 6364136223846793005u + 1442695040888963407u; /* an LCG step */
		a.sin_port = htons((uint16_t)(base + (x >> 33) % (lo - base)));
		cr_assert_geq(fd, 0);
		rc = bind(fd, (struct sockaddr *)&a, sizeof a);
		close(fd);
		if (rc == 0)
			return ntohs(a.sin_port);
	}
	cr_assert_fail("no free tcp port in [%u, %u)", base, lo);
	return 0;
}

#endif /* ZR_TESTS_ENGINE_SOCK_HELPERS_H */
