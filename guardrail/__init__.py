"""The guardrail's core: a library shared by the notes app and the guard proxy.

Pure: no I/O, no network, no model, and no import of the app or the mock, so every adapter
applies exactly the same contract (docs/contract.md, G1 to G12):

- `guardrail.scaffolding`: the streaming filter (`ScaffoldingFilter`);
- `guardrail.registries`: the markup it strips, as data (`DEFAULT_REGISTRY`, `PROFILES`,
  `registry_with`), built of `guardrail.patterns` and `guardrail.shapes`;
- `guardrail.model_profiles`: the registry `auto` picks from a model's name;
- `guardrail.policy`: a round's filter, the one recovery and its messages,
  `MALFORMED_REPLY`, the strip warning and `scrub`;
- `guardrail.json_shapes`: untrusted JSON narrowed to the shapes a reader expects, which
  every package shares (not re-exported here: it is no part of the contract).
"""

from guardrail.model_profiles import registry_for
from guardrail.patterns import Registry
from guardrail.policy import (
    CORRECTION_INSTRUCTION,
    MALFORMED_REPLY,
    RoundFilter,
    needs_recovery,
    recovery_failed,
    scrub,
    strip_warning,
    with_correction,
)
from guardrail.registries import DEFAULT_REGISTRY, PROFILES, registry_with
from guardrail.scaffolding import PREVIEW_CHARS, ScaffoldingFilter

__all__ = [
    "CORRECTION_INSTRUCTION",
    "DEFAULT_REGISTRY",
    "MALFORMED_REPLY",
    "PREVIEW_CHARS",
    "PROFILES",
    "Registry",
    "RoundFilter",
    "ScaffoldingFilter",
    "needs_recovery",
    "recovery_failed",
    "registry_for",
    "registry_with",
    "scrub",
    "strip_warning",
    "with_correction",
]
