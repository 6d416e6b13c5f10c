-- Strings of consecutive counter values: the ids and arrival stamps of add.lua's plain call.
-- string.format costs ~2,300 instructions a value; a run's value is its head (formatted when it
-- changes, every 100 or 256 values) joined to its last two digits, strings made once per
-- library load and reused. add.lua joins them inline: a Lua call costs ~300-800 instructions.
local runMemo = { dec = {}, hex = {} }

-- The tail string of lo (0..99 decimal, 0..255 hex), made on its first use.
local function runTail(hex, lo)
  local memo = hex and runMemo.hex or runMemo.dec
  local s = string.format(hex and '%02x' or '%02d', lo)
  memo[lo] = s
  return s
end
