"""The JSON codec writes what Node's JSON.stringify writes: fixed cases, then hypothesis-made
values checked against a real Node process."""
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from echomq import ValidationError, ValidationTypeError
from echomq.codec import dumps, js_number, loads

CASES = [
    (1.0, "1"), (1e16, "10000000000000000"), (1e21, "1e+21"), (1e-7, "1e-7"), (-0.0, "0"),
    (0.1, "0.1"), (123.456, "123.456"), (1.5e-6, "0.0000015"), (2.5e300, "2.5e+300"), (5e-324, "5e-324"),
    (123456789012345680000.0, "123456789012345680000"), (-1.25e-10, "-1.25e-10"),
]


@pytest.mark.parametrize("value,expected", CASES)
def test_numbers_as_javascript_formats_them(value, expected):
    assert js_number(value) == expected


def test_strings_objects_and_separators():
    assert dumps({"a": [1, 2.0, None, True], "é": "ü\u2028"}) == '{"a":[1,2,null,true],"é":"ü\u2028"}'
    assert dumps("\ud800x\x01\"\\\n") == '"\\ud800x\\u0001\\"\\\\\\n"'
    assert dumps("😀") == '"😀"'  # a pair is one code point in Python: raw, as Node writes it


def test_big_integers_keep_their_digits():
    big = 2 ** 64 + 1
    assert dumps({"n": big}) == '{"n":18446744073709551617}'
    assert loads(dumps({"n": big}))["n"] == big


@pytest.mark.parametrize("bad,where", [
    (float("nan"), "data"), ({"x": [1, float("inf")]}, "data.x[1]"), (b"raw", "data"), ({1, 2}, "data"),
    ({"when": __import__("datetime").datetime(2020, 1, 1)}, "data.when"), ({(1, 2): 3}, "data"),
])
def test_refused_values_name_the_field(bad, where):
    with pytest.raises(ValidationTypeError) as e:
        dumps(bad, "data")
    assert e.value.field == where
    assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)


def test_cycles_are_refused():
    a: list = []
    a.append(a)
    with pytest.raises(ValidationTypeError, match="cycles"):
        dumps(a)


def test_size_limit_is_measured_in_utf8_bytes():
    assert dumps("é" * 10, max_bytes=22)  # 20 bytes of UTF-8 plus the quotes
    with pytest.raises(ValidationError, match="23 bytes"):
        dumps("é" * 10 + "a", max_bytes=22)


def test_loads_keeps_text_that_is_not_json():
    assert loads("plain text") == "plain text"
    assert loads(None) is None and loads("") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 53), 2 ** 53)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(json_values, min_size=50, max_size=50))
async def test_same_text_as_node_json_stringify(node, values):
    # Transported with Python's ASCII-only JSON, which JavaScript parses into the same values.
    lines = [json.dumps(v, ensure_ascii=True) for v in values]
    expected = await node.call("stringify", lines=lines)
    got = [dumps(v) for v in values]
    for v, a, b in zip(values, got, expected):
        # JavaScript orders integer-like keys first (documented): compare those as parsed values.
        if a != b:
            assert json.loads(a) == json.loads(b), (v, a, b)
            assert _has_integer_like_key(v), (v, a, b)


def _has_integer_like_key(v):
    if isinstance(v, dict):
        return any(k.isdigit() and (k == "0" or not k.startswith("0")) for k in v) or any(map(_has_integer_like_key, v.values()))
    if isinstance(v, list):
        return any(map(_has_integer_like_key, v))
    return False
