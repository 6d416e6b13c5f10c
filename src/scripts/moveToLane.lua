-- moveToLane: moves a ready or delayed job to another lane. A ready job keeps its priority and
-- arrival stamp, so it takes its arrival place in the new lane.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, events, wake, laneBase, jobBase, lcfg
-- ARGV: [1] job id, [2] target lane
-- Returns: 1.
-- Errors: -1 no such job; -3 the job is active or finished; -15 a target lane '' or over 1024
--   UTF-16 units (lib/guard.lua), before any write.
-- Events: moved (jobId, from, to).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/guard.lua

local id, to = ARGV[1], ARGV[2]
if badLane(to) then return BAD_LANE end
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'sq')
if not f[1] then return -1 end
f[2], f[3] = laneOr(f[2]), prioOr(f[3])
if f[1] ~= 'w' and f[1] ~= 'd' then return -3 end
local from = f[2]
if from == to then return 1 end
redis.call('HSET', jk, 'lane', to)
if f[1] == 'w' then
  local member = f[4] .. id
  local prio = tonumber(f[3])
  pullReady(from, member, prio)
  forgetLaneIfIdle(from)
  pushReady(jk, to, prio, member)
  wake()
end
emit('moved', 'jobId', id, 'from', from, 'to', to)
return 1
