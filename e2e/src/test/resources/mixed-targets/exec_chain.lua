-- CPythonMixedTest: the luajit phase of exec_chain.py. Burns CPU in lua_phase, appends
-- "lua_phase PID CPU_NS" to LOG, and execs PYTHON PROGRAM LUAJIT CPU_SECONDS LOG after.
-- Usage: luajit exec_chain.lua PYTHON PROGRAM LUAJIT CPU_SECONDS LOG
local ffi = require("ffi")
ffi.cdef[[
int getpid(void);
int execv(const char *path, char *const argv[]);
char *strerror(int errnum);
]]

local function spin(n)
  local total = 0
  for i = 1, n do
    total = (total + i * i) % 1000003
  end
  return total
end

function lua_phase(seconds)
  local total = 0
  local finish = os.clock() + seconds
  while os.clock() < finish do
    total = total + spin(100000)
  end
  return total
end

local python, program, luajit, seconds, log = arg[1], arg[2], arg[3], arg[4], arg[5]
local start = os.clock()
lua_phase(tonumber(seconds))
local used = os.clock() - start
local out = assert(io.open(log, "a"))
out:write(string.format("lua_phase %d %d\n", ffi.C.getpid(), math.floor(used * 1e9)))
out:close()
local args = { python, program, luajit, arg[0], seconds, log, "after" }
local argv = ffi.new("char *[?]", #args + 1)
local keep = {}
for i, a in ipairs(args) do
  keep[i] = ffi.new("char[?]", #a + 1, a)
  argv[i - 1] = keep[i]
end
argv[#args] = nil
ffi.C.execv(python, argv)
error("execv " .. python .. ": " .. ffi.string(ffi.C.strerror(ffi.errno())))
