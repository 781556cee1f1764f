"""The guard's family table against the kit's oracle: every family flow, replayed through
the guard's `auto` registry for a model name of each family the mock knows, shows what the
flow states for that model.

The mock and the kit judge family flows by the mock's own table (mock_llm/flows/families.py)
and never import the guard's (guardrail/model_profiles.py), so a gap in the guard's table
(a family that writes a markup the guard does not strip for its names) is not hidden by a
shared import: it fails here, on every chunking, and in the kit's G13/G15.
"""

from __future__ import annotations

import pytest

from guardrail import ScaffoldingFilter
from guardrail.model_profiles import registry_for
from mock_llm import Flow, builtin_flows
from mock_llm.flows.families import MODEL_FAMILIES

FAMILY_FLOWS = [flow for flow in builtin_flows().values() if flow.family is not None]
NAMES = [(family.name, key) for family in MODEL_FAMILIES for key in family.keys]
CHUNKS = (1, 7, 0)  # 0: the step's content whole


def filtered(text: str, model: str, size: int) -> tuple[str, int]:
    """What the guard shows of `text` for `model`, fed in chunks of `size`, and what it
    counts as stripped."""
    pieces = [text] if size == 0 else [text[i : i + size] for i in range(0, len(text), size)]
    return guarded(pieces, model)


def guarded(pieces: list[str], model: str) -> tuple[str, int]:
    """What the guard shows of `pieces` fed in turn for `model`, and its stripped count."""
    guard = ScaffoldingFilter(registry_for(model))
    shown = "".join(guard.feed(piece) for piece in pieces) + guard.flush()
    return shown, guard.stripped_chars


def first_step_want(flow: Flow, model: str) -> tuple[str | None, int | None]:
    """What the flow states the first step shows for `model` (None: blank, as a step whose
    whole text is markup and that gets a recovery) and the characters stripped from it
    (None where a later step strips too)."""
    want = flow.expect_for(model)
    assert want is not None
    if want.recovery:
        return None, None
    return want.shown, want.stripped_chars


@pytest.mark.sweep
@pytest.mark.parametrize("flow", FAMILY_FLOWS, ids=lambda flow: flow.name)
def test_every_family_flow_shows_through_the_guard_what_it_states_for_each_family(flow: Flow):
    wrong: list[str] = []
    for family, model in NAMES:
        shown_want, stripped_want = first_step_want(flow, model)
        for size in CHUNKS:
            shown, stripped = filtered(flow.steps[0].content, model, size)
            ok = shown.strip() == "" if shown_want is None else shown == shown_want
            if stripped_want is not None:
                ok = ok and stripped == stripped_want
            if not ok:
                wrong.append(f"{family} ({model!r}, chunks of {size or 'all'}): {shown!r}")
    assert wrong == []


@pytest.mark.sweep
@pytest.mark.parametrize("flow", FAMILY_FLOWS, ids=lambda flow: flow.name)
def test_every_family_flow_reads_alike_cut_at_every_offset_for_its_family(flow: Flow):
    """Its own family's name, the flow's first step cut in two at every offset: the same
    text shown and the same count as whole (what is shown only grows: each feed appends)."""
    model = next(f.keys[0] for f in MODEL_FAMILIES if f.name == flow.family)
    text = flow.steps[0].content
    whole = filtered(text, model, 0)
    cuts = {guarded([text[:offset], text[offset:]], model) for offset in range(len(text) + 1)}
    assert cuts == {whole}
