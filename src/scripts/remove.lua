-- remove: deletes jobs that are not active, from whatever state they are in, keeping lane
-- counts and the ring right. Also the batch step of clean() (with a state and age filter).
-- KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, completed, failed, events, laneBase, jobBase, logsBase, wake, wchildren, outbox, depsBase, lcfg
-- ARGV: [1] state filter: '' any, or one of w (ready), d, c, f; [2] cutoff (ms): remove only
--   jobs whose timestamp (finish time for c/f, creation time otherwise) is <= cutoff
--   ('' = no cutoff); [3..] job ids (at most a bounded batch; the caller splits)
-- Returns: list of per-id results: 1 removed, -1 no such job, -3 active (not removed) or not
--   matching the filter.
-- Errors: per id, as above.
-- Events: removed (jobId, prev: BullMQ's state name) per removed job, or with a state filter
--   (clean) one cleaned (count) for the call; a removed flow child no longer holds its
--   parent (lib/flow.lua): the parent may become waiting | delayed.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua

local filter = ARGV[1]
local cutoff = tonumber(ARGV[2])
-- BullMQ's names of the state a removed job was in (its key names: a ready job is 'wait', or
-- 'prioritized' when its priority is above 0; a paused queue changes neither in BullMQ 6).
local names = { d = 'delayed', c = 'completed', f = 'failed', h = 'waiting-children' }
local function prevName(st, prio)
  if st ~= 'w' then return names[st] or st end
  return prio > 0 and 'prioritized' or 'wait'
end
local res = {}
local cleaned = 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'sq', 'ts', 'fOn')
  local st = f[1]
  f[2], f[3] = laneOr(f[2]), prioOr(f[3])
  local r = 1
  if not st then
    r = -1
  elseif st == 'a' or (filter ~= '' and st ~= filter) then
    r = -3
  elseif cutoff then
    local t = tonumber(((st == 'c' or st == 'f') and f[6]) or f[5])
    if t > cutoff then r = -3 end
  end
  if r == 1 then
    if st == 'w' then
      pullReady(f[2], f[4] .. id, tonumber(f[3]))
      forgetLaneIfIdle(f[2])
    elseif st == 'd' then
      redis.call('ZREM', K.delayed, id)
    elseif st == 'c' then
      redis.call('ZREM', K.completed, id)
    elseif st == 'f' then
      redis.call('ZREM', K.failed, id)
    elseif st == 'h' then
      redis.call('ZREM', K.wchildren, id)
    end
    flowSettled(jk, id, 'r', '', nowMs()) -- flows: a removed child no longer holds its parent
    deleteJob(id)
    -- clean() (a state filter) writes one cleaned entry per call instead, as BullMQ does.
    if filter == '' then emit('removed', 'jobId', id, 'prev', prevName(st, tonumber(f[3]))) end
    cleaned = cleaned + 1
  end
  res[#res + 1] = r
end
if filter ~= '' then emit('cleaned', 'count', cleaned) end
return res
