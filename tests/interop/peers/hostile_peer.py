#!/usr/bin/python3
"""Hostile ZMTP peers for tests/interop/test_curve_sockets.c, written with the
plain socket module (no zmq, no crypto): they speak just enough ZMTP 3.1 to
get past the greeting and then misbehave.

Usage:
  hostile_peer.py hello PORT KIND
      Connects to a CURVE server on 127.0.0.1:PORT, sends a greeting
      announcing CURVE as a client, reads the server's greeting, then sends a
      HELLO command of KIND:
          garbage  the right size (200 octets of body), random box
          short    a HELLO 10 octets too short
          version  a valid layout but CurveZMQ version 9.9
          huge     (no HELLO) a command frame header declaring 2^40 octets
          message  (no HELLO) a MESSAGE command of HELLO's size
          data     (no HELLO) a data frame, not a command
      Writes "GREETING <mechanism>" after the server's greeting, then
      "CLOSED <n> <hex>" once the server closed the connection: n octets came
      after the greeting (hex: the first 64 of them), or "OPEN" if the server
      still held it open after 5 s.

  hostile_peer.py mute
      Listens on 127.0.0.1 (first line "PORT <port>"), and on every
      connection sends a greeting announcing CURVE as a server, then reads
      and discards whatever comes, never answering. Stops on end of file on
      stdin.

  hostile_peer.py relay TARGET_PORT MODE N
      Listens on 127.0.0.1 (port chosen by the kernel; first line
      "PORT <port>") and relays every accepted connection to
      127.0.0.1:TARGET_PORT. On the first connection only, the client's
      MESSAGE commands (CURVE traffic, counted from 1 after the handshake)
      are altered at the Nth one:
          flip     one octet of its ciphertext is inverted
          replay   it is sent twice
          swap     it goes after the N+1th (nonces out of order)
          dropinit the client's INITIATE and all after it are swallowed
                   (N is ignored)
          flipinit the last octet of the client's INITIATE is inverted
                   (N is ignored)
          sniff    nothing is altered; when the client closes its first
                   connection, "SNIFF seen" or "SNIFF clean" tells whether
                   the octets "zring-plaintext-marker" crossed the relay
                   in the clear (client to server)
          replayconn  nothing is altered, but once N MESSAGEs went through,
                   everything the client sent so far (greeting, HELLO,
                   INITIATE, the N MESSAGEs) is replayed verbatim on a new
                   connection to the target; then "REPLAY_CLOSED <n>" (n:
                   octets the target sent back before closing) or
                   "REPLAY_OPEN" if it kept that connection for 5 s
      Writes "TAMPERED <conn>" when it did, and "UPSTREAM_CLOSED <conn>" when
      the server closed a relayed connection. Other bytes pass unchanged,
      both ways. Stops on end of file on stdin.
"""

import os
import socket
import sys
import threading


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def greeting(mechanism, as_server):
    g = bytearray(64)
    g[0] = 0xFF
    g[9] = 0x7F
    g[10] = 3
    g[11] = 1
    m = mechanism.encode()
    g[12 : 12 + len(m)] = m
    g[32] = 1 if as_server else 0
    return bytes(g)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            return None
        b += chunk
    return b


def frame(body, command=True):
    flags = 0x04 if command else 0
    if len(body) > 255:
        return bytes([flags | 0x02]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def hello_main(port, kind):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(greeting("CURVE", False))
    g = recv_exact(s, 64)
    if g is None:
        out("CLOSED 0 ")
        return
    out("GREETING " + g[12:32].rstrip(b"\0").decode("ascii", "replace"))
    # HELLO: name, version 1.0, 72 octets of padding, C' 32, short nonce 8,
    # signature box 80 (RFC 26): 200 octets of body.
    version = b"\x01\x00" if kind != "version" else b"\x09\x09"
    body = b"\x05HELLO" + version + bytes(72) + os.urandom(32) + os.urandom(8) + os.urandom(80)
    if kind == "short":
        body = body[:-10]
    if kind == "huge":
        s.sendall(bytes([0x06]) + (1 << 40).to_bytes(8, "big") + b"\x05HELLO")
    elif kind == "message":
        s.sendall(frame(b"\x07MESSAGE" + os.urandom(192)))
    elif kind == "data":
        s.sendall(frame(b"hello", command=False))
    else:
        s.sendall(frame(body))
    got = b""
    s.settimeout(5)
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                out("CLOSED %d %s" % (len(got), got[:64].hex()))
                return
            got += chunk
    except socket.timeout:
        out("OPEN")
    except ConnectionResetError:
        out("CLOSED %d %s" % (len(got), got[:64].hex()))


class Relay:
    def __init__(self, target_port, mode, n):
        self.target_port = target_port
        self.mode = mode
        self.n = n
        self.conns = 0
        self.lock = threading.Lock()

    def serve(self, ls):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            with self.lock:
                self.conns += 1
                k = self.conns
            try:
                u = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                c.close()
                continue
            for sk in (c, u):
                sk.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.down, args=(u, c, k), daemon=True).start()
            threading.Thread(target=self.up, args=(c, u, k), daemon=True).start()

    def down(self, u, c, k):
        """Server -> client: unchanged."""
        while True:
            try:
                b = u.recv(65536)
            except OSError:
                b = b""
            if not b:
                out("UPSTREAM_CLOSED %d" % k)
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            try:
                c.sendall(b)
            except OSError:
                return

    def up(self, c, u, k):
        """Client -> server: frame by frame, so one MESSAGE can be altered."""
        buf = b""
        greeted = False
        messages = 0
        held = None
        # replayconn: what conn 1 sent, up to and including the Nth MESSAGE
        record = bytearray() if k == 1 and self.mode == "replayconn" else None
        sniffed = bytearray() if k == 1 and self.mode == "sniff" else None
        while True:
            try:
                b = c.recv(65536)
            except OSError:
                b = b""
            if sniffed is not None:
                sniffed += b
            if not b:
                if sniffed is not None:
                    out("SNIFF " + ("seen" if b"zring-plaintext-marker" in sniffed else "clean"))
                try:
                    u.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            buf += b
            outb = b""
            if not greeted:
                if len(buf) < 64:
                    continue
                outb, buf, greeted = buf[:64], buf[64:], True
                if record is not None:
                    record += outb
            while True:
                if len(buf) < 2:
                    break
                flags = buf[0]
                if flags & 0x02:
                    if len(buf) < 9:
                        break
                    size, hl = int.from_bytes(buf[1:9], "big"), 9
                else:
                    size, hl = buf[1], 2
                if len(buf) < hl + size:
                    break
                f, buf = buf[: hl + size], buf[hl + size :]
                is_msg = k == 1 and f[hl : hl + 8] == b"\x07MESSAGE"
                if k == 1 and self.mode == "dropinit" and f[hl : hl + 9] == b"\x08INITIATE":
                    out("TAMPERED %d" % k)
                    buf = b""
                    while c.recv(65536):
                        pass
                    return
                if k == 1 and self.mode == "flipinit" and f[hl : hl + 9] == b"\x08INITIATE":
                    outb += f[:-1] + bytes([f[-1] ^ 0xFF])
                    out("TAMPERED %d" % k)
                    continue
                if is_msg:
                    messages += 1
                if record is not None:
                    record += f
                    if is_msg and messages == self.n:
                        threading.Thread(target=self.replay, args=(bytes(record),),
                                         daemon=True).start()
                        record = None
                elif is_msg and messages == self.n and self.mode != "replayconn":
                    if self.mode == "flip":
                        outb += f[:-1] + bytes([f[-1] ^ 0xFF])
                    elif self.mode == "replay":
                        outb += f + f
                    elif self.mode == "swap":
                        held = f
                    out("TAMPERED %d" % k)
                    continue
                elif is_msg and held is not None:
                    outb += f + held
                    held = None
                    continue
                outb += f
            if outb:
                try:
                    u.sendall(outb)
                except OSError:
                    return

    def replay(self, record):
        """Sends a recorded client stream verbatim on a new connection."""
        r = socket.create_connection(("127.0.0.1", self.target_port))
        r.sendall(record)
        got = 0
        r.settimeout(5)
        try:
            while True:
                b = r.recv(65536)
                if not b:
                    break
                got += len(b)
        except socket.timeout:
            out("REPLAY_OPEN")
            return
        except OSError:
            pass
        out("REPLAY_CLOSED %d" % got)


def mute_conn(c):
    try:
        c.sendall(greeting("CURVE", True))
        while c.recv(65536):
            pass
    except OSError:
        pass


def mute_main():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    out("PORT %d" % ls.getsockname()[1])

    def serve():
        while True:
            c, _ = ls.accept()
            threading.Thread(target=mute_conn, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    sys.stdin.read()
    os._exit(0)


def relay_main(target_port, mode, n):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    out("PORT %d" % ls.getsockname()[1])
    r = Relay(target_port, mode, n)
    threading.Thread(target=r.serve, args=(ls,), daemon=True).start()
    sys.stdin.read()
    os._exit(0)


def main():
    try:
        if sys.argv[1] == "hello":
            hello_main(int(sys.argv[2]), sys.argv[3])
        elif sys.argv[1] == "mute":
            mute_main()
        elif sys.argv[1] == "relay":
            relay_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        else:
            out("FATAL unknown mode " + sys.argv[1])
            sys.exit(3)
    except Exception as e:
        out("FATAL %s: %s" % (type(e).__name__, e))
        sys.exit(3)


if __name__ == "__main__":
    main()
