/*
 * zring <-> libzmq (pyzmq peers): DEALER/DEALER and ROUTER/ROUTER (each
 * ROUTER addressing the other by the routing id it set), zring on either
 * side, either side binding, over tcp:// and ipc://.
 */
#include "scenarios.h"

ET_INTEROP(dealer_dealer, dealer, dealer, ZR_DEALER, NULL, ZR_DEALER, NULL, sc_both_ways)
ET_INTEROP(router_router, router, router, ZR_ROUTER, sc_opt_ra, ZR_ROUTER, sc_opt_rb,
           sc_router_router)
