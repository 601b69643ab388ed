/*
 * zring <-> libzmq (pyzmq peers): PUSH/PULL and PAIR/PAIR, zring on either
 * side, either side binding, over tcp:// and ipc://. Every payload of
 * et_payloads (multipart, empty frames first/middle/last, 255/256-octet
 * frames, 1 MiB) arrives exactly once, byte for byte, in order.
 */
#include "scenarios.h"

ET_INTEROP(push_pull, push, pull, ZR_PUSH, NULL, ZR_PULL, NULL, sc_pipeline)
ET_INTEROP(pair_pair, pair, pair, ZR_PAIR, NULL, ZR_PAIR, NULL, sc_both_ways)
