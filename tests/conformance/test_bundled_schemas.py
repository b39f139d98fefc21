"""The OpenWOP schemas ship inside the package, intact, and the wheel carries them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.openwop_schemas import reference_dir
from wopdsl.protocol.openwop import bundled_schemas, schema_files

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "wopdsl" / "protocol" / "schemas"
FIXTURES = Path(__file__).parent / "fixtures"


def _recorded() -> dict[str, int]:
    """``file -> chars`` from the provenance table in SOURCES.md."""
    rows = re.findall(r"^\| `([^`]+)`.*\| (\d+) \|$", (BUNDLE / "SOURCES.md").read_text(),
                      re.MULTILINE)
    return {name: int(chars) for name, chars in rows}


def test_every_bundled_schema_is_listed_with_its_provenance() -> None:
    files = schema_files()
    assert set(files) == set(_recorded()), "SOURCES.md must list exactly the bundled files"
    for name, raw in files.items():
        text = raw.decode("utf-8")
        assert len(text) == _recorded()[name], f"{name} differs from the recorded upstream copy"
        assert json.loads(text)["$id"].startswith("https://openwop.dev/spec/")
    notice = (BUNDLE / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice


def test_the_bundle_equals_the_reference_copy_when_there_is_one() -> None:
    reference = reference_dir()
    if reference is None:
        # A clone without ../shared: the char counts above tie the bundle to upstream.
        return
    compared = 0
    for name, raw in schema_files().items():
        if not (reference / name).exists():
            continue  # Bundled later than the reference copy: its char count ties it upstream.
        assert (reference / name).read_bytes() == raw, f"{name} differs from {reference}"
        compared += 1
    assert compared >= 11
    shared_fixtures = reference.parent / "fixtures"
    for fixture in FIXTURES.glob("*.json"):
        assert (shared_fixtures / fixture.name).read_bytes() == fixture.read_bytes()


def test_the_bundled_schemas_validate_and_refuse() -> None:
    schemas = bundled_schemas()
    assert "conversation.exchanged" in schemas.type_index
    good = {"eventId": "evt.r.000000000000", "runId": "r", "type": "run.resumed",
            "payload": {}, "timestamp": "2026-01-01T00:00:00.000Z", "sequence": 0,
            "schemaVersion": 1}
    assert list(schemas.event_errors(good)) == []
    assert list(schemas.event_errors({**good, "sequence": -1}))


@pytest.mark.slow
def test_the_wheel_ships_the_schemas(tmp_path: Path) -> None:
    # Built from a copy, so the build leaves nothing in the checkout.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("wopdsl", "tui"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                           "-w", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    wheel = next(tmp_path.glob("wopdsl-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in schema_files():
        assert f"wopdsl/protocol/schemas/{name}" in names
    assert "wopdsl/protocol/schemas/SOURCES.md" in names
    assert "wopdsl/protocol/schemas/NOTICE" in names
