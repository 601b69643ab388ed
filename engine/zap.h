/*
 * ZAP (RFC 27): asking a handler bound at inproc://zeromq.zap.01 about a
 * client, without blocking the io thread (engine/README.md, "ZAP").
 * io thread only.
 */
#ifndef ZR_ENGINE_ZAP_H
#define ZR_ENGINE_ZAP_H

#include <zring/zmtp.h>

struct zr__conn;
struct zr_ctx;

/* The endpoint libzmq's sessions ask, and handlers bind. */
#define ZR__ZAP_NAME "zeromq.zap.01"
/* Requests waiting for the handler's replies, per context. One more is
 * refused as a temporary error (300): a handler that slow has bigger
 * problems than a client retrying. */
#define ZR__ZAP_PENDING_MAX 4096u

/*
 * c's codec asks about a client (req: its mechanism and credentials). With
 * no handler bound: 200 (libzmq accepts every client then), or 500 when the
 * socket's ZAP_ENFORCE_DOMAIN says a handler is required. Else the request
 * goes to the handler and ZR_ZMTP_AUTH_PENDING is returned: the reply comes
 * through zr__conn_auth_done.
 */
int zr__zap_ask(struct zr__conn *c, const struct zr_zmtp_auth_req *req);
/* c goes away (or starts over): its request, if any, is forgotten, so a
 * late reply finds nothing. */
void zr__zap_cancel(struct zr__conn *c);
/* The context ends: the requester and its pipe go. */
void zr__zap_ctx_fini(struct zr_ctx *ctx);

#endif /* ZR_ENGINE_ZAP_H */
