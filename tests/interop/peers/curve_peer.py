#!/usr/bin/python3
"""A libzmq CURVE peer (through pyzmq) for tests/interop/test_curve_pyzmq.c.

    curve_peer.py server [--heartbeat IVL_MS]
        A PULL socket, CURVE server with a fresh key pair, bound on
        tcp://127.0.0.1 at a random port. Prints "PORT <n> <server public z85>".
    curve_peer.py client PORT SERVERKEY_Z85 TYPE [ARGS...]
        A CURVE client with a fresh key pair, connected to
        tcp://127.0.0.1:PORT with SERVERKEY_Z85 as the server's key. Prints
        "KEY <client public z85>". TYPE PUSH: sends each ARGS (FRAMES) as one
        message and prints "SENT" after each. TYPE PULL: only receives.
        TYPE SUB: subscribes to each ARGS (hex prefix).

Then, in both modes, until stdin reaches end of file:
    RECV <frames>       every message received, whole
    EVENT <name> <val>  socket monitor events (handshake results, disconnects)
<frames> is the hex of each frame joined by ':' ("" alone is one empty frame).
A setup problem prints "FATAL <text>" and exits 3.
"""

import os
import sys

try:
    import zmq
    import zmq.utils.monitor
except ImportError as e:
    sys.stdout.write("FATAL cannot import zmq (%s): install python3-zmq\n" % e)
    sys.stdout.flush()
    sys.exit(3)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


EVENT_NAMES = {}
for _name in dir(zmq):
    if _name.startswith("EVENT_") and _name not in ("EVENT_ALL",):
        EVENT_NAMES.setdefault(getattr(zmq, _name), _name[6:])


def frames_hex(frames):
    return ":".join(f.hex() for f in frames)


def frames_parse(text):
    return [bytes.fromhex(p) for p in text.split(":")]


def main(argv):
    if len(argv) < 2 or argv[1] not in ("server", "client"):
        out("FATAL usage: curve_peer.py server|client ...")
        return 3
    ctx = zmq.Context()
    pub, sec = zmq.curve_keypair()
    if argv[1] == "server":
        sock = ctx.socket(zmq.PULL)
        sock.curve_server = True
        sock.curve_secretkey = sec
        if len(argv) >= 4 and argv[2] == "--heartbeat":
            ivl = int(argv[3])
            sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, ivl * 100)
        mon = sock.get_monitor_socket()
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        out("PORT %d %s" % (port, pub.decode()))
        to_send = []
    else:
        kind = argv[4] if len(argv) > 4 else "PUSH"
        sock = ctx.socket({"PUSH": zmq.PUSH, "PULL": zmq.PULL, "SUB": zmq.SUB}[kind])
        sock.curve_serverkey = argv[3].encode()
        sock.curve_publickey = pub
        sock.curve_secretkey = sec
        sock.setsockopt(zmq.LINGER, 0)
        mon = sock.get_monitor_socket()
        sock.connect("tcp://127.0.0.1:%s" % argv[2])
        out("KEY %s" % pub.decode())
        to_send = argv[5:] if kind == "PUSH" else []
        if kind == "SUB":
            for prefix in argv[5:]:
                sock.setsockopt(zmq.SUBSCRIBE, bytes.fromhex(prefix))

    for text in to_send:
        sock.send_multipart(frames_parse(text))
        out("SENT")

    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    poller.register(mon, zmq.POLLIN)
    poller.register(sys.stdin.fileno(), zmq.POLLIN)
    while True:
        for what, _ in poller.poll(1000):
            if what is sock:
                out("RECV " + frames_hex(sock.recv_multipart()))
            elif what is mon:
                ev = zmq.utils.monitor.recv_monitor_message(mon)
                name = EVENT_NAMES.get(ev["event"], str(ev["event"]))
                out("EVENT %s %d" % (name, ev["value"]))
            else:
                if not os.read(sys.stdin.fileno(), 4096):
                    sock.close(0)
                    mon.close(0)
                    ctx.term()
                    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
