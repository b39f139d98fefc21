"""Fixtures shared by every test area: fresh SQLite stores and quick council builders."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import pytest

from tests.skip_summary import pytest_terminal_summary
from wopdsl import Council, SqliteStore, WopError
from wopdsl.agents.python import Handler

__all__ = ["pytest_terminal_summary"]  # The end of a session: skips summed up by reason.

HUMAN: Literal["human"] = "human"
"""Pass as a member's handler to ``make_council`` to declare a human member."""

MemberArg = Handler | Literal["human"] | Sequence[Mapping[str, Any]]
"""A python handler, ``HUMAN``, or a script (a list of steps) for ``make_council``."""

MakeCouncil = Callable[..., Council]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``real_model`` test needs the real server: skipped without it (failed in CI)."""
    if item.get_closest_marker("real_model") is not None:
        from tests.real_model import llama_url

        llama_url()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``), every ``real_model`` test runs on one worker.

    llama-server computes the requests of its two slots in one batch: a real-model test's
    answers repeat (with the server's fixed sampling seed) only when no other test's
    requests share the server with it.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("real_model") is not None:
            item.add_marker(pytest.mark.xdist_group("real_model"))


@pytest.fixture(scope="session", autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``$XDG_CACHE_HOME`` of the tests and their children (``wop validate``'s MCP tool lists
    land there, never in the user's ``~/.cache``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="session")
def client27(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """openwop-client 2.7.0 in a folder of its own (see ``tests/openwop_client27.py``)."""
    from tests.openwop_client27 import install_client27

    return install_client27(tmp_path_factory.mktemp("client27"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh SQLite store file path (the file is created on first use)."""
    return tmp_path / "runs.db"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of its own on the real PostgreSQL server (dropped afterwards).

    Skipped without ``$WOPDSL_TEST_POSTGRES``, except in CI, where it fails.
    """
    from tests.postgres import fresh_database

    with fresh_database() as url:
        yield url


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[SqliteStore]:
    """A real SQLite store on a fresh file in ``tmp_path``, closed after the test."""
    store = SqliteStore(db_path)
    yield store
    store.close()


def build_council(
    members: Mapping[str, MemberArg],
    *,
    rooms: Mapping[str, Sequence[str] | Mapping[str, Any]] | None = None,
    waiting: Sequence[str] = (),
    options: Mapping[str, Mapping[str, Any]] | None = None,
    task: str = "Ship it.",
    council_id: str = "team",
    **settings: Any,
) -> Council:
    """Declare a council in one call.

    Args:
        members: Member id -> python handler (sync or async), ``HUMAN``, or a script (list
            of step dicts); declaration order is the mapping's order.
        rooms: Room id -> member ids, or -> ``{"members": [...], "turn_schema": ...}``
            (default: one room ``all`` with every member).
        waiting: Members declared with ``initial_turn = false`` (humans always wait).
        options: Per-member extra declaration keys (``max_turns``, ``brief``, ...).
        task: The council task.
        council_id: The council id (message ids do not depend on it).
        **settings: ``[council]`` settings (``global_concurrency``, ``tail_messages`` ...).
    """
    council = Council(council_id, task=task, **settings)
    for room_id, room in (rooms if rooms is not None else {"all": list(members)}).items():
        if isinstance(room, Mapping):
            council.room(room_id, **room)
        else:
            council.room(room_id, members=list(room))
    for member_id, how in members.items():
        extra = dict((options or {}).get(member_id, {}))
        role = extra.pop("role", member_id)
        if how == HUMAN:
            council.human(member_id, role=role, **extra)
        elif isinstance(how, Sequence) and not isinstance(how, str):
            council.add_member(member_id, role=role, engine="script", script=list(how),
                               initial_turn=member_id not in waiting, **extra)
        else:
            handler = cast(Handler, how)
            council.member(member_id, role=role, initial_turn=member_id not in waiting,
                           **extra)(handler)
    return council


@pytest.fixture
def make_council() -> MakeCouncil:
    """Return :func:`build_council` (declare a council in one call)."""
    return build_council


@pytest.fixture(autouse=True)
def _every_stored_run_passes_wop_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, every run in a SQLite store under its ``tmp_path`` passes `wop check`.

    The runs tests make through the CLI, the TUI, notebooks and the API on store files are
    all checked (OpenWOP schemas and log rules). Tests that write broken logs on purpose
    carry ``@pytest.mark.wop_invalid_log``.
    """
    if "tmp_path" not in request.fixturenames or \
            request.node.get_closest_marker("wop_invalid_log"):
        yield
        return
    # Asked for before the test runs, so tmp_path is torn down after this check.
    tmp_path: Path = request.getfixturevalue("tmp_path")
    yield
    problems = _check_stores(tmp_path)
    if problems:
        pytest.fail("a stored run breaks `wop check`:\n  " + "\n  ".join(problems[:20]),
                    pytrace=False)


def _check_stores(root: Path) -> list[str]:
    import sqlite3

    from wopdsl.protocol.check import check_events

    problems: list[str] = []
    for db in sorted(root.rglob("*.db")):
        try:
            store = SqliteStore(db)
        except Exception:
            continue  # Not a store (or deliberately broken): other tests cover that.
        try:
            for info in store.runs():
                events = store.read(info.run_id)
                if not _is_council_run(events):
                    continue  # Synthetic logs of the store contract tests.
                problems.extend(f"{db.name} run {info.run_id}: {v}"
                                for v in check_events(events))
        except (sqlite3.Error, WopError):
            continue
        finally:
            store.close()
    return problems


def _is_council_run(events: list[Any]) -> bool:
    first = events[0] if events else {}
    return first.get("type") == "run.started" and \
        "council" in (first.get("payload") or {}).get("metadata", {})
