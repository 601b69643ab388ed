/*
 * tests/tools — one pyzmq peer process per test, for the CLI tests.
 *
 * Include after tools/zl_proc.c, with PEER_SCRIPT (the peer program),
 * WAIT_MS (every wait's bound) and ZR_PYTHON defined. The peer prints
 * "READY <endpoint>" first, then one line per event the test expects.
 * tool_peer_init/fini need struct tool, so it includes tools/tool_proc.h.
 */
#ifndef ZR_TESTS_TOOLS_TOOL_PEER_H
#define ZR_TESTS_TOOLS_TOOL_PEER_H

#include <criterion/criterion.h>

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "tool_proc.h"

/* Per test: Criterion runs each test in its own process. */
static struct zl_proc peer;
static char peer_line[ZL_PROC_LINE_MAX];

/* Starts PEER_SCRIPT TYPE MODE ENDPOINT ARGS... (NULL-terminated) and
 * returns the endpoint it reports. */
static const char *
peer_start(const char *type, const char *mode, const char *endpoint, ...)
{
	static char ep[256];
	char *argv[40];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)ZR_PYTHON;
	argv[argc++] = (char *)PEER_SCRIPT;
	argv[argc++] = (char *)type;
	argv[argc++] = (char *)mode;
	argv[argc++] = (char *)endpoint;
	va_start(ap, endpoint);
	for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *)) {
		cr_assert(argc < 39);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;

	cr_assert(access(ZR_PYTHON, X_OK) == 0,
	          "%s not found: install python3 and python3-zmq (scripts/deps.sh)", ZR_PYTHON);
	int rc = zl_proc_spawn(&peer, argv);
	cr_assert(rc == 0, "cannot start the pyzmq peer: %s", strerror(-rc));
	rc = zl_proc_readline(&peer, peer_line, sizeof(peer_line), WAIT_MS);
	cr_assert(rc >= 0, "the pyzmq peer said nothing: %s", strerror(-rc));
	cr_assert(strncmp(peer_line, "READY ", 6) == 0, "pyzmq peer: %s", peer_line);
	cr_assert(strlen(peer_line + 6) < sizeof(ep));
	strcpy(ep, peer_line + 6);
	return ep;
}

/* The peer's next line must be exactly want. */
static inline void
peer_expect(const char *want)
{
	int rc = zl_proc_readline(&peer, peer_line, sizeof(peer_line), WAIT_MS);
	cr_assert(rc >= 0, "pyzmq peer: no line (want '%s'): %s", want, strerror(-rc));
	cr_assert_str_eq(peer_line, want);
}

/* The fixture of a suite with one tool and one peer per test. */
static inline void
tool_peer_init(struct tool *t)
{
	signal(SIGPIPE, SIG_IGN); /* a tool that exited early must not kill us */
	tool_reset(t);
	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
}

static inline void
tool_peer_fini(struct tool *t)
{
	tool_kill(t);
	zl_proc_stop(&peer, 2000);
}

#endif /* ZR_TESTS_TOOLS_TOOL_PEER_H */
