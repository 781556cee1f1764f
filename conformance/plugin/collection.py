"""The kit's tests as collected: each one's clause and flow, the CASE test without `--cases`
left out, and the baseline (`--expected-failures`) put on the tests it covers.

Deliberate choices:
- A baselined failure is a strict xfail: it passes as expected-to-fail, and a baselined
  clause that now passes fails the run as a stale baseline.
- The baseline is checked against every collected test, before -k and -m deselect: an
  entry for a test -k leaves out still matches it, and a `CLAUSE:FLOW` that names no test
  (a typo in the flow) stops the run.
"""

from __future__ import annotations

import pytest

from conformance.plugin.options import KIT_KEY, kit_config
from conformance.plugin.verdicts import CLAUSE_PROPERTY, FLOW_PROPERTY


def clause_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("clause")
    return None if marker is None else str(marker.args[0])


def flow_of(item: pytest.Item) -> str | None:
    """The flow a test plays: its `flow` parameter, else the clause marker's `flow=`."""
    callspec = getattr(item, "callspec", None)
    flow = callspec.params.get("flow") if callspec is not None else None
    if flow is None:
        marker = item.get_closest_marker("clause")
        flow = marker.kwargs.get("flow") if marker is not None else None
    return flow if isinstance(flow, str) else None


def mark_kit_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Resolve the kit's settings once a kit test is collected, leave the CASE test out
    without `--cases`, and give each kit test its clause and flow properties and, where the
    baseline covers it, a strict xfail."""
    kit_items = [item for item in items if clause_of(item) is not None]
    if not kit_items:
        return
    kit = kit_config(config)
    if not kit.cases:  # no --cases: the CASE test has no flow to run, and is not collected
        unused = [item for item in kit_items if clause_of(item) == "CASE"]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [item for item in items if item not in unused]
            kit_items = [item for item in kit_items if item not in unused]
    config.stash[KIT_KEY] = kit
    tested = {(clause_of(item), flow_of(item)) for item in kit_items}
    for clause, flow in sorted(kit.baseline.entries, key=str):
        if flow is not None and (clause, flow) not in tested:
            flows = sorted(f for c, f in tested if c == clause and f is not None)
            raise pytest.UsageError(
                f"conformance: the baseline entry {clause}:{flow} matches no test"
                f" (the flows {clause} is tested with: {', '.join(flows) or 'none'})"
            )
    for item in kit_items:
        clause = clause_of(item)
        assert clause is not None
        flow = flow_of(item)
        item.user_properties.append((CLAUSE_PROPERTY, clause))
        item.user_properties.append((FLOW_PROPERTY, flow or ""))
        if kit.baseline.covers(clause, flow):
            reason = f"baselined in --expected-failures ({clause}{':' + flow if flow else ''})"
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
