-- rateLimitLane: worker.rateLimitGroup(job, ms) (BullMQ Pro): the lane leaves the ring for ms
-- milliseconds, through the same rate-wait set as a lane over its rate limit (rlwait), so the
-- claim readmits it when the window passes. Other lanes keep flowing. A later window than the
-- one already set wins; an earlier one leaves it.
-- KEYS: meta, ring, inring, lone, rlwait, wake
-- ARGV: [1] lane, [2] ms (integer >= 1)
-- Returns: the Redis time (ms) at which the lane comes back.
-- Errors: guards (lib/guard.lua), before any write: -15 a lane '' or over 1024 UTF-16 units; -16
--   ms not a positive integer.
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/guard.lua

local lane = ARGV[1]
if badLane(lane) then return BAD_LANE end
if not isUint(ARGV[2]) or ARGV[2] == '0' then return BAD_ARGUMENT end
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
