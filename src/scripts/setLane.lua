-- setLane: changes a lane's weight, concurrency limit or rate limit, effective at the next
-- claim of every worker. The lane's ring membership follows at once (a lower limit can take
-- it out, a higher one put it back). Settings of a lane without jobs are kept.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, events, wake, laneBase, lrateBase, lcfg
-- ARGV: [1] lane, [2] field: 'weight' | 'limit' | 'rate', [3] value: weight (integer >= 1;
--   1 clears), limit (integer >= 0; '' removes), rate ("max:durationMs"; '' removes)
-- Returns: 1.
-- Errors: guards (lib/guard.lua), before any write: -15 a lane '' or over 1024 UTF-16 units;
--   -16 a field or value not in the forms above.
-- Events: lane:updated (lane, field, value).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/guard.lua

local lane, field, value = ARGV[1], ARGV[2], ARGV[3]
if badLane(lane) then return BAD_LANE end
if not ((field == 'weight' and isUint(value) and value ~= '0') or (field == 'limit' and optUint(value))
  or (field == 'rate' and (value == '' or string.find(value, '^%d+:%d+$')))) then return BAD_ARGUMENT end
stampLayout()
local hash = ({ weight = K.lweight, limit = K.llimit, rate = K.lrate })[field]
if value == '' or (field == 'weight' and value == '1') then
  redis.call('HDEL', hash, lane)
else
  redis.call('HSET', hash, lane, value)
  registerLane(lane)
end
if field == 'rate' then
  -- A new rate applies from the next claim; a lane waiting for the old window comes back now.
  redis.call('ZREM', K.rlwait, lane)
  -- Without a rate the window counter means nothing; dropping it also keeps it from outliving
  -- the lane's registry entry, which is how obliterate finds lane counters.
  if value == '' then redis.call('DEL', K.lrateBase .. lane) end
end
-- lcfg names the lanes with any setting, so the claim reads settings only for those.
if redis.call('HEXISTS', K.lweight, lane) == 1 or redis.call('HEXISTS', K.llimit, lane) == 1
  or redis.call('HEXISTS', K.lrate, lane) == 1 then
  redis.call('SADD', K.lcfg, lane)
else
  redis.call('SREM', K.lcfg, lane)
end
if field ~= 'weight' then
  if refreshLane(lane) then wake() end
end
forgetLaneIfIdle(lane)
emit('lane:updated', 'lane', lane, 'field', field, 'value', value)
return 1
