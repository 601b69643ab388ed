/*
 * TLS tests: certificates made by the openssl command
 * (tests/tls/make_certs.sh) in a fresh directory per test and removed after
 * it, and peer processes (openssl, stunnel) spawned with pipes. Static
 * inline; needs mkdtemp (_POSIX_C_SOURCE 200809L or _GNU_SOURCE before the
 * first system header); used by tests/tls and by tests/broker/test_tls.c.
 */
#ifndef ZR_TESTS_TLS_TLS_TEST_H
#define ZR_TESTS_TLS_TLS_TEST_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

struct tt_certs {
	char dir[64];
};

static inline void
tt_certs_make(struct tt_certs *c)
{
	char cmd[512];

	snprintf(c->dir, sizeof(c->dir), "/tmp/zr-tls-XXXXXX");
	cr_assert_not_null(mkdtemp(c->dir));
	snprintf(cmd, sizeof(cmd), "sh '%s/tests/tls/make_certs.sh' '%s' 2>'%s/make.log'",
	         ZR_SOURCE_DIR, c->dir, c->dir);
	cr_assert_eq(system(cmd), 0, "make_certs.sh failed, see %s/make.log", c->dir);
}

static inline void
tt_certs_remove(struct tt_certs *c)
{
	char cmd[128];

	if (c->dir[0] == '\0')
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	(void)!system(cmd);
}

/* Paths into the directory; each call has its own slot, 8 live at once. */
static inline const char *
tt_path(const struct tt_certs *c, const char *name)
{
	static char slot[8][128];
	static unsigned next;
	char *p = slot[next++ % 8];

	snprintf(p, 128, "%s/%s", c->dir, name);
	return p;
}

/* Spawns argv with stdin and stdout on pipes (*in_fd we write, *out_fd we
 * read) and stderr to the file errlog; returns its pid. */
static inline pid_t
tt_spawn(char *const argv[], const char *errlog, int *in_fd, int *out_fd)
{
	int pin[2], pout[2];
	pid_t pid;

	cr_assert_eq(pipe(pin), 0);
	cr_assert_eq(pipe(pout), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int e = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(pin[0], 0);
		dup2(pout[1], 1);
		if (e >= 0)
			dup2(e, 2);
		close(pin[1]);
		close(pout[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	*in_fd = pin[1];
	*out_fd = pout[0];
	return pid;
}

#endif
