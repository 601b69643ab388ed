/*
 * `zring cat`: one zring socket driven from stdin and printed to stdout.
 *
 *   zring cat -r -b PULL tcp://0.0.0.0:5555            print what arrives
 *   seq 10 | zring cat -w -c PUSH tcp://host:5555 send ten messages
 *
 * The command line is checked completely (types against directions, option
 * names and integer values) before a context exists, so a usage error never
 * leaves a half-made socket behind and always exits 1 with one line on
 * stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zring.h>

#include "zl_args.h"
#include "zl_cat.h"

static const char cat_usage_text[] =
	"usage: zring cat (-r|-w) (-b|-c) TYPE ENDPOINT... [options]\n"
	"\n"
	"A ZeroMQ socket on the command line: -r prints every message the socket\n"
	"receives on its own line, -w sends every line of stdin as one message.\n"
	"\n"
	"  -r              receive: print each message, its frames joined by SEP\n"
	"  -w              send: each line of stdin is one message; with -F it is\n"
	"                  split into frames at SEP, without -F it is one frame\n"
	"  -b, -c          bind, or connect, the socket to every ENDPOINT\n"
	"  TYPE            PAIR PUB SUB REQ REP DEALER ROUTER PULL PUSH XPUB XSUB\n"
	"                  (any case)\n"
	"  ENDPOINT        tcp://HOST:PORT, tcp://*:PORT, ipc://PATH, ipc://@NAME;\n"
	"                  binding to port * (or 0) prints the port chosen on stderr\n"
	"\n"
	"options:\n"
	"  -F SEP          frame separator (default: a tab); the escapes \\t \\n \\r\n"
	"                  \\0 \\\\ and \\xHH are understood\n"
	"  -0              messages end with NUL instead of newline, on stdin and\n"
	"                  on stdout\n"
	"  -n N            stop after N messages (sent with -w, received with -r)\n"
	"  -s TOPIC        subscribe to messages starting with TOPIC (SUB, XSUB;\n"
	"                  repeatable); without -s a SUB receives everything\n"
	"  -o NAME=VALUE   set a socket option by its libzmq name, with or without\n"
	"                  ZMQ_, any case: SNDHWM RCVHWM LINGER RECONNECT_IVL\n"
	"                  RECONNECT_IVL_MAX MAXMSGSIZE SNDBUF RCVBUF RCVTIMEO\n"
	"                  SNDTIMEO ROUTING_ID ROUTER_MANDATORY HANDSHAKE_IVL\n"
	"                  HEARTBEAT_IVL HEARTBEAT_TTL HEARTBEAT_TIMEOUT PLAIN_SERVER\n"
	"                  PLAIN_USERNAME PLAIN_PASSWORD (times in ms)\n"
	"  --timeout MS    give up (exit 3) when a send or a receive waits longer\n"
	"                  than MS ms; also caps LINGER at MS\n"
	"  --reply TEXT    REP -r: answer every request with TEXT (split at SEP\n"
	"                  when -F is given) instead of echoing it back\n"
	"  -h, --help      print this help\n"
	"\n"
	"request-reply:\n"
	"  REQ -w          every line is a request; each reply is printed\n"
	"  REP -r          every request is printed, then echoed back (or --reply)\n"
	"\n"
	"delivery:\n"
	"  After stdin ends, -w closes the socket and waits until what it queued\n"
	"  has been delivered (LINGER, libzmq's default -1: for as long as it\n"
	"  takes); with --timeout it waits at most MS ms.\n"
	"  PUB drops every message sent before a subscriber has connected and\n"
	"  subscribed (the \"slow joiner\"; libzmq does the same). A PUB fed a file\n"
	"  publishes it at once, most likely to nobody: hold the input back until\n"
	"  the subscribers are there, e.g.\n"
	"      (sleep 1; cat lines.txt) | zring cat -w -b PUB tcp://*:5556\n"
	"\n"
	"exit status: 0 done, 1 usage error, 2 endpoint or connection error,\n"
	"3 timeout\n"
	"\n"
	"examples:\n"
	"  zring cat -r -b PULL 'tcp://*:5555'\n"
	"  printf 'a,b\\nc\\n' | zring cat -w -c PUSH tcp://127.0.0.1:5555 -F ,\n"
	"  zring cat -r -c SUB tcp://127.0.0.1:5556 -s weather. -n 10\n"
	"  echo ping | zring cat -w -c REQ tcp://127.0.0.1:5557 --timeout 2000\n";

/* ---- socket options by libzmq name --------------------------------------- */

enum cat_optkind {
	CAT_OPT_INT,   /* C int */
	CAT_OPT_INT64, /* int64_t */
	CAT_OPT_BYTES, /* the value's bytes */
};

struct cat_optdef {
	const char *name; /* libzmq's name without ZMQ_ */
	int option;
	enum cat_optkind kind;
};

static const struct cat_optdef cat_optdefs[] = {
	{"SNDHWM", ZR_SNDHWM, CAT_OPT_INT},
	{"RCVHWM", ZR_RCVHWM, CAT_OPT_INT},
	{"LINGER", ZR_LINGER, CAT_OPT_INT},
	{"RECONNECT_IVL", ZR_RECONNECT_IVL, CAT_OPT_INT},
	{"RECONNECT_IVL_MAX", ZR_RECONNECT_IVL_MAX, CAT_OPT_INT},
	{"MAXMSGSIZE", ZR_MAXMSGSIZE, CAT_OPT_INT64},
	{"SNDBUF", ZR_SNDBUF, CAT_OPT_INT},
	{"RCVBUF", ZR_RCVBUF, CAT_OPT_INT},
	{"RCVTIMEO", ZR_RCVTIMEO, CAT_OPT_INT},
	{"SNDTIMEO", ZR_SNDTIMEO, CAT_OPT_INT},
	{"ROUTING_ID", ZR_ROUTING_ID, CAT_OPT_BYTES},
	{"ROUTER_MANDATORY", ZR_ROUTER_MANDATORY, CAT_OPT_INT},
	{"HANDSHAKE_IVL", ZR_HANDSHAKE_IVL, CAT_OPT_INT},
	{"HEARTBEAT_IVL", ZR_HEARTBEAT_IVL, CAT_OPT_INT},
	{"HEARTBEAT_TTL", ZR_HEARTBEAT_TTL, CAT_OPT_INT},
	{"HEARTBEAT_TIMEOUT", ZR_HEARTBEAT_TIMEOUT, CAT_OPT_INT},
	{"PLAIN_SERVER", ZR_PLAIN_SERVER, CAT_OPT_INT},
	{"PLAIN_USERNAME", ZR_PLAIN_USERNAME, CAT_OPT_BYTES},
	{"PLAIN_PASSWORD", ZR_PLAIN_PASSWORD, CAT_OPT_BYTES},
};

#define CAT_NOPTDEFS (sizeof(cat_optdefs) / sizeof(cat_optdefs[0]))

/* One -o, checked and converted while parsing. */
struct cat_sockopt {
	const struct cat_optdef *def;
	const char *arg; /* the whole NAME=VALUE, for messages */
	const char *value;
	int64_t number; /* CAT_OPT_INT, CAT_OPT_INT64 */
};

/* ---- the command line ----------------------------------------------------- */

struct cat_bytes {
	char *p; /* heap */
	size_t len;
};

struct cat_args {
	char direction; /* 'r', 'w' or 0 */
	char attach;    /* 'b', 'c' or 0 */
	int type;       /* enum zr_socktype, -1 until given */
	const char **endpoints;
	size_t nendpoints;
	struct cat_bytes sep;
	bool sep_given;
	char delim;               /* '\n' or '\0' */
	unsigned long long count; /* 0: no limit */
	const char **topics;
	size_t ntopics;
	struct cat_sockopt *sockopts;
	size_t nsockopts;
	int timeout_ms; /* -1: none */
	const char *reply;
	bool help;
};

static void cat_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
cat_error(const char *fmt, ...)
{
	va_list ap;

	fputs("zring cat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int cat_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line: what is wrong and where the usage is. Returns ZL_CAT_USAGE. */
static int
cat_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("zring cat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (zring cat --help for the usage)\n", stderr);
	return ZL_CAT_USAGE;
}

static void
cat_args_fini(struct cat_args *a)
{
	free(a->endpoints);
	free(a->topics);
	free(a->sockopts);
	free(a->sep.p);
}

static int
cat_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The separator with its escapes resolved. Returns 0 or -EINVAL (bad
 * escape), -ENOMEM. */
static int
cat_unescape(const char *s, struct cat_bytes *out)
{
	size_t n = strlen(s), len = 0;
	char *p = malloc(n + 1);

	if (p == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			p[len++] = s[i];
			continue;
		}
		if (++i == n) {
			free(p);
			return -EINVAL;
		}
		switch (s[i]) {
		case 't':
			p[len++] = '\t';
			break;
		case 'n':
			p[len++] = '\n';
			break;
		case 'r':
			p[len++] = '\r';
			break;
		case '0':
			p[len++] = '\0';
			break;
		case '\\':
			p[len++] = '\\';
			break;
		case 'x': {
			int hi = i + 1 < n ? cat_hexval((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < n ? cat_hexval((unsigned char)s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				free(p);
				return -EINVAL;
			}
			p[len++] = (char)(hi * 16 + lo);
			i += 2;
			break;
		}
		default:
			free(p);
			return -EINVAL;
		}
	}
	free(out->p);
	out->p = p;
	out->len = len;
	return 0;
}

static const struct cat_optdef *
cat_optdef_find(const char *name, size_t len)
{
	if (len >= 4 && strncasecmp(name, "ZMQ_", 4) == 0) {
		name += 4;
		len -= 4;
	}
	for (size_t i = 0; i < CAT_NOPTDEFS; i++)
		if (strlen(cat_optdefs[i].name) == len &&
		    strncasecmp(cat_optdefs[i].name, name, len) == 0)
			return &cat_optdefs[i];
	return NULL;
}

static int
cat_parse_sockopt(struct cat_args *a, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct cat_sockopt o = {.arg = arg};

	if (eq == NULL || eq == arg)
		return cat_usage_error("-o wants NAME=VALUE, not '%s'", arg);
	o.def = cat_optdef_find(arg, (size_t)(eq - arg));
	if (o.def == NULL) {
		int n = (int)(eq - arg);
		if (n == 9 && strncasecmp(arg, "SUBSCRIBE", 9) == 0)
			return cat_usage_error("socket option 'SUBSCRIBE': use -s TOPIC");
		return cat_usage_error("unknown socket option '%.*s'", n, arg);
	}
	o.value = eq + 1;
	if (o.def->kind != CAT_OPT_BYTES) {
		long long v;
		bool ok = o.def->kind == CAT_OPT_INT
		                  ? zl_parse_int(o.value, INT_MIN, INT_MAX, &v)
		                  : zl_parse_int(o.value, INT64_MIN, INT64_MAX, &v);
		if (!ok)
			return cat_usage_error("socket option %s wants an integer, not '%s'",
			                       o.def->name, o.value);
		o.number = (int64_t)v;
	}
	a->sockopts[a->nsockopts++] = o;
	return 0;
}

/* The socket type, in any case; only the types zr_socket_open makes. */
static int
cat_parse_type(const char *s)
{
	char up[16];
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(up))
		return -1;
	for (size_t i = 0; i < n; i++)
		up[i] = (char)toupper((unsigned char)s[i]);
	int t = zr_socktype_parse((const uint8_t *)up, n);
	if (t < 0 || t > ZR_XSUB)
		return -1;
	return t;
}

/* The value of an option: the rest of this argument ("-F,") or the next. */
static const char *
cat_take_value(int argc, char **argv, int *i, const char *rest)
{
	if (*rest != '\0')
		return rest;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static int
cat_parse(struct cat_args *a, int argc, char **argv)
{
	bool options_done = false;
	size_t nargs = (size_t)argc + 1;

	a->type = -1;
	a->delim = '\n';
	a->timeout_ms = -1;
	a->endpoints = calloc(nargs, sizeof(*a->endpoints));
	a->topics = calloc(nargs, sizeof(*a->topics));
	a->sockopts = calloc(nargs, sizeof(*a->sockopts));
	if (a->endpoints == NULL || a->topics == NULL || a->sockopts == NULL) {
		cat_error("out of memory");
		return ZL_CAT_USAGE;
	}
	if (cat_unescape("\\t", &a->sep) != 0) {
		cat_error("out of memory");
		return ZL_CAT_USAGE;
	}

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (options_done || arg[0] != '-' || arg[1] == '\0') {
			if (a->type < 0) {
				a->type = cat_parse_type(arg);
				if (a->type < 0)
					return cat_usage_error("unknown socket type '%s'", arg);
			} else {
				a->endpoints[a->nendpoints++] = arg;
			}
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			options_done = true;
			continue;
		}
		if (arg[1] == '-') {
			const char *name = arg + 2, *value = NULL;
			const char *eq = strchr(name, '=');
			size_t nlen = eq != NULL ? (size_t)(eq - name) : strlen(name);

			if (nlen == 4 && strncmp(name, "help", 4) == 0 && eq == NULL) {
				a->help = true;
				continue;
			}
			bool is_timeout = nlen == 7 && strncmp(name, "timeout", 7) == 0;
			bool is_reply = nlen == 5 && strncmp(name, "reply", 5) == 0;
			if (!is_timeout && !is_reply)
				return cat_usage_error("unknown option '%s'", arg);
			if (eq != NULL)
				value = eq + 1;
			else if (i + 1 < argc)
				value = argv[++i];
			if (value == NULL)
				return cat_usage_error("option --%.*s wants a value", (int)nlen,
				                       name);
			if (is_reply) {
				a->reply = value;
				continue;
			}
			long long ms;
			if (!zl_parse_int(value, 0, INT_MAX, &ms))
				return cat_usage_error("--timeout wants milliseconds (0 to %d), "
				                       "not '%s'",
				                       INT_MAX, value);
			a->timeout_ms = (int)ms;
			continue;
		}
		/* A cluster of one-letter options: "-r", "-rb0", "-F,", "-n5". */
		for (const char *c = arg + 1; *c != '\0'; c++) {
			const char *value;
			long long n;

			switch (*c) {
			case 'r':
			case 'w':
				if (a->direction != 0 && a->direction != *c)
					return cat_usage_error("-r and -w exclude each other");
				a->direction = *c;
				break;
			case 'b':
			case 'c':
				if (a->attach != 0 && a->attach != *c)
					return cat_usage_error("-b and -c exclude each other");
				a->attach = *c;
				break;
			case '0':
				a->delim = '\0';
				break;
			case 'h':
				a->help = true;
				break;
			case 'F':
			case 'n':
			case 's':
			case 'o':
				value = cat_take_value(argc, argv, &i, c + 1);
				if (value == NULL)
					return cat_usage_error("option -%c wants a value", *c);
				if (*c == 'F') {
					if (cat_unescape(value, &a->sep) != 0)
						return cat_usage_error("-F: bad escape in '%s'",
						                       value);
					if (a->sep.len == 0)
						return cat_usage_error(
							"-F: the separator is empty");
					a->sep_given = true;
				} else if (*c == 'n') {
					if (!zl_parse_int(value, 1, LLONG_MAX, &n))
						return cat_usage_error(
							"-n wants a count of 1 or more, "
							"not '%s'",
							value);
					a->count = (unsigned long long)n;
				} else if (*c == 's') {
					a->topics[a->ntopics++] = value;
				} else {
					int rc = cat_parse_sockopt(a, value);
					if (rc != 0)
						return rc;
				}
				c += strlen(c) - 1; /* the value ended this argument */
				break;
			default:
				return cat_usage_error("unknown option '-%c'", *c);
			}
		}
	}
	return 0;
}

/* Can a socket of this type start with a send, or with a receive? */
static bool
cat_type_sends(int type)
{
	return type != ZR_SUB && type != ZR_PULL && type != ZR_REP;
}

static bool
cat_type_receives(int type)
{
	return type != ZR_PUB && type != ZR_PUSH && type != ZR_REQ;
}

/* The checks that need the whole command line. */
static int
cat_check(const struct cat_args *a)
{
	if (a->direction == 0)
		return cat_usage_error("say -r (receive) or -w (send)");
	if (a->attach == 0)
		return cat_usage_error("say -b (bind) or -c (connect)");
	if (a->type < 0)
		return cat_usage_error("no socket type given");
	if (a->nendpoints == 0)
		return cat_usage_error("no endpoint given");

	const char *name = zr_socktype_name(a->type);
	if (a->direction == 'w' && a->type == ZR_REP)
		return cat_usage_error("a REP socket receives first: use -r");
	if (a->direction == 'w' && !cat_type_sends(a->type))
		return cat_usage_error("a %s socket cannot send: use -r", name);
	if (a->direction == 'r' && a->type == ZR_REQ)
		return cat_usage_error("a REQ socket sends first: use -w");
	if (a->direction == 'r' && !cat_type_receives(a->type))
		return cat_usage_error("a %s socket cannot receive: use -w", name);
	if (a->ntopics > 0 && a->type != ZR_SUB && a->type != ZR_XSUB)
		return cat_usage_error("-s subscribes a SUB or XSUB, not a %s", name);
	if (a->reply != NULL && a->type != ZR_REP)
		return cat_usage_error("--reply is for REP -r, not a %s", name);
	return 0;
}

/* ---- the socket ------------------------------------------------------------ */

static int
cat_setopt_int(zr_socket *s, int option, int v)
{
	return zr_setsockopt(s, option, &v, sizeof v);
}

static int
cat_configure(const struct cat_args *a, zr_socket *s)
{
	int linger = -1;
	int rc;

	if (a->timeout_ms >= 0) {
		if (cat_setopt_int(s, ZR_RCVTIMEO, a->timeout_ms) < 0 ||
		    cat_setopt_int(s, ZR_SNDTIMEO, a->timeout_ms) < 0) {
			cat_error("--timeout %d: the socket refuses it", a->timeout_ms);
			return ZL_CAT_USAGE;
		}
	}
	for (size_t i = 0; i < a->nsockopts; i++) {
		const struct cat_sockopt *o = &a->sockopts[i];
		int iv = (int)o->number;

		switch (o->def->kind) {
		case CAT_OPT_INT:
			rc = zr_setsockopt(s, o->def->option, &iv, sizeof iv);
			break;
		case CAT_OPT_INT64:
			rc = zr_setsockopt(s, o->def->option, &o->number, sizeof o->number);
			break;
		default:
			rc = zr_setsockopt(s, o->def->option, o->value, strlen(o->value));
			break;
		}
		if (rc < 0) {
			cat_error("-o %s: %s", o->arg, zr_strerror(rc));
			return ZL_CAT_USAGE;
		}
		if (o->def->option == ZR_LINGER)
			linger = iv;
	}
	/* --timeout bounds the wait at exit as well: never hang for ever. */
	if (a->timeout_ms >= 0 && (linger < 0 || linger > a->timeout_ms)) {
		rc = cat_setopt_int(s, ZR_LINGER, a->timeout_ms);
		if (rc < 0) {
			cat_error("LINGER %d: %s", a->timeout_ms, zr_strerror(rc));
			return ZL_CAT_USAGE;
		}
	}
	if (a->type == ZR_SUB || a->type == ZR_XSUB) {
		/* A reading SUB with no -s takes everything; a writing XSUB sends
		 * its own subscriptions, so it gets none by default. */
		bool everything = a->ntopics == 0 && a->direction == 'r';
		for (size_t i = 0; i < a->ntopics || everything; i++) {
			const char *t = everything ? "" : a->topics[i];
			rc = zr_setsockopt(s, ZR_SUBSCRIBE, t, strlen(t));
			if (rc < 0) {
				cat_error("-s '%s': %s", t, zr_strerror(rc));
				return ZL_CAT_USAGE;
			}
			if (everything)
				break;
		}
	}
	return 0;
}

static int
cat_attach(const struct cat_args *a, zr_socket *s)
{
	for (size_t i = 0; i < a->nendpoints; i++) {
		const char *ep = a->endpoints[i];
		int rc = a->attach == 'b' ? zr_bind(s, ep) : zr_connect(s, ep);

		if (rc < 0) {
			cat_error("cannot %s %s: %s", a->attach == 'b' ? "bind to" : "connect to",
			          ep, zr_strerror(rc));
			return ZL_CAT_ENDPOINT;
		}
		if (a->attach == 'b' && zl_wildcard_port(ep)) {
			char last[256];
			size_t len = sizeof(last) - 1;

			rc = zr_getsockopt(s, ZR_LAST_ENDPOINT, last, &len);
			if (rc >= 0) {
				last[len < sizeof(last) ? len : sizeof(last) - 1] = '\0';
				fprintf(stderr, "zring cat: bound to %s\n", last);
				fflush(stderr);
			}
		}
	}
	return 0;
}

/* ---- messages ---------------------------------------------------------------- */

/* The message for one line: split into frames at SEP when -F was given. */
static int
cat_msg_from(const struct cat_args *a, const char *line, size_t len, zr_msg **out)
{
	zr_msg *m;
	int rc = zr_msg_new(&m);

	if (rc < 0)
		return rc;
	if (!a->sep_given) {
		rc = zr_msg_add(m, line, len);
	} else {
		const char *p = line, *end = line + len;
		for (;;) {
			const char *hit = memmem(p, (size_t)(end - p), a->sep.p, a->sep.len);
			const char *stop = hit != NULL ? hit : end;
			rc = zr_msg_add(m, p, (size_t)(stop - p));
			if (rc < 0 || hit == NULL)
				break;
			p = hit + a->sep.len;
		}
	}
	if (rc < 0) {
		zr_msg_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

/* Prints a message as one record: frames joined by SEP, then the delimiter. */
static int
cat_print(const struct cat_args *a, const zr_msg *m)
{
	size_t n = zr_msg_frames(m);

	for (size_t i = 0; i < n; i++) {
		size_t len;
		const void *p = zr_msg_frame(m, i, &len);

		if (i > 0)
			fwrite(a->sep.p, 1, a->sep.len, stdout);
		if (len > 0)
			fwrite(p, 1, len, stdout);
	}
	fputc(a->delim, stdout);
	/* Whoever reads us (a pipe, a test) sees each message as it arrives. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cat_error("cannot write to stdout: %s", strerror(errno));
		return ZL_CAT_ENDPOINT;
	}
	return 0;
}

/* The exit status for a failed send or receive, with its message. */
static int
cat_io_failed(const struct cat_args *a, zr_socket *s, int rc, bool sending)
{
	if (rc == -EAGAIN) {
		int ms = a->timeout_ms;
		size_t len = sizeof ms;
		if (ms < 0 && zr_getsockopt(s, sending ? ZR_SNDTIMEO : ZR_RCVTIMEO, &ms, &len) < 0)
			ms = -1;
		cat_error("timed out after %d ms waiting to %s", ms,
		          sending ? "send (no peer took the message)" : "receive");
		return ZL_CAT_TIMEOUT;
	}
	cat_error("%s failed: %s", sending ? "send" : "receive", zr_strerror(rc));
	return ZL_CAT_ENDPOINT;
}

/* -r: receive and print; REP answers every request. */
static int
cat_run_read(const struct cat_args *a, zr_socket *s)
{
	for (unsigned long long done = 0; a->count == 0 || done < a->count; done++) {
		zr_msg *m = NULL;
		int rc = zr_recv(s, &m, 0);

		if (rc < 0)
			return cat_io_failed(a, s, rc, false);
		rc = cat_print(a, m);
		if (rc == 0 && a->type == ZR_REP) {
			if (a->reply != NULL) {
				zr_msg_free(m);
				m = NULL;
				rc = cat_msg_from(a, a->reply, strlen(a->reply), &m);
				if (rc < 0) {
					cat_error("reply: %s", zr_strerror(rc));
					return ZL_CAT_ENDPOINT;
				}
			}
			rc = zr_send(s, &m, 0); /* the request itself is the echo */
			if (rc < 0) {
				zr_msg_free(m);
				return cat_io_failed(a, s, rc, true);
			}
		}
		zr_msg_free(m);
		if (rc != 0)
			return rc;
	}
	return ZL_CAT_OK;
}

/* -w: send every line of stdin; REQ prints each reply. */
static int
cat_run_write(const struct cat_args *a, zr_socket *s)
{
	char *line = NULL;
	size_t cap = 0;
	int status = ZL_CAT_OK;

	for (unsigned long long done = 0; a->count == 0 || done < a->count; done++) {
		ssize_t got = getdelim(&line, &cap, a->delim, stdin);
		zr_msg *m = NULL;
		int rc;

		if (got < 0)
			break;
		size_t len = (size_t)got;
		if (len > 0 && line[len - 1] == a->delim)
			len--;
		rc = cat_msg_from(a, line, len, &m);
		if (rc < 0) {
			cat_error("message: %s", zr_strerror(rc));
			status = ZL_CAT_ENDPOINT;
			break;
		}
		rc = zr_send(s, &m, 0);
		if (rc < 0) {
			zr_msg_free(m);
			status = cat_io_failed(a, s, rc, true);
			break;
		}
		if (a->type == ZR_REQ) {
			rc = zr_recv(s, &m, 0);
			if (rc < 0) {
				status = cat_io_failed(a, s, rc, false);
				break;
			}
			status = cat_print(a, m);
			zr_msg_free(m);
			if (status != 0)
				break;
		}
	}
	if (status == ZL_CAT_OK && ferror(stdin)) {
		cat_error("cannot read stdin: %s", strerror(errno));
		status = ZL_CAT_USAGE;
	}
	free(line);
	return status;
}

/* see zl_cat.h */
int
zl_cat_main(int argc, char **argv)
{
	struct cat_args a;
	zr_ctx *ctx = NULL;
	zr_socket *s = NULL;
	int rc;

	memset(&a, 0, sizeof a);
	rc = cat_parse(&a, argc, argv);
	if (rc == 0 && a.help) {
		fputs(cat_usage_text, stdout);
		cat_args_fini(&a);
		return ZL_CAT_OK;
	}
	if (rc == 0)
		rc = cat_check(&a);
	if (rc != 0) {
		cat_args_fini(&a);
		return rc;
	}

	rc = zr_ctx_new(&ctx);
	if (rc < 0) {
		cat_error("cannot start a context: %s", zr_strerror(rc));
		cat_args_fini(&a);
		return ZL_CAT_ENDPOINT;
	}
	rc = zr_socket_open(ctx, a.type, &s);
	if (rc < 0) {
		cat_error("cannot open a %s socket: %s", zr_socktype_name(a.type), zr_strerror(rc));
		zr_ctx_free(ctx);
		cat_args_fini(&a);
		return ZL_CAT_ENDPOINT;
	}
	int status = cat_configure(&a, s);
	if (status == 0)
		status = cat_attach(&a, s);
	if (status == 0)
		status = a.direction == 'r' ? cat_run_read(&a, s) : cat_run_write(&a, s);
	/* Closing keeps what -w queued going out for up to LINGER ms, and
	 * zr_ctx_free waits for that. */
	zr_socket_close(s);
	zr_ctx_free(ctx);
	cat_args_fini(&a);
	return status;
}
