/*
 * The utility part of zring's libzmq.so.5 drop-in: errors, version,
 * capabilities, Z85 and CURVE keys (on zring's codec helpers), stopwatch,
 * sleep and threads.
 */
#define _GNU_SOURCE
#include "zmq.h"

#include <zring/zring.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ZC_API __attribute__((visibility("default")))

ZC_API int
zmq_errno(void)
{
	return errno;
}

ZC_API const char *
zmq_strerror(int errnum)
{
	switch (errnum) {
	case EFSM:
		return "Operation cannot be accomplished in current state";
	case ENOCOMPATPROTO:
		return "The protocol is not compatible with the socket type";
	case ETERM:
		return "Context was terminated";
	case EMTHREAD:
		return "No thread available";
	default:
		return strerror(errnum);
	}
}

ZC_API void
zmq_version(int *major, int *minor, int *patch)
{
	if (major != NULL)
		*major = ZMQ_VERSION_MAJOR;
	if (minor != NULL)
		*minor = ZMQ_VERSION_MINOR;
	if (patch != NULL)
		*patch = ZMQ_VERSION_PATCH;
}

/* "zring" is this library's marker: zmq_version says 4.3.4 like the libzmq
 * it stands in for, and libzmq answers 0 for a capability it does not know,
 * so zmq_has("zring") (pyzmq: zmq.has("zring")) tells which one is loaded. */
ZC_API int
zmq_has(const char *capability)
{
	if (capability == NULL)
		return 0;
	return strcmp(capability, "ipc") == 0 || strcmp(capability, "curve") == 0 ||
	       strcmp(capability, "zring") == 0;
}

ZC_API char *
zmq_z85_encode(char *dest, const uint8_t *data, size_t size)
{
	if (dest == NULL || size % 4 != 0) {
		errno = EINVAL;
		return NULL;
	}
	/* libzmq's contract: dest holds size * 5 / 4 + 1 octets. */
	if (zr_z85_encode(dest, size / 4 * 5 + 1, data, size) < 0) {
		errno = EINVAL;
		return NULL;
	}
	return dest;
}

ZC_API uint8_t *
zmq_z85_decode(uint8_t *dest, const char *string)
{
	size_t len;

	if (dest == NULL || string == NULL) {
		errno = EINVAL;
		return NULL;
	}
	len = strlen(string);
	if (len == 0 || len % 5 != 0 || zr_z85_decode(dest, len / 5 * 4, string, len) < 0) {
		errno = EINVAL;
		return NULL;
	}
	return dest;
}

ZC_API int
zmq_curve_keypair(char *z85_public_key, char *z85_secret_key)
{
	int rc = zr_curve_keypair(z85_public_key, z85_secret_key);

	if (rc < 0) {
		errno = rc == -EINVAL ? EINVAL : ENOTSUP;
		return -1;
	}
	return 0;
}

ZC_API int
zmq_curve_public(char *z85_public_key, const char *z85_secret_key)
{
	int rc = zr_curve_public(z85_public_key, z85_secret_key);

	if (rc < 0) {
		errno = rc == -EINVAL ? EINVAL : ENOTSUP;
		return -1;
	}
	return 0;
}

/* ---- stopwatch, sleep, threads (libzmq's zmq_utils.h) ---------------------- */

static uint64_t
zc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

ZC_API void *
zmq_stopwatch_start(void)
{
	uint64_t *w = malloc(sizeof *w);

	if (w != NULL)
		*w = zc_now_us();
	return w;
}

ZC_API unsigned long
zmq_stopwatch_intermediate(void *watch)
{
	return watch == NULL ? 0 : (unsigned long)(zc_now_us() - *(uint64_t *)watch);
}

ZC_API unsigned long
zmq_stopwatch_stop(void *watch)
{
	unsigned long us = zmq_stopwatch_intermediate(watch);

	free(watch);
	return us;
}

ZC_API void
zmq_sleep(int seconds)
{
	struct timespec ts = {.tv_sec = seconds > 0 ? seconds : 0};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct zc_thread {
	pthread_t id;
	zmq_thread_fn *fn;
	void *arg;
};

static void *
zc_thread_main(void *p)
{
	struct zc_thread *t = p;

	t->fn(t->arg);
	return NULL;
}

ZC_API void *
zmq_threadstart(zmq_thread_fn *func, void *arg)
{
	struct zc_thread *t = malloc(sizeof *t);

	if (t == NULL)
		return NULL;
	t->fn = func;
	t->arg = arg;
	if (pthread_create(&t->id, NULL, zc_thread_main, t) != 0) {
		free(t);
		return NULL;
	}
	return t;
}

ZC_API void
zmq_threadclose(void *thread)
{
	struct zc_thread *t = thread;

	if (t == NULL)
		return;
	pthread_join(t->id, NULL);
	free(t);
}
