/*
 * Fuzz harness: the connection codec as a null client (ZR_MECH_NULL, as_server
 * false), fed a peer's stream. Input layout and checks: fuzz_role.h and
 * fuzz_conn_driver.h.
 */
#include "fuzz_role.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	role_fuzz(data, size, ZR_MECH_NULL, false);
	return 0;
}
