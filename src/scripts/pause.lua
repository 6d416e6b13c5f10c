-- pause: stops every claim of the queue (checked inside the claim) or lets them go on.
-- KEYS: meta, events, wake
-- ARGV: [1] '1' to pause, '0' to resume
-- Returns: 1.
-- Errors: none.
-- Events: paused | resumed.
--!include lib/common.lua
--!include lib/lanes.lua

stampLayout()
if ARGV[1] == '1' then
  redis.call('HSET', K.meta, 'paused', '1')
  emit('paused')
else
  redis.call('HDEL', K.meta, 'paused')
  emit('resumed')
  wake()
end
return 1
