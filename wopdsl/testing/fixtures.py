"""Run councils the way tests need: a fresh store, a fixed clock, deterministic ids.

:class:`CouncilRunner` is what the pytest plugin's ``run_council`` fixture returns (and
``arun_council`` is its :meth:`~CouncilRunner.arun`). It needs no pytest, so other runners
can use it too::

    runner = CouncilRunner(search_paths=[Path(__file__).parent])
    run = runner("councils/release-team.toml", handlers={"writer": my_writer})
    assert run.status == "completed"
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wopdsl import Council, CouncilSpec, EventStore, MemoryStore, Run, load, open_store
from wopdsl.agents.python import Handler
from wopdsl.errors import StoreError
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS

if TYPE_CHECKING:
    from wopdsl.testing.cassette import Cassette

__all__ = ["CouncilRunner", "CouncilSource", "StoreTarget"]

CouncilSource = str | os.PathLike[str] | Council | CouncilSpec | Mapping[str, Any]
"""A council file path, a ``Council``, a ``CouncilSpec``, or spec data (a dict)."""

StoreTarget = str | os.PathLike[str] | EventStore | None
"""Where a run is kept: ``None`` for a fresh in-memory store, else as ``open_store`` takes."""


class CouncilRunner:
    """Runs councils for tests, each on a fresh store with a fixed clock and predictable ids.

    Call it (sync) or await :meth:`arun` (async). Handlers given per call replace the bound
    ones; a handler for a ``script`` or ``human`` member turns that member into a ``python``
    member for the run, so a test can stand in for a person or a script.

    Args:
        search_paths: Folders a relative council path is looked up in, in order (the
            plugin passes the test file's folder and the pytest rootdir); the working
            directory is tried last.
        cassette: Record the runs' model calls to it, or answer them from it (see
            :mod:`wopdsl.testing.cassette`); ``None``: ``llm`` members call their servers.
    """

    runs: list[Run]
    """Every run this runner started (checked by the plugin when the test ends)."""

    def __init__(self, search_paths: Iterable[str | os.PathLike[str]] = (), *,
                 cassette: Cassette | None = None) -> None:
        self.runs = []
        self.search_paths = [Path(p) for p in search_paths]
        self.cassette = cassette
        self._opened: list[EventStore] = []
        self._started = 0

    def council(self, source: CouncilSource,
                handlers: Mapping[str, Handler] | None = None) -> Council:
        """Return a runnable copy of ``source`` with ``handlers`` bound (the input is untouched).

        Raises:
            FileNotFoundError: a relative path found in none of the search paths.
            DeclarationError: the council is invalid.
        """
        if isinstance(source, Council):
            base: Council = source
        elif isinstance(source, CouncilSpec):
            base = Council.from_spec(source)
        elif isinstance(source, Mapping):
            base = Council.from_spec(CouncilSpec.model_validate(source))
        else:
            base = load(self.resolve(source))
        spec = base.spec
        overrides = dict(handlers or {})
        if any(m.id in overrides and m.engine != "python" for m in spec.members):
            spec = spec.model_copy(update={"members": [
                m.model_copy(update={"engine": "python", "script": None, "handler": None})
                if m.id in overrides and m.engine != "python" else m
                for m in spec.members
            ]})
        council = Council.from_spec(spec, source=base.source)
        council.base_dir = base.base_dir
        council.handlers.update(base.handlers)
        council.handlers.update(overrides)
        return council

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """Return the council file ``path`` names (absolute), trying each search path.

        Raises:
            FileNotFoundError: naming every place tried.
        """
        candidate = Path(path)
        if candidate.is_absolute():
            tried = [candidate]
        else:
            bases = [*self.search_paths, Path.cwd()]
            tried = list(dict.fromkeys(base / candidate for base in bases))
        for option in tried:
            if option.is_file():
                return option.resolve()
        places = ", ".join(str(option) for option in tried)
        raise FileNotFoundError(f"council file {os.fspath(path)!r} not found (tried {places})")

    async def arun(self, source: CouncilSource, *, handlers: Mapping[str, Handler] | None = None,
                   store: StoreTarget = None, run_id: str | None = None,
                   deterministic: bool = True,
                   max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Run a council until it completes, fails, or waits for human input.

        Args:
            source: A council file (relative paths use the search paths), a ``Council``, a
                ``CouncilSpec`` or spec data.
            handlers: Member id -> handler, replacing the bound handlers for this run.
            store: Default: a fresh in-memory store. A path opens a SQLite file (closed by
                :meth:`close`); a store object is used as is.
            run_id: The run id (default: ``<council id>-1`` on a fresh store).
            deterministic: Fixed clock and predictable ids (keep it on for snapshots).
            max_participants: The host's roster limit per room.

        Returns:
            The run handle: ``run.status``, ``run.transcript``, ``run.events``, ``run.reply``.

        Example:
            >>> run = await runner.arun("councils/release-team.toml")
            >>> run.status
            'completed'
        """
        __tracebackhide__ = True
        council = self._tapped(self.council(source, handlers))
        target = self._store(store)
        run = await council.arun(target, run_id, deterministic=deterministic,
                                 max_participants=max_participants)
        self.runs.append(run)
        if self.cassette is not None:
            self.cassette.raise_problems()
        return run

    def __call__(self, source: CouncilSource, *, handlers: Mapping[str, Handler] | None = None,
                 store: StoreTarget = None, run_id: str | None = None, deterministic: bool = True,
                 max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Synchronous :meth:`arun`; inside a running event loop it runs in a worker thread.

        A run that waits for input is best driven from an async test (``arun_council``), where
        ``await run.reply(...)`` continues it on the test's own loop.
        """
        __tracebackhide__ = True
        council = self._tapped(self.council(source, handlers))
        target = self._store(store)

        def go() -> Run:
            return asyncio.run(council.arun(target, run_id, deterministic=deterministic,
                                            max_participants=max_participants))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run = go()
        else:
            # The test's loop is busy running this very call: give the council its own loop.
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="run_council") as \
                    pool:
                run = pool.submit(go).result()
        self.runs.append(run)
        if self.cassette is not None:
            self.cassette.raise_problems()
        return run

    def _tapped(self, council: Council) -> Council:
        """Send the model calls of ``council``'s next run through the cassette, if any."""
        self._started += 1
        if self.cassette is None:
            return council
        from wopdsl.agents.llm import ProfileClient  # only councils with a cassette need it

        tap = None
        for member in council.compile().members.values():
            client = getattr(member.agent, "client", None)
            if isinstance(client, ProfileClient):
                tap = tap or self.cassette.tap(self._started)
                client.tap = tap
        return council

    def check(self) -> list[str]:
        """Check every run this runner made as ``wop check`` does; return the violations.

        Each run's log (as it is now, replies included) is validated against the bundled
        OpenWOP schemas and the log rules (:func:`wopdsl.protocol.check.check_events`).
        """
        from wopdsl.protocol.check import check_events

        problems: list[str] = []
        for run in self.runs:
            try:
                events = run.store.read(run.run_id)
            except StoreError:
                continue  # A store the test closed (or one that is gone): nothing to read.
            problems.extend(f"run {run.run_id}: {v}" for v in check_events(events))
        return problems

    def _store(self, store: StoreTarget) -> EventStore:
        if store is None:
            return MemoryStore()
        if isinstance(store, EventStore):
            return store
        opened = open_store(store)
        self._opened.append(opened)
        return opened

    def close(self) -> None:
        """Close the stores this runner opened from paths (and the cassette's server)."""
        while self._opened:
            self._opened.pop().close()
        if self.cassette is not None:
            self.cassette.close()
