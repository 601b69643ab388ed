/*
 * `zring cat -w -b PUB` against a subscription flood, as a separate process
 * whose CPU time and peak memory /proc shows: a hand-written peer sends
 * 100,000 distinct SUBSCRIBE commands (1.6 MB); the PUB cuts it off at the
 * default ZR_SUBS_MAXBYTES and says so on stderr, its CPU time and peak
 * RSS stay bounded, and a libzmq SUB connecting afterwards is served.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The peer-process helper the zring tool and the interop tests share. */
#include "tools/zl_proc.c"

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/tools/peers/cat_peer.py"

#include "engine/raw_peer.h"

#include "tools/tool_proc.h"

#include "tools/tool_peer.h"

static struct tool tool;

static void
teardown(void)
{
	tool_peer_fini(&tool);
}

static void
setup(void)
{
	tool_peer_init(&tool);
}

TestSuite(cat_subs, .init = setup, .fini = teardown, .timeout = 180);

/* utime + stime of pid, in seconds. */
static double
proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f != NULL);
	size_t n = fread(buf, 1, sizeof buf - 1, f);

	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold spaces */

	cr_assert(p != NULL);
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st),
	             2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

#define FLOOD 100000

Test(cat_subs, a_subscribe_flood_is_cut_off_with_bounded_cpu_and_memory_and_a_sub_is_served_after)
{
	static char ep[256];
	size_t cap = (size_t)FLOOD * 32, len = 0;
	uint8_t *flood = malloc(cap);

	tool_begin(&tool, "cat", "-w", "-b", "PUB", "tcp://127.0.0.1:*", NULL);
	tool_stderr_after(&tool, "zring cat: bound to ", ep, sizeof ep, WAIT_MS);

	cr_assert(flood != NULL);
	for (int i = 0; i < FLOOD; i++) {
		char t[17];

		snprintf(t, sizeof t, "flood-%010d", i);
		len += rp_sub_encode(flood + len, 1, true, t, 16);
	}
	int fd = rp_connect(ep, 1);
	double cpu0 = proc_cpu_s(tool.pid);
	long rss0 = tool_proc_kib(tool.pid, "VmRSS");

	(void)rp_write_all(fd, flood, len); /* cut short when the PUB closes */
	free(flood);
	cr_assert(rp_closed(fd, WAIT_MS), "the flooding peer is still connected");
	close(fd);
	char why[256];

	tool_stderr_after(&tool, "zring cat: disconnected: ", why, sizeof why, WAIT_MS);
	cr_assert(strstr(why, "subscriptions over SUBS_MAXBYTES") != NULL, "reason: %s", why);

	double cpu = proc_cpu_s(tool.pid) - cpu0;
	long grew_kb = tool_proc_kib(tool.pid, "VmHWM") - rss0;

	/* Before the trie and the limits: 5.1 s of CPU for this flood (linear
	 * scans); now ~0.1 s. The bound is CPU time, not wall time: a loaded
	 * machine does not inflate it, a sanitizer does. */
	double cpu_max = TOOL_SANITIZED ? 20.0 : 2.0;

	cr_assert_lt(cpu, cpu_max, "the flood cost zring %.2f s of CPU", cpu);
	/* The limit bounds what the trie takes (16 MiB charged); the rest is
	 * the connection's buffers and the allocator's slack. A sanitizer's
	 * shadow memory and quarantine make the figure meaningless there. */
	if (!TOOL_SANITIZED)
		cr_assert_lt(grew_kb, 24 * 1024, "peak RSS grew by %ld kB", grew_kb);
	cr_log_info("flood: %.2f s CPU, peak RSS +%ld kB", cpu, grew_kb);

	/* A libzmq SUB connecting afterwards gets what is published. */
	peer_start("SUB", "connect", ep, "--subscribe", "", "--recv", "1", NULL);
	for (long long end = tool_now_ms() + WAIT_MS; tool_now_ms() < end;) {
		tool_write(&tool, "after\n", 6);
		int rc = zl_proc_readline(&peer, peer_line, sizeof peer_line, 100);

		if (rc >= 0) {
			cr_assert_str_eq(peer_line, "MSG [\"after\"]");
			return;
		}
		cr_assert(rc == -ETIMEDOUT || rc == -EAGAIN, "pyzmq peer: %s", strerror(-rc));
	}
	cr_assert_fail("the libzmq SUB got nothing after the flood");
}
