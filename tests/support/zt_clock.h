/*
 * The tests' clock: monotonic milliseconds and a sleep that survives
 * signals. Header-only, so the Criterion suites and the ThreadSanitizer
 * stress programs (which do not link the .c files of tests/support) share it.
 */
#ifndef ZR_TESTS_SUPPORT_ZT_CLOCK_H
#define ZR_TESTS_SUPPORT_ZT_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t
zt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void
zt_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

#endif /* ZR_TESTS_SUPPORT_ZT_CLOCK_H */
