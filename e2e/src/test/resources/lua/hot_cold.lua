local function hot(n)
  local s = 0
  for i = 1, n do s = s + (i * 7) % 13 end
  return s
end

local function cold(n)
  local s = 0
  for i = 1, n do s = s + (i * 3) % 11 end
  return s
end

-- top's tests: hot does 9 times cold's work each round, for SECONDS of the program's CPU time
-- (arg 1), so a loaded machine gets as many samples. The clock is read once a round only.
local deadline = os.clock() + (tonumber(arg[1]) or 5)
local total = 0
while os.clock() < deadline do
  total = total + hot(90000) + cold(10000)
end
os.exit(total > 0 and 0 or 1)
