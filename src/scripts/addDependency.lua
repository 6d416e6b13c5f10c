-- addDependency: registers a job of another queue as a pending dependency of a parent in this
-- queue (BullMQ's `parent` option on Queue.add, and on a flow's root, when the parent lives
-- in another queue, whose keys are in another hash slot). Called before the child is added, so
-- no outcome of the child can arrive first. Idempotent: a child key the parent's deps hash
-- already holds is left alone.
-- KEYS: jobBase, depsBase, reqBase
-- ARGV: [1] parent job id, [2] child job key,
--   [3] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's 1
-- Returns: 1 registered, 0 already known, -1 no such parent (nothing written).
-- Errors: EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a
--   record.
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun would reply 0 (already known), and the caller would not
-- take back a registration it made (an add that returned an existing job).
local rec, refused = onceBegin(ARGV[3])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
if redis.call('EXISTS', K.jobBase .. ARGV[1]) == 0 then return -1 end
if redis.call('HEXISTS', K.depsBase .. ARGV[1], ARGV[2]) == 1 then return 0 end
addDependency(ARGV[1], ARGV[2])
onceRecord({ r = 1 })
return 1
