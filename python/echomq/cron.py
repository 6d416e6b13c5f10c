"""The next slot of a cron pattern, as Node's cron-parser computes it (nextCronSlot in
src/lifecycle/schedulers.ts): five fields, or six with seconds first; read in an IANA time
zone (UTC by default); strictly after the given time. A shared table of cases
(test/fixtures/cron-cases.json) runs in both test suites."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional
from zoneinfo import ZoneInfo

from croniter import croniter


def next_cron_slot(pattern: str, tz: Optional[str], after_ms: int) -> Optional[int]:
    fields = pattern.split()
    # cron-parser reads six fields with the seconds first; croniter with the seconds last.
    if len(fields) == 6:
        expr = " ".join(fields[1:] + fields[:1])
    else:
        expr = " ".join(fields)
    zone = ZoneInfo(tz) if tz else timezone.utc
    start = datetime.fromtimestamp(after_ms / 1000, zone)
    try:
        it = croniter(expr, start, day_or=_day_or(fields), second_at_beginning=False)
        nxt = it.get_next(datetime)
    except Exception:
        return None
    return int(round(nxt.timestamp() * 1000))


def _day_or(fields: list) -> bool:
    # Both runtimes match a day that satisfies day-of-month OR day-of-week when both are set
    # (Vixie cron's rule, cron-parser's default).
    return True
