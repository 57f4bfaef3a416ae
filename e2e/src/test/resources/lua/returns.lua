-- Returns that overwrite their own frame: string.byte with many results (its C loop stores
-- result i over the frame's function slot and link) and a Lua function returning several
-- values (BC_RET moves them down over its frame once PC holds the return address). Both
-- profilers charge such samples to the caller, jit.p at the instruction after the call, so
-- each call and the use of its results share a line. Before polystack walked returning frames
-- from their caller, samples inside string.byte's loop ended in bad_function errors.
local s = string.rep("abcdefgh", 16)
local byte = string.byte

local function spread(x)
  return x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7
end

local sum = 0
for i = 1, ITERATIONS or 18000000 do
  local a = byte(s, 1, 120); sum = sum + a
  local b, c, d, e = spread(i); sum = sum + b + e
end
print(sum)
