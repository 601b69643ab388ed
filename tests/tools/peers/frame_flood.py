#!/usr/bin/python3
"""Floods a ZMTP 3.1 NULL server with empty MORE frames (01 00) that never
end their message: the peer the frame-per-message limit (MAXFRAMES) is for.
Plain socket module, no zmq.

Usage:
  frame_flood.py PORT MIB [PID]
      Connects to 127.0.0.1:PORT, sends a NULL greeting and a PUSH READY,
      reads the server's greeting and READY, then writes up to MIB MiB of
      01 00. Prints "SENT <octets>" and then "CLOSED" if the server closed
      the connection (the write failed or it read end of file) or "OPEN" if
      it still held it 5 s after the last write. With PID, also prints
      "RSS <kib>" (VmRSS of that process) before the flood and after it.
"""

import socket
import sys
import time


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def greeting():
    g = bytearray(64)
    g[0] = 0xFF
    g[9] = 0x7F
    g[10] = 3
    g[11] = 1
    g[12:16] = b"NULL"
    return bytes(g)


def ready(socktype):
    body = b"\x05READY" + b"\x0bSocket-Type" + len(socktype).to_bytes(4, "big") + socktype
    return bytes([0x04, len(body)]) + body


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise EOFError
        b += chunk
    return b


def main():
    port = int(sys.argv[1])
    total = int(sys.argv[2]) << 20
    pid = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(greeting() + ready(b"PUSH"))
    recv_exact(s, 64)
    hdr = recv_exact(s, 2)
    recv_exact(s, hdr[1])  # the server's READY
    if pid:
        out("RSS %d" % rss_kib(pid))
    chunk = b"\x01\x00" * 32768
    sent = 0
    closed = False
    s.settimeout(10)
    try:
        while sent < total:
            s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        closed = True
    out("SENT %d" % sent)
    if pid:
        out("RSS %d" % rss_kib(pid))
    if not closed:
        s.settimeout(5)
        try:
            closed = s.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
    out("CLOSED" if closed else "OPEN")


if __name__ == "__main__":
    main()
