#!/usr/bin/python3
"""A libzmq socket with PLAIN or CURVE security (through pyzmq) that
tests/interop/test_curve_sockets.c drives line by line.

Usage: secure_peer.py TYPE (bind|connect) ENDPOINT [NAME=VALUE ...]

TYPE is a libzmq socket type name (PUSH, PULL, REQ, REP, DEALER, ROUTER,
PUB, SUB, ...). Options, applied in order before bind/connect:
    curve_server=1                 CURVE_SERVER
    curve_secret=Z85  curve_public=Z85  curve_serverkey=Z85
    plain_server=1  plain_user=TEXT  plain_pass=TEXT
    zap_plain=USER:PASS            a ZAP handler (zmq.auth ThreadAuthenticator)
                                   that admits only this PLAIN user
    zap_curve=any|none|Z85         a ZAP handler for CURVE admitting any
                                   client key, none, or only this public key
    monitor=1                      record the socket's monitor events
    identity=HEX  sub=HEX (repeatable)
    presend=TOKENS                 right after connecting, queue this message
                                   without blocking (repeatable): normally in
                                   the pipe before any handshake can fail
                                   (dropped if the failure was quicker)
    NAME=INT                       any other integer option by its pyzmq name
                                   (heartbeat_ivl, linger, rcvhwm, ...)

First line written: "ENDPOINT <endpoint>" (the bound one, port included),
or "FATAL <text>" and exit 3.

Messages are frame tokens and the commands are tests/engine/peers/epeer.py's
(send, recv, count, echo, flood, drain, quit; its serve() runs them), plus:
    recvuid MS         -> "MSG TOKENS UID <User-Id of its first frame>" or "TIMEOUT"
    event NAME MS      wait for a monitor event called NAME (pyzmq's name
                       without EVENT_, e.g. HANDSHAKE_FAILED_AUTH)
                       -> "EVENT NAME value" or "TIMEOUT"
    events             every event name seen so far -> "EVENTS a,b,..."
End of file on stdin also exits, so no peer outlives its test.
"""

import os
import sys
import threading

# The token format, out() and the command loop are epeer.py's (it also
# reports a missing pyzmq, with FATAL, when imported).
sys.dont_write_bytecode = True
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "peers")
)
from epeer import dec, enc, out, serve  # noqa: E402

import zmq  # noqa: E402
from zmq.utils.monitor import recv_monitor_message  # noqa: E402


class KeyList:
    """A pyzmq CURVE credentials provider admitting one Z85 key ("none": no key)."""

    def __init__(self, key):
        self.key = key.encode()

    def callback(self, domain, z85_key):
        return z85_key == self.key


class Monitor:
    """Reads the socket's monitor events in a thread of its own."""

    def __init__(self, sock):
        self.msock = sock.get_monitor_socket()
        self.cond = threading.Condition()
        self.events = []  # (name, value)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                ev = recv_monitor_message(self.msock)
            except zmq.ZMQError:
                return
            try:
                name = zmq.Event(ev["event"]).name  # "DISCONNECTED", ...
            except ValueError:
                name = "0x%x" % ev["event"]
            with self.cond:
                self.events.append((name, ev["value"]))
                self.cond.notify_all()
            if name == "MONITOR_STOPPED":
                return

    def wait(self, name, ms):
        with self.cond:
            found = None

            def seen():
                nonlocal found
                for n, v in self.events:
                    if n == name:
                        found = v
                        return True
                return False

            if self.cond.wait_for(seen, ms / 1000.0):
                return found
        return None

    def names(self):
        with self.cond:
            return [n for n, _ in self.events]


def main():
    if len(sys.argv) < 4:
        out("FATAL usage: secure_peer.py TYPE bind|connect ENDPOINT [opts]")
        sys.exit(3)
    ctx = zmq.Context()
    auth = None
    mon = None
    try:
        s = ctx.socket(getattr(zmq, sys.argv[1]))
        s.setsockopt(zmq.LINGER, 0)
        presend = []
        for opt in sys.argv[4:]:
            name, _, value = opt.partition("=")
            if name == "presend":
                presend.append(value)
            elif name == "curve_server":
                s.curve_server = int(value)
            elif name == "curve_secret":
                s.curve_secretkey = value.encode()
            elif name == "curve_public":
                s.curve_publickey = value.encode()
            elif name == "curve_serverkey":
                s.curve_serverkey = value.encode()
            elif name == "plain_server":
                s.plain_server = int(value)
            elif name == "plain_user":
                s.plain_username = value.encode()
            elif name == "plain_pass":
                s.plain_password = value.encode()
            elif name == "zap_plain":
                from zmq.auth.thread import ThreadAuthenticator

                user, _, password = value.partition(":")
                auth = ThreadAuthenticator(ctx)
                auth.start()
                auth.configure_plain(domain="*", passwords={user: password})
            elif name == "zap_curve":
                from zmq.auth.thread import ThreadAuthenticator

                auth = ThreadAuthenticator(ctx)
                auth.start()
                if value == "any":
                    auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)
                else:
                    # Asked from the authenticator's thread about each client key.
                    auth.configure_curve_callback(domain="*", credentials_provider=KeyList(value))
            elif name == "monitor":
                mon = Monitor(s)
            elif name == "identity":
                s.setsockopt(zmq.IDENTITY, bytes.fromhex(value))
            elif name == "sub":
                s.setsockopt(zmq.SUBSCRIBE, bytes.fromhex(value))
            else:
                s.setsockopt(getattr(zmq, name.upper()), int(value))
        if sys.argv[2] == "bind":
            s.bind(sys.argv[3])
            ep = s.getsockopt(zmq.LAST_ENDPOINT).decode()
        else:
            s.connect(sys.argv[3])
            ep = sys.argv[3]
        for tokens in presend:
            try:
                s.send_multipart(dec(tokens), flags=zmq.NOBLOCK)
            except zmq.Again:
                pass  # the handshake already failed and took the pipe
    except Exception as e:  # reported to the test, which fails with it
        out("FATAL %s: %s" % (type(e).__name__, e))
        sys.exit(3)
    out("ENDPOINT " + ep)

    def recvuid(words, recv):
        if not s.poll(int(words[1])):
            out("TIMEOUT")
            return
        frames = s.recv_multipart(copy=False)
        try:
            uid = frames[0].get("User-Id")
        except zmq.ZMQError:
            uid = "(none)"
        out("MSG %s UID %s" % (enc([f.bytes for f in frames]), uid))

    def event(words, recv):
        if mon is None:
            out("ERR no_monitor")
            return
        v = mon.wait(words[1], int(words[2]))
        out("TIMEOUT" if v is None else "EVENT %s %d" % (words[1], v))

    def events(words, recv):
        out("EVENTS " + (",".join(mon.names()) if mon is not None else ""))

    serve(s, {"recvuid": recvuid, "event": event, "events": events})
    # The monitor and authenticator threads hold sockets of the context:
    # leave without waiting for them (LINGER is 0, nothing is left to send).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
