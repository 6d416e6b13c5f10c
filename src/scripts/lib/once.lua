-- Applied once (docs/protocol.md "Applied once"): a call that carries a request id records what it
-- decided under req:<request id> (a string key derived from K.reqBase, in the queue's hash
-- slot) for ONCE_WINDOW_MS; a rerun of the same request (ioredis resends a command whose reply
-- was lost with the connection, a client retries it) finds the record and answers from it,
-- writing nothing new. One GET per call, and one SET per call that changed something: per
-- call, not per job.
--
-- A request id is 1 to 200 bytes. When it ends with '@<ms>' those digits are the time the
-- client first sent it, on the Redis clock (the client's clock corrected by an offset it read
-- with TIME): a request without a record sent longer ago than the window minus ONCE_MARGIN_MS
-- may have run and had its record expire, so it is refused (EMQ_EXPIRED), never run twice.
local ONCE_WINDOW_MS = 60000
-- Covers the error of the client's Redis-clock estimate (one TIME round trip) and clock drift
-- between its offset readings.
local ONCE_MARGIN_MS = 2000
local onceKey -- req:<request id> of this call's first run, written by onceRecord

local function reset_once()
  onceKey = nil
end

-- The decoded record of request `rid` when it already ran (a rerun), else nil (a first run,
-- or no request id: '' / nil, or a client that passes no reqBase key). Errors when the request
-- is older than the window and has no record. now: the Redis clock (ms), read here if nil.
local function onceBegin(rid, now)
  if not rid or rid == '' or not K.reqBase then return nil end
  local key = K.reqBase .. rid
  local rec = redis.call('GET', key)
  if rec then return cjson.decode(rec) end
  local sent = string.match(rid, '@(%d+)$')
  if sent and not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if sent and now - tonumber(sent) > ONCE_WINDOW_MS - ONCE_MARGIN_MS then
    return nil, 'EMQ_EXPIRED request ' .. rid .. ' was sent ' .. (now - tonumber(sent)) ..
      ' ms ago, longer than the ' .. ONCE_WINDOW_MS .. ' ms window, and has no record: refused, its outcome is unknown'
  end
  onceKey = key
  return nil
end

-- A fenced call (a settle) whose first job still holds its token has certainly not run
-- before, whatever its age: it skips the GET and only arms the record of this run.
local function onceArm(rid)
  if rid and rid ~= '' and K.reqBase then onceKey = K.reqBase .. rid end
end

local ONCE_WINDOW_PX = '60000' -- ONCE_WINDOW_MS as the string SET takes (no %.14g per call)

-- Records what this first run decided (a table; JSON), for the window.
local function onceRecord(t)
  if onceKey then redis.call('SET', onceKey, cjson.encode(t), 'PX', ONCE_WINDOW_PX) end
end

-- onceRecord of a claim's record {c = codes, j = the (id, attempt) pairs claimTrack collected,
-- lib/claim.lua}, c optional: the codes, or their count as a decimal string. cjson encodes the
-- pairs (any id, escaped as JSON needs); the rest is joined by hand, so no table is made for
-- cjson and no number formatted with %.14g. (A Lua pattern test per id to write the pairs as one
-- plain string instead cost three times as much: ~3,000 instructions an id.)
local function onceRecordClaim(c, j)
  if not onceKey then return end
  local pairsJson = j[1] and cjson.encode(j) or '[]'
  local rec
  if not c then rec = '{"j":' .. pairsJson .. '}'
  else rec = '{"c":' .. (type(c) == 'string' and c or cjson.encode(c)) .. ',"j":' .. pairsJson .. '}' end
  redis.call('SET', onceKey, rec, 'PX', ONCE_WINDOW_PX)
end

-- Runs body() once per request rid (a script whose whole reply is a code or a value): a rerun
-- replies the first run's reply and runs nothing. A negative code (a refusal, which changed
-- nothing) is not recorded, so its rerun runs again.
local function onceRun(rid, body)
  local rec, refused = onceBegin(rid)
  if refused then return redis.error_reply(refused) end
  if rec then return rec.r end
  local r = body()
  if type(r) == 'number' and r >= 0 then onceRecord({ r = r }) end
  return r
end

-- A record's pairs (its j) as a list: records hold the list; a string of space-separated ids and
-- attempts is the form earlier versions wrote (read while their records live, one window).
local function oncePairList(j)
  if type(j) ~= 'string' then return j or {} end
  local p = {}
  for w in string.gmatch(j, '[^ ]+') do p[#p + 1] = w end
  return p
end

-- A rerun's claimed jobs: those of the recorded (id, attempt) pairs that are still active
-- under that attempt, appended to out as {id, fields} as the claim replied them (no st, sq);
-- jobs since settled, recovered or released are left out. Returns how many.
local function onceClaimed(j, out)
  local pairs = oncePairList(j)
  local got = 0
  for i = 1, #pairs, 2 do
    local id, att = pairs[i], pairs[i + 1]
    local jk = K.jobBase .. id
    local f = redis.call('HMGET', jk, 'st', 'att')
    if f[1] == 'a' and f[2] == att then
      local h = redis.call('HGETALL', jk)
      local fields = {}
      for k = 1, #h, 2 do
        if h[k] ~= 'st' and h[k] ~= 'sq' then
          fields[#fields + 1] = h[k]
          fields[#fields + 1] = h[k + 1]
        end
      end
      out[#out + 1] = id
      out[#out + 1] = fields
      got = got + 1
    end
  end
  return got
end

-- A settle's rerun (complete.lua): {claimed, -1, m, the recorded codes…, its claimed jobs still
-- active under their attempt…}. rec.c: the codes, or their count when every job completed.
local function onceSettleRerun(rec)
  local claimed = {}
  local got = onceClaimed(rec.j, claimed)
  local codes = rec.c
  local head = { got, -1, type(codes) == 'number' and codes or #codes }
  for i = 1, head[3] do head[#head + 1] = type(codes) == 'number' and 1 or codes[i] end
  for i = 1, #claimed do head[#head + 1] = claimed[i] end
  return head
end
