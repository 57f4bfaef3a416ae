-- GC pressure: fresh tables and strings every iteration, kept briefly in a ring so that the
-- collector has real work.
local ring, size = {}, 4096
local function make_record(i)
  return { id = i, name = "item-" .. i, tags = { i % 3, i % 5, i % 7 } }
end

local total = 0
for i = 1, ITERATIONS or 6000000 do
  local r = make_record(i)
  ring[i % size + 1] = r
  total = total + #r.name + r.tags[2]
end
print(total)
