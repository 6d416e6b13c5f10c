-- claim: gives a worker up to n ready jobs, fairly across lanes (see lib/claim.lua for the
-- order of work), each with a lease and a fresh fencing token.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, events, wake, rate, laneBase, jobBase, lrateBase, lcfg, reqBase
-- ARGV: [1] n (jobs wanted), [2] lease (ms), [3] owner token (optional, '' none; manual
--   processing: stored as each claimed job's `tok`, see lib/lock.lua), [4] worker name
--   (optional, '' none: stored as each claimed job's `pb`, BullMQ's processedBy), [5] request
--   id (optional, '' none; lib/once.lua): a rerun returns the jobs of the first run still
--   active under the attempt it gave them, and claims nothing new
-- Returns: {claimed, wakeInMs, id1, fields1, id2, fields2, ...}; fields is the job hash as a
--   flat field/value list, without st and sq (lib/claim.lua activate); its `att` is the fencing
--   token, its `pOn` the claim time. wakeInMs: when nothing was claimed,
--   ms until delayed or rate-limited work becomes ready (-1 none, or while jobs were claimed).
-- Errors: EMQ_EXPIRED (lib/once.lua: a request older than the window without a record); -16
--   (guards, lib/guard.lua, replying {-16, position}, nothing written) n or lease not a
--   non-negative integer.
-- Events: active per job, waiting per promoted delayed job (drained is written by the settle
--   that leaves the queue idle, as in BullMQ: complete.lua, fail.lua).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/claim.lua
--!include lib/once.lua

-- Guards (BAD_ARGUMENT, as lib/guard.lua's; inline: this block of the function library has no
-- room for its locals): a count or lease that is not a number would fail after the pops.
if not string.find(ARGV[1], '^%d+$') then return { -16, 1 } end
if not string.find(ARGV[2], '^%d+$') then return { -16, 2 } end
local out = {}
local now = nowMs()
local rec, refused = onceBegin(ARGV[5], now)
if refused then return redis.error_reply(refused) end
if rec then
  local got = onceClaimed(rec.j, out)
  table.insert(out, 1, -1)
  table.insert(out, 1, got)
  return out
end
if ARGV[3] and ARGV[3] ~= '' then claimOwner = ARGV[3] end
if ARGV[4] and ARGV[4] ~= '' then claimName = ARGV[4] end
if onceKey then claimTrack = {} end
local got, nextAt = claimJobs(tonumber(ARGV[1]), tonumber(ARGV[2]), now, out, true)
-- An empty claim changed nothing: its rerun may claim afresh.
if got > 0 and onceKey then onceRecordClaim(nil, claimTrack) end
table.insert(out, 1, nextAt)
table.insert(out, 1, got)
return out
