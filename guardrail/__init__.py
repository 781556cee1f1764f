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

The names below load on first use (PEP 562): the mock and the conformance kit import
`guardrail.json_shapes` alone, and so load nothing of the filter or of the family table
they judge the guard by (their oracle stays independent of the guard's).
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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

_HOMES = {
    "guardrail.model_profiles": ("registry_for",),
    "guardrail.patterns": ("Registry",),
    "guardrail.policy": (
        "CORRECTION_INSTRUCTION",
        "MALFORMED_REPLY",
        "RoundFilter",
        "needs_recovery",
        "recovery_failed",
        "scrub",
        "strip_warning",
        "with_correction",
    ),
    "guardrail.registries": ("DEFAULT_REGISTRY", "PROFILES", "registry_with"),
    "guardrail.scaffolding": ("PREVIEW_CHARS", "ScaffoldingFilter"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    """A name of `__all__`, imported from its module on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
