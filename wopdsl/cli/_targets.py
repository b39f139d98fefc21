"""Private helpers that turn CLI arguments into councils, stores and run handles."""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from wopdsl import DeclarationError
from wopdsl.errors import Problem
from wopdsl.store import describe_target, is_memory, open_store, require_run, store_target

if TYPE_CHECKING:
    from wopdsl import Council, EventStore


@dataclass
class Context:
    """What every command gets: the store to use and where to print."""

    store_arg: str | None
    """``--store`` as given (``None``: ``$WOP_STORE`` or the default)."""
    out: TextIO
    """Standard output."""
    err: TextIO
    """Standard error."""
    run_id: str | None = None
    """The run a command is executing, once known (named when the user interrupts)."""
    debug: bool = False
    """``--debug``: tracebacks, including failed handlers' (recorded in the log)."""
    council_ref: str | None = None
    """The council file or ``MODULE:ATTR`` a later command must be given again (its python
    handlers are bound in code, which the log cannot name); repeated in hints."""
    _store: EventStore | None = field(default=None, repr=False)

    @property
    def store_target(self) -> str:
        """The store actually used: ``--store``, else ``$WOP_STORE``, else ``.wop/runs.db``.

        It may hold a password: print :attr:`store_shown` instead.
        """
        return store_target(self.store_arg)

    @property
    def store_shown(self) -> str:
        """:attr:`store_target` fit to print (a URL's password becomes ``***``)."""
        return describe_target(self.store_target)

    @property
    def is_memory(self) -> bool:
        """Whether the store is ``memory:`` (gone when the command ends)."""
        return is_memory(self.store_arg)

    @property
    def store_flag(self) -> str:
        """`` --store PATH`` to repeat in hints, or ``""`` for the default store."""
        if self.store_arg is None:
            return ""
        return f" --store {shlex.quote(describe_target(self.store_arg))}"

    def remember_council(self, council: Council, target: str | None) -> None:
        """Note ``target`` for the hints when ``council`` binds handlers the log cannot name."""
        if target and any(m.engine == "python" and m.handler is None
                          for m in council.spec.members):
            self.council_ref = target

    def store(self, *, create: bool = True, read_only: bool = False) -> EventStore:
        """Open the store once.

        Args:
            create: When false, a SQLite file that does not exist yet is not created;
                :class:`~wopdsl.RunNotFound` is raised instead (reading needs existing runs).
            read_only: Open a SQLite file for reading only (commands that never append),
                so a store in a read-only folder can still be read.
        """
        if self._store is None:
            self._store = open_store(self.store_target, create=create, read_only=read_only)
        return self._store

    def close(self) -> None:
        """Close the store if it was opened."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def require_run(self, run_id: str, *, read_only: bool = False) -> EventStore:
        """Return the store, after checking it holds ``run_id`` (``read_only``: see store)."""
        return require_run(self.store(create=False, read_only=read_only), run_id,
                           where=self.store_shown,
                           runs=f"wop{self.store_flag} runs")


def is_module_reference(target: str) -> bool:
    """Return whether ``target`` names ``MODULE:ATTR`` rather than a council file."""
    if target.endswith(".toml") or Path(target).exists():
        return False
    module, sep, attr = target.partition(":")
    return bool(sep and module and attr and "/" not in module and "\\" not in module)


def load_council(target: str) -> Council:
    """Load a council from a TOML file or from ``MODULE:ATTR`` (a decorator ``Council``).

    Raises:
        DeclarationError: the file is invalid, or the module or attribute can't be used.
    """
    from wopdsl import load

    if is_module_reference(target):
        return import_council(target)
    return load(target)


def import_council(reference: str) -> Council:
    """Import ``MODULE:ATTR`` (the current directory on ``sys.path``) and return the Council.

    Raises:
        DeclarationError: not ``MODULE:ATTR``, not importable, no such attribute, or not a
            :class:`~wopdsl.Council`.
    """
    from wopdsl import Council

    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise _reference_error(reference, "expected MODULE:ATTR",
                               "name a module and its Council, e.g. `mycouncil:council`")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # Like `python -m`, so a module next to the user's files imports.
        sys.path.insert(0, cwd)
    try:
        target: object = importlib.import_module(module_name)
    except DeclarationError:
        raise
    except Exception as exc:
        # Whatever the user's module raises on import is a problem of the reference given.
        raise _reference_error(
            reference, f"cannot import module '{module_name}': {type(exc).__name__}: {exc}",
            "run wop from the folder that holds the module (it is put on sys.path), or "
            "install the package that provides it",
        ) from None
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise _reference_error(reference, f"module '{module_name}' has no attribute "
                                   f"'{attr}'", "name the variable that holds the Council",
                                   ) from None
    if not isinstance(target, Council):
        raise _reference_error(reference, f"{reference} is a {type(target).__name__}, not a "
                               "wopdsl.Council", "point at the Council object the decorators "
                               "were applied to, e.g. `council = Council(...)`")
    return target


def _reference_error(reference: str, message: str, hint: str) -> DeclarationError:
    return DeclarationError(Problem(message, source=reference, hint=hint))


def council_of_run(store: EventStore, run_id: str) -> Council:
    """Rebuild the council of a stored run from its ``run.started`` event."""
    from wopdsl import Council, CouncilSpec, CouncilState

    state = CouncilState.fold(store.read(run_id, -1)[:1])
    return Council.from_spec(CouncilSpec.model_validate(state.council),
                             source=state.metadata.get("source"))


def check_same_council(council: Council, store: EventStore, run_id: str) -> None:
    """Refuse to re-bind a run to a council whose declaration differs from the logged one.

    Raises:
        DeclarationError: the digests differ.
    """
    from wopdsl import CouncilState

    state = CouncilState.fold(store.read(run_id, -1)[:1])
    logged = state.metadata.get("councilDigest")
    actual = council.spec.digest()
    if logged and logged != actual:
        raise DeclarationError(Problem(
            f"this declaration ({council.id}, {actual[:19]}…) differs from the one run "
            f"{run_id} started with ({state.workflow_id}, {str(logged)[:19]}…)",
            source=council.source or council.id,
            hint="pass the council file (or MODULE:ATTR) the run was started with; a changed "
                 "council starts a new run",
        ))
