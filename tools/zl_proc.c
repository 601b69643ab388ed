/* zring tools — a child process spoken to by lines. See zl_proc.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zl_proc.h"
#include "zl_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
zl_proc_spawn(struct zl_proc *p, char *const argv[])
{
	int in[2], out[2];

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		return -e;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return -e;
	}
	if (pid == 0) {
		/* Die with the parent; if it is already gone, do not start. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->pid = pid;
	p->in_fd = in[1];
	p->out_fd = out[0];
	return 0;
}

int
zl_proc_readline(struct zl_proc *p, char *line, size_t cap, int timeout_ms)
{
	long long deadline = (long long)zl_now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		if (nl != NULL) {
			size_t n = (size_t)(nl - p->buf);
			if (n + 1 > cap)
				return -EMSGSIZE;
			memcpy(line, p->buf, n);
			line[n] = '\0';
			p->len -= n + 1;
			memmove(p->buf, nl + 1, p->len);
			return (int)n;
		}
		if (p->len == sizeof(p->buf))
			return -EMSGSIZE;
		if (p->out_fd < 0)
			return -EPIPE;
		long long left = deadline - (long long)zl_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
		int rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc <= 0)
			continue;
		ssize_t got = read(p->out_fd, p->buf + p->len, sizeof(p->buf) - p->len);
		if (got < 0 && errno != EINTR)
			return -errno;
		if (got == 0)
			return -EPIPE;
		if (got > 0)
			p->len += (size_t)got;
	}
}

int
zl_proc_writeline(struct zl_proc *p, const char *line)
{
	size_t len = strlen(line);
	const char *parts[2] = {line, "\n"};
	size_t lens[2] = {len, 1};

	if (p->in_fd < 0)
		return -EPIPE;
	for (int i = 0; i < 2; i++) {
		size_t off = 0;
		while (off < lens[i]) {
			ssize_t n = write(p->in_fd, parts[i] + off, lens[i] - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			off += (size_t)n;
		}
	}
	return 0;
}

int
zl_proc_stop(struct zl_proc *p, int grace_ms)
{
	int status = -1;

	if (p->in_fd >= 0)
		close(p->in_fd);
	p->in_fd = -1;
	if (p->pid > 0) {
		long long deadline = (long long)zl_now_ms() + grace_ms;
		pid_t r;
		while ((r = waitpid(p->pid, &status, WNOHANG)) == 0 &&
		       (long long)zl_now_ms() < deadline)
			zl_sleep_ms(10);
		if (r == 0) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			status = -1;
		}
		p->pid = 0;
	}
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->out_fd = -1;
	return status;
}
