/*
 * Engine tests: one scenario per compatible socket-type pair. Each takes two
 * connected sides (engine_util.h), whichever is zring or libzmq and whichever
 * bound, and asserts exact messages, exact order and exact counts.
 */
#ifndef ZR_TESTS_ENGINE_SCENARIOS_H
#define ZR_TESTS_ENGINE_SCENARIOS_H

#include "engine_util.h"

#define ET_REPLY "7265706c79" /* "reply" */

/* The reply a server sends for request p: p with "reply" appended. */
static inline char *
sc_reply(const char *p)
{
	return et_join(p, ET_REPLY);
}

/* PUSH a -> PULL b: every payload, in order, then nothing more. */
static inline void
sc_pipeline(struct et_side *a, struct et_side *b)
{
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_send(a, et_payloads[i]);
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_expect(b, et_payloads[i]);
	et_expect_none(b, ET_QUIET_MS);
}

/* Both ways, each in order (PAIR/PAIR, DEALER/DEALER). */
static inline void
sc_both_ways(struct et_side *a, struct et_side *b)
{
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_send(a, et_payloads[i]);
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_send(b, et_payloads[ET_NPAYLOADS - 1 - i]);
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_expect(b, et_payloads[i]);
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_expect(a, et_payloads[ET_NPAYLOADS - 1 - i]);
	et_expect_none(a, ET_QUIET_MS);
	et_expect_none(b, 50);
}

/* A zring REQ with a request out refuses a second one, and a zring REQ
 * without one refuses to receive. */
static inline void
sc_req_second_send_is_efsm(struct et_side *req)
{
	if (req->z == NULL)
		return;
	int rc = zr_send_bytes(req->z, "x", 1, 0);

	cr_assert_eq(rc, -EFSM, "REQ sent twice: %d (%s), want -EFSM", rc, zr_strerror(rc));
}

/* REQ a <-> REP b, lockstep. */
static inline void
sc_req_rep(struct et_side *a, struct et_side *b)
{
	if (a->z != NULL) {
		zr_msg *m = NULL;
		int rc = zr_recv(a->z, &m, ZR_DONTWAIT);

		cr_assert_eq(rc, -EFSM, "REQ receiving before sending: %d, want -EFSM", rc);
	}
	if (b->z != NULL) {
		int rc = zr_send_bytes(b->z, "x", 1, 0);

		cr_assert_eq(rc, -EFSM, "REP sending before a request: %d, want -EFSM", rc);
	}
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *reply = sc_reply(et_payloads[i]);

		et_send(a, et_payloads[i]);
		sc_req_second_send_is_efsm(a);
		et_expect(b, et_payloads[i]);
		et_send(b, reply);
		et_expect(a, reply);
		free(reply);
	}
	et_expect_none(b, ET_QUIET_MS);
}

/* REQ a (routing id "Q1") <-> ROUTER b: b sees [Q1, "", request]. */
static inline void
sc_req_router(struct et_side *a, struct et_side *b)
{
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *in = et_join("5131:", et_payloads[i]); /* Q1, delimiter, body */
		char *reply = sc_reply(et_payloads[i]);
		char *out = et_join("5131:", reply);

		et_send(a, et_payloads[i]);
		sc_req_second_send_is_efsm(a);
		et_expect(b, in);
		et_send(b, out);
		et_expect(a, reply);
		free(in);
		free(reply);
		free(out);
	}
	et_expect_none(b, ET_QUIET_MS);
}

/* DEALER a <-> REP b: the DEALER writes the empty delimiter itself. */
static inline void
sc_dealer_rep(struct et_side *a, struct et_side *b)
{
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *req = et_join("", et_payloads[i]);
		char *reply = sc_reply(et_payloads[i]);
		char *back = et_join("", reply);

		et_send(a, req);
		et_expect(b, et_payloads[i]);
		et_send(b, reply);
		et_expect(a, back);
		free(req);
		free(reply);
		free(back);
	}
	et_expect_none(a, ET_QUIET_MS);
}

/* DEALER a (routing id "D1") <-> ROUTER b: b sees [D1, body], routes back. */
static inline void
sc_dealer_router(struct et_side *a, struct et_side *b)
{
	for (size_t i = 0; i < ET_NPAYLOADS; i++)
		et_send(a, et_payloads[i]);
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *in = et_join("4431", et_payloads[i]);
		char *reply = sc_reply(et_payloads[i]);
		char *out = et_join("4431", reply);

		et_expect(b, in);
		et_send(b, out);
		et_expect(a, reply);
		free(in);
		free(reply);
		free(out);
	}
	et_expect_none(b, ET_QUIET_MS);
}

/* ROUTER a ("RA") <-> ROUTER b ("RB"): each addresses the other by the
 * routing id the other set, and sees the sender's id as frame 0. */
static inline void
sc_router_router(struct et_side *a, struct et_side *b)
{
	et_sync2(a, b, "5242:70726f6265", "5241:70726f6265", "5242:66656e6365", "5241:66656e6365");
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *to_b = et_join("5242", et_payloads[i]),
		     *at_b = et_join("5241", et_payloads[i]);

		et_send(a, to_b);
		et_expect(b, at_b);
		et_send(b, at_b); /* back to RA */
		et_expect(a, to_b);
		free(to_b);
		free(at_b);
	}
	et_expect_none(a, ET_QUIET_MS);
	et_expect_none(b, 50);
}

/*
 * PUB-like a -> SUB-like b subscribed to "A" (0x41) only: after the slow
 * joiner is synced, every payload under topic "A" arrives in order and none
 * of the interleaved ones under "B", under an empty topic or starting with
 * "B" does.
 */
static inline void
sc_pub_filtered(struct et_side *a, struct et_side *b)
{
	et_sync(a, b, "41:70726f6265", "41:66656e6365");
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *yes = et_join("41", et_payloads[i]), *no = et_join("42", et_payloads[i]);

		et_send(a, no);
		et_send(a, yes);
		et_send(a, ":41");  /* empty topic frame: no match */
		et_send(a, "4241"); /* "BA": no match */
		free(yes);
		free(no);
	}
	et_send(a, "4142"); /* "AB": a prefix match */
	for (size_t i = 0; i < ET_NPAYLOADS; i++) {
		char *yes = et_join("41", et_payloads[i]);

		et_expect(b, yes);
		free(yes);
	}
	et_expect(b, "4142");
	et_expect_none(b, ET_QUIET_MS);
}

/* PUB a -> SUB b (subscribed "A" by option). */
static inline void
sc_pub_sub(struct et_side *a, struct et_side *b)
{
	sc_pub_filtered(a, b);
}

/*
 * Expects want at a while giving the libzmq peer pump time in its API: a
 * libzmq socket attaches a pipe (and a SUB sends its subscriptions) only
 * while its own thread calls into it, so a bound libzmq SUB left idle never
 * subscribes. pump must receive nothing meanwhile.
 */
static inline void
sc_expect_pumped(struct et_side *a, const char *want, struct et_side *pump)
{
	uint64_t deadline = zt_now_ms() + ET_WAIT_MS;
	char *w = et_canon(want);

	for (;;) {
		char *got = et_recv(a, 50);

		if (got != NULL) {
			cr_assert_str_eq(got, w, "%s received [%.200s], want [%s]", a->name, got,
			                 w);
			free(got);
			break;
		}
		cr_assert_lt(zt_now_ms(), deadline, "%s: nothing received, want [%s]", a->name, w);
		if (pump->p != NULL)
			et_expect_none(pump, 10);
	}
	free(w);
}

/* XPUB a -> SUB b (subscribed "A"): a receives the subscription as 0x01 "A". */
static inline void
sc_xpub_sub(struct et_side *a, struct et_side *b)
{
	sc_expect_pumped(a, "0141", b);
	sc_pub_filtered(a, b);
	et_expect_none(a, 50);
}

/* PUB a -> XSUB b, which subscribes by sending 0x01 "A". */
static inline void
sc_pub_xsub(struct et_side *a, struct et_side *b)
{
	et_send(b, "0141");
	sc_pub_filtered(a, b);
}

static const char *const sc_opt_q1[] = {"identity=5131", NULL};
static const char *const sc_opt_d1[] = {"identity=4431", NULL};
static const char *const sc_opt_ra[] = {"identity=5241", NULL};
static const char *const sc_opt_rb[] = {"identity=5242", NULL};
static const char *const sc_opt_sub_a[] = {"sub=41", NULL};

/* One run: connect the two sides, play the scenario. */
#define ET_RUN(ta, apy, oa, tb, bpy, ob, abinds, ipc, sc)                   \
	do {                                                                \
		struct et_side sa_, sb_;                                    \
		et_pair(&sa_, ta, apy, oa, &sb_, tb, bpy, ob, abinds, ipc); \
		sc(&sa_, &sb_);                                             \
	} while (0)

/* zring on either side, either side binding, over one transport. */
#define ET_INTEROP_TR(suite, a, b, ta, oa, tb, ob, sc, tr, ipc)                                 \
	Test(suite, zring_##a##_bound_libzmq_##b##_##tr, .fini = et_teardown, .timeout = 40)    \
	{                                                                                       \
		ET_RUN(ta, false, oa, tb, true, ob, true, ipc, sc);                             \
	}                                                                                       \
	Test(suite, zring_##a##_connects_libzmq_##b##_##tr, .fini = et_teardown, .timeout = 40) \
	{                                                                                       \
		ET_RUN(ta, false, oa, tb, true, ob, false, ipc, sc);                            \
	}                                                                                       \
	Test(suite, libzmq_##a##_bound_zring_##b##_##tr, .fini = et_teardown, .timeout = 40)    \
	{                                                                                       \
		ET_RUN(ta, true, oa, tb, false, ob, true, ipc, sc);                             \
	}                                                                                       \
	Test(suite, libzmq_##a##_connects_zring_##b##_##tr, .fini = et_teardown, .timeout = 40) \
	{                                                                                       \
		ET_RUN(ta, true, oa, tb, false, ob, false, ipc, sc);                            \
	}

/* The 8 interop runs of a pair a/b. */
#define ET_INTEROP(suite, a, b, ta, oa, tb, ob, sc)                \
	ET_INTEROP_TR(suite, a, b, ta, oa, tb, ob, sc, tcp, false) \
	ET_INTEROP_TR(suite, a, b, ta, oa, tb, ob, sc, ipc, true)

/* The 4 zring <-> zring runs of a pair a/b (two contexts over tcp, one over ipc). */
#define ET_SELF(suite, a, b, ta, oa, tb, ob, sc)                                              \
	Test(suite, zring_##a##_bound_zring_##b##_tcp, .fini = et_teardown, .timeout = 40)    \
	{                                                                                     \
		ET_RUN(ta, false, oa, tb, false, ob, true, false, sc);                        \
	}                                                                                     \
	Test(suite, zring_##a##_connects_zring_##b##_tcp, .fini = et_teardown, .timeout = 40) \
	{                                                                                     \
		ET_RUN(ta, false, oa, tb, false, ob, false, false, sc);                       \
	}                                                                                     \
	Test(suite, zring_##a##_bound_zring_##b##_ipc, .fini = et_teardown, .timeout = 40)    \
	{                                                                                     \
		ET_RUN(ta, false, oa, tb, false, ob, true, true, sc);                         \
	}                                                                                     \
	Test(suite, zring_##a##_connects_zring_##b##_ipc, .fini = et_teardown, .timeout = 40) \
	{                                                                                     \
		ET_RUN(ta, false, oa, tb, false, ob, false, true, sc);                        \
	}

#endif /* ZR_TESTS_ENGINE_SCENARIOS_H */
