/*
 * ZR_WAKE_COALESCE: the option is stored, read back and range-checked on
 * every socket type; and a sender whose stream opens windows in which the io
 * thread is not woken (the mechanism itself is io/loop's test) loses nothing:
 * bursts with gaps on both sides of the window, at the default window and at
 * the largest, arrive whole and in order over tcp and inproc, and so does a
 * lone message sent just after a burst, inside the window it opened (no
 * wake, only the window's end, can take it). Never a duration asserted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "sock_helpers.h"

#define WC_WAIT_MS 15000
#define WC_BURSTS 400

Test(engine_wake_coalesce, option_stored_read_validated)
{
	static const int types[] = {ZR_PAIR,   ZR_PUB,  ZR_SUB,  ZR_REQ,  ZR_REP, ZR_DEALER,
	                            ZR_ROUTER, ZR_PULL, ZR_PUSH, ZR_XPUB, ZR_XSUB};
	zr_ctx *ctx;
	long wide = 5;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		zr_socket *s;

		cr_assert_eq(zr_socket_open(ctx, types[i], &s), 0);
		cr_assert_eq(sget_int(s, ZR_WAKE_COALESCE), ZR__WAKE_COALESCE_DEFAULT,
		             "default, type %d", types[i]);
		cr_assert_eq(sset_int(s, ZR_WAKE_COALESCE, 0), 0, "off");
		cr_assert_eq(sget_int(s, ZR_WAKE_COALESCE), 0);
		cr_assert_eq(sset_int(s, ZR_WAKE_COALESCE, ZR__WAKE_COALESCE_MAX), 0);
		cr_assert_eq(sget_int(s, ZR_WAKE_COALESCE), ZR__WAKE_COALESCE_MAX);
		cr_assert_eq(sset_int(s, ZR_WAKE_COALESCE, -1), -EINVAL);
		cr_assert_eq(sset_int(s, ZR_WAKE_COALESCE, ZR__WAKE_COALESCE_MAX + 1), -EINVAL);
		cr_assert_eq(sset_int(s, ZR_WAKE_COALESCE, INT32_MIN), -EINVAL);
		cr_assert_eq(zr_setsockopt(s, ZR_WAKE_COALESCE, &wide, sizeof wide), -EINVAL);
		cr_assert_eq(sget_int(s, ZR_WAKE_COALESCE), ZR__WAKE_COALESCE_MAX,
		             "a refused value leaves the old one");
		zr_socket_close(s);
	}
	zr_ctx_free(ctx);
}

/* A gap of about us microseconds, without sleeping the whole time in one
 * call (short gaps are the point: around a 20 us window). */
static void
gap_us(unsigned us)
{
	uint64_t end = zr__now_ns() + (uint64_t)us * 1000u;

	while (zr__now_ns() < end)
		;
}

/*
 * WC_BURSTS bursts of 1 to 8 messages, each followed by a gap drawn from
 * 0 to 3 windows (so sends land before, inside and after the window the
 * burst before opened), then, after the last burst, one lone message: it
 * falls inside the last window, where only the window's end takes it.
 * The receiver checks every message, in order.
 */
static void
stream_bursts(const char *endpoint, int window_us)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128], buf[32], got[33];
	unsigned seed = 12345u;
	int sent = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(sset_int(push, ZR_WAKE_COALESCE, window_us), 0);
	sopt_int(pull, ZR_RCVTIMEO, WC_WAIT_MS);
	sopt_int(push, ZR_SNDTIMEO, WC_WAIT_MS);
	sock_bind_connect(pull, endpoint, push, ep, sizeof ep);

	for (int b = 0; b < WC_BURSTS; b++) {
		seed = seed * 1103515245u + 12345u;
		int n = 1 + (int)((seed >> 16) % 8);
		for (int i = 0; i < n; i++) {
			int len = snprintf(buf, sizeof buf, "m%d", sent++);
			cr_assert_eq(zr_send_bytes(push, buf, (size_t)len, 0), 0, "send %d",
			             sent - 1);
		}
		seed = seed * 1103515245u + 12345u;
		gap_us((seed >> 16) % (unsigned)(3 * window_us + 1));
	}
	int len = snprintf(buf, sizeof buf, "m%d", sent++);
	cr_assert_eq(zr_send_bytes(push, buf, (size_t)len, 0), 0, "the lone message");

	for (int i = 0; i < sent; i++) {
		int want = snprintf(buf, sizeof buf, "m%d", i);
		int n = zr_recv_bytes(pull, got, sizeof got - 1, 0);

		cr_assert_eq(n, want, "message %d of %d: %d (%s)", i, sent, n,
		             n < 0 ? zr_strerror(n) : "wrong length");
		cr_assert_eq(memcmp(got, buf, (size_t)want), 0, "message %d out of order", i);
	}
	cr_assert_eq(zr_recv_bytes(pull, got, sizeof got, ZR_DONTWAIT), -EAGAIN, "nothing more");
	sopt_int(push, ZR_LINGER, 0);
	sock_pair_free(ctx, push, pull);
}

Test(engine_wake_coalesce, bursts_around_the_default_window_arrive_whole_over_tcp, .timeout = 120)
{
	stream_bursts("tcp://127.0.0.1:0", ZR__WAKE_COALESCE_DEFAULT);
}

Test(engine_wake_coalesce, bursts_around_the_largest_window_arrive_whole_over_tcp, .timeout = 120)
{
	stream_bursts("tcp://127.0.0.1:0", ZR__WAKE_COALESCE_MAX);
}

Test(engine_wake_coalesce, bursts_around_the_largest_window_arrive_whole_over_inproc,
     .timeout = 120)
{
	stream_bursts("inproc://wake-coalesce", ZR__WAKE_COALESCE_MAX);
}

Test(engine_wake_coalesce, bursts_with_coalescing_off_arrive_whole, .timeout = 120)
{
	stream_bursts("tcp://127.0.0.1:0", 0);
}
