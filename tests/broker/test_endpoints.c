/*
 * Broker endpoints and lifecycle (ruststream.md §2, §3, §20 behaviours
 * 13-22): which endpoints a broker takes and when it checks them, that
 * construction opens nothing, the bound address, one subscription per bound
 * endpoint, an endpoint freed by unsubscribe, an address in use, several
 * subscriptions on a dialling broker, publishes before start and after
 * shutdown, and sockets that outlive the thread that opened them.
 */
#include "broker/broker_util.h"
#include "engine/sock_helpers.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define EP_LOOPBACK "tcp://127.0.0.1:0"

static const int ep_patterns[] = {ZR_QUEUE, ZR_FANOUT, ZR_RPC};

static const char *
ep_pattern_name(int pattern)
{
	return pattern == ZR_QUEUE ? "queue" : pattern == ZR_FANOUT ? "fan-out" : "rpc";
}

/* Open file descriptors of this process (the directory's own fd is
 * counted every time, so it cancels out). */
static int
ep_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* §20 #13 */
Test(endpoints, an_inproc_endpoint_is_refused_at_start_naming_the_address_and_both_transports)
{
	zr_ctx *ctx;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	for (size_t i = 0; i < 3; i++) {
		for (int side = ZR_BIND; side <= ZR_CONNECT; side++) {
			zr_broker *b = NULL;
			zr_subscription *sub = NULL;
			zr_publisher *p = NULL;
			struct bu_log log;

			bu_log_init(&log);
			/* Construction records the configuration only. */
			cr_assert_eq(
				zr_broker_new(ctx, ep_patterns[i], "inproc://orders", side, &b), 0,
				"%s side %d", ep_pattern_name(ep_patterns[i]), side);
			int rc = zr_broker_start(b);

			cr_assert_eq(rc, -EINVAL, "%s side %d: start returned %d",
			             ep_pattern_name(ep_patterns[i]), side, rc);
			const char *err = zr_broker_error(b);

			cr_assert(strstr(err, "inproc://orders") != NULL, "\"%s\" names no address",
			          err);
			cr_assert(strstr(err, "tcp://") != NULL, "\"%s\" does not name tcp://",
			          err);
			cr_assert(strstr(err, "ipc://") != NULL, "\"%s\" does not name ipc://",
			          err);
			/* It never opened: subscriptions and publishes are refused. */
			struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &log};

			cr_assert_eq(zr_subscribe(b, "orders", &o, &sub), -ENOTCONN);
			cr_assert_eq(zr_publisher_new(b, &p), 0);
			if (ep_patterns[i] != ZR_RPC) {
				cr_assert_eq(zr_publish(p, "orders", NULL, 0, "x", 1, 1000),
				             -ENOTCONN);
			} else {
				struct zr_delivery *reply = NULL;

				cr_assert_eq(zr_request(p, "orders", NULL, 0, "x", 1, 1000, &reply),
				             -ENOTCONN);
				cr_assert_null(reply);
			}
			cr_assert_null(zr_publisher_socket(p));
			zr_broker_free(b);
			bu_log_fini(&log);
		}
	}
	zr_ctx_free(ctx);
}

/* §20 #14 */
Test(endpoints, constructing_a_broker_opens_no_file_descriptor_and_binds_nothing)
{
	zr_ctx *ctx;
	zr_broker *b[3];
	zr_publisher *p;
	unsigned port = free_tcp_port();
	char ep[64];
	int before, after;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	/* The context's own descriptors settle first. */
	before = ep_fd_count();
	for (int tries = 0; tries < 50; tries++) {
		sleep_ms(20);
		after = ep_fd_count();
		if (after == before)
			break;
		before = after;
	}
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", port);
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(zr_broker_new(ctx, ep_patterns[i], ep, ZR_BIND, &b[i]), 0);
		cr_assert_eq(zr_broker_set_read_ahead(b[i], 8), 0);
		cr_assert_eq(zr_broker_set_drain_timeout(b[i], 100), 0);
	}
	sleep_ms(100);
	after = ep_fd_count();
	cr_assert_eq(after, before, "%d descriptors before, %d after zr_broker_new", before, after);
	/* A publisher attaches no socket before its first publish (it may keep
	 * a wake-up descriptor of its own, which is not a socket). */
	cr_assert_eq(zr_publisher_new(b[0], &p), 0);
	cr_assert_null(zr_publisher_socket(p));
	/* Nothing listens on the port either. */
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "the port %u is taken", port);
	close(fd);
	for (size_t i = 0; i < 3; i++)
		zr_broker_free(b[i]);
	zr_ctx_free(ctx);
}

/* §20 #15 */
Test(endpoints, the_bound_address_is_absent_until_a_subscription_binds_then_names_the_port)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_subscription *sub;
	struct bu_log log;
	char buf[256] = "untouched";
	unsigned port = 0;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_broker_new(ctx, ZR_QUEUE, EP_LOOPBACK, ZR_BIND, &b), 0);
	cr_assert_eq(zr_broker_bound_address(b, buf, sizeof buf), -ENOENT);
	cr_assert_eq(zr_broker_start(b), 0);
	cr_assert_eq(zr_broker_bound_address(b, buf, sizeof buf), -ENOENT);
	sub = bu_sub(b, "jobs", &log);
	int n = zr_broker_bound_address(b, buf, sizeof buf);

	cr_assert_gt(n, 0, "bound_address: %d", n);
	cr_assert_eq((size_t)n, strlen(buf));
	cr_assert_eq(sscanf(buf, "tcp://127.0.0.1:%u", &port), 1, "bound address \"%s\"", buf);
	cr_assert(port > 0 && port < 65536, "port %u in \"%s\"", port, buf);
	cr_assert_eq(zr_broker_bound_address(b, buf, 5), -ENOSPC);
	/* It really listens there. */
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "nothing listens on %u",
	             port);
	close(fd);
	zr_unsubscribe(sub);
	cr_assert_eq(zr_broker_bound_address(b, buf, sizeof buf), -ENOENT);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/* §20 #16 */
Test(endpoints, a_second_subscription_on_a_bound_endpoint_is_refused_naming_both)
{
	zr_ctx *ctx;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	for (size_t i = 0; i < 3; i++) {
		zr_broker *b = bu_broker(ctx, ep_patterns[i], EP_LOOPBACK, ZR_BIND);
		zr_subscription *second = NULL;
		struct bu_log log;
		struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &log};

		bu_log_init(&log);
		bu_sub(b, "jobs", &log);
		int rc = zr_subscribe(b, "reports", &o, &second);

		cr_assert_eq(rc, -EINVAL, "%s: second subscribe returned %d",
		             ep_pattern_name(ep_patterns[i]), rc);
		const char *err = zr_broker_error(b);

		cr_assert(strstr(err, "jobs") != NULL, "%s: \"%s\" does not name 'jobs'",
		          ep_pattern_name(ep_patterns[i]), err);
		cr_assert(strstr(err, "reports") != NULL, "%s: \"%s\" does not name 'reports'",
		          ep_pattern_name(ep_patterns[i]), err);
		/* Any name, the same one too. */
		cr_assert_eq(zr_subscribe(b, "jobs", &o, &second), -EINVAL);
		zr_broker_free(b);
		bu_log_fini(&log);
	}
	zr_ctx_free(ctx);
}

/* §20 #17 */
Test(endpoints, an_unsubscribed_bound_endpoint_binds_again_and_the_publisher_reaches_the_new_one)
{
	zr_ctx *ctx;
	zr_broker *b;
	zr_publisher *p;
	zr_subscription *first;
	struct bu_log log1, log2;
	char ep[64], bound[256];
	int rc;

	bu_log_init(&log1);
	bu_log_init(&log2);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	b = bu_broker(ctx, ZR_QUEUE, ep, ZR_BIND);
	cr_assert_eq(zr_publisher_new(b, &p), 0);
	first = bu_sub(b, "jobs", &log1);
	rc = zr_publish(p, "jobs", NULL, 0, "one", 3, 10000);
	cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
	cr_assert(bu_log_wait(&log1, 1, BU_WAIT_MS));
	zr_unsubscribe(first);
	cr_assert_eq(zr_broker_bound_address(b, bound, sizeof bound), -ENOENT);
	/* Same port: the endpoint was given back, not only the slot. */
	bu_sub(b, "jobs", &log2);
	cr_assert_str_eq(bu_bound(b, bound, sizeof bound), ep);
	/* The publisher's old connection died with the first subscription; keep
	 * publishing until the new one gets a message (bounded). */
	uint64_t until = zt_now_ms() + BU_WAIT_MS;
	int sent = 0;

	while (bu_log_count(&log2) == 0 && zt_now_ms() < until) {
		rc = zr_publish(p, "jobs", NULL, 0, "two", 3, 10000);
		cr_assert_eq(rc, 0, "publish: %d %s", rc, zr_publisher_error(p));
		sent++;
		bu_log_wait(&log2, 1, 200);
	}
	cr_assert(bu_log_wait(&log2, 1, BU_WAIT_MS), "the new subscription got none of %d", sent);
	cr_assert_str_eq(bu_log_at(&log2, 0)->payload, "two");
	cr_assert_eq(bu_log_count(&log1), 1);
	zr_broker_free(b);
	zr_ctx_free(ctx);
	bu_log_fini(&log1);
	bu_log_fini(&log2);
}

/* §20 #18 */
Test(endpoints, binding_an_address_another_broker_holds_is_refused_naming_the_address)
{
	zr_ctx *ctx;
	zr_broker *a, *b;
	zr_subscription *sub = NULL;
	struct bu_log log;
	struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &log};
	char bound[256];

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	a = bu_broker(ctx, ZR_QUEUE, EP_LOOPBACK, ZR_BIND);
	bu_sub(a, "jobs", &log);
	bu_bound(a, bound, sizeof bound);
	b = bu_broker(ctx, ZR_QUEUE, bound, ZR_BIND);
	int rc = zr_subscribe(b, "jobs", &o, &sub);

	cr_assert_eq(rc, -EADDRINUSE, "subscribe returned %d (%s)", rc, zr_broker_error(b));
	cr_assert(strstr(zr_broker_error(b), bound) != NULL, "\"%s\" does not name %s",
	          zr_broker_error(b), bound);
	cr_assert_eq(zr_broker_bound_address(b, bound, sizeof bound), -ENOENT);
	zr_broker_free(b);
	zr_broker_free(a);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}

/* §20 #19 */
Test(endpoints, a_dialling_broker_takes_two_subscriptions_as_separate_sockets)
{
	zr_ctx *ctx;
	zr_socket *vent;
	zr_broker *b;
	zr_subscription *s1, *s2;
	struct bu_log log1, log2;
	char ep[256];
	int sent = 0;

	bu_log_init(&log1);
	bu_log_init(&log2);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	/* A plain PUSH ventilator both subscriptions dial. */
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &vent), 0);
	sopt_int(vent, ZR_LINGER, 0);
	sopt_int(vent, ZR_SNDTIMEO, 10000);
	cr_assert_eq(zr_bind(vent, EP_LOOPBACK), 0);
	endpoint_of(vent, ep, sizeof ep);
	b = bu_broker(ctx, ZR_QUEUE, ep, ZR_CONNECT);
	s1 = bu_sub(b, "a", &log1);
	s2 = bu_sub(b, "b", &log2);
	cr_assert_neq(zr_subscription_socket(s1), zr_subscription_socket(s2));
	/* Round robin over both connections once both are up. */
	uint64_t until = zt_now_ms() + BU_WAIT_MS;

	while ((bu_log_count(&log1) == 0 || bu_log_count(&log2) == 0) && zt_now_ms() < until) {
		cr_assert_eq(zr_send_bytes(vent, "job", 3, 0), 0);
		sent++;
		sleep_ms(50);
	}
	cr_assert(bu_log_wait(&log1, 1, 0) && bu_log_wait(&log2, 1, 0),
	          "after %d jobs: a got %zu, b got %zu", sent, bu_log_count(&log1),
	          bu_log_count(&log2));
	/* Each job went to exactly one of them. */
	until = zt_now_ms() + BU_WAIT_MS;
	while (bu_log_count(&log1) + bu_log_count(&log2) < (size_t)sent && zt_now_ms() < until)
		sleep_ms(20);
	sleep_ms(BU_QUIET_MS);
	cr_assert_eq(bu_log_count(&log1) + bu_log_count(&log2), (size_t)sent);
	zr_broker_free(b);
	zr_socket_close(vent);
	zr_ctx_free(ctx);
	bu_log_fini(&log1);
	bu_log_fini(&log2);
}

/* §20 #20 */
Test(endpoints, a_publisher_of_a_broker_not_started_fails_with_not_connected)
{
	zr_ctx *ctx;
	struct zr_delivery *reply = NULL;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	for (size_t i = 0; i < 3; i++) {
		zr_broker *b;
		zr_publisher *p;
		zr_subscription *sub = NULL;
		struct bu_log log;
		struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &log};

		bu_log_init(&log);
		cr_assert_eq(zr_broker_new(ctx, ep_patterns[i], EP_LOOPBACK, ZR_BIND, &b), 0);
		cr_assert_eq(zr_publisher_new(b, &p), 0);
		uint64_t t0 = zt_now_ms();

		if (ep_patterns[i] == ZR_RPC) {
			cr_assert_eq(zr_request(p, "svc", NULL, 0, "q", 1, 3000, &reply),
			             -ENOTCONN);
			cr_assert_null(reply);
		} else {
			cr_assert_eq(zr_publish(p, "jobs", NULL, 0, "x", 1, 3000), -ENOTCONN, "%s",
			             ep_pattern_name(ep_patterns[i]));
		}
		cr_assert_lt(zt_now_ms() - t0, 2500, "%s: the refusal waited",
		             ep_pattern_name(ep_patterns[i]));
		cr_assert_neq(zr_publisher_error(p)[0], '\0');
		cr_assert_null(zr_publisher_socket(p));
		cr_assert_eq(zr_subscribe(b, "jobs", &o, &sub), -ENOTCONN);
		zr_broker_free(b);
		bu_log_fini(&log);
	}
	zr_ctx_free(ctx);
}

/* RPC responder for the shutdown test: answers every request with "pong". */
struct ep_responder {
	zr_publisher *p;
};

static void
ep_responder_handler(const struct zr_delivery *d, void *arg)
{
	struct ep_responder *r = arg;

	zr_reply(r->p, d, NULL, 0, "pong", 4);
}

/* §20 #21 */
Test(endpoints, after_shutdown_every_patterns_publisher_fails_at_once_with_not_connected)
{
	zr_ctx *ctx;
	zr_broker *bq, *bf, *br;
	zr_publisher *pq, *pf, *pr, *resp;
	struct bu_log lq, lf;
	struct ep_responder r;
	struct zr_sub_opts ro = {.handler = ep_responder_handler, .arg = &r};
	zr_subscription *rsub;
	struct zr_delivery *reply = NULL;
	int rc;

	bu_log_init(&lq);
	bu_log_init(&lf);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	bq = bu_broker(ctx, ZR_QUEUE, EP_LOOPBACK, ZR_BIND);
	bf = bu_broker(ctx, ZR_FANOUT, EP_LOOPBACK, ZR_BIND);
	br = bu_broker(ctx, ZR_RPC, EP_LOOPBACK, ZR_BIND);
	bu_sub(bq, "jobs", &lq);
	bu_sub(bf, "events", &lf);
	cr_assert_eq(zr_publisher_new(br, &resp), 0);
	r.p = resp;
	cr_assert_eq(zr_subscribe(br, "svc", &ro, &rsub), 0, "%s", zr_broker_error(br));
	cr_assert_eq(zr_publisher_new(bq, &pq), 0);
	cr_assert_eq(zr_publisher_new(bf, &pf), 0);
	cr_assert_eq(zr_publisher_new(br, &pr), 0);
	/* Each publisher works (and attached) before the shutdown. */
	rc = zr_publish(pq, "jobs", NULL, 0, "q", 1, 10000);
	cr_assert_eq(rc, 0, "queue: %d %s", rc, zr_publisher_error(pq));
	rc = zr_publish(pf, "events.x", NULL, 0, "f", 1, 10000);
	cr_assert_eq(rc, 0, "fan-out: %d %s", rc, zr_publisher_error(pf));
	rc = zr_request(pr, "svc", NULL, 0, "ping", 4, 10000, &reply);
	cr_assert_eq(rc, 0, "rpc: %d %s", rc, zr_publisher_error(pr));
	cr_assert_not_null(reply);
	cr_assert_eq(reply->payload_len, 4);
	cr_assert_eq(memcmp(reply->payload, "pong", 4), 0);
	zr_delivery_free(reply);
	reply = NULL;
	cr_assert(bu_log_wait(&lq, 1, BU_WAIT_MS));
	cr_assert(bu_log_wait(&lf, 1, BU_WAIT_MS));

	cr_assert_eq(zr_broker_shutdown(bq), 0);
	cr_assert_eq(zr_broker_shutdown(bf), 0);
	cr_assert_eq(zr_broker_shutdown(br), 0);
	/* At once: well inside the 5 s no-peer window, and before the timeout. */
	uint64_t t0 = zt_now_ms();

	cr_assert_eq(zr_publish(pq, "jobs", NULL, 0, "q", 1, 3000), -ENOTCONN);
	cr_assert_eq(zr_publish(pf, "events.x", NULL, 0, "f", 1, 3000), -ENOTCONN);
	cr_assert_eq(zr_request(pr, "svc", NULL, 0, "ping", 4, 3000, &reply), -ENOTCONN);
	cr_assert_null(reply);
	cr_assert_lt(zt_now_ms() - t0, 2500, "the refusals waited %llu ms",
	             (unsigned long long)(zt_now_ms() - t0));
	/* Nothing more was delivered, and the brokers take no subscriptions. */
	struct zr_sub_opts o = {.handler = bu_log_handler, .arg = &lq};
	zr_subscription *late = NULL;

	cr_assert_eq(zr_subscribe(bq, "jobs", &o, &late), -ENOTCONN);
	sleep_ms(BU_QUIET_MS);
	cr_assert_eq(bu_log_count(&lq), 1);
	cr_assert_eq(bu_log_count(&lf), 1);
	zr_broker_free(bq);
	zr_broker_free(bf);
	zr_broker_free(br);
	zr_ctx_free(ctx);
	bu_log_fini(&lq);
	bu_log_fini(&lf);
}

/* What the short-lived thread of §20 #22 sets up. */
struct ep_short {
	zr_broker *b;
	struct bu_log *log;
	zr_subscription *sub;
	zr_publisher *p;
	int rc;
};

static void *
ep_short_main(void *arg)
{
	struct ep_short *s = arg;
	struct zr_sub_opts o = {.handler = bu_log_handler, .arg = s->log};

	s->rc = zr_subscribe(s->b, "jobs", &o, &s->sub);
	if (s->rc == 0)
		s->rc = zr_publisher_new(s->b, &s->p);
	if (s->rc == 0)
		s->rc = zr_publish(s->p, "jobs", NULL, 0, "0", 1, 10000);
	return NULL;
}

/* §20 #22 */
Test(endpoints, a_subscription_and_publisher_set_up_by_a_thread_that_exits_keep_working)
{
	zr_ctx *ctx;
	struct bu_log log;
	struct ep_short s = {0};
	pthread_t t;

	bu_log_init(&log);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	s.b = bu_broker(ctx, ZR_QUEUE, EP_LOOPBACK, ZR_BIND);
	s.log = &log;
	cr_assert_eq(pthread_create(&t, NULL, ep_short_main, &s), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(s.rc, 0, "in the thread: %d (%s / %s)", s.rc, zr_broker_error(s.b),
	             s.p != NULL ? zr_publisher_error(s.p) : "");
	cr_assert_not_null(zr_publisher_socket(s.p));
	/* The thread is gone: its subscription still receives, its publisher
	 * (handed over by the join) still sends. */
	sleep_ms(100);
	for (int i = 1; i <= 3; i++) {
		char c = (char)('0' + i);
		int rc = zr_publish(s.p, "jobs", NULL, 0, &c, 1, 10000);

		cr_assert_eq(rc, 0, "publish %d: %d %s", i, rc, zr_publisher_error(s.p));
	}
	cr_assert(bu_log_wait(&log, 4, BU_WAIT_MS), "got %zu of 4", bu_log_count(&log));
	for (size_t i = 0; i < 4; i++) {
		char want[2] = {(char)('0' + i), '\0'};

		cr_assert_str_eq(bu_log_at(&log, i)->payload, want);
	}
	zr_broker_free(s.b);
	zr_ctx_free(ctx);
	bu_log_fini(&log);
}
