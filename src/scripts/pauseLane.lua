-- pauseLane: pauses or resumes one lane. A paused lane keeps its jobs and leaves the ring;
-- resuming puts it back if it is serviceable. The setting is kept for a lane without jobs.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, events, wake, laneBase, lcfg
-- ARGV: [1] lane, [2] '1' to pause, '0' to resume
-- Returns: 1 when the lane's state changed, 0 when it was already paused / not paused.
-- Errors: guards (lib/guard.lua), before any write: -15 a lane '' or over 1024 UTF-16 units; -16
--   a flag other than '1'/'0'.
-- Events: lane:paused | lane:resumed (lane).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/guard.lua

local lane = ARGV[1]
if badLane(lane) then return BAD_LANE end
if ARGV[2] ~= '1' and ARGV[2] ~= '0' then return BAD_ARGUMENT end
local changed
stampLayout()
if ARGV[2] == '1' then
  changed = redis.call('SADD', K.lpaused, lane)
  registerLane(lane)
  evictLane(lane)
  emit('lane:paused', 'lane', lane)
else
  changed = redis.call('SREM', K.lpaused, lane)
  if admitLane(lane) then wake() end
  forgetLaneIfIdle(lane)
  emit('lane:resumed', 'lane', lane)
end
return changed
