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


def test_one_truth_about_where_sync_handlers_run():
    """toml.md says where handlers run (wopdsl/agents/python.py's rule, its thresholds);
    decorators.md and jupyter.md agree and link to it (they used to say "a worker thread")."""
    from wopdsl.agents.python import INLINE_THRESHOLD_S

    guides = ROOT / "docs" / "guides"
    toml = (guides / "toml.md").read_text(encoding="utf-8")
    section = toml.split("\n### Sync and async handlers\n", 1)[1].split("\n### ", 1)[0]
    slow = round(INLINE_THRESHOLD_S * 1000)
    assert f"two calls in a row longer than {slow} ms (or one over {10 * slow} ms)" in section
    assert "runs in place" in section and "`wop serve`" in section
    assert f"| {slow} ms twice in a row, or {10 * slow} ms once |" in toml  # the Limits table
    for name in ("decorators.md", "jupyter.md"):
        text = " ".join((guides / name).read_text(encoding="utf-8").split())
        assert "(toml.md#sync-and-async-handlers)" in text, name
        assert "runs in place while it is fast" in text, name
    pages = [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").glob(
        "*.ipynb")]
    for page in pages:
        text = " ".join(page.read_text(encoding="utf-8").split())
        wrong = re.search(r"[Ss]ync handlers (run|are run) (in a worker thread|on worker "
                          r"threads|off the event loop)(?! from their first call)", text)
        assert wrong is None, f"{page.relative_to(ROOT)}: {wrong.group(0)}"


def test_the_jupyter_guide_names_every_example_notebook_and_lists_what_a_run_shows():
    guide = (ROOT / "docs" / "guides" / "jupyter.md").read_text(encoding="utf-8")
    notebooks = sorted(p.name for p in (ROOT / "examples").glob("*.ipynb"))
    intro = guide.split("\n## ", 1)[0]
    named = sorted(set(re.findall(r"\[`(\w+\.ipynb)`\]\(\.\./\.\./examples/\1\)", intro)))
    assert named == notebooks
    count = re.search(r"^(\w+) notebooks in \[`examples/`\]", intro, flags=re.M)
    assert count is not None
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    assert words.index(count.group(1).lower()) == len(notebooks)
    run = (ROOT / "tests" / "jupyter" / "test_examples.py").read_text(encoding="utf-8")
    assert all(f'"{name}"' in run for name in notebooks)  # "the test suite runs each"
    # The extra is the kernel's side: the guide and the README say what opens notebooks.
    assert "pip install jupyterlab" in guide.split("\n## ", 1)[0]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^- `jupyter` .*\n .*`pip install jupyterlab`", readme, flags=re.M)
    # "It shows:" is followed by its list, not by another paragraph.
    shows = guide.split("It shows:\n", 1)[1]
    assert shows.startswith("\n- a **status line**"), shows[:80]
