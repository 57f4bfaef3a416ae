-- C calling back into Lua: table.sort with a Lua comparator and string.gsub with a function
-- replacement, each doing real work per call. jit.p charges time inside sort's C code to the
-- comparator's next line, we to the line calling table.sort: the comparator does enough work
-- that this stays a small share.
local function by_weight(a, b)
  local wa, wb = 0, 0
  for k = 1, 24 do wa = wa + a % (k + 3); wb = wb + b % (k + 3) end
  if wa ~= wb then return wa < wb end
  return a < b
end

local function shout(word)
  local n = 0
  for k = 1, #word do n = n + word:byte(k) end
  return word:upper() .. n
end

local text = string.rep("lorem ipsum dolor sit amet ", 40)
local out = 0
for round = 1, ROUNDS or 220 do
  local t = {}
  for i = 1, 2000 do t[i] = (i * 7919 + round) % 10007 end
  table.sort(t, by_weight)
  out = out + t[1]
  for _ = 1, 6 do out = out + #text:gsub("%a+", shout) end
end
print(out)
