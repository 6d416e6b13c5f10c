-- addLog: appends a line to a job's log, keeping the newest keepLogs lines.
-- KEYS: jobBase, logsBase, reqBase
-- ARGV: [1] job id, [2] line, [3] keepLogs (most lines kept; 0 = all),
--   [4] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's count and logs nothing
-- Returns: number of lines now kept.
-- Errors: -1 no such job; -16 keepLogs not a non-negative integer (a guard, before any write).
-- Events: none.
--!include lib/once.lua

-- Guard (BAD_ARGUMENT, lib/guard.lua's rule): a keepLogs that is not a number would fail after the RPUSH.
if not string.find(ARGV[3], '^%d+$') then return -16 end
local function body()
  local id = ARGV[1]
  if redis.call('EXISTS', K.jobBase .. id) == 0 then return -1 end
  local lk = K.logsBase .. id
  local n = redis.call('RPUSH', lk, ARGV[2])
  local keep = tonumber(ARGV[3])
  if keep > 0 and n > keep then
    redis.call('LTRIM', lk, -keep, -1)
    n = keep
  end
  return n
end
-- Applied once (lib/once.lua): a rerun of the same request replies the first run's result.
return onceRun(ARGV[4], body)
