#!/usr/bin/python3
"""bench_zmqapi.py: bench_zmqapi's PUSH/PULL throughput through pyzmq.

    python3 zmq_api.py thr-recv pushpull ENDPOINT COUNT SIZE   PULL binds, receives, reports
    python3 zmq_api.py thr-send pushpull ENDPOINT COUNT SIZE   PUSH connects, sends, reports
    python3 zmq_api.py which                                   the library line alone

The same script runs on the system's libzmq and, with LD_LIBRARY_PATH at
zring's drop-in, on zring (`zring bench`, scenario "zmq.h API via pyzmq").
The protocol is bench_zmqapi's (bench/zmq_api.c): "READY <endpoint>" from the
binding side, one "RESULT ..." line from each side ending with
"zmq_version=X.Y.Z zring=0|1 libzmq_path=PATH": the library that really ran it
(zmq.has("zring") is the drop-in's marker; the path is the libzmq.so mapping
in /proc/self/maps). pyzmq's plain idiom: send(bytes), recv() (copy=True,
the faster for small messages). Settings as bench_zmqapi's.
"""
import os
import resource
import signal
import sys
import time

import zmq

HWM = 1000
WAIT_MS = 10000  # longest wait for any one message
ALARM_S = 300


def lib_tail():
    path = "none"
    with open("/proc/self/maps") as maps:
        for line in maps:
            i = line.find("/")
            if i >= 0 and os.path.basename(line[i:].rstrip("\n")).startswith("libzmq.so"):
                path = line[i:].rstrip("\n")
                break
    return " zmq_version=%s zring=%d libzmq_path=%s" % (
        zmq.zmq_version(), 1 if zmq.has("zring") else 0, path)


def cpu_s():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def sock(ctx, kind, linger):
    s = ctx.socket(kind)
    s.setsockopt(zmq.SNDHWM, HWM)
    s.setsockopt(zmq.RCVHWM, HWM)
    s.setsockopt(zmq.LINGER, linger)
    s.setsockopt(zmq.RCVTIMEO, WAIT_MS)
    return s


def head(mode, count, size):
    return "RESULT lib=pyzmq mode=%s size=%d count=%d" % (mode, size, count)


def thr_recv(ep, count, size):
    ctx = zmq.Context(io_threads=1)
    s = sock(ctx, zmq.PULL, 0)
    s.bind(ep)
    print("READY " + s.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    t0 = c0 = 0.0
    recv = s.recv
    for i in range(count):
        try:
            m = recv()
        except zmq.Again:
            sys.stderr.write("FAIL pyzmq thr-recv: got %d of %d messages\n" % (i, count))
            return 1
        if len(m) != size:
            sys.stderr.write("FAIL pyzmq thr-recv: message %d has %d bytes, want %d\n"
                             % (i, len(m), size))
            return 1
        if i == 0:
            t0 = time.monotonic()
            c0 = cpu_s()
    t1, c1 = time.monotonic(), cpu_s()
    s.close()
    ctx.term()
    secs = t1 - t0
    msgs = count - 1 if count > 1 else 1
    rate = msgs / secs if secs > 0 else 0
    print(head("thr-recv", count, size) +
          " secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f" %
          (secs, rate, rate * size / 1e6, (c1 - c0) / msgs * 1e6) + lib_tail(), flush=True)
    return 0


def thr_send(ep, count, size):
    ctx = zmq.Context(io_threads=1)
    s = sock(ctx, zmq.PUSH, -1)
    s.connect(ep)
    buf = b"z" * size
    send = s.send
    t0, c0 = time.monotonic(), cpu_s()
    for _ in range(count):
        send(buf)
    s.close()
    ctx.term()  # LINGER -1: returns when everything is out
    secs, cpu = time.monotonic() - t0, cpu_s() - c0
    print(head("thr-send", count, size) +
          " secs=%.6f msgs_per_s=%.0f mb_per_s=%.3f cpu_s_per_M=%.4f" %
          (secs, count / secs if secs > 0 else 0,
           count * size / secs / 1e6 if secs > 0 else 0, cpu / count * 1e6) + lib_tail(),
          flush=True)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "which":
        print("LIBZMQ" + lib_tail())
        return 0
    if len(argv) != 6 or argv[1] not in ("thr-recv", "thr-send") or argv[2] != "pushpull":
        sys.stderr.write("usage: %s thr-recv|thr-send pushpull ENDPOINT COUNT SIZE\n" % argv[0])
        return 2
    count, size = int(argv[4]), int(argv[5])
    if count < 1 or size < 0:
        return 2
    signal.alarm(ALARM_S)
    return (thr_recv if argv[1] == "thr-recv" else thr_send)(argv[3], count, size)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
