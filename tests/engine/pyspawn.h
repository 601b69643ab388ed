/*
 * Starts a small pyzmq script (given inline) as a separate process that dies
 * with the test, and waits for it to print "up".
 */
#ifndef ZR_TESTS_ENGINE_PYSPAWN_H
#define ZR_TESTS_ENGINE_PYSPAWN_H

#include <criterion/criterion.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs ZR_PYTHON -c script arg; returns its pid once it printed "up\n". */
static inline pid_t
pyspawn(const char *script, const char *arg)
{
	int fds[2];
	pid_t pid;
	char buf[4] = {0};

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		execl(ZR_PYTHON, ZR_PYTHON, "-c", script, arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* Python may write "up" and the newline separately: read to the newline. */
	for (size_t n = 0; n < 3;) {
		ssize_t got = read(fds[0], buf + n, 3 - n);

		cr_assert_gt(got, 0, "the pyzmq peer did not start (is python3-zmq installed?)");
		n += (size_t)got;
	}
	cr_assert_str_eq(buf, "up\n");
	close(fds[0]);
	return pid;
}

static inline void
pykill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif /* ZR_TESTS_ENGINE_PYSPAWN_H */
