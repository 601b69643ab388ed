/*
 * zring tools — `zring probe`: a conformance and robustness tester for any
 * ZMTP 3.x peer (probe/ holds the connection helpers and the case catalogue).
 */
#ifndef ZR_TOOLS_ZL_PROBE_H
#define ZR_TOOLS_ZL_PROBE_H

/* Exit statuses of `zring probe ENDPOINT`. */
#define ZL_PROBE_OK 0          /* no violation, crash, hang or degradation */
#define ZL_PROBE_FINDINGS 1    /* at least one of those */
#define ZL_PROBE_UNREACHABLE 2 /* the peer could not be reached at all */
#define ZL_PROBE_USAGE 3       /* bad command line */

/* Runs `zring probe` with the arguments after "probe"; returns the exit status. */
int zl_probe_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_PROBE_H */
