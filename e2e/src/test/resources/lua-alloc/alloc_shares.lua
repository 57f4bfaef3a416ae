-- alloc_shares.lua ROUNDS: big() allocates exactly 3 times the bytes small() does, through
-- LuaJIT's allocator. One unit interns a new string (a fixed pad and a 7-digit serial number:
-- always the same length) and grows a new table by appends; small makes UNITS units per round,
-- big 3 * UNITS. The units are written out in each function, each in the function's own loop: a
-- trace starts in that function, so its frame is the trace's own (a unit in a helper or an
-- inlined call would be in a frame the trace may not let the walk rebuild). Many units per call
-- make the side traces that run from one function's end into the other's first unit, which the
-- walk may charge to the wrong one, rare (docs/allocations.md).
-- What a unit makes is kept for a while, so that no allocation is optimised away.
-- Prints "ready", waits for a line on stdin, runs, prints "done".
local rounds = tonumber(arg[1]) or 1000
local PAD = string.rep("x", 32000)
local ARRAY = 4096
local KEEP = 64
local UNITS = 20
local keep = {}
for i = 1, KEEP do keep[i] = false end
local serial = 1000000

local function small(n)
  for _ = 1, n do
    serial = serial + 1
    local s = PAD .. serial                  -- a string interned
    local t = {}
    for j = 1, ARRAY do t[j] = j end         -- a table grown
    keep[serial % KEEP + 1] = s
    keep[(serial + 1) % KEEP + 1] = t
  end
end

local function big(n)
  for _ = 1, 3 * n do
    serial = serial + 1
    local s = PAD .. serial                  -- a string interned
    local t = {}
    for j = 1, ARRAY do t[j] = j end         -- a table grown
    keep[serial % KEEP + 1] = s
    keep[(serial + 1) % KEEP + 1] = t
  end
end

io.write("ready\n")
io.flush()
io.read("*l")
for _ = 1, rounds do
  big(UNITS)
  small(UNITS)
end
io.write("done\n")
io.flush()
