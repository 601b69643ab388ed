#!/usr/bin/env python3
"""A TCP proxy that stalls and resets connections on command (fault tests).

    fault_proxy.py --listen 10.77.0.2:5611 --to 10.77.0.2:5601 [--stall SECONDS] [--buf BYTES]

Forwards every accepted connection to --to, both ways. Commands are signals,
so a driver script needs nothing but `kill`:

    SIGUSR1  reset: every connection is closed with SO_LINGER 0, so both the
             client and the server get an RST (what a middlebox reset or a
             peer's crash looks like)
    SIGUSR2  stall: stop reading from both sides for --stall seconds (TCP
             windows close, nothing is lost); connections made meanwhile
             are held too
    SIGTERM  exit

Prints "proxy: listening on ADDR" once it listens, and a line per command.
"""
import argparse
import selectors
import signal
import socket
import struct
import sys
import time

BUF = 65536


def hostport(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


class Proxy:
    def __init__(self, listen, target, stall, buf):
        self.target = target
        self.buf = buf
        self.stall_s = stall
        self.stalled_until = 0.0
        self.sel = selectors.DefaultSelector()
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sizebuf(self.lsock)  # accepted sockets inherit it
        self.lsock.bind(listen)
        self.lsock.listen(64)
        self.lsock.setblocking(False)
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        self.peer = {}  # socket -> its other end
        self.pending = {}  # socket -> bytes not yet written to it
        self.cmds = []
        self.resets = 0
        self.stalls = 0

    def sizebuf(self, s):
        """Fixed kernel buffers, so what a dead connection loses in here is bounded."""
        if self.buf > 0:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.buf)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.buf)

    def accept(self):
        try:
            c, _ = self.lsock.accept()
        except BlockingIOError:
            return
        u = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sizebuf(u)
        try:
            u.connect(self.target)
        except OSError:
            self.abort(c)
            u.close()
            return
        for s in (c, u):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.pending[s] = b""
        self.peer[c], self.peer[u] = u, c
        self.sel.register(c, selectors.EVENT_READ, "conn")
        self.sel.register(u, selectors.EVENT_READ, "conn")

    @staticmethod
    def abort(s):
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        s.close()

    def drop(self, s, rst):
        o = self.peer.pop(s, None)
        for x in (s, o):
            if x is None:
                continue
            self.peer.pop(x, None)
            self.pending.pop(x, None)
            try:
                self.sel.unregister(x)
            except (KeyError, ValueError):
                pass
            if rst:
                self.abort(x)
            else:
                x.close()

    def reset_all(self):
        socks = list(self.peer)
        for s in socks:
            if s in self.peer:
                self.drop(s, True)
        self.resets += 1
        print(f"proxy: reset {len(socks) // 2} connections", flush=True)

    def stall(self):
        self.stalled_until = time.monotonic() + self.stall_s
        self.stalls += 1
        print(f"proxy: stall {self.stall_s:g} s", flush=True)

    def interest(self):
        """Reads a side only while its other side has no backlog; writes a backlog."""
        for s, o in self.peer.items():
            ev = 0 if self.pending.get(o) else selectors.EVENT_READ
            if self.pending.get(s):
                ev |= selectors.EVENT_WRITE
            try:
                cur = self.sel.get_key(s).events
            except KeyError:
                cur = 0
            if ev == cur:
                continue
            if cur == 0:
                self.sel.register(s, ev, "conn")
            elif ev == 0:
                self.sel.unregister(s)
            else:
                self.sel.modify(s, ev, "conn")

    def pump(self, s, mask):
        if s not in self.peer:
            return
        o = self.peer[s]
        if mask & selectors.EVENT_WRITE and self.pending.get(s):
            try:
                n = s.send(self.pending[s])
                self.pending[s] = self.pending[s][n:]
            except BlockingIOError:
                pass
            except OSError:
                self.drop(s, True)
                return
        if mask & selectors.EVENT_READ and not self.pending.get(o):
            try:
                b = s.recv(BUF)
            except BlockingIOError:
                return
            except OSError:
                self.drop(s, True)
                return
            if not b:
                self.drop(s, False)
                return
            try:
                n = o.send(b)
            except BlockingIOError:
                n = 0
            except OSError:
                self.drop(s, True)
                return
            self.pending[o] = b[n:]

    def run(self):
        signal.signal(signal.SIGUSR1, lambda *_: self.cmds.append("reset"))
        signal.signal(signal.SIGUSR2, lambda *_: self.cmds.append("stall"))
        signal.signal(signal.SIGTERM, lambda *_: self.cmds.append("exit"))
        print(f"proxy: listening on {self.lsock.getsockname()[0]}:"
              f"{self.lsock.getsockname()[1]}", flush=True)
        while True:
            while self.cmds:
                c = self.cmds.pop(0)
                if c == "exit":
                    print(f"proxy: exit resets={self.resets} stalls={self.stalls}", flush=True)
                    return
                if c == "reset":
                    self.reset_all()
                else:
                    self.stall()
            left = self.stalled_until - time.monotonic()
            if left > 0:
                # Stalled: nothing is read or accepted (new connections wait
                # in the backlog), so both sides' TCP windows close.
                time.sleep(min(left, 0.1))
                continue
            self.interest()
            for key, mask in self.sel.select(0.1):
                if key.data is None:
                    self.accept()
                else:
                    self.pump(key.fileobj, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, type=hostport)
    ap.add_argument("--to", required=True, type=hostport)
    ap.add_argument("--stall", type=float, default=5.0)
    ap.add_argument("--buf", type=int, default=0, help="SO_SNDBUF/SO_RCVBUF, 0: the kernel's")
    a = ap.parse_args()
    Proxy(a.listen, a.to, a.stall, a.buf).run()


if __name__ == "__main__":
    sys.exit(main())
