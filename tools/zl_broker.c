/*
 * `zring subscribe` and `zring publish`: the broker model on the command line.
 *
 *   zring subscribe queue 'tcp://127.0.0.1:5555' -b        print every job
 *   printf 'a\nb\n' | zring publish queue tcp://127.0.0.1:5555 -c --name jobs
 *
 * The command line is checked completely before a context exists, so a usage
 * error never leaves a half-made broker behind and always exits 1 with one
 * line on stderr. Every other failure prints the broker's or the publisher's
 * error text (which names the address, the destination, the header) after
 * "zring: " and exits 2, or 3 for a timeout.
 *
 * subscribe: the main thread blocks SIGINT and SIGTERM before any thread
 * exists (so the io thread and the broker's workers inherit the mask) and
 * waits on a signalfd and an eventfd; the handlers, on the broker's threads,
 * print under one lock and raise the eventfd once -n deliveries are printed.
 * Either wakes the main thread, which shuts the broker down (the messages
 * already accepted still reach the handler) and frees it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <zring.h>

#include "zl_args.h"
#include "zl_auth.h"
#include "zl_broker.h"
#include "zl_clock.h"
#include "zl_sockopt.h"
#include "zl_text.h"

static const char subscribe_usage_head[] =
	"usage: zring subscribe PATTERN ENDPOINT (-b|-c) [options]\n"
	"\n"
	"Mounts a handler on a broker endpoint and prints every delivery as one\n"
	"line:  NAME<TAB>HEADERS<TAB>PAYLOAD  where HEADERS is the header lines\n"
	"(\"name: value\") joined by ';', empty when there are none. A batch\n"
	"handler prints \"batch <size>\" before the lines of each batch. A\n"
	"malformed message (an error item) is reported on stderr and not counted.\n"
	"What the peers sent is escaped, so that no control sequence reaches the\n"
	"terminal: tab, newline, CR, NUL and backslash as \\t \\n \\r \\0 \\\\, other\n"
	"control characters (C0, DEL, C1) and octets that are not UTF-8 as \\xHH\n"
	"(--raw prints them as they came).\n"
	"\n"
	"  PATTERN         queue (PULL: every message, no filtering), fanout (SUB:\n"
	"                  the messages whose name starts with --name), rpc\n"
	"                  (ROUTER: answer each request)\n"
	"  ENDPOINT        tcp://HOST:PORT, tcp://HOST:* (any free port), ipc://PATH\n"
	"\n"
	"options:\n";

/* Both commands' options; each has a table of the ones it takes. */
enum bk_opt {
	BK_ARG_BIND,
	BK_ARG_CONNECT,
	BK_ARG_NAME,
	BK_ARG_READ_AHEAD,
	BK_ARG_WORKERS,
	BK_ARG_BY_KEY,
	BK_ARG_BATCH,
	BK_ARG_HANDLER_MS,
	BK_ARG_COUNT,
	BK_ARG_REPLY,
	BK_ARG_HEADER,
	BK_ARG_TIMEOUT,
	BK_ARG_RAW,
	BK_ARG_SOCKOPT,
	BK_ARG_ALLOW_PLAIN,
	BK_ARG_ALLOW_CURVE,
	BK_ARG_HELP,
};

/* The -o and --allow-* rows, the same in subscribe and publish. */
/* clang-format off */
#define BK_SECURITY_OPTS \
	{BK_ARG_SOCKOPT, NULL, 'o', "NAME=VALUE", \
	 "set a socket option on every socket the broker opens,\n" \
	 "by its libzmq name as zring cat -o takes it (see zring\n" \
	 "cat --help): the security options CURVE_SERVER\n" \
	 "CURVE_SECRETKEY CURVE_PUBLICKEY CURVE_SERVERKEY\n" \
	 "PLAIN_SERVER PLAIN_USERNAME PLAIN_PASSWORD, and others\n" \
	 "such as HANDSHAKE_IVL HEARTBEAT_IVL MAXMSGSIZE (the\n" \
	 "broker sets RCVHWM, LINGER, ... itself: see --read-ahead)"}, \
	{BK_ARG_ALLOW_PLAIN, "allow-plain", 0, "USER:PASS", \
	 "a PLAIN server (-o PLAIN_SERVER=1) admits this user with\n" \
	 "this password (repeatable) and no one else"}, \
	{BK_ARG_ALLOW_CURVE, "allow-curve", 0, "KEY", \
	 "a CURVE server (-o CURVE_SERVER=1) admits the client with\n" \
	 "this public key (repeatable) and no one else"}
/* clang-format on */

/* The security paragraph of both helps, up to what a failed handshake does. */
#define BK_SECURITY_USAGE                                                        \
	"security (libzmq's options and semantics; keys from zring keygen):\n"   \
	"  CURVE server    -o CURVE_SERVER=1 -o CURVE_SECRETKEY=KEY\n"           \
	"                  [--allow-curve CLIENT_PUBLIC_KEY]\n"                  \
	"  CURVE client    -o CURVE_SERVERKEY=KEY -o CURVE_PUBLICKEY=KEY\n"      \
	"                  -o CURVE_SECRETKEY=KEY\n"                             \
	"  PLAIN server    -o PLAIN_SERVER=1 --allow-plain USER:PASS\n"          \
	"  (without --allow-* a server admits every client that completes the\n" \
	"  handshake, as libzmq does without a ZAP handler)\n"                   \
	"  PLAIN client    -o PLAIN_USERNAME=USER -o PLAIN_PASSWORD=PASS\n"

static const struct zl_opt subscribe_opts[] = {
	{BK_ARG_BIND, NULL, 'b', NULL,
         "bind the endpoint (\"zring: bound to ADDRESS\" is printed on\n"
         "stderr once it listens)"},
	{BK_ARG_CONNECT, NULL, 'c', NULL, "dial the endpoint"},
	{BK_ARG_NAME, "name", 0, "NAME",
         "the subscription's name: the prefix a fanout subscription\n"
         "filters on (default: empty, every message)"},
	{BK_ARG_READ_AHEAD, "read-ahead", 0, "N",
         "messages read off the socket ahead of the handler\n"
         "(default 1000); beyond that the sender is held back"},
	{BK_ARG_WORKERS, "workers", 0, "N",
         "run N handlers side by side (lines never interleave,\n"
         "their order across workers is not kept)"},
	{BK_ARG_BY_KEY, "by-key", 0, NULL, "with --workers: lanes in rotation, each lane in order"},
	{BK_ARG_BATCH, "batch", 0, "N",
         "a batch handler: batches of up to N messages, closed\n"
         "20 ms after their first message (not with rpc, --by-key)"},
	{BK_ARG_HANDLER_MS, "handler-ms", 0, "MS",
         "the handler takes MS ms per message (to watch the\n"
         "backpressure hold the sender back)"},
	{BK_ARG_COUNT, NULL, 'n', "N",
         "exit after N deliveries (messages already read ahead\n"
         "past N are dropped; a batch is printed whole)"},
	{BK_ARG_REPLY, "reply", 0, "TEXT",
         "rpc: answer every request with TEXT (default: the\n"
         "request's payload after \"re:\")"},
	{BK_ARG_RAW, "raw", 0, NULL,
         "print names, headers and payloads as received, control\n"
         "characters included (for scripts; see above)"},
	BK_SECURITY_OPTS,
	{BK_ARG_HELP, "help", 'h', NULL, "print this help"},
};

static const char subscribe_usage_tail[] =
	"\n" BK_SECURITY_USAGE
	"  A failed handshake is one line on stderr with its reason (\"zring:\n"
	"  handshake failed on ENDPOINT: ...\"); the subscription goes on (a\n"
	"  dialling one keeps retrying; a repeat of the same failure is not\n"
	"  printed again).\n"
	"\n"
	"SIGINT or SIGTERM ends it cleanly: the broker stops reading, hands what it\n"
	"already accepted to the handler (for at most 5 s) and closes; exit 0.\n"
	"\n"
	"exit status: 0 done, 1 usage error, 2 endpoint or connection error\n"
	"\n"
	"examples:\n"
	"  zring subscribe queue 'tcp://127.0.0.1:5555' -b --handler-ms 100\n"
	"  zring subscribe fanout tcp://127.0.0.1:5556 -c --name orders. -n 10\n"
	"  zring subscribe rpc 'tcp://127.0.0.1:5557' -b --reply pong\n";

static const char publish_usage_head[] =
	"usage: zring publish PATTERN ENDPOINT (-b|-c) --name NAME [options]\n"
	"\n"
	"Publishes every line of stdin (without its newline) as the payload of one\n"
	"message [NAME, headers, line]. With rpc every line is a request and the\n"
	"payload of its reply is printed on a line of its own.\n"
	"\n"
	"  PATTERN         queue (PUSH: each message to one subscriber, round\n"
	"                  robin; waits while none has room), fanout (PUB: to every\n"
	"                  subscriber whose name prefixes NAME, waiting for the\n"
	"                  slowest; a message nobody matches is dropped), rpc\n"
	"                  (DEALER: a request, waits for its reply)\n"
	"  ENDPOINT        tcp://HOST:PORT, ipc://PATH\n"
	"\n"
	"options:\n";

static const struct zl_opt publish_opts[] = {
	{BK_ARG_BIND, NULL, 'b', NULL, "bind the endpoint (subscribers dial it; a fixed port)"},
	{BK_ARG_CONNECT, NULL, 'c', NULL, "dial the endpoint"},
	{BK_ARG_NAME, "name", 0, "NAME", "the destination: frame 0 of every message (required)"},
	{BK_ARG_HEADER, "header", 0, "'K: V'",
         "add the header K with the value V to every message\n"
         "(repeatable, in this order)"},
	{BK_ARG_TIMEOUT, "timeout", 0, "MS",
         "give up (exit 3) when a publish waits longer than MS ms\n"
         "for room, or a request for its reply (default: no limit)"},
	{BK_ARG_RAW, "raw", 0, NULL,
         "rpc: print each reply's payload as received; without it\n"
         "control characters and octets that are not UTF-8 are\n"
         "escaped (\\t \\n \\r \\0 \\\\ \\xHH), as zring subscribe does"},
	BK_SECURITY_OPTS,
	{BK_ARG_HELP, "help", 'h', NULL, "print this help"},
};

static const char publish_usage_tail[] =
	"\n"
	"no peer:\n"
	"  A queue publish with nobody to take it keeps trying for 5 s, then fails\n"
	"  with \"no connected peer\" (exit 2); a --timeout shorter than that ends\n"
	"  it first (exit 3). A fanout publisher sends to the subscriptions that\n"
	"  have reached it: what it publishes before a subscriber's filter arrived\n"
	"  goes to nobody (the slow joiner) and is not an error.\n"
	"\n" BK_SECURITY_USAGE "  A failed handshake ends the publish or request at once with its\n"
	"  reason (\"zring: send error to 'NAME': the handshake with 'ENDPOINT'\n"
	"  failed: ...\", exit 2) rather than waiting for a peer.\n"
	"\n"
	"exit status: 0 done, 1 usage error (a header that is not UTF-8\n"
	"included), 2 endpoint or connection error, refused publish, no connected\n"
	"peer, 3 timeout\n"
	"\n"
	"examples:\n"
	"  seq 10 | zring publish queue tcp://127.0.0.1:5555 -c --name jobs\n"
	"  echo hi | zring publish fanout tcp://127.0.0.1:5556 -c --name orders.eu \\\n"
	"      --header 'content-type: text/plain'\n"
	"  echo ping | zring publish rpc tcp://127.0.0.1:5557 -c --name echo \\\n"
	"      --timeout 2000\n";

/* ---- the command line ------------------------------------------------------ */

enum bk_cmd {
	BK_SUBSCRIBE = 1,
	BK_PUBLISH = 2,
};

struct bk_args {
	enum bk_cmd cmd;
	int pattern; /* enum zr_pattern, 0 until given */
	const char *endpoint;
	char side; /* 'b', 'c' or 0 */
	const char *name;
	unsigned read_ahead; /* 0: the broker's default */
	unsigned workers;    /* 0: one at a time */
	bool by_key;
	unsigned batch; /* 0: one delivery per handler call */
	int handler_ms;
	unsigned long long count; /* 0: no limit */
	const char *reply;
	struct zr_header *headers; /* name and value point into hcopies[i] */
	char **hcopies;
	size_t nheaders;
	int timeout_ms; /* -1: none */
	bool raw;       /* peer data unescaped (zl_text.h) */
	bool help;
	struct zl_sockopt *sockopts; /* -o, in the order given */
	size_t nsockopts;
	struct zl_auth auth; /* --allow-plain, --allow-curve */
};

static const char *
bk_cmd_name(enum bk_cmd cmd)
{
	return cmd == BK_SUBSCRIBE ? "subscribe" : "publish";
}

static void bk_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr after "zring: ". */
static void
bk_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zl_verror("zring: ", "\n", fmt, ap);
	va_end(ap);
}

static int bk_usage_error(const struct bk_args *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One line: what is wrong and where the usage is. Returns ZL_BROKER_USAGE. */
static int
bk_usage_error(const struct bk_args *a, const char *fmt, ...)
{
	char suffix[64];
	va_list ap;

	snprintf(suffix, sizeof suffix, " (zring %s --help for the usage)\n", bk_cmd_name(a->cmd));
	va_start(ap, fmt);
	zl_verror("zring: ", suffix, fmt, ap);
	va_end(ap);
	return ZL_BROKER_USAGE;
}

static void
bk_args_fini(struct bk_args *a)
{
	for (size_t i = 0; i < a->nheaders; i++)
		free(a->hcopies[i]);
	free(a->hcopies);
	free(a->headers);
	for (size_t i = 0; i < a->nsockopts; i++)
		zl_sockopt_wipe(&a->sockopts[i]);
	free(a->sockopts);
	zl_auth_fini(&a->auth);
}

static int
bk_parse_pattern(const char *s)
{
	if (strcmp(s, "queue") == 0)
		return ZR_QUEUE;
	if (strcmp(s, "fanout") == 0)
		return ZR_FANOUT;
	if (strcmp(s, "rpc") == 0)
		return ZR_RPC;
	return 0;
}

static const char *
bk_pattern_name(int pattern)
{
	return pattern == ZR_QUEUE ? "queue" : pattern == ZR_FANOUT ? "fanout" : "rpc";
}

static const char *
bk_trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* --header 'K: V': split at the first ':', both sides trimmed (the way the
 * wire's header lines are read). */
static int
bk_parse_header(struct bk_args *a, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char *copy;

	if (colon == NULL)
		return bk_usage_error(a, "--header wants 'NAME: VALUE', not '%s'", arg);
	if (strchr(arg, '\n') != NULL)
		return bk_usage_error(a, "--header '%s': a header is one line", arg);
	copy = strdup(arg);
	if (copy == NULL) {
		bk_error("out of memory");
		return ZL_BROKER_USAGE;
	}
	copy[colon - arg] = '\0';
	a->hcopies[a->nheaders] = copy;
	a->headers[a->nheaders].name = bk_trim(copy);
	a->headers[a->nheaders].value = bk_trim(copy + (colon - arg) + 1);
	a->nheaders++;
	if (a->headers[a->nheaders - 1].name[0] == '\0')
		return bk_usage_error(a, "--header '%s': the name is empty", arg);
	return 0;
}

/* One option or operand of the command line (zl_args.h); 0 or ZL_BROKER_USAGE (said). */
static int
bk_parse_opt(struct bk_args *a, int id, const char *value)
{
	long long v;

	switch (id) {
	case BK_ARG_BIND:
	case BK_ARG_CONNECT: {
		char side = id == BK_ARG_BIND ? 'b' : 'c';
		if (a->side != 0 && a->side != side)
			return bk_usage_error(a, "-b and -c exclude each other");
		a->side = side;
		return 0;
	}
	case BK_ARG_HELP:
		a->help = true;
		return 0;
	case BK_ARG_RAW:
		a->raw = true;
		return 0;
	case BK_ARG_BY_KEY:
		a->by_key = true;
		return 0;
	case BK_ARG_NAME:
		a->name = value;
		return 0;
	case BK_ARG_REPLY:
		a->reply = value;
		return 0;
	case BK_ARG_HEADER:
		return bk_parse_header(a, value);
	case BK_ARG_ALLOW_PLAIN:
	case BK_ARG_ALLOW_CURVE: {
		char err[256];
		int rc = id == BK_ARG_ALLOW_CURVE
		                 ? zl_auth_add_curve(&a->auth, value, err, sizeof err)
		                 : zl_auth_add_plain(&a->auth, value, err, sizeof err);

		return rc < 0 ? bk_usage_error(a, "%s", err) : 0;
	}
	case BK_ARG_SOCKOPT: {
		char err[256];

		if (zl_sockopt_parse(value, &a->sockopts[a->nsockopts], err, sizeof err) < 0)
			return bk_usage_error(a, "%s", err);
		a->nsockopts++;
		return 0;
	}
	case BK_ARG_READ_AHEAD:
		if (!zl_parse_int(value, 1, 100000000, &v))
			return bk_usage_error(a,
			                      "--read-ahead wants a count from 1 to 100000000, "
			                      "not '%s'",
			                      value);
		a->read_ahead = (unsigned)v;
		return 0;
	case BK_ARG_WORKERS:
		if (!zl_parse_int(value, 1, 1024, &v))
			return bk_usage_error(a, "--workers wants a count from 1 to 1024, not '%s'",
			                      value);
		a->workers = (unsigned)v;
		return 0;
	case BK_ARG_BATCH:
		if (!zl_parse_int(value, 1, 1000000, &v))
			return bk_usage_error(a, "--batch wants a size from 1 to 1000000, not '%s'",
			                      value);
		a->batch = (unsigned)v;
		return 0;
	case BK_ARG_HANDLER_MS:
		if (!zl_parse_int(value, 0, 86400000, &v))
			return bk_usage_error(a,
			                      "--handler-ms wants milliseconds (0 to 86400000), "
			                      "not '%s'",
			                      value);
		a->handler_ms = (int)v;
		return 0;
	case BK_ARG_COUNT:
		if (!zl_parse_int(value, 1, LLONG_MAX, &v))
			return bk_usage_error(a, "-n wants a count of 1 or more, not '%s'", value);
		a->count = (unsigned long long)v;
		return 0;
	case BK_ARG_TIMEOUT:
		if (!zl_parse_int(value, 0, INT_MAX, &v))
			return bk_usage_error(a, "--timeout wants milliseconds (0 to %d), not '%s'",
			                      INT_MAX, value);
		a->timeout_ms = (int)v;
		return 0;
	default: /* an operand: the pattern, then the endpoint */
		if (a->pattern == 0) {
			a->pattern = bk_parse_pattern(value);
			if (a->pattern == 0)
				return bk_usage_error(
					a, "unknown pattern '%s' (queue, fanout or rpc)", value);
		} else if (a->endpoint == NULL) {
			a->endpoint = value;
		} else {
			return bk_usage_error(a, "unexpected argument '%s'", value);
		}
		return 0;
	}
}

static int
bk_parse(struct bk_args *a, enum bk_cmd cmd, int argc, char **argv)
{
	bool sub = cmd == BK_SUBSCRIBE;
	struct zl_args p;
	const char *value;
	int id, rc = 0;

	a->cmd = cmd;
	a->timeout_ms = -1;
	a->headers = calloc((size_t)argc + 1, sizeof(*a->headers));
	a->hcopies = calloc((size_t)argc + 1, sizeof(*a->hcopies));
	a->sockopts = calloc((size_t)argc + 1, sizeof(*a->sockopts));
	if (a->headers == NULL || a->hcopies == NULL || a->sockopts == NULL ||
	    zl_auth_init(&a->auth, (size_t)argc) < 0) {
		bk_error("out of memory");
		return ZL_BROKER_USAGE;
	}
	if (sub)
		zl_args_init(&p, ZL_OPTS(subscribe_opts), argc, argv);
	else
		zl_args_init(&p, ZL_OPTS(publish_opts), argc, argv);
	while (rc == 0 && (id = zl_args_next(&p, &value)) != ZL_ARG_END) {
		if (id != ZL_ARG_ERROR) {
			rc = bk_parse_opt(a, id, value);
		} else if (p.option[0] != '\0' &&
		           (sub ? zl_args_find(ZL_OPTS(publish_opts), p.option)
		                : zl_args_find(ZL_OPTS(subscribe_opts), p.option)) != NULL &&
		           strncmp(p.error, "unknown", 7) == 0) {
			rc = bk_usage_error(a, "option %s is for zring %s, not %s", p.option,
			                    bk_cmd_name(sub ? BK_PUBLISH : BK_SUBSCRIBE),
			                    bk_cmd_name(cmd));
		} else {
			rc = bk_usage_error(a, "%s", p.error);
		}
	}
	return rc;
}

/* The checks that need the whole command line. */
static int
bk_check(const struct bk_args *a)
{
	char err[256];
	int mech;
	bool server;

	if (zl_sockopt_security(a->sockopts, a->nsockopts, &mech, &server, err, sizeof err) < 0 ||
	    zl_auth_check(&a->auth, mech, server, err, sizeof err) < 0)
		return bk_usage_error(a, "%s", err);
	if (a->pattern == 0)
		return bk_usage_error(a, "no pattern given (queue, fanout or rpc)");
	if (a->endpoint == NULL)
		return bk_usage_error(a, "no endpoint given");
	if (a->side == 0)
		return bk_usage_error(a, "say -b (bind) or -c (connect)");
	if (a->cmd == BK_PUBLISH) {
		if (a->name == NULL)
			return bk_usage_error(a, "say --name NAME: the destination");
		if (a->side == 'b' && zl_wildcard_port(a->endpoint))
			return bk_usage_error(a,
			                      "publish -b needs a fixed port for its "
			                      "subscribers to dial, not '%s'",
			                      a->endpoint);
		return 0;
	}
	if (a->by_key && a->workers == 0)
		return bk_usage_error(a, "--by-key needs --workers N");
	if (a->batch > 0 && a->pattern == ZR_RPC)
		return bk_usage_error(a, "an rpc responder answers each request: no --batch");
	if (a->batch > 0 && a->by_key)
		return bk_usage_error(a, "--by-key has no meaning for batches");
	if (a->reply != NULL && a->pattern != ZR_RPC)
		return bk_usage_error(a, "--reply is for an rpc subscription, not %s",
		                      bk_pattern_name(a->pattern));
	return 0;
}

/* Parses and checks; prints the help when asked. Returns -1 to go on, or the
 * exit status. */
static int
bk_args_take(struct bk_args *a, enum bk_cmd cmd, int argc, char **argv)
{
	int rc = bk_parse(a, cmd, argc, argv);

	if (rc == 0 && a->help) {
		if (cmd == BK_SUBSCRIBE) {
			fputs(subscribe_usage_head, stdout);
			zl_args_help(stdout, ZL_OPTS(subscribe_opts));
			fputs(subscribe_usage_tail, stdout);
		} else {
			fputs(publish_usage_head, stdout);
			zl_args_help(stdout, ZL_OPTS(publish_opts));
			fputs(publish_usage_tail, stdout);
		}
		return ZL_BROKER_OK;
	}
	if (rc == 0)
		rc = bk_check(a);
	return rc != 0 ? rc : -1;
}

/* ---- the broker --------------------------------------------------------------- */

/* The exit status for a failed broker call. */
static int
bk_status_of(int rc)
{
	if (rc == -ETIMEDOUT)
		return ZL_BROKER_TIMEOUT;
	if (rc == -EILSEQ)
		return ZL_BROKER_USAGE; /* a --header or --name that is not UTF-8 */
	return ZL_BROKER_ENDPOINT;
}

/* Reports a failed call with the object's error text (or the code's). */
static int
bk_failed(const char *text, int rc)
{
	bk_error("%s", text != NULL && text[0] != '\0' ? text : zr_strerror(rc));
	return bk_status_of(rc);
}

/* A started broker of the command line's pattern, endpoint and side. */
static int
bk_broker_open(const struct bk_args *a, zr_ctx **ctx, zr_broker **b)
{
	int rc = zr_ctx_new(ctx);

	*b = NULL;
	if (rc < 0) {
		bk_error("cannot start a context: %s", zr_strerror(rc));
		*ctx = NULL;
		return ZL_BROKER_ENDPOINT;
	}
	rc = zr_broker_new(*ctx, a->pattern, a->endpoint, a->side == 'b' ? ZR_BIND : ZR_CONNECT, b);
	if (rc < 0) {
		bk_error("cannot make a %s broker on %s: %s", bk_pattern_name(a->pattern),
		         a->endpoint, zr_strerror(rc));
		*b = NULL;
		return ZL_BROKER_ENDPOINT;
	}
	for (size_t i = 0; i < a->nsockopts; i++) {
		const void *v;
		size_t len;

		zl_sockopt_value(&a->sockopts[i], &v, &len);
		rc = zr_broker_setsockopt(*b, a->sockopts[i].def->option, v, len);
		if (rc < 0)
			return bk_usage_error(a, "-o %s: %s", a->sockopts[i].arg,
			                      zr_broker_error(*b));
	}
	/* a (and so a->auth) outlives the context: bk_args_fini comes after. */
	if (zl_auth_any(&a->auth)) {
		rc = zr_broker_set_auth(*b, zl_auth_cb, (void *)&a->auth);
		if (rc < 0)
			return bk_failed(zr_broker_error(*b), rc);
	}
	if (a->read_ahead > 0) {
		rc = zr_broker_set_read_ahead(*b, a->read_ahead);
		if (rc < 0)
			return bk_failed(zr_broker_error(*b), rc);
	}
	rc = zr_broker_start(*b);
	if (rc < 0)
		return bk_failed(zr_broker_error(*b), rc);
	return 0;
}

static void
bk_broker_close(zr_ctx *ctx, zr_broker *b)
{
	zr_broker_free(b);
	if (ctx != NULL)
		zr_ctx_free(ctx);
}

/* ---- subscribe ------------------------------------------------------------------ */

struct sub_state {
	const struct bk_args *a;
	pthread_mutex_t lock; /* stdout, the counters, the reply publisher */
	unsigned long long delivered;
	bool done;             /* -n reached, or stdout failed */
	int status;            /* the exit status once done */
	int done_fd;           /* eventfd: written once done */
	zr_publisher *replier; /* rpc */
};

/* Under the lock. */
static void
sub_finish(struct sub_state *s, int status)
{
	uint64_t one = 1;

	if (s->done)
		return;
	s->done = true;
	s->status = status;
	/* An eventfd below its maximum takes the write; the signals are
	 * blocked, so no EINTR either. */
	if (write(s->done_fd, &one, sizeof one) < 0)
		bk_error("eventfd: %s", strerror(errno));
}

/* Under the lock: one line NAME<TAB>HEADERS<TAB>PAYLOAD, the peer's bytes
 * escaped unless --raw (zl_text.h). */
static void
sub_print(const struct zr_delivery *d, bool raw)
{
	zl_text_puts(stdout, d->name, raw);
	fputc('\t', stdout);
	for (size_t i = 0; i < d->nheaders; i++) {
		if (i > 0)
			fputc(';', stdout);
		zl_text_puts(stdout, d->headers[i].name, raw);
		fputs(": ", stdout);
		zl_text_puts(stdout, d->headers[i].value, raw);
	}
	fputc('\t', stdout);
	zl_text_write(stdout, d->payload, d->payload_len, raw);
	fputc('\n', stdout);
}

/* Under the lock: whoever reads us (a pipe, a test) sees each line at once. */
static void
sub_flush(struct sub_state *s)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		bk_error("cannot write to stdout: %s", strerror(errno));
		sub_finish(s, ZL_BROKER_ENDPOINT);
	}
}

/* Under the lock. The text may quote the peer's bytes: always escaped
 * (stderr is a terminal even when stdout is a script's pipe). */
static void
sub_report_error_item(const struct zr_delivery *d)
{
	char text[ZR_ERRTEXT_MAX * 2];
	const char *t = d->error_text != NULL ? d->error_text : "";

	zl_text_escape(text, sizeof text, t, strlen(t));
	bk_error("malformed message (%s): %s", zr_strerror(d->error), text);
}

/* Under the lock: answers an rpc request. */
static void
sub_reply(struct sub_state *s, const struct zr_delivery *d)
{
	const char *reply = s->a->reply;
	size_t len;
	char *buf = NULL;
	int rc;

	if (reply != NULL) {
		len = strlen(reply);
	} else {
		len = 3 + d->payload_len;
		buf = malloc(len);
		if (buf == NULL) {
			bk_error("out of memory for a reply to %s", d->reply_to);
			return;
		}
		memcpy(buf, "re:", 3);
		if (d->payload_len > 0)
			memcpy(buf + 3, d->payload, d->payload_len);
		reply = buf;
	}
	rc = zr_reply(s->replier, d, NULL, 0, reply, len);
	if (rc < 0)
		bk_error("%s", zr_publisher_error(s->replier)[0] != '\0'
		                       ? zr_publisher_error(s->replier)
		                       : zr_strerror(rc));
	free(buf);
}

static bool
sub_is_done(struct sub_state *s)
{
	pthread_mutex_lock(&s->lock);
	bool done = s->done;
	pthread_mutex_unlock(&s->lock);
	return done;
}

/* The handler: one delivery. */
static void
sub_handler_cb(const struct zr_delivery *d, void *arg)
{
	struct sub_state *s = arg;

	if (d->error != 0) {
		pthread_mutex_lock(&s->lock);
		sub_report_error_item(d);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	if (sub_is_done(s))
		return;
	zl_sleep_ms((uint64_t)s->a->handler_ms);
	pthread_mutex_lock(&s->lock);
	if (!s->done) {
		sub_print(d, s->a->raw);
		sub_flush(s);
		if (s->replier != NULL)
			sub_reply(s, d);
		s->delivered++;
		if (s->a->count > 0 && s->delivered >= s->a->count)
			sub_finish(s, ZL_BROKER_OK);
	}
	pthread_mutex_unlock(&s->lock);
}

/* The batch handler: "batch <size>", then a line per message. An error item
 * comes as a batch of its own. */
static void
sub_batch_cb(const struct zr_delivery *const *batch, size_t n, void *arg)
{
	struct sub_state *s = arg;
	size_t good = 0;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		if (batch[i]->error != 0)
			sub_report_error_item(batch[i]);
		else
			good++;
	}
	pthread_mutex_unlock(&s->lock);
	if (good == 0 || sub_is_done(s))
		return;
	zl_sleep_ms((uint64_t)s->a->handler_ms * good);
	pthread_mutex_lock(&s->lock);
	if (!s->done) {
		printf("batch %zu\n", good);
		for (size_t i = 0; i < n; i++)
			if (batch[i]->error == 0)
				sub_print(batch[i], s->a->raw);
		sub_flush(s);
		s->delivered += good;
		if (s->a->count > 0 && s->delivered >= s->a->count)
			sub_finish(s, ZL_BROKER_OK);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Prints the address the subscription listens on. */
static void
sub_report_bound(zr_broker *b)
{
	char addr[512];
	int rc = zr_broker_bound_address(b, addr, sizeof addr);

	if (rc >= 0) {
		fprintf(stderr, "zring: bound to %.*s\n", rc, addr);
		fflush(stderr);
	}
}

/* The handshakes a secured subscription reports on stderr. */
#define SUB_MONITOR (ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZR_EVENT_HANDSHAKE_FAILED_AUTH)

/*
 * Prints each failed handshake recorded on sock's monitor: "handshake failed
 * on ENDPOINT: REASON" (the reason may quote the peer's ERROR: escaped). A
 * dialling subscription retries a refused server every RECONNECT_IVL, so a
 * failure like the last one printed is not repeated.
 */
static void
sub_report_handshakes(struct sub_state *s, zr_socket *sock, char *last, size_t cap)
{
	struct zr_event ev;

	while (zr_monitor_recv(sock, &ev, 0) == 0) {
		char why[ZR_EVENT_REASON_MAX * 4], line[sizeof why + ZR_EVENT_ENDPOINT_MAX + 64];

		if ((ev.type & SUB_MONITOR) == 0)
			continue;
		zl_text_escape(why, sizeof why, ev.reason, strlen(ev.reason));
		snprintf(line, sizeof line, "handshake failed on %s: %s", ev.endpoint,
		         why[0] != '\0' ? why : zr_strerror(ev.value));
		if (strncmp(line, last, cap) == 0)
			continue;
		snprintf(last, cap, "%s", line);
		pthread_mutex_lock(&s->lock);
		bk_error("%s", line);
		pthread_mutex_unlock(&s->lock);
	}
}

/* Waits for SIGINT, SIGTERM (on sig_fd) or the end of -n (done_fd), printing
 * failed handshakes meanwhile (mon: the subscription's socket, or NULL). */
static void
sub_wait(struct sub_state *s, int sig_fd, zr_socket *mon)
{
	char last[ZR_EVENT_REASON_MAX * 4 + ZR_EVENT_ENDPOINT_MAX + 64] = "";
	struct pollfd p[3] = {{.fd = sig_fd, .events = POLLIN},
	                      {.fd = s->done_fd, .events = POLLIN},
	                      {.fd = mon != NULL ? zr_monitor_fd(mon) : -1, .events = POLLIN}};

	if (p[2].fd < 0)
		p[2].fd = -1;
	for (;;) {
		if (mon != NULL)
			sub_report_handshakes(s, mon, last, sizeof last);
		if (poll(p, 3, -1) < 0 && errno == EINTR)
			continue;
		if ((p[0].revents | p[1].revents) & POLLIN)
			break;
	}
	if (p[0].revents & POLLIN) {
		struct signalfd_siginfo si;
		if (read(sig_fd, &si, sizeof si) < 0)
			bk_error("signalfd: %s", strerror(errno));
	}
}

static int
sub_run(const struct bk_args *a, struct sub_state *s, int sig_fd)
{
	zr_ctx *ctx = NULL;
	zr_broker *b = NULL;
	zr_subscription *sub = NULL;
	int status = bk_broker_open(a, &ctx, &b);
	int rc;

	if (status == 0 && a->pattern == ZR_RPC) {
		rc = zr_publisher_new(b, &s->replier);
		if (rc < 0)
			status = bk_failed(zr_broker_error(b), rc);
	}
	if (status == 0) {
		struct zr_sub_opts o = {
			.arg = s,
			.workers = a->workers,
			.by_key = a->by_key,
			.batch = a->batch,
		};
		if (a->batch > 0)
			o.batch_handler = sub_batch_cb;
		else
			o.handler = sub_handler_cb;
		rc = zr_subscribe(b, a->name != NULL ? a->name : "", &o, &sub);
		if (rc < 0)
			status = bk_failed(zr_broker_error(b), rc);
	}
	if (status == 0) {
		zr_socket *mon = NULL;

		if (a->side == 'b')
			sub_report_bound(b);
		/* Only a secured broker has handshakes that fail for a reason
		 * worth a line; a plain one's monitor stays off. */
		if (a->nsockopts > 0 &&
		    zr_socket_monitor(zr_subscription_socket(sub), SUB_MONITOR) == 0)
			mon = zr_subscription_socket(sub);
		sub_wait(s, sig_fd, mon);
		rc = zr_broker_shutdown(b);
		if (rc == -ETIMEDOUT)
			bk_error("shutdown: the handler did not finish within the drain timeout; "
			         "what was still queued is dropped");
		pthread_mutex_lock(&s->lock);
		status = s->done ? s->status : ZL_BROKER_OK;
		pthread_mutex_unlock(&s->lock);
	}
	if (s->replier != NULL)
		zr_publisher_free(s->replier);
	s->replier = NULL;
	bk_broker_close(ctx, b);
	return status;
}

/* see zl_broker.h */
int
zl_subscribe_main(int argc, char **argv)
{
	struct bk_args a;
	struct sub_state s;
	sigset_t set, old;
	int status;

	memset(&a, 0, sizeof a);
	status = bk_args_take(&a, BK_SUBSCRIBE, argc, argv);
	if (status >= 0) {
		bk_args_fini(&a);
		return status;
	}

	/* Before any thread exists: every thread zring starts inherits the
	 * mask, so the signals reach only the signalfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	int sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	memset(&s, 0, sizeof s);
	s.a = &a;
	s.done_fd = eventfd(0, EFD_CLOEXEC);
	pthread_mutex_init(&s.lock, NULL);
	if (sig_fd < 0 || s.done_fd < 0) {
		bk_error("cannot wait for signals: %s", strerror(errno));
		status = ZL_BROKER_ENDPOINT;
	} else {
		status = sub_run(&a, &s, sig_fd);
	}
	pthread_mutex_destroy(&s.lock);
	if (s.done_fd >= 0)
		close(s.done_fd);
	if (sig_fd >= 0)
		close(sig_fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	bk_args_fini(&a);
	return status;
}

/* ---- publish ------------------------------------------------------------------- */

/* One line: a message, or a request whose reply's payload is printed. */
static int
pub_line(const struct bk_args *a, zr_publisher *p, const char *line, size_t len)
{
	struct zr_delivery *reply = NULL;
	int rc;

	if (a->pattern != ZR_RPC) {
		rc = zr_publish(p, a->name, a->headers, a->nheaders, line, len, a->timeout_ms);
		return rc < 0 ? bk_failed(zr_publisher_error(p), rc) : 0;
	}
	rc = zr_request(p, a->name, a->headers, a->nheaders, line, len, a->timeout_ms, &reply);
	if (rc < 0)
		return bk_failed(zr_publisher_error(p), rc);
	zl_text_write(stdout, reply->payload, reply->payload_len, a->raw);
	fputc('\n', stdout);
	zr_delivery_free(reply);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		bk_error("cannot write to stdout: %s", strerror(errno));
		return ZL_BROKER_ENDPOINT;
	}
	return 0;
}

/* see zl_broker.h */
int
zl_publish_main(int argc, char **argv)
{
	struct bk_args a;
	zr_ctx *ctx = NULL;
	zr_broker *b = NULL;
	zr_publisher *p = NULL;
	char *line = NULL;
	size_t cap = 0;
	int status;

	memset(&a, 0, sizeof a);
	status = bk_args_take(&a, BK_PUBLISH, argc, argv);
	if (status >= 0) {
		bk_args_fini(&a);
		return status;
	}
	status = bk_broker_open(&a, &ctx, &b);
	if (status == 0) {
		int rc = zr_publisher_new(b, &p);
		if (rc < 0)
			status = bk_failed(zr_broker_error(b), rc);
	}
	while (status == 0) {
		ssize_t got = getline(&line, &cap, stdin);

		if (got < 0) {
			if (ferror(stdin)) {
				bk_error("cannot read stdin: %s", strerror(errno));
				status = ZL_BROKER_USAGE;
			}
			break;
		}
		size_t len = (size_t)got;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		status = pub_line(&a, p, line, len);
	}
	free(line);
	/* The publisher's socket lingers out what it took; the context waits. */
	zr_publisher_free(p);
	bk_broker_close(ctx, b);
	bk_args_fini(&a);
	return status;
}
