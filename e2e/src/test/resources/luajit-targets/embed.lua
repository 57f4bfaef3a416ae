-- Lua -> C -> Lua for LuaJitEmbedTest: outer calls the C function c_apply, which calls
-- inner_cb back with lua_call. Line numbers matter: the test checks sampled lines per body.
local function inner_cb(i)
  local s = 0
  for k = 1, 3000 do
    s = s + (i * k) % 7
  end
  return s
end

function outer(rounds)
  local total = 0
  for r = 1, rounds do
    total = total + c_apply(inner_cb, 20)
  end
  return total
end

function run()
  local t = outer(5) -- not a tail call, so outer keeps its own frame and its name
  return t
end
