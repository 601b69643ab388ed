/*
 * `zring cat` with CURVE and PLAIN: the built tool as child processes, with
 * keys from `zring keygen`, against each other and against libzmq 4.3 CURVE
 * peers (pyzmq, tests/tools/peers/cat_curve_peer.py), over TCP loopback.
 *
 * What is checked is what crossed the wire or the terminal: the lines a
 * server printed (and the User-Id it printed with -P), the frames libzmq
 * received, exit statuses, and the "handshake failed" lines on stderr. A
 * refused client always goes first and an admitted one after it, so a line
 * that slipped through the refusal would be printed before the admitted one.
 * Every wait is bounded (--timeout, WAIT_MS); no test measures time.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zring/error.h>
#include <zring/zmtp.h>

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/tools/peers/cat_curve_peer.py"

#include "tools/tool_peer.h"
#include "tools/tool_proc.h"

/* Per test: Criterion runs each test in its own process. */
static struct tool server, client, client2;

static void
teardown(void)
{
	tool_kill(&server);
	tool_kill(&client);
	tool_kill(&client2);
	zl_proc_stop(&peer, 2000);
}

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN); /* a tool that exited early must not kill us */
	tool_reset(&server);
	tool_reset(&client);
	tool_reset(&client2);
	cr_assert(access(ZRING, X_OK) == 0, "%s is not built", ZRING);
}

TestSuite(cat_auth, .init = setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------- */

struct pair {
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];
	char sec[ZR_CURVE_KEY_Z85_LEN + 1];
};

/* A key pair from `zring keygen`. */
static struct pair
keygen(void)
{
	struct tool t;
	struct pair k;

	tool_reset(&t);
	tool_begin(&t, "keygen", NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 0, "keygen: %s", t.err);
	cr_assert(sscanf(t.out, "public: %40s\nsecret: %40s\n", k.pub, k.sec) == 2, "keygen: %s",
	          t.out);
	return k;
}

/* "NAME=VALUE" in static storage, one of several slots. */
static const char *
opt(const char *name, const char *value)
{
	static char slots[16][128];
	static int next;
	char *s = slots[next++ % 16];

	snprintf(s, sizeof slots[0], "%s=%s", name, value);
	return s;
}

/* The endpoint a binding tool reported ("zring cat: bound to EP"). */
static const char *
bound_endpoint(struct tool *t)
{
	static char ep[256];

	return tool_stderr_after(t, "zring cat: bound to ", ep, sizeof ep, WAIT_MS);
}

static bool
has(const char *text, const char *part)
{
	return strstr(text, part) != NULL;
}

/* Runs `zring cat ARGS` and expects a usage error: exit 1, nothing on
 * stdout, exactly one line on stderr. */
#define expect_usage(...)                                                                    \
	do {                                                                                 \
		tool_begin(&client, "cat", __VA_ARGS__, NULL);                               \
		int rc_ = tool_wait(&client, WAIT_MS);                                       \
		cr_expect_eq(rc_, 1, "%s: exit %d, want 1; stderr: %s", #__VA_ARGS__, rc_,   \
		             client.err);                                                    \
		cr_expect_eq(client.out_len, 0, "%s: wrote to stdout", #__VA_ARGS__);        \
		cr_expect(strncmp(client.err, "zring cat: ", 11) == 0 &&                     \
		                  tool_count_char(client.err, client.err_len, '\n') == 1,    \
		          "%s: want one line on stderr, got: %s", #__VA_ARGS__, client.err); \
	} while (0)

/* ---- CURVE between two zring cats ----------------------------------------- */

Test(cat_auth, curve_round_trip_between_two_zring_cats_with_keygen_keys)
{
	struct pair s = keygen(), c = keygen();

	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "2", "-o",
	           "CURVE_SERVER=1", "-o", opt("CURVE_SECRETKEY", s.sec), "--timeout", "15000",
	           NULL);
	const char *ep = bound_endpoint(&server);
	tool_begin(&client, "cat", "-w", "-c", "PUSH", ep, "-o", opt("CURVE_SERVERKEY", s.pub),
	           "-o", opt("CURVE_PUBLICKEY", c.pub), "-o", opt("CURVE_SECRETKEY", c.sec),
	           "--timeout", "15000", NULL);
	tool_input(&client, "sealed\nsecond line\n", 19);

	cr_assert_eq(tool_wait(&client, WAIT_MS), 0, "client stderr: %s", client.err);
	cr_assert_eq(tool_wait(&server, WAIT_MS), 0, "server stderr: %s", server.err);
	cr_assert_str_eq(server.out, "sealed\nsecond line\n");
	cr_assert(!has(server.err, "handshake failed") && client.err_len == 0,
	          "server: %s client: %s", server.err, client.err);
}

Test(cat_auth, curve_req_rep_between_two_zring_cats)
{
	struct pair s = keygen(), c = keygen();

	tool_begin(&server, "cat", "-r", "-b", "REP", "tcp://127.0.0.1:*", "-n", "1", "--reply",
	           "pong", "-o", opt("CURVE_SECRETKEY", s.sec), "-o", "ZMQ_CURVE_SERVER=1", NULL);
	const char *ep = bound_endpoint(&server);
	tool_begin(&client, "cat", "-w", "-c", "REQ", ep, "-o", opt("curve_serverkey", s.pub), "-o",
	           opt("curve_publickey", c.pub), "-o", opt("curve_secretkey", c.sec), "--timeout",
	           "15000", NULL);
	tool_input(&client, "ping\n", 5);

	cr_assert_eq(tool_wait(&client, WAIT_MS), 0, "client stderr: %s", client.err);
	cr_assert_eq(tool_wait(&server, WAIT_MS), 0, "server stderr: %s", server.err);
	cr_assert_str_eq(client.out, "pong\n");
	cr_assert_str_eq(server.out, "ping\n");
}

/* ---- CURVE against libzmq ------------------------------------------------- */

Test(cat_auth, curve_client_delivers_to_a_pyzmq_curve_server)
{
	struct pair s = keygen(), c = keygen();
	const char *ep = peer_start("PULL", "bind", "tcp://127.0.0.1:*", "--server", s.sec,
	                            "--recv", "2", NULL);

	tool_begin(&client, "cat", "-w", "-c", "PUSH", ep, "-o", opt("CURVE_SERVERKEY", s.pub),
	           "-o", opt("CURVE_PUBLICKEY", c.pub), "-o", opt("CURVE_SECRETKEY", c.sec), "-F",
	           ",", "--timeout", "15000", NULL);
	tool_input(&client, "to,libzmq\nsecond\n", 17);

	cr_assert_eq(tool_wait(&client, WAIT_MS), 0, "stderr: %s", client.err);
	peer_expect("MSG [\"to\",\"libzmq\"]");
	peer_expect("MSG [\"second\"]");
	peer_expect("DONE");
}

Test(cat_auth, curve_server_admits_a_listed_pyzmq_client_and_names_its_key)
{
	struct pair s = keygen(), c = keygen();

	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-o",
	           "CURVE_SERVER=1", "-o", opt("CURVE_SECRETKEY", s.sec), "--allow-curve", c.pub,
	           "-P", "User-Id", "--timeout", "15000", NULL);
	const char *ep = bound_endpoint(&server);
	peer_start("PUSH", "connect", ep, "--client", c.pub, c.sec, s.pub, "--send",
	           "[\"from\",\"libzmq\"]", NULL);

	cr_assert_eq(tool_wait(&server, WAIT_MS), 0, "stderr: %s", server.err);
	char want[128];
	snprintf(want, sizeof want, "%s\tfrom\tlibzmq\n", c.pub);
	cr_assert_str_eq(server.out, want);
	peer_expect("DONE");
}

Test(cat_auth, curve_server_refuses_an_unlisted_pyzmq_client_with_status_400)
{
	struct pair s = keygen(), c = keygen();

	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "CURVE_SERVER=1",
	           "-o", opt("CURVE_SECRETKEY", s.sec), "--allow-curve", s.pub, "--timeout",
	           "15000", NULL);
	const char *ep = bound_endpoint(&server);
	peer_start("PUSH", "connect", ep, "--client", c.pub, c.sec, s.pub, "--send", "[\"x\"]",
	           "--failed", NULL);

	/* libzmq sees the ERROR "400" as an authentication failure. */
	peer_expect("FAILED HANDSHAKE_FAILED_AUTH 400");
	char want[128];
	snprintf(want, sizeof want, "client key %s is not allowed\n", c.pub);
	char reason[512];
	tool_stderr_after(&server, "zring cat: handshake failed: ", reason, sizeof reason, WAIT_MS);
	cr_assert(has(server.err, want), "stderr: %s", server.err);
	cr_assert_eq(server.out_len, 0, "delivered: %s", server.out);
}

/* ---- --allow-curve and --allow-plain between zring cats ------------------- */

Test(cat_auth, allow_curve_admits_the_listed_key_and_refuses_another)
{
	struct pair s = keygen(), good = keygen(), bad = keygen();

	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-o",
	           "CURVE_SERVER=1", "-o", opt("CURVE_SECRETKEY", s.sec), "--allow-curve", good.pub,
	           "-P", "User-Id", "--timeout", "15000", NULL);
	const char *ep = bound_endpoint(&server);

	/* The refused client gives up on its own: ERROR is final. */
	tool_begin(&client, "cat", "-w", "-c", "PUSH", ep, "-o", opt("CURVE_SERVERKEY", s.pub),
	           "-o", opt("CURVE_PUBLICKEY", bad.pub), "-o", opt("CURVE_SECRETKEY", bad.sec),
	           NULL);
	tool_input(&client, "must not arrive\n", 16);
	cr_assert_eq(tool_wait(&client, WAIT_MS), 2, "stderr: %s", client.err);
	cr_assert(has(client.err, "zring cat: handshake failed: ") &&
	                  has(client.err, "refused us: status 400\n") &&
	                  has(client.err, "zring cat: giving up: refused by the endpoint\n"),
	          "stderr: %s", client.err);
	cr_assert_eq(client.out_len, 0);

	tool_begin(&client2, "cat", "-w", "-c", "PUSH", ep, "-o", opt("CURVE_SERVERKEY", s.pub),
	           "-o", opt("CURVE_PUBLICKEY", good.pub), "-o", opt("CURVE_SECRETKEY", good.sec),
	           "--timeout", "15000", NULL);
	tool_input(&client2, "admitted\n", 9);
	cr_assert_eq(tool_wait(&client2, WAIT_MS), 0, "stderr: %s", client2.err);

	cr_assert_eq(tool_wait(&server, WAIT_MS), 0, "stderr: %s", server.err);
	char want[128];
	snprintf(want, sizeof want, "%s\tadmitted\n", good.pub);
	cr_assert_str_eq(server.out, want);
	snprintf(want, sizeof want,
	         "refused by the authenticator (400): client key %s is not "
	         "allowed\n",
	         bad.pub);
	cr_assert(has(server.err, want), "stderr: %s", server.err);
}

Test(cat_auth, allow_plain_admits_the_listed_user_and_refuses_a_wrong_password)
{
	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-n", "1", "-o",
	           "PLAIN_SERVER=1", "--allow-plain", "bob:other", "--allow-plain",
	           "alice:s3cret:with:colons", "-P", "User-Id", "--timeout", "15000", NULL);
	const char *ep = bound_endpoint(&server);

	tool_begin(&client, "cat", "-w", "-c", "PUSH", ep, "-o", "PLAIN_USERNAME=alice", "-o",
	           "PLAIN_PASSWORD=s3cret", NULL);
	tool_input(&client, "must not arrive\n", 16);
	cr_assert_eq(tool_wait(&client, WAIT_MS), 2, "stderr: %s", client.err);
	cr_assert(has(client.err, "zring cat: handshake failed: ") &&
	                  has(client.err, "refused us: status 400\n"),
	          "stderr: %s", client.err);

	tool_begin(&client2, "cat", "-w", "-c", "PUSH", ep, "-o", "PLAIN_USERNAME=alice", "-o",
	           "PLAIN_PASSWORD=s3cret:with:colons", "--timeout", "15000", NULL);
	tool_input(&client2, "admitted\n", 9);
	cr_assert_eq(tool_wait(&client2, WAIT_MS), 0, "stderr: %s", client2.err);

	cr_assert_eq(tool_wait(&server, WAIT_MS), 0, "stderr: %s", server.err);
	cr_assert_str_eq(server.out, "alice\tadmitted\n");
	cr_assert(has(server.err, "refused by the authenticator (400): wrong username or "
	                          "password\n"),
	          "stderr: %s", server.err);
	/* The server never repeats a password. */
	cr_assert(!has(server.err, "s3cret"), "stderr: %s", server.err);
}

/* ---- a wrong server key --------------------------------------------------- */

Test(cat_auth, wrong_server_key_against_a_zring_server_is_reported_and_final)
{
	struct pair s = keygen(), other = keygen(), c = keygen();

	tool_begin(&server, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "CURVE_SERVER=1",
	           "-o", opt("CURVE_SECRETKEY", s.sec), "--timeout", "15000", NULL);
	const char *ep = bound_endpoint(&server);
	tool_begin(&client, "cat", "-w", "-c", "PUSH", ep, "-o", opt("CURVE_SERVERKEY", other.pub),
	           "-o", opt("CURVE_PUBLICKEY", c.pub), "-o", opt("CURVE_SECRETKEY", c.sec), NULL);
	tool_input(&client, "x\n", 2);

	cr_assert_eq(tool_wait(&client, WAIT_MS), 2, "stderr: %s", client.err);
	/* The server's ERROR names the check (RFC 23 reasons are VCHARs: no
	 * spaces, so the words come dash-joined). */
	cr_assert(has(client.err, "zring cat: handshake failed: ") &&
	                  (has(client.err, "wrong server key") ||
	                   has(client.err, "wrong-server-key")) &&
	                  has(client.err, "zring cat: giving up: refused by the endpoint\n"),
	          "stderr: %s", client.err);
	cr_assert_eq(client.out_len, 0);
	cr_assert_eq(server.out_len, 0);
}

Test(cat_auth, wrong_server_key_against_a_pyzmq_server_is_reported_not_a_silent_wait)
{
	/* libzmq hangs up on a HELLO it cannot open, without ERROR: the client
	 * says so and keeps trying until --timeout (generous: the first
	 * handshake, the tool's start-up included, must fail within it). */
	struct pair s = keygen(), other = keygen(), c = keygen();
	const char *ep = peer_start("PUSH", "bind", "tcp://127.0.0.1:*", "--server", s.sec,
	                            "--failed", NULL);

	tool_begin(&client, "cat", "-r", "-c", "PULL", ep, "-o", opt("CURVE_SERVERKEY", other.pub),
	           "-o", opt("CURVE_PUBLICKEY", c.pub), "-o", opt("CURVE_SECRETKEY", c.sec),
	           "--timeout", "8000", NULL);
	char reason[512];
	tool_stderr_after(&client, "zring cat: handshake failed: ", reason, sizeof reason, WAIT_MS);
	cr_assert(has(reason, ep), "reason names no peer: %s", reason);
	cr_assert_eq(tool_wait(&client, WAIT_MS), 3, "stderr: %s", client.err);
	cr_assert_eq(client.out_len, 0);
	/* Said once, not once per redial. */
	cr_assert_eq(tool_count_char(client.err, client.err_len, '\n'), 2, "stderr: %s",
	             client.err);
	/* libzmq's side of it: its box did not open either. */
	int rc = zl_proc_readline(&peer, peer_line, sizeof(peer_line), WAIT_MS);
	cr_assert(rc >= 0 && strncmp(peer_line, "FAILED HANDSHAKE_FAILED_PROTOCOL ", 33) == 0,
	          "pyzmq peer: %s", rc >= 0 ? peer_line : strerror(-rc));
}

Test(cat_auth, a_null_client_of_a_pyzmq_curve_server_is_told_the_mechanisms_differ)
{
	struct pair s = keygen();
	const char *ep = peer_start("PUSH", "bind", "tcp://127.0.0.1:*", "--server", s.sec,
	                            "--failed", NULL);

	/* Generous: the first handshake must fail within the timeout. */
	tool_begin(&client, "cat", "-r", "-c", "PULL", ep, "--timeout", "8000", NULL);
	char reason[512];
	tool_stderr_after(&client, "zring cat: handshake failed: ", reason, sizeof reason, WAIT_MS);
	cr_assert(has(reason, "mechanism"), "reason: %s", reason);
	cr_assert_eq(tool_wait(&client, WAIT_MS), 3, "stderr: %s", client.err);
	cr_assert_eq(client.out_len, 0);
}

/* ---- usage errors ---------------------------------------------------------- */

Test(cat_auth, keys_that_are_not_z85_are_usage_errors_that_never_echo_the_key)
{
	struct pair k = keygen();
	char short_key[40], bad_key[41];

	snprintf(short_key, sizeof short_key, "%.39s", k.sec);
	snprintf(bad_key, sizeof bad_key, "%s", k.sec);
	bad_key[7] = '"'; /* not in the Z85 alphabet */

	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CURVE_SERVER=1", "-o",
	             opt("CURVE_SECRETKEY", short_key));
	cr_assert(has(client.err, "CURVE_SECRETKEY wants a key of 40 Z85 characters") &&
	                  !has(client.err, short_key),
	          "stderr: %s", client.err);
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CURVE_SERVER=1", "-o",
	             opt("CURVE_SECRETKEY", bad_key));
	cr_assert(has(client.err, "CURVE_SECRETKEY: not a key") && !has(client.err, bad_key),
	          "stderr: %s", client.err);
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-o",
	             opt("CURVE_SERVERKEY", "abc"));
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CURVE_SERVER=1", "-o",
	             opt("CURVE_SECRETKEY", k.sec), "--allow-curve", bad_key);
	cr_assert(has(client.err, "--allow-curve: not a key"), "stderr: %s", client.err);
}

Test(cat_auth, allow_options_without_the_matching_server_are_usage_errors)
{
	struct pair k = keygen();

	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--allow-curve", k.pub);
	cr_assert(has(client.err, "--allow-curve is for a CURVE server"), "stderr: %s", client.err);
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "PLAIN_SERVER=1",
	             "--allow-curve", k.pub);
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "--allow-plain", "u:p");
	cr_assert(has(client.err, "--allow-plain is for a PLAIN server"), "stderr: %s", client.err);
	/* The last mechanism option decides, as in libzmq: PLAIN_SERVER=0 undoes it. */
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "PLAIN_SERVER=1", "-o",
	             "PLAIN_SERVER=0", "--allow-plain", "u:p");
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CURVE_SERVER=1", "-o",
	             opt("CURVE_SECRETKEY", k.sec), "--allow-plain", "u:p");
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "PLAIN_SERVER=1",
	             "--allow-plain", "no-colon");
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "PLAIN_SERVER=1",
	             "--allow-plain", ":empty-user");
}

Test(cat_auth, incomplete_or_mismatched_curve_keys_are_usage_errors)
{
	struct pair s = keygen(), c = keygen();

	/* A server without its secret key. */
	expect_usage("-r", "-b", "PULL", "tcp://127.0.0.1:5555", "-o", "CURVE_SERVER=1");
	cr_assert(has(client.err, "CURVE_SECRETKEY"), "stderr: %s", client.err);
	/* A client without its own key pair. */
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-o",
	             opt("CURVE_SERVERKEY", s.pub));
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-o",
	             opt("CURVE_SERVERKEY", s.pub), "-o", opt("CURVE_SECRETKEY", c.sec));
	cr_assert(has(client.err, "CURVE_PUBLICKEY"), "stderr: %s", client.err);
	/* Keys but no role. */
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-o",
	             opt("CURVE_PUBLICKEY", c.pub), "-o", opt("CURVE_SECRETKEY", c.sec));
	/* A public key that is not the secret key's. */
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-o",
	             opt("CURVE_SERVERKEY", s.pub), "-o", opt("CURVE_PUBLICKEY", s.pub), "-o",
	             opt("CURVE_SECRETKEY", c.sec));
	cr_assert(has(client.err, "is not the public key of"), "stderr: %s", client.err);
	/* -P reads received messages. */
	expect_usage("-w", "-c", "PUSH", "tcp://127.0.0.1:5555", "-P", "User-Id");
}

Test(cat_auth, help_describes_the_security_options)
{
	tool_begin(&client, "cat", "--help", NULL);
	cr_assert_eq(tool_wait(&client, WAIT_MS), 0);
	cr_assert(has(client.out, "--allow-curve KEY") &&
	                  has(client.out, "--allow-plain USER:PASS") &&
	                  has(client.out, "CURVE_SERVERKEY") && has(client.out, "zring keygen") &&
	                  has(client.out, "handshake failed"),
	          "stdout: %s", client.out);
}
