"""Profile files: a TOML file read on top of the default profile, or a built-in one by name.

The kit never changes the app it checks; the profile describes the page instead. Every key
is validated at load (conformance/profiles/keys.py); the keys, with an example:
docs/conformance.md.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from conformance.profiles.builtin import BUILT_IN, built_in_profiles
from conformance.profiles.keys import Keys, ProfileError, section
from conformance.profiles.model import (
    CAPABILITIES,
    DEFAULT_PROFILE,
    SEND_WITHS,
    TURN_FINDS,
    Capability,
    DoneRule,
    LogSpec,
    Profile,
    Selectors,
    SendWith,
    TurnFind,
)
from guardrail.json_shapes import is_array

MAX_SIDE_CALL_RULES = 32
_SECTIONS = {"name", "selectors", "input", "done", "setup", "setup_once", "session",
             "capabilities", "log", "model_calls", "turn", "error_text"}  # fmt: skip


def resolve_profile(value: str) -> Profile:
    """`--profile`'s value: a built-in profile's name, else a TOML file's path."""
    if value in built_in_profiles() and not Path(value).exists():
        with resources.as_file(BUILT_IN.joinpath(f"{value}.toml")) as path:
            return replace(load_profile(path), source=f"built-in ({value})")
    return load_profile(Path(value))


def load_profile(path: Path) -> Profile:
    """The profile in a TOML file, on top of the default; ProfileError names what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        builtin = ", ".join(built_in_profiles())
        raise ProfileError(
            f"{path}: cannot read the profile: {exc.strerror} (built-in profiles: {builtin})"
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from exc
    return _build(data, path)


def _build(data: Mapping[str, Any], path: Path) -> Profile:
    where = Keys(path)
    where.known(data, _SECTIONS, "")
    selectors = section(data, "selectors", where)
    where.known(selectors, set(Selectors.__dataclass_fields__), "selectors.")
    done = section(data, "done", where)
    where.known(done, set(DoneRule.__dataclass_fields__), "done.")
    log = section(data, "log", where)
    where.known(log, set(LogSpec.__dataclass_fields__), "log.")
    sending = section(data, "input", where)
    where.known(sending, {"send_with"}, "input.")
    turn = section(data, "turn", where)
    where.known(turn, {"find"}, "turn.")
    session = section(data, "session", where)
    where.known(session, {"storage_state"}, "session.")
    calls = section(data, "model_calls", where)
    where.known(calls, {"side_calls"}, "model_calls.")
    declared = section(data, "capabilities", where)
    where.known(declared, set(CAPABILITIES), "capabilities.")
    error_text = where.error_text(section(data, "error_text", where))

    base = DEFAULT_PROFILE
    sel = replace(
        base.selectors, **{k: where.text(v, f"selectors.{k}") for k, v in selectors.items()}
    )
    send_with: SendWith = where.choice(
        sending.get("send_with", "click"), SEND_WITHS, "input.send_with"
    )
    find: TurnFind = where.choice(turn.get("find", base.turn_find), TURN_FINDS, "turn.find")
    rule = DoneRule(
        attribute=where.optional_text(done.get("attribute", base.done.attribute), "done.attribute"),
        streaming_value=where.text(
            done.get("streaming_value", "streaming"), "done.streaming_value"
        ),
        appears=where.optional_text(done.get("appears"), "done.appears"),
        disappears=where.optional_text(done.get("disappears"), "done.disappears"),
        quiet_ms=where.count(done.get("quiet_ms", base.done.quiet_ms), "done.quiet_ms"),
    )
    steps = tuple(
        where.setup_step(step, f"setup[{i}]") for i, step in enumerate(where.tables(data, "setup"))
    )
    once = tuple(
        where.once_step(step, f"setup_once[{i}]")
        for i, step in enumerate(where.tables(data, "setup_once"))
    )
    state = session.get("storage_state")
    storage = None
    if state is not None:
        storage = (path.parent / where.text(state, "session.storage_state")).resolve()
        if not storage.is_file():
            raise ProfileError(f"{path}: session.storage_state {storage} is not a file")
    capabilities: frozenset[Capability] = frozenset(
        cap for cap in CAPABILITIES if where.flag(declared.get(cap, False), f"capabilities.{cap}")
    )
    line = where.regex(log.get("line", base.log.line), "log.line", "{turn_id}")
    frame = log.get("turn_id_frame")
    if frame is not None:
        frame = where.regex(frame, "log.turn_id_frame", None)
        if re.compile(frame).groups < 1:
            raise ProfileError(f"{path}: log.turn_id_frame needs a group (...) for the turn id")
    side_calls = calls.get("side_calls", [])
    if not is_array(side_calls) or len(side_calls) > MAX_SIDE_CALL_RULES:
        raise ProfileError(
            f"{path}: model_calls.side_calls must be a list of at most {MAX_SIDE_CALL_RULES}"
            " regular expressions"
        )
    rules = tuple(
        where.text(rule, f"model_calls.side_calls[{i}]") for i, rule in enumerate(side_calls)
    )
    return Profile(
        name=where.text(data.get("name", path.stem), "name"),
        selectors=sel,
        send_with=send_with,
        done=rule,
        turn_find=find,
        setup=steps,
        setup_once=once,
        storage_state=storage,
        capabilities=capabilities,
        log=LogSpec(
            turn_id_header=where.optional_text(
                log.get("turn_id_header", base.log.turn_id_header), "log.turn_id_header"
            ),
            turn_id_frame=frame,
            line=line,
        ),
        side_calls=rules,
        error_text=error_text,
        source=str(path),
    )
