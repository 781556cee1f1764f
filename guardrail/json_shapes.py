"""Untrusted JSON narrowed to the shapes a reader expects, typed once. Pure.

A JSON value from outside (a request or answer body, a stream chunk, a journal read, a flow
file) is `object` to the type checker until its reader checks it. These are the checks, as
`TypeGuard`s or as readings that give the shape or nothing, so that no reader needs
`typing.cast` for them and every package reads JSON the same way (this module imports
nothing of ours: any package may use it):

- `JSONObject`: a JSON object as a reader holds it, its fields unchecked (`object`);
- `is_object` and `is_array`: whether a value is a JSON object, a JSON array;
- `as_object`: the value when it is an object, else None;
- `as_array`: the value when it is an array, else an empty list;
- `objects`: the members of an array that are objects (none when it is no array);
- `string_field`: an object's field when it holds a string (None otherwise, or when the
  value is no object).

Deliberate choices:
- An object is a `dict` and an array a `list`, what `json.loads` and orjson build; the keys
  are not checked (JSON's are strings), the fields are `object`, checked where they are read.
- `as_array` and `objects` give the value's own list and members, not copies: a reader that
  rewrites a body in place (the guard proxy, the Open WebUI filter) rewrites the body.
- `TypeGuard`, not `TypeIs` (Python 3.11): a failed check narrows nothing.
"""

from __future__ import annotations

from typing import TypeGuard

__all__ = [
    "JSONObject",
    "as_array",
    "as_object",
    "is_array",
    "is_object",
    "objects",
    "string_field",
]

JSONObject = dict[str, object]
"""A JSON object as a reader holds it: each field is checked where it is read."""


def is_object(value: object) -> TypeGuard[JSONObject]:
    """Whether `value` is a JSON object."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[object]]:
    """Whether `value` is a JSON array."""
    return isinstance(value, list)


def as_object(value: object) -> JSONObject | None:
    """`value` when it is a JSON object, else None."""
    return value if is_object(value) else None


def as_array(value: object) -> list[object]:
    """`value` when it is a JSON array (the list itself), else an empty list."""
    return value if is_array(value) else []


def objects(value: object) -> list[JSONObject]:
    """The members of `value` that are JSON objects, in order (none when it is no array)."""
    return [member for member in as_array(value) if is_object(member)]


def string_field(value: object, key: str) -> str | None:
    """`value[key]` when `value` is a JSON object and that field is a string, else None."""
    found = value.get(key) if is_object(value) else None
    return found if isinstance(found, str) else None
