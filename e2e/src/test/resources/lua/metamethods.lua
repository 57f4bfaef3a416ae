-- Metamethods: __add builds vectors, __index is a function computing missing fields, __call
-- makes a table callable. Each does enough work to be sampled on its own lines.
local Vec = {}
Vec.__add = function(a, b)
  return setmetatable({ x = a.x + b.x, y = a.y + b.y }, Vec)
end
Vec.__index = function(t, key)
  local s = 0
  for i = 1, #key * 8 do s = s + string.byte(key, (i - 1) % #key + 1) end
  return s
end

local Acc = setmetatable({ n = 0 }, {
  __call = function(self, v)
    for k = 1, 24 do self.n = self.n + (v.x + k) % 7 + v.y % 5 end
    return self.n
  end,
})

local v = setmetatable({ x = 1, y = 2 }, Vec)
local step = setmetatable({ x = 3, y = 4 }, Vec)
local sum = 0
for i = 1, ITERATIONS or 650000 do
  v = v + step
  sum = sum + v.magnitude + Acc(v)
end
print(sum)
