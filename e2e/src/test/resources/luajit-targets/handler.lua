-- Request handler for the nginx + lua-nginx-module e2e test (content_by_lua_block calls M.handle).
-- Line numbers matter: NginxLuaTest checks that sampled lines fall inside each function's body.
local M = {}

local function render(n)
  local parts = {}
  for i = 1, n do
    parts[#parts + 1] = string.format("%d:%x;", i, (i * 7919) % 65536)
  end
  return table.concat(parts)
end

function M.compute(n)
  local acc = 0
  for i = 1, n do
    acc = (acc * 31 + i) % 1000003
  end
  return acc
end

function M.handle()
  local total = 0
  for round = 1, 10 do
    total = total + M.compute(20000)
    total = total + #render(400)
  end
  ngx.say("ok ", total)
end

return M
