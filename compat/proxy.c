/*
 * zmq_proxy, zmq_proxy_steerable and zmq_device for zring's libzmq.so.5
 * drop-in, on the zmq.h API alone (zmq_poll and frame-at-a-time transfer).
 *
 * As libzmq 4.3's proxy: messages go whole from the side that has one to the
 * other (every frame, in order, each copied to capture first when there is
 * one); control commands are "PAUSE" (stop moving messages), "RESUME",
 * "TERMINATE" (return 0) and "STATISTICS" (answered with eight uint64 frames:
 * frontend messages and bytes in, messages and bytes out, then the backend's;
 * messages count frames, as libzmq's). A blocked destination blocks the
 * proxy, as in libzmq.
 */
#include "zmq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define ZC_API __attribute__((visibility("default")))

struct zc_proxy_stats {
	uint64_t msg_in, bytes_in, msg_out, bytes_out;
};

/* Moves one whole message from -> to (and a copy to capture). 0 or -1. */
static int
zc_forward(void *from, void *to, void *capture, struct zc_proxy_stats *from_st,
           struct zc_proxy_stats *to_st)
{
	zmq_msg_t msg;
	int more;

	if (zmq_msg_init(&msg) < 0)
		return -1;
	do {
		size_t n;
		int size = zmq_msg_recv(&msg, from, 0);

		if (size < 0)
			goto fail;
		more = zmq_msg_more(&msg);
		from_st->msg_in++;
		from_st->bytes_in += (uint64_t)size;
		if (capture != NULL) {
			zmq_msg_t copy;

			zmq_msg_init(&copy);
			if (zmq_msg_copy(&copy, &msg) < 0 ||
			    zmq_msg_send(&copy, capture, more ? ZMQ_SNDMORE : 0) < 0) {
				zmq_msg_close(&copy);
				goto fail;
			}
		}
		n = zmq_msg_size(&msg);
		if (zmq_msg_send(&msg, to, more ? ZMQ_SNDMORE : 0) < 0)
			goto fail;
		to_st->msg_out++;
		to_st->bytes_out += n;
	} while (more);
	zmq_msg_close(&msg);
	return 0;
fail:
	zmq_msg_close(&msg);
	return -1;
}

enum zc_proxy_state {
	ZC_ACTIVE,
	ZC_PAUSED,
	ZC_TERMINATED
};

/* Reads one command off control and acts on it. 0 or -1. */
static int
zc_command(void *control, enum zc_proxy_state *state, const struct zc_proxy_stats st[2])
{
	char cmd[16];
	int more;
	size_t more_len = sizeof more;
	int n = zmq_recv(control, cmd, sizeof cmd, 0);

	if (n < 0)
		return -1;
	/* A command is one frame; drop any further ones. */
	while (zmq_getsockopt(control, ZMQ_RCVMORE, &more, &more_len) == 0 && more) {
		char junk[1];

		if (zmq_recv(control, junk, sizeof junk, 0) < 0)
			return -1;
	}
	if (n == 5 && memcmp(cmd, "PAUSE", 5) == 0) {
		*state = ZC_PAUSED;
	} else if (n == 6 && memcmp(cmd, "RESUME", 6) == 0) {
		*state = ZC_ACTIVE;
	} else if (n == 9 && memcmp(cmd, "TERMINATE", 9) == 0) {
		*state = ZC_TERMINATED;
	} else if (n == 10 && memcmp(cmd, "STATISTICS", 10) == 0) {
		const uint64_t v[8] = {st[0].msg_in,    st[0].bytes_in, st[0].msg_out,
		                       st[0].bytes_out, st[1].msg_in,   st[1].bytes_in,
		                       st[1].msg_out,   st[1].bytes_out};

		for (int i = 0; i < 8; i++)
			if (zmq_send(control, &v[i], sizeof v[i], i < 7 ? ZMQ_SNDMORE : 0) < 0)
				return -1;
	}
	/* libzmq ignores unknown commands. */
	return 0;
}

ZC_API int
zmq_proxy_steerable(void *frontend, void *backend, void *capture, void *control)
{
	struct zc_proxy_stats st[2] = {{0}};
	enum zc_proxy_state state = ZC_ACTIVE;
	zmq_pollitem_t items[3];
	int nitems = 0;
	int fi, bi = -1, ci = -1;

	if (frontend == NULL || backend == NULL) {
		errno = EFAULT;
		return -1;
	}
	fi = nitems;
	items[nitems++] = (zmq_pollitem_t){.socket = frontend, .events = ZMQ_POLLIN};
	if (backend != frontend) {
		bi = nitems;
		items[nitems++] = (zmq_pollitem_t){.socket = backend, .events = ZMQ_POLLIN};
	}
	if (control != NULL) {
		ci = nitems;
		items[nitems++] = (zmq_pollitem_t){.socket = control, .events = ZMQ_POLLIN};
	}
	for (;;) {
		/* Paused: only the control socket is watched. */
		int first = state == ZC_PAUSED ? ci : 0;
		int rc;

		if (first < 0)
			first = 0;
		rc = zmq_poll(items + first, nitems - first, -1);
		if (rc < 0)
			return -1;
		if (ci >= 0 && (items[ci].revents & ZMQ_POLLIN)) {
			if (zc_command(control, &state, st) < 0)
				return -1;
			if (state == ZC_TERMINATED)
				return 0;
		}
		if (state != ZC_ACTIVE)
			continue;
		if (first == 0 && (items[fi].revents & ZMQ_POLLIN) &&
		    zc_forward(frontend, backend, capture, &st[0], &st[1]) < 0)
			return -1;
		if (bi >= 0 && first == 0 && (items[bi].revents & ZMQ_POLLIN) &&
		    zc_forward(backend, frontend, capture, &st[1], &st[0]) < 0)
			return -1;
	}
}

ZC_API int
zmq_proxy(void *frontend, void *backend, void *capture)
{
	return zmq_proxy_steerable(frontend, backend, capture, NULL);
}

ZC_API int
zmq_device(int type, void *frontend, void *backend)
{
	(void)type; /* libzmq ignores it too: every device is a proxy */
	return zmq_proxy(frontend, backend, NULL);
}
