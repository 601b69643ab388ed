/*
 * zring tools — the one clock of every command: monotonic time and a sleep
 * that a signal does not cut short. Header-only (static inline) because the
 * tests compile some of the tools' .c files into themselves (zl_link.c,
 * zl_proc.c) and must not get a second definition.
 */
#ifndef ZR_TOOLS_ZL_CLOCK_H
#define ZR_TOOLS_ZL_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds (CLOCK_MONOTONIC: never steps with the wall clock). */
static inline uint64_t
zl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Monotonic milliseconds. */
static inline uint64_t
zl_now_ms(void)
{
	return zl_now_ns() / 1000000u;
}

/* Sleeps ms milliseconds, the whole of them even when a signal comes. */
static inline void
zl_sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
	                      .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

#endif /* ZR_TOOLS_ZL_CLOCK_H */
