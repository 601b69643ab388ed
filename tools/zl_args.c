/*
 * zring tools — the command line of every subcommand (zl_args.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zl_args.h"

/* The column the help text starts in; a longer option takes a line of its own. */
#define ZL_HELP_COL 18

void
zl_args_init(struct zl_args *p, const struct zl_opt *opts, size_t nopts, int argc, char **argv)
{
	memset(p, 0, sizeof *p);
	p->opts = opts;
	p->nopts = nopts;
	p->argc = argc;
	p->argv = argv;
}

static int zl_args_error(struct zl_args *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
zl_args_error(struct zl_args *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->error, sizeof p->error, fmt, ap);
	va_end(ap);
	return ZL_ARG_ERROR;
}

/* The value of an option that takes one: what follows it in the same
 * argument (attached), else the next argument. */
static int
zl_args_value(struct zl_args *p, const struct zl_opt *o, const char *attached, const char **value)
{
	if (attached != NULL) {
		*value = attached;
	} else if (p->next < p->argc) {
		*value = p->argv[p->next++];
	} else {
		return zl_args_error(p, "option %s wants a value", p->option);
	}
	return o->id;
}

const struct zl_opt *
zl_args_find(const struct zl_opt *opts, size_t nopts, const char *option)
{
	bool lng = option[0] == '-' && option[1] == '-';
	const char *name = option + (lng ? 2 : 1);
	size_t len = lng ? strcspn(name, "=") : 1;

	for (size_t i = 0; i < nopts; i++) {
		const struct zl_opt *o = &opts[i];

		if (lng ? o->name != NULL && strlen(o->name) == len &&
		                    strncmp(o->name, name, len) == 0
		        : o->letter != 0 && o->letter == name[0])
			return &opts[i];
	}
	return NULL;
}

/* The next one-letter option of the cluster in p->cluster. */
static int
zl_args_letter(struct zl_args *p, const char **value)
{
	const struct zl_opt *o;

	snprintf(p->option, sizeof p->option, "-%c", *p->cluster++);
	o = zl_args_find(p->opts, p->nopts, p->option);
	if (o == NULL) {
		p->cluster = "";
		return zl_args_error(p, "unknown option '%s'", p->option);
	}
	if (o->value == NULL)
		return o->id;
	/* The value is the rest of this argument ("-F,", "-n5"), if any. */
	const char *rest = *p->cluster != '\0' ? p->cluster : NULL;
	p->cluster = "";
	return zl_args_value(p, o, rest, value);
}

static int
zl_args_long(struct zl_args *p, const char **value)
{
	const char *eq = strchr(p->arg, '=');
	const struct zl_opt *o = zl_args_find(p->opts, p->nopts, p->arg);

	snprintf(p->option, sizeof p->option, "%.*s",
	         eq != NULL ? (int)(eq - p->arg) : (int)strlen(p->arg), p->arg);
	if (o == NULL)
		return zl_args_error(p, "unknown option '%s'", p->option);
	if (o->value != NULL)
		return zl_args_value(p, o, eq != NULL ? eq + 1 : NULL, value);
	if (eq != NULL)
		return zl_args_error(p, "option %s takes no value", p->option);
	return o->id;
}

int
zl_args_next(struct zl_args *p, const char **value)
{
	*value = NULL;
	p->option[0] = '\0';
	if (p->cluster != NULL && *p->cluster != '\0')
		return zl_args_letter(p, value);
	p->cluster = NULL;
	if (p->next >= p->argc)
		return ZL_ARG_END;
	p->arg = p->argv[p->next++];
	if (p->operands_only || p->arg[0] != '-' || p->arg[1] == '\0') {
		*value = p->arg;
		return ZL_ARG_OPERAND;
	}
	if (strcmp(p->arg, "--") == 0) {
		p->operands_only = true;
		return zl_args_next(p, value);
	}
	if (p->arg[1] == '-')
		return zl_args_long(p, value);
	p->cluster = p->arg + 1;
	return zl_args_letter(p, value);
}

void
zl_args_help(FILE *f, const struct zl_opt *opts, size_t nopts)
{
	for (size_t i = 0; i < nopts; i++) {
		const struct zl_opt *o = &opts[i];
		char label[96];
		int n;

		if (o->help == NULL)
			continue;
		if (o->letter != 0 && o->name != NULL)
			n = snprintf(label, sizeof label, "-%c, --%s", o->letter, o->name);
		else if (o->letter != 0)
			n = snprintf(label, sizeof label, "-%c", o->letter);
		else
			n = snprintf(label, sizeof label, "--%s", o->name);
		if (o->value != NULL && n >= 0 && (size_t)n < sizeof label)
			n += snprintf(label + n, sizeof label - (size_t)n, " %s", o->value);
		/* At least one space between the option and its text. */
		if (2 + n < ZL_HELP_COL)
			fprintf(f, "  %-*s", ZL_HELP_COL - 2, label);
		else
			fprintf(f, "  %s\n%*s", label, ZL_HELP_COL, "");
		for (const char *h = o->help; *h != '\0'; h++) {
			fputc(*h, f);
			if (*h == '\n')
				fprintf(f, "%*s", ZL_HELP_COL, "");
		}
		fputc('\n', f);
	}
}

void
zl_verror(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputs(suffix, stderr);
	fflush(stderr);
}

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

	return (strncmp(endpoint, "tcp://", 6) == 0 || strncmp(endpoint, "tls://", 6) == 0) &&
	       colon != NULL && (strcmp(colon, ":*") == 0 || strcmp(colon, ":0") == 0);
}
