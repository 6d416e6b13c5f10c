-- promote: makes a delayed job ready now (back of its tier, or front when lifo). Its delay
-- becomes 0, as in BullMQ; the delay it was added with stays in `odl` (job.opts.delay).
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, events, wake, laneBase, jobBase, reqBase
-- ARGV: [1] job id,
--   [2] request id ('' or absent = none; lib/once.lua): a rerun replies 1 and moves nothing
-- Returns: 1.
-- Errors: -1 no such job; -3 the job is not delayed; EMQ_EXPIRED (error reply, lib/once.lua): a
--   request older than the window without a record.
-- Events: waiting (jobId, prev delayed).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun would find the job no longer delayed and refuse.
local rec, refused = onceBegin(ARGV[2])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local id = ARGV[1]
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'lifo', 'delay', 'odl')
if not f[1] then return -1 end
f[2], f[3] = laneOr(f[2]), prioOr(f[3])
if f[1] ~= 'd' then return -3 end
redis.call('ZREM', K.delayed, id)
local stamp = nextStamp(f[4] == '1')
if not f[6] and f[5] then redis.call('HSET', jk, 'odl', f[5]) end
redis.call('HSET', jk, 'sq', stamp, 'delay', '0')
pushReady(jk, f[2], tonumber(f[3]), stamp .. id)
emit('waiting', 'jobId', id, 'prev', 'delayed')
wake()
onceRecord({ r = 1 })
return 1
