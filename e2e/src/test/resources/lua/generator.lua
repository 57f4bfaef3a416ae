-- A generator: drive resumes a coroutine.wrap function (a new coroutine per call) that does its
-- work in body and yields; plain works on the main lua_State. JIT on: both loops compile.
local function body(n)
  local s = 0
  for i = 1, n do s = s + (i * 7) % 13 end
  return s
end

local function producer()
  while true do
    coroutine.yield(body(2000))
  end
end

local function drive(rounds)
  local gen = coroutine.wrap(producer)
  local t = 0
  for _ = 1, rounds do t = t + gen() end
  return t
end

local function plain(n)
  local s = 0
  for i = 1, n do s = s + (i * 5) % 11 end
  return s
end

local stop = os.clock() + (SECONDS or 4)
local acc = 0
while os.clock() < stop do
  acc = acc + drive(20) + plain(180000)
end
print(acc)
