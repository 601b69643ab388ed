/*
 * zring tools — `zring cat`: a ZeroMQ socket on the command line (stdin and
 * stdout in, messages out and back), in the spirit of zmqc.
 *
 * Built on the public socket API only (<zring/zring.h>).
 */
#ifndef ZR_TOOLS_ZL_CAT_H
#define ZR_TOOLS_ZL_CAT_H

/* Exit statuses of `zring cat`. "Refused": a connecting cat that every
 * endpoint answered with ERROR in the handshake (credentials, keys). */
#define ZL_CAT_OK 0
#define ZL_CAT_USAGE 1    /* bad command line, unknown option, bad option value */
#define ZL_CAT_ENDPOINT 2 /* bad endpoint, bind/connect failure, socket error, refused */
#define ZL_CAT_TIMEOUT 3  /* a send or receive blocked longer than --timeout */

/* Runs `zring cat` with the arguments after "cat"; returns the exit status. */
int zl_cat_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_CAT_H */
