-- Rows formatted by a small function, sorted with a Lua comparator and concatenated, the
-- program timing its own phases with the thread's CPU clock (clock_gettime through the FFI, a
-- direct call from the traces, outside row and compare_len so their traces stay as they are).
-- The "grow" phase repeats the format loop with a constant string instead of row(i): what the
-- format loop costs besides row. Runs for SECONDS of its own CPU time (the same number of
-- samples on a loaded machine) and writes each phase's share of that time to OUT. The thread's
-- CPU clock is a system call: a sampler that stops threads at their next kernel entry (ptrace
-- mode) sees the calls far more often than the time they take.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } polystack_timespec;
  int clock_gettime(int clk, polystack_timespec *ts);
]]
local CLOCK_THREAD_CPUTIME_ID = 3
local ts = ffi.new("polystack_timespec")
local function now()
  ffi.C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local function row(i)
  return string.format("%6d  %-14s %12.4f", i, "item" .. (i * 7919 % 1000), math.sin(i) * 1000)
end

local function compare_len(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end

local spent = { grow = 0, format = 0, sort = 0, concat = 0 }
local filler = string.rep("x", 36)
local function report(n)
  local t0 = now()
  local grown = {}
  for i = 1, 200 do grown[i] = filler end
  local t1 = now()
  local rows = {}
  for i = 1, 200 do rows[i] = row(n + i) end
  local t2 = now()
  table.sort(rows, compare_len)
  local t3 = now()
  local text = table.concat(rows, "\n")
  local t4 = now()
  spent.grow = spent.grow + (t1 - t0)
  spent.format = spent.format + (t2 - t1)
  spent.sort = spent.sort + (t3 - t2)
  spent.concat = spent.concat + (t4 - t3)
  return text
end

local start = now()
local stop = start + (SECONDS or 5) * 1e9
local reports, total = 0, 0
while now() < stop do
  reports = reports + 1
  total = total + #report(reports)
end
local all = now() - start
local out = assert(io.open(OUT or "shares.txt", "w"))
for _, phase in ipairs({ "grow", "format", "sort", "concat" }) do
  out:write(string.format("%s %.6f\n", phase, spent[phase] / all))
end
out:write(string.format("reports %d\n", reports))
out:close()
print(total)
