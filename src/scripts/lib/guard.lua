-- Argument guards: the scripts check every argument whose breach would corrupt stored state
-- before their first write, whatever client calls them (docs/protocol.md "Guards"). A refusal
-- is a status code: BAD_ID (-14), BAD_LANE (-15) or BAD_ARGUMENT (-16). Needs lib/common.lua.

-- The status codes of a refusal (Code in src/core/errors.ts). A script replies {code, position}
-- (add, addFlow, upsertScheduler) or the code alone (scripts whose reply is one integer), position
-- being the refused argument's ARGV index.
local BAD_ID, BAD_LANE, BAD_ARGUMENT = -14, -15, -16
local MAX_NAME_UNITS = 1024 -- lane names and job ids, in UTF-16 code units (the clients' unit)
local MAX_SAFE = 9007199254740991

-- UTF-16 code units of a UTF-8 string: one per character, two for a 4-byte character. Never more
-- than the byte length, so only a string longer than the limit in bytes is counted.
local function tooLong(s)
  if #s <= MAX_NAME_UNITS then return false end
  local _, cont = string.gsub(s, '[\128-\191]', '')
  local _, wide = string.gsub(s, '[\240-\247]', '')
  return #s - cont + wide > MAX_NAME_UNITS
end

-- A lane name: non-empty ('' is the filler field of lone, lactive and lcfg) and not too long.
local function badLane(lane)
  return lane == '' or tooLong(lane)
end

-- A decimal integer by BullMQ's rule: the string reads back as the same integer (JavaScript's
-- `${parseInt(s, 10)}` === s): '7' and '-7' are, '007', '+7', '-0' and 9007199254740993 (no
-- double prints it back) are not. '%.0f' prints a double's exact value, as JavaScript does
-- below 1e21 (22 digits and more print with an exponent there).
local function integerId(s)
  if #s > 21 or not string.find(s, '^%-?%d+$') or s == '-0' then return nil end
  local v = tonumber(s)
  if string.format('%.0f', v) == s then return v end
  return nil
end

-- A custom job id the store cannot take: an integer the id counter has not given out (a later
-- generated id would take its hash; ids at or below the counter are the reserved ids of children
-- of parents in other queues, docs/protocol.md "Multi-call sequences"), the active set's
-- sentinel, or one longer than the name limit. lastId: the id counter's highest id (a function,
-- so the counter is read only when an integer id appears).
local function badId(id, lastId)
  if id == ACTIVE_SENTINEL or tooLong(id) then return true end
  local v = integerId(id)
  return v ~= nil and (v < 1 or v > lastId())
end

-- Decimal integers as the Conventions say (no sign for non-negative values, no exponent or
-- fraction), within the range a double holds exactly.
local function isUint(s)
  return string.find(s, '^%d+$') ~= nil and (#s < 16 or tonumber(s) <= MAX_SAFE)
end
local function isInt(s)
  return string.find(s, '^%-?%d+$') ~= nil and (#s < 16 or math.abs(tonumber(s)) <= MAX_SAFE)
end
local function isPriority(s)
  return #s <= 7 and string.find(s, '^%d+$') ~= nil and tonumber(s) <= 2097151
end
local function optUint(s) return s == '' or isUint(s) end
local function optInt(s) return s == '' or isInt(s) end
local function isFlag(s) return s == '0' or s == '1' or s == '' end

-- A JSON object ('' = none), as the opts readers decode it (lib/removal.lua, recover.lua).
local function isObject(s)
  if s == '' then return true end
  if string.byte(s, 1) ~= 123 then return false end
  local ok, v = pcall(cjson.decode, s)
  return ok and type(v) == 'table'
end

-- A failure policy letter toward a parent ('' = none; lib/flow.lua).
local function isPolicy(s)
  return s == '' or s == 'f' or s == 'i' or s == 'c' or s == 'd'
end

-- A parent record of add ({pid, pk, pq, ppx, pol, same}): the strings lib/flow.lua reads.
local function isParent(s)
  if string.byte(s, 1) ~= 123 then return false end
  local ok, p = pcall(cjson.decode, s)
  if not ok or type(p) ~= 'table' then return false end
  if type(p.pid) ~= 'string' or p.pid == '' or type(p.pk) ~= 'string' or p.pk == '' then return false end
  return type(p.pq) == 'string' and type(p.ppx) == 'string' and isPolicy(p.pol) and (p.same == 0 or p.same == 1)
end
