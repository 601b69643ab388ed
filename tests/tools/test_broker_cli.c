/*
 * `zring subscribe` and `zring publish` end to end: the built tool as child
 * processes, talking to each other (and to a libzmq PUSH through pyzmq,
 * tests/tools/peers/cat_peer.py) over TCP loopback.
 *
 * Every assertion is about what the tool printed, byte for byte, its exit
 * status and its one-line messages on stderr. The numbers in the comments are
 * the testable behaviours of the seed's broker (ruststream.md §20). Every
 * wait is bounded; every process is killed at the end of its test (and by
 * PR_SET_PDEATHSIG if the test process dies first).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/sock_helpers.h"

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/tools/peers/cat_peer.py"
#define MAX_TOOLS 4

/* ---- the tool as child processes ---------------------------------------- */

#include "tools/tool_peer.h"
#include "tools/tool_proc.h"

/* Per test: Criterion runs each test in its own process. */
static struct tool tools[MAX_TOOLS];

#define now_ms tool_now_ms
#define count_char tool_count_char

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN); /* a tool that exited early must not kill us */
	for (int i = 0; i < MAX_TOOLS; i++)
		tool_reset(&tools[i]);
	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
}

static void
teardown(void)
{
	for (int i = 0; i < MAX_TOOLS; i++)
		tool_kill(&tools[i]);
	zl_proc_stop(&peer, 2000);
}

/* No Criterion .timeout (its timer leaks in the runner under LSan in
 * parallel runs): every wait below is bounded by WAIT_MS instead. */
TestSuite(broker_cli, .init = setup, .fini = teardown);

/* Starts `zring CMD ARGS...` (NULL-terminated) as tools[slot]. */
static struct tool *
tool_start(int slot, const char *cmd, ...)
{
	struct tool *t = &tools[slot];
	va_list ap;

	cr_assert(slot >= 0 && slot < MAX_TOOLS);
	va_start(ap, cmd);
	tool_vbegin(t, cmd, va_arg(ap, const char *), ap);
	va_end(ap);
	return t;
}

/* Writes text to the tool's stdin (keeps it open). */
static void
tool_write_text(struct tool *t, const char *text)
{
	tool_write(t, text, strlen(text));
}

/* Writes text to the tool's stdin and closes it (end of input). */
static void
tool_input_text(struct tool *t, const char *text)
{
	tool_input(t, text, strlen(text));
}

/* Waits until the tool printed at least n lines on stdout. */
static void
tool_wait_lines(struct tool *t, size_t n, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;

	while (count_char(t->out, t->out_len, '\n') < n) {
		cr_assert(now_ms() < deadline,
		          "zring %s printed %zu lines in %d ms, want %zu; stdout: %s; stderr: %s",
		          t->cmd, count_char(t->out, t->out_len, '\n'), timeout_ms, n, t->out,
		          t->err);
		if (!tool_pump(t, 50))
			cr_assert_fail("zring %s ended after %zu lines, want %zu; stdout: %s; "
			               "stderr: %s",
			               t->cmd, count_char(t->out, t->out_len, '\n'), n, t->out,
			               t->err);
	}
}

/* The address a binding subscriber reported ("zring: bound to ADDR"). */
static const char *
tool_bound(struct tool *t)
{
	static char eps[MAX_TOOLS][256];
	char *ep = eps[t - tools];

	tool_stderr_after(t, "zring: bound to ", ep, sizeof eps[0], WAIT_MS);
	cr_assert(strncmp(ep, "tcp://127.0.0.1:", 16) == 0 && atoi(ep + 16) > 0, "bound to '%s'",
	          ep);
	return ep;
}

/* Runs `zring CMD ARGS` on no input and expects a failure: the status,
 * nothing on stdout, exactly one line on stderr starting "zring: ". */
#define expect_fails(status, ...)                                                               \
	do {                                                                                    \
		struct tool *t_ = tool_start(0, __VA_ARGS__, NULL);                             \
		int rc_ = tool_wait(t_, WAIT_MS);                                               \
		cr_expect_eq(rc_, (status), "zring %s: exit %d, want %d; stderr: %s",           \
		             #__VA_ARGS__, rc_, (status), t_->err);                             \
		cr_expect_eq(t_->out_len, 0, "%s: wrote to stdout: %s", #__VA_ARGS__, t_->out); \
		cr_expect(strncmp(t_->err, "zring: ", 7) == 0 &&                                \
		                  count_char(t_->err, t_->err_len, '\n') == 1 &&                \
		                  t_->err[t_->err_len - 1] == '\n',                             \
		          "%s: want one line on stderr, got: %s", #__VA_ARGS__, t_->err);       \
	} while (0)

/* A tcp endpoint on loopback where nobody listens. */
static const char *
unused_endpoint(void)
{
	static char ep[64];
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	return ep;
}

/* Splits s into lines (in place); returns how many (at most max). */
static size_t
split_lines(char *s, char **lines, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *l = strtok_r(s, "\n", &save); l != NULL && n < max;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	return n;
}

/* ---- the pyzmq peer ----------------------------------------------------- */

/* ---- queue -------------------------------------------------------------- */

/* §1, §2, §23, §30: exact frames through a bound queue, in order. */
Test(broker_cli, queue_subscriber_prints_name_headers_and_payload_of_each_message_in_order)
{
	struct tool *sub =
		tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "-n", "4", NULL);
	const char *ep = tool_bound(sub);
	struct tool *pub =
		tool_start(1, "publish", "queue", ep, "-c", "--name", "jobs", "--header",
	                   "content-type: text/plain", "--header", "x-tenant:acme ", NULL);
	tool_input_text(pub, "one\ntwo words\nthree\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
	cr_assert_eq(pub->out_len, 0, "publish printed: %s", pub->out);

	/* No headers: the field is empty, the tabs are still there. */
	pub = tool_start(2, "publish", "queue", ep, "-c", "--name", "jobs", NULL);
	tool_input_text(pub, "four\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "jobs\tcontent-type: text/plain;x-tenant: acme\tone\n"
	                           "jobs\tcontent-type: text/plain;x-tenant: acme\ttwo words\n"
	                           "jobs\tcontent-type: text/plain;x-tenant: acme\tthree\n"
	                           "jobs\t\tfour\n");
}

/* §29 from the other side: the subscriber dials, the publisher binds. */
Test(broker_cli, queue_publisher_that_binds_feeds_a_dialling_subscriber)
{
	const char *ep = unused_endpoint();
	struct tool *pub = tool_start(1, "publish", "queue", ep, "-b", "--name", "work", NULL);
	struct tool *sub = tool_start(0, "subscribe", "queue", ep, "-c", "-n", "2", NULL);
	/* A queue publish waits (up to 5 s) for a peer: nothing is lost. */
	tool_input_text(pub, "a\nb\n");

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "work\t\ta\nwork\t\tb\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
}

/* §4, §5, §6, §8, §11, §30: what a minimal libzmq peer sends is read the
 * documented way; a malformed message is reported on stderr and not counted. */
Test(broker_cli, queue_subscriber_reads_three_two_and_one_frame_messages_from_pyzmq)
{
	struct tool *sub =
		tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "-n", "5", NULL);
	const char *ep = tool_bound(sub);
	peer_start("PUSH", "connect", ep, "--send", "[\"jobs\",\"k: v\\nk2: v2\",\"p1\"]", "--send",
	           "[\"jobs\",\"p2\"]", "--send", "[\"jobs\"]", "--send",
	           "[\"other\",\"a : b: c\\n\",\"p4\",\"ignored\"]", "--send",
	           "[\"jobs\",\"no colon here\",\"bad\"]", "--send", "[\"jobs\",\"\",\"p6\"]",
	           NULL);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "jobs\tk: v;k2: v2\tp1\n"
	                           "jobs\t\tp2\n"
	                           "jobs\t\t\n"
	                           "other\ta: b: c\tp4\n"
	                           "jobs\t\tp6\n");
	cr_assert(strstr(sub->err, "zring: malformed message") != NULL &&
	                  strstr(sub->err, "no colon here") != NULL,
	          "stderr: %s", sub->err);
}

/*
 * Issue 12: what a peer sends must not drive the terminal. ESC, BEL, DEL
 * and C1 pass strict UTF-8, so the subscriber escapes them (and tab,
 * newline, backslash, octets that are not UTF-8) in names, headers and
 * payloads; --raw prints the octets as they came.
 */
#define EVIL_FRAMES                                                       \
	"[\"jobs\\u001b[5m\",\"x-evil\\u001b[31m: v\\u001b]0;t\\u0007\"," \
	"\"pay\\u001b[2Jload\\u00c2\\u009b\\u007f\\t\\\\\\u00ff\\u00c3\\u00a9\"]"

Test(broker_cli, subscriber_escapes_control_characters_in_peer_data_unless_raw)
{
	struct tool *sub =
		tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "-n", "1", NULL);
	const char *ep = tool_bound(sub);
	peer_start("PUSH", "connect", ep, "--send", EVIL_FRAMES, NULL);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "jobs\\x1b[5m\tx-evil\\x1b[31m: v\\x1b]0;t\\x07\t"
	                           "pay\\x1b[2Jload\\xc2\\x9b\\x7f\\t\\\\\\xff\xc3\xa9\n");
	cr_assert_null(memchr(sub->out, 0x1b, sub->out_len), "an ESC reached stdout");
}

Test(broker_cli, subscriber_with_raw_prints_peer_data_as_it_came)
{
	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "-n", "1",
	                              "--raw", NULL);
	const char *ep = tool_bound(sub);
	peer_start("PUSH", "connect", ep, "--send", EVIL_FRAMES, NULL);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "jobs\x1b[5m\tx-evil\x1b[31m: v\x1b]0;t\x07\t"
	                           "pay\x1b[2Jload\xc2\x9b\x7f\t\\\xff\xc3\xa9\n");
}

Test(broker_cli, a_malformed_messages_report_on_stderr_is_escaped_too)
{
	struct tool *sub =
		tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "-n", "1", NULL);
	const char *ep = tool_bound(sub);
	peer_start("PUSH", "connect", ep, "--send", "[\"jobs\",\"no colon\\u001b[2J\",\"bad\"]",
	           "--send", "[\"jobs\",\"\",\"ok\"]", NULL);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "jobs\t\tok\n");
	cr_assert(strstr(sub->err, "no colon\\x1b[2J") != NULL, "stderr: %s", sub->err);
	cr_assert_null(memchr(sub->err, 0x1b, sub->err_len), "an ESC reached stderr");
}

/* §64, §67: batches of 1..3, every message once, in order; with a slow
 * handler the messages queue up behind the first batch, so one batch holds
 * more than one. 1 s a message: the publisher, which sends all seven at
 * once, is done long before the first batch is, even on a loaded machine. */
Test(broker_cli, batch_subscriber_prints_each_batch_size_then_its_messages_in_order)
{
	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "--batch",
	                              "3", "--handler-ms", "1000", "-n", "7", NULL);
	const char *ep = tool_bound(sub);
	struct tool *pub = tool_start(1, "publish", "queue", ep, "-c", "--name", "b", NULL);
	tool_input_text(pub, "m1\nm2\nm3\nm4\nm5\nm6\nm7\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	char *lines[32];
	size_t n = split_lines(sub->out, lines, 32), next = 1, biggest = 0;
	for (size_t i = 0; i < n;) {
		unsigned size = 0;
		int end = 0;
		cr_assert(sscanf(lines[i], "batch %u%n", &size, &end) == 1 && lines[i][end] == '\0',
		          "line %zu is '%s', want 'batch <size>'", i, lines[i]);
		cr_assert(size >= 1 && size <= 3, "a batch of %u", size);
		cr_assert(i + size < n + 1, "batch %u cut short", size);
		for (unsigned k = 1; k <= size; k++) {
			char want[32];
			snprintf(want, sizeof want, "b\t\tm%zu", next++);
			cr_assert_str_eq(lines[i + k], want);
		}
		if (size > biggest)
			biggest = size;
		i += size + 1;
	}
	cr_assert_eq(next, 8, "got %zu messages", next - 1);
	cr_assert_gt(biggest, 1, "every batch held one message: %s", sub->out);
}

/* §70: side-by-side handlers print whole lines, never interleaved. */
Test(broker_cli, workers_print_whole_lines_and_every_message_once)
{
	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b",
	                              "--workers", "4", "--handler-ms", "200", "-n", "12", NULL);
	const char *ep = tool_bound(sub);
	struct tool *pub = tool_start(1, "publish", "queue", ep, "-c", "--name", "w", NULL);
	tool_input_text(pub, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	char *lines[32];
	bool seen[12] = {false};
	size_t n = split_lines(sub->out, lines, 32);
	cr_assert_eq(n, 12, "stdout: %s", sub->out);
	for (size_t i = 0; i < n; i++) {
		int v = -1, end = 0;
		cr_assert(sscanf(lines[i], "w\t\t%d%n", &v, &end) == 1 && lines[i][end] == '\0' &&
		                  v >= 0 && v < 12 && !seen[v],
		          "line '%s'", lines[i]);
		seen[v] = true;
	}
}

/* §71: keyless messages rotate over the lanes (1, 0, 1, ...), each lane runs
 * its messages in order while the lanes run side by side. */
Test(broker_cli, by_key_workers_keep_the_order_of_each_lane)
{
	struct tool *sub =
		tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", "--workers", "2",
	                   "--by-key", "--handler-ms", "100", "-n", "6", NULL);
	const char *ep = tool_bound(sub);
	struct tool *pub = tool_start(1, "publish", "queue", ep, "-c", "--name", "k", NULL);
	tool_input_text(pub, "0\n1\n2\n3\n4\n5\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	char *lines[16];
	size_t n = split_lines(sub->out, lines, 16);
	int last[2] = {-1, -1};
	cr_assert_eq(n, 6, "stdout: %s", sub->out);
	for (size_t i = 0; i < n; i++) {
		int v = -1, end = 0;
		cr_assert(sscanf(lines[i], "k\t\t%d%n", &v, &end) == 1 && lines[i][end] == '\0',
		          "line '%s'", lines[i]);
		/* Lanes rotate 1, 0, 1, ...: message v runs on lane (v + 1) % 2. */
		cr_assert_gt(v, last[v % 2], "lane order broken: %s", sub->out);
		last[v % 2] = v;
	}
}

/* ---- fan-out ------------------------------------------------------------ */

/* Feeds the publisher a numbered line every 100 ms until sub has exited
 * (its -n reached). Returns how many lines were fed. */
static int
feed_until_exit(struct tool *pub, struct tool *sub, const char *prefix)
{
	long long deadline = now_ms() + WAIT_MS;
	int fed = 0;

	while (now_ms() < deadline) {
		char line[64];
		snprintf(line, sizeof line, "%s%d\n", prefix, ++fed);
		tool_write_text(pub, line);
		if (!tool_pump(sub, 100))
			return fed;
	}
	cr_assert_fail("zring subscribe did not finish; stdout: %s; stderr: %s", sub->out,
	               sub->err);
	return -1;
}

/* Checks that out is n lines "NAME\t\tPREFIX<k>" with consecutive k. */
static void
expect_consecutive(char *out, int n, const char *name, const char *prefix)
{
	char *lines[64];
	int got = (int)split_lines(out, lines, 64), first = -1;

	cr_assert_eq(got, n, "%d lines, want %d", got, n);
	for (int i = 0; i < n; i++) {
		char head[64];
		snprintf(head, sizeof head, "%s\t\t%s", name, prefix);
		cr_assert(strncmp(lines[i], head, strlen(head)) == 0, "line '%s'", lines[i]);
		int k = atoi(lines[i] + strlen(head));
		if (i == 0)
			first = k;
		/* Lossless once the filter arrived: no gaps after the first. */
		cr_assert_eq(k, first + i, "line '%s' after a gap", lines[i]);
	}
}

/* §31, §35, §37: a fan-out subscriber receives only the names its own name
 * prefixes; a non-matching one receives nothing, yet was listening all along
 * (a publisher of a matching name reaches it afterwards). */
Test(broker_cli, fanout_subscriber_that_does_not_match_receives_nothing)
{
	const char *ep = unused_endpoint();
	struct tool *us = tool_start(2, "subscribe", "fanout", ep, "-c", "--name", "orders.us",
	                             "-n", "1", NULL);
	struct tool *eu = tool_start(0, "subscribe", "fanout", ep, "-c", "--name", "orders.eu",
	                             "-n", "3", NULL);
	struct tool *pub =
		tool_start(1, "publish", "fanout", ep, "-b", "--name", "orders.eu.1", NULL);
	/* Slow joiners: what goes out before a filter arrived reaches nobody. */
	feed_until_exit(pub, eu, "e");
	cr_assert_eq(tool_wait(eu, WAIT_MS), 0, "stderr: %s", eu->err);
	expect_consecutive(eu->out, 3, "orders.eu.1", "e");
	/* A few more the us subscriber must not see either. */
	tool_write_text(pub, "e100\ne101\n");
	tool_input_text(pub, "");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
	tool_pump(us, 200);
	cr_assert_eq(us->out_len, 0, "orders.us received: %s", us->out);

	/* It was there: a name it prefixes does reach it. */
	pub = tool_start(1, "publish", "fanout", ep, "-b", "--name", "orders.us.2", NULL);
	feed_until_exit(pub, us, "u");
	cr_assert_eq(tool_wait(us, WAIT_MS), 0, "stderr: %s", us->err);
	expect_consecutive(us->out, 1, "orders.us.2", "u");
	tool_input_text(pub, "");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
}

/* §32: a fan-out publish nobody matches is dropped, and is a success. */
Test(broker_cli, fanout_publish_with_no_subscriber_succeeds)
{
	struct tool *pub =
		tool_start(1, "publish", "fanout", unused_endpoint(), "-c", "--name", "news", NULL);
	tool_input_text(pub, "nobody\nlistens\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
	cr_assert_eq(pub->out_len, 0);
}

/* ---- rpc ---------------------------------------------------------------- */

/* The header called name in a "k: v;k2: v2" field, or NULL. */
static const char *
header_in(const char *field, const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name);
	for (const char *h = field; h != NULL && *h != '\0';) {
		const char *end = strchr(h, ';');
		size_t len = end != NULL ? (size_t)(end - h) : strlen(h);
		if (len > n + 2 && strncmp(h, name, n) == 0 && h[n] == ':' && h[n + 1] == ' ') {
			cr_assert(len - n - 2 < cap);
			memcpy(buf, h + n + 2, len - n - 2);
			buf[len - n - 2] = '\0';
			return buf;
		}
		h = end != NULL ? end + 1 : NULL;
	}
	return NULL;
}

static bool
all_hex(const char *s, size_t min_len)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return n >= min_len && n % 2 == 0;
}

/* Checks one responder line: "NAME\tHEADERS\tPAYLOAD" with the user header,
 * a correlation-id of the requester's form and a reply-to address. */
static void
expect_request_line(char *line, const char *name, const char *payload, const char *pid)
{
	char *tab1 = strchr(line, '\t');
	char *tab2 = tab1 != NULL ? strchr(tab1 + 1, '\t') : NULL;
	char v[256];

	cr_assert(tab2 != NULL, "line '%s'", line);
	*tab1 = *tab2 = '\0';
	cr_assert_str_eq(line, name);
	cr_assert_str_eq(tab2 + 1, payload);
	const char *headers = tab1 + 1;
	cr_assert(header_in(headers, "x-user", v, sizeof v) != NULL, "headers '%s'", headers);
	cr_assert_str_eq(v, "ann");
	/* §51: req-<pid>-<16 hex>. */
	cr_assert(header_in(headers, "correlation-id", v, sizeof v) != NULL, "headers '%s'",
	          headers);
	char want[64];
	int n = snprintf(want, sizeof want, "req-%s-", pid);
	cr_assert(strncmp(v, want, (size_t)n) == 0 && strlen(v + n) == 16 && all_hex(v + n, 16),
	          "correlation-id '%s'", v);
	/* §49: reply-to: zmq-reply:<hex of the requester's routing id>. */
	cr_assert(header_in(headers, "reply-to", v, sizeof v) != NULL, "headers '%s'", headers);
	cr_assert(strncmp(v, "zmq-reply:", 10) == 0 && all_hex(v + 10, 2), "reply-to '%s'", v);
}

/* §49, §51, §52: request and reply through two zring processes. */
Test(broker_cli, rpc_publisher_prints_each_reply_of_a_zring_responder)
{
	struct tool *rsp =
		tool_start(0, "subscribe", "rpc", "tcp://127.0.0.1:0", "-b", "-n", "2", NULL);
	const char *ep = tool_bound(rsp);
	struct tool *req = tool_start(1, "publish", "rpc", ep, "-c", "--name", "greet", "--header",
	                              "x-user: ann", "--timeout", "15000", NULL);
	char pid[32];
	snprintf(pid, sizeof pid, "%d", (int)req->pid);
	tool_input_text(req, "hello\nsecond line\n");

	cr_assert_eq(tool_wait(req, WAIT_MS), 0, "stderr: %s", req->err);
	cr_assert_str_eq(req->out, "re:hello\nre:second line\n");
	cr_assert_eq(tool_wait(rsp, WAIT_MS), 0, "stderr: %s", rsp->err);
	char *lines[8];
	cr_assert_eq(split_lines(rsp->out, lines, 8), 2, "stdout: %s", rsp->out);
	expect_request_line(lines[0], "greet", "hello", pid);
	expect_request_line(lines[1], "greet", "second line", pid);
}

Test(broker_cli, rpc_responder_answers_with_the_reply_text)
{
	struct tool *rsp = tool_start(0, "subscribe", "rpc", "tcp://127.0.0.1:0", "-b", "--reply",
	                              "pong", "--workers", "2", "-n", "3", NULL);
	const char *ep = tool_bound(rsp);
	struct tool *req = tool_start(1, "publish", "rpc", ep, "-c", "--name", "ping", "--timeout",
	                              "15000", NULL);
	tool_input_text(req, "a\nb\nc\n");

	cr_assert_eq(tool_wait(req, WAIT_MS), 0, "stderr: %s", req->err);
	cr_assert_str_eq(req->out, "pong\npong\npong\n");
	cr_assert_eq(tool_wait(rsp, WAIT_MS), 0, "stderr: %s", rsp->err);
	cr_assert_eq(count_char(rsp->out, rsp->out_len, '\n'), 3, "stdout: %s", rsp->out);
}

/* Issue 12: a reply is peer data too: escaped unless --raw. */
Test(broker_cli, rpc_publisher_escapes_control_characters_in_a_reply_unless_raw)
{
	struct tool *rsp = tool_start(0, "subscribe", "rpc", "tcp://127.0.0.1:0", "-b", "--reply",
	                              "\x1b[2Jgone", "-n", "2", NULL);
	const char *ep = tool_bound(rsp);
	struct tool *req = tool_start(1, "publish", "rpc", ep, "-c", "--name", "ping", "--timeout",
	                              "15000", NULL);
	tool_input_text(req, "a\n");
	cr_assert_eq(tool_wait(req, WAIT_MS), 0, "stderr: %s", req->err);
	cr_assert_str_eq(req->out, "\\x1b[2Jgone\n");

	req = tool_start(2, "publish", "rpc", ep, "-c", "--name", "ping", "--timeout", "15000",
	                 "--raw", NULL);
	tool_input_text(req, "b\n");
	cr_assert_eq(tool_wait(req, WAIT_MS), 0, "stderr: %s", req->err);
	cr_assert_str_eq(req->out, "\x1b[2Jgone\n");
	cr_assert_eq(tool_wait(rsp, WAIT_MS), 0, "stderr: %s", rsp->err);
}

/* §54: a request nobody answers times out: exit 3. */
Test(broker_cli, rpc_request_without_an_answer_exits_3)
{
	/* A libzmq ROUTER takes the request and never answers. The timeout
	 * covers the connect and the handshake too, and the request must go
	 * out within it: generous, for a loaded machine. */
	const char *ep = peer_start("ROUTER", "bind", "tcp://127.0.0.1:*", "--recv", "1", NULL);
	long long t0 = now_ms();
	struct tool *req = tool_start(1, "publish", "rpc", ep, "-c", "--name", "ask", "--timeout",
	                              "2000", NULL);
	tool_input_text(req, "anyone?\n");

	cr_assert_eq(tool_wait(req, WAIT_MS), 3, "stderr: %s", req->err);
	cr_assert_geq(now_ms() - t0, 2000);
	cr_assert_eq(req->out_len, 0, "stdout: %s", req->out);
	cr_assert(strncmp(req->err, "zring: ", 7) == 0 &&
	                  count_char(req->err, req->err_len, '\n') == 1,
	          "stderr: %s", req->err);
	/* The request did go out: [routing id, name, headers, payload]. */
	int rc = zl_proc_readline(&peer, peer_line, sizeof(peer_line), WAIT_MS);
	cr_assert(rc > 0, "the ROUTER got nothing");
	cr_assert(strstr(peer_line, "\"ask\",\"correlation-id: req-") != NULL &&
	                  strstr(peer_line, "\",\"anyone?\"]") != NULL,
	          "the ROUTER got %s", peer_line);
}

Test(broker_cli, rpc_request_with_no_responder_at_all_exits_3)
{
	struct tool *req = tool_start(1, "publish", "rpc", unused_endpoint(), "-c", "--name", "ask",
	                              "--timeout", "300", NULL);
	tool_input_text(req, "anyone?\n");

	cr_assert_eq(tool_wait(req, WAIT_MS), 3, "stderr: %s", req->err);
	cr_assert(strncmp(req->err, "zring: ", 7) == 0 &&
	                  count_char(req->err, req->err_len, '\n') == 1,
	          "stderr: %s", req->err);
}

/* ---- failures: exit statuses and messages ------------------------------- */

/* §26: a --timeout shorter than the 5 s window ends a publish nobody takes. */
Test(broker_cli, queue_publish_with_no_peer_times_out_with_3)
{
	long long t0 = now_ms();
	struct tool *pub = tool_start(1, "publish", "queue", unused_endpoint(), "-c", "--name",
	                              "jobs", "--timeout", "300", NULL);
	tool_input_text(pub, "lost\n");

	cr_assert_eq(tool_wait(pub, WAIT_MS), 3, "stderr: %s", pub->err);
	long long took = now_ms() - t0;
	cr_assert(took >= 300, "gave up after %lld ms, before the 300 ms", took);
	cr_assert(strncmp(pub->err, "zring: ", 7) == 0 &&
	                  count_char(pub->err, pub->err_len, '\n') == 1,
	          "stderr: %s", pub->err);
}

/* §26: without a --timeout, the 5 s window, then "no connected peer": 2. */
Test(broker_cli, queue_publish_with_no_peer_fails_with_2_after_the_retry_window)
{
	long long t0 = now_ms();
	struct tool *pub =
		tool_start(1, "publish", "queue", unused_endpoint(), "-c", "--name", "jobs", NULL);
	tool_input_text(pub, "lost\n");

	cr_assert_eq(tool_wait(pub, WAIT_MS), 2, "stderr: %s", pub->err);
	long long took = now_ms() - t0;
	cr_assert(took >= 5000, "gave up after %lld ms, inside the 5 s window", took);
	cr_assert(strncmp(pub->err, "zring: ", 7) == 0 &&
	                  strstr(pub->err, "no connected peer") != NULL &&
	                  strstr(pub->err, "jobs") != NULL &&
	                  count_char(pub->err, pub->err_len, '\n') == 1,
	          "stderr: %s", pub->err);
}

/* §13: an inproc:// endpoint is refused when the broker starts. */
Test(broker_cli, publish_to_an_inproc_endpoint_exits_2_naming_the_address)
{
	expect_fails(2, "publish", "queue", "inproc://jobs", "-c", "--name", "jobs");
	cr_assert(strstr(tools[0].err, "inproc://jobs") != NULL, "stderr: %s", tools[0].err);
	expect_fails(2, "subscribe", "fanout", "inproc://news", "-b");
	cr_assert(strstr(tools[0].err, "inproc://news") != NULL, "stderr: %s", tools[0].err);
}

/* §18: binding an address another subscriber holds. */
Test(broker_cli, subscribing_on_an_address_in_use_exits_2_naming_it)
{
	struct tool *first = tool_start(1, "subscribe", "queue", "tcp://127.0.0.1:0", "-b", NULL);
	char ep[256];
	snprintf(ep, sizeof ep, "%s", tool_bound(first));

	expect_fails(2, "subscribe", "queue", ep, "-b");
	cr_assert(strstr(tools[0].err, ep) != NULL, "stderr: %s", tools[0].err);
}

/* §3: a header that is not UTF-8 is refused before anything is sent. */
Test(broker_cli, a_header_that_is_not_utf8_exits_1)
{
	struct tool *pub = tool_start(0, "publish", "queue", unused_endpoint(), "-c", "--name",
	                              "orders", "--header", "x-bad: \xff\xfe", NULL);
	tool_input_text(pub, "x\n");
	cr_assert_eq(tool_wait(pub, WAIT_MS), 1, "stderr: %s", pub->err);
	cr_assert(strstr(pub->err, "x-bad") != NULL && strstr(pub->err, "orders") != NULL,
	          "stderr: %s", pub->err);
}

Test(broker_cli, sigint_and_sigterm_end_a_subscriber_with_0)
{
	int sigs[2] = {SIGINT, SIGTERM};
	for (int i = 0; i < 2; i++) {
		struct tool *sub =
			tool_start(i, "subscribe", "fanout", "tcp://127.0.0.1:0", "-b", NULL);
		tool_bound(sub);
		cr_assert_eq(kill(sub->pid, sigs[i]), 0);
		cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "signal %d; stderr: %s", sigs[i],
		             sub->err);
		cr_assert_eq(sub->out_len, 0);
	}
}

/* §73: on SIGTERM the messages already accepted still reach the handler. */
Test(broker_cli, sigterm_hands_the_accepted_messages_to_the_handler_first)
{
	/* 2 s a message: the two left after the first fit the 5 s drain, and
	 * the io thread has the first message's 2 s to take the other two in. */
	struct tool *sub = tool_start(0, "subscribe", "queue", "tcp://127.0.0.1:0", "-b",
	                              "--handler-ms", "2000", NULL);
	const char *ep = tool_bound(sub);
	struct tool *pub = tool_start(1, "publish", "queue", ep, "-c", "--name", "d", NULL);
	tool_input_text(pub, "1\n2\n3\n");
	/* It exits once its socket has lingered out all three: they are on the
	 * subscriber's connection. */
	cr_assert_eq(tool_wait(pub, WAIT_MS), 0, "stderr: %s", pub->err);
	/* All three went out together: when the first line shows, 2 s after
	 * the first arrived, the other two are in the channel (SIGTERM stops
	 * the reading: what is still in the kernel then is not accepted). */
	tool_wait_lines(sub, 1, WAIT_MS);
	cr_assert_eq(kill(sub->pid, SIGTERM), 0);

	cr_assert_eq(tool_wait(sub, WAIT_MS), 0, "stderr: %s", sub->err);
	cr_assert_str_eq(sub->out, "d\t\t1\nd\t\t2\nd\t\t3\n");
}

Test(broker_cli, a_bad_command_line_exits_1_with_one_line)
{
	const char *ep = "tcp://127.0.0.1:5555";
	expect_fails(1, "subscribe");
	expect_fails(1, "subscribe", "stream", ep, "-b");              /* pattern */
	expect_fails(1, "subscribe", "queue", "-b");                   /* no endpoint */
	expect_fails(1, "subscribe", "queue", ep);                     /* no -b/-c */
	expect_fails(1, "subscribe", "queue", ep, "-b", "-c");         /* both */
	expect_fails(1, "subscribe", "queue", ep, "-b", "extra");      /* argument */
	expect_fails(1, "subscribe", "queue", ep, "-b", "-x");         /* option */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--nope");     /* option */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--by-key");   /* no workers */
	expect_fails(1, "subscribe", "rpc", ep, "-b", "--batch", "2"); /* rpc batch */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--workers", "2", "--by-key", "--batch",
	             "2");                                                     /* keyed batch */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--reply", "x");       /* not rpc */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--workers", "0");     /* value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--read-ahead", "0");  /* value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--batch", "x");       /* value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--handler-ms", "-1"); /* value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "-n", "0");            /* value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "-n");                 /* no value */
	expect_fails(1, "subscribe", "queue", ep, "-b", "--timeout", "5");     /* publish's */
	expect_fails(1, "publish", "queue", ep, "-c");                         /* no --name */
	expect_fails(1, "publish", "queue", ep, "-c", "--name", "x", "--header", "novalue");
	expect_fails(1, "publish", "queue", ep, "-c", "--name", "x", "--header", ": v");
	expect_fails(1, "publish", "queue", ep, "-c", "--name", "x", "-n", "3"); /* subscribe's */
	expect_fails(1, "publish", "queue", ep, "-c", "--name", "x", "--timeout", "soon");
	expect_fails(1, "publish", "queue", "tcp://127.0.0.1:0", "-b", "--name", "x");
	expect_fails(1, "publish", "fanout", "tcp://127.0.0.1:*", "-b", "--name", "x");
}

Test(broker_cli, help_prints_each_usage_on_stdout)
{
	struct tool *t = tool_start(0, "subscribe", "--help", NULL);
	cr_assert_eq(tool_wait(t, WAIT_MS), 0);
	cr_assert(strncmp(t->out, "usage: zring subscribe PATTERN ENDPOINT (-b|-c)", 47) == 0,
	          "stdout: %s", t->out);
	cr_assert(strstr(t->out, "--handler-ms MS") != NULL);
	cr_assert_eq(t->err_len, 0);

	t = tool_start(1, "publish", "-h", NULL);
	cr_assert_eq(tool_wait(t, WAIT_MS), 0);
	cr_assert(strncmp(t->out, "usage: zring publish PATTERN ENDPOINT (-b|-c) --name NAME",
	                  56) == 0,
	          "stdout: %s", t->out);
	cr_assert(strstr(t->out, "no connected peer") != NULL);
	cr_assert_eq(t->err_len, 0);
}
