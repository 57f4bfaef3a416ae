# CPythonMixedTest: Python threads that start once the recording runs. The main thread sleeps,
# then starts two threads that burn CPU in late_a and late_b and waits for them; each thread
# appends "NAME TID CPU_NS" to LOG: its kernel tid and the CPU time it burned.
# Usage: python3.11 late_threads.py DELAY_SECONDS CPU_SECONDS LOG
import sys, threading, time


def burn(seconds):
    total = 0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for i in range(10000):
            total += i * i
    return total


def late_a(seconds):
    return burn(seconds)


def late_b(seconds):
    return burn(seconds)


def run(function, seconds, log, lock):
    start = time.thread_time_ns()
    function(seconds)
    used = time.thread_time_ns() - start
    with lock, open(log, "a") as out:
        out.write(f"{function.__name__} {threading.get_native_id()} {used}\n")


delay, seconds, log = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(delay)
lock = threading.Lock()
threads = [threading.Thread(target=run, args=(f, seconds, log, lock)) for f in (late_a, late_b)]
for t in threads:
    t.start()
for t in threads:
    t.join()
