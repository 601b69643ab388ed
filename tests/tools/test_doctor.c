/*
 * `zring doctor`: the built tool run as a child, asked about a real Python
 * with pyzmq, once on the system's libzmq and once with LD_LIBRARY_PATH at
 * the build's libzmq.so.5 drop-in (compat/), and about such a Python already
 * running (--pid). It must name the file the process mapped (the drop-in's
 * own folder, or not) and say "zring drop-in: yes" only for the drop-in;
 * --expect turns that into the exit status.
 *
 * In an AddressSanitizer build the drop-in needs the sanitizer's runtime in
 * Python (not instrumented): Python is started through a small wrapper that
 * preloads it (ZR_ASAN_RUNTIME, set by compat/CMakeLists.txt), as the pyzmq
 * suite does.
 */
#define _GNU_SOURCE
#include "tool_proc.h"

#include <limits.h>
#include <sys/stat.h>

#define DROPIN_DIR ZR_BINARY_DIR "/compat"
#define PY_SCRIPT                   \
	"import sys, zmq\n"         \
	"zmq.zmq_version()\n"       \
	"print('up', flush=True)\n" \
	"sys.stdin.readline()\n"

static struct tool t;
static char python[PATH_MAX]; /* ZR_PYTHON, or the sanitizer wrapper around it */
static char dropin[PATH_MAX]; /* the drop-in's folder, resolved as maps shows it */
static char wrap_dir[64];

static void
setup(void)
{
	tool_reset(&t);
	if (access(DROPIN_DIR "/libzmq.so.5", R_OK) != 0)
		cr_skip_test("no drop-in in " DROPIN_DIR " (configured with -DZR_COMPAT=OFF)");
	if (access(ZR_PYTHON, X_OK) != 0)
		cr_skip_test("no " ZR_PYTHON);
	cr_assert_not_null(realpath(DROPIN_DIR, dropin));
	snprintf(python, sizeof python, "%s", ZR_PYTHON);
	wrap_dir[0] = '\0';
#ifdef ZR_ASAN_RUNTIME
	snprintf(wrap_dir, sizeof wrap_dir, "/tmp/zring-doctor-XXXXXX");
	cr_assert_not_null(mkdtemp(wrap_dir));
	snprintf(python, sizeof python, "%s/python", wrap_dir);
	FILE *f = fopen(python, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\nLD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0 exec %s \"$@\"\n",
	        ZR_ASAN_RUNTIME, ZR_PYTHON);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(python, 0755), 0);
#else
	if (TOOL_SANITIZED)
		cr_skip_test("sanitized drop-in, and no sanitizer runtime to preload into Python");
#endif
}

static void
teardown(void)
{
	tool_kill(&t);
	if (wrap_dir[0]) {
		unlink(python);
		rmdir(wrap_dir);
	}
}

TestSuite(doctor, .init = setup, .fini = teardown, .timeout = 120);

/* The value of "KEY: " on a line of out, into buf (empty if absent). */
static const char *
field(const char *out, const char *key, char *buf, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof pat, "%s: ", key);
	buf[0] = '\0';
	for (const char *p = out; (p = strstr(p, pat)) != NULL; p++)
		if (p == out || p[-1] == '\n') {
			p += strlen(pat);
			snprintf(buf, cap, "%.*s", (int)strcspn(p, "\n"), p);
			break;
		}
	return buf;
}

/* LD_LIBRARY_PATH for the children: the drop-in's folder, or none. */
static void
use_dropin(bool on)
{
	if (on)
		cr_assert_eq(setenv("LD_LIBRARY_PATH", DROPIN_DIR, 1), 0);
	else
		cr_assert_eq(unsetenv("LD_LIBRARY_PATH"), 0);
}

/* What doctor printed names the drop-in (or not) as the mapped library. */
static void
assert_verdict(bool on)
{
	char lib[PATH_MAX], buf[64];
	size_t dl = strlen(dropin);

	field(t.out, "libzmq", lib, sizeof lib);
	cr_assert(lib[0] == '/', "no libzmq line: %s / %s", t.out, t.err);
	bool in_dropin = strncmp(lib, dropin, dl) == 0 && lib[dl] == '/' &&
	                 strncmp(lib + dl + 1, "libzmq.so.5", 11) == 0;
	cr_assert_eq(in_dropin, on, "libzmq %s, drop-in folder %s", lib, dropin);
	cr_assert_str_eq(field(t.out, "zring drop-in", buf, sizeof buf), on ? "yes" : "no");
	cr_assert(strncmp(field(t.out, "zmq_version", buf, sizeof buf), "4.", 2) == 0,
	          "zmq_version: %s", buf);
}

Test(doctor, python_on_either_library)
{
	for (int on = 0; on < 2; on++) {
		use_dropin(on);
		tool_begin(&t, "doctor", "--python", python, NULL);
		cr_assert_eq(tool_wait(&t, WAIT_MS), 0, "stderr: %s", t.err);
		char buf[PATH_MAX + 64];
		cr_assert(strstr(field(t.out, "process", buf, sizeof buf), "(pyzmq ") != NULL, "%s",
		          t.out);
		assert_verdict(on);

		/* --expect: the exit status says whether it took effect. */
		tool_begin(&t, "doctor", "--python", python, "--expect", on ? "zring" : "libzmq",
		           NULL);
		cr_assert_eq(tool_wait(&t, WAIT_MS), 0, "stderr: %s", t.err);
		tool_begin(&t, "doctor", "--python", python, "--expect", on ? "libzmq" : "zring",
		           NULL);
		cr_assert_eq(tool_wait(&t, WAIT_MS), 1);
		cr_assert(strstr(t.err, "zring doctor: expected ") != NULL, "stderr: %s", t.err);
	}
}

Test(doctor, running_python_by_pid)
{
	for (int on = 0; on < 2; on++) {
		char *argv[] = {python, "-c", PY_SCRIPT, NULL};
		char line[64], pid_s[32];
		int in_fd, out_fd;

		use_dropin(on);
		pid_t py = tool_spawn(argv, &in_fd, &out_fd, NULL);
		/* Wait until it has imported zmq (its library is mapped). */
		size_t got = 0;
		while (got < 3) {
			struct pollfd p = {.fd = out_fd, .events = POLLIN};
			cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "python did not start");
			ssize_t n = read(out_fd, line + got, sizeof line - 1 - got);
			cr_assert(n > 0, "python exited");
			got += (size_t)n;
		}
		cr_assert(strncmp(line, "up\n", 3) == 0, "python said %.*s", (int)got, line);
		use_dropin(false); /* the doctor's own environment must not matter */
		snprintf(pid_s, sizeof pid_s, "%ld", (long)py);
		tool_begin(&t, "doctor", "--pid", pid_s, NULL);
		int st = tool_wait(&t, WAIT_MS);
		close(in_fd); /* Python ends */
		int pst;
		waitpid(py, &pst, 0);
		close(out_fd);
		cr_assert_eq(st, 0, "stdout: %s stderr: %s", t.out, t.err);
		assert_verdict(on);
	}
}

Test(doctor, process_without_libzmq)
{
	char pid_s[32];

	snprintf(pid_s, sizeof pid_s, "%ld", (long)getpid());
	tool_begin(&t, "doctor", "--pid", pid_s, NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 1);
	cr_assert(strstr(t.err, "has not loaded libzmq") != NULL, "stderr: %s", t.err);
	cr_assert(strstr(t.out, "libzmq: ") == NULL, "stdout: %s", t.out);
}

Test(doctor, bad_command_lines)
{
	tool_begin(&t, "doctor", "--pid", "abc", NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 2);
	tool_begin(&t, "doctor", "--pid", "1", "--python", ZR_PYTHON, NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 2);
	tool_begin(&t, "doctor", "--expect", "maybe", NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 2);
	tool_begin(&t, "doctor", "--python", "/nonexistent/python3", NULL);
	cr_assert_eq(tool_wait(&t, WAIT_MS), 1);
	cr_assert(strstr(t.err, "import zmq") != NULL, "stderr: %s", t.err);
}
