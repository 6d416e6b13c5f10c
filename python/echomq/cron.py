"""The next slot of a cron pattern, as Node's cron-parser computes it (nextCronSlot in
src/lifecycle/schedulers.ts), so a Python worker advances a Node scheduler to the same slot.

Five fields, or six with the seconds first (cron-parser's order; croniter puts them last);
read in an IANA time zone (UTC by default); strictly after the given time. croniter matches
the fields on local wall-clock time; the wall-clock time is then placed on the time line with
cron-parser's DST rules: a time inside a spring-forward gap moves forward by the gap (02:30 in
a one-hour gap fires at 03:30), a time repeated by a fall-back fires at its first occurrence
still after the given time. Syntax cron-parser refuses (W) is refused here too (None).
The shared table test/fixtures/cron-cases.json runs in both test suites."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Optional
from zoneinfo import ZoneInfo

from croniter import croniter

_MAX_STEPS = 1000


def _to_croniter(pattern: str) -> Optional[str]:
    fields = pattern.split()
    if len(fields) not in (5, 6):
        return None
    if any("W" in f.upper() for f in fields):
        return None  # cron-parser 5 has no W (nearest weekday): both runtimes refuse it
    if len(fields) == 6:
        fields = fields[1:] + fields[:1]
    dow = 4 if len(fields) == 5 else 4
    # cron-parser writes "last Friday" as 5L, croniter as L5.
    fields[dow] = re.sub(r"\b(\d)L\b", r"L\1", fields[dow])
    return " ".join(fields)


def _instants(local: datetime, zone: ZoneInfo, every_hour: bool):
    """The UTC instants a wall-clock time fires at: a time in a gap shifted by the gap; a time
    repeated by a fall-back at its first occurrence, and at the second too when the hour field
    matches every hour (what cron-parser does: '30 * * * *' runs twice in the repeated hour,
    '30 1 * * *' once)."""
    a = local.replace(tzinfo=zone, fold=0)
    b = local.replace(tzinfo=zone, fold=1)
    ua, ub = a.astimezone(timezone.utc), b.astimezone(timezone.utc)
    if a.replace(tzinfo=None) != ua.astimezone(zone).replace(tzinfo=None):
        # A gap: the wall-clock time does not exist; fire as far after it as the gap is long.
        gap = ua - ub if ua > ub else ub - ua
        return [min(ua, ub) + gap]
    return sorted({ua, ub}) if every_hour else [min(ua, ub)]


def next_cron_slot(pattern: str, tz: Optional[str], after_ms: int) -> Optional[int]:
    expr = _to_croniter(pattern)
    if expr is None:
        return None
    zone = ZoneInfo(tz) if tz else ZoneInfo("UTC")
    after = datetime.fromtimestamp(after_ms / 1000, timezone.utc)
    local_after = after.astimezone(zone)
    near_change = any((after + timedelta(hours=h)).astimezone(zone).utcoffset() != local_after.utcoffset() for h in (-3, 3))
    # Near a DST change, start two hours of wall-clock time early so a repeated hour's second
    # pass is not skipped; elsewhere wall-clock order is time order and the start is `after`.
    start = local_after.replace(tzinfo=None) - (timedelta(hours=2) if near_change else timedelta(0))
    steps = 10 * _MAX_STEPS if near_change else _MAX_STEPS
    try:
        it = croniter(expr, start, day_or=True)
        hours = it.expanded[1]  # minute, hour, ... in croniter's order (seconds last)
        every_hour = hours == ["*"] or len(set(hours)) == 24
        for _ in range(steps):
            local = it.get_next(datetime)
            for instant in _instants(local, zone, every_hour):
                if instant > after:
                    return int(round(instant.timestamp() * 1000))
    except Exception:  # croniter refuses the pattern: no slot, as cron-parser's error gives none
        return None
    return None
