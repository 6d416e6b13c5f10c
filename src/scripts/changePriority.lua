-- changePriority: re-scores a job in place. A ready job moves to the back of its new tier (as
-- in BullMQ), or the front when lifo is asked; a delayed or active job keeps the new priority
-- for when it next becomes ready. The first change keeps the priority the job was added with in
-- `opr`, so job.opts.priority still shows it (as BullMQ's opts do) while job.priority is new.
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, laneBase, jobBase, reqBase
-- ARGV: [1] job id, [2] priority (integer 0..2097151), [3] lifo ('1'/'0'),
--   [4] request id ('' or absent = none; lib/once.lua): a rerun replies 1 and does not move the
--   job again
-- Returns: 1.
-- Errors: -16 a priority or lifo flag not in its form (lib/guard.lua, before any write); -1 no such job; -3 the job is finished (completed or failed); EMQ_EXPIRED (error
--   reply, lib/once.lua): a request older than the window without a record.
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/once.lua
--!include lib/guard.lua

-- Applied once (lib/once.lua): a rerun would stamp the job again, behind jobs that came since.
if not isPriority(ARGV[2]) or not isFlag(ARGV[3]) then return BAD_ARGUMENT end
local rec, refused = onceBegin(ARGV[4])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local id, prio, lifo = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'sq', 'opr')
if not f[1] then return -1 end
f[2], f[3] = laneOr(f[2]), prioOr(f[3])
if f[1] == 'c' or f[1] == 'f' then return -3 end
if f[1] == 'w' then
  -- A one-job lane's job is re-scored in a sorted set like any other (lib/lanes.lua).
  materializeLane(f[2])
  local lk = K.laneBase .. f[2]
  redis.call('ZREM', lk, f[4] .. id)
  local stamp = nextStamp(lifo)
  redis.call('ZADD', lk, prio, stamp .. id)
  redis.call('HSET', jk, 'sq', stamp)
  local was = tonumber(f[3])
  if was > 0 and prio == 0 then redis.call('HINCRBY', K.meta, 'readyP', -1) end
  if was == 0 and prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', 1) end
end
if not f[5] then redis.call('HSET', jk, 'opr', f[3]) end
redis.call('HSET', jk, 'prio', prio)
onceRecord({ r = 1 })
return 1
