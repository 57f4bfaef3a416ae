-- Recursion through a local function and a method call on an object: the interpreter case.
local Account = {}
Account.__index = Account
function Account.new(b) return setmetatable({balance = b}, Account) end
function Account:deposit(v)
  local x = 0
  for i = 1, 20000 do x = x + (i * v) % 7 end
  self.balance = self.balance + x
  return self.balance
end
local function fib(n, acc)
  if n <= 1 then return acc:deposit(n + 1) end
  return fib(n - 1, acc) + fib(n - 2, acc) * 0
end
local a = Account.new(0)
while true do fib(12, a) end
