-- extendLeases: renews the leases of all of a worker's active jobs in one call.
-- KEYS: active, jobBase
-- ARGV: [1] lease (ms), then pairs, pair p = 0.. at a = 2 + 2p:
--   [a] job id,
--   [a + 1] token (the job's att when claimed)
-- Returns: list of the ids whose lease could not be renewed (job gone, finished, or held under
--   a newer token after recovery): the worker must treat those as lost.
-- Errors: none.
-- Events: none.
--!include lib/common.lua

local now = nowMs()
local deadline = now + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local f = redis.call('HMGET', K.jobBase .. id, 'att', 'st')
  if f[1] == ARGV[i + 1] and f[2] == 'a' and redis.call('ZSCORE', K.active, id) then
    redis.call('ZADD', K.active, 'XX', deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
