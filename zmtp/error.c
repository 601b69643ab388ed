/*
 * Error texts for every code zring returns: its own protocol codes and the
 * errno values its calls pass on. A table, not strerror(): strerror may write a
 * shared buffer for unknown codes, and we keep no mutable global state.
 */
#include <errno.h>
#include <stddef.h>

#include <zring/error.h>

static const char *const error_proto_text[ZR_ELAST - ZR_EBASE] = {
	[ZR_ESIGNATURE - ZR_EBASE] = "bad ZMTP greeting signature (not a ZMTP 3 peer)",
	[ZR_EVERSION - ZR_EBASE] = "peer speaks a ZMTP version below 3.0",
	[ZR_EMECHANISM - ZR_EBASE] = "unknown or malformed security mechanism in greeting",
	[ZR_EMECHMISMATCH - ZR_EBASE] = "peer uses a different security mechanism",
	[ZR_EFLAGS - ZR_EBASE] = "frame has reserved flag bits set",
	[ZR_ECMDMORE - ZR_EBASE] = "command frame has the MORE flag set",
	[ZR_EFRAMESIZE - ZR_EBASE] = "frame size is invalid (top bit set)",
	[ZR_ETOOLARGE - ZR_EBASE] = "message exceeds the maximum message size",
	[ZR_ECMDSIZE - ZR_EBASE] = "command exceeds the command size limit",
	[ZR_ECMDINMSG - ZR_EBASE] = "command frame inside a multipart message",
	[ZR_ECMDNAME - ZR_EBASE] = "malformed command name",
	[ZR_EUNEXPECTED - ZR_EBASE] = "unexpected command",
	[ZR_EEARLYMSG - ZR_EBASE] = "message received before the handshake completed",
	[ZR_EPROPNAME - ZR_EBASE] = "malformed metadata property name",
	[ZR_EPROPTRUNC - ZR_EBASE] = "metadata property truncated",
	[ZR_EPROPVALUE - ZR_EBASE] = "metadata property value too long",
	[ZR_ENOSOCKTYPE - ZR_EBASE] = "peer metadata has no Socket-Type",
	[ZR_ESOCKTYPE - ZR_EBASE] = "unknown socket type",
	[ZR_EINCOMPATIBLE - ZR_EBASE] = "incompatible socket types",
	[ZR_EERRORCMD - ZR_EBASE] = "malformed ERROR command",
	[ZR_EPING - ZR_EBASE] = "malformed PING command",
	[ZR_EPONG - ZR_EBASE] = "malformed PONG command",
	[ZR_ESUBSCRIBE - ZR_EBASE] = "malformed SUBSCRIBE or CANCEL command",
	[ZR_EPLAIN - ZR_EBASE] = "malformed PLAIN command",
	[ZR_EAUTH - ZR_EBASE] = "authentication refused",
	[ZR_EPEERERROR - ZR_EBASE] = "peer closed the connection with an ERROR command",
	[ZR_EHANDSHAKE_TIMEOUT - ZR_EBASE] = "handshake timed out",
	[ZR_EHEARTBEAT_TIMEOUT - ZR_EBASE] = "peer stopped responding (heartbeat timeout)",
	[ZR_ECURVECMD - ZR_EBASE] = "malformed CURVE command (size or layout)",
	[ZR_ECURVEBOX - ZR_EBASE] = "CURVE box did not open (wrong server key or tampered data)",
	[ZR_ECURVENONCE - ZR_EBASE] = "CURVE nonce replayed or out of order",
	[ZR_ECURVEVERSION - ZR_EBASE] = "unsupported CurveZMQ version in HELLO",
	[ZR_ECURVECOOKIE - ZR_EBASE] = "CURVE cookie expired",
	[ZR_ECURVEKEY - ZR_EBASE] = "CURVE keys do not match the vouch or cookie",
	[ZR_ECURVEHUNGUP - ZR_EBASE] = ("the CURVE server closed the connection on our HELLO "
                                        "(most likely the wrong server key)"),
	[ZR_ETOOMANYFRAMES - ZR_EBASE] = "message has more frames than the limit",
};

struct error_errno_text {
	int code;
	const char *text;
};

static const struct error_errno_text error_errno_text[] = {
	{EPERM, "operation not permitted"},
	{ENOENT, "no such file or directory"},
	{EINTR, "interrupted"},
	{EIO, "input/output error"},
	{EBADF, "bad file descriptor"},
	{EAGAIN, "resource temporarily unavailable"},
	{ENOMEM, "out of memory"},
	{EACCES, "permission denied"},
	{EFAULT, "bad address"},
	{EBUSY, "resource busy"},
	{EEXIST, "already exists"},
	{ENODEV, "no such device"},
	{EINVAL, "invalid argument"},
	{ENFILE, "too many open files in system"},
	{EMFILE, "too many open files"},
	{ENOSPC, "no space left"},
	{EPIPE, "broken pipe"},
	{ERANGE, "result out of range"},
	{ENAMETOOLONG, "name too long"},
	{ENOSYS, "function not implemented"},
	{EPROTO, "protocol error"},
	{EMSGSIZE, "message too long"},
	{EPROTONOSUPPORT,
         "protocol not supported (an unknown transport, or tls:// in a build without TLS)"},
	{ENOTSUP, "operation not supported"},
	{EAFNOSUPPORT, "address family not supported"},
	{EADDRINUSE, "address already in use"},
	{EADDRNOTAVAIL, "address not available"},
	{ENETDOWN, "network is down"},
	{ENETUNREACH, "network unreachable"},
	{ECONNABORTED, "connection aborted"},
	{ECONNRESET, "connection reset by peer"},
	{ENOBUFS, "no buffer space"},
	{EISCONN, "already connected"},
	{ENOTCONN, "not connected"},
	{ETIMEDOUT, "timed out"},
	{ECONNREFUSED, "connection refused"},
	{EHOSTUNREACH, "host unreachable"},
	{EALREADY, "operation already in progress"},
	{EINPROGRESS, "operation in progress"},
	{ECANCELED, "operation cancelled"},
	{ESHUTDOWN, "shut down"},
	{EFSM, "operation not valid in the socket's current state"},
	{ETERM, "the context was terminated"},
};

/* see error.h */
const char *
zr_strerror(int err)
{
	size_t i;

	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	if (err >= ZR_EBASE && err < ZR_ELAST)
		return error_proto_text[err - ZR_EBASE];
	for (i = 0; i < sizeof error_errno_text / sizeof error_errno_text[0]; i++) {
		if (error_errno_text[i].code == err)
			return error_errno_text[i].text;
	}
	return "unknown error";
}

/* see error.h */
int
zr_errno(int err)
{
	if (err > 0)
		err = -err;
	if (err > -ZR_EBASE || err <= -ZR_ELAST)
		return err;
	switch (-err) {
	case ZR_ETOOLARGE:
	case ZR_ECMDSIZE:
	case ZR_ETOOMANYFRAMES:
		return -EMSGSIZE;
	case ZR_EHANDSHAKE_TIMEOUT:
	case ZR_EHEARTBEAT_TIMEOUT:
		return -ETIMEDOUT;
	case ZR_EAUTH:
	case ZR_ECURVEBOX:
	case ZR_ECURVEKEY:
	case ZR_ECURVEHUNGUP:
		return -EACCES;
	case ZR_EPEERERROR:
		return -ECONNREFUSED;
	default:
		return -EPROTO;
	}
}
