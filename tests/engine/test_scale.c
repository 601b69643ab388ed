/*
 * Scale: 1,000 DEALERs connected to one ROUTER through one io thread, each
 * doing a request/reply. Every request is answered, each to its sender.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <zring/zring.h>

#define CLIENTS 1000

Test(engine_scale, a_router_answers_a_thousand_concurrent_dealers, .timeout = 120)
{
	static zr_socket *dealers[CLIENTS];
	struct rlimit rl;
	zr_ctx *ctx;
	zr_socket *router;
	char ep[128];
	size_t len = sizeof ep;
	int t = 20000, zero = 0, answered = 0;

	/* Each DEALER costs a connection fd on both sides plus its eventfds. */
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 8 * CLIENTS) {
		rl.rlim_cur = rl.rlim_max < 8 * CLIENTS ? rl.rlim_max : 8 * CLIENTS;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 5 * CLIENTS)
		cr_skip_test("RLIMIT_NOFILE is %lu, the test needs %d", (unsigned long)rl.rlim_cur,
		             5 * CLIENTS);

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_ROUTER, &router), 0);
	cr_assert_eq(zr_setsockopt(router, ZR_RCVTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zr_bind(router, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(router, ZR_LAST_ENDPOINT, ep, &len), 0);

	for (int i = 0; i < CLIENTS; i++) {
		char id[16];
		int n = snprintf(id, sizeof id, "client-%04d", i);

		cr_assert_eq(zr_socket_open(ctx, ZR_DEALER, &dealers[i]), 0);
		cr_assert_eq(zr_setsockopt(dealers[i], ZR_ROUTING_ID, id, (size_t)n), 0);
		cr_assert_eq(zr_setsockopt(dealers[i], ZR_RCVTIMEO, &t, sizeof t), 0);
		cr_assert_eq(zr_connect(dealers[i], ep), 0, "connect %d", i);
		/* Sent before the connection is up: it waits for it. */
		cr_assert_eq(zr_send_bytes(dealers[i], id, (size_t)n, 0), 0, "send %d", i);
	}

	/* The ROUTER sees every request with its sender's id in front, and
	 * answers each through that id. */
	for (int i = 0; i < CLIENTS; i++) {
		zr_msg *m;
		size_t idlen, blen;
		const char *id, *body;

		cr_assert_eq(zr_recv(router, &m, 0), 0, "request %d of %d", i, CLIENTS);
		cr_assert_eq(zr_msg_frames(m), 2u);
		id = zr_msg_frame(m, 0, &idlen);
		body = zr_msg_frame(m, 1, &blen);
		cr_assert_eq(idlen, blen);
		cr_assert_eq(memcmp(id, body, idlen), 0, "the id frame is the sender's ROUTING_ID");
		cr_assert_eq(zr_send(router, &m, 0), 0); /* echo back: id routes it */
	}
	for (int i = 0; i < CLIENTS; i++) {
		char want[16], got[16];
		int n = snprintf(want, sizeof want, "client-%04d", i);
		int r = zr_recv_bytes(dealers[i], got, sizeof got, 0);

		cr_assert_eq(r, n, "dealer %d: %d (%s)", i, r, r < 0 ? zr_strerror(r) : "");
		cr_assert_eq(memcmp(got, want, (size_t)n), 0, "dealer %d got another's reply", i);
		answered++;
	}
	cr_assert_eq(answered, CLIENTS);
	for (int i = 0; i < CLIENTS; i++) {
		zr_setsockopt(dealers[i], ZR_LINGER, &zero, sizeof zero);
		zr_socket_close(dealers[i]);
	}
	zr_setsockopt(router, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(router);
	zr_ctx_free(ctx);
}
