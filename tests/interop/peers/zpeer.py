#!/usr/bin/python3
"""A libzmq peer (through pyzmq) driven line by line, for the interop tests.

It binds one socket of the given type on tcp://127.0.0.1 at a random port,
prints "PORT <n>" and then serves until stdin closes or says QUIT.

Lines read on stdin:
    SEND <frames>      send one multipart message
    PUBSYNC <frames>   send that message every 20 ms until the next command
    STOP               stop PUBSYNC
    QUIT               exit
Lines written on stdout:
    PORT <n>           once, first
    RECV <frames>      every message received, whole
    EVENT <NAME> <v>   socket monitor events (with --monitor)
    SENT               after each SEND was handed to libzmq
    FATAL <text>       a setup problem (then exit 3)
<frames> is the hex of each frame joined by ':' ("" alone is one empty frame).

Options:
    --routing-id HEX           ZMQ_ROUTING_ID
    --subscribe HEX            ZMQ_SUBSCRIBE (repeatable; SUB)
    --plain-server USER:PASS   PLAIN server; a ZAP handler (zmq.auth) accepts
                               only that user and password
    --plain-client USER:PASS   PLAIN client credentials
    --heartbeat IVL:TIMEOUT:TTL  ZMQ_HEARTBEAT_* in milliseconds
    --monitor                  report socket monitor events

The tests run it with /usr/bin/python3, the interpreter Debian's python3-zmq
installs into. When stdin reaches end of file (the test process died or is
done) the script exits, so no peer outlives its test.
"""

import os
import select
import sys

try:
    import zmq
    import zmq.utils.monitor
except ImportError as e:  # reported to the test, which fails with this text
    sys.stdout.write("FATAL cannot import zmq (%s): install the Debian package "
                     "python3-zmq (scripts/deps.sh)\n" % e)
    sys.stdout.flush()
    sys.exit(3)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def enc(frames):
    return ":".join(f.hex() for f in frames)


def dec(text):
    return [bytes.fromhex(h) for h in text.split(":")]


def parse_args(argv):
    opts = {"type": None, "routing_id": None, "subscribe": [], "plain_server": None,
            "plain_client": None, "heartbeat": None, "monitor": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--monitor":
            opts["monitor"] = True
        elif a in ("--routing-id", "--subscribe", "--plain-server", "--plain-client",
                   "--heartbeat"):
            i += 1
            v = argv[i]
            if a == "--routing-id":
                opts["routing_id"] = bytes.fromhex(v)
            elif a == "--subscribe":
                opts["subscribe"].append(bytes.fromhex(v))
            elif a == "--heartbeat":
                opts["heartbeat"] = [int(x) for x in v.split(":")]
            else:
                opts[a[2:].replace("-", "_")] = v.split(":", 1)
        elif opts["type"] is None:
            opts["type"] = a
        else:
            raise SystemExit("unexpected argument %r" % a)
        i += 1
    return opts


def main():
    opts = parse_args(sys.argv[1:])
    ctx = zmq.Context()
    auth = None
    sock = ctx.socket(getattr(zmq, opts["type"]))
    sock.linger = 0
    if opts["routing_id"] is not None:
        sock.setsockopt(zmq.ROUTING_ID, opts["routing_id"])
    for topic in opts["subscribe"]:
        sock.setsockopt(zmq.SUBSCRIBE, topic)
    if opts["heartbeat"]:
        ivl, timeout, ttl = opts["heartbeat"]
        sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, timeout)
        sock.setsockopt(zmq.HEARTBEAT_TTL, ttl)
    if opts["plain_server"]:
        from zmq.auth.thread import ThreadAuthenticator
        auth = ThreadAuthenticator(ctx)
        auth.start()
        user, password = opts["plain_server"]
        auth.configure_plain(domain="*", passwords={user: password})
        sock.plain_server = True
    if opts["plain_client"]:
        user, password = opts["plain_client"]
        sock.plain_username = user.encode()
        sock.plain_password = password.encode()
    mon = sock.get_monitor_socket() if opts["monitor"] else None

    sock.bind("tcp://127.0.0.1:*")
    port = sock.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1]
    out("PORT " + port)

    can_recv = opts["type"] not in ("PUSH", "PUB")
    poller = zmq.Poller()
    if can_recv:
        poller.register(sock, zmq.POLLIN)
    if mon is not None:
        poller.register(mon, zmq.POLLIN)
    poller.register(0, zmq.POLLIN)

    pending = b""
    sync = None
    running = True
    while running:
        for s, _ in poller.poll(20 if sync is not None else 1000):
            if s is sock:
                while sock.poll(0, zmq.POLLIN):
                    out("RECV " + enc(sock.recv_multipart()))
            elif s is mon:
                while mon.poll(0, zmq.POLLIN):
                    ev = zmq.utils.monitor.recv_monitor_message(mon)
                    out("EVENT %s %d" % (zmq.Event(ev["event"]).name, ev["value"]))
            elif s == 0:
                chunk = os.read(0, 65536)
                if not chunk:
                    running = False
                    break
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    cmd, _, arg = line.decode().partition(" ")
                    sync = None
                    if cmd == "SEND":
                        sock.send_multipart(dec(arg))
                        out("SENT")
                    elif cmd == "PUBSYNC":
                        sync = dec(arg)
                    elif cmd == "STOP":
                        pass
                    elif cmd == "QUIT":
                        running = False
                    else:
                        out("FATAL unknown command %r" % cmd)
        if sync is not None:
            sock.send_multipart(sync)

    if mon is not None:
        sock.disable_monitor()
        mon.close(0)
    sock.close(0)
    if auth is not None:
        auth.stop()
    ctx.term()


if __name__ == "__main__":
    main()
