/*
 * A zring SUB whose libzmq PUB is killed (SIGKILL) and started again on the
 * same port redials by itself and sends its subscriptions again: matching
 * messages flow again, non-matching ones never arrive.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <zring/zring.h>

#include "pyspawn.h"
#include "sock_helpers.h"

/* A pyzmq PUB on a port, publishing "A <n>" and "B <n>" every 5 ms. */
static const char pub_script[] =
	"import sys, time, zmq\n"
	"c = zmq.Context(); s = c.socket(zmq.PUB); s.bind('tcp://127.0.0.1:' + sys.argv[1])\n"
	"print('up', flush=True)\n"
	"n = 0\n"
	"while True:\n"
	"    s.send(b'A %d' % n); s.send(b'B %d' % n); n += 1\n"
	"    time.sleep(0.005)\n";

/* Receives until an "A" message comes; asserts that no "B" ever does. */
static void
expect_a(zr_socket *sub, int n)
{
	for (int got = 0; got < n;) {
		char buf[32] = {0};
		int r = zr_recv_bytes(sub, buf, sizeof buf - 1, 0);

		cr_assert_gt(r, 0, "no message: %s", zr_strerror(r));
		cr_assert_eq(buf[0], 'A', "a message the SUB never subscribed to: %s", buf);
		got++;
	}
}

Test(engine_resubscribe, a_sub_resubscribes_after_its_libzmq_pub_is_killed_and_restarted,
     .timeout = 60)
{
	zr_ctx *ctx;
	zr_socket *sub;
	char ep[64], port[16];
	int p = (int)free_tcp_port();
	pid_t pub;

	snprintf(port, sizeof port, "%d", p);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", p);
	pub = pyspawn(pub_script, port);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub), 0);
	sopt_int(sub, ZR_RECONNECT_IVL, 50);
	sopt_int(sub, ZR_RCVTIMEO, 10000);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_socket_monitor(sub, ZR_EVENT_DISCONNECTED | ZR_EVENT_HANDSHAKE_SUCCEEDED),
	             0);
	cr_assert_eq(zr_connect(sub, ep), 0);
	expect_a(sub, 20);

	for (int round = 0; round < 2; round++) {
		struct zr_event ev;
		char buf[32];

		pykill(pub);
		do
			cr_assert_eq(zr_monitor_recv(sub, &ev, 5000), 0,
			             "the SUB never saw its PUB go");
		while (ev.type != ZR_EVENT_DISCONNECTED);
		/* Whatever was queued before the kill may still be read: drain. */
		while (zr_recv_bytes(sub, buf, sizeof buf, ZR_DONTWAIT) > 0)
			;
		pub = pyspawn(pub_script, port);
		do
			cr_assert_eq(zr_monitor_recv(sub, &ev, 10000), 0,
			             "the SUB never came back");
		while (ev.type != ZR_EVENT_HANDSHAKE_SUCCEEDED);
		/* The new PUB knows nothing of the old subscription: messages that
		 * arrive now arrive because the SUB sent it again. */
		expect_a(sub, 20);
	}
	pykill(pub);
	sopt_int(sub, ZR_LINGER, 0);
	zr_socket_close(sub);
	zr_ctx_free(ctx);
}
