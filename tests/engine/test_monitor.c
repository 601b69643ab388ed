/*
 * Monitor events: what a socket reports about its connections, with libzmq's
 * event names, and the reason when a handshake fails.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/zring.h>

#include "sock_helpers.h"

#define WAIT_MS 5000

/* Reads events until one of type comes; fails the test after WAIT_MS. */
static struct zr_event
expect_event(zr_socket *s, int type)
{
	struct zr_event ev;

	for (;;) {
		int rc = zr_monitor_recv(s, &ev, WAIT_MS);

		cr_assert_eq(rc, 0, "no event 0x%x within %d ms: %s", type, WAIT_MS,
		             zr_strerror(rc));
		if (ev.type == type)
			return ev;
	}
}

Test(engine_monitor, reports_listening_accepted_connected_and_handshakes)
{
	zr_ctx *ctx;
	zr_socket *pull, *push;
	char ep[ZR_EVENT_ENDPOINT_MAX];
	struct zr_event ev;
	int zero = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pull, ep, sizeof ep);

	ev = expect_event(pull, ZR_EVENT_LISTENING);
	cr_assert_str_eq(ev.endpoint, ep);
	cr_assert_geq(ev.value, 0);

	cr_assert_eq(zr_connect(push, ep), 0);
	ev = expect_event(push, ZR_EVENT_CONNECTED);
	cr_assert_str_eq(ev.endpoint, ep);
	ev = expect_event(push, ZR_EVENT_HANDSHAKE_SUCCEEDED);
	cr_assert_str_eq(ev.endpoint, ep);
	ev = expect_event(pull, ZR_EVENT_ACCEPTED);
	cr_assert_str_eq(ev.endpoint, ep);
	expect_event(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED);

	/* The binder goes away: the connecter sees it and schedules a retry. */
	cr_assert_eq(zr_setsockopt(pull, ZR_LINGER, &zero, sizeof zero), 0);
	zr_socket_close(pull);
	ev = expect_event(push, ZR_EVENT_DISCONNECTED);
	cr_assert_str_eq(ev.endpoint, ep);
	ev = expect_event(push, ZR_EVENT_CONNECT_RETRIED);
	cr_assert_geq(ev.value, 100, "RECONNECT_IVL 100 ms plus jitter, got %d", ev.value);
	cr_assert_leq(ev.value, 200);

	cr_assert_eq(zr_setsockopt(push, ZR_LINGER, &zero, sizeof zero), 0);
	zr_socket_close(push);
	zr_ctx_free(ctx);
}

Test(engine_monitor, an_incompatible_peer_fails_the_handshake_with_the_reason_on_both_sides)
{
	zr_ctx *ctx;
	zr_socket *a, *b;
	char ep[ZR_EVENT_ENDPOINT_MAX];
	struct zr_event ev;
	int zero = 0, got;
	char buf[8];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &a), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &b), 0);
	cr_assert_eq(zr_socket_monitor(a, ZR_EVENT_ALL), 0);
	cr_assert_eq(zr_socket_monitor(b, ZR_EVENT_ALL), 0);
	sock_bind_connect(a, "ipc://@zring-monitor-incompatible", b, ep, sizeof ep);

	ev = expect_event(a, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL);
	cr_assert_eq(ev.value, -ZR_EINCOMPATIBLE, "got %d (%s)", ev.value, zr_strerror(ev.value));
	ev = expect_event(b, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL);
	/* b learns it either from its own check or from a's ERROR command. */
	cr_assert(ev.value == -ZR_EINCOMPATIBLE || ev.value == -ZR_EPEERERROR, "got %d (%s)",
	          ev.value, zr_strerror(ev.value));

	/* Nothing ever flows: a PUSH with no compatible peer cannot send. */
	got = zr_send_bytes(a, "x", 1, ZR_DONTWAIT);
	cr_assert(got == 0 || got == -EAGAIN);
	cr_assert_eq(zr_recv_bytes(b, buf, sizeof buf, ZR_DONTWAIT), -ENOTSUP);

	zr_setsockopt(a, ZR_LINGER, &zero, sizeof zero);
	zr_setsockopt(b, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(a);
	zr_socket_close(b);
	zr_ctx_free(ctx);
}

Test(engine_monitor, a_peer_that_never_answers_gives_connect_retried_events)
{
	zr_ctx *ctx;
	zr_socket *s;
	struct zr_event ev;
	int zero = 0, ivl = 20;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_DEALER, &s), 0);
	cr_assert_eq(zr_setsockopt(s, ZR_RECONNECT_IVL, &ivl, sizeof ivl), 0);
	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_CONNECT_RETRIED), 0);
	/* Nothing listens on this abstract name: every attempt is refused. */
	cr_assert_eq(zr_connect(s, "ipc://@zring-monitor-nobody-home"), 0);
	for (int i = 0; i < 3; i++) {
		ev = expect_event(s, ZR_EVENT_CONNECT_RETRIED);
		cr_assert_str_eq(ev.endpoint, "ipc://@zring-monitor-nobody-home");
		cr_assert_geq(ev.value, ivl);
		cr_assert_leq(ev.value, 2 * ivl);
	}
	/* A mask without the type records nothing more. */
	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_ACCEPTED), 0);
	while (zr_monitor_recv(s, &ev, 50) == 0)
		; /* events recorded before the change (the io thread may be recording one) */
	cr_assert_eq(zr_monitor_recv(s, &ev, 100), -EAGAIN);
	zr_setsockopt(s, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(s);
	zr_ctx_free(ctx);
}

Test(engine_monitor, records_only_the_events_in_the_mask_and_nothing_before_it_is_set)
{
	zr_ctx *ctx;
	zr_socket *pull, *push;
	char ep[ZR_EVENT_ENDPOINT_MAX];
	struct zr_event ev;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	/* Not monitored yet: no queue to read, and a mask of 0 makes none. */
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), -EINVAL);
	cr_assert_eq(zr_socket_monitor(pull, 0), 0);
	cr_assert_eq(zr_monitor_fd(pull), -EINVAL);
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), -EINVAL);

	/* Only ACCEPTED asked for: LISTENING and the handshake are not kept. */
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ACCEPTED), 0);
	cr_assert_geq(zr_monitor_fd(pull), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	cr_assert_eq(zr_monitor_recv(pull, &ev, WAIT_MS), 0);
	cr_assert_eq(ev.type, ZR_EVENT_ACCEPTED);
	cr_assert_str_eq(ev.endpoint, ep);
	cr_assert_eq(zr_send_bytes(push, "x", 1, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, ev.reason, 1, 0), 1); /* past the handshake */
	cr_assert_eq(zr_monitor_recv(pull, &ev, 100), -EAGAIN, "got event 0x%x", ev.type);

	/* 0 stops recording; the queue stays readable. */
	cr_assert_eq(zr_socket_monitor(pull, 0), 0);
	cr_assert_geq(zr_monitor_fd(pull), 0);
	sopt_int(push, ZR_LINGER, 0);
	zr_socket_close(push);
	cr_assert_eq(zr_monitor_recv(pull, &ev, 300), -EAGAIN, "got event 0x%x", ev.type);

	sopt_int(pull, ZR_LINGER, 0);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}
