/*
 * zring tools — command-line argument helpers (zl_args.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zl_args.h"

bool
zl_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9') {
		if (*s != '-' || min >= 0)
			return false;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool
zl_wildcard_port(const char *endpoint)
{
	const char *colon = strrchr(endpoint, ':');

	return strncmp(endpoint, "tcp://", 6) == 0 && colon != NULL &&
	       (strcmp(colon, ":*") == 0 || strcmp(colon, ":0") == 0);
}
