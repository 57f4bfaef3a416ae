-- Phases that alternate every few tens of microseconds, timed by the program itself.
-- Each phase is its own function, called by name, so a profile attributes a sample to the phase
-- whose function is on the stack. Each phase call is timed with clock_gettime(CLOCK_MONOTONIC)
-- through the FFI: the vDSO answers it without a system call (~25 ns, against phases of
-- 15-40 us), so the timing neither costs much nor draws a syscall-biased profiler to it.
-- Usage: luajit phases.lua SECONDS [OUT] [cpu]   (writes "phase share mean_us" lines to OUT or
-- stdout). With "cpu" each phase, and SECONDS, are timed in the thread's CPU time
-- (CLOCK_THREAD_CPUTIME_ID, a system call of well under a microsecond) instead of the wall
-- clock: time spent waiting for a CPU then counts nowhere, as for a CPU-clock sampler, so the
-- truth and the number of samples hold on a busy host too (which only makes the run longer).
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } polystack_timespec;
int clock_gettime(int clk, polystack_timespec *ts);
]]
local ts = ffi.new("polystack_timespec")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local seconds = tonumber(arg[1]) or 5
local out = arg[2]
local timed = now
if arg[3] == "cpu" then
  timed = function()
    ffi.C.clock_gettime(3, ts) -- CLOCK_THREAD_CPUTIME_ID
    return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
  end
end

local sink = 0

local function arith(n)
  local x = 0
  for i = 1, n do x = (x * 31 + i) % 1000003 end
  sink = sink + x
end

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function recursive(n)
  sink = sink + fib(n)
end

local function tables(n)
  local t = {}
  for i = 1, n do t[i] = i * 2 end
  local s = 0
  for i = 1, n do s = s + t[i] end
  sink = sink + s
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = tostring(i) end
  sink = sink + #table.concat(parts, ",")
end

local function clock(n)
  local c = 0
  for _ = 1, n do c = c + os.clock() end
  sink = sink + c
end

-- name, function, argument; clock's argument makes it ~1% of the time.
local phases = {
  {"arith", arith, 1500},
  {"recursive", recursive, 14},
  {"tables", tables, 1000},
  {"strings", strings, 150},
  {"clock", clock, 8},
}
-- The interleaving: a pattern that changes phase at every step.
local pattern = {1, 2, 3, 1, 4, 2, 1, 3, 5, 2, 4, 1, 3, 2, 4}

-- Called by name, so that every profiler names the frames as the source does.
local function step(k)
  if k == 1 then arith(phases[1][3])
  elseif k == 2 then recursive(phases[2][3])
  elseif k == 3 then tables(phases[3][3])
  elseif k == 4 then strings(phases[4][3])
  else clock(phases[5][3]) end
end

local runs, spent = {}, {}
for i = 1, #phases do runs[i], spent[i] = 0, 0 end
local deadline = timed() + seconds * 1e9
repeat
  for _ = 1, 20 do
    for _, k in ipairs(pattern) do
      local t0 = timed()
      step(k)
      spent[k] = spent[k] + (timed() - t0)
      runs[k] = runs[k] + 1
    end
  end
until timed() > deadline

local total = 0
for i = 1, #phases do total = total + spent[i] end
local lines = {}
for i, p in ipairs(phases) do
  lines[#lines + 1] = string.format("%s %.5f %.2f", p[1], spent[i] / total,
    spent[i] / runs[i] / 1e3)
end
local text = table.concat(lines, "\n") .. "\n"
if out then
  local f = assert(io.open(out, "w"))
  f:write(text)
  f:close()
else
  io.write(text)
end
