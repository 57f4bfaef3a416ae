# Python half of mixed.c (CPythonMixedTest checks the lines sampled in py_burn).
import host  # mixed.c's own module: host.lua() calls lua_entry


def py_burn(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def py_warmup(n):
    return py_burn(n)


def py_entry(n):
    return py_burn(n)


def py_outer(n):
    py_burn(n // 2)
    host.lua()  # Python -> C -> Lua
    return 0
