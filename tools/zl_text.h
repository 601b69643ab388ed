/*
 * zring tools — peer data on a terminal.
 *
 * What a peer sent (names, headers, payloads, properties) reaches stdout,
 * and a terminal acts on control sequences in it: ESC [ ... can move the
 * cursor, rewrite earlier lines, retitle the window or, on some terminals,
 * answer back into the shell's input. Strict UTF-8 does not keep them out
 * (ESC is ASCII). So the human formats print peer bytes escaped, in the
 * language `zring cat -F` reads: \t \n \r \0 \\ and \xHH for every other C0
 * control, DEL, the C1 controls U+0080..U+009F (as their two UTF-8 octets)
 * and every octet that is not part of valid UTF-8. Printable UTF-8 passes
 * unchanged. --raw turns the escaping off for scripts.
 */
#ifndef ZR_TOOLS_ZL_TEXT_H
#define ZR_TOOLS_ZL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes len octets of data to f, escaped as above unless raw. */
void zl_text_write(FILE *f, const void *data, size_t len, bool raw);

/* The same for a NUL-terminated string. */
void zl_text_puts(FILE *f, const char *s, bool raw);

/* Escapes data into out (cap >= 1; always NUL-terminated, cut short at an
 * escape's boundary when out is too small). Returns the length written. */
size_t zl_text_escape(char *out, size_t cap, const void *data, size_t len);

#endif /* ZR_TOOLS_ZL_TEXT_H */
