#include "probe.h"
#include "../zl_probe.h"
int pr_fuzz_mech(struct pr_ctx *c) { (void)c; return ZL_PROBE_USAGE; }
int pr_replay_mech(struct pr_ctx *c) { (void)c; return ZL_PROBE_USAGE; }
