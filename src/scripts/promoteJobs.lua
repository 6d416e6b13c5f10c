-- promoteJobs: one batch of Queue.promoteJobs: makes delayed jobs ready now, earliest due
-- first, each at the back of its tier (front when lifo), as promote.lua does for one job.
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, events, wake, lcfg, laneBase, jobBase
-- ARGV: [1] most jobs this call (the caller caps it)
-- Returns: {moved, more}: more = 1 when the batch was full (call again).
-- Errors: none (a member without its hash is dropped from the set).
-- Events: waiting (jobId, prev delayed) per job.
--!include lib/common.lua
--!include lib/lanes.lua

local count = tonumber(ARGV[1])
local ids = redis.call('ZRANGE', K.delayed, 0, count - 1)
if #ids == 0 then return {0, 0} end
redis.call('ZREM', K.delayed, unpack(ids))
local shared = { 'prev', 'delayed' }
local moved = 0
reserveStamps(false, #ids) -- one HINCRBY for the batch's FIFO stamps
beginLaneBatch()
for _, id in ipairs(ids) do
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'lifo')
  if f[1] == 'd' then
    readyAgain(jk, id, f[2], f[3], f[4])
    emitJob('waiting', shared, id)
    moved = moved + 1
  end
end
flushLaneBatch()
if moved > 0 then wake() end
return {moved, #ids == count and 1 or 0}
