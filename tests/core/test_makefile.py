"""The README's two set-up commands on a fresh clone: `make demo` installs the core package
alone into a light environment of its own (.venv-demo) and runs the demo council there;
`make test`, `make lint` and CI (`make install`) keep the full one (.venv, the dev extras)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DEV_TOOLS = {"mypy", "ruff", "selenium", "hypothesis", "textual", "pytest", "syrupy",
             "ipykernel", "openai", "starlette", "uvicorn", "psycopg", "mcp",
             "opentelemetry-sdk", "nbclient"}
"""What `make test` needs and the demo does not (the brief of issue 35 names the first five)."""

_REQUIRED = r"""
import json, re
from importlib.metadata import PackageNotFoundError, distribution, distributions

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

needed, todo = set(), ["wopdsl"]
while todo:
    name = todo.pop()
    if norm(name) in needed:
        continue
    needed.add(norm(name))
    try:
        requires = distribution(name).requires or []
    except PackageNotFoundError:
        continue
    for requirement in requires:
        if "extra ==" in requirement.replace('"', "").replace("'", ""):
            continue  # An extra's requirement: the demo installs none.
        todo.append(re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0])
installed = {norm(d.metadata["Name"]) for d in distributions()}
print(json.dumps({"installed": sorted(installed), "needed": sorted(needed)}))
"""
"""Run by the demo env's python: every installed distribution, and the closure of what
``wopdsl`` (no extra) requires, markers aside (a marker only ever narrows the closure)."""


def _make(*args: str, cwd: Path = ROOT, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`make` as a user types it, even when the suite itself runs under `make test` (an inner
    make inherits MAKELEVEL and MAKEFLAGS and would print "Entering directory" lines)."""
    env = {k: v for k, v in os.environ.items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}
    return subprocess.run(["make", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _fresh_clone(dest: Path) -> Path:
    """The clone's files as `git clone` would give them (the work tree's own versions)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if not name or not (source.exists() or source.is_symlink()):
            continue  # Deleted in the work tree, not yet committed.
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    return dest


def test_make_demo_installs_the_core_alone_and_make_test_everything() -> None:
    # `make -n` prints the commands a fresh clone would run (the stamps do not exist there).
    demo = _make("-n", "demo", "VENV=.venv-absent", "DEMO_VENV=.venv-demo-absent")
    assert demo.returncode == 0, demo.stderr
    assert "python3 -m venv .venv-demo-absent" in demo.stdout
    assert "pip install --quiet -e . " in demo.stdout
    assert "[dev]" not in demo.stdout and ".venv-absent" not in demo.stdout
    assert ".venv-demo-absent/bin/wop run councils/release-team.toml" in demo.stdout
    for target in ("test", "lint", "install"):
        full = _make("-n", target, "VENV=.venv-absent", "DEMO_VENV=.venv-demo-absent")
        assert full.returncode == 0, full.stderr
        assert "python3 -m venv .venv-absent" in full.stdout
        assert "pip install --quiet -e '.[dev]'" in full.stdout
        assert ".venv-demo-absent" not in full.stdout
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make install" in ci and "make lint" in ci and "make test" in ci


@pytest.mark.slow
def test_make_demo_on_a_fresh_clone(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path / "clone")
    done = _make("demo", cwd=clone, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("installing wopdsl (the core package only) into .venv-demo "
                        "(log: .venv-demo/install.log)")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo    # installs the core package into .venv-demo" in readme
    transcript = [line for line in lines if line.startswith("[review] ")]
    assert len(transcript) == 2 and all(line in readme for line in transcript)
    assert lines[-1].startswith("completed: run release-team-")
    assert not (clone / ".venv").exists()  # The full environment is not built.

    python = clone / ".venv-demo" / "bin" / "python"
    report = subprocess.run([str(python), "-c", _REQUIRED], capture_output=True, text=True,
                            timeout=60, check=True)
    found = json.loads(report.stdout)
    installed, needed = set(found["installed"]), set(found["needed"])
    assert installed & DEV_TOOLS == set()
    # Nothing but wopdsl, what it requires (transitively) and the venv's own pip/setuptools.
    assert installed - needed <= {"pip", "setuptools"}, installed - needed
    assert {"pydantic", "jinja2", "tomli-w", "orjson", "jsonschema"} <= installed

    # Installed once: a second `make demo` only runs the demo.
    again = _make("demo", cwd=clone, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "installing" not in again.stdout


def test_make_test_runs_in_parallel_and_the_snapshot_modules_in_a_session_of_their_own() -> None:
    # syrupy finds unused snapshots only in a serial session: every module owning snapshots
    # runs there, once, and the parallel session leaves exactly those out.
    owners = sorted({
        (folder.parent / f"{path.relative_to(folder).parts[0].removesuffix('.ambr')}.py")
        .relative_to(ROOT).as_posix()
        for folder in ROOT.glob("tests/*/__snapshots__") for path in folder.rglob("*")
        if path.is_file()})
    assert "tests/testing/test_councils_snapshots.py" in owners
    assert all((ROOT / owner).is_file() for owner in owners), owners
    lines = [line for line in _make("-n", "test").stdout.splitlines() if " -m pytest" in line]
    parallel, serial = (line.split() for line in lines)
    assert parallel[parallel.index("-n") + 1] == "auto"
    assert sorted(a.removeprefix("--ignore=") for a in parallel if a.startswith("--ignore=")) \
        == owners
    assert "no:xdist" in serial and sorted(a for a in serial if a.endswith(".py")) == owners
