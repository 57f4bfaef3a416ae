-- A LuaJIT CPU benchmark that measures the time taken from it (bench/run-luajit.sh): the same
-- kind of work as cpu.lua (recursion, method calls, string work), with a clock read every
-- microsecond or so, in the innermost calls, so that the Lua stack is as deep as cpu.lua's.
-- A gap between two reads longer than GAP_NS is time the thread did not run this code: a
-- profiler's stop, its in-process handler, an interrupt, a preemption. Their sum does not move
-- with the machine's speed, unlike the elapsed time of a fixed amount of work, which on this VM
-- wanders by 5-15% from run to run (by 10% from one 50 ms to the next); a profiler's cost of a
-- few tenths of a percent shows in the first and drowns in the second. What it misses: gaps
-- shorter than GAP_NS, and a slower run between the gaps (caches a profiler evicted).
-- usage: luajit lost.lua SECONDS OUT [GAP_NS (default 5000)]
-- writes to OUT: "seconds lost_ns gaps reads run_queue_wait_ns"; with LOST_GAPS=FILE set, also
-- every gap ("start_ns_since_start length_ns") to FILE, to see which gaps a profiler adds.
local ffi = require("ffi")
-- struct timespec as 32-bit halves (x86-64, little-endian): reading a 64-bit field makes an
-- int64 cdata, an allocation per clock read when interpreted; these read as plain numbers.
ffi.cdef [[
  typedef struct { uint32_t sec, sec_hi, nsec, nsec_hi; } lost_timespec;
  int clock_gettime(int clk, lost_timespec *tp);
]]
local C = ffi.C
local ts = ffi.new("lost_timespec")
local function now_ns()
  C.clock_gettime(1, ts)
  return (ts.sec_hi * 4294967296 + ts.sec) * 1e9 + ts.nsec
end

local seconds = tonumber(arg[1] or 5)
local out = arg[2] or "/dev/null"
local gap_ns = tonumber(arg[3] or 5000)
local prev, lost, gaps, reads = now_ns(), 0, 0, 0
local gap_log = os.getenv("LOST_GAPS")
local MAXLOG = 200000
local logged = gap_log and ffi.new("double[?]", 2 * MAXLOG)
-- Clock reads between two gaps take about 0.4 us interpreted, 0.05 us compiled; GAP_NS sits
-- well above both and below the shortest profiler stop (some tens of microseconds).
local function check()
  local t = now_ns()
  local d = t - prev
  if d > gap_ns then
    lost = lost + d; gaps = gaps + 1
    if logged and gaps <= MAXLOG then logged[2 * gaps - 2] = prev; logged[2 * gaps - 1] = d end
  end
  prev = t
  reads = reads + 1
end

local function fib(n)
  if n < 3 then check() return 1 end
  return fib(n - 1) + fib(n - 2)
end
local Acc = {}
Acc.__index = Acc
function Acc.new() return setmetatable({ v = 0 }, Acc) end
function Acc:add(x) self.v = (self.v + x) % 1000003 check() end
-- No allocation in the loop: a garbage collector step would be a gap of the benchmark's own.
local words = {}
for i = 1, 512 do words[i] = "w" .. (i * 7) end
local text = table.concat(words, ",")
local function scan(n)
  local sum, pos = 0, 1
  for i = 1, n do
    local w = words[(i % 512) + 1]
    sum = sum + #w + (text:byte((i % #text) + 1))
    local s = text:find(",", pos, true)
    pos = s and s + 1 or 1
    check()
  end
  return sum
end
local start = now_ns()
local stop = start + seconds * 1e9
prev = start
local acc = Acc.new()
while prev < stop do
  acc:add(fib(20))
  acc:add(scan(2000))
end
local elapsed = now_ns() - start
local wait = 0
local ss = io.open("/proc/self/schedstat")
if ss then
  wait = tonumber((ss:read("*l") or ""):match("^%d+ (%d+)")) or 0
  ss:close()
end
local f = assert(io.open(out, "w"))
f:write(string.format("%.6f %d %d %d %d\n", elapsed / 1e9, lost, gaps, reads, wait))
f:close()
if logged then
  local g = assert(io.open(gap_log, "w"))
  for i = 0, math.min(gaps, MAXLOG) - 1 do
    g:write(string.format("%.0f %.0f\n", logged[2 * i] - start, logged[2 * i + 1]))
  end
  g:close()
end
