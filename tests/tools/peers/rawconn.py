"""A peer's end of a raw ZMTP connection, shared by the planted peers: a
receive buffer filled on demand, with an optional deadline."""

import socket
import time


class Closed(Exception):
    """The connection is over: closed, reset, past its deadline, or refused."""


class RawConn:
    def __init__(self, sock):
        self.s = sock
        self.buf = bytearray()
        self.deadline = None  # time.monotonic() by which need() must be met

    def need(self, n):
        while len(self.buf) < n:
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise Closed()
                self.s.settimeout(left)
            else:
                self.s.settimeout(None)
            try:
                chunk = self.s.recv(1 << 16)
            except (socket.timeout, OSError):
                raise Closed()
            if not chunk:
                raise Closed()
            self.buf += chunk

    def take(self, n):
        self.need(n)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def send(self, data):
        self.s.sendall(data)
