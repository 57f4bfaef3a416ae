-- Recursion: a global recursive function, plus a local one walking a tree. Fixed work. Each
-- call does a little work of its own: jit.p never samples a function's entry (FUNCF), we charge
-- it to the definition line as LuaJIT's debug info does, so pure call overhead would skew.
function fib(n)
  local s = 0
  for k = 1, 6 do s = s + (n * k) % 3 end
  if n < 2 then return n + s % 1 end
  return fib(n - 1) + fib(n - 2)
end

local function depth(node)
  if not node then return 0 end
  local l = depth(node.left)
  local r = depth(node.right)
  return 1 + (l > r and l or r)
end

local function build(d)
  if d == 0 then return nil end
  return { left = build(d - 1), right = build(d - 1) }
end

local tree = build(16)
local total = 0
for round = 1, ROUNDS or 48 do
  total = total + fib(26)
  total = total + depth(tree)
end
print(total)
