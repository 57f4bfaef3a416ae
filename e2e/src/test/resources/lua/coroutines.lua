-- Coroutines: the producer does its work inside the coroutine and yields results; the consumer
-- resumes it and does some work of its own.
local function produce(n)
  for i = 1, n do
    local s = 0
    for k = 1, 60 do s = s + (i * k) % 13 end
    coroutine.yield(s)
  end
end

local function consume(co)
  local total = 0
  while true do
    local ok, v = coroutine.resume(co, 200)
    if not v then break end
    total = total + tostring(v):len()
  end
  return total
end

local grand = 0
for round = 1, ROUNDS or 16000 do
  grand = grand + consume(coroutine.create(produce))
end
print(grand)
