/*
 * Corpus replay: the main() a harness is linked with when it is not built
 * with libFuzzer. Each argument is a file or a directory (its regular files,
 * not recursing); every file is passed once to LLVMFuzzerTestOneInput. A
 * harness that finds a broken invariant aborts, so getting to the end means
 * every input passed. Exits nonzero when an argument cannot be read or no
 * input was found at all (an empty corpus would otherwise pass silently).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay_file(const char *path, size_t *count)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (cap - len < 4096) {
			uint8_t *q = realloc(buf, cap + 65536);

			if (q == NULL) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = q;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* An exact-size copy, as libFuzzer hands it, so ASan sees over-reads. */
	{
		uint8_t *exact = malloc(len);

		if (exact == NULL && len == 0)
			exact = malloc(1);
		if (exact == NULL) {
			free(buf);
			return -1;
		}
		if (len > 0)
			memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	(*count)++;
	return 0;
}

static int
replay_dir(const char *path, size_t *count)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int rc = 0;

	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char *full;
		struct stat st;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		n = strlen(path) + 1 + strlen(e->d_name) + 1;
		full = malloc(n);
		if (full == NULL) {
			rc = -1;
			break;
		}
		snprintf(full, n, "%s/%s", path, e->d_name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(full, count) < 0)
				rc = -1;
		}
		free(full);
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	size_t count = 0;
	int i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (replay_dir(argv[i], &count) < 0)
				rc = 1;
		} else if (replay_file(argv[i], &count) < 0) {
			rc = 1;
		}
	}
	printf("%s: replayed %zu inputs\n", argv[0], count);
	if (count == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		rc = 1;
	}
	return rc;
}
