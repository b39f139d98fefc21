"""The ``wopdsl`` pytest plugin: council fixtures and snapshot files for council output.

Installed with the package (entry point ``pytest11: wopdsl``), so no conftest is needed::

    def test_release_team(run_council, snapshot):
        run = run_council("councils/release-team.toml")
        assert run.transcript == snapshot            # __snapshots__/<module>/test_release_team.txt

Fixtures:
    ``run_council``: a :class:`~wopdsl.testing.fixtures.CouncilRunner`; call it with a council
    file, a ``Council``, a ``CouncilSpec`` or spec data to run it on a fresh store with a fixed
    clock and deterministic ids (``handlers={"writer": fn}`` replaces bound handlers).
    ``arun_council``: the same, awaitable, for async tests (an ``async def`` test asking for
    it runs on a fresh event loop when no async plugin such as pytest-asyncio claims it).
    Every run these fixtures make is checked when the test ends, as ``wop check`` does (the
    bundled OpenWOP schemas and the log rules); a violation fails the test. Turn it off with
    ``wop_check = false`` in the pytest ini, or per test with ``@pytest.mark.wop_invalid_log``.
    ``wop_eval``: run an eval file (``wop eval``, docs/guides/eval.md) as a test; it returns
    the report and fails the test with the report's table when a gate does not hold (or a
    recorded answer does not match). Model calls are answered from the eval's recorded
    answers (``--offline``) unless the session records (``--wop-record``).
    ``snapshot`` (when syrupy is installed): syrupy's fixture, except that a transcript goes to
    a ``.txt`` file (:class:`~wopdsl.testing.snapshot.TranscriptSnapshot`) and ``run.events``
    to a normalised ``.json`` file (:class:`~wopdsl.testing.snapshot.EventLogSnapshot`).

syrupy is optional: without it (or with ``-p no:syrupy``) the council fixtures still work.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
from collections.abc import Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from wopdsl.testing.fixtures import CouncilRunner

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from wopdsl.evals.api import EvalReport
    from wopdsl.run import Run
    from wopdsl.testing.cassette import Cassette

__all__ = ["arun_council", "cassette_path", "pytest_addoption", "pytest_configure",
           "pytest_pyfunc_call", "pytest_runtest_makereport", "record_enabled", "run_council",
           "wop_eval"]

_SNAPSHOT_PLUGIN = "wopdsl-snapshot"
_CALL_REPORT = pytest.StashKey["pytest.TestReport"]()
_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f]')


@pytest.fixture
def run_council(request: pytest.FixtureRequest) -> Iterator[CouncilRunner]:
    """Run a council on a fresh store with a fixed clock and deterministic ids.

    ``run_council(source, handlers=None, store=None, run_id=None)`` returns the ``Run``
    once it completes, fails or waits for human input. A relative council path is looked up
    beside the test file, then under the pytest rootdir, then in the working directory.
    """
    cassette = _cassette(request)
    runner = CouncilRunner(search_paths=[request.path.parent, request.config.rootpath],
                           cassette=cassette)
    try:
        yield runner
        if cassette is not None:
            _finish_cassette(request, cassette)
        if _check_enabled(request.config) and not request.node.get_closest_marker(
                "wop_invalid_log"):
            problems = runner.check()
            if problems:
                pytest.fail("a run breaks `wop check` (OpenWOP schemas and log rules):\n  "
                            + "\n  ".join(problems[:20]), pytrace=False)
    finally:
        runner.close()


@pytest.fixture
def arun_council(run_council: CouncilRunner) -> Callable[..., Awaitable[Run]]:
    """Run a council from an async test (awaitable twin of ``run_council``).

    Example: ``run = await arun_council("councils/release-team.toml")``.
    """
    return run_council.arun


@pytest.fixture
def wop_eval(request: pytest.FixtureRequest,
             tmp_path: Path) -> Callable[..., EvalReport]:
    """Run an eval file as a test and return its report (docs/guides/eval.md).

    Call it with ``(path, store=None, limit=None, mode=None)``: a relative path is looked up
    as ``run_council`` looks up councils; runs go to a fresh SQLite file in the test's
    ``tmp_path`` unless ``store`` says otherwise; ``mode`` is ``offline`` (recorded
    answers; ``record`` under ``--wop-record``) unless given (``live`` calls the models).
    Returns the report (:class:`~wopdsl.evals.api.EvalReport`); fails the test with the
    report's table when a gate fails or a recorded answer does not match.
    """

    def run(path: str | os.PathLike[str], *, store: Any = None, limit: int | None = None,
            mode: str | None = None) -> EvalReport:
        __tracebackhide__ = True
        from wopdsl import DeclarationError
        from wopdsl.evals.api import run_eval
        from wopdsl.evals.cassettes import CassetteUnreadable

        target = CouncilRunner(search_paths=[request.path.parent,
                                             request.config.rootpath]).resolve(path)
        chosen = mode or ("record" if record_enabled(request.config) else "offline")
        try:
            report = run_eval(target, store if store is not None else tmp_path / "eval.db",
                              mode=chosen, limit=limit)  # type: ignore[arg-type]
        except DeclarationError as exc:
            invalid = str(exc)
        except CassetteUnreadable as exc:
            invalid = f"{exc.message}\n    hint: {exc.hint}"
        else:
            invalid = ""
        if invalid:
            pytest.fail(invalid, pytrace=False)
        if not report.passed:
            problems = "".join(f"\n{p}" for p in report["problems"])
            pytest.fail(f"eval {report['eval']['id']} failed:\n{report.table}{problems}",
                        pytrace=False)
        return report

    return run


class _SnapshotFixture:
    """Registered after syrupy, so its ``snapshot`` wraps syrupy's own fixture."""

    @pytest.fixture
    def snapshot(self, snapshot: SnapshotAssertion) -> SnapshotAssertion:
        """Return syrupy's ``snapshot``, storing transcripts and event logs in readable files."""
        from wopdsl.testing.snapshot import CouncilSnapshotAssertion

        return CouncilSnapshotAssertion.wrapping(snapshot)


_OTHER_RUNNERS = ("asyncio", "anyio", "trio")
"""Markers of the async plugins that run a coroutine test themselves when they claim it."""


@pytest.hookimpl
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` test that uses ``arun_council`` when no async plugin claims it.

    So the guide's async tests work with ``wopdsl[testing]`` alone: the test runs on a fresh
    event loop of its own (``asyncio.run``). A test that pytest-asyncio (a marker or
    ``asyncio_mode = auto``), anyio (``anyio_backend``) or trio claims is left to that
    plugin; so is every async test that does not ask for ``arun_council``.
    """
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function) or \
            "arun_council" not in pyfuncitem.fixturenames or \
            "anyio_backend" in pyfuncitem.funcargs or \
            any(pyfuncitem.get_closest_marker(name) for name in _OTHER_RUNNERS):
        return None
    names = inspect.signature(function).parameters
    arguments = {name: pyfuncitem.funcargs[name] for name in names
                 if name in pyfuncitem.funcargs}
    asyncio.run(function(**arguments))
    return True


def record_enabled(config: pytest.Config) -> bool:
    """Whether this session records cassettes (``--wop-record``, or ``WOP_RECORD=1``)."""
    flag = os.environ.get("WOP_RECORD", "").strip().lower() in {"1", "true", "yes", "on"}
    return bool(config.getoption("wop_record", False)) or flag


def cassette_path(request: pytest.FixtureRequest) -> Path:
    """``__cassettes__/<test module>/<test name>.yaml`` beside the test (or the marker's path).

    ``@pytest.mark.wop_cassette("name.yaml")`` names another file, relative to the test's
    folder. A class's tests are named ``Class.test``; characters a file name cannot hold
    become ``_``.
    """
    marker = request.node.get_closest_marker("wop_cassette")
    folder = request.path.parent
    named = (marker.args[0] if marker and marker.args else
             marker.kwargs.get("path") if marker else None)
    if named:
        return folder / str(named)
    name = ".".join(request.node.nodeid.split("::")[1:]) or request.node.name
    return folder / "__cassettes__" / request.path.stem / f"{_UNSAFE.sub('_', name)}.yaml"


def _cassette(request: pytest.FixtureRequest) -> Cassette | None:
    if request.node.get_closest_marker("wop_cassette") is None:
        return None
    from wopdsl.testing.cassette import Cassette, CassetteMismatch

    try:
        return Cassette(cassette_path(request), record=record_enabled(request.config))
    except CassetteMismatch as exc:
        pytest.fail(str(exc), pytrace=False)


def _finish_cassette(request: pytest.FixtureRequest, cassette: Cassette) -> None:
    __tracebackhide__ = True
    problems = cassette.problems[cassette.reported:]
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)
    if cassette.record:
        cassette.save()
        return
    report = request.node.stash.get(_CALL_REPORT, None)
    unused = cassette.unused()
    if unused and report is not None and report.passed:
        listed = "\n  ".join(e.where() for e in unused[:20])
        pytest.fail(f"{cassette.shown} holds {len(unused)} exchange(s) the test no longer "
                    f"makes:\n  {listed}\nre-record with `pytest --wop-record` (or "
                    "WOP_RECORD=1) if the change is intended", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """Keep the call phase's report, so a cassette's check knows whether the test passed."""
    report = yield
    if call.when == "call" and isinstance(report, pytest.TestReport):
        item.stash[_CALL_REPORT] = report
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--wop-record``; ``wop_check`` (ini, default true): check each run the fixtures make."""
    group = parser.getgroup("wopdsl")
    group.addoption("--wop-record", action="store_true", dest="wop_record", default=False,
                    help="run tests marked wop_cassette against their real models and "
                         "(re)write their cassettes (also: WOP_RECORD=1)")
    parser.addini("wop_check", "check every run made by run_council / arun_council like "
                  "`wop check` (OpenWOP schemas and log rules) when the test ends",
                  type="bool", default=True)


def _check_enabled(config: pytest.Config) -> bool:
    return bool(config.getini("wop_check"))


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``wop_invalid_log`` marker; add the council-aware ``snapshot`` fixture."""
    config.addinivalue_line("markers", "wop_invalid_log: this test makes runs whose logs "
                            "deliberately break `wop check` (skip the check)")
    config.addinivalue_line("markers", "wop_cassette(path=None): replay the model calls of "
                            "run_council / arun_council from a cassette beside the test "
                            "(record it with --wop-record)")
    manager = config.pluginmanager
    if not manager.has_plugin("syrupy") or manager.has_plugin(_SNAPSHOT_PLUGIN):
        return
    # Entry-point plugins are all registered by now; registering this one later puts its
    # fixture after syrupy's, so it wins and can ask for syrupy's by the same name.
    manager.register(_SnapshotFixture(), _SNAPSHOT_PLUGIN)
