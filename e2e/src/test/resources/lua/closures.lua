-- Closures and upvalues: the counter's step function is reached through an upvalue (`mix`),
-- so it gets its name from the closure's UGET.
local function make_counter(seed)
  local state = seed
  local function mix(x)
    local h = x
    for k = 1, 40 do h = (h * 31 + k) % 1000003 end
    return h
  end
  return function(n)
    for i = 1, n do
      state = mix(state + i)
    end
    return state
  end
end

local counters = {}
for c = 1, 8 do counters[c] = make_counter(c) end
local total = 0
for round = 1, ROUNDS or 160000 do
  total = total + counters[round % 8 + 1](10)
end
print(total)
