-- JIT-hot numeric loops, each on one line: every sample in them runs a compiled trace. jit.p
-- reports a trace by the line of the guard it exits from, we by the last guard passed (the
-- trace's snapshots); single-line loops make the two agree. The second loop does about twice the first's work.
local n = N or 60000000
local a, b = 0, 0
for i = 1, n do a = (a + i * 3) % 1000003 end
for i = 1, 2 * n do b = (b * 7 + i) % 999983 end
print(a, b)
