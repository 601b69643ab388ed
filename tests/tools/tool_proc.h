/*
 * The built `zring` tool as a child process, for the CLI tests: pipes on its
 * three standard streams, bounded waits, everything it printed kept for the
 * assertions. Static inline; include after <criterion/criterion.h>. It
 * defines ZRING (the tool's path, from the build's ZR_BINARY_DIR), ZR_PYTHON
 * and WAIT_MS (the bound of every wait).
 *
 *   static struct tool t;                         // tool_reset(&t) in setup
 *   tool_begin(&t, "cat", "-r", "-b", "PULL", ep, NULL);
 *   tool_input(&t, "x\n", 2);                     // stdin, then end of input
 *   cr_assert_eq(tool_wait(&t, WAIT_MS), 0);      // its exit status
 *   cr_assert_str_eq(t.out, "...");
 *   tool_kill(&t);                                // in teardown
 */
#ifndef ZR_TESTS_TOOLS_TOOL_PROC_H
#define ZR_TESTS_TOOLS_TOOL_PROC_H

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_BINARY_DIR
#error "tests/CMakeLists.txt defines ZR_BINARY_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define ZRING ZR_BINARY_DIR "/tools/zring"

/* 1 in a sanitizer build: its shadow memory and quarantine make RSS figures
 * meaningless and every octet slower, so memory bounds are not asserted and
 * volumes are smaller there. */
#if defined(__SANITIZE_ADDRESS__)
#define TOOL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define TOOL_SANITIZED 1
#endif
#endif
#ifndef TOOL_SANITIZED
#define TOOL_SANITIZED 0
#endif
/* Generous: two cores shared by every build and test of the project. */
#define WAIT_MS 20000

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct tool {
	const char *cmd; /* the subcommand, for messages */
	pid_t pid;       /* 0: none, or reaped */
	int in_fd, out_fd, err_fd;
	char out[1 << 16];
	size_t out_len;
	char err[1 << 14];
	size_t err_len;
};

static inline long long
tool_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void
tool_fd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* No process, no pipes (call before the first start). */
static inline void
tool_reset(struct tool *t)
{
	t->pid = 0;
	t->in_fd = t->out_fd = t->err_fd = -1;
}

/* Kills a tool still running and closes its pipes. */
static inline void
tool_kill(struct tool *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
	tool_fd_close(&t->in_fd);
	tool_fd_close(&t->out_fd);
	tool_fd_close(&t->err_fd);
}

/* Starts argv[0] with pipes on its stdin, stdout and stderr (the parent's
 * ends in *in_fd, *out_fd and *err_fd; err_fd NULL: its stderr is dropped).
 * The child dies with the test process. */
static inline pid_t
tool_spawn(char *const argv[], int *in_fd, int *out_fd, int *err_fd)
{
	int in[2], out[2], err[2];

	cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
	          pipe2(err, O_CLOEXEC) == 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		/* Not the pipes of other children or the test's own sockets: each
		 * child must see its own stdin close, each socket its own close. */
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	*in_fd = in[1];
	*out_fd = out[0];
	if (err_fd != NULL)
		*err_fd = err[0];
	else
		close(err[0]);
	return pid;
}

/* Starts `zring CMD ARG...`: first, then the NULL-terminated rest in ap. */
static inline void
tool_vbegin(struct tool *t, const char *cmd, const char *first, va_list ap)
{
	char *argv[40];
	int argc = 0;

	cr_assert(t->pid == 0);
	argv[argc++] = (char *)ZRING;
	argv[argc++] = (char *)cmd;
	for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
		cr_assert(argc < 39);
		argv[argc++] = (char *)a;
	}
	argv[argc] = NULL;

	t->pid = tool_spawn(argv, &t->in_fd, &t->out_fd, &t->err_fd);
	t->cmd = cmd;
	t->out_len = t->err_len = 0;
	t->out[0] = t->err[0] = '\0';
}

static inline void
tool_begin(struct tool *t, const char *cmd, ...)
{
	va_list ap;

	va_start(ap, cmd);
	tool_vbegin(t, cmd, va_arg(ap, const char *), ap);
	va_end(ap);
}

/* Reads whatever the tool wrote within timeout_ms. Returns false once both
 * its stdout and stderr are at end of file. */
static inline bool
tool_pump(struct tool *t, int timeout_ms)
{
	struct pollfd p[2] = {{.fd = t->out_fd, .events = POLLIN},
	                      {.fd = t->err_fd, .events = POLLIN}};
	if (t->out_fd < 0 && t->err_fd < 0)
		return false;
	if (poll(p, 2, timeout_ms) <= 0)
		return true;
	for (int i = 0; i < 2; i++) {
		int *fd = i == 0 ? &t->out_fd : &t->err_fd;
		char *buf = i == 0 ? t->out : t->err;
		size_t *len = i == 0 ? &t->out_len : &t->err_len;
		size_t cap = i == 0 ? sizeof(t->out) : sizeof(t->err);

		if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t n = read(*fd, buf + *len, cap - 1 - *len);
		if (n <= 0) {
			tool_fd_close(fd);
			continue;
		}
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return true;
}

/* Writes len bytes to the tool's stdin (keeps it open). */
static inline void
tool_write(struct tool *t, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(t->in_fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break; /* EPIPE: it exited; its status tells the test why */
		off += (size_t)n;
	}
}

/* Writes len bytes to the tool's stdin and closes it (end of input). */
static inline void
tool_input(struct tool *t, const char *data, size_t len)
{
	tool_write(t, data, len);
	tool_fd_close(&t->in_fd);
}

/* Waits for the tool to exit; returns its exit status. Fails the test if it
 * is still running after timeout_ms. */
static inline int
tool_wait(struct tool *t, int timeout_ms)
{
	long long deadline = tool_now_ms() + timeout_ms;
	int status;

	tool_fd_close(&t->in_fd);
	while (tool_now_ms() < deadline) {
		if (!tool_pump(t, 20)) {
			pid_t r = waitpid(t->pid, &status, WNOHANG);
			if (r == t->pid) {
				t->pid = 0;
				cr_assert(WIFEXITED(status), "zring %s died by signal %d", t->cmd,
				          WIFSIGNALED(status) ? WTERMSIG(status) : -1);
				return WEXITSTATUS(status);
			}
			usleep(10000);
		}
	}
	cr_assert_fail("zring %s still running after %d ms; stdout: %s; stderr: %s", t->cmd,
	               timeout_ms, t->out, t->err);
	return -1;
}

/* Waits (up to timeout_ms) for a stderr line "TAG<text>" and copies <text>
 * into buf. */
static inline const char *
tool_stderr_after(struct tool *t, const char *tag, char *buf, size_t cap, int timeout_ms)
{
	long long deadline = tool_now_ms() + timeout_ms;
	size_t tlen = strlen(tag);

	while (tool_now_ms() < deadline) {
		const char *hit = strstr(t->err, tag);
		const char *nl = hit != NULL ? strchr(hit, '\n') : NULL;
		if (nl != NULL) {
			size_t n = (size_t)(nl - hit) - tlen;
			cr_assert(n < cap);
			memcpy(buf, hit + tlen, n);
			buf[n] = '\0';
			return buf;
		}
		if (!tool_pump(t, 50))
			break;
	}
	cr_assert_fail("zring %s did not print \"%s...\"; stderr: %s", t->cmd, tag, t->err);
	return NULL;
}

static inline size_t
tool_count_char(const char *s, size_t len, char c)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == c;
	return n;
}

/* A figure of /proc/PID/status in KiB ("VmRSS", "VmHWM"), or -1 if the
 * process or the field is gone. */
static inline long
tool_status_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The same, failing the test if the figure is missing. */
static inline long
tool_proc_kib(pid_t pid, const char *field)
{
	long v = tool_status_kib(pid, field);

	cr_assert_geq(v, 0, "no %s in /proc/%d/status", field, (int)pid);
	return v;
}

#endif /* ZR_TESTS_TOOLS_TOOL_PROC_H */
