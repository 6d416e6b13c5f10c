-- changeDelay: reschedules a delayed job to be due `delay` ms from now (Redis clock), whatever
-- its earlier delay was (BullMQ's Job.changeDelay). The first change keeps the delay the job
-- was added with in `odl`, so job.opts.delay still shows it while job.delay shows the new one.
-- KEYS: meta, delayed, events, wake, jobBase, reqBase
-- ARGV: [1] job id, [2] delay (ms, a non-negative integer),
--   [3] request id ('' or absent = none; lib/once.lua): a rerun replies 1 and reschedules nothing
-- Returns: 1.
-- Errors: -16 a delay that is not a non-negative integer (lib/guard.lua, before any write); -1 no such job; -3 the job is not delayed; EMQ_EXPIRED (error reply, lib/once.lua): a
--   request older than the window without a record.
-- Events: delayed (jobId, delay = the new due time, ms).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/once.lua
--!include lib/guard.lua

-- Applied once (lib/once.lua): a rerun would move the due time by the resend's delay and write
-- a second delayed event.
if not isUint(ARGV[2]) then return BAD_ARGUMENT end
local rec, refused = onceBegin(ARGV[3])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local id = ARGV[1]
local delay = tonumber(ARGV[2])
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'st', 'delay', 'odl')
if not f[1] then return -1 end
if f[1] ~= 'd' or not redis.call('ZSCORE', K.delayed, id) then return -3 end
local now = nowMs()
if not f[3] then redis.call('HSET', jk, 'odl', f[2] or '0') end
redis.call('HSET', jk, 'delay', string.format('%d', delay))
-- scheduleDelayed wakes a blocked worker when the job is now the earliest due: its block
-- timeout was computed from the old due times.
scheduleDelayed(id, now + delay)
emit('delayed', 'jobId', id, 'delay', now + delay)
onceRecord({ r = 1 })
return 1
