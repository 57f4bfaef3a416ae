#!/usr/bin/env python3
"""A threaded Python program whose phases time themselves with the thread CPU clock.

Usage: python_phases.py OUT_PHASES SECONDS [THREADS]
Each thread repeats `step`: a phase in pure Python (py_loop, py_sort), one in a C extension
call that releases the GIL (c_hash, hashlib over 1 MiB), and a sleep (nap, no CPU). Per phase
it adds the CPU time the thread used in it (time.thread_time). At the end OUT_PHASES gets one
line per CPU phase, "name share seconds", the share of the CPU time of all CPU phases: what an
on-CPU profile should show (bench/phase_shares.py compares a folded profile with it).
OUT_PHASES.cpu gets "cpu_seconds wall_seconds steps" of the whole process: its CPU and wall
time, for the profilers' cost, and the steps all threads completed, the work done in the fixed
time, for the target's slowdown under a profiler.
"""
import hashlib
import sys
import threading
import time

BLOCK = b"x" * (1 << 20)
WEIGHTS = {"py_loop": 3, "py_sort": 2, "c_hash": 2}


def py_loop(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def py_sort(n):
    return sorted(range(n, 0, -1), key=lambda v: (v * 7919) % 1009)


def c_hash(n):
    for _ in range(n):
        hashlib.sha256(BLOCK).digest()


def nap(_n):
    time.sleep(0.002)


PHASES = {"py_loop": (py_loop, 30000), "py_sort": (py_sort, 8000), "c_hash": (c_hash, 2)}


def step(used):
    for name, (fn, n) in PHASES.items():
        for _ in range(WEIGHTS[name]):
            t0 = time.thread_time()
            fn(n)
            used[name] += time.thread_time() - t0
    nap(0)


def worker(seconds, results):
    used = {name: 0.0 for name in PHASES}
    steps = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        step(used)
        steps += 1
    used["steps"] = steps
    results.append(used)


def main():
    out, seconds = sys.argv[1], float(sys.argv[2])
    wall0 = time.monotonic()
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    results = []
    pool = [threading.Thread(target=worker, args=(seconds, results)) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    total = {name: sum(r[name] for r in results) for name in PHASES}
    cpu = sum(total.values())
    with open(out, "w") as f:
        for name, used in total.items():
            f.write("%s %.6f %.6f\n" % (name, used / cpu, used))
    with open(out + ".cpu", "w") as f:
        f.write("%.3f %.3f %d\n" % (time.process_time(), time.monotonic() - wall0,
                                     sum(r["steps"] for r in results)))


if __name__ == "__main__":
    main()
