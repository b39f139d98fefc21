"""The span tree of a run as text (``wop trace RUN --tree``; the observability guide)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from wopdsl.projections.trace.spans import SpanSpec

__all__ = ["render_tree"]

_USAGE_IN = "gen_ai.usage.input_tokens"
_USAGE_OUT = "gen_ai.usage.output_tokens"


def render_tree(spans: Sequence[SpanSpec]) -> str:
    """Each span on a line under its parent: name, start offset and duration, key facts."""
    children: dict[int | None, list[SpanSpec]] = defaultdict(list)
    ids = {s.span_id for s in spans}
    for span in spans:
        parent = span.parent_id if span.parent_id in ids else None
        children[parent].append(span)
    for group in children.values():
        group.sort(key=lambda s: (s.start_ns, s.name))
    roots = children[None]
    origin = min((s.start_ns for s in roots), default=0)
    lines: list[str] = []

    def walk(span: SpanSpec, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{span.name}  {_timing(span, origin)}{_facts(span)}")
        below = children.get(span.span_id, [])
        inner = prefix if top else prefix + ("   " if last else "│  ")
        for index, child in enumerate(below):
            walk(child, inner, index == len(below) - 1, False)

    for root in roots:
        walk(root, "", True, True)
    return "\n".join(lines) + "\n"


def _timing(span: SpanSpec, origin: int) -> str:
    start = (span.start_ns - origin) / 1e6
    length = (span.end_ns - span.start_ns) / 1e6
    return f"+{start:.0f} ms, {length:.0f} ms"


def _facts(span: SpanSpec) -> str:
    attributes = span.attributes
    facts: list[str] = []
    if _USAGE_IN in attributes and span.kind == "client":
        facts.append(f"{attributes[_USAGE_IN]} in / {attributes.get(_USAGE_OUT, 0)} out tokens")
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list) and reasons:
        facts.append(f"finish {', '.join(reasons)}")
    if "wopdsl.run.status" in attributes:
        facts.append(str(attributes["wopdsl.run.status"]))
    if span.events:
        facts.append(f"{len(span.events)} event{'s' if len(span.events) != 1 else ''}")
    if span.links:
        facts.append("linked to " + ", ".join(f"{link.span_id:016x}" for link in span.links))
    if span.error:
        facts.append(f"ERROR {span.error}")
    return ("  [" + "; ".join(facts) + "]") if facts else ""
