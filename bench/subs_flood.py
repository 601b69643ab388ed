#!/usr/bin/python3
"""Subscription flood against `zring cat -w -b PUB`, measured.

    bench/subs_flood.py ZRING_BINARY [N [CAT_ARGS...]]

Starts `ZRING cat -w -b PUB tcp://127.0.0.1:PORT CAT_ARGS` (e.g. -o
SUBS_MAXBYTES=-1 to see the trie without the limit) fed one line every 5 ms,
connects a hand-written ZMTP 3.1 subscriber that sends N (default 100,000)
distinct 16-octet SUBSCRIBE commands at once (28 octets each on the wire),
then at once connects a pyzmq SUB (subscribed to everything) and times its
first message, then waits until the PUB's CPU time stops growing. Prints
the PUB's CPU seconds spent from the flood on, its peak RSS growth,
whether it closed the flooding connection, and the SUB's wait.
"""

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import zmq


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def read_full(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def handshake(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    greeting = b"\xff" + b"\0" * 7 + b"\x01\x7f\x03\x01" + b"NULL" + b"\0" * 16 + b"\0" + b"\0" * 31
    body = b"\x05READY\x0bSocket-Type" + struct.pack(">I", 3) + b"SUB"
    s.sendall(greeting + bytes([4, len(body)]) + body)
    read_full(s, 64)
    flags, size = read_full(s, 2)
    read_full(s, size)
    return s


def main():
    zring = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    ep = "tcp://127.0.0.1:%d" % port
    pub = subprocess.Popen([zring, "cat", "-w", "-b", "PUB", ep] + sys.argv[3:], stdin=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            try:
                pub.stdin.write(b"tick\n")
                pub.stdin.flush()
            except OSError:
                return
            time.sleep(0.005)

    threading.Thread(target=feed, daemon=True).start()
    time.sleep(0.5)
    s = handshake(port)
    flood = b"".join(b"\x04\x1a\x09SUBSCRIBE" + b"flood-%010d" % i for i in range(n))
    cpu0, rss0 = cpu_s(pub.pid), kb(pub.pid, "VmRSS")
    closed = False
    try:
        s.sendall(flood)
    except OSError:
        closed = True
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.rcvtimeo = 60000
    t0 = time.monotonic()
    sub.connect(ep)
    sub.recv()
    wait = time.monotonic() - t0
    # Wait until the PUB has digested the flood: its CPU time stops growing.
    last, still = cpu_s(pub.pid), 0
    while still < 10:
        time.sleep(0.1)
        now = cpu_s(pub.pid)
        still = still + 1 if now - last < 0.02 else 0
        last = now
    s.settimeout(0.2)
    try:
        while True:
            if not s.recv(65536):
                closed = True
                break
    except socket.timeout:
        pass
    except OSError:
        closed = True
    flood_cpu = cpu_s(pub.pid) - cpu0
    peak = kb(pub.pid, "VmHWM") - rss0

    print("flood of %d SUBSCRIBEs (%.1f MB): PUB CPU %.2f s, peak RSS +%d kB, flooder %s; "
          "a SUB connecting after got its first message in %.3f s"
          % (n, len(flood) / 1e6, flood_cpu, peak, "disconnected" if closed else "still connected",
             wait))
    stop.set()
    sub.close(0)
    ctx.term()
    s.close()
    pub.kill()
    pub.wait()
    err = pub.stderr.read().decode(errors="replace").strip()
    if err:
        print("zring cat stderr: " + err.replace("\n", " | "))


if __name__ == "__main__":
    main()
