/*
 * Byte budgets bound a stalled sender whatever the message size: with a
 * receiver that never reads, a PUSH of 256 KiB messages takes only what its
 * own send queue (SNDBYTES), its peer's queue (SNDBYTES), the kernel buffers
 * and the receiver's queue (RCVBYTES) hold, far fewer than SNDHWM messages.
 * Then every message it took arrives once, in order.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sock_helpers.h"
#include <zring/zring.h>

#define S_MSG (256 * 1024)

Test(engine_sndbytes, a_stalled_push_of_large_messages_holds_bytes_not_sndhwm_messages)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	char *buf = calloc(1, S_MSG);
	int accepted = 0, quiet_ms = 0;

	cr_assert_not_null(buf);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVHWM, 64);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	/* Send without waiting until the sender has refused for a whole second. */
	while (quiet_ms < 1000 && accepted < 1000) {
		memcpy(buf, &accepted, sizeof accepted);
		if (zr_send_bytes(push, buf, S_MSG, ZR_DONTWAIT) == 0) {
			accepted++;
			quiet_ms = 0;
		} else {
			sleep_ms(10);
			quiet_ms += 10;
		}
	}
	/* SNDHWM (1000) would let all 1000 in; the budgets hold about 8 MiB in
	 * each of the two send queues and the receive queue, plus the kernel's
	 * buffers (a few MiB each way): ~150 messages. */
	cr_assert_lt(accepted, 400, "a stalled sender took %d messages of 256 KiB", accepted);
	cr_assert_gt(accepted, 32, "only %d taken: the budgets are too tight", accepted);
	for (int i = 0; i < accepted; i++) {
		int seq = -1;

		sopt_int(pull, ZR_RCVTIMEO, 10000);
		cr_assert_eq(zr_recv_bytes(pull, buf, S_MSG, 0), S_MSG, "message %d", i);
		memcpy(&seq, buf, sizeof seq);
		cr_assert_eq(seq, i, "message %d carried %d", i, seq);
	}
	zr_socket_close(push);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
	free(buf);
}
