-- pcall with errors: `risky` throws on a quarter of its calls (error() with a table and with a
-- string) and pcall catches. jit.p charges the unwind to the line after pcall (it samples at the
-- next dispatch, when the unwind is over), we charge it to error's caller; risky does enough Lua
-- work (1200 iterations a call) that the unwind stays a small share (~5%) and the comparison
-- measures the Lua lines; with 400 it was 10-15% and the overlap with jit.p sat at the limit.
local function risky(i)
  local s = 0
  for k = 1, 1200 do s = s + (i + k) % 11 end
  if i % 8 == 0 then error({ code = s }) end
  if i % 8 == 1 then error("bad input " .. s) end
  return s
end

local caught, total = 0, 0
for i = 1, ITERATIONS or 210000 do
  local ok, res = pcall(risky, i)
  if ok then total = total + res else caught = caught + 1 end
end
print(caught, total)
