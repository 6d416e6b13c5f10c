-- moveToWait: hands an active job back to ready without counting an attempt (the processor
-- threw RateLimitError). The job keeps its lane member, so it goes back to the front of its
-- priority tier, like a recovered job. Token semantics: the token presented must be the job's
-- current `att`; `att` is NOT decremented, so the next claim issues a new, higher token and the
-- hand-back's token can never settle that later attempt. `made` (attemptsMade) is unchanged,
-- so the hand-back does not use up one of the job's `attempts`.
-- KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, events, wake, laneBase, jobBase, lcfg
-- ARGV: [1] job id, [2] token (the job's att when claimed)
-- Returns: 1.
-- Errors: -1 no such job; -2 stale token (not active under this token).
-- Events: waiting (jobId, prev 'active').
--!include lib/common.lua
--!include lib/lanes.lua

local id, token = ARGV[1], ARGV[2]
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'att', 'st', 'lane', 'prio', 'sq')
if not f[1] then return -1 end
if f[1] ~= token or f[2] ~= 'a' then return -2 end
f[3], f[4] = laneOr(f[3]), prioOr(f[4])
redis.call('ZREM', K.active, id)
pushReady(jk, f[3], tonumber(f[4]), f[5] .. id)
releaseActive(f[3])
emit('waiting', 'jobId', id, 'prev', 'active')
wake()
return 1
