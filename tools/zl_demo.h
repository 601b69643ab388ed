/*
 * zring tools — `zring demo`: backpressure, end to end, in one process.
 *
 * On loopback, through the broker model's public API only: a producer floods
 * a queue whose handler is deliberately slow (the subscription stops reading
 * at read_ahead, the kernel buffers fill, TCP closes the window, the producer
 * waits), then a fan-out with a slow and a fast matching subscriber and one
 * that matches nothing. A live progress line, a summary table per phase and a
 * proof line: nothing published was lost or duplicated.
 */
#ifndef ZR_TOOLS_ZL_DEMO_H
#define ZR_TOOLS_ZL_DEMO_H

/* Runs `zring demo` with the arguments after "demo" (argv[0] is the first
 * option). Returns the exit status: 0 when the proof holds (every published
 * message received exactly once, the channel never deeper than read_ahead,
 * the TCP window seen closed in the queue phase), 1 otherwise or on a usage
 * error (the usage goes to stderr). --help prints the usage and returns 0. */
int zl_demo_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_DEMO_H */
