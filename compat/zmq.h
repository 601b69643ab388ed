/*
 * zmq.h for zring's libzmq.so.5 drop-in (compat/).
 *
 * The libzmq 4.3 stable C API and ABI, implemented on zring's public API
 * (include/zring/zring.h). Written from libzmq's documented API (the
 * zmq_*(3) manual pages): the same names, numbers, types and sizes, so a
 * program built against libzmq's header runs on this library and a program
 * built against this header runs on libzmq. What differs is listed in
 * compat/README.md; an option this library does not implement fails with
 * EINVAL, as libzmq answers an unknown one.
 *
 * Functions return 0 (or a count) on success and -1 with errno set on
 * failure (zmq_errno() reads it), as libzmq's.
 */
#ifndef ZR_COMPAT_ZMQ_H
#define ZR_COMPAT_ZMQ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ZMQ_EXPORT __attribute__((visibility("default")))
#else
#define ZMQ_EXPORT
#endif

/* The libzmq version this library answers to (zmq_version, ZMQ_VERSION). */
#define ZMQ_VERSION_MAJOR 4
#define ZMQ_VERSION_MINOR 3
#define ZMQ_VERSION_PATCH 4
#define ZMQ_MAKE_VERSION(major, minor, patch) ((major)*10000 + (minor)*100 + (patch))
#define ZMQ_VERSION ZMQ_MAKE_VERSION(ZMQ_VERSION_MAJOR, ZMQ_VERSION_MINOR, ZMQ_VERSION_PATCH)

/* ---- errors: libzmq's numbers for what POSIX lacks ----------------------- */

#define ZMQ_HAUSNUMERO 156384712
/* Linux defines the POSIX ones (ENOTSUP, EPROTONOSUPPORT, ENOBUFS, ...). */
#ifndef EFSM
#define EFSM (ZMQ_HAUSNUMERO + 51)
#endif
#ifndef ENOCOMPATPROTO
#define ENOCOMPATPROTO (ZMQ_HAUSNUMERO + 52)
#endif
#ifndef ETERM
#define ETERM (ZMQ_HAUSNUMERO + 53)
#endif
#ifndef EMTHREAD
#define EMTHREAD (ZMQ_HAUSNUMERO + 54)
#endif

ZMQ_EXPORT int zmq_errno(void);
ZMQ_EXPORT const char *zmq_strerror(int errnum);
ZMQ_EXPORT void zmq_version(int *major, int *minor, int *patch);

/* ---- contexts ------------------------------------------------------------ */

#define ZMQ_IO_THREADS 1
#define ZMQ_MAX_SOCKETS 2
#define ZMQ_SOCKET_LIMIT 3
#define ZMQ_THREAD_PRIORITY 3
#define ZMQ_THREAD_SCHED_POLICY 4
#define ZMQ_MAX_MSGSZ 5
#define ZMQ_MSG_T_SIZE 6
#define ZMQ_THREAD_AFFINITY_CPU_ADD 7
#define ZMQ_THREAD_AFFINITY_CPU_REMOVE 8
#define ZMQ_THREAD_NAME_PREFIX 9

#define ZMQ_IO_THREADS_DFLT 1
#define ZMQ_MAX_SOCKETS_DFLT 1023
#define ZMQ_THREAD_PRIORITY_DFLT -1
#define ZMQ_THREAD_SCHED_POLICY_DFLT -1

ZMQ_EXPORT void *zmq_ctx_new(void);
ZMQ_EXPORT int zmq_ctx_term(void *context);
ZMQ_EXPORT int zmq_ctx_shutdown(void *context);
ZMQ_EXPORT int zmq_ctx_set(void *context, int option, int optval);
ZMQ_EXPORT int zmq_ctx_get(void *context, int option);
/* The 3.x names, kept by libzmq 4. */
ZMQ_EXPORT void *zmq_init(int io_threads);
ZMQ_EXPORT int zmq_term(void *context);
ZMQ_EXPORT int zmq_ctx_destroy(void *context);

/* ---- messages ------------------------------------------------------------ */

/* The caller's storage for one frame: 64 octets, pointer aligned. Opaque. */
typedef struct zmq_msg_t {
#if defined(__GNUC__) || defined(__clang__)
	unsigned char _[64] __attribute__((aligned(sizeof(void *))));
#else
	void *_[64 / sizeof(void *)];
#endif
} zmq_msg_t;

typedef void(zmq_free_fn)(void *data, void *hint);

#define ZMQ_MORE 1
#define ZMQ_SRCFD 2
#define ZMQ_SHARED 3

ZMQ_EXPORT int zmq_msg_init(zmq_msg_t *msg);
ZMQ_EXPORT int zmq_msg_init_size(zmq_msg_t *msg, size_t size);
ZMQ_EXPORT int zmq_msg_init_data(zmq_msg_t *msg, void *data, size_t size, zmq_free_fn *ffn,
                                 void *hint);
ZMQ_EXPORT int zmq_msg_send(zmq_msg_t *msg, void *s, int flags);
ZMQ_EXPORT int zmq_msg_recv(zmq_msg_t *msg, void *s, int flags);
ZMQ_EXPORT int zmq_msg_close(zmq_msg_t *msg);
ZMQ_EXPORT int zmq_msg_move(zmq_msg_t *dest, zmq_msg_t *src);
ZMQ_EXPORT int zmq_msg_copy(zmq_msg_t *dest, zmq_msg_t *src);
ZMQ_EXPORT void *zmq_msg_data(zmq_msg_t *msg);
ZMQ_EXPORT size_t zmq_msg_size(const zmq_msg_t *msg);
ZMQ_EXPORT int zmq_msg_more(const zmq_msg_t *msg);
ZMQ_EXPORT int zmq_msg_get(const zmq_msg_t *msg, int property);
ZMQ_EXPORT int zmq_msg_set(zmq_msg_t *msg, int property, int optval);
ZMQ_EXPORT const char *zmq_msg_gets(const zmq_msg_t *msg, const char *property);

/* ---- sockets ------------------------------------------------------------- */

#define ZMQ_PAIR 0
#define ZMQ_PUB 1
#define ZMQ_SUB 2
#define ZMQ_REQ 3
#define ZMQ_REP 4
#define ZMQ_DEALER 5
#define ZMQ_ROUTER 6
#define ZMQ_PULL 7
#define ZMQ_PUSH 8
#define ZMQ_XPUB 9
#define ZMQ_XSUB 10
#define ZMQ_STREAM 11
#define ZMQ_XREQ ZMQ_DEALER /* deprecated aliases */
#define ZMQ_XREP ZMQ_ROUTER

/* Socket options (zmq_setsockopt(3), zmq_getsockopt(3)). */
#define ZMQ_AFFINITY 4
#define ZMQ_ROUTING_ID 5
#define ZMQ_SUBSCRIBE 6
#define ZMQ_UNSUBSCRIBE 7
#define ZMQ_RATE 8
#define ZMQ_RECOVERY_IVL 9
#define ZMQ_SNDBUF 11
#define ZMQ_RCVBUF 12
#define ZMQ_RCVMORE 13
#define ZMQ_FD 14
#define ZMQ_EVENTS 15
#define ZMQ_TYPE 16
#define ZMQ_LINGER 17
#define ZMQ_RECONNECT_IVL 18
#define ZMQ_BACKLOG 19
#define ZMQ_RECONNECT_IVL_MAX 21
#define ZMQ_MAXMSGSIZE 22
#define ZMQ_SNDHWM 23
#define ZMQ_RCVHWM 24
#define ZMQ_MULTICAST_HOPS 25
#define ZMQ_RCVTIMEO 27
#define ZMQ_SNDTIMEO 28
#define ZMQ_LAST_ENDPOINT 32
#define ZMQ_ROUTER_MANDATORY 33
#define ZMQ_TCP_KEEPALIVE 34
#define ZMQ_TCP_KEEPALIVE_CNT 35
#define ZMQ_TCP_KEEPALIVE_IDLE 36
#define ZMQ_TCP_KEEPALIVE_INTVL 37
#define ZMQ_IMMEDIATE 39
#define ZMQ_XPUB_VERBOSE 40
#define ZMQ_ROUTER_RAW 41
#define ZMQ_IPV6 42
#define ZMQ_MECHANISM 43
#define ZMQ_PLAIN_SERVER 44
#define ZMQ_PLAIN_USERNAME 45
#define ZMQ_PLAIN_PASSWORD 46
#define ZMQ_CURVE_SERVER 47
#define ZMQ_CURVE_PUBLICKEY 48
#define ZMQ_CURVE_SECRETKEY 49
#define ZMQ_CURVE_SERVERKEY 50
#define ZMQ_PROBE_ROUTER 51
#define ZMQ_REQ_CORRELATE 52
#define ZMQ_REQ_RELAXED 53
#define ZMQ_CONFLATE 54
#define ZMQ_ZAP_DOMAIN 55
#define ZMQ_ROUTER_HANDOVER 56
#define ZMQ_TOS 57
#define ZMQ_CONNECT_ROUTING_ID 61
#define ZMQ_GSSAPI_SERVER 62
#define ZMQ_GSSAPI_PRINCIPAL 63
#define ZMQ_GSSAPI_SERVICE_PRINCIPAL 64
#define ZMQ_GSSAPI_PLAINTEXT 65
#define ZMQ_HANDSHAKE_IVL 66
#define ZMQ_SOCKS_PROXY 68
#define ZMQ_XPUB_NODROP 69
#define ZMQ_BLOCKY 70
#define ZMQ_XPUB_MANUAL 71
#define ZMQ_XPUB_WELCOME_MSG 72
#define ZMQ_STREAM_NOTIFY 73
#define ZMQ_INVERT_MATCHING 74
#define ZMQ_HEARTBEAT_IVL 75
#define ZMQ_HEARTBEAT_TTL 76
#define ZMQ_HEARTBEAT_TIMEOUT 77
#define ZMQ_XPUB_VERBOSER 78
#define ZMQ_CONNECT_TIMEOUT 79
#define ZMQ_TCP_MAXRT 80
#define ZMQ_THREAD_SAFE 81
#define ZMQ_MULTICAST_MAXTPDU 84
#define ZMQ_VMCI_BUFFER_SIZE 85
#define ZMQ_VMCI_BUFFER_MIN_SIZE 86
#define ZMQ_VMCI_BUFFER_MAX_SIZE 87
#define ZMQ_VMCI_CONNECT_TIMEOUT 88
#define ZMQ_USE_FD 89
#define ZMQ_GSSAPI_PRINCIPAL_NAMETYPE 90
#define ZMQ_GSSAPI_SERVICE_PRINCIPAL_NAMETYPE 91
#define ZMQ_BINDTODEVICE 92
/* Deprecated names and options. */
#define ZMQ_IDENTITY ZMQ_ROUTING_ID
#define ZMQ_CONNECT_RID ZMQ_CONNECT_ROUTING_ID
#define ZMQ_TCP_ACCEPT_FILTER 38
#define ZMQ_IPC_FILTER_PID 58
#define ZMQ_IPC_FILTER_UID 59
#define ZMQ_IPC_FILTER_GID 60
#define ZMQ_IPV4ONLY 31
#define ZMQ_DELAY_ATTACH_ON_CONNECT ZMQ_IMMEDIATE
#define ZMQ_NOBLOCK ZMQ_DONTWAIT
#define ZMQ_FAIL_UNROUTABLE ZMQ_ROUTER_MANDATORY
#define ZMQ_ROUTER_BEHAVIOR ZMQ_ROUTER_MANDATORY

/* ZMQ_MECHANISM values. */
#define ZMQ_NULL 0
#define ZMQ_PLAIN 1
#define ZMQ_CURVE 2
#define ZMQ_GSSAPI 3

/* ZMQ_GSSAPI_*_NAMETYPE values. */
#define ZMQ_GSSAPI_NT_HOSTBASED 0
#define ZMQ_GSSAPI_NT_USER_NAME 1
#define ZMQ_GSSAPI_NT_KRB5_PRINCIPAL 2

/* Send and receive flags. */
#define ZMQ_DONTWAIT 1
#define ZMQ_SNDMORE 2

/* RADIO/DISH group length (draft in libzmq, the constant is stable). */
#define ZMQ_GROUP_MAX_LENGTH 255

ZMQ_EXPORT void *zmq_socket(void *context, int type);
ZMQ_EXPORT int zmq_close(void *s);
ZMQ_EXPORT int zmq_setsockopt(void *s, int option, const void *optval, size_t optvallen);
ZMQ_EXPORT int zmq_getsockopt(void *s, int option, void *optval, size_t *optvallen);
ZMQ_EXPORT int zmq_bind(void *s, const char *addr);
ZMQ_EXPORT int zmq_connect(void *s, const char *addr);
ZMQ_EXPORT int zmq_unbind(void *s, const char *addr);
ZMQ_EXPORT int zmq_disconnect(void *s, const char *addr);
ZMQ_EXPORT int zmq_send(void *s, const void *buf, size_t len, int flags);
ZMQ_EXPORT int zmq_send_const(void *s, const void *buf, size_t len, int flags);
ZMQ_EXPORT int zmq_recv(void *s, void *buf, size_t len, int flags);
ZMQ_EXPORT int zmq_socket_monitor(void *s, const char *addr, int events);
/* The 3.x names. */
ZMQ_EXPORT int zmq_sendmsg(void *s, zmq_msg_t *msg, int flags);
ZMQ_EXPORT int zmq_recvmsg(void *s, zmq_msg_t *msg, int flags);

/* ---- monitor events (zmq_socket_monitor(3)) ------------------------------ */

#define ZMQ_EVENT_CONNECTED 0x0001
#define ZMQ_EVENT_CONNECT_DELAYED 0x0002
#define ZMQ_EVENT_CONNECT_RETRIED 0x0004
#define ZMQ_EVENT_LISTENING 0x0008
#define ZMQ_EVENT_BIND_FAILED 0x0010
#define ZMQ_EVENT_ACCEPTED 0x0020
#define ZMQ_EVENT_ACCEPT_FAILED 0x0040
#define ZMQ_EVENT_CLOSED 0x0080
#define ZMQ_EVENT_CLOSE_FAILED 0x0100
#define ZMQ_EVENT_DISCONNECTED 0x0200
#define ZMQ_EVENT_MONITOR_STOPPED 0x0400
#define ZMQ_EVENT_ALL 0xFFFF
#define ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL 0x0800
#define ZMQ_EVENT_HANDSHAKE_SUCCEEDED 0x1000
#define ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL 0x2000
#define ZMQ_EVENT_HANDSHAKE_FAILED_AUTH 0x4000

#define ZMQ_PROTOCOL_ERROR_ZMTP_UNSPECIFIED 0x10000000
#define ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND 0x10000001
#define ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE 0x10000002
#define ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE 0x10000003
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_UNSPECIFIED 0x10000011
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_MESSAGE 0x10000012
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_HELLO 0x10000013
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_INITIATE 0x10000014
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_ERROR 0x10000015
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_READY 0x10000016
#define ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_WELCOME 0x10000017
#define ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_METADATA 0x10000018
#define ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC 0x11000001
#define ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH 0x11000002
#define ZMQ_PROTOCOL_ERROR_ZAP_UNSPECIFIED 0x20000000
#define ZMQ_PROTOCOL_ERROR_ZAP_MALFORMED_REPLY 0x20000001
#define ZMQ_PROTOCOL_ERROR_ZAP_BAD_REQUEST_ID 0x20000002
#define ZMQ_PROTOCOL_ERROR_ZAP_BAD_VERSION 0x20000003
#define ZMQ_PROTOCOL_ERROR_ZAP_INVALID_STATUS_CODE 0x20000004
#define ZMQ_PROTOCOL_ERROR_ZAP_INVALID_METADATA 0x20000005
#define ZMQ_PROTOCOL_ERROR_WS_UNSPECIFIED 0x30000000

/* ---- polling ------------------------------------------------------------- */

#define ZMQ_POLLIN 1
#define ZMQ_POLLOUT 2
#define ZMQ_POLLERR 4
#define ZMQ_POLLPRI 8

typedef struct zmq_pollitem_t {
	void *socket; /* a socket, or NULL to poll fd */
	int fd;
	short events;
	short revents;
} zmq_pollitem_t;

#define ZMQ_POLLITEMS_DFLT 16

/* timeout: ms; -1 waits for ever, 0 returns at once. Returns the number of
 * items with events, 0 on timeout, -1 with errno on error. */
ZMQ_EXPORT int zmq_poll(zmq_pollitem_t *items, int nitems, long timeout);

/* ---- proxies ------------------------------------------------------------- */

ZMQ_EXPORT int zmq_proxy(void *frontend, void *backend, void *capture);
/* control: "PAUSE", "RESUME", "TERMINATE", "STATISTICS" (a reply of eight
 * uint64 frames: frontend messages in, bytes in, messages out, bytes out,
 * then the same for the backend). */
ZMQ_EXPORT int zmq_proxy_steerable(void *frontend, void *backend, void *capture, void *control);

#define ZMQ_STREAMER 1
#define ZMQ_FORWARDER 2
#define ZMQ_QUEUE 3
ZMQ_EXPORT int zmq_device(int type, void *frontend, void *backend);

/* ---- capabilities, Z85, CURVE keys ---------------------------------------- */

/* 1 when the library supports the capability: "ipc", "curve" (and 0 for
 * "pgm", "tipc", "norm", "gssapi", "draft", ...). */
ZMQ_EXPORT int zmq_has(const char *capability);

/* Z85 (RFC 32): size must be a multiple of 4 (encode) or 5 (decode). */
ZMQ_EXPORT char *zmq_z85_encode(char *dest, const uint8_t *data, size_t size);
ZMQ_EXPORT uint8_t *zmq_z85_decode(uint8_t *dest, const char *string);
/* 41-octet Z85 buffers (40 characters and a NUL). */
ZMQ_EXPORT int zmq_curve_keypair(char *z85_public_key, char *z85_secret_key);
ZMQ_EXPORT int zmq_curve_public(char *z85_public_key, const char *z85_secret_key);

/* ---- helpers (libzmq's zmq_utils.h, declared by zmq.h since 4.x) --------- */

ZMQ_EXPORT void *zmq_stopwatch_start(void);
ZMQ_EXPORT unsigned long zmq_stopwatch_intermediate(void *watch);
ZMQ_EXPORT unsigned long zmq_stopwatch_stop(void *watch);
ZMQ_EXPORT void zmq_sleep(int seconds);
typedef void(zmq_thread_fn)(void *);
ZMQ_EXPORT void *zmq_threadstart(zmq_thread_fn *func, void *arg);
ZMQ_EXPORT void zmq_threadclose(void *thread);

#undef ZMQ_EXPORT

#ifdef __cplusplus
}
#endif

#endif /* ZR_COMPAT_ZMQ_H */
