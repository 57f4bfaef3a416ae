# The program the kit's cases are recorded from (README.md, "Tests"). The main thread spins in
# innermost() for ever, through worker() and middle(), and is the only thread that wants the GIL:
# a snapshot finds its leaf in the evaluation loop, and walks it first. Thread k of argv[1]
# threads makes 10 * k + 1 recursive calls of recurse() and sleeps in park() without the GIL,
# its Python frames under the C sleep. "ready" is printed once every thread is parked.
import sys
import threading
import time

parked = threading.Semaphore(0)


def innermost(n):
    while True:
        a = n
        n = a


def middle(n):
    innermost(n)


def worker(n):
    middle(n)


def park():
    parked.release()
    while True:
        time.sleep(3600)


def recurse(depth):
    if depth == 0:
        park()
    recurse(depth - 1)


class Job:
    def __init__(self, depth):
        self.depth = depth

    def run(self):
        if self.depth:
            recurse(self.depth)
        worker(1)


threads = [threading.Thread(target=Job(10 * k).run, daemon=True)
           for k in range(1, int(sys.argv[1]) + 1)]
for t in threads:
    t.start()
for t in threads:
    parked.acquire()
print("ready", flush=True)
Job(0).run()
