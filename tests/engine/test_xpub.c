/*
 * XPUB hands subscriptions to the app, and when a subscriber goes away it
 * hands over one cancel per subscription it held (RFC 29).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/zring.h>

Test(engine_xpub, hands_over_subscriptions_and_a_cancel_for_each_when_the_subscriber_leaves)
{
	zr_ctx *ctx;
	zr_socket *x, *sub;
	char ep[128];
	size_t len = sizeof ep;
	int t = 5000, zero = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_XPUB, &x), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub), 0);
	cr_assert_eq(zr_setsockopt(x, ZR_RCVTIMEO, &t, sizeof t), 0);
	cr_assert_eq(zr_bind(x, "tcp://127.0.0.1:0"), 0);
	cr_assert_eq(zr_getsockopt(x, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "B", 1), 0);
	cr_assert_eq(zr_connect(sub, ep), 0);

	/* Order between topics is not promised; collect both. */
	char seen[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char buf[8];
		int n = zr_recv_bytes(x, buf, sizeof buf, 0);

		cr_assert_eq(n, 2, "subscription %d: %d (%s)", i, n, n < 0 ? zr_strerror(n) : "");
		cr_assert_eq(buf[0], 1);
		cr_assert(buf[1] == 'A' || buf[1] == 'B');
		seen[buf[1] - 'A'] = 1;
	}
	cr_assert(seen[0] && seen[1]);

	/* A second subscription to A is counted on the SUB side: no new wire
	 * message (the set did not change), so the XPUB sees nothing new. */
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "A", 1), 0);
	cr_assert_eq(zr_recv_bytes(x, (char[8]){0}, 8, ZR_DONTWAIT), -EAGAIN);

	zr_setsockopt(sub, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(sub);
	char cancelled[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char buf[8];
		int n = zr_recv_bytes(x, buf, sizeof buf, 0);

		cr_assert_eq(n, 2, "cancel %d: %d (%s)", i, n, n < 0 ? zr_strerror(n) : "");
		cr_assert_eq(buf[0], 0, "a cancel starts with 0x00");
		cancelled[buf[1] - 'A'] = 1;
	}
	cr_assert(cancelled[0] && cancelled[1]);
	zr_setsockopt(x, ZR_LINGER, &zero, sizeof zero);
	zr_socket_close(x);
	zr_ctx_free(ctx);
}
