-- Lock-holder checks for calls that present a caller's token (manual processing and step jobs:
-- job.moveToCompleted/moveToFailed/moveToDelayed/moveToWait/moveToWaitingChildren/extendLock).
--
-- A job's lock owner is its `tok` field when a manual claim stored one (lib/claim.lua
-- claimOwner), else its attempt counter `att`: a worker's own claims hand `att` to the
-- processor as its token. `fence` is the attempt the caller's Job snapshot was claimed under
-- ('' when unknown): a job re-claimed after its lease was recovered has a newer `att`, so a call
-- for the old attempt is refused even under the same owner token (docs/internals.md, leases and tokens).
--
-- Codes, as BullMQ's: 1 the caller holds the lock; -1 no such job; -2 missing lock (not
-- active, or the attempt is over); -3 not in the active state (no token given: the lock is not
-- checked, as BullMQ without a token); -6 lock mismatch (active under another owner).
-- Token '0' is BullMQ's "no lock check" token (job.moveToFailed(err, '0')): treated as no token.
-- No real owner can be '0': a worker's own tokens are attempt counters, which start at 1.
local function holderCode(jk, att, st, token, fence)
  if not st then return -1 end
  if token == '' or token == '0' then
    if st ~= 'a' then return -3 end
    return 1
  end
  if st ~= 'a' then return -2 end
  local owner = redis.call('HGET', jk, 'tok') or att
  if owner ~= token then return -6 end
  if fence ~= '' and att ~= fence then return -2 end
  return 1
end

local function checkHolder(jk, token, fence)
  local att, st = unpack(redis.call('HMGET', jk, 'att', 'st'), 1, 2)
  return holderCode(jk, att, st, token, fence)
end
