/*
 * zring <-> libzmq (pyzmq peers): REQ/REP, REQ/ROUTER, DEALER/REP and
 * DEALER/ROUTER, zring on either side, either side binding, over tcp:// and
 * ipc://. Requests and replies go in lockstep; a ROUTER sees the routing id
 * the peer set as frame 0 and routes the reply back by it; a zring REQ with
 * a request out refuses a second send with -EFSM.
 */
#include "scenarios.h"

ET_INTEROP(req_rep, req, rep, ZR_REQ, NULL, ZR_REP, NULL, sc_req_rep)
ET_INTEROP(req_router, req, router, ZR_REQ, sc_opt_q1, ZR_ROUTER, NULL, sc_req_router)
ET_INTEROP(dealer_rep, dealer, rep, ZR_DEALER, NULL, ZR_REP, NULL, sc_dealer_rep)
ET_INTEROP(dealer_router, dealer, router, ZR_DEALER, sc_opt_d1, ZR_ROUTER, NULL, sc_dealer_router)
