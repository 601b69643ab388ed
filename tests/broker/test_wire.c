/*
 * Broker wire layout (ruststream.md §4.1, §20 behaviours 1-12): the exact
 * frames our publisher writes, read by a raw libzmq PULL peer, and how a
 * queue subscription decodes raw frames a libzmq PUSH peer sends (minimal
 * peers, ignored extra frames, malformed header frames as error items).
 *
 * Peers are tests/engine/peers/epeer.py driven through tests/engine/
 * engine_util.h: messages are frame tokens (hex) joined by ':'.
 */
#include "broker/broker_util.h"
#include "engine/engine_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define WIRE_ENDPOINT "tcp://127.0.0.1:0"

/* "MSG <tokens>" for frames given as (pointer, length) pairs. */
static char *
wire_expect(const char *const *frames, const size_t *lens, size_t n)
{
	struct et_str s = {0};

	et_str_add(&s, "MSG ");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			et_str_add(&s, ":");
		et_str_frame(&s, (const uint8_t *)frames[i], lens[i]);
	}
	return s.p;
}

/* A connect-side queue broker dialling a libzmq PULL peer bound on loopback. */
struct wire_out {
	zr_ctx *ctx;
	struct et_peer *peer;
	zr_broker *b;
	zr_publisher *p;
};

static void
wire_out_open(struct wire_out *w)
{
	cr_assert_eq(zr_ctx_new(&w->ctx), 0);
	w->peer = et_peer_start("PULL", "bind", WIRE_ENDPOINT, NULL);
	w->b = bu_broker(w->ctx, ZR_QUEUE, w->peer->line + 9, ZR_CONNECT);
	cr_assert_eq(zr_publisher_new(w->b, &w->p), 0);
}

static void
wire_out_close(struct wire_out *w)
{
	zr_broker_free(w->b);
	zr_ctx_free(w->ctx);
	et_peers_stop();
}

/* A bound queue subscription "orders" that a libzmq PUSH peer dials. */
struct wire_in {
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub;
	struct bu_log log;
	struct et_peer *peer;
};

static void
wire_in_open(struct wire_in *w)
{
	char ep[256];

	cr_assert_eq(zr_ctx_new(&w->ctx), 0);
	bu_log_init(&w->log);
	w->b = bu_broker(w->ctx, ZR_QUEUE, WIRE_ENDPOINT, ZR_BIND);
	w->sub = bu_sub(w->b, "orders", &w->log);
	w->peer = et_peer_start("PUSH", "connect", bu_bound(w->b, ep, sizeof ep), NULL);
}

/* Sends raw frames given as tokens. */
static void
wire_in_send(struct wire_in *w, const char *tokens)
{
	cr_assert_str_eq(et_peer_ask(w->peer, ET_WAIT_MS, "send %s", tokens), "SENT");
}

/* Waits for delivery i and returns it. */
static const struct bu_item *
wire_in_item(struct wire_in *w, size_t i)
{
	cr_assert(bu_log_wait(&w->log, i + 1, BU_WAIT_MS), "delivery #%zu did not come (got %zu)",
	          i, bu_log_count(&w->log));
	return bu_log_at(&w->log, i);
}

static void
wire_in_close(struct wire_in *w)
{
	zr_broker_free(w->b);
	zr_ctx_free(w->ctx);
	bu_log_fini(&w->log);
	et_peers_stop();
}

/* A later well-formed message still arrives as delivery i (the subscription
 * kept going after an error item). */
static void
wire_in_still_delivers(struct wire_in *w, size_t i)
{
	char *name = et_hex("orders"), *payload = et_hex("after");
	char *tokens;

	cr_assert_geq(asprintf(&tokens, "%s::%s", name, payload), 0);
	wire_in_send(w, tokens);
	const struct bu_item *it = wire_in_item(w, i);

	cr_assert_eq(it->error, 0, "%s", it->error_text != NULL ? it->error_text : "");
	cr_assert_str_eq(it->name, "orders");
	cr_assert_str_eq(it->payload, "after");
	free(tokens);
	free(name);
	free(payload);
}

/* §20 #1 */
Test(wire, a_publish_writes_three_frames_name_header_lines_without_trailing_newline_and_payload)
{
	struct wire_out w;
	struct zr_header h[] = {{"content-type", "application/json"}, {"x-tenant", "acme"}};
	static const char payload[] = "{\"id\":1}";
	const char *frames[] = {"orders", "content-type: application/json\nx-tenant: acme",
	                        payload};
	size_t lens[] = {6, strlen(frames[1]), strlen(payload)};
	char *want = wire_expect(frames, lens, 3);

	wire_out_open(&w);
	int rc = zr_publish(w.p, "orders", h, 2, payload, strlen(payload), 10000);

	cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(w.p));
	cr_assert_str_eq(et_peer_ask(w.peer, BU_WAIT_MS, "recv %d", BU_WAIT_MS), want);
	free(want);
	wire_out_close(&w);
}

/* §20 #2 */
Test(wire, a_publish_without_headers_still_writes_an_empty_header_frame)
{
	struct wire_out w;
	const char *frames[] = {"orders", "", "abc"};
	size_t lens[] = {6, 0, 3};
	char *want = wire_expect(frames, lens, 3);

	wire_out_open(&w);
	int rc = zr_publish(w.p, "orders", NULL, 0, "abc", 3, 10000);

	cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(w.p));
	cr_assert_str_eq(et_peer_ask(w.peer, BU_WAIT_MS, "recv %d", BU_WAIT_MS), want);
	free(want);
	wire_out_close(&w);
}

/* §20 #3 */
Test(wire,
     a_header_value_that_is_not_utf8_is_refused_naming_header_and_destination_before_attaching)
{
	struct wire_out w;
	struct zr_header h[] = {{"content-type", "application/json"}, {"x-tenant", "\xff\xfe"}};

	wire_out_open(&w);
	int rc = zr_publish(w.p, "orders", h, 2, "x", 1, 10000);

	cr_assert_eq(rc, -EILSEQ, "publish returned %d", rc);
	const char *err = zr_publisher_error(w.p);

	cr_assert(strstr(err, "x-tenant") != NULL, "error text \"%s\" names no header", err);
	cr_assert(strstr(err, "orders") != NULL, "error text \"%s\" names no destination", err);
	cr_assert_null(zr_publisher_socket(w.p), "a socket was attached for a refused message");
	cr_assert_str_eq(et_peer_ask(w.peer, ET_WAIT_MS, "recv %d", BU_QUIET_MS), "TIMEOUT");
	wire_out_close(&w);
}

/* The header-name half of the -EILSEQ contract (beside §20 #3). */
Test(wire, a_header_name_that_is_not_utf8_is_refused_before_attaching)
{
	struct wire_out w;
	struct zr_header h[] = {{"x-\xc3(", "v"}};

	wire_out_open(&w);
	int rc = zr_publish(w.p, "orders", h, 1, "x", 1, 10000);

	cr_assert_eq(rc, -EILSEQ, "publish returned %d", rc);
	cr_assert(strstr(zr_publisher_error(w.p), "orders") != NULL, "error text \"%s\"",
	          zr_publisher_error(w.p));
	cr_assert_null(zr_publisher_socket(w.p));
	wire_out_close(&w);
}

/* §20 #4 */
Test(wire, two_raw_frames_are_read_as_name_and_payload_with_no_headers)
{
	struct wire_in w;

	wire_in_open(&w);
	wire_in_send(&w, "6f7264657273:726177"); /* orders, raw */
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, 0, "%s", it->error_text != NULL ? it->error_text : "");
	cr_assert_str_eq(it->name, "orders");
	cr_assert_eq(it->nheaders, 0);
	cr_assert_eq(it->payload_len, 3);
	cr_assert_str_eq(it->payload, "raw");
	wire_in_close(&w);
}

/* §20 #5 */
Test(wire, one_raw_frame_is_read_as_a_name_with_empty_payload_and_no_headers)
{
	struct wire_in w;

	wire_in_open(&w);
	wire_in_send(&w, "6f7264657273");
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, 0, "%s", it->error_text != NULL ? it->error_text : "");
	cr_assert_str_eq(it->name, "orders");
	cr_assert_eq(it->nheaders, 0);
	cr_assert_eq(it->payload_len, 0);
	wire_in_close(&w);
}

/* §20 #6 */
Test(wire, frames_after_the_third_are_ignored)
{
	struct wire_in w;
	char *hdr = et_hex("x-tenant: acme"), *tokens;

	wire_in_open(&w);
	/* orders, headers, "body", "extra", "more" */
	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:626f6479:6578747261:6d6f7265", hdr), 0);
	wire_in_send(&w, tokens);
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, 0, "%s", it->error_text != NULL ? it->error_text : "");
	cr_assert_str_eq(it->name, "orders");
	cr_assert_eq(it->nheaders, 1);
	cr_assert_str_eq(it->headers[0].name, "x-tenant");
	cr_assert_str_eq(it->headers[0].value, "acme");
	cr_assert_eq(it->payload_len, 4);
	cr_assert_str_eq(it->payload, "body");
	free(tokens);
	free(hdr);
	wire_in_close(&w);
}

/* §20 #7 (and whitespace-only lines, §4.1) */
Test(wire, a_trailing_blank_header_line_is_skipped)
{
	struct wire_in w;
	char *h1 = et_hex("x-tenant: acme\n"), *h2 = et_hex("\n \t\nx-tenant: acme\n  \n"), *tokens;

	wire_in_open(&w);
	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:31", h1), 0);
	wire_in_send(&w, tokens);
	free(tokens);
	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:32", h2), 0);
	wire_in_send(&w, tokens);
	for (size_t i = 0; i < 2; i++) {
		const struct bu_item *it = wire_in_item(&w, i);

		cr_assert_eq(it->error, 0, "#%zu: %s", i,
		             it->error_text != NULL ? it->error_text : "");
		cr_assert_eq(it->nheaders, 1, "#%zu has %zu headers", i, it->nheaders);
		cr_assert_str_eq(it->headers[0].name, "x-tenant");
		cr_assert_str_eq(it->headers[0].value, "acme");
	}
	free(tokens);
	free(h1);
	free(h2);
	wire_in_close(&w);
}

/* §20 #8 */
Test(wire, a_header_line_without_colon_is_an_error_item_quoting_it_and_later_messages_still_arrive)
{
	struct wire_in w;
	char *hdr = et_hex("x-tenant: acme\ncontent-type application/json"), *tokens;
	struct zr_sub_stats st;

	wire_in_open(&w);
	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:7b7d", hdr), 0);
	wire_in_send(&w, tokens);
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, -EPROTO, "error %d", it->error);
	cr_assert_not_null(it->error_text);
	cr_assert(strstr(it->error_text, "content-type application/json") != NULL,
	          "error text \"%s\" does not quote the line", it->error_text);
	wire_in_still_delivers(&w, 1);
	zr_subscription_stats(w.sub, &st);
	cr_assert_eq(st.errors, 1);
	cr_assert_eq(st.received, 2);
	free(tokens);
	free(hdr);
	wire_in_close(&w);
}

/* §20 #9 */
Test(wire, a_header_frame_that_is_not_utf8_is_an_error_item)
{
	struct wire_in w;

	wire_in_open(&w);
	wire_in_send(&w, "6f7264657273:782d74656e616e743a20fffe:7b7d"); /* "x-tenant: \xff\xfe" */
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, -EPROTO, "error %d", it->error);
	cr_assert_not_null(it->error_text);
	cr_assert_neq(it->error_text[0], '\0');
	wire_in_still_delivers(&w, 1);
	wire_in_close(&w);
}

/* §20 #10 */
Test(wire, a_name_frame_that_is_not_utf8_is_an_error_item)
{
	struct wire_in w;

	wire_in_open(&w);
	wire_in_send(&w, "6f72fffe:782d74656e616e743a2061636d65:7b7d");
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, -EPROTO, "error %d", it->error);
	cr_assert_not_null(it->error_text);
	cr_assert_neq(it->error_text[0], '\0');
	wire_in_still_delivers(&w, 1);
	wire_in_close(&w);
}

/* §20 #11 */
Test(wire, a_header_line_splits_at_its_first_colon_and_both_sides_are_trimmed)
{
	struct wire_in w;
	char *hdr = et_hex("a : b: c"), *tokens;

	wire_in_open(&w);
	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:7b7d", hdr), 0);
	wire_in_send(&w, tokens);
	const struct bu_item *it = wire_in_item(&w, 0);

	cr_assert_eq(it->error, 0, "%s", it->error_text != NULL ? it->error_text : "");
	cr_assert_eq(it->nheaders, 1);
	cr_assert_str_eq(it->headers[0].name, "a");
	cr_assert_str_eq(it->headers[0].value, "b: c");
	free(tokens);
	free(hdr);
	wire_in_close(&w);
}

/* What wire_lookup_handler found, by zr_delivery_header inside the handler
 * (the delivery dies when it returns). */
struct wire_lookup {
	struct bu_log log;
	char content_type[64], upper[64], tenant[64];
	int missing_is_null, prefix_is_null;
};

static void
wire_lookup_handler(const struct zr_delivery *d, void *arg)
{
	struct wire_lookup *l = arg;
	const char *v;

	pthread_mutex_lock(&l->log.mu);
	v = zr_delivery_header(d, "content-type");
	snprintf(l->content_type, sizeof l->content_type, "%s", v != NULL ? v : "(null)");
	v = zr_delivery_header(d, "CONTENT-TYPE");
	snprintf(l->upper, sizeof l->upper, "%s", v != NULL ? v : "(null)");
	v = zr_delivery_header(d, "x-tenant");
	snprintf(l->tenant, sizeof l->tenant, "%s", v != NULL ? v : "(null)");
	l->missing_is_null = zr_delivery_header(d, "x-missing") == NULL;
	l->prefix_is_null = zr_delivery_header(d, "content-typ") == NULL;
	pthread_mutex_unlock(&l->log.mu);
	bu_log_handler(d, &l->log);
}

/* §20 #12 */
Test(wire, header_names_are_looked_up_case_insensitively_and_the_first_match_wins)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub;
	struct wire_lookup l = {0};
	struct zr_sub_opts o = {.handler = wire_lookup_handler, .arg = &l};
	char ep[256];
	char *hdr =
		et_hex("Content-Type: application/json\nX-Tenant: acme\ncontent-type: text/plain");
	char *tokens;

	bu_log_init(&l.log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	b = bu_broker(ctx, ZR_QUEUE, WIRE_ENDPOINT, ZR_BIND);
	cr_assert_eq(zr_subscribe(b, "orders", &o, &sub), 0, "%s", zr_broker_error(b));
	struct et_peer *peer = et_peer_start("PUSH", "connect", bu_bound(b, ep, sizeof ep), NULL);

	cr_assert_geq(asprintf(&tokens, "6f7264657273:%s:7b7d", hdr), 0);
	cr_assert_str_eq(et_peer_ask(peer, ET_WAIT_MS, "send %s", tokens), "SENT");
	cr_assert(bu_log_wait(&l.log, 1, BU_WAIT_MS), "nothing delivered");
	pthread_mutex_lock(&l.log.mu);
	cr_assert_str_eq(l.content_type, "application/json");
	cr_assert_str_eq(l.upper, "application/json");
	cr_assert_str_eq(l.tenant, "acme");
	cr_assert(l.missing_is_null);
	cr_assert(l.prefix_is_null);
	pthread_mutex_unlock(&l.log.mu);
	/* The names themselves arrive as sent, in wire order. */
	const struct bu_item *it = bu_log_at(&l.log, 0);

	cr_assert_eq(it->nheaders, 3);
	cr_assert_str_eq(it->headers[0].name, "Content-Type");
	cr_assert_str_eq(it->headers[2].value, "text/plain");
	free(tokens);
	free(hdr);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&l.log);
	et_peers_stop();
}
