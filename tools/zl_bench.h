/*
 * zring tools — `zring bench`: zring and libzmq side by side.
 *
 * Runs the benchmark programs of bench/ (bench_zr, bench_zmq; built with
 * -DZR_BENCH=ON) as separate sender and receiver processes, zring and libzmq
 * alternately, and prints medians, ranges and zring/libzmq ratios per
 * scenario (and a CSV). See bench/README.md.
 */
#ifndef ZR_TOOLS_ZL_BENCH_H
#define ZR_TOOLS_ZL_BENCH_H

/* Runs `zring bench` with the arguments after "bench"; returns the exit
 * status: 0, 1 (a run failed: lost messages, a crash, a hang), 2 (usage). */
int zl_bench_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_BENCH_H */
