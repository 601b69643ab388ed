/*
 * zring probe — the fuzzers' shared randomness and structure-aware
 * mutations: the NULL fuzzer (zl_probe.c) and the PLAIN/CURVE one
 * (probe/pr_fuzz.c) mutate the same units with the same operations, each
 * drawing them in its own order so that a seed replays its run.
 */
#ifndef ZR_TOOLS_PROBE_PR_MUTATE_H
#define ZR_TOOLS_PROBE_PR_MUTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PR_UNITS 24     /* units in a conversation, at most */
#define PR_UNIT_MAX 600 /* octets in a unit, at most */

/* One unit of a conversation: a greeting or a whole clear frame (NULL,
 * PLAIN), or a MESSAGE plaintext (CURVE) with how its box is to be made. */
struct pr_unit {
	uint8_t b[PR_UNIT_MAX];
	size_t len;
	int nonce_how; /* CURVE: 0 the next nonce, 1..5 another (pr_fuzz.c) */
	long flip;     /* CURVE: a bit of the MESSAGE body to flip, or -1 */
	size_t cut;    /* CURVE: octets cut off the box */
	bool clear, command;
};

/* What the units are: u[0] is the greeting (NULL), or every unit is a
 * clear frame (PLAIN) or a MESSAGE plaintext (CURVE). */
enum pr_fuzz_mode {
	PR_FUZZ_NULL,
	PR_FUZZ_PLAIN,
	PR_FUZZ_CURVE,
};

/* splitmix64: the fuzzers' only randomness, so a seed replays a run. */
uint64_t pr_rnd(uint64_t *s);

/* One to three mutations of u[0..*n) (*n stays within 1..PR_UNITS). */
void pr_mutate(uint64_t *s, int mode, struct pr_unit *u, size_t *n);

/* The next write of a unit with left octets still to go: all of them, or
 * now and then a cut inside; *sleep_ms gets a pause before it (0 or 2). */
size_t pr_fuzz_piece(uint64_t *s, size_t left, unsigned *sleep_ms);

/* A hex digit's value, or -1. */
int pr_hexval(int ch);

#endif /* ZR_TOOLS_PROBE_PR_MUTATE_H */
