/*
 * Test support: inputs placed flush against an inaccessible page.
 *
 * A codec under test gets its input at the very end of a readable mapping,
 * with a PROT_NONE page right after it, so reading one byte past len faults
 * (and Criterion reports the crash for that test alone).
 */
#ifndef ZR_TESTS_SUPPORT_GUARD_H
#define ZR_TESTS_SUPPORT_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct zt_guard {
	uint8_t *map; /* whole mapping: readable pages, then the guard page */
	size_t map_len;
	uint8_t *end; /* first byte of the guard page */
	size_t cap;   /* readable bytes in front of the guard page */
};

/* Maps room for at least cap bytes followed by a PROT_NONE page. Aborts the
 * test on failure. */
void zt_guard_init(struct zt_guard *g, size_t cap);
void zt_guard_fini(struct zt_guard *g);

/* Copies n bytes so that the last one sits right before the guard page and
 * returns where the first one landed (g->end when n == 0). n <= cap. */
uint8_t *zt_guard_place(struct zt_guard *g, const void *data, size_t n);

/* The junk byte codec structs are filled with before their *_init. */
#define ZT_JUNK 0x5c

#endif /* ZR_TESTS_SUPPORT_GUARD_H */
