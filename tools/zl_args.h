/*
 * zring tools — the command line of every subcommand: one option table per
 * command, read by one parser and printed by one help writer, and the small
 * value checks the commands share.
 *
 *   static const struct zl_opt opts[] = {
 *           {OPT_COUNT, "count", 'n', "N", "stop after N messages"},
 *           {OPT_HELP, "help", 'h', NULL, "print this help"},
 *   };
 *   struct zl_args p;
 *   const char *v;
 *   int id;
 *
 *   zl_args_init(&p, ZL_OPTS(opts), argc, argv);
 *   while ((id = zl_args_next(&p, &v)) != ZL_ARG_END)
 *           switch (id) { ... case ZL_ARG_ERROR: complain about p.error }
 *
 * Long options read "--name VALUE" and "--name=VALUE"; one-letter options
 * "-n VALUE" and "-nVALUE", and cluster ("-rb0" is -r -b -0). "--" ends the
 * options; "-" alone is an operand. The commands keep their own exit status
 * for a bad command line (see each one's help).
 */
#ifndef ZR_TOOLS_ZL_ARGS_H
#define ZR_TOOLS_ZL_ARGS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One row of a command's option table. */
struct zl_opt {
	int id;            /* what zl_args_next returns for it (>= 0) */
	const char *name;  /* the long name without "--"; NULL: none */
	char letter;       /* the one-letter name; 0: none */
	const char *value; /* the value's name in the help ("N"); NULL: takes no value */
	const char *help;  /* its lines, joined by '\n'; NULL: not listed (an alias) */
};

struct zl_args {
	const struct zl_opt *opts;
	size_t nopts;
	int argc;
	char **argv;
	int next;            /* the next argument to read */
	const char *cluster; /* the rest of a cluster of one-letter options */
	bool operands_only;  /* after "--" */
	const char *arg;     /* the argument the last result came from */
	char option[64];     /* the option it was about, as spelled: "--name", "-n" */
	char error[192];     /* after ZL_ARG_ERROR: what is wrong, naming the option */
};

/* A table and its length, as zl_args_init and zl_args_help take them. */
#define ZL_OPTS(table) (table), sizeof(table) / sizeof((table)[0])

#define ZL_ARG_END (-1)     /* no argument left */
#define ZL_ARG_OPERAND (-2) /* an operand, in *value */
#define ZL_ARG_ERROR (-3)   /* an unknown option, or a value missing or not wanted */

void zl_args_init(struct zl_args *p, const struct zl_opt *opts, size_t nopts, int argc,
                  char **argv);

/*
 * The next argument: an option's id with *value its value (NULL for one that
 * takes none), ZL_ARG_OPERAND with *value the operand, ZL_ARG_END, or
 * ZL_ARG_ERROR with p->error set. A value is taken whole, even when it starts
 * with '-' ("--seed -1" is --seed with the value "-1").
 */
int zl_args_next(struct zl_args *p, const char **value);

/* The row that option ("--name", "--name=VALUE", "-n") names, or NULL. */
const struct zl_opt *zl_args_find(const struct zl_opt *opts, size_t nopts, const char *option);

/* The table's listed rows, one option each: "  -n, --count N  text", the text
 * in a column of its own (a long option and value get a line to themselves). */
void zl_args_help(FILE *f, const struct zl_opt *opts, size_t nopts);

/* On stderr: prefix, the message, suffix (each command's error line). */
void zl_verror(const char *prefix, const char *suffix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* A whole decimal integer in [min, max] (a sign only when min < 0; no spaces). */
bool zl_parse_int(const char *s, long long min, long long max, long long *out);

/* Whether endpoint asks for a port the kernel picks ("tcp://...:*", ":0", tls:// too). */
bool zl_wildcard_port(const char *endpoint);

#endif /* ZR_TOOLS_ZL_ARGS_H */
