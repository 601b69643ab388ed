/*
 * zring tools — a child process spoken to by lines (a pyzmq peer).
 *
 * Shared by the zring tool and the interop tests (which compile zl_proc.c
 * into themselves). Uses only libc and POSIX; nothing from zring.
 *
 * The child gets a pipe as stdin and one as stdout; stderr is inherited, so
 * its tracebacks show where ours do. On Linux the child is also killed when
 * the thread that spawned it exits (PR_SET_PDEATHSIG), so a test that dies
 * mid-way leaves no peer behind. Writing to a child that is gone returns
 * -EPIPE (SIGPIPE is ignored process-wide by zl_proc_spawn).
 */
#ifndef ZR_TOOLS_ZL_PROC_H
#define ZR_TOOLS_ZL_PROC_H

#include <stddef.h>
#include <sys/types.h>

#define ZL_PROC_LINE_MAX 65536

struct zl_proc {
	pid_t pid;  /* 0 when none */
	int in_fd;  /* the child's stdin, write end */
	int out_fd; /* the child's stdout, read end */
	size_t len; /* bytes buffered in buf */
	char buf[ZL_PROC_LINE_MAX];
};

/* Starts argv[0] (a path, no PATH search) with argv. Returns 0 or -errno. */
int zl_proc_spawn(struct zl_proc *p, char *const argv[]);

/*
 * Reads the next line from the child's stdout into line (NUL-terminated,
 * without the newline). Returns its length, -ETIMEDOUT if no whole line came
 * within timeout_ms, -EPIPE at end of file, -EMSGSIZE if it does not fit.
 */
int zl_proc_readline(struct zl_proc *p, char *line, size_t cap, int timeout_ms);

/* Writes line and a newline to the child's stdin. Returns 0 or -errno. */
int zl_proc_writeline(struct zl_proc *p, const char *line);

/*
 * Ends the child: closes its stdin (it should exit by itself), waits up to
 * grace_ms, then SIGKILLs it; always reaps it and closes the pipes. Returns
 * the exit status as waitpid gives it, or -1 if it had to be killed.
 * Idempotent.
 */
int zl_proc_stop(struct zl_proc *p, int grace_ms);

#endif /* ZR_TOOLS_ZL_PROC_H */
