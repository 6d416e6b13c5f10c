"""Number.prototype.toString in Python: the digits JavaScript prints for a double. Used by the
JSON encoder (codec.py) and by the id check (validate.py, what parseInt prints), so it sits
below both."""
from __future__ import annotations


def js_number(f: float) -> str:
    """Number.prototype.toString of a finite double."""
    if f == 0:
        return "0"
    if f.is_integer() and abs(f) < 2 ** 53:
        return str(int(f))  # exact below 2^53; above, the shortest digits padded, as JavaScript
    r = repr(abs(f))
    mant, _, e = r.partition("e")
    exp = int(e) if e else 0
    ip, _, fp = mant.partition(".")
    if ip.strip("0") == "":
        stripped = fp.lstrip("0")
        n = exp - (len(fp) - len(stripped))
        digits = stripped
    else:
        n = len(ip) + exp
        digits = ip + fp
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        x = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if x >= 0 else "-") + str(abs(x))
    return ("-" if f < 0 else "") + s
