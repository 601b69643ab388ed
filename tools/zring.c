/*
 * zring — the command-line tool.
 *
 *   zring cat (-r|-w) ...    a ZeroMQ socket on stdin/stdout (zl_cat.c)
 *   zring subscribe ...      a broker subscription printing its deliveries
 *   zring publish ...        publish the lines of stdin (both zl_broker.c)
 *   zring demo [--quick]     the backpressure demo (zl_demo.c)
 *   zring probe ENDPOINT     test any ZMTP peer: conformance and robustness (zl_probe.c)
 *   zring bench [--quick]    zring beside libzmq: throughput and latency (zl_bench.c)
 *   zring keygen             a new CURVE key pair in Z85 (zl_keygen.c)
 *   zring doctor             which libzmq a Python or a process loaded (zl_doctor.c)
 *   zring version            print the version
 *   zring help               print the usage
 *
 * This file only dispatches to the commands. They use only the public
 * headers (<zring.h>) and what this directory shares: the option parser
 * (zl_args.c), the clock (zl_clock.h), the socket driver and peer processes
 * (zl_link.c, zl_proc.c); `cat` uses the socket API, `subscribe`, `publish`
 * and `demo` the broker model.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include <zring.h>

#include "zl_bench.h"
#include "zl_broker.h"
#include "zl_cat.h"
#include "zl_demo.h"
#include "zl_doctor.h"
#include "zl_keygen.h"
#include "zl_probe.h"

#ifndef ZR_TOOL_VERSION
#define ZR_TOOL_VERSION "0.0.0"
#endif

static const char usage_text[] =
	"usage: zring <command> [options]\n"
	"\n"
	"commands:\n"
	"  cat (-r|-w) (-b|-c) TYPE ENDPOINT... [options]\n"
	"                    a ZeroMQ socket on the command line: print what it\n"
	"                    receives, or send the lines of stdin (zring cat --help)\n"
	"  subscribe PATTERN ENDPOINT (-b|-c) [options]\n"
	"                    mount a handler on a broker endpoint (queue, fanout,\n"
	"                    rpc) and print every delivery (zring subscribe --help)\n"
	"  publish PATTERN ENDPOINT (-b|-c) --name NAME [options]\n"
	"                    publish every line of stdin; rpc: each line is a\n"
	"                    request, each reply is printed (zring publish --help)\n"
	"  demo [--quick]    the backpressure demo: a slow subscriber holds a fast\n"
	"                    publisher back, memory stays bounded, nothing is lost\n"
	"  probe [options] ENDPOINT\n"
	"                    test any ZMTP 3.x peer: over 100 named conformance and\n"
	"                    robustness cases, fuzzing, replay (zring probe --help);\n"
	"                    probe --self [--count N] checks our codec against pyzmq\n"
	"  bench [--quick] [--pairs N] [--only TEXT] [--out DIR] [--bin DIR]\n"
	"                    zring beside libzmq: throughput and latency, zring and\n"
	"                    libzmq alternately, medians and ratios; --pairs sets the\n"
	"                    runs per scenario, --only runs the scenarios whose name\n"
	"                    contains TEXT (needs the bench/ programs: build with\n"
	"                    -DZR_BENCH=ON)\n"
	"  keygen            print a new CURVE key pair (public:, secret:) in Z85\n"
	"  doctor [--python PATH | --pid PID] [--expect zring|libzmq]\n"
	"                    which libzmq a Python with pyzmq (or a running\n"
	"                    process) loaded, and whether it is zring's drop-in\n"
	"  version           print the version\n"
	"  help              print this help\n"
	"\n"
	"environment:\n"
	"  ZRING_TRACE=1     hex-dump every byte probe --self reads and writes\n";

static int
cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("zring %s (ZMTP 3.1 codec; mechanisms NULL, PLAIN)\n", ZR_TOOL_VERSION);
	return 0;
}

static int
cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs(usage_text, stdout);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{"cat", zl_cat_main},
	{"subscribe", zl_subscribe_main},
	{"publish", zl_publish_main},
	{"demo", zl_demo_main},
	{"probe", zl_probe_main},
	{"bench", zl_bench_main},
	{"keygen", zl_keygen_main},
	{"doctor", zl_doctor_main},
	{"version", cmd_version},
	{"--version", cmd_version},
	{"help", cmd_help},
	{"--help", cmd_help},
	{"-h", cmd_help},
};

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_text, stderr);
		return 1;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 2, argv + 2);
	fprintf(stderr, "zring: unknown command '%s'\n\n", argv[1]);
	fputs(usage_text, stderr);
	return 1;
}
