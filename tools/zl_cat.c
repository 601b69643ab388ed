/*
 * `zring cat`: one zring socket driven from stdin and printed to stdout.
 *
 *   zring cat -r -b PULL tcp://0.0.0.0:5555            print what arrives
 *   seq 10 | zring cat -w -c PUSH tcp://host:5555 send ten messages
 *
 * The command line is checked completely (types against directions, option
 * names, integer values, keys and the security set-up) before a context
 * exists, so a usage error never leaves a half-made socket behind and always
 * exits 1 with one line on stderr.
 *
 * Every wait (a receive, stdin, the first handshake before LINGER) is one
 * poll(2) over what it waits for and the socket's monitor (zr_monitor_fd): a
 * handshake that failed is printed on stderr at once ("handshake failed:
 * ..."), so a wrong key or a refused password reads as what it is and not as
 * a hang. A send is the exception: zring.h has no descriptor for room to
 * send, so a blocked send waits in slices of CAT_SEND_SLICE_MS and the
 * monitor is read between them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <zring.h>

#include "zl_args.h"
#include "zl_auth.h"
#include "zl_cat.h"
#include "zl_clock.h"
#include "zl_sockopt.h"
#include "zl_text.h"

static const char cat_usage_head[] =
	"usage: zring cat (-r|-w) (-b|-c) TYPE ENDPOINT... [options]\n"
	"\n"
	"A ZeroMQ socket on the command line: -r prints every message the socket\n"
	"receives on its own line, -w sends every line of stdin as one message.\n"
	"\n"
	"  TYPE            PAIR PUB SUB REQ REP DEALER ROUTER PULL PUSH XPUB XSUB\n"
	"                  (any case)\n"
	"  ENDPOINT        tcp://HOST:PORT, tcp://*:PORT, ipc://PATH, ipc://@NAME,\n"
	"                  tls://HOST:PORT (tcp:// with TLS, see security);\n"
	"                  binding to port * (or 0) prints the port chosen on stderr\n"
	"\n"
	"options:\n";

enum cat_opt {
	CAT_ARG_RECV,
	CAT_ARG_SEND,
	CAT_ARG_BIND,
	CAT_ARG_CONNECT,
	CAT_ARG_SEP,
	CAT_ARG_NUL,
	CAT_ARG_RAW,
	CAT_ARG_COUNT,
	CAT_ARG_TOPIC,
	CAT_ARG_SOCKOPT,
	CAT_ARG_TIMEOUT,
	CAT_ARG_REPLY,
	CAT_ARG_PROPERTY,
	CAT_ARG_ALLOW_PLAIN,
	CAT_ARG_ALLOW_CURVE,
	CAT_ARG_HELP,
};

static const struct zl_opt cat_opts[] = {
	{CAT_ARG_RECV, NULL, 'r', NULL, "receive: print each message, its frames joined by SEP"},
	{CAT_ARG_SEND, NULL, 'w', NULL,
         "send: each line of stdin is one message; with -F it is\n"
         "split into frames at SEP, without -F it is one frame"},
	{CAT_ARG_BIND, NULL, 'b', NULL, "bind the socket to every ENDPOINT"},
	{CAT_ARG_CONNECT, NULL, 'c', NULL, "connect the socket to every ENDPOINT"},
	{CAT_ARG_SEP, NULL, 'F', "SEP",
         "frame separator (default: a tab); the escapes \\t \\n \\r\n"
         "\\0 \\\\ and \\xHH are understood"},
	{CAT_ARG_NUL, NULL, '0', NULL,
         "messages end with NUL instead of newline, on stdin and\n"
         "on stdout; what is printed is not escaped (see below)"},
	{CAT_ARG_RAW, "raw", 0, NULL,
         "print received frames and properties as they came\n"
         "(for scripts; see below)"},
	{CAT_ARG_COUNT, NULL, 'n', "N", "stop after N messages (sent with -w, received with -r)"},
	{CAT_ARG_TOPIC, NULL, 's', "TOPIC",
         "subscribe to messages starting with TOPIC (SUB, XSUB;\n"
         "repeatable); without -s a SUB receives everything"},
	{CAT_ARG_SOCKOPT, NULL, 'o', "NAME=VALUE",
         "set a socket option by its libzmq name, with or without\n"
         "ZMQ_, any case: SNDHWM RCVHWM LINGER RECONNECT_IVL\n"
         "RECONNECT_IVL_MAX MAXMSGSIZE SNDBUF RCVBUF RCVTIMEO\n"
         "SNDTIMEO ROUTING_ID ROUTER_MANDATORY HANDSHAKE_IVL\n"
         "HEARTBEAT_IVL HEARTBEAT_TTL HEARTBEAT_TIMEOUT (times in\n"
         "ms) XPUB_VERBOSE XPUB_VERBOSER; zring's own: SUBS_MAX\n"
         "SUBS_MAXBYTES (what one subscriber of a PUB or XPUB\n"
         "may hold: 100000 subscriptions, 16 MiB; -1: no limit),\n"
         "CONNS_MAX (connections accepted at once, default\n"
         "65536, -1 no limit); security, below:\n"
         "PLAIN_SERVER PLAIN_USERNAME\n"
         "PLAIN_PASSWORD CURVE_SERVER CURVE_PUBLICKEY\n"
         "CURVE_SECRETKEY CURVE_SERVERKEY; zring's own:\n"
         "MAXFRAMES (frames in one received message, default\n"
         "65536, -1 no limit; one more closes that connection);\n"
         "tls:// endpoints: TLS_CERT TLS_KEY TLS_CA (PEM files)\n"
         "TLS_VERIFY (0: a client accepts any certificate)\n"
         "TLS_SERVER_NAME TLS_VERSION_MIN (1.3, or 1.2)"},
	{CAT_ARG_TIMEOUT, "timeout", 0, "MS",
         "give up (exit 3) when a send or a receive waits longer\n"
         "than MS ms; also caps LINGER at MS"},
	{CAT_ARG_REPLY, "reply", 0, "TEXT",
         "REP -r: answer every request with TEXT (split at SEP\n"
         "when -F is given) instead of echoing it back"},
	{CAT_ARG_PROPERTY, "property", 'P', "NAME",
         "print the received message's property NAME (User-Id,\n"
         "Peer-Address, Socket-Type, Identity, X-...) as a field\n"
         "before its frames (repeatable; empty when it has none)"},
	{CAT_ARG_ALLOW_PLAIN, "allow-plain", 0, "USER:PASS",
         "a PLAIN server admits this user with this password\n"
         "(repeatable); its messages carry User-Id USER"},
	{CAT_ARG_ALLOW_CURVE, "allow-curve", 0, "KEY",
         "a CURVE server admits the client with this public key\n"
         "(repeatable); its messages carry User-Id KEY"},
	{CAT_ARG_HELP, "help", 'h', NULL, "print this help"},
};

static const char cat_usage_tail[] =
	"\n"
	"security (libzmq's options and semantics):\n"
	"  CURVE server    -o CURVE_SERVER=1 -o CURVE_SECRETKEY=KEY\n"
	"  CURVE client    -o CURVE_SERVERKEY=KEY -o CURVE_PUBLICKEY=KEY\n"
	"                  -o CURVE_SECRETKEY=KEY\n"
	"  PLAIN server    -o PLAIN_SERVER=1\n"
	"  PLAIN client    -o PLAIN_USERNAME=USER -o PLAIN_PASSWORD=PASS\n"
	"  TLS server      -b ... tls://*:PORT -o TLS_CERT=srv.pem -o TLS_KEY=srv.key\n"
	"                  (-o TLS_CA=ca.pem: require client certificates; their\n"
	"                  subject is the User-Id)\n"
	"  TLS client      -c ... tls://HOST:PORT -o TLS_CA=ca.pem\n"
	"                  [-o TLS_CERT=cli.pem -o TLS_KEY=cli.key]\n"
	"  Keys are 40 Z85 characters, as `zring keygen` prints them. Without\n"
	"  --allow-* a server admits every client that completes the handshake (a\n"
	"  CURVE server: any key), as libzmq does without a ZAP handler; with them,\n"
	"  only those listed, and nothing a refused client sent is delivered.\n"
	"  A handshake that fails is reported on stderr as it happens, e.g.\n"
	"      zring cat: handshake failed: tcp://127.0.0.1:5555: ...\n"
	"  and the socket goes on trying as libzmq would. A connecting socket that\n"
	"  every endpoint refused with ERROR (wrong credentials or key) exits 2; a\n"
	"  libzmq CURVE server hangs up on a wrong server key without a word, which\n"
	"  is reported too, and retried (--timeout gives up).\n"
	"  The command line is visible to other users of the machine (ps): keep\n"
	"  secret keys and passwords in it only where that is acceptable.\n"
	"\n"
	"output:\n"
	"  -r prints what the peers sent escaped, so that no control sequence\n"
	"  reaches the terminal: tab, newline, CR, NUL and backslash as \\t \\n \\r\n"
	"  \\0 \\\\, other control characters (C0, DEL, C1) and octets that are\n"
	"  not UTF-8 as \\xHH (the escapes -F reads); printable UTF-8 is\n"
	"  unchanged. With --raw, or -0, the octets are printed as received.\n"
	"\n"
	"request-reply:\n"
	"  REQ -w          every line is a request; each reply is printed\n"
	"  REP -r          every request is printed, then echoed back (or --reply)\n"
	"\n"
	"delivery:\n"
	"  After stdin ends, -w closes the socket and waits until what it queued\n"
	"  has been delivered (LINGER, libzmq's default -1: for as long as it\n"
	"  takes); with --timeout it waits at most MS ms. Failed handshakes are\n"
	"  reported during that wait as well.\n"
	"  PUB drops every message sent before a subscriber has connected and\n"
	"  subscribed (the \"slow joiner\"; libzmq does the same). A PUB fed a file\n"
	"  publishes it at once, most likely to nobody: hold the input back until\n"
	"  the subscribers are there, e.g.\n"
	"      (sleep 1; cat lines.txt) | zring cat -w -b PUB tcp://*:5556\n"
	"\n"
	"exit status: 0 done, 1 usage error, 2 endpoint or connection error\n"
	"(refused by every endpoint included), 3 timeout\n"
	"\n"
	"examples:\n"
	"  zring cat -r -b PULL 'tcp://*:5555'\n"
	"  printf 'a,b\\nc\\n' | zring cat -w -c PUSH tcp://127.0.0.1:5555 -F ,\n"
	"  zring cat -r -c SUB tcp://127.0.0.1:5556 -s weather. -n 10\n"
	"  echo ping | zring cat -w -c REQ tcp://127.0.0.1:5557 --timeout 2000\n"
	"  zring cat -r -b PULL 'tcp://*:5558' -o CURVE_SERVER=1 -P User-Id \\\n"
	"      -o CURVE_SECRETKEY=\"$SERVER_SECRET\" --allow-curve \"$CLIENT_PUBLIC\"\n";

static void
cat_usage(void)
{
	fputs(cat_usage_head, stdout);
	zl_args_help(stdout, ZL_OPTS(cat_opts));
	fputs(cat_usage_tail, stdout);
}

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
	struct zl_sockopt *sockopts;
	size_t nsockopts;
	int timeout_ms; /* -1: none */
	const char *reply;
	const char **props; /* -P */
	size_t nprops;
	struct zl_auth auth; /* --allow-plain, --allow-curve */
	bool raw;            /* --raw: peer data unescaped (zl_text.h) */
	bool help;
};

static void cat_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
cat_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zl_verror("zring cat: ", "\n", fmt, ap);
	va_end(ap);
}

static int cat_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line: what is wrong and where the usage is. Returns ZL_CAT_USAGE. */
static int
cat_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zl_verror("zring cat: ", " (zring cat --help for the usage)\n", fmt, ap);
	va_end(ap);
	return ZL_CAT_USAGE;
}

static void
cat_args_fini(struct cat_args *a)
{
	if (a->sockopts != NULL)
		for (size_t i = 0; i < a->nsockopts; i++)
			zl_sockopt_wipe(&a->sockopts[i]);
	free(a->endpoints);
	free(a->topics);
	free(a->sockopts);
	free(a->props);
	zl_auth_fini(&a->auth);
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

static int
cat_parse_sockopt(struct cat_args *a, const char *arg)
{
	char err[256];

	if (strncasecmp(arg, "SUBSCRIBE=", 10) == 0 || strncasecmp(arg, "ZMQ_SUBSCRIBE=", 14) == 0)
		return cat_usage_error("socket option 'SUBSCRIBE': use -s TOPIC");
	if (zl_sockopt_parse(arg, &a->sockopts[a->nsockopts], err, sizeof err) < 0)
		return cat_usage_error("%s", err);
	a->nsockopts++;
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

static int
cat_parse_property(struct cat_args *a, const char *name)
{
	if (name[0] == '\0')
		return cat_usage_error("-P wants a property name, e.g. User-Id");
	a->props[a->nprops++] = name;
	return 0;
}

/* --allow-plain USER:PASS or --allow-curve KEY (zl_auth.h). */
static int
cat_parse_allow(struct cat_args *a, bool curve, const char *value)
{
	char err[256];
	int rc = curve ? zl_auth_add_curve(&a->auth, value, err, sizeof err)
	               : zl_auth_add_plain(&a->auth, value, err, sizeof err);

	return rc < 0 ? cat_usage_error("%s", err) : 0;
}

/* One option of the command line (zl_args.h); 0 or ZL_CAT_USAGE (said). */
static int
cat_parse_opt(struct cat_args *a, int id, const char *value)
{
	long long n;

	switch (id) {
	case CAT_ARG_RECV:
	case CAT_ARG_SEND: {
		char d = id == CAT_ARG_RECV ? 'r' : 'w';
		if (a->direction != 0 && a->direction != d)
			return cat_usage_error("-r and -w exclude each other");
		a->direction = d;
		return 0;
	}
	case CAT_ARG_BIND:
	case CAT_ARG_CONNECT: {
		char b = id == CAT_ARG_BIND ? 'b' : 'c';
		if (a->attach != 0 && a->attach != b)
			return cat_usage_error("-b and -c exclude each other");
		a->attach = b;
		return 0;
	}
	case CAT_ARG_NUL:
		a->delim = '\0';
		return 0;
	case CAT_ARG_RAW:
		a->raw = true;
		return 0;
	case CAT_ARG_HELP:
		a->help = true;
		return 0;
	case CAT_ARG_SEP:
		if (cat_unescape(value, &a->sep) != 0)
			return cat_usage_error("-F: bad escape in '%s'", value);
		if (a->sep.len == 0)
			return cat_usage_error("-F: the separator is empty");
		a->sep_given = true;
		return 0;
	case CAT_ARG_COUNT:
		if (!zl_parse_int(value, 1, LLONG_MAX, &n))
			return cat_usage_error("-n wants a count of 1 or more, not '%s'", value);
		a->count = (unsigned long long)n;
		return 0;
	case CAT_ARG_TOPIC:
		a->topics[a->ntopics++] = value;
		return 0;
	case CAT_ARG_SOCKOPT:
		return cat_parse_sockopt(a, value);
	case CAT_ARG_TIMEOUT:
		if (!zl_parse_int(value, 0, INT_MAX, &n))
			return cat_usage_error("--timeout wants milliseconds (0 to %d), not '%s'",
			                       INT_MAX, value);
		a->timeout_ms = (int)n;
		return 0;
	case CAT_ARG_REPLY:
		a->reply = value;
		return 0;
	case CAT_ARG_PROPERTY:
		return cat_parse_property(a, value);
	case CAT_ARG_ALLOW_PLAIN:
		return cat_parse_allow(a, false, value);
	case CAT_ARG_ALLOW_CURVE:
		return cat_parse_allow(a, true, value);
	default: /* an operand: the socket type, then the endpoints */
		if (a->type >= 0) {
			a->endpoints[a->nendpoints++] = value;
			return 0;
		}
		a->type = cat_parse_type(value);
		if (a->type < 0)
			return cat_usage_error("unknown socket type '%s'", value);
		return 0;
	}
}

static int
cat_parse(struct cat_args *a, int argc, char **argv)
{
	size_t nargs = (size_t)argc + 1;
	struct zl_args p;
	const char *value;
	int id, rc = 0;

	a->type = -1;
	a->delim = '\n';
	a->timeout_ms = -1;
	a->endpoints = calloc(nargs, sizeof(*a->endpoints));
	a->topics = calloc(nargs, sizeof(*a->topics));
	a->sockopts = calloc(nargs, sizeof(*a->sockopts));
	a->props = calloc(nargs, sizeof(*a->props));
	if (a->endpoints == NULL || a->topics == NULL || a->sockopts == NULL || a->props == NULL ||
	    zl_auth_init(&a->auth, nargs) < 0) {
		cat_error("out of memory");
		return ZL_CAT_USAGE;
	}
	if (cat_unescape("\\t", &a->sep) != 0) {
		cat_error("out of memory");
		return ZL_CAT_USAGE;
	}
	zl_args_init(&p, ZL_OPTS(cat_opts), argc, argv);
	while (rc == 0 && (id = zl_args_next(&p, &value)) != ZL_ARG_END)
		rc = id == ZL_ARG_ERROR ? cat_usage_error("%s", p.error)
		                        : cat_parse_opt(a, id, value);
	return rc;
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

/* The security set-up of the -o options (zl_sockopt_security) and the
 * authenticator's options that go with it. */
static int
cat_check_security(const struct cat_args *a)
{
	char err[256];
	int mech;
	bool server;

	if (zl_sockopt_security(a->sockopts, a->nsockopts, &mech, &server, err, sizeof err) < 0)
		return cat_usage_error("%s", err);
	if (zl_auth_check(&a->auth, mech, server, err, sizeof err) < 0)
		return cat_usage_error("%s", err);
	return 0;
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
	if (a->nprops > 0 && a->direction == 'w' && a->type != ZR_REQ)
		return cat_usage_error(
			"-P prints a property of received messages: use -r (or REQ)");
	return cat_check_security(a);
}

/* ---- the socket ------------------------------------------------------------ */

static int
cat_setopt_int(zr_socket *s, int option, int v)
{
	return zr_setsockopt(s, option, &v, sizeof v);
}

/* ---- the socket (continued) --------------------------------------------------- */

/* What the tool watches on the socket's monitor. */
#define CAT_WATCH_EVENTS                                                     \
	(ZR_EVENT_HANDSHAKE_SUCCEEDED | ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL | \
	 ZR_EVENT_HANDSHAKE_FAILED_AUTH | ZR_EVENT_DISCONNECTED)

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
		const struct zl_sockopt *o = &a->sockopts[i];
		const void *v;
		size_t len;

		zl_sockopt_value(o, &v, &len);
		rc = zr_setsockopt(s, o->def->option, v, len);
		if (rc < 0) {
			cat_error("-o %s: %s", o->arg, zr_strerror(rc));
			return ZL_CAT_USAGE;
		}
		if (o->def->option == ZR_LINGER)
			linger = o->inumber;
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
	if (zl_auth_any(&a->auth))
		zr_socket_set_auth(s, zl_auth_cb, (void *)&a->auth);
	/* Before any bind or connect, so the first handshake is seen too. */
	rc = zr_socket_monitor(s, CAT_WATCH_EVENTS);
	if (rc < 0) {
		cat_error("cannot monitor the socket: %s", zr_strerror(rc));
		return ZL_CAT_ENDPOINT;
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

/* Prints a message as one record: the -P properties, then the frames, all
 * joined by SEP, then the delimiter. The peer's bytes are escaped in the
 * line format (zl_text.h) and go as they are with --raw or -0 (records that
 * end with NUL are for programs, and any octet may be in them). */
static int
cat_print(const struct cat_args *a, const zr_msg *m)
{
	size_t n = zr_msg_frames(m);
	bool raw = a->raw || a->delim == '\0';

	for (size_t i = 0; i < a->nprops; i++) {
		const char *v = zr_msg_gets(m, a->props[i]);

		if (v != NULL)
			zl_text_puts(stdout, v, raw);
		fwrite(a->sep.p, 1, a->sep.len, stdout);
	}
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const void *p = zr_msg_frame(m, i, &len);

		if (i > 0)
			fwrite(a->sep.p, 1, a->sep.len, stdout);
		zl_text_write(stdout, p, len, raw);
	}
	fputc(a->delim, stdout);
	/* Whoever reads us (a pipe, a test) sees each message as it arrives. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cat_error("cannot write to stdout: %s", strerror(errno));
		return ZL_CAT_ENDPOINT;
	}
	return 0;
}

/* ---- waiting, with an eye on the handshakes --------------------------------- */

/*
 * How long a blocked send waits before the monitor is read again: a failed
 * handshake shows on stderr at most this late. The send still ends the
 * moment there is room.
 */
#define CAT_SEND_SLICE_MS 100

/* stdin, read with read(2) so that its descriptor can be polled: stdio could
 * hold a line in its buffer while poll says there is nothing. */
struct cat_in {
	char *buf;
	size_t cap;
	size_t start, end; /* the unread bytes */
	bool eof;
};

struct cat_run {
	const struct cat_args *a;
	zr_socket *s;
	int sock_fd;                    /* zr_socket_fd: readable when a message may be received */
	int mon_fd;                     /* zr_monitor_fd: readable when an event may be read */
	int send_ms;                    /* the user's SNDTIMEO (-o or --timeout), -1: for ever */
	int recv_ms;                    /* the user's RCVTIMEO */
	int linger_ms;                  /* the user's LINGER, after --timeout's cap */
	bool handshaken;                /* some handshake succeeded */
	bool *refused;                  /* -c: endpoint i refused us with ERROR */
	char last[ZR_EVENT_REASON_MAX]; /* the last failure printed */
	struct cat_in in;
};

/* Exit statuses travel beside the library's codes: > 0 a status (already
 * reported), < 0 a zring code, 0 fine. */

static long long
cat_now_ms(void)
{
	return (long long)zl_now_ms();
}

/* A deadline ms from now, or -1 for none. */
static long long
cat_deadline(int ms)
{
	return ms < 0 ? -1 : cat_now_ms() + ms;
}

/* The ms left until deadline (0 once passed), at most cap; -1 (for ever)
 * when there is neither. */
static int
cat_left(long long deadline, int cap)
{
	if (deadline < 0)
		return cap;
	long long left = deadline - cat_now_ms();
	if (left <= 0)
		return 0;
	if (cap >= 0 && left > cap)
		return cap;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static bool
cat_passed(long long deadline)
{
	return deadline >= 0 && cat_now_ms() >= deadline;
}

/* Prints a failure reason on one line, with anything unprintable as '?'
 * (a peer's words can reach it). */
static void
cat_report_failure(struct cat_run *r, const struct zr_event *ev)
{
	char line[ZR_EVENT_REASON_MAX];
	size_t n = strnlen(ev->reason, sizeof ev->reason - 1);

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)ev->reason[i];
		line[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	line[n] = '\0';
	if (n == 0)
		snprintf(line, sizeof line, "%s: event 0x%x (%d)", ev->endpoint, (unsigned)ev->type,
		         ev->value);
	/* A client that keeps redialling a wrong key fails the same way each
	 * time: say it once. */
	if (strcmp(line, r->last) == 0)
		return;
	memcpy(r->last, line, sizeof line);
	fprintf(stderr, "zring cat: handshake failed: %s\n", line);
	fflush(stderr);
}

/*
 * Events that are not failures: a handshake that succeeded, and a peer that
 * went away. A peer zring closed on purpose (a subscription limit, a
 * protocol error) says why, on a line of its own; one that merely went
 * away has no reason and stays quiet. Returns true when ev is not a failure.
 */
static bool
cat_event_quiet(const struct zr_event *ev)
{
	if (ev->type == ZR_EVENT_HANDSHAKE_SUCCEEDED)
		return true;
	if (ev->type != ZR_EVENT_DISCONNECTED)
		return false;
	if (ev->reason[0] != '\0') {
		fprintf(stderr, "zring cat: disconnected: %s\n", ev->reason);
		fflush(stderr);
	}
	return true;
}

/*
 * Reads every event the monitor has, which also re-arms zr_monitor_fd (it
 * turns readable again only after a read found nothing). Returns 0, or ZL_CAT_ENDPOINT when a connecting socket has been refused
 * by every endpoint: the peer's ERROR (an authenticator's status, or a
 * failed check such as a CURVE box that did not open) is final for those
 * credentials (RFC 23), and waiting on would only hang.
 */
static int
cat_watch(struct cat_run *r)
{
	const struct cat_args *a = r->a;
	struct zr_event ev;

	while (zr_monitor_recv(r->s, &ev, 0) == 0) {
		if (ev.type == ZR_EVENT_HANDSHAKE_SUCCEEDED)
			r->handshaken = true;
		if (cat_event_quiet(&ev))
			continue;
		cat_report_failure(r, &ev);
		/* On a connecting socket, FAILED_AUTH is always the peer's ERROR. */
		bool peer_error =
			ev.type == ZR_EVENT_HANDSHAKE_FAILED_AUTH || ev.value == -ZR_EPEERERROR;
		/* A failed TLS handshake (-EPROTO) is as final: not redialled. */
		bool tls_failed =
			ev.type == ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL && ev.value == -EPROTO;
		if (a->attach != 'c' || !(peer_error || tls_failed))
			continue;
		bool all = true;
		for (size_t i = 0; i < a->nendpoints; i++) {
			/* The event names the address dialled ("tls://localhost:1"
			 * reads "tls://127.0.0.1:1"): one endpoint is that one. */
			if (a->nendpoints == 1 || strcmp(ev.endpoint, a->endpoints[i]) == 0)
				r->refused[i] = true;
			all = all && r->refused[i];
		}
		if (all) {
			cat_error("giving up: %s %s",
			          tls_failed ? "the TLS handshake failed with" : "refused by",
			          a->nendpoints == 1 ? "the endpoint" : "every endpoint");
			/* Nothing queued can go anywhere: do not linger for it. */
			cat_setopt_int(r->s, ZR_LINGER, 0);
			return ZL_CAT_ENDPOINT;
		}
	}
	return 0;
}

/* What a wait watches besides the monitor. */
#define CAT_WAIT_SOCKET 1 /* a message to receive */
#define CAT_WAIT_STDIN 2  /* input, or its end */

/*
 * One poll over the monitor and what `what` names, until one of them is
 * readable, a signal comes or the deadline (-1: none) passes. Both zring
 * descriptors must have been re-armed first (a zr_recv and a zr_monitor_recv
 * that found nothing), or this could sleep past what is already there.
 * Returns the CAT_WAIT_* bits of what is readable (0: only the monitor, a
 * signal or the deadline), or -errno.
 */
static int
cat_wait(const struct cat_run *r, int what, long long deadline)
{
	struct pollfd p[3] = {{.fd = r->mon_fd, .events = POLLIN}};
	int bits[3] = {0};
	nfds_t n = 1;
	int ready = 0;

	if (what & CAT_WAIT_SOCKET) {
		bits[n] = CAT_WAIT_SOCKET;
		p[n++] = (struct pollfd){.fd = r->sock_fd, .events = POLLIN};
	}
	if (what & CAT_WAIT_STDIN) {
		bits[n] = CAT_WAIT_STDIN;
		p[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
	}
	if (poll(p, n, cat_left(deadline, -1)) < 0)
		return errno == EINTR ? 0 : -errno;
	for (nfds_t i = 1; i < n; i++)
		if (p[i].revents != 0) /* POLLHUP and POLLERR too: read(2) says what */
			ready |= bits[i];
	return ready;
}

/* zr_send in slices (there is no descriptor for room); see the return
 * convention above. */
static int
cat_send(struct cat_run *r, zr_msg **m)
{
	long long deadline = cat_deadline(r->send_ms);

	for (;;) {
		int rc = cat_watch(r);

		if (rc != 0)
			return rc;
		cat_setopt_int(r->s, ZR_SNDTIMEO, cat_left(deadline, CAT_SEND_SLICE_MS));
		rc = zr_send(r->s, m, 0);
		if (rc != -EAGAIN || cat_passed(deadline))
			return rc;
	}
}

/*
 * The next message, within the user's RCVTIMEO; see the return convention
 * above. zr_socket_fd turns readable only after a zr_recv found nothing, so
 * every round tries first and polls after: a message that came while the
 * last one was printed is taken at once, never waited for.
 */
static int
cat_recv(struct cat_run *r, zr_msg **m)
{
	long long deadline = cat_deadline(r->recv_ms);

	for (;;) {
		int rc = cat_watch(r);

		if (rc != 0)
			return rc;
		rc = zr_recv(r->s, m, ZR_DONTWAIT);
		if (rc != -EAGAIN || cat_passed(deadline))
			return rc;
		rc = cat_wait(r, CAT_WAIT_SOCKET, deadline);
		if (rc < 0)
			return rc;
	}
}

/*
 * The next record of stdin, without its delimiter (the last one may have
 * none). Returns 0 with *line set (NULL at the end of input), a status > 0,
 * or -errno.
 */
static int
cat_in_next(struct cat_run *r, char **line, size_t *len)
{
	struct cat_in *in = &r->in;

	for (;;) {
		char *d = in->start < in->end
		                  ? memchr(in->buf + in->start, r->a->delim, in->end - in->start)
		                  : NULL;

		if (d != NULL || (in->eof && in->start < in->end)) {
			char *stop = d != NULL ? d : in->buf + in->end;
			*line = in->buf + in->start;
			*len = (size_t)(stop - *line);
			in->start = d != NULL ? (size_t)(d - in->buf) + 1 : in->end;
			return 0;
		}
		if (in->eof) {
			*line = NULL;
			return 0;
		}
		if (in->start > 0) {
			memmove(in->buf, in->buf + in->start, in->end - in->start);
			in->end -= in->start;
			in->start = 0;
		}
		if (in->end == in->cap) {
			size_t cap = in->cap == 0 ? 65536 : in->cap * 2;
			char *p = realloc(in->buf, cap);
			if (p == NULL)
				return -ENOMEM;
			in->buf = p;
			in->cap = cap;
		}
		int rc = cat_watch(r);
		if (rc != 0)
			return rc;
		rc = cat_wait(r, CAT_WAIT_STDIN, -1);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue; /* the monitor or a signal: read it, then wait again */
		ssize_t got = read(STDIN_FILENO, in->buf + in->end, in->cap - in->end);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			in->eof = true;
		in->end += (size_t)got;
	}
}

/* The exit status for a failed send or receive, with its message. */
static int
cat_io_failed(struct cat_run *r, int rc, bool sending)
{
	if (rc > 0)
		return rc;
	if (rc == -EAGAIN) {
		cat_error("timed out after %d ms waiting to %s", sending ? r->send_ms : r->recv_ms,
		          sending ? "send (no peer took the message)" : "receive");
		return ZL_CAT_TIMEOUT;
	}
	cat_error("%s failed: %s", sending ? "send" : "receive", zr_strerror(rc));
	return ZL_CAT_ENDPOINT;
}

/* -r: receive and print; REP answers every request. */
static int
cat_run_read(struct cat_run *r)
{
	const struct cat_args *a = r->a;

	for (unsigned long long done = 0; a->count == 0 || done < a->count; done++) {
		zr_msg *m = NULL;
		int rc = cat_recv(r, &m);

		if (rc != 0)
			return cat_io_failed(r, rc, false);
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
			rc = cat_send(r, &m); /* the request itself is the echo */
			if (rc != 0) {
				zr_msg_free(m);
				return cat_io_failed(r, rc, true);
			}
		}
		zr_msg_free(m);
		if (rc != 0)
			return rc;
	}
	return ZL_CAT_OK;
}

/*
 * -w, after the last send: what was queued can only go out after a handshake
 * succeeds, so until one has, wait here (within LINGER) rather than inside
 * zr_ctx_free, where no failure could be reported. Whatever LINGER is left
 * then goes to the close. PUB and XPUB have dropped what nobody subscribed
 * to, a ROUTER what it had no peer for, and LINGER 0 discards: no wait for
 * those.
 */
static int
cat_settle(struct cat_run *r)
{
	long long deadline = cat_deadline(r->linger_ms);
	int rc = 0;

	if (r->linger_ms == 0 || r->a->type == ZR_PUB || r->a->type == ZR_XPUB ||
	    r->a->type == ZR_ROUTER)
		return 0;
	while (rc == 0 && !r->handshaken && !cat_passed(deadline)) {
		rc = cat_watch(r);
		/* A failed poll (no memory) ends the wait: the close lingers still. */
		if (rc == 0 && !r->handshaken && cat_wait(r, 0, deadline) < 0)
			break;
	}
	if (rc == 0 && deadline >= 0) {
		long long left = deadline - cat_now_ms();
		cat_setopt_int(r->s, ZR_LINGER, left > 0 ? (int)left : 0);
	}
	return rc;
}

/* -w: send every line of stdin; REQ prints each reply. */
static int
cat_run_write(struct cat_run *r)
{
	const struct cat_args *a = r->a;
	unsigned long long done = 0;
	int status = ZL_CAT_OK;

	for (; a->count == 0 || done < a->count; done++) {
		char *line;
		size_t len;
		zr_msg *m = NULL;
		int rc = cat_in_next(r, &line, &len);

		if (rc > 0)
			return rc;
		if (rc < 0) {
			cat_error("cannot read stdin: %s", strerror(-rc));
			return ZL_CAT_USAGE;
		}
		if (line == NULL)
			break;
		rc = cat_msg_from(a, line, len, &m);
		if (rc < 0) {
			cat_error("message: %s", zr_strerror(rc));
			return ZL_CAT_ENDPOINT;
		}
		rc = cat_send(r, &m);
		if (rc != 0) {
			zr_msg_free(m);
			return cat_io_failed(r, rc, true);
		}
		if (a->type == ZR_REQ) {
			rc = cat_recv(r, &m);
			if (rc != 0)
				return cat_io_failed(r, rc, false);
			status = cat_print(a, m);
			zr_msg_free(m);
			if (status != 0)
				return status;
		}
	}
	if (done > 0)
		status = cat_settle(r);
	return status;
}

/* The waits' bounds as the user set them; the socket's own timeouts then
 * become the slices. */
static int
cat_run_init(struct cat_run *r, const struct cat_args *a, zr_socket *s)
{
	size_t len;

	memset(r, 0, sizeof *r);
	r->a = a;
	r->refused = calloc(a->nendpoints, sizeof *r->refused);
	if (r->refused == NULL) {
		cat_error("out of memory");
		return ZL_CAT_ENDPOINT;
	}
	r->s = s;
	r->sock_fd = zr_socket_fd(s);
	r->mon_fd = zr_monitor_fd(s);
	len = sizeof r->send_ms;
	if (zr_getsockopt(s, ZR_SNDTIMEO, &r->send_ms, &len) < 0)
		r->send_ms = a->timeout_ms;
	len = sizeof r->recv_ms;
	if (zr_getsockopt(s, ZR_RCVTIMEO, &r->recv_ms, &len) < 0)
		r->recv_ms = a->timeout_ms;
	len = sizeof r->linger_ms;
	if (zr_getsockopt(s, ZR_LINGER, &r->linger_ms, &len) < 0)
		r->linger_ms = -1;
	return 0;
}

static void
cat_run_fini(struct cat_run *r)
{
	free(r->refused);
	free(r->in.buf);
}

/* see zl_cat.h */
int
zl_cat_main(int argc, char **argv)
{
	struct cat_args a;
	struct cat_run r;
	zr_ctx *ctx = NULL;
	zr_socket *s = NULL;
	int rc;

	memset(&a, 0, sizeof a);
	memset(&r, 0, sizeof r);
	rc = cat_parse(&a, argc, argv);
	if (rc == 0 && a.help) {
		cat_usage();
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
		status = cat_run_init(&r, &a, s);
	if (status == 0)
		status = cat_attach(&a, s);
	if (status == 0)
		status = a.direction == 'r' ? cat_run_read(&r) : cat_run_write(&r);
	/* What the last wait did not read yet: a refusal just before the last
	 * message is still worth a line (a line only: the work is done). */
	struct zr_event ev;
	while (r.s != NULL && zr_monitor_recv(s, &ev, 0) == 0)
		if (!cat_event_quiet(&ev))
			cat_report_failure(&r, &ev);
	/* Closing keeps what -w queued going out for up to LINGER ms, and
	 * zr_ctx_free waits for that. */
	zr_socket_close(s);
	zr_ctx_free(ctx);
	cat_run_fini(&r);
	cat_args_fini(&a);
	return status;
}
