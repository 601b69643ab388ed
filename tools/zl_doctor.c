/*
 * zring tools — `zring doctor` (see zl_doctor.h).
 *
 * The process's own mappings are the truth: whatever LD_LIBRARY_PATH,
 * rpath or ld.so.cache said, /proc/PID/maps names the libzmq file it runs.
 * Whether that file is zring's drop-in is then asked of the library itself:
 * for a Python started here, by Python (zmq.has("zring")); for --pid, by
 * loading the same file here and calling its zmq_has("zring"), as zmq_version
 * reports 4.3.x on both.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zl_doctor.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "zl_args.h"
#include "zl_proc.h"

#define DOCTOR_PYTHON "/usr/bin/python3"
#define DOCTOR_IMPORT_MS 30000 /* `import zmq` on a loaded machine */
#define DOCTOR_LIBS_MAX 4      /* distinct libzmq files one process maps */
#define DOCTOR_DELETED " (deleted)"

/* Python's side: what pyzmq says, then it waits (mapped) until stdin ends. */
static const char doctor_script[] =
	"import sys, zmq\n"
	"print('PYZMQ %s %s %d' % (zmq.pyzmq_version(), zmq.zmq_version(),"
	" 1 if zmq.has('zring') else 0), flush=True)\n"
	"sys.stdin.readline()\n";

static const char doctor_usage_text[] =
	"usage: zring doctor [--python PATH | --pid PID] [--expect zring|libzmq]\n"
	"\n"
	"Says which libzmq a Python with pyzmq loads (it starts PATH, default\n" DOCTOR_PYTHON
	", with this environment and `import zmq`), or which one\n"
	"the running process PID has loaded, read from /proc/PID/maps, and\n"
	"whether that is zring's libzmq.so.5 drop-in (its zmq_has(\"zring\") is 1;\n"
	"zmq_version says 4.3.x on both). For example:\n"
	"  LD_LIBRARY_PATH=<prefix>/lib/zring zring doctor\n"
	"prints\n"
	"  process: <pid> /usr/bin/python3 (pyzmq <version>)\n"
	"  libzmq: <prefix>/lib/zring/libzmq.so.5.2.4\n"
	"  zmq_version: 4.3.4\n"
	"  zring drop-in: yes\n"
	"Exit status: 0, or 1 when no libzmq is loaded, the process cannot be\n"
	"read, Python cannot import zmq, or the library is not the one --expect\n"
	"names; 2 for a bad command line.\n"
	"\n"
	"options:\n";

enum doctor_opt {
	DOCTOR_ARG_PYTHON,
	DOCTOR_ARG_PID,
	DOCTOR_ARG_EXPECT,
	DOCTOR_ARG_HELP,
};

static const struct zl_opt doctor_opts[] = {
	{DOCTOR_ARG_PYTHON, "python", 0, "PATH",
         "the Python to start and ask (default: " DOCTOR_PYTHON ")"},
	{DOCTOR_ARG_PID, "pid", 'p', "PID", "look at this running process instead"},
	{DOCTOR_ARG_EXPECT, "expect", 0, "WHICH",
         "exit 1 unless the library is zring's drop-in (zring)\n"
         "or not (libzmq)"},
	{DOCTOR_ARG_HELP, "help", 'h', NULL, "print this help"},
};

struct doctor_lib {
	char path[PATH_MAX];
	bool deleted; /* replaced or removed since it was mapped */
};

static void
doctor_usage(FILE *f)
{
	fputs(doctor_usage_text, f);
	zl_args_help(f, ZL_OPTS(doctor_opts));
}

static int doctor_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
doctor_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zl_verror("zring doctor: ", "\n", fmt, ap);
	va_end(ap);
	return 1;
}

/*
 * The distinct libzmq files (basename "libzmq.so...") pid maps, into libs.
 * Returns how many (0: none), or -errno if its maps cannot be read.
 */
static int
maps_libzmq(pid_t pid, struct doctor_lib *libs, int max)
{
	char name[64], line[PATH_MAX + 256];
	int n = 0;

	snprintf(name, sizeof name, "/proc/%ld/maps", (long)pid);
	FILE *f = fopen(name, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		const char *base = strrchr(path, '/') + 1;
		if (strncmp(base, "libzmq.so", 9) != 0)
			continue;
		size_t len = strlen(path), dl = strlen(DOCTOR_DELETED);
		bool deleted = len > dl && strcmp(path + len - dl, DOCTOR_DELETED) == 0;
		if (deleted)
			path[len - dl] = '\0';
		bool seen = false;
		for (int k = 0; k < n && !seen; k++)
			seen = strcmp(libs[k].path, path) == 0;
		if (seen || n == max)
			continue;
		snprintf(libs[n].path, sizeof libs[n].path, "%s", path);
		libs[n].deleted = deleted;
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Asks the library file itself: loads it here (apart from everything else,
 * RTLD_LOCAL) and calls its zmq_version and zmq_has("zring"). Returns 0, or
 * -1 with why in err. The library stays loaded until we exit: unloading a
 * C++ library that registered exit handlers is not worth the risk here.
 */
static int
ask_library(const char *path, char *version, size_t vcap, bool *zring, char *err, size_t ecap)
{
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);

	if (!h) {
		const char *e = dlerror();
		snprintf(err, ecap, "%s", e ? e : "dlopen failed");
		return -1;
	}
	void (*ver)(int *, int *, int *);
	int (*has)(const char *);
	ver = (void (*)(int *, int *, int *))dlsym(h, "zmq_version");
	has = (int (*)(const char *))dlsym(h, "zmq_has");
	if (!ver) {
		snprintf(err, ecap, "it has no zmq_version");
		return -1;
	}
	int major = 0, minor = 0, patch = 0;
	ver(&major, &minor, &patch);
	snprintf(version, vcap, "%d.%d.%d", major, minor, patch);
	*zring = has && has("zring") == 1; /* zmq_has is libzmq 4.1+ */
	return 0;
}

/* The verdict lines; returns the exit status for --expect. */
static int
report(const struct doctor_lib *lib, const char *version, bool zring, const char *expect)
{
	printf("libzmq: %s%s\n", lib->path, lib->deleted ? DOCTOR_DELETED : "");
	printf("zmq_version: %s\n", version);
	printf("zring drop-in: %s\n", zring ? "yes" : "no");
	if (expect && (strcmp(expect, "zring") == 0) != zring)
		return doctor_error("expected %s, found %s (%s)",
		                    zring ? "another libzmq" : "zring's drop-in",
		                    zring ? "zring's drop-in" : "another libzmq", lib->path);
	return 0;
}

static int
doctor_pid(pid_t pid, const char *expect)
{
	struct doctor_lib libs[DOCTOR_LIBS_MAX];
	char exe[PATH_MAX];
	int status = 0;

	int n = maps_libzmq(pid, libs, DOCTOR_LIBS_MAX);
	if (n < 0)
		return doctor_error("cannot read /proc/%ld/maps: %s", (long)pid, strerror(-n));
	char link[64];
	snprintf(link, sizeof link, "/proc/%ld/exe", (long)pid);
	ssize_t len = readlink(link, exe, sizeof exe - 1);
	exe[len > 0 ? len : 0] = '\0';
	printf("process: %ld%s%s\n", (long)pid, exe[0] ? " " : "", exe);
	if (n == 0)
		return doctor_error("process %ld has not loaded libzmq", (long)pid);
	for (int k = 0; k < n; k++) {
		char version[32], err[512];
		bool zring = false;
		if (libs[k].deleted) {
			printf("libzmq: %s%s\n", libs[k].path, DOCTOR_DELETED);
			status = doctor_error("%s was replaced or removed since the process loaded "
			                      "it: cannot tell which library it was",
			                      libs[k].path);
			continue;
		}
		if (ask_library(libs[k].path, version, sizeof version, &zring, err, sizeof err) <
		    0) {
			printf("libzmq: %s\n", libs[k].path);
			status = doctor_error("cannot ask %s: %s", libs[k].path, err);
			continue;
		}
		if (report(&libs[k], version, zring, expect) != 0)
			status = 1;
	}
	return status;
}

static int
doctor_python(const char *python, const char *expect)
{
	char *argv[] = {(char *)python, "-c", (char *)doctor_script, NULL};
	char line[512], pyzmq[64], version[32];
	struct doctor_lib libs[DOCTOR_LIBS_MAX];
	struct zl_proc *p = calloc(1, sizeof *p);
	int marker = 0, status;

	if (!p)
		return doctor_error("out of memory");
	int rc = zl_proc_spawn(p, argv);
	if (rc < 0) {
		free(p);
		return doctor_error("cannot start %s: %s", python, strerror(-rc));
	}
	rc = zl_proc_readline(p, line, sizeof line, DOCTOR_IMPORT_MS);
	if (rc < 0 || sscanf(line, "PYZMQ %63s %31s %d", pyzmq, version, &marker) != 3) {
		zl_proc_stop(p, 5000);
		free(p);
		return doctor_error("%s could not `import zmq` (%s): is pyzmq installed for it?",
		                    python, rc == -ETIMEDOUT ? "no answer" : "see above");
	}
	/* It has answered, so its libzmq is mapped: read it while it waits. */
	pid_t pid = p->pid;
	int n = maps_libzmq(pid, libs, DOCTOR_LIBS_MAX);
	zl_proc_stop(p, 5000);
	free(p);
	printf("process: %ld %s (pyzmq %s)\n", (long)pid, python, pyzmq);
	if (n < 0)
		return doctor_error("cannot read /proc/%ld/maps: %s", (long)pid, strerror(-n));
	if (n == 0)
		return doctor_error("pyzmq reports libzmq %s but no libzmq.so file is mapped (a "
		                    "pyzmq with libzmq built in?)",
		                    version);
	status = 0;
	for (int k = 0; k < n; k++)
		if (report(&libs[k], version, marker == 1, expect) != 0)
			status = 1;
	if (marker != 1 && !expect)
		printf("(to run it on zring: LD_LIBRARY_PATH=<the folder of zring's libzmq.so.5>, "
		       "<prefix>/lib/zring when installed)\n");
	return status;
}

int
zl_doctor_main(int argc, char **argv)
{
	const char *python = DOCTOR_PYTHON, *expect = NULL, *v;
	long long pid = 0;
	bool help = false, have_python = false;
	struct zl_args p;
	int id;

	zl_args_init(&p, ZL_OPTS(doctor_opts), argc, argv);
	while ((id = zl_args_next(&p, &v)) != ZL_ARG_END) {
		switch (id) {
		case DOCTOR_ARG_PYTHON:
			python = v;
			have_python = true;
			break;
		case DOCTOR_ARG_PID:
			if (!zl_parse_int(v, 1, INT_MAX, &pid)) {
				fprintf(stderr,
				        "zring doctor: --pid wants a process id, not '%s'\n\n", v);
				doctor_usage(stderr);
				return 2;
			}
			break;
		case DOCTOR_ARG_EXPECT:
			if (strcmp(v, "zring") != 0 && strcmp(v, "libzmq") != 0) {
				fprintf(stderr,
				        "zring doctor: --expect wants zring or libzmq, not "
				        "'%s'\n\n",
				        v);
				doctor_usage(stderr);
				return 2;
			}
			expect = v;
			break;
		case DOCTOR_ARG_HELP:
			help = true;
			break;
		case ZL_ARG_ERROR:
			fprintf(stderr, "zring doctor: %s\n\n", p.error);
			doctor_usage(stderr);
			return 2;
		default:
			fprintf(stderr, "zring doctor: unexpected argument '%s'\n\n", v);
			doctor_usage(stderr);
			return 2;
		}
	}
	if (help) {
		doctor_usage(stdout);
		return 0;
	}
	if (pid && have_python) {
		fprintf(stderr, "zring doctor: --pid and --python exclude each other\n\n");
		doctor_usage(stderr);
		return 2;
	}
	int status = pid ? doctor_pid((pid_t)pid, expect) : doctor_python(python, expect);
	fflush(stdout);
	return status;
}
