/*
 * zring — the umbrella header: include this one.
 *
 *   <zring/error.h>  error codes, zr_strerror(), zr_errno()
 *   <zring/zring.h>  contexts, sockets, messages: the ZeroMQ socket model
 *   <zring/zmtp.h>   the sans-IO ZMTP 3.1 codec, for driving ZMTP over your own I/O
 */
#ifndef ZRING_H
#define ZRING_H

#include <zring/error.h>
#include <zring/zmtp.h>
#include <zring/zring.h>

#endif /* ZRING_H */
