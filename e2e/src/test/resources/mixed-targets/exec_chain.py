# CPythonMixedTest: one process that is Python, then luajit, then Python again. It burns CPU in
# py_before, execs luajit on exec_chain.lua, which burns CPU in lua_phase and execs this
# program again with "after", which burns CPU in py_after and ends. Each phase appends
# "PHASE PID CPU_NS" to LOG: the process's pid and the CPU time it burned in its function.
# Usage: python3.11 exec_chain.py LUAJIT LUA_SCRIPT CPU_SECONDS LOG [after]
import os, sys, time


def burn(seconds):
    total = 0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for i in range(10000):
            total += i * i
    return total


def py_before(seconds):
    return burn(seconds)


def py_after(seconds):
    return burn(seconds)


def phase(name, function, seconds, log):
    start = time.thread_time_ns()
    function(seconds)
    used = time.thread_time_ns() - start
    with open(log, "a") as out:
        out.write(f"{name} {os.getpid()} {used}\n")


luajit, script, seconds, log = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
if sys.argv[5:] == ["after"]:
    phase("py_after", py_after, seconds, log)
else:
    phase("py_before", py_before, seconds, log)
    os.execv(luajit, [luajit, script, sys.executable, os.path.abspath(__file__), luajit,
                      sys.argv[3], log])
