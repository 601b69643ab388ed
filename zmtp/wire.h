/*
 * zmtp/ internal: network byte order helpers and character classes shared by
 * the codec's parsers. Not installed.
 */
#ifndef ZR_ZMTP_WIRE_H
#define ZR_ZMTP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint32_t
wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
wire_get64(const uint8_t *p)
{
	return (uint64_t)wire_get32(p) << 32 | wire_get32(p + 4);
}

static inline void
wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)(v >> 32));
	wire_put32(p + 4, (uint32_t)v);
}

static inline bool
wire_is_alpha(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static inline bool
wire_is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* RFC 23 property names: ALPHA / DIGIT / "-" / "_" / "." / "+". */
static inline bool
wire_is_name_char(uint8_t c)
{
	return wire_is_alpha(c) || wire_is_digit(c) || c == '-' || c == '_' || c == '.' || c == '+';
}

static inline uint8_t
wire_lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + ('a' - 'A')) : c;
}

/* Case-insensitive equality of a wire name and a C string. */
static inline bool
wire_name_eq(const uint8_t *a, size_t alen, const char *b)
{
	size_t i;

	for (i = 0; i < alen; i++) {
		if (b[i] == '\0' || wire_lower(a[i]) != wire_lower((uint8_t)b[i]))
			return false;
	}
	return b[alen] == '\0';
}

#endif /* ZR_ZMTP_WIRE_H */
