/*
 * Monitoring: the io thread records events a socket's app asked for
 * (zr_socket_monitor) into a bounded SPSC queue of its own, and the app
 * reads them with zr_monitor_recv or polls zr_monitor_fd. A full queue
 * drops the event: the io thread never waits for an app that does not read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/base.h"
#include "engine.h"
#include "sock.h"

/* Events waiting unread at most (zring.h). */
#define MON_MAX 1024

void
zr__monitor_init(struct zr__monitor *m)
{
	atomic_init(&m->mask, 0);
	atomic_init(&m->armed, 0);
	m->ready = false;
	m->efd = -1;
}

void
zr__monitor_fini(struct zr__monitor *m)
{
	struct zr_event *e;

	if (!m->ready)
		return;
	while ((e = zr__spsc_pop(&m->q)) != NULL)
		free(e);
	zr__spsc_fini(&m->q);
	close(m->efd);
	m->ready = false;
}

/* see zring.h */
int
zr_socket_monitor(zr_socket *s, int events)
{
	struct zr__monitor *m = &s->mon;

	if (!m->ready) {
		int rc;

		if (events == 0)
			return 0;
		m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (m->efd < 0)
			return -errno;
		rc = zr__spsc_init(&m->q, MON_MAX);
		if (rc < 0) {
			close(m->efd);
			m->efd = -1;
			return rc;
		}
		m->ready = true;
	}
	/* Release: the io thread sees the queue ready once it sees the mask. */
	atomic_store_explicit(&m->mask, events, memory_order_release);
	return 0;
}

/* see zring.h */
int
zr_monitor_fd(zr_socket *s)
{
	return s->mon.ready ? s->mon.efd : -EINVAL;
}

int
zr__monitor_recv(struct zr_socket *s, struct zr_event *ev, int timeout_ms)
{
	struct zr__monitor *m = &s->mon;
	uint64_t deadline = zr__sock_deadline(0, timeout_ms);

	if (!m->ready)
		return -EINVAL;
	for (;;) {
		struct zr_event *e = zr__spsc_pop(&m->q);
		int rc;

		if (e == NULL) {
			/* As zr_recv: a caller polling zr_monitor_fd comes back
			 * with -EAGAIN, so the wake it came for is cleared
			 * before re-arming, or the fd would stay readable. Still
			 * armed, the fd has had no wake since it was last cleared
			 * (the io thread disarms before it signals): no read(2) then,
			 * which a poll for events between messages would pay. */
			if (deadline == 0 && !atomic_load_explicit(&m->armed, memory_order_relaxed))
				zr__sock_drain(m->efd);
			atomic_store(&m->armed, 1);
			atomic_thread_fence(memory_order_seq_cst);
			e = zr__spsc_pop(&m->q);
		}
		if (e != NULL) {
			*ev = *e;
			free(e);
			return 0;
		}
		rc = zr__sock_wait(s, m->efd, deadline);
		if (rc < 0)
			return rc;
	}
}

void
zr__sock_event(struct zr_socket *s, int type, int value, const char *endpoint)
{
	zr__sock_event_why(s, type, value, endpoint, NULL);
}

void
zr__sock_event_why(struct zr_socket *s, int type, int value, const char *endpoint,
                   const char *reason)
{
	struct zr__monitor *m = &s->mon;
	struct zr_event *e;

	if (!(atomic_load_explicit(&m->mask, memory_order_acquire) & type))
		return;
	/* zr_socket_monitor makes the queue before it sets a mask. */
	if (!ZR_INVARIANT(m->ready))
		return;
	e = calloc(1, sizeof *e);
	if (e == NULL)
		return;
	e->type = type;
	e->value = value;
	if (endpoint != NULL)
		strncpy(e->endpoint, endpoint, sizeof e->endpoint - 1);
	if (reason != NULL)
		strncpy(e->reason, reason, sizeof e->reason - 1);
	if (!zr__spsc_push(&m->q, e)) {
		free(e); /* the app is not reading its events: drop, never block */
		return;
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&m->armed) && atomic_exchange(&m->armed, 0))
		zr__sock_signal(m->efd);
}
