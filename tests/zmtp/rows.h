/*
 * Building inputs from rows of literal and filler segments, for the vector
 * tables. A filler segment is n pattern octets (octet i = i * 7 + 1, from 0 in
 * each segment), so large bodies need no large literals.
 */
#ifndef ZR_TESTS_ZMTP_ROWS_H
#define ZR_TESTS_ZMTP_ROWS_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seg {
	const char *lit; /* NULL for a filler */
	size_t n;
};
#define L(x)                       \
	{                          \
		(x), sizeof(x) - 1 \
	}
#define F(count)              \
	{                     \
		NULL, (count) \
	}
#define MAX_SEGS 8

static inline uint8_t
row_pattern(size_t i)
{
	return (uint8_t)(i * 7 + 1);
}

static inline size_t
row_seg_len(const struct seg *s, size_t nseg)
{
	size_t n = 0;

	for (size_t i = 0; i < nseg && (s[i].lit != NULL || s[i].n != 0); i++)
		n += s[i].n;
	return n;
}

/* Concatenates the segments (up to the first empty one) into a fresh buffer. */
static inline uint8_t *
row_build(const struct seg *s, size_t nseg, size_t *len)
{
	size_t n = row_seg_len(s, nseg), off = 0;
	uint8_t *p = malloc(n ? n : 1);

	cr_assert(p != NULL);
	for (size_t i = 0; i < nseg && (s[i].lit != NULL || s[i].n != 0); i++) {
		if (s[i].lit != NULL)
			memcpy(p + off, s[i].lit, s[i].n);
		else
			for (size_t k = 0; k < s[i].n; k++)
				p[off + k] = row_pattern(k);
		off += s[i].n;
	}
	*len = n;
	return p;
}

/* Parameter generator body for a table: one test per row, by index. */
#define ROW_PARAMS(table)                                             \
	static int idx[sizeof(table) / sizeof(table[0])];             \
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) \
		idx[i] = (int)i;                                      \
	return cr_make_param_array(int, idx, sizeof(table) / sizeof(table[0]))

#endif /* ZR_TESTS_ZMTP_ROWS_H */
