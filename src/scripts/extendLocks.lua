-- extendLocks: renews the leases of jobs held under a caller's token (job.extendLock,
-- worker.extendJobLocks: manual processing). A worker's own renewals use extendLeases.lua.
-- KEYS: active, jobBase
-- ARGV: [1] lease (ms), then triples, triple t = 0.. at a = 2 + 3t:
--   [a] job id,
--   [a + 1] owner token,
--   [a + 2] fence (the att the caller's Job was claimed under; '' = unknown)
-- Returns: list of the ids whose lease was not renewed (missing, not active, or held by another
--   owner or attempt: lib/lock.lua); those are left unchanged.
-- Errors: none.
-- Events: none.
--!include lib/common.lua
--!include lib/lock.lua

local deadline = nowMs() + tonumber(ARGV[1])
local refused = {}
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  local token = ARGV[i + 1]
  -- An empty token would skip the owner check (lib/lock.lua): renewing needs an owner.
  if token ~= '' and checkHolder(K.jobBase .. id, token, ARGV[i + 2]) == 1 and redis.call('ZSCORE', K.active, id) then
    redis.call('ZADD', K.active, 'XX', deadline, id)
  else
    refused[#refused + 1] = id
  end
end
return refused
