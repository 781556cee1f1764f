"""Model names for tests that judge family flows by the model (`Flow.expect_for`)."""

from __future__ import annotations

from guardrail.model_profiles import FAMILIES

EVERY_FAMILY = " ".join(family.keys[0] for family in FAMILIES)
"""A model name that names every family: `auto` strips every family's markup for it."""
