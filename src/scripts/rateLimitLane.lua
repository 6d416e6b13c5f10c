-- rateLimitLane: worker.rateLimitGroup(job, ms) (BullMQ Pro): the lane leaves the ring for ms
-- milliseconds, through the same rate-wait set as a lane over its rate limit (rlwait), so the
-- claim readmits it when the window passes. Other lanes keep flowing. A later window than the
-- one already set wins; an earlier one leaves it.
-- KEYS: meta, ring, inring, lone, rlwait, wake
-- ARGV: [1] lane, [2] ms (integer >= 1)
-- Returns: the Redis time (ms) at which the lane comes back.
-- Errors: none (validated by the caller).
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua

local lane = ARGV[1]
stampLayout()
local due = nowMs() + tonumber(ARGV[2])
local cur = redis.call('ZSCORE', K.rlwait, lane)
if cur and tonumber(cur) > due then due = tonumber(cur) end
redis.call('ZADD', K.rlwait, due, lane)
-- meta rlw tells the claim to look at rlwait (lib/claim.lua readmitRateLanes).
redis.call('HSET', K.meta, 'rlw', '1')
evictLane(lane)
-- A worker blocked before this window existed re-reads the earliest wake-up time.
if redis.call('ZRANGE', K.rlwait, 0, 0)[1] == lane then wake() end
return due
