-- A LuaJIT CPU benchmark for bench/run-luajit.sh: a fixed amount of work (recursion, method
-- calls, table and string work) that times itself with CLOCK_MONOTONIC and writes the elapsed
-- seconds to the file named by its second argument, so profiler start-up is not counted (and,
-- after them, the thread's run queue wait in nanoseconds when the kernel has schedstats).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clk, bench_timespec *tp);
]]
local function now()
  local ts = ffi.new("bench_timespec")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

local N = tonumber(arg[1] or 40)
local out = arg[2] or "/dev/null"
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local Acc = {}
Acc.__index = Acc
function Acc.new() return setmetatable({ v = 0 }, Acc) end
function Acc:add(x) self.v = (self.v + x) % 1000003 end
local function strings(n)
  local t = {}
  for i = 1, n do t[#t + 1] = tostring(i * 7) end
  return #table.concat(t, ",")
end

local start = now()
local acc = Acc.new()
for round = 1, N do
  acc:add(fib(27))
  acc:add(strings(20000))
end
local elapsed = now() - start
-- The run queue wait of this (main) thread over its life, from the kernel's schedstat (run ns,
-- wait ns, slices): time it was runnable but another thread had its CPU. A profiler that runs
-- beside the target shows here, whatever the machine's speed does to the elapsed time.
local wait = ""
local ss = io.open("/proc/self/schedstat")
if ss then
  local line = ss:read("*l") or ""
  ss:close()
  local w = line:match("^%d+ (%d+)")
  if w then wait = " " .. w end
end
local f = assert(io.open(out, "w"))
f:write(string.format("%.6f%s\n", elapsed, wait))
f:close()
