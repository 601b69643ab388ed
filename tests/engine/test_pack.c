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

/* A stream of messages of a given shape: how many frames message k has, and
 * how long frame f of it is. Its octets are pack_byte's. */
struct shape {
	unsigned messages;
	size_t (*frames)(unsigned k);
	size_t (*size)(unsigned k, size_t f);
	zr_socket *push;
};

static uint8_t
pack_byte(unsigned msg, size_t frame, size_t i)
{
	return (uint8_t)(msg * 31u + frame * 7u + i);
}

/* The sender runs beside the receiver: its queues and the kernel's hold far
 * less than the stream (the send blocks until the receiver reads). */
static void *
shape_sender(void *arg)
{
	const struct shape *sh = arg;
	static uint8_t buf[70000];

	for (unsigned k = 0; k < sh->messages; k++) {
		zr_msg *m;

		if (zr_msg_new(&m) < 0)
			return (void *)1;
		for (size_t f = 0; f < sh->frames(k); f++) {
			size_t len = sh->size(k, f);

			for (size_t i = 0; i < len; i++)
				buf[i] = pack_byte(k, f, i);
			if (zr_msg_add(m, buf, len) < 0)
				return (void *)1;
		}
		if (zr_send(sh->push, &m, 0) < 0)
			return (void *)1;
	}
	return NULL;
}

/* The stream from a PUSH to a PULL over tcp, through a receiver that holds
 * back (RCVHWM rcvhwm; with small_bufs, 4 KiB kernel buffers on both
 * sides, so the sender's batches are cut and sent short) and stops for a
 * moment every pause_every messages, checked octet by octet on arrival. */
static void
shape_check(struct shape *sh, int rcvhwm, bool small_bufs, unsigned pause_every)
{
	zr_ctx *ctx;
	zr_socket *pull;
	pthread_t th;
	void *failed;
	char ep[128];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &sh->push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVHWM, rcvhwm);
	if (small_bufs) {
		sopt_int(pull, ZR_RCVBUF, 4096);
		sopt_int(sh->push, ZR_SNDBUF, 4096);
	}
	sock_bind_connect(pull, "tcp://127.0.0.1:*", sh->push, ep, sizeof ep);
	cr_assert_eq(pthread_create(&th, NULL, shape_sender, sh), 0);

	for (unsigned k = 0; k < sh->messages; k++) {
		zr_msg *m;

		if (k % pause_every == 0)
			sleep_ms(20); /* let the sender run into a full window now and then */
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %u", k);
		cr_assert_eq(zr_msg_frames(m), sh->frames(k), "message %u frames", k);
		for (size_t f = 0; f < zr_msg_frames(m); f++) {
			size_t len;
			const uint8_t *p = zr_msg_frame(m, f, &len);

			cr_assert_eq(len, sh->size(k, f), "message %u frame %zu length", k, f);
			for (size_t i = 0; i < len; i++)
				cr_assert_eq(p[i], pack_byte(k, f, i),
				             "message %u frame %zu octet %zu", k, f, i);
		}
		zr_msg_free(m);
	}
	cr_assert_eq(pthread_join(th, &failed), 0);
	cr_assert_null(failed, "the sender failed");
	sock_pair_free(ctx, sh->push, pull);
}

/* Frame sizes around the packing threshold (ZR__CONN_SMALL_FRAME, 1024) and
 * the iovec / batch limits; 0 for empty frames. Every message a different
 * number of frames: batches end anywhere. */
static const size_t pack_sizes[] = {1, 0, 1023, 1024, 1025, 5, 70000, 2, 64, 4096, 0, 3, 256};
#define PACK_NFRAMES (sizeof pack_sizes / sizeof pack_sizes[0])

static size_t
mixed_frames(unsigned k)
{
	return 1 + k % PACK_NFRAMES;
}

static size_t
mixed_size(unsigned k, size_t f)
{
	(void)k;
	return pack_sizes[f];
}

Test(engine_pack, mixed_small_and_large_frames_arrive_byte_exact_through_a_slow_receiver)
{
	struct shape sh = {.messages = 600, .frames = mixed_frames, .size = mixed_size};

	shape_check(&sh, 4, true, 100);
}

/* One-frame messages around the 2-octet header's limit (255), which the
 * sender packs in one tight run (conn_tx_pack_run), broken every seventh
 * message by one of two frames, which ends a run. */
static const size_t run_sizes[] = {0, 1, 2, 254, 255, 256, 257, 600, 1024, 1025, 3, 64};
#define RUN_NSIZES (sizeof run_sizes / sizeof run_sizes[0])

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

/* Through a receiver whose queue holds 16: it pauses its connection again
 * and again with a buffer of messages still to decode. */
Test(engine_pack, runs_of_one_frame_messages_around_the_short_header_limit_arrive_byte_exact)
{
	struct shape sh = {.messages = 5000, .frames = run_frames, .size = run_size};

	shape_check(&sh, 16, false, 1000);
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
