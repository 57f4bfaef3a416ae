-- content_by_lua handler for the nginx + lua-nginx-module corpus case: one request keeps the
-- worker busy in Lua (interpreted: jit.off) long enough to be snapshotted mid-request.
local M = {}

local function checksum(n)
  local acc = 0
  for i = 1, n do
    acc = (acc * 31 + i) % 1000003
  end
  return acc
end

local function render(rounds)
  local total = 0
  for r = 1, rounds do
    total = total + checksum(200000)
  end
  return total
end

function M.handle()
  jit.off(true, true)
  ngx.say("ok ", render(tonumber(ngx.var.arg_rounds) or 400))
end

return M
