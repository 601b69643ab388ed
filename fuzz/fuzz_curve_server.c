/*
 * Fuzz harness: the CurveZMQ core (zmtp/curve.h) as the server. A real peer
 * runs the other side with fixed keys and randomness; the input mutates
 * every command that reaches the server (HELLO/INITIATE/MESSAGE for the server,
 * WELCOME/READY/MESSAGE for the client). Input layout and oracles:
 * fuzz_curve.h.
 */
#include "fuzz_curve.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fc_run(data, size, true);
	return 0;
}
