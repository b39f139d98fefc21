"""The OpenWOP conformance fixtures a council host serves (``wop serve --conformance``).

The official suite (``conformance/`` in the public ``openwop/openwop`` repository) runs a
scenario only when discovery advertises its fixture in ``fixtures[]`` (RFC 0003), and a
fixture is a workflow with an agreed id, inputs, timing and outcome
(``conformance/fixtures.md``). This package holds the ones a conversation host can serve,
as councils (TOML files beside this module, python members bound here):

==============================================  ========================================
fixture                                         behaviour
==============================================  ========================================
``conformance-noop``                            one turn, ``completed`` (≤ 5 s)
``conformance-idempotent``                      a noop taking a ``nonce`` input
``conformance-delay``                           waits ``delayMs`` (default 1000) while
                                                ``running``, then ``completed``
``conformance-cancellable``                     waits ``delayMs`` (default 30000; also
                                                as ``delaySeconds``), so a client can
                                                cancel it mid-run
``conformance-failure``                         its only turn raises: ``failed`` with
                                                ``error {code, message}``
``conformance-conversation-lifecycle``          gate ``room:convo``: opened → two
``conformance-conversation-vs-clarification``   exchanges → closed, ``completed`` (no
``conformance-conversation-replay``             ``clarification.*``; a replay fork folds
                                                the same channels)
``conformance-multi-party-council``             gate ``convo`` with three ``external``
                                                members; waits for their turns
``conformance-multi-party-council-oversize``    64 members: refused at run creation
                                                (``conversation_roster_exceeded``)
``conformance-approval``                        gate ``gate``: ``waiting-approval`` until
                                                ``{action: accept|reject}`` resolves it,
                                                then ``completed`` (a tool call's approval,
                                                its model the host's :mod:`.stand_in`;
                                                served with ``wopdsl[llm]`` installed)
==============================================  ========================================

A fixture's inputs other than ``task`` (``delayMs``, ``nonce``) become its task, as JSON
(a council has one input, its task); :func:`fixture_task` does that and refuses unknown ones.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Final

from wopdsl import Council, Turn, load
from wopdsl.server.conformance.stand_in import GATE, TOOL, StandIn, llm_installed
from wopdsl.server.errors import ApiError

__all__ = ["APPROVAL", "FIXTURES", "FIXTURE_INPUTS", "StandIn", "fixture_councils",
           "fixture_task"]

_HERE: Final = Path(__file__).resolve().parent / "councils"

FIXTURE_INPUTS: Final[dict[str, frozenset[str]]] = {
    "conformance-noop": frozenset(),
    "conformance-idempotent": frozenset({"nonce"}),
    "conformance-delay": frozenset({"delayMs"}),
    "conformance-cancellable": frozenset({"delayMs", "delaySeconds"}),
    "conformance-failure": frozenset(),
    "conformance-conversation-lifecycle": frozenset(),
    "conformance-conversation-vs-clarification": frozenset(),
    "conformance-conversation-replay": frozenset(),
    "conformance-multi-party-council": frozenset(),
    "conformance-multi-party-council-oversize": frozenset(),
    "conformance-approval": frozenset(),
}
"""Each fixture's inputs besides ``task`` (``conformance/fixtures.md``)."""

APPROVAL: Final = "conformance-approval"
"""The approval fixture: an ``llm`` member, so served only where ``llm`` members can run."""

FIXTURES: Final = tuple(sorted(f for f in FIXTURE_INPUTS if f != APPROVAL or llm_installed()))
"""The fixture ids this host advertises in discovery ``fixtures[]`` with ``--conformance``."""

_DELAYS: Final = {"conformance-delay": (1000, 30_000), "conformance-cancellable": (30_000, 60_000)}
"""``delayMs`` default and maximum per waiting fixture."""


def fixture_councils(stand_in: StandIn | None = None) -> list[Council]:
    """Load every fixture council, python members and tools bound.

    ``stand_in``: the model ``conformance-approval``'s gate calls (started and stopped by
    the app); without one that fixture is left out.
    """
    councils = []
    for fixture in FIXTURES:
        if fixture == APPROVAL and stand_in is None:
            continue
        council = load(_HERE / f"{fixture}.toml")
        if fixture in _DELAYS:
            council.bind("delay")(_wait)
        elif fixture == "conformance-failure":
            council.bind("fail")(_fail)
        elif fixture == APPROVAL and stand_in is not None:
            council.tool(name=TOOL)(_proceed)
            stand_in.attach(council)
        councils.append(council)
    return councils


def fixture_task(workflow_id: str, inputs: dict[str, Any]) -> str | None:
    """The task a fixture run gets for ``inputs`` (``None``: the council's own).

    The waiting fixtures' own task holds their defaults (``{"delayMs": 1000}``).

    Raises:
        ApiError: 400 ``validation_error`` for an input the fixture does not take, or a
            ``delayMs`` that is not an integer in range.
    """
    allowed = FIXTURE_INPUTS.get(workflow_id, frozenset())
    unknown = sorted(set(inputs) - allowed - {"task"})
    if unknown:
        raise ApiError(400, "validation_error",
                       f"unknown input(s): {', '.join(unknown)}; {workflow_id} takes "
                       f"{', '.join(sorted(allowed)) or 'no inputs'}",
                       {"field": "inputs", "fields": unknown})
    given = {k: inputs[k] for k in sorted(allowed) if k in inputs}
    if "delaySeconds" in given:  # The v1 bulk-cancel scenario's spelling of delayMs.
        seconds = given.pop("delaySeconds")
        if "delayMs" in given or isinstance(seconds, bool) or not isinstance(seconds, int):
            raise ApiError(400, "validation_error", "delaySeconds must be an integer, and "
                           "not given beside delayMs", {"field": "inputs.delaySeconds"})
        given["delayMs"] = seconds * 1000
    if "delayMs" in given:
        _, most = _DELAYS[workflow_id]
        delay = given["delayMs"]
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= most:
            raise ApiError(400, "validation_error",
                           f"delayMs must be an integer from 0 to {most}",
                           {"field": "inputs.delayMs"})
    return json.dumps(given, sort_keys=True) if given else None


async def _wait(turn: Turn) -> str:
    """Wait ``delayMs`` from the task's JSON (the fixture's task holds its default).

    The fixture is ``running`` for ``delayMs`` in all: a turn cut off by an immediate pause
    and started again after ``:resume`` (or after a crash) waits only the rest, the time the
    run was paused left out (:attr:`~wopdsl.Turn.elapsed_ms`).
    """
    try:
        delay = int(json.loads(turn.task)["delayMs"])
    except (ValueError, KeyError, TypeError):
        delay = 1000
    rest = max(0, delay - turn.elapsed_ms)
    await asyncio.sleep(rest / 1000)
    if rest == delay:
        return f"waited {delay} ms"
    return f"waited {delay} ms: {delay - rest} before the turn started again, {rest} after"


def _proceed() -> str:
    """Proceed past the gate (the call ``conformance-approval``'s approval is about)."""
    return f"{GATE}: proceeded"


def _fail(turn: Turn) -> str:
    raise RuntimeError("conformance-failure always fails")
