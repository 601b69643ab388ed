/*
 * zring tools — `zring subscribe` and `zring publish`: the broker model
 * (zr_broker, zr_subscribe, zr_publish, zr_request) on the command line.
 *
 *   zring subscribe queue tcp://127.0.0.1:5555 -b   print every job
 *   seq 3 | zring publish queue tcp://host:5555 -c --name jobs
 *
 * Built on the public API only (<zring.h>). Exit statuses are those of
 * `zring cat` (zl_cat.h): 0 done, 1 usage, 2 endpoint or connection error,
 * 3 timeout.
 */
#ifndef ZR_TOOLS_ZL_BROKER_H
#define ZR_TOOLS_ZL_BROKER_H

#define ZL_BROKER_OK 0
#define ZL_BROKER_USAGE 1    /* bad command line, unknown option, bad value */
#define ZL_BROKER_ENDPOINT 2 /* bad endpoint, bind/dial failure, no peer, refusal */
#define ZL_BROKER_TIMEOUT 3  /* a publish or request ran out of --timeout */

/* Runs `zring subscribe` with the arguments after "subscribe"; returns the
 * exit status. Ends on SIGINT or SIGTERM (exit 0) or after -n deliveries. */
int zl_subscribe_main(int argc, char **argv);

/* Runs `zring publish` with the arguments after "publish": one message per
 * line of stdin; returns the exit status. */
int zl_publish_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_BROKER_H */
