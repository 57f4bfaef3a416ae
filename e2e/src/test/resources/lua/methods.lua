-- Methods (obj:method()) and fields (M.helper(...)) doing string work, so time stays in them.
local Account = {}
Account.__index = Account

function Account.new(owner)
  return setmetatable({ owner = owner, balance = 0, log = {} }, Account)
end

function Account:deposit(amount)
  self.balance = self.balance + amount
  self.log[#self.log % 64 + 1] = string.format("%s+%d", self.owner, amount)
end

function Account:withdraw(amount)
  self.balance = self.balance - amount
  self.log[#self.log % 64 + 1] = ("%s-%d"):format(self.owner, amount):upper()
end

local M = {}
function M.helper(s)
  return #(s:rep(3) .. tostring(#s))
end

local acct = Account.new("alice")
local sum = 0
for i = 1, ITERATIONS or 3000000 do
  acct:deposit(i)
  if i % 3 == 0 then acct:withdraw(i) end
  sum = sum + M.helper("x" .. (i % 50))
end
print(acct.balance, sum)
