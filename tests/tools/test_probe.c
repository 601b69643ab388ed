/*
 * `zring probe` (issue 15) against real peers: libzmq through pyzmq
 * (tests/tools/peers/probe_peer.py: each socket type that matters, NULL,
 * PLAIN and CURVE), zring itself (`zring cat`), and a raw-socket peer with
 * planted defects (tests/tools/peers/planted_peer.py): each defect must be
 * reported with its verdict, and the clean peer with none.
 *
 * The assertions read the probe's table ("  CASE  VERDICT  observed") and its
 * summary line; no duration is asserted (every wait is bounded by WAIT_MS or
 * PROBE_WAIT_MS). The peers' memory is measured by the probe through /proc
 * (--pid): the Python peers are never sanitized, so their bounds hold in the
 * ASan build too; `zring cat` is, and under AddressSanitizer its RSS means
 * nothing (quarantine, shadow), so it gets no --pid there.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base.h"
#include "tools/zl_proc.c"

#include "tools/tool_proc.h"

#if defined(__SANITIZE_ADDRESS__)
#define PROBE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROBE_SANITIZED 1
#endif
#endif
#ifndef PROBE_SANITIZED
#define PROBE_SANITIZED 0
#endif

#define PROBE_PEER ZR_SOURCE_DIR "/tests/tools/peers/probe_peer.py"
#define PLANTED_PEER ZR_SOURCE_DIR "/tests/tools/peers/planted_peer.py"
#define PLANTED_CURVE_CLIENT ZR_SOURCE_DIR "/tests/tools/peers/planted_curve_client.py"
/* A whole catalogue against a slow (Python) peer. */
#define PROBE_WAIT_MS 120000
/* Every case's answer limit: generous, the machine is shared and loaded
 * (the tool's default is 1000 ms). */
#define CASE_LIMIT "3000"

static struct zl_proc peer;
static struct tool probe, cat;
static char peer_ep[512];

static void
setup(void)
{
	tool_reset(&probe);
	tool_reset(&cat);
	memset(&peer, 0, sizeof(peer));
}

static void
teardown(void)
{
	tool_kill(&probe);
	tool_kill(&cat);
	if (peer.pid > 0)
		zl_proc_stop(&peer, 2000);
}

TestSuite(probe, .init = setup, .fini = teardown, .timeout = 200);

/* Stops the Python peer, so that the test can start another. */
static void
stop_peer(void)
{
	zl_proc_stop(&peer, 2000);
	memset(&peer, 0, sizeof(peer));
}

/* Starts a Python peer script with its arguments (NULL-terminated) and
 * returns the endpoint from its "READY <endpoint>" line. */
static const char *
peer_begin(const char *script, ...)
{
	char *argv[24];
	char line[512];
	int argc = 0, rc;
	va_list ap;

	argv[argc++] = (char *)ZR_PYTHON;
	argv[argc++] = (char *)script;
	va_start(ap, script);
	for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *)) {
		cr_assert(argc < 23);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;
	cr_assert(access(ZR_PYTHON, X_OK) == 0, "%s not found: install python3-zmq", ZR_PYTHON);
	rc = zl_proc_spawn(&peer, argv);
	cr_assert(rc == 0, "cannot start %s: %s", script, strerror(-rc));
	rc = zl_proc_readline(&peer, line, sizeof(line), WAIT_MS);
	cr_assert(rc >= 0, "%s said nothing: %s", script, strerror(-rc));
	cr_assert(strncmp(line, "READY ", 6) == 0, "%s: %s", script, line);
	snprintf(peer_ep, sizeof(peer_ep), "%s", line + 6);
	return peer_ep;
}

static const char *
peer_pid(void)
{
	static char s[32];
	snprintf(s, sizeof(s), "%d", (int)peer.pid);
	return s;
}

/* Reads the probe's output until it ends while discarding what `zring cat`
 * prints: a cat whose stdout nobody reads stops reading its socket
 * (backpressure), and the probe would rightly see it hang. */
static int
wait_draining_cat(void)
{
	long long end = tool_now_ms() + PROBE_WAIT_MS;
	char sink[1 << 16];

	while (tool_now_ms() < end) {
		struct pollfd p = {.fd = cat.out_fd, .events = POLLIN};
		if (cat.out_fd >= 0 && poll(&p, 1, 0) > 0 &&
		    read(cat.out_fd, sink, sizeof(sink)) <= 0)
			tool_fd_close(&cat.out_fd);
		if (!tool_pump(&probe, 10))
			break;
	}
	return tool_wait(&probe, WAIT_MS);
}

#define RUN_PROBE_BESIDE_CAT(...) \
	(tool_begin(&probe, "probe", "--limit", CASE_LIMIT, __VA_ARGS__, NULL), wait_draining_cat())

/* Runs `zring probe ARGS...` to its end; returns its exit status. */
#define RUN_PROBE(...)                                                          \
	(tool_begin(&probe, "probe", "--limit", CASE_LIMIT, __VA_ARGS__, NULL), \
	 tool_wait(&probe, PROBE_WAIT_MS))

/* The verdict of case name in the probe's table ("" if it is not there). */
static const char *
verdict(const char *name)
{
	static char v[32];
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "\n  %s ", name);
	p = strstr(probe.out, key);
	v[0] = '\0';
	if (p != NULL)
		sscanf(p + strlen(key), "%31s", v);
	return v;
}

#define expect_verdict(name, want)                                                          \
	cr_expect_str_eq(verdict(name), want, "%s: want %s; probe output:\n%s", name, want, \
	                 probe.out)

struct summary {
	unsigned pass, lenient, violations, crashes, hangs, degraded, skipped;
};

static struct summary
summary(void)
{
	struct summary s;
	const char *p = strstr(probe.out, "\nprobe: ");
	cr_assert(p != NULL, "no summary line; stdout:\n%s\nstderr:\n%s", probe.out, probe.err);
	cr_assert(sscanf(p + 1,
	                 "probe: %u pass, %u lenient, %u violations, %u crashes, %u hangs, %u "
	                 "degraded, %u skipped",
	                 &s.pass, &s.lenient, &s.violations, &s.crashes, &s.hangs, &s.degraded,
	                 &s.skipped) == 7,
	          "bad summary: %s", p);
	return s;
}

/* ---- libzmq 4.3 (pyzmq) ------------------------------------------------------- */

Test(probe, libzmq_pull_whole_catalogue)
{
	char json[] = "/tmp/zring-probe-json-XXXXXX";
	int fd = mkstemp(json);
	cr_assert(fd >= 0);
	close(fd);

	const char *ep = peer_begin(PROBE_PEER, "PULL", "tcp://127.0.0.1:*", "--handshake-ivl",
	                            "1000", NULL);
	int rc = RUN_PROBE(ep, "--pid", peer_pid(), "--peer-handshake-ivl", "1000", "--json", json);
	struct summary s = summary();

	/* At least 60 cases ran (not skipped) against a NULL peer. */
	cr_expect(s.pass + s.lenient + s.violations + s.crashes + s.hangs + s.degraded >= 60, "%s",
	          probe.out);
	cr_expect(strstr(probe.out, "peer PULL (ZMTP 3.1, answers PING)") != NULL, "%s", probe.out);
	expect_verdict("greeting.v3.1", "pass");
	expect_verdict("greeting.v3.0", "pass");
	expect_verdict("greeting.split-1", "pass");
	expect_verdict("greeting.mechanism-mismatch", "pass");
	expect_verdict("meta.incompatible-type", "pass");
	expect_verdict("meta.identity-255", "pass");
	/* libzmq takes what the RFC says to refuse: reserved flag bits, a
	 * 256-octet Identity, a command with MORE, a 17-octet PING context
	 * (it echoes 16). */
	expect_verdict("frame.reserved-0x80", "lenient");
	expect_verdict("meta.identity-256", "lenient");
	expect_verdict("frame.more-on-command", "lenient");
	expect_verdict("ping.context-17", "lenient");
	expect_verdict("frame.size-2^63", "pass");
	expect_verdict("ping.context-16", "pass");
	/* One message of a million empty frames: libzmq keeps every frame
	 * until the message ends, tens of MiB (measured through --pid). */
	expect_verdict("frame.empty-more-flood", "violation");
	expect_verdict("curve.nonce-replayed", "skipped");
	cr_expect_eq(rc, 1, "findings must exit 1; got %d", rc);

	FILE *f = fopen(json, "r");
	char buf[1 << 16];
	size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	unlink(json);
	cr_expect(strstr(buf, "\"name\": \"greeting.v3.1\"") != NULL, "json: %s", buf);
	cr_expect(strstr(buf, "\"verdict\": \"lenient\"") != NULL, "json: %s", buf);
	cr_expect(strstr(buf, "\"summary\": {\"pass\": ") != NULL, "json: %s", buf);
}

/* Every socket type that matters: the probe learns it from READY, speaks a
 * compatible one, and the basic cases pass. */
Test(probe, libzmq_each_socket_type)
{
	static const char *const types[] = {"PAIR",   "PUB",  "SUB",  "REQ",  "REP", "DEALER",
	                                    "ROUTER", "PULL", "PUSH", "XPUB", "XSUB"};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char want[64];
		const char *ep = peer_begin(PROBE_PEER, types[i], "tcp://127.0.0.1:*", NULL);
		int rc = RUN_PROBE(ep, "--case", "greeting.v3.1");
		snprintf(want, sizeof(want), "peer %s (ZMTP 3.1", types[i]);
		cr_expect(strstr(probe.out, want) != NULL, "%s: %s", types[i], probe.out);
		expect_verdict("greeting.v3.1", "pass");
		cr_expect_eq(rc, 0, "%s: exit %d", types[i], rc);
		rc = RUN_PROBE(ep, "--case", "meta.incompatible-type");
		expect_verdict("meta.incompatible-type", "pass");
		rc = RUN_PROBE(ep, "--case", "ping.context-0");
		expect_verdict("ping.context-0", "pass");
		zl_proc_stop(&peer, 2000);
	}
}

Test(probe, libzmq_pub_subscriptions)
{
	const char *ep = peer_begin(PROBE_PEER, "PUB", "tcp://127.0.0.1:*", NULL);
	int rc = RUN_PROBE(ep, "--case", "sub.");
	expect_verdict("sub.subscribe-command", "pass");
	expect_verdict("sub.cancel-command", "pass");
	expect_verdict("sub.subscribe-message", "pass");
	expect_verdict("sub.cancel-message", "pass");
	expect_verdict("sub.topic-flood", "pass");
	cr_expect_eq(rc, 0, "%s", probe.out);
}

Test(probe, libzmq_curve)
{
	char pub[64], sec[64];
	tool_begin(&cat, "keygen", NULL);
	cr_assert_eq(tool_wait(&cat, WAIT_MS), 0);
	cr_assert(sscanf(cat.out, "public: %40s\nsecret: %40s\n", pub, sec) == 2);

	const char *ep =
		peer_begin(PROBE_PEER, "PULL", "tcp://127.0.0.1:*", "--curve-server", sec, NULL);
	int rc = RUN_PROBE(ep, "--mechanism", "curve", "--type", "PULL", "--server-key", pub);
	struct summary s = summary();
	expect_verdict("curve.wrong-server-key", "pass");
	expect_verdict("curve.hello-short", "pass");
	expect_verdict("curve.hello-zero-box", "pass");
	expect_verdict("curve.nonce-replayed", "pass");
	expect_verdict("curve.nonce-out-of-order", "pass");
	expect_verdict("curve.replayed-cookie", "pass");
	/* Hand-built INITIATEs: each case's unaltered control must reach READY
	 * (else it is skipped), so pass means the alteration alone was refused. */
	expect_verdict("curve.vouch-other-short-key", "pass");
	expect_verdict("curve.vouch-wrong-long-key", "pass");
	expect_verdict("curve.initiate-short", "pass");
	expect_verdict("curve.initiate-no-box", "pass");
	expect_verdict("curve.initiate-old-cookie", "pass");
	expect_verdict("ping.context-16", "pass");
	expect_verdict("meta.no-socket-type", "skipped");
	cr_expect_eq(s.violations + s.crashes + s.hangs + s.degraded, 0, "%s", probe.out);
	cr_expect_eq(rc, 0, "%s", probe.out);
}

Test(probe, libzmq_plain)
{
	const char *ep = peer_begin(PROBE_PEER, "PULL", "tcp://127.0.0.1:*", "--plain-server",
	                            "probe:secret", NULL);
	int rc = RUN_PROBE(ep, "--mechanism", "plain", "--type", "PULL", "--username", "probe",
	                   "--password", "secret", "--case", "plain.");
	expect_verdict("plain.wrong-password", "pass");
	expect_verdict("plain.hello-truncated", "pass");
	expect_verdict("plain.ready-first", "pass");
	/* libzmq's ZAP refusal: ERROR "400" before the close. */
	cr_expect(strstr(probe.out, "ERROR \"400\"") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 0, "%s", probe.out);
}

/* ---- zring itself ----------------------------------------------------------------- */

static const char *
cat_bound(void)
{
	static char ep[256];
	return tool_stderr_after(&cat, "zring cat: bound to ", ep, sizeof ep, WAIT_MS);
}

static const char *
cat_pid(void)
{
	static char s[32];
	snprintf(s, sizeof(s), "%d", (int)cat.pid);
	return s;
}

Test(probe, zring_cat_whole_catalogue_is_clean)
{
	tool_begin(&cat, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "HANDSHAKE_IVL=1000",
	           "-o", "HEARTBEAT_IVL=300", "-o", "HEARTBEAT_TIMEOUT=600", NULL);
	const char *ep = cat_bound();
	int rc = RUN_PROBE_BESIDE_CAT(ep, "--pid", PROBE_SANITIZED ? "0" : cat_pid(),
	                              "--peer-handshake-ivl", "1000", "--peer-heartbeat-timeout",
	                              "600");
	struct summary s = summary();
	cr_expect(s.pass + s.lenient >= 60, "%s", probe.out);
	cr_expect_eq(s.violations + s.crashes + s.hangs + s.degraded, 0, "%s", probe.out);
	expect_verdict("frame.reserved-0x80", "pass");
	expect_verdict("ping.context-17", "pass");
	expect_verdict("greeting.silent", "pass");
	expect_verdict("resource.slowloris", "pass");
	expect_verdict("heartbeat.silent-peer", "pass");
	expect_verdict("frame.empty-more-flood", "pass");
	cr_expect_eq(rc, 0, "%s", probe.out);
}

Test(probe, zring_cat_curve)
{
	char pub[64], sec[64];
	tool_begin(&cat, "keygen", NULL);
	cr_assert_eq(tool_wait(&cat, WAIT_MS), 0);
	cr_assert(sscanf(cat.out, "public: %40s\nsecret: %40s\n", pub, sec) == 2);
	char secopt[96];
	snprintf(secopt, sizeof(secopt), "CURVE_SECRETKEY=%s", sec);

	tool_begin(&cat, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "CURVE_SERVER=1",
	           "-o", secopt, NULL);
	const char *ep = cat_bound();
	int rc = RUN_PROBE_BESIDE_CAT(ep, "--mechanism", "curve", "--type", "PULL", "--server-key",
	                              pub, "--case", "curve.");
	struct summary s = summary();
	cr_expect_eq(s.pass, 15, "%s", probe.out);
	expect_verdict("curve.vouch-other-short-key", "pass");
	expect_verdict("curve.vouch-wrong-long-key", "pass");
	expect_verdict("curve.initiate-short", "pass");
	expect_verdict("curve.initiate-no-box", "pass");
	expect_verdict("curve.initiate-old-cookie", "pass");
	cr_expect_eq(rc, 0, "%s", probe.out);
}

/* ---- planted defects ----------------------------------------------------------------- */

Test(probe, planted_clean_peer_gets_no_finding)
{
	const char *ep = peer_begin(PLANTED_PEER, "clean", "1000", NULL);
	int rc = RUN_PROBE(ep, "--pid", peer_pid(), "--peer-handshake-ivl", "1000");
	struct summary s = summary();
	cr_expect(s.pass >= 60, "%s", probe.out);
	cr_expect_eq(s.violations + s.crashes + s.hangs + s.degraded, 0, "%s", probe.out);
	expect_verdict("frame.reserved-0x80", "pass");
	expect_verdict("ping.context-17", "pass");
	expect_verdict("ping.context-0", "pass");
	expect_verdict("frame.empty-flood", "pass");
	cr_expect_eq(rc, 0, "%s", probe.out);
}

Test(probe, planted_reserved_flags_is_lenient)
{
	const char *ep = peer_begin(PLANTED_PEER, "reserved-flags", NULL);
	int rc = RUN_PROBE(ep, "--case", "frame.reserved");
	expect_verdict("frame.reserved-0x80", "lenient");
	expect_verdict("frame.reserved-0x08", "lenient");
	cr_expect_eq(rc, 0, "lenient alone exits 0: %s", probe.out);
}

Test(probe, planted_crash_on_ping17_is_a_crash)
{
	const char *ep = peer_begin(PLANTED_PEER, "crash-ping17", NULL);
	int rc = RUN_PROBE(ep, "--case", "ping.");
	expect_verdict("ping.context-16", "pass");
	expect_verdict("ping.context-17", "crash");
	expect_verdict("ping.ttl", "skipped");
	cr_expect_eq(summary().crashes, 1);
	cr_expect_eq(rc, 1);
}

Test(probe, planted_no_pong_is_a_hang)
{
	const char *ep = peer_begin(PLANTED_PEER, "no-pong", NULL);
	int rc = RUN_PROBE(ep, "--case", "ping.context");
	cr_expect(strstr(probe.out, "no PONG: liveness = handshake") != NULL, "%s", probe.out);
	expect_verdict("ping.context-0", "hang");
	expect_verdict("ping.context-16", "hang");
	cr_expect_eq(rc, 1);
}

Test(probe, planted_leak_on_empty_frames_is_a_violation)
{
	const char *ep = peer_begin(PLANTED_PEER, "leak-empty", NULL);
	int rc = RUN_PROBE(ep, "--pid", peer_pid(), "--case", "frame.empty-flood");
	expect_verdict("frame.empty-flood", "violation");
	cr_expect(strstr(probe.out, "peer RSS") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 1);
	/* Without --pid the flood case checks liveness only. */
	rc = RUN_PROBE(ep, "--case", "frame.empty-flood");
	expect_verdict("frame.empty-flood", "pass");
}

Test(probe, planted_degradation_is_degraded)
{
	const char *ep = peer_begin(PLANTED_PEER, "degrade", "2000", NULL);
	int rc = RUN_PROBE(ep, "--case", "frame.reserved-0x80");
	/* The attacking connection is still served (lenient), but a fresh
	 * connection beside it no longer gets a handshake. */
	expect_verdict("frame.reserved-0x80", "degraded");
	cr_expect(strstr(probe.out, "oracle: a fresh connection's handshake failed") != NULL, "%s",
	          probe.out);
	cr_expect_eq(summary().degraded, 1);
	cr_expect_eq(rc, 1);
}

/* ---- fuzzing and replay --------------------------------------------------------------- */

Test(probe, fuzz_finds_the_planted_crash_and_replay_reproduces_it)
{
	char dir[] = "/tmp/zring-probe-fuzz-XXXXXX";
	char path[512], line[600];
	cr_assert(mkdtemp(dir) != NULL);

	const char *ep = peer_begin(PLANTED_PEER, "crash-ping17", NULL);
	int rc = RUN_PROBE("--fuzz", "--seconds", "60", "--seed", "7", "--out", dir, ep);
	cr_assert_eq(rc, 1, "the fuzzer found nothing: %s", probe.out);
	const char *f = strstr(probe.out, "finding: ");
	cr_assert(f != NULL, "%s", probe.out);
	cr_expect(strstr(f, ": crash (") != NULL, "%s", probe.out);
	const char *at = strstr(f, dir);
	cr_assert(at != NULL && sscanf(at, "%511s", path) == 1, "%s", probe.out);
	zl_proc_stop(&peer, 2000);

	/* The reproducer crashes a fresh defective peer, and not a clean one. */
	ep = peer_begin(PLANTED_PEER, "crash-ping17", NULL);
	rc = RUN_PROBE("--replay", path, ep);
	cr_expect(strstr(probe.out, "replay: crash") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 1);
	zl_proc_stop(&peer, 2000);
	ep = peer_begin(PLANTED_PEER, "clean", NULL);
	rc = RUN_PROBE("--replay", path, ep);
	cr_expect(strstr(probe.out, "replay: pass") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 0);

	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	cr_expect_eq(system(line), 0);
}

/* ---- roles, reachability, usage ----------------------------------------------------------- */

/* The probe binds port 0 with --listen and says which port it got: a port
 * picked here and bound by the probe later could be taken in between (by
 * the local port of any connection on this machine: the tests beside this
 * one connect all the time), and the probe would fail to listen. */
#define LISTEN_ANY "tcp://127.0.0.1:0"

/* After `zring probe --listen LISTEN_ANY`: the endpoint it listens on. */
static const char *
probe_listening(char *ep, size_t cap)
{
	return tool_stderr_after(&probe, "zring probe: listening on ", ep, cap, WAIT_MS);
}

/* Starts `zring probe --listen LISTEN_ANY --mechanism M --type PUSH
 * ARGS...` and puts the endpoint it listens on into ep (a char array). */
#define BEGIN_LISTEN(ep, mech, ...)                                                                \
	(tool_begin(&probe, "probe", "--limit", CASE_LIMIT, "--listen", LISTEN_ANY, "--mechanism", \
	            mech, "--type", "PUSH", __VA_ARGS__, NULL),                                    \
	 probe_listening(ep, sizeof(ep)))

Test(probe, listen_for_a_connecting_peer)
{
	char ep[64];

	tool_begin(&probe, "probe", "--limit", CASE_LIMIT, "--listen", LISTEN_ANY, "--case",
	           "greeting.v3", NULL);
	/* The port it bound, not the 0 it was given. */
	probe_listening(ep, sizeof(ep));
	cr_assert(strncmp(ep, "tcp://127.0.0.1:", 16) == 0 && atoi(ep + 16) > 0, "%s", ep);
	peer_begin(PROBE_PEER, "PUSH", ep, "--connect", NULL);
	int rc = tool_wait(&probe, PROBE_WAIT_MS);
	cr_expect(strstr(probe.out, "peer PUSH") != NULL, "%s", probe.out);
	expect_verdict("greeting.v3.1", "pass");
	expect_verdict("greeting.v3.2", "pass");
	cr_expect_eq(rc, 0, "%s %s", probe.out, probe.err);
}

static const char *const plain_server_cases[] = {"plain-server.error",
                                                 "plain-server.misspelt-error"};

/* The probe as a PLAIN server: it first admits the client (the run's
 * opening handshake, "peer PUSH"), then refuses it. A refused client may
 * never connect again (libzmq gives up), so each case runs against its own
 * client. */
static void
expect_plain_server_case(const char *name, int rc)
{
	cr_expect(strstr(probe.out, "peer PUSH") != NULL, "%s %s", probe.out, probe.err);
	expect_verdict(name, "pass");
	cr_expect(strstr(probe.out, "closed after") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 0, "%s %s", probe.out, probe.err);
}

Test(probe, listen_plain_server_refuses_libzmq_client)
{
	for (size_t i = 0; i < 2; i++) {
		char ep[64];
		const char *name = plain_server_cases[i];
		tool_reset(&probe);
		BEGIN_LISTEN(ep, "plain", "--username", "probe", "--password", "secret", "--case",
		             name);
		peer_begin(PROBE_PEER, "PUSH", ep, "--connect", "--plain-client", "probe:secret",
		           NULL);
		expect_plain_server_case(name, tool_wait(&probe, PROBE_WAIT_MS));
		stop_peer();
		tool_kill(&probe);
	}
}

Test(probe, listen_plain_server_refuses_zring_cat)
{
	for (size_t i = 0; i < 2; i++) {
		char ep[64];
		const char *name = plain_server_cases[i];
		tool_reset(&probe);
		tool_reset(&cat);
		BEGIN_LISTEN(ep, "plain", "--username", "probe", "--password", "secret", "--case",
		             name);
		tool_begin(&cat, "cat", "-w", "-c", "PUSH", ep, "-o", "PLAIN_USERNAME=probe", "-o",
		           "PLAIN_PASSWORD=secret", NULL);
		expect_plain_server_case(name, wait_draining_cat());
		tool_kill(&cat);
		tool_kill(&probe);
	}
}

/* ---- the probe as the server of a PLAIN or CURVE client ------------------------------- */

/* What libzmq 4.3 does with each abuse, as measured; zring refuses all. */
struct server_case {
	const char *name;
	const char *libzmq;
};

static const struct server_case plain_client_cases[] = {
	{"plain-server.welcome-garbage", "pass"},
	{"plain-server.reason-overrun", "pass"},
	/* libzmq checks Socket-Type only when it is there */
	{"plain-server.ready-no-type", "lenient"},
	{"plain-server.ready-first", "pass"},
};

static const struct server_case curve_client_cases[] = {
	{"curve-server.welcome-short", "pass"},     {"curve-server.welcome-bad-box", "pass"},
	{"curve-server.welcome-other-key", "pass"}, {"curve-server.error-for-welcome", "pass"},
	{"curve-server.ready-bad-box", "pass"},     {"curve-server.ready-short", "pass"},
	{"curve-server.ready-no-type", "lenient"},  {"curve-server.error-for-ready", "pass"},
	{"curve-server.nonce-replayed", "pass"},    {"curve-server.nonce-backwards", "pass"},
	{"curve-server.nonce-of-ready", "pass"},    {"curve-server.message-bad-box", "pass"},
};

#define CURVE_KEY_TAG "zring probe: CURVE server public key "

/* After BEGIN_LISTEN with CURVE: a planted CURVE client in mode connects to
 * ep with the key the probe printed; returns the probe's exit status. */
static int
planted_curve_wait(const char *ep, const char *mode)
{
	char key[64];

	tool_stderr_after(&probe, CURVE_KEY_TAG, key, sizeof(key), WAIT_MS);
	peer_begin(PLANTED_CURVE_CLIENT, mode, ep, key, NULL);
	return tool_wait(&probe, PROBE_WAIT_MS);
}

/* The probe as the CURVE server with the options ARGS... against a planted
 * CURVE client in mode; the probe's exit status. ep: a char array. */
#define PLANTED_CURVE_RUN(ep, mode, ...) \
	(tool_reset(&probe), BEGIN_LISTEN(ep, "curve", __VA_ARGS__), planted_curve_wait(ep, mode))

/* A refused libzmq or zring client gives up (no reconnection after a failed
 * handshake), so every case gets its own client process. */
Test(probe, listen_curve_server_libzmq_client)
{
	for (size_t i = 0; i < ZR_ARRAY_LEN(curve_client_cases); i++) {
		const struct server_case *sc = &curve_client_cases[i];
		char ep[64], key[64];
		tool_reset(&probe);
		BEGIN_LISTEN(ep, "curve", "--case", sc->name);
		tool_stderr_after(&probe, CURVE_KEY_TAG, key, sizeof(key), WAIT_MS);
		peer_begin(PROBE_PEER, "PUSH", ep, "--connect", "--curve-client", key, NULL);
		int rc = tool_wait(&probe, PROBE_WAIT_MS);
		/* The run's opening handshake is the codec's server role. */
		cr_expect(strstr(probe.out, "peer PUSH (ZMTP 3.1") != NULL, "%s %s", probe.out,
		          probe.err);
		expect_verdict(sc->name, sc->libzmq);
		cr_expect_eq(rc, 0, "%s", probe.out);
		stop_peer();
		tool_kill(&probe);
	}
}

Test(probe, listen_curve_server_zring_cat_client)
{
	char pub[64], sec[64], o_pub[96], o_sec[96], o_srv[96];
	tool_begin(&cat, "keygen", NULL);
	cr_assert_eq(tool_wait(&cat, WAIT_MS), 0);
	cr_assert(sscanf(cat.out, "public: %40s\nsecret: %40s\n", pub, sec) == 2);
	snprintf(o_pub, sizeof(o_pub), "CURVE_PUBLICKEY=%s", pub);
	snprintf(o_sec, sizeof(o_sec), "CURVE_SECRETKEY=%s", sec);
	for (size_t i = 0; i < ZR_ARRAY_LEN(curve_client_cases); i++) {
		const char *name = curve_client_cases[i].name;
		char ep[64], key[64];
		tool_reset(&probe);
		tool_reset(&cat);
		BEGIN_LISTEN(ep, "curve", "--case", name);
		tool_stderr_after(&probe, CURVE_KEY_TAG, key, sizeof(key), WAIT_MS);
		snprintf(o_srv, sizeof(o_srv), "CURVE_SERVERKEY=%s", key);
		tool_begin(&cat, "cat", "-w", "-c", "PUSH", ep, "-o", o_srv, "-o", o_pub, "-o",
		           o_sec, NULL);
		int rc = wait_draining_cat();
		expect_verdict(name, "pass");
		cr_expect_eq(rc, 0, "%s", probe.out);
		tool_kill(&cat);
		tool_kill(&probe);
	}
}

/* A client that connects again after every refusal takes the whole group in
 * one run; its planted defects must come out as violations. */
Test(probe, listen_curve_server_planted_clients)
{
	char ep[64];

	int rc = PLANTED_CURVE_RUN(ep, "clean", "--case", "curve-server.");
	for (size_t i = 0; i < ZR_ARRAY_LEN(curve_client_cases); i++)
		expect_verdict(curve_client_cases[i].name, curve_client_cases[i].libzmq);
	cr_expect_eq(rc, 0, "%s", probe.out);
	stop_peer();

	/* It opens a WELCOME box that does not open... and carries on. */
	rc = PLANTED_CURVE_RUN(ep, "accept-bad-welcome", "--case", "curve-server.welcome");
	expect_verdict("curve-server.welcome-short", "pass");
	expect_verdict("curve-server.welcome-bad-box", "violation");
	expect_verdict("curve-server.welcome-other-key", "violation");
	cr_expect(strstr(probe.out, "answered with INITIATE") != NULL, "%s", probe.out);
	cr_expect_eq(rc, 1, "%s", probe.out);
	stop_peer();

	/* It takes a MESSAGE whose nonce is not above the last. */
	rc = PLANTED_CURVE_RUN(ep, "accept-replay", "--case", "curve-server.nonce-replayed");
	expect_verdict("curve-server.nonce-replayed", "violation");
	cr_expect_eq(rc, 1, "%s", probe.out);
}

Test(probe, listen_plain_server_abuses_libzmq_client)
{
	for (size_t i = 0; i < ZR_ARRAY_LEN(plain_client_cases); i++) {
		const struct server_case *sc = &plain_client_cases[i];
		char ep[64];
		tool_reset(&probe);
		BEGIN_LISTEN(ep, "plain", "--username", "probe", "--password", "secret", "--case",
		             sc->name);
		peer_begin(PROBE_PEER, "PUSH", ep, "--connect", "--plain-client", "probe:secret",
		           NULL);
		int rc = tool_wait(&probe, PROBE_WAIT_MS);
		cr_expect(strstr(probe.out, "peer PUSH") != NULL, "%s %s", probe.out, probe.err);
		expect_verdict(sc->name, sc->libzmq);
		cr_expect_eq(rc, 0, "%s", probe.out);
		stop_peer();
		tool_kill(&probe);
	}
}

Test(probe, listen_plain_server_abuses_zring_cat)
{
	for (size_t i = 0; i < ZR_ARRAY_LEN(plain_client_cases); i++) {
		const char *name = plain_client_cases[i].name;
		char ep[64];
		tool_reset(&probe);
		tool_reset(&cat);
		BEGIN_LISTEN(ep, "plain", "--username", "probe", "--password", "secret", "--case",
		             name);
		tool_begin(&cat, "cat", "-w", "-c", "PUSH", ep, "-o", "PLAIN_USERNAME=probe", "-o",
		           "PLAIN_PASSWORD=secret", NULL);
		int rc = wait_draining_cat();
		expect_verdict(name, "pass");
		cr_expect_eq(rc, 0, "%s", probe.out);
		tool_kill(&cat);
		tool_kill(&probe);
	}
}

/* ---- fuzzing under PLAIN and CURVE -------------------------------------------------------- */

/* The number of conversations that got past the handshake ("(N after a
 * completed handshake)"): a fuzzer that never did tested nothing. */
static unsigned
fuzz_shook(void)
{
	const char *p = strstr(probe.out, "conversations (");
	unsigned n = 0;
	cr_assert(p != NULL && sscanf(p, "conversations (%u", &n) == 1, "%s", probe.out);
	return n;
}

Test(probe, fuzz_plain_and_curve_against_zring_cat_find_nothing)
{
	char pub[64], sec[64], secopt[96];
	tool_begin(&cat, "keygen", NULL);
	cr_assert_eq(tool_wait(&cat, WAIT_MS), 0);
	cr_assert(sscanf(cat.out, "public: %40s\nsecret: %40s\n", pub, sec) == 2);
	snprintf(secopt, sizeof(secopt), "CURVE_SECRETKEY=%s", sec);

	tool_begin(&cat, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "CURVE_SERVER=1",
	           "-o", secopt, NULL);
	const char *ep = cat_bound();
	int rc = RUN_PROBE_BESIDE_CAT("--fuzz", "--seconds", "5", "--seed", "11", "--out", "/tmp",
	                              "--mechanism", "curve", "--type", "PULL", "--server-key", pub,
	                              ep);
	cr_expect(strstr(probe.out, ", CURVE, seed 11") != NULL, "%s", probe.out);
	cr_expect(strstr(probe.out, " 0 findings") != NULL, "%s", probe.out);
	cr_expect(fuzz_shook() > 0, "%s", probe.out);
	cr_expect_eq(rc, 0, "%s", probe.out);
	tool_kill(&cat);

	tool_reset(&cat);
	tool_begin(&cat, "cat", "-r", "-b", "PULL", "tcp://127.0.0.1:*", "-o", "PLAIN_SERVER=1",
	           "--allow-plain", "probe:secret", NULL);
	ep = cat_bound();
	rc = RUN_PROBE_BESIDE_CAT("--fuzz", "--seconds", "5", "--seed", "11", "--out", "/tmp",
	                          "--mechanism", "plain", "--type", "PULL", "--username", "probe",
	                          "--password", "secret", ep);
	cr_expect(strstr(probe.out, ", PLAIN, seed 11") != NULL, "%s", probe.out);
	cr_expect(strstr(probe.out, " 0 findings") != NULL, "%s", probe.out);
	cr_expect(fuzz_shook() > 0, "%s", probe.out);
	cr_expect_eq(rc, 0, "%s", probe.out);
}

/* Under --listen the fuzzer is the CURVE server of a planted client that
 * exits on a reserved flag bit inside a box: only a mutation of the
 * plaintext, boxed again with a true nonce, reaches it. */
Test(probe, fuzz_curve_finds_the_planted_client_crash_and_replay_reproduces_it)
{
	char dir[] = "/tmp/zring-probe-fuzz-XXXXXX";
	char ep[64], path[512], line[600];
	cr_assert(mkdtemp(dir) != NULL);

	int rc = PLANTED_CURVE_RUN(ep, "crash-flags", "--fuzz", "--seconds", "60", "--seed", "3",
	                           "--out", dir);
	cr_assert_eq(rc, 1, "the fuzzer found nothing: %s", probe.out);
	const char *f = strstr(probe.out, "finding: ");
	cr_assert(f != NULL, "%s", probe.out);
	cr_expect(strstr(f, ": crash (") != NULL, "%s", probe.out);
	const char *at = strstr(f, dir);
	cr_assert(at != NULL && sscanf(at, "%511s", path) == 1, "%s", probe.out);
	stop_peer();

	/* The reproducer (handshake, then box lines) crashes a fresh defective
	 * client, and not a clean one. */
	static const char *const modes[] = {"crash-flags", "clean"};
	for (int i = 0; i < 2; i++) {
		rc = PLANTED_CURVE_RUN(ep, modes[i], "--replay", path);
		cr_expect(strstr(probe.out, i == 0 ? "replay: crash" : "replay: pass") != NULL,
		          "%s: %s", modes[i], probe.out);
		cr_expect_eq(rc, i == 0 ? 1 : 0, "%s", probe.out);
		stop_peer();
	}
	FILE *rf = fopen(path, "r");
	char text[4096];
	size_t n = rf != NULL ? fread(text, 1, sizeof(text) - 1, rf) : 0;
	if (rf != NULL)
		fclose(rf);
	text[n] = '\0';
	cr_expect(strstr(text, "\nhandshake\n") != NULL && strstr(text, "\nbox ") != NULL, "%s",
	          text);

	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	cr_expect_eq(system(line), 0);
}

Test(probe, unreachable_peer_exits_2)
{
	int rc = RUN_PROBE("tcp://127.0.0.1:1");
	cr_expect_eq(rc, 2, "%s", probe.out);
	cr_expect(strstr(probe.out, "cannot reach") != NULL, "%s", probe.out);
}

Test(probe, usage_and_catalogue)
{
	int rc = RUN_PROBE("--frobnicate", "tcp://127.0.0.1:1");
	cr_expect_eq(rc, 3);
	cr_expect(strstr(probe.err, "unknown option") != NULL, "%s", probe.err);
	rc = RUN_PROBE("--list");
	cr_expect_eq(rc, 0);
	cr_assert(strstr(probe.out, " cases\n") != NULL);
	/* One line per case, then the count. */
	cr_expect(tool_count_char(probe.out, probe.out_len, '\n') > 60, "%s", probe.out);
}
