/*
 * Routing details, each in its smallest form: ROUTER routing ids (the peer's
 * own, or one generated for a peer without one), ROUTER_MANDATORY, XPUB
 * unsubscriptions when a subscriber leaves, messages of many frames.
 */
#include "scenarios.h"

TestSuite(router, .fini = et_teardown, .timeout = 30);
TestSuite(xpub, .fini = et_teardown, .timeout = 30);
TestSuite(frames, .fini = et_teardown, .timeout = 30);

Test(router, sees_the_routing_id_a_zring_dealer_set)
{
	struct et_side d, r;

	et_pair(&d, ZR_DEALER, false, sc_opt_d1, &r, ZR_ROUTER, false, NULL, false, false);
	et_send(&d, "68656c6c6f");
	et_expect(&r, "4431:68656c6c6f");
}

Test(router, sees_the_routing_id_a_libzmq_dealer_set)
{
	struct et_side d, r;

	et_pair(&d, ZR_DEALER, true, sc_opt_d1, &r, ZR_ROUTER, false, NULL, false, false);
	et_send(&d, "68656c6c6f");
	et_expect(&r, "4431:68656c6c6f");
}

/* A libzmq DEALER without a routing id: the zring ROUTER names it 0x00 +
 * four octets (RFC 37's reserved form) and a reply by that name gets there. */
Test(router, routes_replies_to_a_peer_without_an_id_by_the_generated_one)
{
	struct et_side d, r;
	zr_msg *m = NULL;
	size_t len;

	et_pair(&d, ZR_DEALER, true, NULL, &r, ZR_ROUTER, false, NULL, false, false);
	et_send(&d, "6869");
	cr_assert_eq(zr_recv(r.z, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 2);
	const uint8_t *id = zr_msg_frame(m, 0, &len);

	cr_assert_eq(len, 5, "generated id of %zu octets", len);
	cr_assert_eq(id[0], 0);
	zr_msg *reply;

	cr_assert_eq(zr_msg_new(&reply), 0);
	cr_assert_eq(zr_msg_add(reply, id, len), 0);
	cr_assert_eq(zr_msg_add(reply, "yo", 2), 0);
	zr_msg_free(m);
	cr_assert_eq(zr_send(r.z, &reply, 0), 0);
	et_expect(&d, "796f");
}

/* Two peers, two ids: each reply goes to the peer it names, only there. */
Test(router, routes_each_reply_to_the_peer_it_names)
{
	struct et_side d1, r, d2;
	static const char *const opt_d2[] = {"identity=4432", NULL};

	et_pair(&d1, ZR_DEALER, true, sc_opt_d1, &r, ZR_ROUTER, false, NULL, false, false);
	d2.name = "libzmq DEALER D2";
	d2.z = NULL;
	d2.p = et_peer_start("DEALER", "connect", d1.p->line + 9, opt_d2); /* d1 connected there */
	et_send(&d1, "31");
	et_send(&d2, "32");
	char *x = et_recv(&r, ET_WAIT_MS), *y = et_recv(&r, ET_WAIT_MS);

	cr_assert(x != NULL && y != NULL);
	cr_assert((strcmp(x, "4431:31") == 0 && strcmp(y, "4432:32") == 0) ||
	                  (strcmp(x, "4432:32") == 0 && strcmp(y, "4431:31") == 0),
	          "ROUTER got [%s] and [%s]", x, y);
	free(x);
	free(y);
	et_send(&r, "4432:746f2032");
	et_send(&r, "4431:746f2031");
	et_expect(&d2, "746f2032");
	et_expect(&d1, "746f2031");
	et_expect_none(&d1, ET_QUIET_MS);
	et_expect_none(&d2, 50);
}

/* zring.h: "ROUTER_MANDATORY: unknown peer -> -EHOSTUNREACH". */
Test(router, mandatory_refuses_an_unknown_peer_with_ehostunreach)
{
	zr_socket *r = et_zopen(0, ZR_ROUTER);

	et_zopt_int(r, ZR_ROUTER_MANDATORY, 1);
	et_zbind(r, false);
	int rc = zr_send_bytes(r, "nobody", 6, ZR_DONTWAIT);

	cr_assert_eq(rc, -EHOSTUNREACH, "send to an unknown peer: %d (%s)", rc, zr_strerror(rc));
}

/* With ROUTER_MANDATORY a known peer is still reached. */
Test(router, mandatory_still_routes_to_a_known_peer)
{
	struct et_side d, r;

	et_pair(&d, ZR_DEALER, true, sc_opt_d1, &r, ZR_ROUTER, false, NULL, false, false);
	et_zopt_int(r.z, ZR_ROUTER_MANDATORY, 1);
	et_send(&d, "6869");
	et_expect(&r, "4431:6869");
	et_send(&r, "4431:6f6b");
	et_expect(&d, "6f6b");
}

/* Without ROUTER_MANDATORY a message for an unknown peer is dropped quietly
 * and does not reach anyone else. */
Test(router, drops_a_message_for_an_unknown_peer)
{
	struct et_side d, r;

	et_pair(&d, ZR_DEALER, true, sc_opt_d1, &r, ZR_ROUTER, false, NULL, false, false);
	et_send(&d, "6869");
	et_expect(&r, "4431:6869");
	et_send(&r, "4439:6c6f7374"); /* D9: nobody */
	et_send(&r, "4431:6f6b");
	et_expect(&d, "6f6b");
	et_expect_none(&d, ET_QUIET_MS);
}

/* A subscriber that leaves takes its subscription with it: the XPUB hears
 * 0x00 "A" (as libzmq's XPUB reports it). */
Test(xpub, reports_the_unsubscription_of_a_subscriber_that_left)
{
	struct et_side x, s;

	et_pair(&x, ZR_XPUB, false, NULL, &s, ZR_SUB, false, sc_opt_sub_a, true, false);
	et_expect(&x, "0141");
	et_zclose(s.z);
	et_expect(&x, "0041");
	/* And the XPUB still works: a new subscriber is heard. */
	zr_socket *s2 = et_zopen(1, ZR_SUB);
	char ep[256];
	size_t len = sizeof ep;

	cr_assert_eq(zr_getsockopt(x.z, ZR_LAST_ENDPOINT, ep, &len), 0);
	cr_assert_eq(zr_setsockopt(s2, ZR_SUBSCRIBE, "B", 1), 0);
	cr_assert_eq(zr_connect(s2, ep), 0);
	et_expect(&x, "0142");
}

/* A libzmq SUB that unsubscribes: the zring XPUB hears 0x00 "A". */
Test(xpub, reports_a_libzmq_subscriber_going_away)
{
	struct et_side x, s;

	et_pair(&x, ZR_XPUB, false, NULL, &s, ZR_SUB, true, sc_opt_sub_a, true, false);
	et_expect(&x, "0141");
	et_peers_stop();
	et_expect(&x, "0041");
}

/* A message of many frames (more than fit one sendmsg's iovec budget) is
 * sent whole. */
static void
many_frames(bool py_receiver, int n)
{
	struct et_side a, b;
	struct et_str s = {0};

	for (int i = 0; i < n; i++)
		et_str_add(&s, "%s%02x", i > 0 ? ":" : "", i & 0xff);
	et_pair(&a, ZR_PUSH, false, NULL, &b, ZR_PULL, py_receiver, NULL, false, false);
	et_send(&a, s.p);
	et_send(&a, "656e64"); /* "end" */
	et_expect(&b, s.p);
	et_expect(&b, "656e64");
	free(s.p);
}

Test(frames, a_message_of_64_frames_reaches_zring)
{
	many_frames(false, 64);
}

Test(frames, a_message_of_200_frames_reaches_zring)
{
	many_frames(false, 200);
}

Test(frames, a_message_of_200_frames_reaches_libzmq)
{
	many_frames(true, 200);
}

/* libzmq -> zring, 200 frames. */
Test(frames, a_message_of_200_frames_from_libzmq_reaches_zring)
{
	struct et_side a, b;
	struct et_str s = {0};

	for (int i = 0; i < 200; i++)
		et_str_add(&s, "%s%02x", i > 0 ? ":" : "", i & 0xff);
	et_pair(&a, ZR_PUSH, true, NULL, &b, ZR_PULL, false, NULL, false, false);
	et_send(&a, s.p);
	et_expect(&b, s.p);
	free(s.p);
}
