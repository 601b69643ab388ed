/*
 * Z85 (RFC 32): 4 octets <-> 5 printable characters.
 *
 * A group of 4 octets is one big-endian 32-bit value, written as 5 base-85
 * digits, most significant first, each digit a character of the alphabet
 * below. The decoder is strict: only whole groups, only alphabet characters,
 * and a group's value must fit in 32 bits (85^5 - 1 does not: "%%%%%" and
 * every group above "%nSc0" are refused rather than silently truncated, which
 * is what a lax decoder does with them).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <zring/zmtp.h>

static const char z85_alphabet[85] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/* Character -> digit + 1 (0: not in the alphabet), built at compile time
 * from the same string so the two tables cannot disagree. */
#define Z85_D(c, v) [(unsigned char)(c)] = (uint8_t)((v) + 1)
static const uint8_t z85_digit_plus_one[256] = {
	Z85_D('0', 0),  Z85_D('1', 1),  Z85_D('2', 2),  Z85_D('3', 3),  Z85_D('4', 4),
	Z85_D('5', 5),  Z85_D('6', 6),  Z85_D('7', 7),  Z85_D('8', 8),  Z85_D('9', 9),
	Z85_D('a', 10), Z85_D('b', 11), Z85_D('c', 12), Z85_D('d', 13), Z85_D('e', 14),
	Z85_D('f', 15), Z85_D('g', 16), Z85_D('h', 17), Z85_D('i', 18), Z85_D('j', 19),
	Z85_D('k', 20), Z85_D('l', 21), Z85_D('m', 22), Z85_D('n', 23), Z85_D('o', 24),
	Z85_D('p', 25), Z85_D('q', 26), Z85_D('r', 27), Z85_D('s', 28), Z85_D('t', 29),
	Z85_D('u', 30), Z85_D('v', 31), Z85_D('w', 32), Z85_D('x', 33), Z85_D('y', 34),
	Z85_D('z', 35), Z85_D('A', 36), Z85_D('B', 37), Z85_D('C', 38), Z85_D('D', 39),
	Z85_D('E', 40), Z85_D('F', 41), Z85_D('G', 42), Z85_D('H', 43), Z85_D('I', 44),
	Z85_D('J', 45), Z85_D('K', 46), Z85_D('L', 47), Z85_D('M', 48), Z85_D('N', 49),
	Z85_D('O', 50), Z85_D('P', 51), Z85_D('Q', 52), Z85_D('R', 53), Z85_D('S', 54),
	Z85_D('T', 55), Z85_D('U', 56), Z85_D('V', 57), Z85_D('W', 58), Z85_D('X', 59),
	Z85_D('Y', 60), Z85_D('Z', 61), Z85_D('.', 62), Z85_D('-', 63), Z85_D(':', 64),
	Z85_D('+', 65), Z85_D('=', 66), Z85_D('^', 67), Z85_D('!', 68), Z85_D('/', 69),
	Z85_D('*', 70), Z85_D('?', 71), Z85_D('&', 72), Z85_D('<', 73), Z85_D('>', 74),
	Z85_D('(', 75), Z85_D(')', 76), Z85_D('[', 77), Z85_D(']', 78), Z85_D('{', 79),
	Z85_D('}', 80), Z85_D('@', 81), Z85_D('%', 82), Z85_D('$', 83), Z85_D('#', 84),
};
#undef Z85_D

/* see zmtp.h */
int
zr_z85_encode(char *out, size_t out_cap, const uint8_t *data, size_t len)
{
	size_t groups, text_len;

	if (len % 4 != 0 || (len > 0 && data == NULL))
		return -EINVAL;
	groups = len / 4;
	/* The text length (5 per group) must fit the int return value. */
	if (groups > ((size_t)INT_MAX - 1) / 5)
		return -EINVAL;
	text_len = groups * 5;
	if (out == NULL || out_cap < text_len + 1)
		return -ENOSPC;

	for (size_t g = 0; g < groups; g++) {
		const uint8_t *p = data + g * 4;
		uint32_t v =
			(uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
		char *o = out + g * 5;

		for (int i = 4; i >= 0; i--) {
			o[i] = z85_alphabet[v % 85];
			v /= 85;
		}
	}
	out[text_len] = '\0';
	return (int)text_len;
}

/* The value of one 5-character group; false if a character is outside the
 * alphabet or the value does not fit in 32 bits. */
static bool
z85_group_value(const char *t, uint32_t *value)
{
	uint64_t v = 0;

	for (int i = 0; i < 5; i++) {
		uint8_t d = z85_digit_plus_one[(unsigned char)t[i]];
		if (d == 0)
			return false;
		v = v * 85 + (uint64_t)(d - 1);
	}
	if (v > UINT32_MAX)
		return false;
	*value = (uint32_t)v;
	return true;
}

/* see zmtp.h */
int
zr_z85_decode(uint8_t *out, size_t out_cap, const char *text, size_t text_len)
{
	size_t groups, n;
	uint32_t v;

	if (text_len % 5 != 0 || (text_len > 0 && text == NULL))
		return -EINVAL;
	groups = text_len / 5;
	if (groups > (size_t)INT_MAX / 4)
		return -EINVAL;
	/* Judge the whole text before writing, so a refused text leaves out
	 * untouched (a key buffer never holds half a key). */
	for (size_t g = 0; g < groups; g++) {
		if (!z85_group_value(text + g * 5, &v))
			return -EINVAL;
	}
	n = groups * 4;
	if (n > 0 && (out == NULL || out_cap < n))
		return -ENOSPC;

	for (size_t g = 0; g < groups; g++) {
		(void)z85_group_value(text + g * 5, &v);
		out[g * 4 + 0] = (uint8_t)(v >> 24);
		out[g * 4 + 1] = (uint8_t)(v >> 16);
		out[g * 4 + 2] = (uint8_t)(v >> 8);
		out[g * 4 + 3] = (uint8_t)v;
	}
	return (int)n;
}
