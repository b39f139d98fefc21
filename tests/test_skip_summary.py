"""The end of `make test` is readable: skips are summed up by reason, one line each
(tests/skip_summary.py), failures and errors are still listed, and the chat page's browser
tests skip with one line saying how to install a browser when there is none.

Inner pytest sessions run in real subprocesses with the project's own pytest config
(pyproject.toml's addopts).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.web_browser import NO_BROWSER, Browser, find_browser, require_browser

ROOT = Path(__file__).resolve().parents[1]

SOME_TESTS = {
    "conftest.py": '''
import pytest

@pytest.fixture
def server():
    pytest.skip("no server A: start one")
''',
    "test_a.py": '''
import pytest

def test_one(server): pass
def test_two(server): pass
def test_three(server): pass

@pytest.mark.skip(reason="not today")
def test_later(): pass

def test_passes(): pass

def test_fails(): assert 1 == 2
''',
    "sub/test_b.py": '''
import pytest

pytest.importorskip("no_such_module_n2", reason="needs no_such_module_n2")

def test_never(): pass
''',
    "other/test_c.py": '''
def test_four(server): pass
def test_five(server): pass
''',
}


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None,
            config: bool = True) -> subprocess.CompletedProcess[str]:
    """An inner session; ``config``: with this project's pyproject.toml (its addopts)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--color=no"]
    if config:
        command += ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(cwd),
                    "-p", "tests.skip_summary"]
    environ = {**(env or os.environ), "PYTHONPATH": str(ROOT)}
    environ.pop("CI", None)
    return subprocess.run([*command, *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture
def some_tests(tmp_path: Path) -> Path:
    for name, text in SOME_TESTS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip(), encoding="utf-8")
    return tmp_path


def _section(output: str, title: str) -> list[str]:
    """The lines under a ``==== title ====`` separator, up to the next separator."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(f"=+ {title} =+", line))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("====")),
               len(lines))
    return lines[start + 1:end]


def test_skips_are_summed_up_by_reason_and_failures_still_listed(some_tests: Path) -> None:
    done = _pytest(some_tests, ".")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert _section(out, "skipped, by reason") == [
        "5 no server A: start one  [., other]",
        "1 needs no_such_module_n2  [sub]",
        "1 not today  [.]",
    ]
    assert "SKIPPED" not in out
    assert _section(out, "short test summary info") == [
        "FAILED test_a.py::test_fails - assert 1 == 2"]
    assert out.index("skipped, by reason") < out.index("short test summary info")
    assert out.splitlines()[-1].startswith("=") and "1 failed, 1 passed, 7 skipped" in out


def test_asking_for_pytests_own_skip_lines_turns_the_summary_off(some_tests: Path) -> None:
    done = _pytest(some_tests, "-ra", ".")
    assert "skipped, by reason" not in done.stdout
    assert "SKIPPED [1] test_a.py:3: no server A: start one" in done.stdout.splitlines()


def test_the_summary_is_the_projects() -> None:
    # tests/conftest.py loads it, and pyproject's addopts leave pytest's skip lines out.
    from tests import conftest

    assert conftest.pytest_terminal_summary.__module__ == "tests.skip_summary"
    addopts = re.search(r'^addopts = "([^"]*)"', (ROOT / "pyproject.toml").read_text(),
                        flags=re.M)
    assert addopts is not None and "-rfE" in addopts.group(1).split()
    assert "-ra" not in addopts.group(1).split()


def test_the_browser_tests_skip_in_one_line_saying_how_to_get_a_browser(
        tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    web = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "server").glob(
        "test_web*.py"))
    env = {**os.environ, "PATH": os.pathsep.join([str(empty), str(Path(sys.executable).parent)])}
    done = _pytest(ROOT, *web, env=env, config=False)
    assert done.returncode == 0, done.stdout + done.stderr
    skipped = _section(done.stdout, "skipped, by reason")
    assert len(skipped) == 1, skipped
    count = int(skipped[0].split()[0])
    assert skipped[0] == f"{count} {NO_BROWSER}  [tests/server]"
    assert "`.ci/browser.sh` installs Debian's chromium and chromium-driver" in skipped[0]
    assert re.search(rf"\b{count} skipped\b", done.stdout.splitlines()[-1])
    assert "SKIPPED" not in done.stdout


def test_the_browser_is_found_under_its_other_names(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("CI", raising=False)  # Out of CI a missing browser skips.
    assert find_browser() is None
    with pytest.raises(pytest.skip.Exception, match=re.escape(NO_BROWSER)):
        require_browser()
    for name in ("google-chrome", "chromedriver"):
        (bin_dir / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    assert find_browser() == Browser(str(bin_dir / "google-chrome"), str(bin_dir / "chromedriver"))
    (bin_dir / "chromium").write_text("#!/bin/sh\n", encoding="utf-8")
    (bin_dir / "chromium").chmod(0o755)
    found = find_browser()
    assert found is not None and found.chromium == str(bin_dir / "chromium")


def test_in_ci_a_missing_browser_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI never skips these tests"):
        require_browser()
