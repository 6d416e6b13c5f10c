-- resolveChild: records the outcome of a child job in its parent, which lives in this queue.
-- The second step of the cross-queue flow path: the child's settle (complete/fail/recover/
-- remove, in the child's queue) wrote the outcome to the child queue's outbox in the same
-- call; a worker then calls this on the parent's queue and only afterwards deletes the outbox
-- entry, so a crash in between repeats the call, and this call is idempotent (a child that is
-- no longer pending is not counted again).
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, failed, events, wake, wchildren, outbox, depsBase, laneBase, jobBase, logsBase, lcfg, reqBase
-- ARGV: [1] parent job id, [2] child job key, [3] kind: c (completed), i (failed, ignored),
--   f (failed, fails the parent), r (removed), x (failed, starts the parent), d (failed,
--   dropped from the parent's dependencies), p (a retried child: back to pending), u (undo p),
--   [4] value: return value JSON for c, reason for i, f and x, the previous entry for u, ''
--   for r, d and p,
--   [5] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's reply
--   and changes nothing
-- Returns: {status, outboxWritten}: status 1 counted, 0 not a pending child of that parent
--   (already counted or unknown: nothing changed), -1 no such parent (nothing changed);
--   outboxWritten 1 when the parent failed and its own parent lives in another queue (the
--   caller should drain this queue's outbox). Kind p: {1, 0, previous entry} or {0, 0, ''}.
-- Errors: EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a
--   record.
-- Events: waiting | delayed when the parent's last child was counted; failed (jobId of the
--   parent, prev waiting-children) when a child failed it.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun finds the child no longer pending and replies 0, which
-- loses what the first run decided: a failure to pass on (outboxWritten), the entry to undo.
local rec, refused = onceBegin(ARGV[5])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local function body(kind)
  -- A retried child goes back to its parent's pending dependencies (BullMQ's job.retry of a
  -- finished child; the parent is not moved back). Returns {1, 0, previous entry}.
  if kind == 'p' then
    local dk = K.depsBase .. ARGV[1]
    local old = redis.call('HGET', dk, ARGV[2])
    if not old or old == 'p' or redis.call('EXISTS', K.jobBase .. ARGV[1]) == 0 then return {0, 0, ''} end
    redis.call('HSET', dk, ARGV[2], 'p')
    redis.call('HINCRBY', K.jobBase .. ARGV[1], 'pend', 1)
    return {1, 0, old}
  end
  -- Undoes 'p' (the retry was refused): the previous entry (ARGV[4]) comes back.
  if kind == 'u' then
    local dk = K.depsBase .. ARGV[1]
    if redis.call('HGET', dk, ARGV[2]) ~= 'p' then return {0, 0} end
    redis.call('HSET', dk, ARGV[2], ARGV[4])
    redis.call('HINCRBY', K.jobBase .. ARGV[1], 'pend', -1)
    return {1, 0}
  end
  if kind ~= 'c' and kind ~= 'i' and kind ~= 'f' and kind ~= 'r' and kind ~= 'x' and kind ~= 'd' then return {0, 0} end
  local status = resolveDep(ARGV[1], ARGV[2], kind, ARGV[4], nowMs(), 0)
  return {status, flowOutboxWritten and 1 or 0}
end
local r = body(ARGV[3])
-- Only a call that changed something (status 1) is recorded.
if r[1] == 1 then onceRecord({ r = r }) end
return r
