-- Strings of consecutive counter values: the ids and arrival stamps of add.lua's plain call.
-- string.format costs ~2,300 instructions a value; a run's value is its head (formatted when it
-- changes) joined to its last three digits, strings made once per library load and reused.
-- Needs lib/common.lua.
local runMemo = { dec = {}, hex = {} }

-- The tail string of lo (0..999 decimal, 0..4095 hex), made on its first use.
local function runTail(hex, lo)
  local memo = hex and runMemo.hex or runMemo.dec
  local s = string.format(hex and '%03x' or '%03d', lo)
  memo[lo] = s
  return s
end
