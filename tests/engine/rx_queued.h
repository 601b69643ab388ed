/*
 * For the engine tests that look inside a socket (engine/engine.h): how many
 * messages its io thread has queued for the app.
 */
#ifndef ZR_TESTS_ENGINE_RX_QUEUED_H
#define ZR_TESTS_ENGINE_RX_QUEUED_H

#include <stddef.h>

#include "engine/engine.h"
#include "sock_helpers.h"

/* How many messages the io thread has queued for the app once it holds at
 * least want (or timeout_ms passed), then after a quiet settle_ms more: the
 * positive part waits as long as a loaded machine needs, the "and no more"
 * part looks after the io thread had its chance to go past. */
static inline size_t
rx_queued_settled(zr_socket *s, size_t want, int timeout_ms, int settle_ms)
{
	for (int waited = 0; zr__spsc_count(&s->rx) < want && waited < timeout_ms; waited++)
		sleep_ms(1);
	sleep_ms(settle_ms);
	return zr__spsc_count(&s->rx);
}

#endif /* ZR_TESTS_ENGINE_RX_QUEUED_H */
