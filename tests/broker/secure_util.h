/*
 * Broker tests over a security mechanism (test_security.c: CURVE and PLAIN;
 * test_tls.c: tls://): the context and the zring tool slots they share, and
 * set-up, publish/expect and command-line helpers that assert instead of
 * returning codes. Static inline; include after broker_util.h, and only from
 * one test file per executable (it holds the file's ctx and tools).
 *
 * A test file's .init calls sec_open (after its own set-up that may fail
 * first) and its .fini sec_close.
 */
#ifndef ZR_TESTS_BROKER_SECURE_UTIL_H
#define ZR_TESTS_BROKER_SECURE_UTIL_H

#include "broker_util.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "tools/tool_proc.h"

#define N_MSGS 200

static zr_ctx *ctx;
static struct tool tools[3];

static inline void
sec_open(void)
{
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 3; i++)
		tool_reset(&tools[i]);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
}

static inline void
sec_close(void)
{
	for (int i = 0; i < 3; i++)
		tool_kill(&tools[i]);
	zr_ctx_free(ctx);
}

static inline zr_broker *
broker_new(int pattern, const char *ep, int side)
{
	zr_broker *b = NULL;

	cr_assert_eq(zr_broker_new(ctx, pattern, ep, side, &b), 0);
	return b;
}

static inline void
set_int(zr_broker *b, int option, int v)
{
	int rc = zr_broker_setsockopt(b, option, &v, sizeof v);

	cr_assert_eq(rc, 0, "option %d: %d %s", option, rc, zr_broker_error(b));
}

static inline void
set_str(zr_broker *b, int option, const char *v)
{
	int rc = zr_broker_setsockopt(b, option, v, strlen(v));

	cr_assert_eq(rc, 0, "option %d: %d %s", option, rc, zr_broker_error(b));
}

static inline void
start(zr_broker *b)
{
	int rc = zr_broker_start(b);

	cr_assert_eq(rc, 0, "start: %d %s", rc, zr_broker_error(b));
}

static inline zr_publisher *
publisher(zr_broker *b)
{
	zr_publisher *p = NULL;

	cr_assert_eq(zr_publisher_new(b, &p), 0);
	return p;
}

/* Publishes "<prefix><i>" for i in [0, n), each with a "seq: i" header. */
static inline void
publish_n(zr_publisher *p, const char *name, const char *prefix, int n)
{
	for (int i = 0; i < n; i++) {
		char payload[64], seq[16];
		struct zr_header h = {"seq", seq};
		int rc;

		snprintf(payload, sizeof payload, "%s%d", prefix, i);
		snprintf(seq, sizeof seq, "%d", i);
		rc = zr_publish(p, name, &h, 1, payload, strlen(payload), BU_WAIT_MS);
		cr_assert_eq(rc, 0, "publish %d: %d %s", i, rc, zr_publisher_error(p));
	}
}

/* The log holds exactly "<prefix><i>", i = 0..n-1, in order, named name,
 * each with its "seq: i" header, from index first on. */
static inline void
expect_sequence_at(struct bu_log *log, size_t first, const char *name, const char *prefix, int n)
{
	cr_assert(bu_log_wait(log, first + (size_t)n, BU_WAIT_MS), "got %zu of %zu",
	          bu_log_count(log), first + (size_t)n);
	for (int i = 0; i < n; i++) {
		const struct bu_item *it = bu_log_at(log, first + (size_t)i);
		char payload[64], seq[16];

		snprintf(payload, sizeof payload, "%s%d", prefix, i);
		snprintf(seq, sizeof seq, "%d", i);
		cr_assert_str_eq(it->name, name);
		cr_assert_eq(it->payload_len, strlen(payload), "item %d", i);
		cr_assert_eq(memcmp(it->payload, payload, it->payload_len), 0, "item %d", i);
		cr_assert_str_eq(bu_item_header(it, "seq"), seq);
	}
}

/* Nothing beyond n arrives within a quiet window. */
static inline void
expect_no_more(struct bu_log *log, size_t n)
{
	cr_assert(!bu_log_wait(log, n + 1, BU_QUIET_MS), "got %zu, want %zu", bu_log_count(log), n);
}

/*
 * Fan-out from p to a subscription on "orders." logging into log: warm-up
 * "orders.warm" messages until one arrives (past the slow joiner), then
 * N_MSGS "orders.eu" ("order-<i>") and 5 "other.eu" the filter drops; waits
 * for all the orders. Returns the index of the first order in the log.
 */
static inline size_t
fanout_orders(zr_publisher *p, struct bu_log *log, const char *over)
{
	long long deadline = tool_now_ms() + BU_WAIT_MS;
	size_t first = 0;

	while (bu_log_count(log) == 0) {
		cr_assert(tool_now_ms() < deadline, "no warm-up message arrived over %s", over);
		cr_assert_eq(zr_publish(p, "orders.warm", NULL, 0, "w", 1, BU_WAIT_MS), 0);
		bu_log_wait(log, 1, 50);
	}
	publish_n(p, "orders.eu", "order-", N_MSGS);
	publish_n(p, "other.eu", "not-", 5);
	deadline = tool_now_ms() + BU_WAIT_MS;
	while (bu_log_count_named(log, "orders.eu") < N_MSGS) {
		cr_assert(tool_now_ms() < deadline, "got %zu orders of %d",
		          bu_log_count_named(log, "orders.eu"), N_MSGS);
		bu_log_wait(log, bu_log_count(log) + 1, 100);
	}
	while (strcmp(bu_log_at(log, first)->name, "orders.warm") == 0)
		first++;
	return first;
}

/* The responder answers "re:" + the request's payload. */
struct responder {
	zr_publisher *p;
};

static inline void
respond_cb(const struct zr_delivery *d, void *arg)
{
	struct responder *r = arg;
	char buf[128];
	int n = snprintf(buf, sizeof buf, "re:%.*s", (int)d->payload_len, (const char *)d->payload);

	zr_reply(r->p, d, NULL, 0, buf, (size_t)n);
}

/* n requests "ping-<i>" to "echo", each answered "re:ping-<i>". */
static inline void
expect_echo(zr_publisher *p, int n)
{
	for (int i = 0; i < n; i++) {
		struct zr_delivery *reply = NULL;
		char req[32], want[40];
		int rc;

		snprintf(req, sizeof req, "ping-%d", i);
		snprintf(want, sizeof want, "re:ping-%d", i);
		rc = zr_request(p, "echo", NULL, 0, req, strlen(req), BU_WAIT_MS, &reply);
		cr_assert_eq(rc, 0, "request %d: %d %s", i, rc, zr_publisher_error(p));
		cr_assert_str_eq(reply->name, "reply");
		cr_assert_eq(reply->payload_len, strlen(want));
		cr_assert_eq(memcmp(reply->payload, want, reply->payload_len), 0);
		zr_delivery_free(reply);
	}
}

/* ---- the command line ---- */

static inline struct tool *
tool_start(int slot, const char *cmd, ...)
{
	struct tool *t = &tools[slot];
	va_list ap;

	va_start(ap, cmd);
	tool_vbegin(t, cmd, va_arg(ap, const char *), ap);
	va_end(ap);
	return t;
}

#define O(x) "-o", x

/* A `zring publish` of one line that the handshake refuses: exit 2 with one
 * line on stderr naming pub_reason; the subscriber sub says why, sub_reason. */
static inline void
expect_cli_refused(struct tool *pub, struct tool *sub, const char *pub_reason,
                   const char *sub_reason)
{
	char why[512];
	int rc;

	tool_input(pub, "lost\n", 5);
	rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 2, "exit %d; stderr: %s", rc, pub->err);
	cr_assert(strstr(pub->err, "the handshake with") != NULL &&
	                  strstr(pub->err, pub_reason) != NULL &&
	                  tool_count_char(pub->err, pub->err_len, '\n') == 1,
	          "stderr: %s", pub->err);
	tool_stderr_after(sub, "zring: handshake failed on ", why, sizeof why, WAIT_MS);
	cr_assert(strstr(why, sub_reason) != NULL, "%s", why);
}

/* A `zring publish` of three lines that a `zring subscribe -n 3` prints
 * exactly; both exit 0. */
static inline void
expect_cli_three(struct tool *pub, struct tool *sub)
{
	int rc;

	tool_input(pub, "one\ntwo\nthree\n", 14);
	rc = tool_wait(pub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, pub->err);
	rc = tool_wait(sub, WAIT_MS);
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, sub->err);
	cr_assert_str_eq(sub->out, "jobs\t\tone\njobs\t\ttwo\njobs\t\tthree\n");
}

#endif
