#!/usr/bin/python3
"""A libzmq SUB (through pyzmq) on a zring fan-out publisher, that reads or stops.

Usage: kp_sub.py ENDPOINT PREFIX [NAME=VALUE ...]

Connects a SUB to ENDPOINT subscribed to PREFIX and reads the broker wire
layout [name, headers, payload]. A message whose name ends in ".probe" is
counted as a probe (the tests publish probes until every SUB's subscription
has reached the publisher); any other is a data message whose payload is
checked as flood_peer.py builds it (8 big-endian octets of sequence number,
then octet i = (i * 7 + 3) & 0xff): data messages must come numbered 0, 1,
2, ... with none missing or repeated, or they count as bad.

Options, applied before connecting: rcvhwm=N rcvbuf=N (libzmq's RCVHWM,
RCVBUF).

First line written: "READY", or "FATAL <text>" and exit 3.
While running, the SUB reads whenever a message is there; paused, it reads
nothing, so libzmq's queue and then the kernel's buffers fill.

Commands (stdin), each answered by one line:
    pause / resume    -> "PAUSED" / "RESUMED"
    stats             -> "STATS probes=P count=N next=S bad=B inq=Q"
                         (Q: bytes in the kernel receive queue of the
                         connection, -1 if not found)
    wait N MS         read (even when paused) until N data messages came or
                      nothing came for MS -> "STATS ..."
    probe MS          read until a probe came or MS passed -> "STATS ..."
    quit              exit
End of file on stdin also exits, so no peer outlives its test.
"""

import fcntl
import os
import socket
import struct
import sys
import termios
import time

try:
    import zmq
except ImportError as e:
    sys.stdout.write("FATAL cannot import zmq (%s): install python3-zmq\n" % e)
    sys.stdout.flush()
    sys.exit(3)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def conn_inq(endpoint):
    """Bytes in the kernel receive queue of the connection to endpoint."""
    if endpoint.startswith("tcp://"):
        port = int(endpoint.rsplit(":", 1)[1])
        want = lambda fam, peer: fam in (socket.AF_INET, socket.AF_INET6) and peer[1] == port
    else:
        path = endpoint[len("ipc://"):]
        want = lambda fam, peer: fam == socket.AF_UNIX and peer in (path, path.encode())
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not os.readlink("/proc/self/fd/%d" % fd).startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if s.type == socket.SOCK_STREAM and want(s.family, s.getpeername()):
                return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0" * 4))[0]
        except OSError:
            pass
        finally:
            s.close()
    return -1


class Sub:
    def __init__(self, endpoint, prefix, opts):
        self.endpoint = endpoint
        self.ctx = zmq.Context()
        self.s = self.ctx.socket(zmq.SUB)
        self.s.setsockopt(zmq.LINGER, 0)
        for k, v in opts.items():
            self.s.setsockopt(getattr(zmq, k.upper()), int(v))
        self.s.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        self.s.connect(endpoint)
        self.probes = self.count = self.next = self.bad = 0
        self.filler = {}

    def take(self):
        m = self.s.recv_multipart(zmq.NOBLOCK)
        if m[0].endswith(b".probe"):
            self.probes += 1
            return
        self.count += 1
        p = m[2] if len(m) == 3 else b""
        seq = struct.unpack(">Q", p[:8])[0] if len(p) >= 8 else -1
        if len(p) not in self.filler:
            self.filler[len(p)] = bytes(((i * 7 + 3) & 0xFF) for i in range(len(p)))[8:]
        if seq != self.next or p[8:] != self.filler[len(p)] or m[1] != b"x-seq: %d" % seq:
            self.bad += 1
        self.next = seq + 1

    def stats(self):
        return "STATS probes=%d count=%d next=%d bad=%d inq=%d" % (
            self.probes, self.count, self.next, self.bad, conn_inq(self.endpoint))


def main():
    if len(sys.argv) < 3:
        out("FATAL usage: kp_sub.py ENDPOINT PREFIX [opts]")
        sys.exit(3)
    try:
        sub = Sub(sys.argv[1], sys.argv[2], dict(o.split("=", 1) for o in sys.argv[3:]))
    except Exception as e:  # reported to the test, which fails with it
        out("FATAL %s: %s" % (type(e).__name__, e))
        sys.exit(3)
    out("READY")
    poller = zmq.Poller()
    poller.register(0, zmq.POLLIN)
    running = True
    pending = b""
    while True:
        # A paused SUB does not even poll its socket: libzmq reads nothing more.
        poller.register(sub.s, zmq.POLLIN if running else 0)
        ready = dict(poller.poll(1000))
        if ready.get(sub.s):
            # Read what is there, then look at stdin again.
            for _ in range(256):
                try:
                    sub.take()
                except zmq.Again:
                    break
        if not ready.get(0):
            continue
        chunk = os.read(0, 4096)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            w = line.decode().split()
            if not w:
                continue
            if w[0] == "pause":
                running = False
                out("PAUSED")
            elif w[0] == "resume":
                running = True
                out("RESUMED")
            elif w[0] == "stats":
                out(sub.stats())
            elif w[0] in ("wait", "probe"):
                want, quiet = (int(w[1]), int(w[2])) if w[0] == "wait" else (0, int(w[1]))
                end = time.monotonic() + quiet / 1000.0
                while time.monotonic() < end:
                    if (w[0] == "wait" and sub.count >= want) or (w[0] == "probe" and sub.probes > 0):
                        break
                    if sub.s.poll(100, zmq.POLLIN):
                        sub.take()
                        if w[0] == "wait":
                            end = time.monotonic() + quiet / 1000.0
                out(sub.stats())
            elif w[0] == "quit":
                sub.s.close(0)
                sub.ctx.term()
                return
            else:
                out("ERR unknown command " + w[0])
    sub.s.close(0)
    sub.ctx.term()


if __name__ == "__main__":
    main()
