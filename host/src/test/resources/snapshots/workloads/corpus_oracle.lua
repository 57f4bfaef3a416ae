-- LuaJIT's own names for the functions a running program calls, the expected names of the
-- snapshot corpus (record-corpus.sh): a call hook (hooks are per VM in LuaJIT, so it sees every
-- coroutine) asks debug.getinfo for the called function's name, which LuaJIT derives from the
-- caller's bytecode (lj_debug_funcname, the rule debug.traceback and jit.p use). Each distinct
-- function and name is written once, in debug.traceback's words: the name, "main chunk", or
-- "function <chunk:linedefined>", with how many calls it was seen in.
--
--   luajit -e 'require("corpus_oracle").start("out.names.txt", 2, os.exit)' workload.lua
local M = {}

local function chunk(source)
  local first = source:sub(1, 1)
  if first == "@" or first == "=" then
    return source:sub(2)
  end
  return source
end

local function label(info)
  if info.namewhat ~= "" then
    return info.name
  elseif info.what == "main" then
    return "main chunk"
  end
  return "function <" .. chunk(info.source) .. ":" .. info.linedefined .. ">"
end

local function write(path, seen)
  local keys = {}
  for k in pairs(seen) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local f = assert(io.open(path .. ".part", "w"))
  for _, k in ipairs(keys) do
    f:write(k, "\t", seen[k], "\n")
  end
  f:close()
  assert(os.rename(path .. ".part", path))
end

--- Watches calls and (re)writes "chunk:linedefined<TAB>name<TAB>calls" lines, sorted, to
--- `path` whenever a function or name shows up for the first time (calls the JIT compiles
--- inline run no hook, so the first calls may be all it sees). After `seconds` of CPU time,
--- at the next call, it writes the file once more, removes the hook and calls `done` (if any).
function M.start(path, seconds, done)
  local seen = {}
  local stop = os.clock() + seconds
  debug.sethook(function()
    local info = debug.getinfo(2, "nS")
    if info and (info.what == "Lua" or info.what == "main") then
      local key = chunk(info.source) .. ":" .. info.linedefined .. "\t" .. label(info)
      local new = seen[key] == nil
      seen[key] = (seen[key] or 0) + 1
      if new then
        write(path, seen)
      end
    end
    if os.clock() >= stop then
      debug.sethook()
      write(path, seen)
      if done then
        done(0)
      end
    end
  end, "c")
end

return M
