-- bench/run-lua-site-cost.sh's target: for each line "N" on stdin, calls counted() N times
-- and prints "calls N cpu_ns NS" (the process's CPU time for them, os.clock); ends at EOF.
local function counted(x)
  return x + 1
end

io.write("ready\n") io.flush()
local s = 0
for line in io.lines() do
  local n = tonumber(line)
  local t0 = os.clock()
  for _ = 1, n do
    s = counted(s)
  end
  local t1 = os.clock()
  io.write(string.format("calls %d cpu_ns %.0f\n", n, (t1 - t0) * 1e9)) io.flush()
end
