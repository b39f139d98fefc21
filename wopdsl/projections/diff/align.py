"""Align two sequences in bounded time: difflib where it is cheap, anchors where it is not.

:func:`align` returns ``difflib``-style opcodes (``equal``, ``replace``, ``delete``,
``insert`` with ``i1, i2, j1, j2``). ``difflib.SequenceMatcher`` can take quadratic time (or
worse) on long sequences with repeated items, so it only ever sees a gap of at most
:data:`SMALL_GAP` item pairs. Longer stretches are cut first by their common prefix and
suffix (a fork shares its source's beginning), then at *anchors*: items that occur exactly
once in each side, kept in the longest increasing run of their positions (patience diff,
O(n log n)). A gap between anchors that is still too large to compare pairwise is reported
as one ``replace``: it changed as a whole.

Work is therefore O((n + m) log(n + m)) plus at most ``SMALL_GAP`` per gap, and memory
O(n + m), whatever the items are.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Hashable, Sequence
from typing import Final

__all__ = ["SMALL_GAP", "Opcode", "align"]

SMALL_GAP: Final = 4_096
"""Most item pairs (``len(a) * len(b)``) a gap may have to go to ``difflib``."""

Opcode = tuple[str, int, int, int, int]
"""``(tag, i1, i2, j1, j2)``: ``a[i1:i2]`` becomes ``b[j1:j2]`` (difflib's opcodes)."""


def align(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """Return the opcodes that turn ``a`` into ``b`` (see the module docs for the bounds)."""
    out: list[Opcode] = []
    _gap(a, b, 0, len(a), 0, len(b), out, anchors=True)
    return _merged(out)


def _gap(a: Sequence[Hashable], b: Sequence[Hashable], i1: int, i2: int, j1: int, j2: int,
         out: list[Opcode], *, anchors: bool) -> None:
    start_i, start_j = i1, j1
    while i1 < i2 and j1 < j2 and a[i1] == b[j1]:
        i1 += 1
        j1 += 1
    if i1 > start_i:
        out.append(("equal", start_i, i1, start_j, j1))
    end_i, end_j = i2, j2
    while i2 > i1 and j2 > j1 and a[i2 - 1] == b[j2 - 1]:
        i2 -= 1
        j2 -= 1
    if i1 == i2 or j1 == j2:
        if i1 < i2:
            out.append(("delete", i1, i2, j1, j1))
        elif j1 < j2:
            out.append(("insert", i1, i1, j1, j2))
    elif (i2 - i1) * (j2 - j1) <= SMALL_GAP:
        matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
        out.extend((tag, i1 + x1, i1 + x2, j1 + y1, j1 + y2)
                   for tag, x1, x2, y1, y2 in matcher.get_opcodes())
    elif anchors:
        _anchored(a, b, i1, i2, j1, j2, out)
    else:
        out.append(("replace", i1, i2, j1, j2))
    if i2 < end_i:
        out.append(("equal", i2, end_i, j2, end_j))


def _anchored(a: Sequence[Hashable], b: Sequence[Hashable], i1: int, i2: int, j1: int,
              j2: int, out: list[Opcode]) -> None:
    """Cut ``a[i1:i2]`` / ``b[j1:j2]`` at the items unique to both, compare between them."""
    pairs = _anchors(a, b, i1, i2, j1, j2)
    i, j = i1, j1
    for ai, bj in pairs:
        _gap(a, b, i, ai, j, bj, out, anchors=False)
        out.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    _gap(a, b, i, i2, j, j2, out, anchors=False)


def _anchors(a: Sequence[Hashable], b: Sequence[Hashable], i1: int, i2: int, j1: int,
             j2: int) -> list[tuple[int, int]]:
    """Items occurring once in each side, as the longest run increasing in both."""
    once_a = _unique(a, i1, i2)
    once_b = _unique(b, j1, j2)
    candidates = [(i, once_b[item]) for item, i in once_a.items() if item in once_b]
    candidates.sort()
    # Longest increasing subsequence of the b positions (patience sorting, O(k log k)).
    tails: list[int] = []
    tail_index: list[int] = []
    previous: list[int] = [-1] * len(candidates)
    for index, (_, bj) in enumerate(candidates):
        slot = bisect.bisect_left(tails, bj)
        if slot == len(tails):
            tails.append(bj)
            tail_index.append(index)
        else:
            tails[slot] = bj
            tail_index[slot] = index
        previous[index] = tail_index[slot - 1] if slot else -1
    chain: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        chain.append(candidates[index])
        index = previous[index]
    chain.reverse()
    return chain


def _unique(seq: Sequence[Hashable], start: int, stop: int) -> dict[Hashable, int]:
    seen: dict[Hashable, int] = {}
    repeated: set[Hashable] = set()
    for index in range(start, stop):
        item = seq[index]
        if item in seen:
            repeated.add(item)
        else:
            seen[item] = index
    for item in repeated:
        del seen[item]
    return seen


def _merged(ops: list[Opcode]) -> list[Opcode]:
    """Join neighbouring opcodes of one kind (equal, or changed); drop empty ones."""
    merged: list[Opcode] = []
    for op in ops:
        tag, i1, i2, j1, j2 = op
        if i1 == i2 and j1 == j2:
            continue
        last = merged[-1] if merged else None
        if last is not None and (last[0] == tag or "equal" not in (last[0], tag)):
            # Changes side by side are one change (a delete then an insert: a replace).
            joined = tag if last[0] == tag else "replace"
            merged[-1] = (joined, last[1], i2, last[3], j2)
        else:
            merged.append(op)
    return merged
