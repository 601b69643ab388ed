/*
 * zring tools — command-line argument helpers shared by the subcommands.
 */
#ifndef ZR_TOOLS_ZL_ARGS_H
#define ZR_TOOLS_ZL_ARGS_H

#include <stdbool.h>

/* A whole decimal integer in [min, max] (a sign only when min < 0; no spaces). */
bool zl_parse_int(const char *s, long long min, long long max, long long *out);

/* Whether endpoint asks for a port the kernel picks ("tcp://...:*", ":0"). */
bool zl_wildcard_port(const char *endpoint);

#endif /* ZR_TOOLS_ZL_ARGS_H */
