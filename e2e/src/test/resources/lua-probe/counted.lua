-- polystack probe lua:counted.lua:4 target (ProbeLuaSiteTest): after a line on stdin, calls
-- counted() N times from a loop and other() every 100th time, prints "done", waits for EOF.
local n = tonumber(arg[1]) or 2000

local function counted(x)
  return x + 1
end

local function other(x)
  return x * 2
end

io.write("ready\n") io.flush()
io.read("*l")
local s = 0
for i = 1, n do
  s = counted(s)
  if i % 100 == 0 then s = other(s) % 1000003 end
end
io.write("done " .. s .. "\n") io.flush()
io.read("*l")
