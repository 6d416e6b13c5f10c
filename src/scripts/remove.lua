-- remove: deletes jobs that are not held (not active, or active with an expired lease: as
-- BullMQ, whose lock is then gone), from whatever state they are in, keeping lane counts and
-- the ring right (Queue.remove, Job.remove).
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, completed, failed, events, laneBase, jobBase, logsBase, wake, wchildren, outbox, depsBase, lcfg, dedup, dedupx, reqBase
-- ARGV: [1] state filter: '' any, or one of w (ready), d, c, f; [2] cutoff (ms): remove only
--   jobs whose timestamp (finish time for c/f, creation time otherwise) is <= cutoff
--   ('' = no cutoff); [3..] job ids (at most a bounded batch; the caller splits), then, when
--   the call passes reqBase (the last key), the request id as the last argument ('' = none;
--   lib/once.lua): a rerun replies the first run's results and removes nothing
-- Returns: list of per-id results: 1 removed, -1 no such job, -3 active under a live lease (not
--   removed) or not matching the filter.
-- Errors: per id, as above; EMQ_EXPIRED (error reply, lib/once.lua): a request older than the
--   window without a record.
-- Events: removed (jobId, prev: BullMQ's name of the structure, e.g. wait, prioritized,
--   delayed) per removed job; a removed flow child no longer holds its
--   parent (lib/flow.lua): the parent may become waiting | delayed.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/removal.lua
--!include lib/once.lua

-- The ids end before the request id, which a caller passing reqBase always sends (maybe '').
local last, rid = #ARGV, nil
if K.reqBase then last, rid = #ARGV - 1, ARGV[#ARGV] end
local now = nowMs()
-- Applied once (lib/once.lua): a rerun would find its jobs gone and reply -1 for them.
local rec, refused = onceBegin(rid, now)
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local filter = ARGV[1]
local cutoff = tonumber(ARGV[2])
local res = {}
local removed = false
for i = 3, last do
  local id = ARGV[i]
  local r, prev = removeOne(id, filter, cutoff, now)
  if r == 1 then
    emit('removed', 'jobId', id, 'prev', prev)
    removed = true
  end
  res[#res + 1] = r
end
-- A call that removed nothing changed nothing: nothing to record.
if removed then onceRecord({ r = res }) end
return res
