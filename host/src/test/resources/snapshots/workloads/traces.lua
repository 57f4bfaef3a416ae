-- A hot loop that the JIT compiles: samples land in trace code, not in the interpreter.
local function step(x)
  return (x * 1103515245 + 12345) % 2147483648
end
local function hot(n)
  local s = 0
  for i = 1, n do s = step(s + i) end
  return s
end
local function driver()
  while true do hot(10000000) end
end
driver()
