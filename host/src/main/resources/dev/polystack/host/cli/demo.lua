-- polystack demo workload: a few named Lua functions that keep the CPU busy for a few seconds,
-- reading the clock through the vDSO as they go (os.clock calls clock_gettime, os.time calls
-- time), so one run shows Lua frames in the flame graph and vDSO calls in the trace.
-- Usage: luajit demo.lua [SECONDS]
local seconds = tonumber(arg and arg[1]) or 4

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function checksum(text)
  local h = 0
  for i = 1, #text do
    h = (h * 31 + text:byte(i)) % 2147483647
  end
  return h
end

local function build_report(round)
  local parts = {}
  for i = 1, 200 do
    parts[#parts + 1] = string.format("%d:%d", round, i * i)
  end
  return table.concat(parts, ",")
end

local function sort_batch(round)
  local t = {}
  for i = 1, 500 do t[i] = (i * 7919 + round) % 1009 end
  table.sort(t)
  return t[1]
end

local started = os.time()
local deadline = os.clock() + seconds
local rounds, total = 0, 0
repeat
  total = total + fib(18) + checksum(build_report(rounds)) + sort_batch(rounds)
  rounds = rounds + 1
  -- Every few rounds only: each traced call costs the perf backend a breakpoint sample.
until rounds % 4 == 0 and os.clock() >= deadline
print(string.format("demo.lua: %d rounds in about %d s (checksum %d)", rounds,
  os.time() - started, total % 1000))
