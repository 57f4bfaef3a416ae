-- JIT-compiled calls inlined into a hot loop: every sample runs a trace, and the snapshot of
-- the guard inside lookup places it two inlined frames above the main chunk.
local t = {}
for i = 1, 256 do t[i] = (i * 7) % 256 end
local function lookup(k)
  local v = t[k % 256 + 1]
  if v > 128 then v = v - 128 end
  return v
end
local function mix(x, k)
  local v = lookup(k)
  return (x * 31 + v) % 1000003
end
local acc = 0
for i = 1, N or 160000000 do acc = mix(acc, i) end
print(acc)
