"""Running a council: start, run or open its runs on a store."""

from __future__ import annotations

import functools
import os
from typing import Any

from wopdsl._ids import Clock, FixedClock, deterministic_run_id, new_run_id
from wopdsl.compile.handlers import qualified_name
from wopdsl.council.declaration import CouncilDeclaration
from wopdsl.engine import Engine, engine_for
from wopdsl.errors import ValidationError
from wopdsl.protocol.bounds import MAX_METADATA_BYTES, field_path, json_problem
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS
from wopdsl.run import Run, run_sync
from wopdsl.store import EventStore, open_store, require_run

__all__ = ["MAX_TAGS", "CouncilRunner", "StoreArg", "with_tags"]

StoreArg = str | os.PathLike[str] | EventStore | None


class CouncilRunner(CouncilDeclaration):
    """How a :class:`~wopdsl.Council`'s runs start (each a :class:`~wopdsl.Run` handle)."""

    def start(self, store: StoreArg = None, run_id: str | None = None, *,
              deterministic: bool = False, clock: Clock | None = None,
              max_participants: int = DEFAULT_MAX_PARTICIPANTS,
              metadata: dict[str, Any] | None = None, principal: str | None = None,
              tags: list[str] | None = None) -> Run:
        """Start a run in the background of the running loop and return its handle at once.

        ``metadata`` (JSON data, e.g. what an HTTP client sent with its request) is kept in
        ``run.started`` under ``metadata.request``; ``principal`` (who started the run, e.g.
        an HTTP host's caller, which then owns it) under ``metadata.principal``. ``tags``
        (opaque strings such as ``"eval=board-vs-solo"``) go where the HTTP host keeps a
        request's tags (``metadata.request.runOptions.tags``): ``run.tags`` reads them and
        ``wop runs --tag`` filters by them.

        Raises:
            ValidationError: ``metadata`` is not JSON every reader of the log can serve
                (nested past 32 levels, an integer beyond 64 bits, over 256 KiB), or a tag
                is not 1-256 characters.
        """
        run = self._prepare(store, run_id, deterministic, clock, max_participants, metadata,
                            principal, tags)
        run._begin(start=True)
        return run

    async def astart(self, store: StoreArg = None, run_id: str | None = None,
                     **options: Any) -> Run:
        """:meth:`start` (same options), never holding the event loop on a blocking store."""
        st = open_store(store)
        run = await st.call(functools.partial(self._prepare, st, run_id, **options))
        run._begin(start=True)
        return run

    async def arun(self, store: StoreArg = None, run_id: str | None = None, *,
                   deterministic: bool = False, clock: Clock | None = None,
                   max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Run the council until it completes, fails, or waits for human input.

        Args:
            store: A path, ``"memory:"`` or a store object; default ``.wop/runs.db``.
            run_id: The run id (default: a fresh one).
            deterministic: Fixed clock and predictable run ids (for tests and snapshots).
            clock: A custom clock (overrides ``deterministic``'s).
            max_participants: The host's roster limit per room.

        Returns:
            The run handle (``run.status``, ``run.result``, ``run.transcript`` ...).

        Example:
            >>> run = await council.arun(store="memory:")
            >>> run.status
            'completed'
        """
        run = self.start(store, run_id, deterministic=deterministic, clock=clock,
                         max_participants=max_participants)
        await run.wait()
        return run

    def run(self, store: StoreArg = None, run_id: str | None = None, *,
            deterministic: bool = False, clock: Clock | None = None,
            max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Synchronous twin of :meth:`arun`; refuses inside a running event loop."""
        return run_sync(self.arun(store, run_id, deterministic=deterministic, clock=clock,
                                  max_participants=max_participants),
                        "run()", "await council.arun()")

    def open(self, run_id: str, store: StoreArg = None) -> Run:
        """Return a handle on an existing run of this council (handlers re-bound)."""
        st = require_run(open_store(store), run_id)
        engine = engine_for(self.compile(), st, run_id)
        return Run(st, run_id, engine=engine, council=self)

    def _prepare(self, store: StoreArg, run_id: str | None, deterministic: bool = False,
                 clock: Clock | None = None, max_participants: int = DEFAULT_MAX_PARTICIPANTS,
                 metadata: dict[str, Any] | None = None, principal: str | None = None,
                 tags: list[str] | None = None) -> Run:
        """A new run's handle, not started yet (it reads the store: no event loop needed)."""
        if tags:
            metadata = with_tags(metadata, tags)
        if metadata:
            problem = json_problem(metadata, max_bytes=MAX_METADATA_BYTES)
            if problem is not None:
                raise ValidationError(f"{field_path('metadata', problem[0])}: {problem[1]}",
                                      hint="send plain JSON data: at most 32 levels deep, "
                                           "64-bit integers, 256 KiB")
        graph = self.compile()
        st = open_store(store)
        if clock is None and deterministic:
            clock = FixedClock()
        if run_id is None:
            run_id = deterministic_run_id(graph.id, st.exists) if deterministic \
                else new_run_id(graph.id)
        extra: dict[str, Any] = {"clock": "fixed"} if isinstance(clock, FixedClock) else {}
        if self.handlers:
            extra["handlers"] = {m: qualified_name(fn) for m, fn in sorted(self.handlers.items())}
        if metadata:
            extra["request"] = dict(metadata)
        if principal is not None:
            extra["principal"] = principal
        engine = Engine(graph, st, run_id, clock=clock, max_participants=max_participants,
                        metadata=extra)
        return Run(st, run_id, engine=engine, council=self)


MAX_TAGS = 100
"""Most tags a run may carry (the HTTP host's bound, v2 runs.md §Run options)."""


def with_tags(metadata: dict[str, Any] | None, tags: list[str]) -> dict[str, Any]:
    """``metadata`` with ``tags`` added under ``runOptions.tags`` (where the host keeps them).

    Raises:
        ValidationError: more than 100 tags, or one that is not 1-256 characters.
    """
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags, got {len(tags)}",
                              hint="tag a run with what filters it: eval, arm, case …")
    for index, tag in enumerate(tags):
        if not isinstance(tag, str) or not 1 <= len(tag) <= 256:
            raise ValidationError(f"tags[{index}] must be a string of 1-256 characters",
                                  hint='e.g. tags=["eval=board-vs-solo", "arm=board"]')
    data = dict(metadata or {})
    options = dict(data.get("runOptions") or {})
    options["tags"] = [*options.get("tags", []), *tags]
    data["runOptions"] = options
    return data
