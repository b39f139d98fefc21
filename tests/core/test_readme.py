"""The README tells a newcomer what is true: how to install from the clone, what the core
and each extra bring, every document, and only files the clone has."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _prose() -> list[str]:
    """The README's lines outside code blocks."""
    lines, fenced = [], False
    for line in README.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower()


def test_it_installs_from_the_clone_not_from_an_index() -> None:
    assert not re.search(r"pip install ['\"]?wopdsl\b", README), "wopdsl is not on PyPI"
    assert "python3 -m pip install ." in README
    assert "pip install -e '.[dev]'" in README


def test_the_core_dependencies_are_the_ones_pyproject_declares() -> None:
    listed = re.search(r"The core needs only ([^.]+)\.", README)
    assert listed is not None
    names = {n.strip().lower() for n in re.split(r",| and ", listed.group(1)) if n.strip()}
    assert names == {_name(r) for r in PROJECT["dependencies"]}


def test_every_extra_is_listed_once_with_what_it_brings() -> None:
    section = README.split("### Installing", 1)[1].split("\n#", 1)[0]
    extras = re.findall(r"^- `(\w+)`[ :]", section, flags=re.M)
    assert sorted(extras) == sorted(PROJECT["optional-dependencies"])


def test_no_line_is_said_twice() -> None:
    lines = [line.strip() for line in _prose() if len(line.strip()) > 30]
    assert [line for line in lines if lines.count(line) > 1] == []


def test_the_documentation_list_links_every_document() -> None:
    section = README.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^\s*- \[[^]]+\]\(([^)]+)\)", section, flags=re.M)
    documents = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(items) == documents  # One list item each: web.md and llm.md included.


def test_every_file_it_names_is_in_the_clone() -> None:
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.splitlines())
    folders = {str(Path(p).parent) + "/" for p in tracked} | {
        str(parent) + "/" for p in tracked for parent in Path(p).parents}
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    named = re.findall(r"`((?:\.ci|councils|docs|wopdsl|tui|bench|examples)/[^`\s]*)`", README)
    assert links and named
    for path in links + named:
        assert not path.startswith(("../", "/")), path
        assert path in tracked or path.rstrip("/") + "/" in folders, f"{path} is not in the clone"
    assert "shared/" not in README
