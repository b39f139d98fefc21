"""``wop validate`` keeps MCP tool lists as long as each server allows (issue 35).

Real ``wop`` children and the test MCP server (official SDK) with a SEP-2549 cache hint: a
second validate starts no server; a changed server script, a ``--no-cache``, a ``private`` list
or a run's live listing start it again; no env or header value is ever in the cache's key or
files, nor in what validate prints; what validate waits for is said on stderr.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.tools.conftest import MCP_SERVER, MCP_TOKEN, council_toml, serving_http
from wopdsl.testing.model_server import Answer, ScriptedModelServer

pytestmark = pytest.mark.slow  # real MCP server processes

SECRET = "sentinel-env-value-4d1e93"
"""A value passed to the stdio server through ``env`` (it must never be written or shown)."""

STDIO = ('command = "python"\nargs = ["server.py"]\nenv = ["MCP_TEST_SECRET", '
         '"MCP_TEST_VERSION", "MCP_TEST_TTL_MS", "MCP_TEST_SCOPE", "MCP_TEST_STARTS"]')


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A council folder with its own copy of the test server; the cache under it."""
    shutil.copy(MCP_SERVER, tmp_path / "server.py")
    (tmp_path / "council.toml").write_text(council_toml(STDIO, '"mcp:test/count"'),
                                           encoding="utf-8")
    for name, value in {"XDG_CACHE_HOME": str(tmp_path / "cache"), "MCP_TEST_SECRET": SECRET,
                        "MCP_TEST_VERSION": "1.0", "MCP_TEST_TTL_MS": "600000",
                        "MCP_TEST_SCOPE": "public",
                        "MCP_TEST_STARTS": str(tmp_path / "starts")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WOP_STORE", raising=False)
    yield tmp_path


def _wop(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=folder,
                          capture_output=True, text=True, timeout=180, check=False)
    for secret in (SECRET, MCP_TOKEN):
        assert secret not in done.stdout + done.stderr
    return done


def _validate(folder: Path, *flags: str) -> str:
    """``wop validate council.toml FLAGS`` (it succeeds); its stderr."""
    done = _wop(folder, "validate", "council.toml", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "      tool count (mcp:test/count; not idempotent; timeout 30 s)" in done.stdout
    return done.stderr


def _starts(folder: Path) -> int:
    path = folder / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _entries(folder: Path) -> list[Path]:
    return sorted((folder / "cache" / "wopdsl" / "mcp-tools").glob("*.json"))


def _no_secret_in_the_cache(folder: Path, *secrets: str) -> None:
    files = [p for p in (folder / "cache").rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert all(secret.encode() not in data for secret in secrets), path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / "cache" / "wopdsl" / "mcp-tools").stat().st_mode) == 0o700


def test_a_cached_list_spares_the_start_while_the_server_allows(folder: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    first = _validate(folder)
    assert "note: starting MCP server 'test' (stdio) to list its tools …\n" in first
    assert "note: MCP server 'test' (test-tools 1.0) listed 8 tools in " in first
    assert " s; cached for 10 min as the server allows\n" in first
    assert _starts(folder) == 1 and len(_entries(folder)) == 1
    _no_secret_in_the_cache(folder, SECRET)
    # Another value of a passed variable: the same key (values are not part of it).
    monkeypatch.setenv("MCP_TEST_SECRET", "another-sentinel-77c0")
    again = _validate(folder)
    assert again.startswith("note: tools of MCP server 'test' (test-tools 1.0) from the cache: "
                            "listed "), again
    assert "kept up to 10 min as the server allows (--no-cache lists them again)" in again
    assert "starting" not in again and _starts(folder) == 1
    # --no-cache lists live, and the entry takes the version the server reports now.
    monkeypatch.setenv("MCP_TEST_VERSION", "2.0")
    assert "note: MCP server 'test' (test-tools 2.0) listed 8 tools" in _validate(
        folder, "--no-cache")
    assert "(test-tools 2.0) from the cache" in _validate(folder) and _starts(folder) == 2
    # An edited server script is another server: started again.
    with (folder / "server.py").open("a", encoding="utf-8") as script:
        script.write("# edited\n")
    assert "note: starting MCP server 'test'" in _validate(folder) and _starts(folder) == 3
    assert len(_entries(folder)) == 2  # the old script's entry stays until it is stale
    # A private list (it may depend on who asks) is never kept; its entry goes.
    monkeypatch.setenv("MCP_TEST_SCOPE", "private")
    private = _validate(folder, "--no-cache")
    assert "not cached: its tools/list does not allow it (no public ttlMs)" in private
    assert "note: starting MCP server 'test'" in _validate(folder) and _starts(folder) == 5
    assert len(_entries(folder)) == 1
    _no_secret_in_the_cache(folder, SECRET, "another-sentinel-77c0")


def test_a_cached_list_never_fails_validate_and_unset_variables_are_reported(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _validate(folder)
    council = folder / "council.toml"
    council.write_text(council.read_text().replace("mcp:test/count", "mcp:test/nope"))
    done = _wop(folder, "validate", "council.toml")
    assert done.returncode == 2
    assert ("note: the cached tools of MCP server(s) 'test' do not fit sre's tools: listing "
            "them again\nnote: starting MCP server 'test'") in done.stderr
    assert "sre: MCP server 'test' has no tool 'nope' (it lists: big, count" in done.stderr
    assert _starts(folder) == 2
    council.write_text(council.read_text().replace("mcp:test/nope", "mcp:test/count"))
    monkeypatch.delenv("MCP_TEST_SECRET")  # named in env: the run would need it
    done = _wop(folder, "validate", "council.toml")
    assert done.returncode == 2 and "from the cache" not in done.stderr
    assert "passes environment variable(s) MCP_TEST_SECRET, which are not set" in done.stderr
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)
    (entry,) = _entries(folder)
    entry.write_text('{"format": 1, "tools": [')  # a broken entry is a miss, not an error
    assert "note: starting MCP server 'test'" in _validate(folder) and _starts(folder) == 3


def test_a_run_replaces_the_entry_with_its_live_list(folder: Path, server: ScriptedModelServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _validate(folder)
    assert len(_entries(folder)) == 1
    server.add(Answer({"summary": "done"}))
    monkeypatch.setenv("MCP_TEST_TTL_MS", "0")  # the server no longer lets it be kept
    done = _wop(folder, "run", "council.toml", "--store", "runs.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _entries(folder) == [] and _starts(folder) == 2
    assert "note: starting MCP server 'test'" in _validate(folder)


def test_http_header_values_are_never_kept(folder: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setenv("TEST_MCP_AUTH", f"Bearer {MCP_TOKEN}")
    with serving_http(MCP_TEST_TTL_MS="600000", MCP_TEST_VERSION="3.1") as url:
        (folder / "council.toml").write_text(council_toml(
            f'url = "{url}"\nheaders = {{ Authorization = "TEST_MCP_AUTH" }}',
            '"mcp:test/count"'), encoding="utf-8")
        first = _validate(folder)
        assert "note: connecting to MCP server 'test' (http) to list its tools …" in first
        assert "(test-tools 3.1) listed 8 tools" in first
        _no_secret_in_the_cache(folder, MCP_TOKEN)
        monkeypatch.setenv("TEST_MCP_AUTH", "Bearer other-sentinel-0b5")
        assert "(test-tools 3.1) from the cache" in _validate(folder)  # a public list
        _no_secret_in_the_cache(folder, MCP_TOKEN, "other-sentinel-0b5")
        done = _wop(folder, "validate", "council.toml", "--no-cache")  # the server says no
        assert done.returncode == 2 and "could not be reached" in done.stderr
        assert "other-sentinel-0b5" not in done.stderr
