-- clearParent: forgets a child's parent (the second step of BullMQ's
-- Job.removeChildDependency, after the parent's queue dropped the child with resolveChild
-- kind 'r'). Only the job that still names that parent is changed.
-- KEYS: jobBase
-- ARGV: [1] job id, [2] the parent job key the job must still name (pk)
-- Returns: 1 cleared; 0 the job names another parent or none.
-- Errors: -1 no such job.
-- Events: none.

local jk = K.jobBase .. ARGV[1]
local f = redis.call('HMGET', jk, 'st', 'pk')
if not f[1] then return -1 end
if f[2] ~= ARGV[2] then return 0 end
redis.call('HDEL', jk, 'pid', 'pk', 'pq', 'ppx', 'pol')
return 1
