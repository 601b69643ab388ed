/*
 * zring <-> zring: every compatible socket-type pair, either side binding,
 * over tcp:// (two contexts) and ipc:// (one context), with the same
 * scenarios and payloads as the libzmq interop matrix.
 */
#include "scenarios.h"

ET_SELF(push_pull, push, pull, ZR_PUSH, NULL, ZR_PULL, NULL, sc_pipeline)
ET_SELF(pair_pair, pair, pair, ZR_PAIR, NULL, ZR_PAIR, NULL, sc_both_ways)
ET_SELF(req_rep, req, rep, ZR_REQ, NULL, ZR_REP, NULL, sc_req_rep)
ET_SELF(req_router, req, router, ZR_REQ, sc_opt_q1, ZR_ROUTER, NULL, sc_req_router)
ET_SELF(dealer_rep, dealer, rep, ZR_DEALER, NULL, ZR_REP, NULL, sc_dealer_rep)
ET_SELF(dealer_router, dealer, router, ZR_DEALER, sc_opt_d1, ZR_ROUTER, NULL, sc_dealer_router)
ET_SELF(dealer_dealer, dealer, dealer, ZR_DEALER, NULL, ZR_DEALER, NULL, sc_both_ways)
ET_SELF(router_router, router, router, ZR_ROUTER, sc_opt_ra, ZR_ROUTER, sc_opt_rb, sc_router_router)
ET_SELF(pub_sub, pub, sub, ZR_PUB, NULL, ZR_SUB, sc_opt_sub_a, sc_pub_sub)
ET_SELF(xpub_sub, xpub, sub, ZR_XPUB, NULL, ZR_SUB, sc_opt_sub_a, sc_xpub_sub)
ET_SELF(pub_xsub, pub, xsub, ZR_PUB, NULL, ZR_XSUB, NULL, sc_pub_xsub)
