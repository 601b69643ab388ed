/*
 * Large messages: one 64 MiB message each way against libzmq (the default
 * MAXMSGSIZE is 64 MiB, and a message of exactly that size is allowed, as in
 * libzmq), and MAXMSGSIZE enforced on receive: a bigger message is never
 * delivered and the peer is dropped.
 */
#include "scenarios.h"

#include <pthread.h>

TestSuite(large, .fini = et_teardown, .timeout = 60);

#define MIB64 "g67108864,5"

Test(large, a_64_mib_message_from_zring_reaches_libzmq_over_tcp)
{
	struct et_side push, pull;

	et_pair(&push, ZR_PUSH, false, NULL, &pull, ZR_PULL, true, NULL, false, false);
	et_send(&push, "6869:" MIB64);
	et_send(&push, "656e64");
	const char *r = et_peer_ask(pull.p, 30000, "recv 30000");

	cr_assert_str_eq(r, "MSG 6869:" MIB64);
	et_expect(&pull, "656e64");
}

Test(large, a_64_mib_message_from_libzmq_reaches_zring_over_ipc)
{
	struct et_side push, pull;

	et_pair(&push, ZR_PUSH, true, NULL, &pull, ZR_PULL, false, NULL, true, true);
	const char *r = et_peer_ask(push.p, 30000, "send " MIB64);

	cr_assert_str_eq(r, "SENT");
	et_send(&push, "656e64");
	et_expect_within(&pull, MIB64, 30000);
	et_expect(&pull, "656e64");
}

/* MAXMSGSIZE 1000: 1000 octets pass, 1001 are refused (the connection
 * goes; libzmq does the same) and nothing of them is delivered. */
Test(large, maxmsgsize_refuses_a_message_one_octet_over_the_limit)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	int64_t max = 1000;

	cr_assert_eq(zr_setsockopt(pull, ZR_MAXMSGSIZE, &max, sizeof max), 0);
	struct et_side z = {.name = "zring PULL (MAXMSGSIZE 1000)", .z = pull},
		       p = {.name = "libzmq PUSH"};
	const char *ep = et_zbind(pull, false);

	p.p = et_peer_start("PUSH", "connect", ep, NULL);
	et_send(&p, "g1000,3");
	et_expect(&z, "g1000,3");
	et_send(&p, "g1001,4");
	et_expect_none(&z, ET_QUIET_MS);
}

/* The limit is on the whole message (zmtp.h: "the sum of a message's frame
 * sizes"; libzmq checks each frame alone): two frames of 600 exceed 1000. */
Test(large, maxmsgsize_counts_every_frame_of_a_message)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	int64_t max = 1000;

	cr_assert_eq(zr_setsockopt(pull, ZR_MAXMSGSIZE, &max, sizeof max), 0);
	struct et_side z = {.name = "zring PULL (MAXMSGSIZE 1000)", .z = pull},
		       p = {.name = "libzmq PUSH"};
	const char *ep = et_zbind(pull, false);

	p.p = et_peer_start("PUSH", "connect", ep, NULL);
	et_send(&p, "g500,3:g500,4");
	et_expect(&z, "g500,3:g500,4");
	et_send(&p, "g600,3:g600,4");
	et_expect_none(&z, ET_QUIET_MS);
}

/*
 * Large frame bodies are received straight into their message (after the
 * first piece, which comes through the connection's buffer): these runs mix
 * them with small frames and with messages whose large frames are followed
 * by more frames, with the receiver's queue full again and again (RCVHWM 2),
 * and check every octet.
 */
#define LARGE_MIX_N 60

static size_t
large_mix_size(unsigned i)
{
	static const size_t sizes[] = {1, 40000, 0, 65536, 32768, 300001, 7, 1048579, 100000};

	return sizes[i % (sizeof sizes / sizeof sizes[0])];
}

static uint8_t
large_mix_byte(unsigned i, size_t k)
{
	return (uint8_t)(i * 31u + k * 7u + (k >> 9));
}

/* The sending thread: NULL, or what failed (asserted by the test's thread). */
static void *
large_mix_send(void *arg)
{
	zr_socket *push = arg;

	for (unsigned i = 0; i < LARGE_MIX_N; i++) {
		size_t n = large_mix_size(i);
		uint8_t *body = malloc(n ? n : 1);
		zr_msg *m = NULL;
		bool ok = body != NULL && zr_msg_new(&m) == 0;

		for (size_t k = 0; ok && k < n; k++)
			body[k] = large_mix_byte(i, k);
		ok = ok && zr_msg_add(m, &i, sizeof i) == 0 && zr_msg_add(m, body, n) == 0;
		if (ok && i % 2 == 1) /* a small frame after the large one */
			ok = zr_msg_add(m, "tail", 4) == 0;
		ok = ok && zr_send(push, &m, 0) == 0;
		zr_msg_free(m);
		free(body);
		if (!ok)
			return "a message could not be made or sent";
	}
	return NULL;
}

Test(large, large_and_small_frames_interleaved_arrive_intact)
{
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	pthread_t t;

	et_zopt_int(pull, ZR_RCVHWM, 2);
	et_zopt_int(push, ZR_SNDTIMEO, 30000);
	cr_assert_eq(zr_connect(push, et_zbind(pull, false)), 0);
	cr_assert_eq(pthread_create(&t, NULL, large_mix_send, push), 0);
	for (unsigned i = 0; i < LARGE_MIX_N; i++) {
		size_t n = large_mix_size(i), len;
		zr_msg *m = NULL;
		const uint8_t *f;
		unsigned idx;

		if (i % 5 == 0)
			usleep(20 * 1000); /* let the queue fill: the connection pauses */
		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %u", i);
		cr_assert_eq(zr_msg_frames(m), i % 2 == 1 ? 3u : 2u, "message %u", i);
		f = zr_msg_frame(m, 0, &len);
		cr_assert_eq(len, sizeof idx);
		memcpy(&idx, f, sizeof idx);
		cr_assert_eq(idx, i);
		f = zr_msg_frame(m, 1, &len);
		cr_assert_eq(len, n, "message %u: %zu octets, want %zu", i, len, n);
		for (size_t k = 0; k < n; k++)
			if (f[k] != large_mix_byte(i, k))
				cr_assert_fail("message %u: octet %zu is 0x%02x, want 0x%02x", i, k,
				               f[k], large_mix_byte(i, k));
		if (i % 2 == 1) {
			f = zr_msg_frame(m, 2, &len);
			cr_assert_eq(len, 4);
			cr_assert_eq(memcmp(f, "tail", 4), 0);
		}
		zr_msg_free(m);
	}
	void *why;

	cr_assert_eq(pthread_join(t, &why), 0);
	cr_assert_null(why, "sender: %s", (const char *)why);
}

/* The same from libzmq: large frames between small ones, several per
 * message, each checked whole by its generator's seed. */
Test(large, large_frames_from_libzmq_between_small_ones_arrive_intact)
{
	static const char *const msgs[] = {
		"01:g300000,1:02",          "g70000,2",    "03",
		"g1048576,3:g40000,4:g1,5", "g65536,6:04", "g200000,7",
	};
	struct et_side push, pull;

	et_pair(&push, ZR_PUSH, true, NULL, &pull, ZR_PULL, false, NULL, false, false);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++)
			et_send(&push, msgs[i]);
		for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++)
			et_expect_within(&pull, msgs[i], 30000);
	}
}
