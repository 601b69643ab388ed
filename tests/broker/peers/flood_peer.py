#!/usr/bin/python3
"""A libzmq PUSH (through pyzmq) that floods a zring queue subscription.

Usage: flood_peer.py ENDPOINT NAME SIZE [NAME=VALUE ...]

Connects a PUSH to ENDPOINT and sends the broker wire layout: frame 0 NAME,
frame 1 "x-seq: <n>", frame 2 a payload of SIZE octets: the sequence number
as 8 big-endian octets, then octet i = (i * 7 + 3) & 0xff (the tests build
the same bytes). Sequence numbers start at 0 and never skip: a send that
timed out is kept and retried, never replaced.

Options, applied before connecting:
    sndhwm=N  sndbuf=N  (libzmq's SNDHWM, SNDBUF)
    wndoff=N  the offset of tcpi_snd_wnd in struct tcp_info, as the test's
              <linux/tcp.h> gives it (the C side passes offsetof)

First line written: "READY", or "FATAL <text>" and exit 3.

The kernel's view of this process's connection (its own socket, found in
/proc/self/fd by its peer address) is written as
    wnd=W outq=B
W: the peer's advertised receive window (TCP_INFO tcpi_snd_wnd; -1 on ipc
or when the kernel does not report it), B: bytes this socket has sent that
the peer has not read yet or not acknowledged (SIOCOUTQ; -1 if not found).

Commands (stdin), each answered by one line:
    flood TOTAL MS    send with SNDTIMEO MS until TOTAL are sent or a send
                      times out -> "DONE sent=k" or
                      "BLOCKED sent=k wnd=W outq=B" (k sent; message k held)
    press MS STEP     retry the held message (SNDTIMEO STEP) for MS
                      -> "PRESSED tries=n through=0|1 wnd=W outq=B"
    kernel            -> "KERNEL wnd=W outq=B"
    finish TOTAL MS   send the held message, then the rest up to TOTAL, each
                      with SNDTIMEO MS -> "DONE sent=k held_ms=T" (T: how
                      long the held message took) or "STUCK sent=k"
    send N MS         send N more (SNDTIMEO MS each) -> "SENT sent=k" (total)
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


class Flood:
    def __init__(self, endpoint, name, size, opts):
        self.endpoint = endpoint
        self.name = name.encode()
        self.size = size
        self.wndoff = int(opts.pop("wndoff", "-1"))
        filler = bytes(((i * 7 + 3) & 0xFF) for i in range(size))
        self.filler = filler[8:] if size >= 8 else b""
        self.ctx = zmq.Context()
        self.s = self.ctx.socket(zmq.PUSH)
        self.s.setsockopt(zmq.LINGER, 0)
        for k, v in opts.items():
            self.s.setsockopt(getattr(zmq, k.upper()), int(v))
        self.s.connect(endpoint)
        self.sent = 0  # messages 0 .. sent-1 were taken by libzmq

    def frames(self, seq):
        payload = struct.pack(">Q", seq)[: self.size] + self.filler
        return [self.name, b"x-seq: %d" % seq, payload]

    def send_next(self, timeout_ms):
        """Sends message number self.sent; True when libzmq took it."""
        self.s.setsockopt(zmq.SNDTIMEO, timeout_ms)
        try:
            self.s.send_multipart(self.frames(self.sent), copy=False)
        except zmq.Again:
            return False
        self.sent += 1
        return True

    def conn_socket(self):
        """A dup of libzmq's connection socket to the endpoint, or None."""
        if self.endpoint.startswith("tcp://"):
            port = int(self.endpoint.rsplit(":", 1)[1])
            want = lambda fam, peer: fam in (socket.AF_INET, socket.AF_INET6) and peer[1] == port
        else:
            path = self.endpoint[len("ipc://"):]
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
                    return s
            except OSError:
                pass
            s.close()
        return None

    def kernel(self):
        s = self.conn_socket()
        if s is None:
            return "wnd=-1 outq=-1"
        wnd = -1
        try:
            if s.family != socket.AF_UNIX and self.wndoff >= 0:
                info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
                if len(info) >= self.wndoff + 4:
                    wnd = struct.unpack_from("I", info, self.wndoff)[0]
            outq = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
        finally:
            s.close()
        return "wnd=%d outq=%d" % (wnd, outq)


def main():
    if len(sys.argv) < 4:
        out("FATAL usage: flood_peer.py ENDPOINT NAME SIZE [opts]")
        sys.exit(3)
    try:
        opts = dict(o.split("=", 1) for o in sys.argv[4:])
        f = Flood(sys.argv[1], sys.argv[2], int(sys.argv[3]), opts)
    except Exception as e:  # reported to the test, which fails with it
        out("FATAL %s: %s" % (type(e).__name__, e))
        sys.exit(3)
    out("READY")
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        cmd = w[0]
        if cmd == "flood":
            total, ms = int(w[1]), int(w[2])
            while f.sent < total and f.send_next(ms):
                pass
            if f.sent < total:
                out("BLOCKED sent=%d %s" % (f.sent, f.kernel()))
            else:
                out("DONE sent=%d" % f.sent)
        elif cmd == "press":
            end = time.monotonic() + int(w[1]) / 1000.0
            tries, through = 0, 0
            while time.monotonic() < end:
                tries += 1
                if f.send_next(int(w[2])):
                    through = 1
                    break
            out("PRESSED tries=%d through=%d %s" % (tries, through, f.kernel()))
        elif cmd == "kernel":
            out("KERNEL " + f.kernel())
        elif cmd == "finish":
            total, ms = int(w[1]), int(w[2])
            t0 = time.monotonic()
            if not f.send_next(ms):
                out("STUCK sent=%d" % f.sent)
                continue
            held_ms = int((time.monotonic() - t0) * 1000)
            while f.sent < total and f.send_next(ms):
                pass
            if f.sent < total:
                out("STUCK sent=%d" % f.sent)
            else:
                out("DONE sent=%d held_ms=%d" % (f.sent, held_ms))
        elif cmd == "send":
            for _ in range(int(w[1])):
                if not f.send_next(int(w[2])):
                    break
            out("SENT sent=%d" % f.sent)
        elif cmd == "quit":
            break
        else:
            out("ERR unknown command " + cmd)
    f.s.close(0)
    f.ctx.term()


if __name__ == "__main__":
    main()
