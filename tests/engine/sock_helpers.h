/*
 * Small helpers for the engine tests that drive zring sockets in-process:
 * set an option or fail, read the bound endpoint, sleep.
 */
#ifndef ZR_TESTS_ENGINE_SOCK_HELPERS_H
#define ZR_TESTS_ENGINE_SOCK_HELPERS_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zring/zring.h>

static inline void
sopt_int(zr_socket *s, int opt, int v)
{
	cr_assert_eq(zr_setsockopt(s, opt, &v, sizeof v), 0, "option %d", opt);
}

/* An int (int64) option's value, or the test fails; an int's set, returning the code. */
static inline int
sget_int(zr_socket *s, int opt)
{
	int v = 0x5a5a5a5a;
	size_t len = sizeof v;

	cr_assert_eq(zr_getsockopt(s, opt, &v, &len), 0, "option %d", opt);
	cr_assert_eq(len, sizeof v, "option %d", opt);
	return v;
}

static inline int64_t
sget_i64(zr_socket *s, int opt)
{
	int64_t v = 0x5a5a5a5a;
	size_t len = sizeof v;

	cr_assert_eq(zr_getsockopt(s, opt, &v, &len), 0, "option %d", opt);
	cr_assert_eq(len, sizeof v, "option %d", opt);
	return v;
}

static inline int
sset_int(zr_socket *s, int opt, int v)
{
	return zr_setsockopt(s, opt, &v, sizeof v);
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
sock_pair_free(zr_ctx *c, zr_socket *a, zr_socket *b)
{
	sopt_int(a, ZR_LINGER, 0);
	sopt_int(b, ZR_LINGER, 0);
	zr_socket_close(a);
	zr_socket_close(b);
	zr_ctx_free(c);
}

/* user + system CPU of the whole process (every thread), in seconds */
static inline double
cpu_s(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static inline void
sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Binds a loopback tcp socket to port (0: the kernel picks) and closes it:
 * the port it got, or 0 when that port is taken. */
static inline unsigned
loopback_bind(unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned got = 0;

	cr_assert_geq(fd, 0);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		got = ntohs(a.sin_port);
	close(fd);
	return got;
}

/*
 * A loopback tcp port nobody listens on right now (for a peer that must be
 * restarted on the same port, or an address nobody answers), outside the
 * kernel's ephemeral range (below it, else above it): a port the kernel
 * hands out may go to a test running beside this one before it is used, and
 * a socket redialling a closed loopback port of that range can be given it
 * as its own source port and end up connected to itself. Random, so tests
 * running side by side do not pick the same one.
 */
static inline unsigned
free_tcp_port(void)
{
	unsigned lo = 32768, hi = 60999, first = 10000, last, port = 0;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	struct timespec ts;
	uint64_t x;

	if (f != NULL) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || lo > hi || hi > 65535) {
			lo = 32768;
			hi = 60999;
		}
		fclose(f);
	}
	if (lo > first + 1000) {
		last = lo - 1;
	} else {
		first = hi + 1; /* a range that starts low: above it, if there is room */
		last = 65535;
	}
	if (first + 1000 > last) {
		port = loopback_bind(0); /* nothing outside the range: one the kernel picks */
		cr_assert_neq(port, 0u, "cannot bind a loopback port");
		return port;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec;
	for (int tries = 0; tries < 200 && port == 0; tries++) {
		x = x * 6364136223846793005u + 1442695040888963407u; /* an LCG step */
		port = loopback_bind(first + (unsigned)((x >> 33) % (last - first + 1)));
	}
	cr_assert_neq(port, 0u, "no free loopback port in %u..%u", first, last);
	return port;
}

#endif /* ZR_TESTS_ENGINE_SOCK_HELPERS_H */
