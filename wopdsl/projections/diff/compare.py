"""Compare two runs: fold each once, then align and set side by side (``wop diff``).

Each run's events are folded once into :class:`~wopdsl.projections.diff.facts.RunFacts`
(linear); each room's transcripts are aligned with
:func:`~wopdsl.projections.diff.align.align` on message keys (sender, text, mentions) made
small integers first, so the alignment compares integers in bounded time. The runs may come
from different stores, be a run and its fork, two unrelated runs of one council, or runs of
different councils (then :attr:`~wopdsl.projections.diff.result.DiffData.same_council` is
false and they differ).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from wopdsl.projections.diff.align import align
from wopdsl.projections.diff.facts import Fact, RunFacts, canonical, fold_facts
from wopdsl.projections.diff.render import RunDiff
from wopdsl.projections.diff.result import (
    Divergence,
    Entry,
    ForkLink,
    MemberDiff,
    MemberStats,
    Msg,
    OrderDiff,
    Outcome,
    Point,
    RoomDiff,
    RunSide,
)
from wopdsl.protocol.envelope import RunEventDoc

if TYPE_CHECKING:
    from wopdsl.model.turns import Message

__all__ = ["compare_facts", "diff_runs"]


def diff_runs(a: Iterable[RunEventDoc], b: Iterable[RunEventDoc]) -> RunDiff:
    """Compare two runs given their events (each in sequence order; any iterable).

    Returns:
        A :class:`RunDiff`: ``equal``, the aligned rooms, the speaking order, per-member
        work, the outcome and the first divergence; ``str()`` is the text ``wop diff``
        prints, ``to_json()`` its ``--json`` document, and notebooks render it as HTML.
    """
    return compare_facts(fold_facts(a), fold_facts(b))


def compare_facts(a: RunFacts, b: RunFacts) -> RunDiff:
    """Compare two folded runs (see :func:`diff_runs`)."""
    keys: dict[tuple[str, str, tuple[str, ...]], int] = {}
    rooms = tuple(_room(room, a, b, keys) for room in _union(a.state.rooms, b.state.rooms))
    results_a = _results(a)
    results_b = _results(b)
    members = tuple(
        MemberDiff(m, _stats(a, m), _stats(b, m),
                   canonical(results_a.get(m)) != canonical(results_b.get(m)))
        for m in _union(a.state.members, b.state.members))
    sa, sb = a.state, b.state
    outcome = Outcome(sa.status, sb.status, sa.error, sb.error,
                      canonical(sa.outputs) == canonical(sb.outputs))
    return RunDiff(_side(a), _side(b), _fork(a, b), _divergence(a, b), rooms,
                   OrderDiff(tuple(a.order), tuple(b.order)), members, outcome)


def _union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    """``first``'s keys in order, then ``second``'s others."""
    out = list(first)
    seen = set(out)
    out.extend(k for k in second if k not in seen)
    return out


def _room(room: str, a: RunFacts, b: RunFacts,
          keys: dict[tuple[str, str, tuple[str, ...]], int]) -> RoomDiff:
    ra, rb = a.state.rooms.get(room), b.state.rooms.get(room)
    left = ra.messages if ra is not None else []
    right = rb.messages if rb is not None else []
    entries: list[Entry] = []
    for tag, i1, i2, j1, j2 in align(_keys(left, keys), _keys(right, keys)):
        if tag == "equal":
            entries.append(Entry("same", _msg(left[i1]), _msg(left[i2 - 1]), i2 - i1))
        elif tag == "delete":
            entries.extend(Entry("removed", a=_msg(m)) for m in left[i1:i2])
        elif tag == "insert":
            entries.extend(Entry("added", b=_msg(m)) for m in right[j1:j2])
        else:
            entries.extend(_replaced(left[i1:i2], right[j1:j2]))
    return RoomDiff(room, ra.members if ra is not None else None,
                    rb.members if rb is not None else None, tuple(entries))


def _replaced(old: Sequence[Message], new: Sequence[Message]) -> Iterable[Entry]:
    """A changed stretch, message by message: same sender = changed, else removed + added."""
    for index in range(max(len(old), len(new))):
        x = old[index] if index < len(old) else None
        y = new[index] if index < len(new) else None
        if x is not None and y is not None and x.sender == y.sender:
            yield Entry("changed", _msg(x), _msg(y))
            continue
        if x is not None:
            yield Entry("removed", a=_msg(x))
        if y is not None:
            yield Entry("added", b=_msg(y))


def _keys(messages: Sequence[Message],
          keys: dict[tuple[str, str, tuple[str, ...]], int]) -> list[int]:
    """Each message's key (sender, text, mentions) as a small integer shared by both runs."""
    out = []
    for message in messages:
        key = (message.sender, message.text, tuple(message.mentions))
        out.append(keys.setdefault(key, len(keys)))
    return out


def _msg(message: Message) -> Msg:
    return Msg(message.id, message.sender, tuple(message.mentions), message.text)


def _stats(facts: RunFacts, member: str) -> MemberStats | None:
    state = facts.state
    if member not in state.members:
        return None
    usage = state.usage.members.get(member)
    return MemberStats(
        turns=state.members[member].turns, failed=facts.failures[member],
        calls=usage.calls if usage else 0, input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        cost_usd=usage.cost_usd if usage else None, tool_calls=facts.tool_calls[member])


def _results(facts: RunFacts) -> dict[str, Any]:
    return {m.id: m.result for m in facts.state.members.values()}


def _side(facts: RunFacts) -> RunSide:
    state = facts.state
    return RunSide(
        run_id=state.run_id, council=state.workflow_id,
        version=state.council.get("council", {}).get("version"),
        digest=str(state.metadata.get("councilDigest", "")), status=state.status,
        events=state.last_sequence + 1, messages=len(state.messages), error=state.error,
        forked_from=state.metadata.get("forkedFrom"),
        divergences=tuple(state.divergences))


def _fork(a: RunFacts, b: RunFacts) -> ForkLink | None:
    origin_a = a.state.metadata.get("forkedFrom") or {}
    origin_b = b.state.metadata.get("forkedFrom") or {}
    source_a, source_b = origin_a.get("runId"), origin_b.get("runId")
    if source_b and source_b == a.state.run_id:
        return ForkLink("b", source_b, int(origin_b.get("atSequence", 0)),
                        str(origin_b.get("mode", "")))
    if source_a and source_a == b.state.run_id:
        return ForkLink("a", source_a, int(origin_a.get("atSequence", 0)),
                        str(origin_a.get("mode", "")))
    if source_a and source_a == source_b:
        return ForkLink("both", source_a, min(int(origin_a.get("atSequence", 0)),
                                              int(origin_b.get("atSequence", 0))), "")
    return None


def _divergence(a: RunFacts, b: RunFacts) -> Divergence | None:
    """The first fact where the runs part (facts before a fork point agree by construction)."""
    fa, fb = a.facts, b.facts
    for index in range(max(len(fa), len(fb))):
        x = fa[index] if index < len(fa) else None
        y = fb[index] if index < len(fb) else None
        if x is None or y is None or x.key != y.key:
            return Divergence(index, _point(x), _point(y))
    return None


def _point(fact: Fact | None) -> Point | None:
    return None if fact is None else Point(fact.sequence, fact.event, fact.label)
