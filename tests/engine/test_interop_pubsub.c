/*
 * zring <-> libzmq (pyzmq peers): PUB/SUB, XPUB/SUB and PUB/XSUB, zring on
 * either side, either side binding, over tcp:// and ipc://. The subscriber
 * takes topic "A" only; once a probe got through (the slow joiner), every
 * payload under "A" arrives in order and nothing under "B", an empty topic
 * or "BA" ever does. An XPUB sees the subscription as 0x01 "A".
 */
#include "scenarios.h"

ET_INTEROP(pub_sub, pub, sub, ZR_PUB, NULL, ZR_SUB, sc_opt_sub_a, sc_pub_sub)
ET_INTEROP(xpub_sub, xpub, sub, ZR_XPUB, NULL, ZR_SUB, sc_opt_sub_a, sc_xpub_sub)
ET_INTEROP(pub_xsub, pub, xsub, ZR_PUB, NULL, ZR_XSUB, NULL, sc_pub_xsub)
