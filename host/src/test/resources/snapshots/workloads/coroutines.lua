-- Lua frames on a coroutine's own stack, resumed from the main thread's stack.
local function work(n)
  local s = 0
  for i = 1, n do s = s + i % 3 end
  return s
end
local function descend(d)
  if d == 0 then
    coroutine.yield(work(50000))
    return 0
  end
  return descend(d - 1) + 1
end
local function producer()
  while true do descend(4) end
end
local co = coroutine.wrap(producer)
local function consumer()
  while true do co() end
end
consumer()
