"""Docs that code depends on: every error code has a heading in docs/errors.md."""

import re
from pathlib import Path

from wopdsl.errors import CODES, DeclarationError, WopError

ROOT = Path(__file__).resolve().parents[2]


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_error_codes_equal_doc_headings():
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)$", text, flags=re.M)
    assert headings == list(CODES)


def test_every_exception_code_is_documented():
    import importlib
    import pkgutil

    import wopdsl

    for module in pkgutil.walk_packages(wopdsl.__path__, "wopdsl."):  # every error class
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    codes = {c.code for c in _subclasses(WopError)}
    codes.discard("WOP_ERROR")
    assert codes <= set(CODES)


def test_rendered_error_points_at_its_doc_anchor():
    text = DeclarationError("bad").render()
    assert text.startswith("error[DECLARATION_INVALID]: ")
    assert "docs/errors.md#declaration_invalid" in text


def test_release_team_council_is_the_published_example():
    from tests.published import RELEASE_TEAM_TOML

    council = (ROOT / "councils" / "release-team.toml").read_text(encoding="utf-8")
    assert council == RELEASE_TEAM_TOML


def test_the_readme_human_in_the_loop_snippet_works_as_written(tmp_path):
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("Human in the loop")
    block = re.search(r"```python\n(.*?)```", readme[start:], flags=re.S)
    assert block is not None
    done = subprocess.run([sys.executable, "-c", block.group(1)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["waiting-input ['founder']", "completed"]
