"""Notes cut into heading sections: headings, trails, fenced code, long sections."""

from __future__ import annotations

import pytest

from scaffold_guard.app.rag.sections import Section, split_sections


def test_each_heading_starts_a_section_that_runs_to_the_next_heading():
    text = "# Backups\nintro\n## Schedule\nnightly at 02:00\n\nand more\n## Restore\nsteps\n"
    assert [(s.heading, s.body) for s in split_sections(text, "stem")] == [
        ("Backups", "intro"),
        ("Schedule", "nightly at 02:00\n\nand more"),
        ("Restore", "steps"),
    ]


def test_text_before_the_first_heading_is_titled_with_the_first_heading():
    sections = split_sections("lead paragraph\n\n# Real title\nbody\n", "stem")
    assert sections[0] == Section(heading="Real title", trail="Real title", body="lead paragraph")


def test_a_note_without_headings_is_one_section_titled_with_the_file_stem():
    assert split_sections("just text\n", "dns") == [Section("dns", "dns", "just text")]


def test_the_trail_holds_the_open_parent_headings():
    text = "# Backups\n## Schedule\nx\n### Weekly\ny\n## Restore\nz\n# Other\nw\n"
    assert [s.trail for s in split_sections(text, "stem")] == [
        "Backups / Schedule",
        "Backups / Schedule / Weekly",
        "Backups / Restore",
        "Other",
    ]


def test_headings_without_body_are_left_out():
    assert [s.heading for s in split_sections("# A\n## B\n\n## C\ntext\n", "stem")] == ["C"]


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("# Title", "Title"),
        ("###### Six", "Six"),
        ("## Closed ##", "Closed"),
        ("   ## Indented three", "Indented three"),
        ("## C# notes", "C# notes"),
        ("#hashtag", None),
        ("####### seven", None),
        ("    # four spaces is code", None),
    ],
)
def test_atx_heading_lines_are_recognised(line: str, heading: str | None):
    sections = split_sections(f"{line}\nbody\n", "stem")
    assert sections[0].heading == (heading if heading is not None else "stem")


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_hash_lines_inside_fenced_code_are_not_headings(fence: str):
    text = f"# Runbook\n{fence}bash\n# stop the service\nsystemctl stop x\n{fence}\nafter\n"
    sections = split_sections(text, "stem")
    assert [s.heading for s in sections] == ["Runbook"]
    assert "# stop the service" in sections[0].body


def test_a_shorter_or_other_fence_does_not_close_a_code_block():
    text = "# T\n````\n```\n~~~\n# not a heading\n````\n## Real\nx\n"
    assert [s.heading for s in split_sections(text, "stem")] == ["T", "Real"]


def test_crlf_line_endings_are_handled():
    assert split_sections("# A\r\nbody\r\n## B\r\nmore\r\n", "s")[1] == Section(
        "B", "A / B", "more"
    )


def test_long_sections_split_on_paragraph_boundaries_within_the_cap():
    paragraphs = [f"paragraph {n} " + "word " * 30 for n in range(20)]
    text = "# Big\n" + "\n\n".join(p.strip() for p in paragraphs)
    sections = split_sections(text, "stem", max_chars=400)
    assert len(sections) > 1
    assert all(len(s.body) <= 400 for s in sections)
    assert all(s.heading == "Big" for s in sections)
    # no paragraph is cut: each one is whole in exactly one piece
    for p in paragraphs:
        assert sum(p.strip() in s.body for s in sections) == 1


def test_a_paragraph_longer_than_the_cap_is_split_by_lines_then_cut():
    long_line = "x" * 250
    text = "# Big\n" + "\n".join(["short line"] * 5 + [long_line])
    sections = split_sections(text, "stem", max_chars=100)
    assert all(len(s.body) <= 100 for s in sections)
    assert "".join(s.body for s in sections).count("x") == 250
    assert sections[0].body.startswith("short line\nshort line")
