/*
 * common/: internal macros below every layer (zmtp/, io/ and engine/ may all
 * include it; it includes nothing of theirs). Not installed; the tools and
 * the bench, which see only include/, do not use it.
 *
 * ZR_CONTAINER_OF: the one way to get from an embedded member (an op, a
 * timer, a list node) back to the struct that holds it.
 *
 * ZR_INVARIANT: a condition the code itself guarantees. Never use it for
 * anything a peer, a user or the kernel decides: those get a real error.
 * It is an expression worth the condition's truth, so a can't-happen branch
 * still leaves the program in a defined state in release builds:
 *
 *	if (!ZR_INVARIANT(out->len <= out->cap))
 *		return -EPROTO;
 *
 * In debug builds (no NDEBUG) and fuzz builds
 * (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) a broken invariant prints where
 * and aborts, so tests and fuzzers find it; in release it is false and the
 * caller's error path runs.
 */
#ifndef ZR_COMMON_BASE_H
#define ZR_COMMON_BASE_H

#include <stdbool.h>
#include <stddef.h>

#define ZR_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define ZR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if !defined(NDEBUG) || defined(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
#include <stdio.h>
#include <stdlib.h>

static inline bool
zr__invariant_failed(const char *cond, const char *file, int line)
{
	fprintf(stderr, "zring: invariant broken at %s:%d: %s\n", file, line, cond);
	abort();
}
#define ZR_INVARIANT(cond) ((cond) ? true : zr__invariant_failed(#cond, __FILE__, __LINE__))
#else
#define ZR_INVARIANT(cond) ((cond) ? true : false)
#endif

#endif /* ZR_COMMON_BASE_H */
