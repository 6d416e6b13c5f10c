-- addDependency: registers a job of another queue as a pending dependency of a parent in this
-- queue (BullMQ's `parent` option on Queue.add, and on a flow's root, when the parent lives
-- in another queue, whose keys are in another hash slot). Called before the child is added, so
-- no outcome of the child can arrive first. Idempotent: a child key the parent's deps hash
-- already holds is left alone.
-- KEYS: jobBase, depsBase
-- ARGV: [1] parent job id, [2] child job key
-- Returns: 1 registered, 0 already known, -1 no such parent (nothing written).
-- Errors: none.
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua

if redis.call('EXISTS', K.jobBase .. ARGV[1]) == 0 then return -1 end
if redis.call('HEXISTS', K.depsBase .. ARGV[1], ARGV[2]) == 1 then return 0 end
addDependency(ARGV[1], ARGV[2])
return 1
