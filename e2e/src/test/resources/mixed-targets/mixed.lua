-- Lua half of mixed.c (CPythonMixedTest checks the lines sampled in lua_burn).
function lua_burn(n)
  local total = 0
  for i = 1, n do
    total = (total + i * i) % 1000003
  end
  return total
end

function lua_warmup(n)
  local r = lua_burn(n) -- not a tail call, so the caller keeps its frame and lua_burn its name
  return r
end

function lua_entry(n)
  local r = lua_burn(n)
  return r
end

function lua_outer(n)
  local r = lua_burn(n / 2)
  c_python() -- Lua -> C -> Python
  return r
end
