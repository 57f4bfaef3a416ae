-- pcall with errors: `risky` throws on a quarter of its calls (error() with a table and with a
-- string) and pcall catches. jit.p charges the unwind to the line after pcall (it samples at the
-- next dispatch, when the unwind is over), we charge it to error's caller; risky does enough Lua
-- work that the unwind stays a small share and the comparison measures the Lua lines.
local function risky(i)
  local s = 0
  for k = 1, 400 do s = s + (i + k) % 11 end
  if i % 8 == 0 then error({ code = s }) end
  if i % 8 == 1 then error("bad input " .. s) end
  return s
end

local caught, total = 0, 0
for i = 1, ITERATIONS or 400000 do
  local ok, res = pcall(risky, i)
  if ok then total = total + res else caught = caught + 1 end
end
print(caught, total)
