"""Private: run one member turn and turn whatever happens into a result or a TurnError.

Every way a handler can fail — an exception, any ``BaseException`` other than the turn's
own cancellation (``SystemExit``, ``KeyboardInterrupt`` ...), a timeout, an async handler
that blocked the event loop past its timeout — fails the turn, never the process, and the
``TurnError`` keeps the exception's type, message and traceback (``node.failed.error.details``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Final

from wopdsl.agents.python import HandlerRaised, PythonAgent, UserInterrupt
from wopdsl.compile.graph import CompiledMember, CouncilGraph
from wopdsl.engine._inputs import build_turn
from wopdsl.engine._results import check_result
from wopdsl.engine._watchdog import done, watch
from wopdsl.errors import TurnError
from wopdsl.model.turns import Reply, Turn
from wopdsl.state import CouncilState, Inflight

__all__ = ["MAX_RETRY_DELAY_MS", "NOT_RETRIED", "handler_failure", "retry_delay_ms",
           "take_turn"]

MAX_TRACEBACK_CHARS: Final = 16_384
"""A failure's recorded traceback keeps at most its last this many characters."""
MAX_RETRY_DELAY_MS: Final = 3_600_000
"""The longest wait before a retry, however many retries came before."""
NOT_RETRIED: Final = frozenset({"SCRIPT_EXHAUSTED", "TEMPLATE_LIMIT", "TOOL_IN_DOUBT",
                                 "A2A_IN_DOUBT"})
"""Turn failures a retry would only repeat: they fail the turn at once."""
_RESULTS: Final = frozenset({Reply, dict, str})


async def take_turn(graph: CouncilGraph, state: CouncilState, member: CompiledMember,
                    inflight: Inflight, *, alone: bool = False,
                    call: Callable[[Turn], Awaitable[object]] | None = None,
                    ) -> dict[str, Any] | TurnError:
    """Run ``member``'s turn; return its checked wire result or the ``TurnError`` it failed with.

    Args:
        graph: The compiled council.
        state: The run's state (the turn input is built from it).
        member: The member whose turn it is.
        inflight: The dispatched turn.
        alone: Nothing else runs meanwhile, so a sync handler may run in place (see
            :meth:`PythonAgent.call_inline`) unless the member has a ``turn_timeout_ms``.
        call: How to call the member's agent (default ``agent.take_turn``); the engine passes
            one that hands a recording agent (``llm``) its recorder.

    Raises:
        asyncio.CancelledError: the turn itself was cancelled (run cancelled or detached).
    """
    timeout = member.turn_timeout_s
    started = time.monotonic()
    agent = member.agent
    try:
        turn = build_turn(state, member, inflight, deliberates=graph.deliberates)
        assert agent is not None
        take = call or agent.take_turn
        if alone and timeout is None and isinstance(agent, PythonAgent) and agent.runs_inline:
            raw = agent.call_inline(turn)
            while type(raw) not in _RESULTS and inspect.isawaitable(raw):
                raw = await raw
        elif timeout is not None:
            watched = watch(member.id, timeout) if _on_loop(agent) else None
            try:
                raw = await asyncio.wait_for(take(turn), timeout)
            finally:
                if watched is not None:
                    done(watched)
        else:
            raw = await take(turn)
        if timeout is not None and time.monotonic() - started > timeout:
            return _blocked(member, time.monotonic() - started)
        return check_result(graph, state, member, raw)
    except TurnError as exc:
        return exc
    except HandlerRaised as wrapped:
        return handler_failure(member.id, wrapped.error)
    except TimeoutError:
        return TurnError("TIMEOUT", f"{member.id} did not answer within {timeout:g} s "
                         "(turn_timeout_ms)", {"timeoutMs": round((timeout or 0) * 1000)})
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this turn was cancelled (run cancelled, detached or timed out)
        # The handler let a CancelledError of its own escape: that fails the turn only.
        return handler_failure(member.id, exc)
    except (GeneratorExit, UserInterrupt):
        raise  # this coroutine is being closed; the person pressed Ctrl-C
    except BaseException as exc:
        # SystemExit(n), KeyboardInterrupt, GeneratorExit or any other BaseException raised
        # by a handler fails its turn: never the process, never read as the user's Ctrl-C.
        return handler_failure(member.id, exc)


def _on_loop(agent: object) -> bool:
    return isinstance(agent, PythonAgent) and agent.is_async


def _blocked(member: CompiledMember, elapsed: float) -> TurnError:
    on_loop = _on_loop(member.agent)
    why = (" while holding the event loop (a blocking call such as time.sleep in an async "
           "handler?), so its timeout could not fire on time") if on_loop else ""
    return TurnError("TIMEOUT", f"{member.id} answered after {elapsed:.3g} s, over its "
                     f"turn_timeout_ms of {member.turn_timeout_s:g} s{why}",
                     {"elapsedMs": round(elapsed * 1000),
                      "timeoutMs": round((member.turn_timeout_s or 0) * 1000),
                      "blockedEventLoop": on_loop})


def handler_failure(member_id: str, exc: BaseException) -> TurnError:
    """A handler's exception as a ``TEAM_NODE_FAILED`` turn error with its traceback."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"
    message = _describe(exc)
    text = _traceback(exc)
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "…" + text[-MAX_TRACEBACK_CHARS:]
    return TurnError("TEAM_NODE_FAILED",
                     f"{member_id} raised {kind.__name__}" + (f": {message}" if message else ""),
                     {"exception": {"type": name, "message": message, "traceback": text}})


_OWN: Final = __file__.rsplit("/", 2)[0] + "/"
"""The wopdsl package folder: its frames (engine, agents) are left out of tracebacks."""


def _traceback(exc: BaseException) -> str:
    try:
        described = traceback.TracebackException.from_exception(exc)
        described.stack = traceback.StackSummary.from_list(
            [frame for frame in described.stack if not frame.filename.startswith(_OWN)])
        return "".join(described.format())
    except Exception:  # A hostile exception that cannot even be formatted.
        return f"{type(exc).__name__} (its traceback cannot be formatted)"


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # A hostile __str__.
        text = f"<{type(exc).__name__} whose message cannot be shown>"
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) in a handler fails its turn, not the process"
    return text[:4096]


def retry_delay_ms(member: CompiledMember, attempt: int) -> int:
    """The wait before retry ``attempt`` (1-based): ``retry_backoff_ms × 2^(attempt−1)``."""
    return min(member.retry_backoff_ms << min(attempt - 1, 40), MAX_RETRY_DELAY_MS)
