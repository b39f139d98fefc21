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


def test_the_demo_reads_well(tmp_path):
    """`make demo`'s council prints DESIGN.md §3's reviewer text, and no double punctuation
    ("Finished Prepare a release note.: …")."""
    import subprocess
    import sys

    from tests.published import REVIEWER_TEXT

    done = subprocess.run([sys.executable, "-m", "wopdsl", "run", "councils/release-team.toml",
                           "--store", str(tmp_path / "runs.db")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"[review] reviewer team/reviewer/2/0 @writer: {REVIEWER_TEXT}" in done.stdout
    results = done.stdout.split("\nresults\n", 1)[1]
    assert "  writer (writer): Finished after review team/reviewer/2/0: Prepare a release " \
        "note." in results
    assert not re.search(r"[.!?][:;,]", done.stdout), done.stdout


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


def test_the_annotated_log_is_a_real_run_of_the_demo_council(monkeypatch):
    """docs/openwop.md's annotated log: each event as a deterministic run writes it (the
    definition in ``run.started`` abbreviated, its digest cut)."""
    import json

    import wopdsl

    monkeypatch.chdir(ROOT)  # `metadata.source` is the path as given: `wop run`'s.
    run = wopdsl.load("councils/release-team.toml").run(store="memory:", deterministic=True)
    events = json.loads(json.dumps(list(run.events)))
    started = events[0]["payload"]["metadata"]
    started["council"] = "{… the full definition …}"
    started["councilDigest"] = started["councilDigest"][:19] + "…"
    text = (ROOT / "docs" / "openwop.md").read_text(encoding="utf-8")
    shown = [json.loads(line) for line in re.findall(r"```json\n(.*?)\n```", text, flags=re.S)
             if '"runId": "release-team-1"' in line]
    assert shown == events
