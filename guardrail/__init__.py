"""The guardrail's core: a library shared by the notes app and the guard proxy.

Pure: no I/O, no network, no model, and no import of the app or the mock, so any adapter
(our app's agent, the OpenAI-compatible proxy, someone else's server) applies exactly the
same contract (docs/contract.md, G1 to G12):

- `guardrail.scaffolding`: the streaming filter (`ScaffoldingFilter`), which decides
  character by character what of a model's answer may be shown;
- `guardrail.registries`: the model families' markup it strips, as data
  (`DEFAULT_REGISTRY`, `PROFILES`, `registry_with`), made of `guardrail.patterns`
  (`Registry`) and `guardrail.shapes`;
- `guardrail.model_profiles`: the registry `auto` picks from a model's name
  (`registry_for`);
- `guardrail.policy`: the rest of the contract's rules: one request's answer through a
  fresh filter (`RoundFilter`), when a reply gets the one recovery (`needs_recovery`) and
  when that failed (`recovery_failed`), the recovery's messages (`with_correction`,
  `CORRECTION_INSTRUCTION`), the copy of a reply that stayed empty (`MALFORMED_REPLY`),
  the per-strip warning (`strip_warning`) and a whole short text scrubbed (`scrub`).
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
