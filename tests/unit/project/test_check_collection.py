"""scripts/check_collection.py's pure parts: reading pytest's id list and comparing two."""

from __future__ import annotations

# scripts/ is not a package pyright is pointed at; the module is typed all the same.
from scripts.check_collection import id_diff, parse_ids  # pyright: ignore[reportMissingTypeStubs]

IDS = ["tests/unit/test_a.py::test_one", "tests/unit/test_a.py::test_two[x]"]


def test_identical_collections_have_no_diff():
    assert id_diff(IDS, list(IDS)) == []


def test_an_id_that_changed_shows_as_removed_then_added():
    clocked = [*IDS, "tests/unit/test_b.py::test_date[Wed, 02 Dec 2026 19:00:01 GMT]"]
    later = [*IDS, "tests/unit/test_b.py::test_date[Wed, 02 Dec 2026 19:00:02 GMT]"]

    changed = [line for line in id_diff(clocked, later) if line[:1] in "+-"]

    assert changed == [
        "--- first collection",
        "+++ second collection",
        "-tests/unit/test_b.py::test_date[Wed, 02 Dec 2026 19:00:01 GMT]",
        "+tests/unit/test_b.py::test_date[Wed, 02 Dec 2026 19:00:02 GMT]",
    ]


def test_an_id_only_one_collection_has_is_a_difference():
    assert "+tests/unit/test_c.py::test_new" in id_diff(
        IDS, [*IDS, "tests/unit/test_c.py::test_new"]
    )


def test_the_same_ids_in_another_order_are_a_different_collection():
    assert id_diff(IDS, IDS[::-1]) != []


def test_parse_ids_keeps_the_listed_ids_and_stops_at_the_summary():
    output = "\n".join([*IDS, "", "2 tests collected in 0.01s", "tests/x.py::not_an_id"])

    assert parse_ids(output) == IDS
