/*
 * zring — the umbrella header: include this one.
 *
 *   <zring/error.h>  error codes, zr_strerror(), zr_errno()
 *   <zring/zmtp.h>   the sans-IO ZMTP 3.1 codec
 *
 * The socket and broker API (<zring/zring.h>) joins this list with the
 * io_uring engine in a later release.
 */
#ifndef ZRING_H
#define ZRING_H

#include <zring/error.h>
#include <zring/zmtp.h>

#endif /* ZRING_H */
