-- clean: one batch of Queue.clean(grace, limit, type): removes the given candidates that are
-- still in the state and older than the cutoff (the caller pages candidates read-only).
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, completed, failed, events, laneBase, jobBase, logsBase, wake, wchildren, outbox, depsBase, lcfg, dedup, dedupx
-- ARGV: [1] state letter: w (waiting, prioritized, paused), d, c, f, a (active with an expired
--   lease only); [2] cutoff (ms, Redis clock): age stamp (finish time for c/f; else last start,
--   then creation time) must be <= it; [3..] job ids (a bounded batch; the caller splits)
-- Returns: the ids removed, in the order given.
-- Errors: none (ids that are gone, held or too young are skipped).
-- Events: cleaned (count) once per call, as BullMQ writes it per batch (also for 0); a removed
--   flow child no longer holds its parent; when it was the last pending child of a waiting
--   parent in this queue, the parent is deleted too, as BullMQ's clean does (lib/removal.lua).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/removal.lua

removalDeletesParents = true
local filter = ARGV[1]
local cutoff = tonumber(ARGV[2])
local now = nowMs()
local removed = {}
for i = 3, #ARGV do
  if removeOne(ARGV[i], filter, cutoff, now) == 1 then removed[#removed + 1] = ARGV[i] end
end
emit('cleaned', 'count', #removed)
return removed
