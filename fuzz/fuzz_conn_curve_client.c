/*
 * Fuzz harness: the connection codec as a CURVE client, fed a stream a real
 * CURVE server codec encrypts as the input steers it. Input layout and
 * checks: fuzz_conn_curve.h.
 */
#include "fuzz_conn_curve.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fcs_fuzz(data, size, false);
	return 0;
}
