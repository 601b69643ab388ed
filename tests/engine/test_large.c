/*
 * Large messages: one 64 MiB message each way against libzmq (the default
 * MAXMSGSIZE is 64 MiB, and a message of exactly that size is allowed, as in
 * libzmq), and MAXMSGSIZE enforced on receive: a bigger message is never
 * delivered and the peer is dropped.
 */
#include "scenarios.h"

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
