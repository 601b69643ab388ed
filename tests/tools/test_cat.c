/*
 * `zring cat` end to end: the built tool as a subprocess against libzmq 4.3
 * peers (pyzmq, tests/tools/peers/cat_peer.py), over TCP loopback.
 *
 * Every assertion is about what crossed the wire or the terminal: the exact
 * bytes the tool printed, the exact frames libzmq received, exit statuses and
 * the one-line messages on stderr. Every wait is bounded; the tool and the
 * peer are killed at the end of each test (and by PR_SET_PDEATHSIG if the
 * test process dies first).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zring/error.h>

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/tools/peers/cat_peer.py"

/* ---- the tool as a subprocess ------------------------------------------- */

#include "tools/tool_peer.h"
#include "tools/tool_proc.h"

/* Per test: Criterion runs each test in its own process. */
static struct tool tool;

#define now_ms tool_now_ms
#define count_char tool_count_char

static void
teardown(void)
{
	tool_peer_fini(&tool);
}

static void
setup(void)
{
	tool_peer_init(&tool);
}

TestSuite(cat, .init = setup, .fini = teardown, .timeout = 120);

/* Starts `zring cat ARGS...` (NULL-terminated). */
static void
tool_start(const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	tool_vbegin(&tool, "cat", arg, ap);
	va_end(ap);
}

/* The endpoint the tool reported binding to ("zring cat: bound to EP"). */
static const char *
tool_bound_endpoint(void)
{
	static char ep[256];

	return tool_stderr_after(&tool, "zring cat: bound to ", ep, sizeof ep, WAIT_MS);
}

/* Runs `zring cat ARGS` on no input and expects a usage-type failure: the
 * status, nothing on stdout, exactly one line on stderr. */
#define expect_fails(status, ...)                                                                 \
	do {                                                                                      \
		tool_start(__VA_ARGS__, NULL);                                                    \
		int rc_ = tool_wait(&tool, WAIT_MS);                                              \
		cr_expect_eq(rc_, (status), "zring cat %s: exit %d, want %d; stderr: %s",         \
		             #__VA_ARGS__, rc_, (status), tool.err);                              \
		cr_expect_eq(tool.out_len, 0, "%s: wrote to stdout: %s", #__VA_ARGS__, tool.out); \
		cr_expect(strncmp(tool.err, "zring cat: ", 11) == 0 &&                            \
		                  count_char(tool.err, tool.err_len, '\n') == 1 &&                \
		                  tool.err[tool.err_len - 1] == '\n',                             \
		          "%s: want one line on stderr, got: %s", #__VA_ARGS__, tool.err);        \
	} while (0)

/* ---- the pyzmq peer ----------------------------------------------------- */

/* ---- -r: receiving ------------------------------------------------------ */

Test(cat, pull_prints_each_message_from_a_pyzmq_push_and_stops_after_n)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "3", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"hello\"]", "--send", "[\"two words\"]",
	           "--send", "[\"\"]", "--send", "[\"not printed\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "hello\ntwo words\n\n");
}

Test(cat, pull_joins_frames_with_the_f_separator)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "4", "-F", "|", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"a\",\"b\",\"c\"]", "--send", "[\"\",\"x\"]",
	           "--send", "[\"solo\"]", "--send", "[\"\",\"\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "a|b|c\n|x\nsolo\n|\n");
}

Test(cat, pull_joins_frames_with_a_tab_by_default)
{
	tool_start("-rb", "PULL", "tcp://127.0.0.1:*", "-n1", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"key\",\"value\",\"more\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "key\tvalue\tmore\n");
}

Test(cat, dash_zero_ends_each_printed_message_with_nul)
{
	tool_start("-r", "-0", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "2", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"x\\ny\"]", "--send", "[\"z\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_eq(tool.out_len, 6);
	cr_assert(memcmp(tool.out, "x\ny\0z\0", 6) == 0);
}

Test(cat, connecting_pull_receives_from_a_bound_pyzmq_push)
{
	const char *ep = peer_start("PUSH", "bind", "tcp://127.0.0.1:*", "--send", "[\"m1\"]",
	                            "--send", "[\"m2\"]", NULL);
	tool_start("-r", "-c", "PULL", ep, "-n", "2", "--timeout", "15000", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "m1\nm2\n");
}

/* ---- -w: sending -------------------------------------------------------- */

Test(cat, push_sends_each_line_of_stdin_as_one_message)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--recv", "4", NULL);
	/* The option names also go in libzmq's spelling and in any case. */
	tool_start("-w", "-c", "PUSH", ep, "-o", "zmq_sndhwm=10", "-o", "Linger=-1", NULL);
	static const char input[] = "one\na,b stays whole\n\nlast without newline";
	tool_input(&tool, input, sizeof(input) - 1);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"one\"]");
	peer_expect("MSG [\"a,b stays whole\"]");
	peer_expect("MSG [\"\"]");
	peer_expect("MSG [\"last without newline\"]");
	peer_expect("DONE");
	cr_assert_eq(tool.out_len, 0);
}

Test(cat, push_splits_lines_into_frames_at_the_f_separator)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--recv", "3", NULL);
	tool_start("-w", "-c", "PUSH", ep, "-F", ",", NULL);
	static const char input[] = "a,b,c\n,x,\nplain\n";
	tool_input(&tool, input, sizeof(input) - 1);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"a\",\"b\",\"c\"]");
	peer_expect("MSG [\"\",\"x\",\"\"]");
	peer_expect("MSG [\"plain\"]");
	peer_expect("DONE");
}

Test(cat, push_stops_after_n_lines)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--recv", "2", NULL);
	tool_start("-w", "-c", "PUSH", ep, "-n", "2", NULL);
	static const char input[] = "first\nsecond\nthird\n";
	tool_input(&tool, input, sizeof(input) - 1);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"first\"]");
	peer_expect("MSG [\"second\"]");
	peer_expect("DONE");
}

Test(cat, dash_zero_reads_nul_terminated_messages_from_stdin)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--recv", "3", NULL);
	tool_start("-w", "-0", "-c", "PUSH", ep, "-F", "\\t", NULL);
	static const char input[] = "one\ntwo\0k\tv\0\0";
	tool_input(&tool, input, sizeof(input) - 1);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"one\\ntwo\"]");
	peer_expect("MSG [\"k\",\"v\"]");
	peer_expect("MSG [\"\"]");
	peer_expect("DONE");
}

Test(cat, binding_push_delivers_to_a_pyzmq_pull_that_connects_later)
{
	tool_start("-w", "-b", "PUSH", "tcp://127.0.0.1:*", "--timeout", "15000", NULL);
	const char *ep = tool_bound_endpoint();
	tool_input(&tool, "early\n", 6); /* waits in the send until a peer is there */
	usleep(200 * 1000);
	peer_start("PULL", "connect", ep, "--recv", "1", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"early\"]");
	peer_expect("DONE");
}

/* ---- request-reply ------------------------------------------------------ */

Test(cat, req_sends_each_line_as_a_request_and_prints_the_reply)
{
	const char *ep = peer_start("REP", "bind", "tcp://127.0.0.1:*", "--serve", "2", NULL);
	tool_start("-w", "-c", "REQ", ep, "-F", "|", "--timeout", "15000", NULL);
	static const char input[] = "a\nb|c\n";
	tool_input(&tool, input, sizeof(input) - 1);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "RE:a\nRE:b|c\n");
	peer_expect("MSG [\"a\"]");
	peer_expect("MSG [\"b\",\"c\"]");
	peer_expect("DONE");
}

Test(cat, rep_prints_each_request_and_answers_with_the_reply_text)
{
	tool_start("-r", "-b", "REP", "tcp://127.0.0.1:*", "-n", "2", "--reply", "pong", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("REQ", "connect", ep, "--request", "[\"one\"]", "--request",
	           "[\"two\",\"three\"]", NULL);

	peer_expect("MSG [\"pong\"]");
	peer_expect("MSG [\"pong\"]");
	peer_expect("DONE");
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "one\ntwo\tthree\n");
}

Test(cat, rep_reply_text_is_split_into_frames_with_f)
{
	tool_start("-r", "-b", "REP", "tcp://127.0.0.1:*", "-n", "1", "-F", ",", "--reply",
	           "ok,,done", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("REQ", "connect", ep, "--request", "[\"q\"]", NULL);

	peer_expect("MSG [\"ok\",\"\",\"done\"]");
	peer_expect("DONE");
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "q\n");
}

Test(cat, rep_echoes_each_request_without_reply)
{
	tool_start("-r", "-b", "REP", "tcp://127.0.0.1:*", "-n", "1", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("REQ", "connect", ep, "--request", "[\"ping\",\"\",\"x\"]", NULL);

	peer_expect("MSG [\"ping\",\"\",\"x\"]");
	peer_expect("DONE");
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "ping\t\tx\n");
}

/* ---- peer data on the terminal (issue 12) -------------------------------- */

/* ESC sequences, C1 (U+009B, a CSI on some terminals), DEL, an octet that is
 * not UTF-8, a tab inside a frame and a backslash; "é" is printable. */
#define EVIL_FRAMES \
	"[\"a\\u001b[0mb\",\"\\u00ff\\u00c2\\u009b\\u007f\",\"t\\tb\\\\\\u00c3\\u00a9\"]"

Test(cat, received_control_characters_are_escaped_by_default)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", EVIL_FRAMES, NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "a\\x1b[0mb\t\\xff\\xc2\\x9b\\x7f\tt\\tb\\\\\xc3\xa9\n");
	cr_assert_null(memchr(tool.out, 0x1b, tool.out_len), "an ESC reached stdout");
}

Test(cat, raw_and_nul_delimited_output_keep_the_octets)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "--raw", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", EVIL_FRAMES, NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "a\x1b[0mb\t\xff\xc2\x9b\x7f\tt\tb\\\xc3\xa9\n");
	teardown();
	setup();

	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-0", NULL);
	ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", EVIL_FRAMES, NULL);
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	static const char want[] = "a\x1b[0mb\t\xff\xc2\x9b\x7f\tt\tb\\\xc3\xa9"; /* and a NUL */
	cr_assert_eq(tool.out_len, sizeof want);
	cr_assert(memcmp(tool.out, want, sizeof want) == 0, "stdout: %s", tool.out);
}

Test(cat, conns_max_is_an_option_by_name)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-o", "CONNS_MAX=1", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"in\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "in\n");
	teardown();
	setup();
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CONNS_MAX=x");
}

/* ---- options, routing, transports -------------------------------------- */

Test(cat, dealer_announces_the_routing_id_set_with_o)
{
	const char *ep = peer_start("ROUTER", "bind", "tcp://127.0.0.1:*", "--recv", "1", NULL);
	tool_start("-w", "-c", "DEALER", ep, "-o", "ZMQ_ROUTING_ID=cat-1", NULL);
	tool_input(&tool, "hello\n", 6);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"cat-1\",\"hello\"]");
	peer_expect("DONE");
}

Test(cat, router_prints_the_routing_id_of_the_sender_as_frame_0)
{
	tool_start("-r", "-b", "ROUTER", "tcp://127.0.0.1:*", "-n", "1", "-F", "|", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("DEALER", "connect", ep, "--routing-id", "d1", "--send", "[\"hi\",\"there\"]",
	           NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "d1|hi|there\n");
}

Test(cat, plain_credentials_set_with_o_pass_a_libzmq_zap_check)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--plain-server",
	                            "admin:secret", "--recv", "1", NULL);
	tool_start("-w", "-c", "PUSH", ep, "-o", "plain_username=admin", "-o",
	           "PLAIN_PASSWORD=secret", "--timeout", "15000", NULL);
	tool_input(&tool, "authenticated\n", 14);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	peer_expect("MSG [\"authenticated\"]");
	peer_expect("DONE");
}

Test(cat, dash_p_prints_message_properties_before_the_frames)
{
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-F", "|", "-P",
	           "Socket-Type", "--property", "X-Not-There", "-P", "peer-address", NULL);
	const char *ep = tool_bound_endpoint();
	peer_start("PUSH", "connect", ep, "--send", "[\"a\",\"b\"]", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	/* "PUSH||tcp://127.0.0.1:PORT|a|b": a missing property is an empty field. */
	cr_assert(strncmp(tool.out, "PUSH||tcp://127.0.0.1:", 22) == 0, "stdout: %s", tool.out);
	size_t n = strlen(tool.out);
	cr_assert(n > 5 && strcmp(tool.out + n - 5, "|a|b\n") == 0, "stdout: %s", tool.out);
}

Test(cat, pull_binds_and_receives_over_ipc)
{
	char ep[128];
	snprintf(ep, sizeof(ep), "ipc:///tmp/zring-cat-test-%d.sock", (int)getpid());
	unlink(ep + 6);
	tool_start("-r", "-b", "PULL", ep, "-n", "2", NULL);
	/* libzmq retries an ipc connect until the path exists: no race. */
	peer_start("PUSH", "connect", ep, "--send", "[\"over\"]", "--send", "[\"ipc\"]", NULL);

	int rc = tool_wait(&tool, WAIT_MS);
	unlink(ep + 6);
	cr_assert_eq(rc, 0, "stderr: %s", tool.err);
	cr_assert_str_eq(tool.out, "over\nipc\n");
}

/* ---- publish-subscribe -------------------------------------------------- */

Test(cat, sub_prints_only_the_subscribed_prefixes_of_a_pyzmq_pub)
{
	/* The PUB repeats its round every 20 ms: whatever went out before our
	 * subscriptions arrived is lost (slow joiner), the rest must be exact. */
	const char *ep =
		peer_start("PUB", "bind", "tcp://127.0.0.1:*", "--publish", "[\"apple {i}\"]",
	                   "--publish", "[\"banana {i}\"]", "--publish", "[\"cherry {i}\"]",
	                   "--publish", "[\"chat {i}\"]", "--publish", "[\"\"]", NULL);
	tool_start("-r", "-c", "SUB", ep, "-s", "apple", "-s", "che", "-n", "10", "--timeout",
	           "15000", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	int apples = 0, cherries = 0;
	char *save = NULL;
	for (char *l = strtok_r(tool.out, "\n", &save); l != NULL;
	     l = strtok_r(NULL, "\n", &save)) {
		int n = 0, end = 0;
		if (sscanf(l, "apple %d%n", &n, &end) == 1 && l[end] == '\0')
			apples++;
		else if (sscanf(l, "cherry %d%n", &n, &end) == 1 && l[end] == '\0')
			cherries++;
		else
			cr_assert_fail("line '%s' does not match a subscription", l);
	}
	cr_assert_eq(apples + cherries, 10);
	cr_assert(apples >= 3 && cherries >= 3, "apples %d, cherries %d", apples, cherries);
}

Test(cat, sub_without_s_receives_every_message)
{
	const char *ep = peer_start("PUB", "bind", "tcp://127.0.0.1:*", "--publish",
	                            "[\"t\",\"{i}\"]", "--publish", "[\"\"]", NULL);
	tool_start("-r", "-c", "SUB", ep, "-n", "6", "--timeout", "15000", "-F", " ", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	int topics = 0, empties = 0;
	char *l = tool.out;
	for (int k = 0; k < 6; k++) {
		char *nl = strchr(l, '\n');
		cr_assert(nl != NULL, "only %d lines: %s", k, tool.out);
		*nl = '\0';
		int n = 0, end = 0;
		if (*l == '\0')
			empties++;
		else if (sscanf(l, "t %d%n", &n, &end) == 1 && l[end] == '\0')
			topics++;
		else
			cr_assert_fail("unexpected line '%s'", l);
		l = nl + 1;
	}
	cr_assert(topics >= 2 && empties >= 2, "topics %d, empty %d", topics, empties);
}

/* ---- failures: exit statuses and messages ------------------------------- */

Test(cat, receive_timeout_exits_3)
{
	long long t0 = now_ms();
	tool_start("-r", "-b", "PULL", "tcp://127.0.0.1:*", "--timeout", "200", NULL);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 3, "stderr: %s", tool.err);
	long long took = now_ms() - t0;
	cr_assert(took >= 200, "gave up after %lld ms, before the 200 ms", took);
	cr_assert(strstr(tool.err, "zring cat: timed out after 200 ms waiting to receive\n") !=
	                  NULL,
	          "stderr: %s", tool.err);
}

Test(cat, send_timeout_exits_3)
{
	/* Nobody listens on port 1: with room for one message the second send
	 * waits, the timeout ends it, and the capped LINGER lets the tool go. */
	long long t0 = now_ms();
	tool_start("-w", "-c", "PUSH", "tcp://127.0.0.1:1", "-o", "SNDHWM=1", "--timeout", "300",
	           NULL);
	tool_input(&tool, "a\nb\nc\nd\n", 8);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 3, "stderr: %s", tool.err);
	cr_assert(now_ms() - t0 < 10000);
	cr_assert(strstr(tool.err, "zring cat: timed out after 300 ms waiting to send") != NULL,
	          "stderr: %s", tool.err);
}

Test(cat, timeout_caps_the_linger_after_stdin_ends)
{
	/* A connecting PUSH queues for the peer it is still trying to reach (as
	 * libzmq does); LINGER -1 would wait for ever, --timeout bounds it. */
	long long t0 = now_ms();
	tool_start("-w", "-c", "PUSH", "tcp://127.0.0.1:1", "--timeout", "300", NULL);
	tool_input(&tool, "x\n", 2);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0, "stderr: %s", tool.err);
	long long took = now_ms() - t0;
	cr_assert(took >= 300 && took < 10000, "exited after %lld ms", took);
}

Test(cat, req_without_an_answer_times_out_with_3)
{
	/* The pyzmq REP takes the request and never answers. The request must
	 * reach it before the receive times out (LINGER is capped to the same
	 * timeout): generous, so the connect and handshake fit on a loaded
	 * machine. */
	const char *rep = peer_start("REP", "bind", "tcp://127.0.0.1:*", "--recv", "1", NULL);
	tool_start("-w", "-c", "REQ", rep, "--timeout", "2000", NULL);
	tool_input(&tool, "question\n", 9);

	cr_assert_eq(tool_wait(&tool, WAIT_MS), 3, "stderr: %s", tool.err);
	peer_expect("MSG [\"question\"]");
	cr_assert(strstr(tool.err, "waiting to receive") != NULL, "stderr: %s", tool.err);
}

Test(cat, unknown_transport_exits_2_naming_the_endpoint)
{
	expect_fails(2, "-r", "-b", "PULL", "foo://bar");
	char want[256];
	snprintf(want, sizeof(want), "zring cat: cannot bind to foo://bar: %s\n",
	         zr_strerror(-EPROTONOSUPPORT));
	cr_assert_str_eq(tool.err, want);
}

Test(cat, malformed_tcp_endpoint_exits_2)
{
	expect_fails(2, "-w", "-c", "PUSH", "tcp://127.0.0.1");
	char want[256];
	snprintf(want, sizeof(want), "zring cat: cannot connect to tcp://127.0.0.1: %s\n",
	         zr_strerror(-EINVAL));
	cr_assert_str_eq(tool.err, want);
}

Test(cat, binding_an_address_in_use_exits_2)
{
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--hold", "", NULL);
	char held[256];
	snprintf(held, sizeof(held), "%s", ep);

	expect_fails(2, "-r", "-b", "PULL", held);
	char want[512];
	snprintf(want, sizeof(want), "zring cat: cannot bind to %s: %s\n", held,
	         zr_strerror(-EADDRINUSE));
	cr_assert_str_eq(tool.err, want);
}

Test(cat, a_bad_command_line_exits_1_with_one_line)
{
	expect_fails(1, "-b", "PULL", "tcp://127.0.0.1:5555");                 /* no -r/-w */
	expect_fails(1, "-r", "PULL", "tcp://127.0.0.1:5555");                 /* no -b/-c */
	expect_fails(1, "-r", "-w", "-b", "PAIR", "tcp://127.0.0.1:5555");     /* both */
	expect_fails(1, "-r", "-b", "-c", "PAIR", "tcp://127.0.0.1:5555");     /* both */
	expect_fails(1, "-r", "-b", "PULL");                                   /* no endpoint */
	expect_fails(1, "-r", "-b");                                           /* no type */
	expect_fails(1, "-r", "-b", "STREAM", "tcp://127.0.0.1:5555");         /* no such type */
	expect_fails(1, "-r", "-b", "WHATEVER", "tcp://127.0.0.1:5555");       /* no such type */
	expect_fails(1, "-w", "-b", "PULL", "tcp://127.0.0.1:5555");           /* cannot send */
	expect_fails(1, "-w", "-b", "SUB", "tcp://127.0.0.1:5555");            /* cannot send */
	expect_fails(1, "-r", "-b", "PUSH", "tcp://127.0.0.1:5555");           /* cannot recv */
	expect_fails(1, "-r", "-b", "PUB", "tcp://127.0.0.1:5555");            /* cannot recv */
	expect_fails(1, "-r", "-c", "REQ", "tcp://127.0.0.1:5555");            /* sends first */
	expect_fails(1, "-w", "-c", "REP", "tcp://127.0.0.1:5555");            /* recvs first */
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-x");     /* option */
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--nope"); /* option */
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-n");     /* no value */
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-n", "0");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-n", "3x");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--timeout", "soon");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--timeout", "-5");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-F", "");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-F", "\\q");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-s", "topic");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--reply", "x");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-P", "");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--property");
}

Test(cat, unknown_socket_option_exits_1_naming_it)
{
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "NO_SUCH_OPTION=1");
	cr_assert(strstr(tool.err, "'NO_SUCH_OPTION'") != NULL, "stderr: %s", tool.err);
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "ZMQ_IDENTITY=x");
	cr_assert(strstr(tool.err, "'ZMQ_IDENTITY'") != NULL, "stderr: %s", tool.err);
}

Test(cat, socket_option_values_are_validated)
{
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "LINGER=abc");
	cr_assert(strstr(tool.err, "LINGER") != NULL && strstr(tool.err, "'abc'") != NULL,
	          "stderr: %s", tool.err);
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "zmq_sndhwm=12x");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "RCVHWM=99999999999");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "RCVHWM");
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "=5");
	/* The library refuses it: still a usage error, named. */
	expect_fails(1, "-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "ROUTING_ID=");
	cr_assert(strstr(tool.err, "ROUTING_ID") != NULL, "stderr: %s", tool.err);
}

Test(cat, help_prints_the_usage_on_stdout)
{
	tool_start("--help", NULL);
	cr_assert_eq(tool_wait(&tool, WAIT_MS), 0);
	cr_assert(strncmp(tool.out, "usage: zring cat (-r|-w) (-b|-c) TYPE ENDPOINT...", 49) == 0,
	          "stdout: %s", tool.out);
	cr_assert(strstr(tool.out, "slow joiner") != NULL);
	cr_assert(strstr(tool.out, "--timeout MS") != NULL);
	cr_assert_eq(tool.err_len, 0);
}
