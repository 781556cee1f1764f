"""guardrail.json_shapes: untrusted JSON narrowed to the shapes a reader expects, as truth
tables over every kind of JSON value (and what is not JSON at all)."""

from __future__ import annotations

import pytest

from guardrail.json_shapes import (
    as_array,
    as_object,
    is_array,
    is_object,
    objects,
    string_field,
)

VALUES: list[tuple[str, object]] = [
    ("null", None),
    ("true", True),
    ("zero", 0),
    ("number", 1.5),
    ("empty string", ""),
    ("string", "text"),
    ("empty array", []),
    ("array", [1, {"a": 1}]),
    ("empty object", {}),
    ("object", {"a": 1}),
    ("tuple", (1, 2)),
    ("bytes", b"{}"),
]
"""(name, value): every kind of value `json.loads` builds, and two it never does."""

IS_OBJECT = {"empty object", "object"}
IS_ARRAY = {"empty array", "array"}
ARRAYS = [(name, value) for name, value in VALUES if name in IS_ARRAY]
NOT_ARRAYS = [(name, value) for name, value in VALUES if name not in IS_ARRAY]


def names(cases: list[tuple[str, object]]) -> list[str]:
    return [name for name, _ in cases]


@pytest.mark.parametrize(("name", "value"), VALUES, ids=names(VALUES))
def test_only_a_dict_is_an_object(name: str, value: object):
    assert is_object(value) is (name in IS_OBJECT)


@pytest.mark.parametrize(("name", "value"), VALUES, ids=names(VALUES))
def test_only_a_list_is_an_array(name: str, value: object):
    assert is_array(value) is (name in IS_ARRAY)


@pytest.mark.parametrize(("name", "value"), VALUES, ids=names(VALUES))
def test_as_object_is_the_object_itself_or_none(name: str, value: object):
    expected = value if name in IS_OBJECT else None
    assert as_object(value) is expected


@pytest.mark.parametrize(("name", "value"), ARRAYS, ids=names(ARRAYS))
def test_as_array_of_an_array_is_that_list_not_a_copy(name: str, value: object):
    assert as_array(value) is value


@pytest.mark.parametrize(("name", "value"), NOT_ARRAYS, ids=names(NOT_ARRAYS))
def test_as_array_of_anything_else_is_empty(name: str, value: object):
    assert as_array(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([], []),
        ([{}], [{}]),
        ([{"a": 1}, 1, None, "x", [{"b": 2}], {"c": 3}], [{"a": 1}, {"c": 3}]),
        ([1, "x", None], []),
        ({"a": {"b": 1}}, []),
        ("[{}]", []),
        (None, []),
    ],
    ids=["empty", "one", "mixed", "no objects", "an object", "a string", "null"],
)
def test_objects_are_the_members_that_are_objects_in_order(value: object, expected: object):
    assert objects(value) == expected


def test_objects_are_the_members_themselves():
    member = {"text": "a"}
    objects([member])[0]["text"] = "b"
    assert member == {"text": "b"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"text": "a"}, "a"),
        ({"text": ""}, ""),
        ({"text": None}, None),
        ({"text": 1}, None),
        ({"text": ["a"]}, None),
        ({"text": {"text": "a"}}, None),
        ({"other": "a"}, None),
        ({}, None),
        ([{"text": "a"}], None),
        ("text", None),
        (None, None),
    ],
    ids=[
        "a string",
        "an empty string",
        "null",
        "a number",
        "an array",
        "an object",
        "another key",
        "an empty object",
        "an array of it",
        "a string value",
        "no value",
    ],
)
def test_string_field_is_the_field_only_when_it_holds_a_string(value: object, expected: object):
    assert string_field(value, "text") == expected
