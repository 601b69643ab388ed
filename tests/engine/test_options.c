/*
 * Socket behaviour behind options and edges: the pollable fd, a 256 MiB
 * message, reconnect backoff, and no reconnect after a protocol failure.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sock_helpers.h"
#include <zring/zring.h>

Test(engine_options, the_socket_fd_turns_readable_when_a_message_arrives_after_eagain)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128], buf[8];
	struct pollfd p;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sock_bind_connect(pull, "ipc://@zring-options-fd", push, ep, sizeof ep);

	p.fd = zr_socket_fd(pull);
	p.events = POLLIN;
	cr_assert_geq(p.fd, 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(poll(&p, 1, 100), 0, "readable with nothing to receive");
	cr_assert_eq(zr_send_bytes(push, "hi", 2, 0), 0);
	cr_assert_eq(poll(&p, 1, 5000), 1, "the fd never turned readable");
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT), 2);
	cr_assert_eq(memcmp(buf, "hi", 2), 0);
	/* Drained to -EAGAIN, the fd is quiet again: a poll loop must not spin
	 * on a wake it already used. */
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(poll(&p, 1, 100), 0, "still readable after the queue was drained");
	cr_assert_eq(zr_send_bytes(push, "again", 5, 0), 0);
	cr_assert_eq(poll(&p, 1, 5000), 1, "the fd never turned readable the second time");
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, ZR_DONTWAIT), 5);

	sock_pair_free(ctx, push, pull);
}

Test(engine_options, the_monitor_fd_turns_readable_when_an_event_arrives_after_eagain)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	struct zr_event ev;
	struct pollfd p;
	char ep[128];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_monitor_fd(pull), -EINVAL, "no fd before monitoring starts");
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_HANDSHAKE_SUCCEEDED), 0);
	p.fd = zr_monitor_fd(pull);
	p.events = POLLIN;
	cr_assert_geq(p.fd, 0);
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), -EAGAIN);
	cr_assert_eq(poll(&p, 1, 100), 0, "readable with no event");
	sock_bind_connect(pull, "ipc://@zring-options-monfd", push, ep, sizeof ep);
	cr_assert_eq(poll(&p, 1, 5000), 1, "the fd never turned readable");
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), 0);
	cr_assert_eq(ev.type, ZR_EVENT_HANDSHAKE_SUCCEEDED);
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), -EAGAIN);
	cr_assert_eq(poll(&p, 1, 100), 0, "still readable after the events were read");

	sock_pair_free(ctx, push, pull);
}

Test(engine_options, a_256_mib_message_goes_through_with_maxmsgsize_raised, .timeout = 120)
{
	const size_t size = (size_t)256 << 20;
	int64_t max = (int64_t)size + 1024;
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	zr_msg *m;
	size_t len;
	const uint8_t *got;
	uint8_t *body = malloc(size);

	cr_assert_not_null(body);
	for (size_t i = 0; i < size; i += 4096)
		body[i] = (uint8_t)(i >> 12);
	body[size - 1] = 0xa5;
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_setsockopt(pull, ZR_MAXMSGSIZE, &max, sizeof max), 0);
	sopt_int(pull, ZR_RCVTIMEO, 60000);
	sock_bind_connect(pull, "ipc://@zring-options-256mib", push, ep, sizeof ep);

	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, "", 0), 0); /* an empty frame first */
	cr_assert_eq(zr_msg_add(m, body, size), 0);
	cr_assert_eq(zr_send(push, &m, 0), 0);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 2u);
	zr_msg_frame(m, 0, &len);
	cr_assert_eq(len, 0u);
	got = zr_msg_frame(m, 1, &len);
	cr_assert_eq(len, size);
	for (size_t i = 0; i < size; i += 4096)
		cr_assert_eq(got[i], (uint8_t)(i >> 12), "octet %zu", i);
	cr_assert_eq(got[size - 1], 0xa5);
	zr_msg_free(m);
	free(body);

	sock_pair_free(ctx, push, pull);
}

Test(engine_options, reconnect_delays_grow_up_to_reconnect_ivl_max)
{
	zr_ctx *ctx;
	zr_socket *s;
	struct zr_event ev;
	int delays[8];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_DEALER, &s), 0);
	sopt_int(s, ZR_RECONNECT_IVL, 10);
	sopt_int(s, ZR_RECONNECT_IVL_MAX, 80);
	cr_assert_eq(zr_socket_monitor(s, ZR_EVENT_CONNECT_RETRIED), 0);
	cr_assert_eq(zr_connect(s, "ipc://@zring-options-nobody"), 0);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(zr_monitor_recv(s, &ev, 5000), 0, "retry %d", i);
		delays[i] = ev.value;
	}
	/* Attempt n waits base * 2^(n-1) capped at the max, plus up to as much
	 * again of jitter: 10-20, 20-40, 40-80, then 80-160 for ever. */
	cr_assert(delays[0] >= 10 && delays[0] <= 40, "first delay %d", delays[0]);
	cr_assert(delays[2] >= 40, "third delay %d did not grow", delays[2]);
	for (int i = 3; i < 8; i++)
		cr_assert(delays[i] >= 80 && delays[i] <= 160, "delay %d is %d, want 80..160", i,
		          delays[i]);
	sopt_int(s, ZR_LINGER, 0);
	zr_socket_close(s);
	zr_ctx_free(ctx);
}

Test(engine_options, no_reconnect_after_the_peer_refused_the_handshake)
{
	zr_ctx *ctx;
	zr_socket *pub, *push;
	char ep[128];
	struct zr_event ev;
	int failed = 0, retried = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &pub), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	sopt_int(push, ZR_RECONNECT_IVL, 10);
	cr_assert_eq(zr_bind(pub, "ipc://@zring-options-refused"), 0);
	endpoint_of(pub, ep, sizeof ep);
	cr_assert_eq(zr_socket_monitor(push, ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL |
	                                             ZR_EVENT_CONNECT_RETRIED),
	             0);
	cr_assert_eq(zr_connect(push, ep), 0);
	/* One failed handshake (PUSH may not talk to PUB), then silence: with a
	 * 10 ms interval a reconnect loop would show many retries in 500 ms. */
	while (zr_monitor_recv(push, &ev, failed ? 500 : 5000) == 0) {
		if (ev.type == ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL)
			failed++;
		else
			retried++;
	}
	cr_assert_eq(failed, 1);
	cr_assert_eq(retried, 0, "%d reconnects after a protocol failure", retried);
	sopt_int(push, ZR_LINGER, 0);
	sopt_int(pub, ZR_LINGER, 0);
	zr_socket_close(push);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

Test(engine_options, ipv6_binds_star_dual_stack_and_takes_v4_and_v6_peers)
{
	zr_ctx *ctx;
	zr_socket *pull, *v4, *v6;
	char ep[128], to[160], buf[8];
	const char *port;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_IPV6, 1);
	sopt_int(pull, ZR_RCVTIMEO, 5000);
	if (zr_bind(pull, "tcp://*:0") != 0) {
		zr_socket_close(pull);
		zr_ctx_free(ctx);
		cr_skip_test("no IPv6 on this machine");
	}
	endpoint_of(pull, ep, sizeof ep);
	cr_assert(strncmp(ep, "tcp://[::]:", 11) == 0, "bound to %s", ep);
	port = strrchr(ep, ':') + 1;

	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &v4), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &v6), 0);
	snprintf(to, sizeof to, "tcp://127.0.0.1:%s", port);
	cr_assert_eq(zr_connect(v4, to), 0);
	snprintf(to, sizeof to, "tcp://[::1]:%s", port);
	cr_assert_eq(zr_connect(v6, to), 0);
	cr_assert_eq(zr_send_bytes(v4, "v4", 2, 0), 0);
	cr_assert_eq(zr_send_bytes(v6, "v6", 2, 0), 0);
	for (int i = 0, seen = 0; i < 2; i++) {
		cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 2);
		seen |= buf[1] == '4' ? 1 : 2;
		if (i == 1)
			cr_assert_eq(seen, 3, "both the IPv4 and the IPv6 peer must get through");
	}
	sopt_int(v4, ZR_LINGER, 0);
	sopt_int(v6, ZR_LINGER, 0);
	sopt_int(pull, ZR_LINGER, 0);
	zr_socket_close(v4);
	zr_socket_close(v6);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

Test(engine_options, disconnect_stops_traffic_to_that_endpoint_only)
{
	zr_ctx *ctx;
	zr_socket *push, *a, *b;
	char ea[128], eb[128], buf[8];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &a), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &b), 0);
	sopt_int(a, ZR_RCVTIMEO, 5000);
	sopt_int(b, ZR_RCVTIMEO, 5000);
	cr_assert_eq(zr_bind(a, "ipc://@zring-options-disc-a"), 0);
	cr_assert_eq(zr_bind(b, "ipc://@zring-options-disc-b"), 0);
	endpoint_of(a, ea, sizeof ea);
	endpoint_of(b, eb, sizeof eb);
	cr_assert_eq(zr_connect(push, ea), 0);
	cr_assert_eq(zr_connect(push, eb), 0);
	/* Both peers up: round-robin reaches each. */
	for (int got = 0; got != 3;) {
		cr_assert_eq(zr_send_bytes(push, "x", 1, 0), 0);
		if (zr_recv_bytes(a, buf, sizeof buf, ZR_DONTWAIT) == 1)
			got |= 1;
		if (zr_recv_bytes(b, buf, sizeof buf, ZR_DONTWAIT) == 1)
			got |= 2;
		sleep_ms(5);
	}
	cr_assert_eq(zr_disconnect(push, "ipc://@nobody"), -ENOENT);
	cr_assert_eq(zr_disconnect(push, ea), 0);
	cr_assert_eq(zr_disconnect(push, ea), -ENOENT, "already disconnected");
	/* The disconnect is a command to the io thread, which runs it before it
	 * looks at anything sent after it: every "y" goes to b ("x"s still
	 * queued may go there too, and "x"s already written may still reach a). */
	for (int i = 0; i < 20; i++)
		cr_assert_eq(zr_send_bytes(push, "y", 1, 0), 0);
	for (int ys = 0; ys < 20;) {
		cr_assert_eq(zr_recv_bytes(b, buf, sizeof buf, 0), 1, "b got %d of 20 \"y\"", ys);
		ys += buf[0] == 'y';
	}
	sopt_int(a, ZR_RCVTIMEO, 300);
	while (zr_recv_bytes(a, buf, sizeof buf, 0) == 1)
		cr_assert_eq(buf[0], 'x', "a got a message sent after it was disconnected");
	sopt_int(push, ZR_LINGER, 0);
	sopt_int(a, ZR_LINGER, 0);
	sopt_int(b, ZR_LINGER, 0);
	zr_socket_close(push);
	zr_socket_close(a);
	zr_socket_close(b);
	zr_ctx_free(ctx);
}

Test(engine_options, unbind_stops_listening_and_keeps_the_connections_it_made)
{
	zr_ctx *ctx;
	zr_socket *pull, *early, *late;
	char ep[128], buf[8];
	struct zr_event ev;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &early), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &late), 0);
	sopt_int(pull, ZR_RCVTIMEO, 5000);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_CLOSED | ZR_EVENT_ACCEPTED), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", early, ep, sizeof ep);
	cr_assert_eq(zr_send_bytes(early, "e", 1, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 1);

	cr_assert_eq(zr_unbind(pull, "tcp://127.0.0.1:1"), -ENOENT);
	cr_assert_eq(zr_unbind(pull, ep), 0, "unbind by the resolved endpoint");
	do
		cr_assert_eq(zr_monitor_recv(pull, &ev, 5000), 0, "no CLOSED event");
	while (ev.type != ZR_EVENT_CLOSED);
	cr_assert_str_eq(ev.endpoint, ep);

	/* The connection made before stays; a new one finds nobody listening. */
	cr_assert_eq(zr_send_bytes(early, "f", 1, 0), 0);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 1);
	cr_assert_eq(zr_connect(late, ep), 0);
	sleep_ms(200);
	cr_assert_eq(zr_monitor_recv(pull, &ev, 0), -EAGAIN,
	             "nothing may be accepted after unbind");
	sopt_int(early, ZR_LINGER, 0);
	sopt_int(late, ZR_LINGER, 0);
	sopt_int(pull, ZR_LINGER, 0);
	zr_socket_close(early);
	zr_socket_close(late);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

Test(engine_options, message_properties_outlive_their_connection)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	zr_msg *kept[3];
	char ep[128];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(zr_send_bytes(push, "x", 1, 0), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(zr_recv(pull, &kept[i], 0), 0);
	/* The sender goes away: its connection (and its reference) with it. */
	sopt_int(push, ZR_LINGER, 0);
	zr_socket_close(push);
	sleep_ms(100);
	for (int i = 0; i < 3; i++) {
		const char *type = zr_msg_gets(kept[i], "socket-type");

		cr_assert_not_null(type);
		cr_assert_str_eq(type, "PUSH");
		cr_assert_not_null(zr_msg_gets(kept[i], "Peer-Address"));
		cr_assert_null(zr_msg_gets(kept[i], "User-Id"), "no authenticator, no user id");
		zr_msg_free(kept[i]);
	}
	sopt_int(pull, ZR_LINGER, 0);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}
