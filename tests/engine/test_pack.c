/*
 * Small frames are packed with their headers into one region of a batch,
 * large ones go by reference: a mix of both, in multipart messages, through
 * a receiver that holds back (short sends, batches cut inside a message),
 * checked octet by octet on arrival. (Interop with libzmq under the same
 * packing is in tests/interop and tests/engine's pyzmq tests.)
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sock_helpers.h"
#include <zring/zring.h>

/* Frame sizes around the packing threshold (ZR__CONN_SMALL_FRAME, 1024) and
 * the iovec / batch limits; 0 for empty frames. */
static const size_t pack_sizes[] = {1, 0, 1023, 1024, 1025, 5, 70000, 2, 64, 4096, 0, 3, 256};
#define PACK_NFRAMES (sizeof pack_sizes / sizeof pack_sizes[0])
#define PACK_MESSAGES 600

static uint8_t
pack_byte(unsigned msg, size_t frame, size_t i)
{
	return (uint8_t)(msg * 31u + frame * 7u + i);
}

/* The sender runs beside the receiver: its queues and the kernel's hold far
 * less than the 600 messages (the send blocks until the receiver reads). */
static void *
pack_sender(void *arg)
{
	zr_socket *push = arg;
	static uint8_t buf[70000];

	for (unsigned k = 0; k < PACK_MESSAGES; k++) {
		zr_msg *m;

		if (zr_msg_new(&m) < 0)
			return (void *)1;
		/* Every message a different number of frames: batches end anywhere. */
		for (size_t f = 0; f < 1 + k % PACK_NFRAMES; f++) {
			for (size_t i = 0; i < pack_sizes[f]; i++)
				buf[i] = pack_byte(k, f, i);
			if (zr_msg_add(m, buf, pack_sizes[f]) < 0)
				return (void *)1;
		}
		if (zr_send(push, &m, 0) < 0)
			return (void *)1;
	}
	return NULL;
}

Test(engine_pack, mixed_small_and_large_frames_arrive_byte_exact_through_a_slow_receiver)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	pthread_t th;
	void *failed;
	char ep[128];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVHWM, 4);    /* the receiver holds back: the sender's */
	sopt_int(pull, ZR_RCVBUF, 4096); /* batches are cut and sent short */
	sopt_int(push, ZR_SNDBUF, 4096);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	cr_assert_eq(pthread_create(&th, NULL, pack_sender, push), 0);

	for (unsigned k = 0; k < PACK_MESSAGES; k++) {
		zr_msg *m;

		if (k % 100 == 0)
			sleep_ms(20); /* let the sender run into a full window now and then */
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %u", k);
		cr_assert_eq(zr_msg_frames(m), 1 + k % PACK_NFRAMES, "message %u frames", k);
		for (size_t f = 0; f < zr_msg_frames(m); f++) {
			size_t len;
			const uint8_t *p = zr_msg_frame(m, f, &len);

			cr_assert_eq(len, pack_sizes[f], "message %u frame %zu length", k, f);
			for (size_t i = 0; i < len; i++)
				cr_assert_eq(p[i], pack_byte(k, f, i),
				             "message %u frame %zu octet %zu", k, f, i);
		}
		zr_msg_free(m);
	}
	cr_assert_eq(pthread_join(th, &failed), 0);
	cr_assert_null(failed, "the sender failed");
	sock_pair_free(ctx, push, pull);
}

/* One-frame messages around the 2-octet header's limit (255), which the
 * sender packs in one tight run (conn_tx_pack_run), broken every seventh
 * message by one of two frames, which ends a run. */
static const size_t run_sizes[] = {0, 1, 2, 254, 255, 256, 257, 600, 1024, 1025, 3, 64};
#define RUN_NSIZES (sizeof run_sizes / sizeof run_sizes[0])
#define RUN_MESSAGES 5000

static size_t
run_frames(unsigned k)
{
	return k % 7 == 6 ? 2 : 1;
}

static size_t
run_size(unsigned k, size_t f)
{
	return run_sizes[(k + f * 5) % RUN_NSIZES];
}

static void *
run_sender(void *arg)
{
	zr_socket *push = arg;
	uint8_t buf[1100];

	for (unsigned k = 0; k < RUN_MESSAGES; k++) {
		zr_msg *m;

		if (zr_msg_new(&m) < 0)
			return (void *)1;
		for (size_t f = 0; f < run_frames(k); f++) {
			size_t len = run_size(k, f);

			for (size_t i = 0; i < len; i++)
				buf[i] = pack_byte(k, f, i);
			if (zr_msg_add(m, buf, len) < 0)
				return (void *)1;
		}
		if (zr_send(push, &m, 0) < 0)
			return (void *)1;
	}
	return NULL;
}

/* Through a receiver whose queue holds 16: it pauses its connection again
 * and again with a buffer of messages still to decode. */
Test(engine_pack, runs_of_one_frame_messages_around_the_short_header_limit_arrive_byte_exact)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	pthread_t th;
	void *failed;
	char ep[128];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVHWM, 16);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	cr_assert_eq(pthread_create(&th, NULL, run_sender, push), 0);

	for (unsigned k = 0; k < RUN_MESSAGES; k++) {
		zr_msg *m;

		if (k % 1000 == 0)
			sleep_ms(20); /* the sender fills everything meanwhile */
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %u", k);
		cr_assert_eq(zr_msg_frames(m), run_frames(k), "message %u frames", k);
		for (size_t f = 0; f < zr_msg_frames(m); f++) {
			size_t len;
			const uint8_t *p = zr_msg_frame(m, f, &len);

			cr_assert_eq(len, run_size(k, f), "message %u frame %zu length", k, f);
			for (size_t i = 0; i < len; i++)
				cr_assert_eq(p[i], pack_byte(k, f, i),
				             "message %u frame %zu octet %zu", k, f, i);
		}
		zr_msg_free(m);
	}
	cr_assert_eq(pthread_join(th, &failed), 0);
	cr_assert_null(failed, "the sender failed");
	sock_pair_free(ctx, push, pull);
}

Test(engine_pack, a_burst_of_one_byte_messages_arrives_in_order)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	const unsigned n = 100000;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	for (unsigned k = 0; k < n; k++) {
		uint8_t b = (uint8_t)k;

		cr_assert_eq(zr_send_bytes(push, &b, 1, 0), 0);
	}
	for (unsigned k = 0; k < n; k++) {
		uint8_t b;

		cr_assert_eq(zr_recv_bytes(pull, &b, 1, 0), 1, "message %u", k);
		cr_assert_eq(b, (uint8_t)k, "message %u out of order", k);
	}
	sock_pair_free(ctx, push, pull);
}
