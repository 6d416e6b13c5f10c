"""Error messages name what they got in plain English ("an object", not "a object")."""
import pytest

from echomq import Queue
from echomq.errors import ValidationError
from echomq.validate import describe


def test_article_follows_the_noun():
    assert describe(object()) == "an object"
    assert describe({}) == "a dict"
    assert describe(set()) == "a set"
    assert describe([1, 2]) == "a list of 2"
    assert describe((1,)) == "a tuple of 1"

    class Item:
        pass

    assert describe(Item()) == "an Item"


def test_a_refused_option_says_an_object():
    with pytest.raises(ValidationError) as e:
        Queue("q", {"prefix": object(), "connection": "redis://127.0.0.1:1"})
    assert "got an object" in str(e.value)
