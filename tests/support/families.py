"""Judging family flows by the model (`Flow.expect_for`): a name of every family, and the
canary a flow must hide under a model."""

from __future__ import annotations

from guardrail.model_profiles import FAMILIES
from mock_llm import Flow

EVERY_FAMILY = " ".join(family.keys[0] for family in FAMILIES)
"""A model name that names every family: `auto` strips every family's markup for it."""


def hidden_canary(flow: Flow, model: object) -> str | None:
    """The flow's canary, which must not reach the client under `model`; None where the
    flow's markup is the answer's text for that model (a family flow elsewhere)."""
    return flow.canary if flow.expect_for(model) is flow.expect else None
