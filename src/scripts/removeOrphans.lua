-- removeOrphans: one batch of Queue.removeOrphanedJobs: deletes the job hashes (and logs:<id>,
-- deps:<id>) of the given ids that no state structure references — the structure the hash's
-- state names, or any of active, delayed, completed, failed, wchildren. Logs or deps left
-- without their job hash are orphans too. The caller finds candidates with a bounded SCAN.
-- KEYS: active, delayed, completed, failed, wchildren, lone, laneBase, jobBase, logsBase, depsBase
-- ARGV: [1..] candidate job ids (a bounded batch)
-- Returns: number of orphaned jobs deleted.
-- Errors: none.
-- Events: none (as BullMQ).
--!include lib/common.lua

local SETS = { a = K.active, d = K.delayed, c = K.completed, f = K.failed, h = K.wchildren }
local removed = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'sq')
  -- The active set's sentinel (lib/common.lua) is never a job: whatever hash has its name is kept.
  local referenced = id == ACTIVE_SENTINEL
  if f[1] and not referenced then
    if f[1] == 'w' then
      -- A ready job's lane member is its stamp and id; without a stamp it cannot be checked: kept.
      -- (or the lone field of a one-job lane, lib/lanes.lua, "<prio>:<member>").
      local lane, member = laneOr(f[2]), f[3] and f[3] .. id
      referenced = not member or redis.call('ZSCORE', K.laneBase .. lane, member) ~= false
      if not referenced then
        local lone = redis.call('HGET', K.lone, lane)
        referenced = lone and select(2, parseLone(lone)) == member or false
      end
    elseif SETS[f[1]] then
      referenced = redis.call('ZSCORE', SETS[f[1]], id) ~= false
    else
      referenced = true -- a state this script does not know: never deleted
    end
    if not referenced then
      for _, key in pairs(SETS) do
        if redis.call('ZSCORE', key, id) then referenced = true; break end
      end
    end
  end
  if not referenced and redis.call('DEL', jk, K.logsBase .. id, K.depsBase .. id) > 0 then
    removed = removed + 1
  end
end
return removed
