-- releaseClaim: hands back the jobs of claims whose reply never reached the worker and that it
-- will not retry (applied once, docs/protocol.md "Applied once"): each job the request's record lists that
-- is still active under the attempt that claim gave it goes back to the front of its priority
-- tier (it keeps its stamp, as a recovered job), without counting a stall or an attempt made.
-- Its att is not lowered: att is the fence, and the record still names that attempt.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, events, wake, laneBase, jobBase, lcfg, rate, reqBase
-- ARGV: [1 ..] request ids (of claim, complete or fail calls; at most 100)
-- Returns: the ids of the jobs handed back.
-- Errors: none. Requests without a record (never ran, or older than the window) release nothing.
-- Events: waiting (jobId, prev 'active') per job handed back.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/once.lua

local released = {}
for r = 1, #ARGV do
  local raw = redis.call('GET', K.reqBase .. ARGV[r])
  local rec = raw and cjson.decode(raw)
  local pairs_ = oncePairList(rec and rec.j)
  for i = 1, #pairs_, 2 do
    local id, att = pairs_[i], pairs_[i + 1]
    local jk = K.jobBase .. id
    local f = redis.call('HMGET', jk, 'att', 'st', 'lane', 'prio', 'sq')
    if f[2] == 'a' and f[1] == att then
      local lane = laneOr(f[3])
      redis.call('ZREM', K.active, id)
      pushReady(jk, lane, tonumber(prioOr(f[4])), f[5] .. id)
      releaseActive(lane)
      emit('waiting', 'jobId', id, 'prev', 'active')
      released[#released + 1] = id
    end
  end
end
if #released > 0 then
  -- A metric: claims lost on the way, handed back rather than counted as stalls.
  redis.call('HINCRBY', K.meta, 'rcl', #released)
  wake()
end
return released
