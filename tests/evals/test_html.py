"""`wop eval --html`: one self-contained page, opened in headless Chromium.

The plots render (every bar and interval has a size on screen), nothing is fetched, and the
browser logs no error. Text from the eval (ids, explanations) is escaped, never markup.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import _env
from tests.evals.conftest import BOARD, SOLO_HALF, board_vs_solo, write
from tests.server.web_browser import new_driver, require_browser

EVAL = board_vs_solo("page", settings='description = "Board <b>vs</b> solo & friends"\n'
                                     "repeats = 2\n", tail="""
[[checks]]
id = "length"
kind = "python"
function = "score:length"
scale = [0, 20]

[gate]
correct = { board = 0.9, solo = 0.4 }
""")

SCORE = """\
def length(target, case, run):
    return {"score": min(20, len(target)), "explanation": "<script>alert(1)</script>"}
"""


@pytest.fixture
def page(tmp_path: Path) -> Path:
    write(tmp_path, "board.toml", BOARD)
    write(tmp_path, "solo.toml", SOLO_HALF)
    write(tmp_path, "score.py", SCORE)
    write(tmp_path, "e.toml", EVAL)
    done = subprocess.run([sys.executable, "-m", "wopdsl", "eval", "e.toml", "--quiet",
                           "--html", "out/report.html"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return tmp_path / "out" / "report.html"


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    browser = new_driver(require_browser(), tmp_path / "profile")
    try:
        yield browser
    finally:
        browser.quit()


def test_the_page_is_self_contained_and_escapes_what_it_shows(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    for outside in ("<script", "<link", "<img", "@import", "url(", "src="):
        assert outside not in html
    assert "Board &lt;b&gt;vs&lt;/b&gt; solo &amp; friends" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_plots_render_in_chromium_without_errors(page: Path, driver: Any) -> None:
    driver.get(page.as_uri())
    assert driver.title == "eval page"
    plots = driver.execute_script("""
        return [...document.querySelectorAll('svg.plot')].map(svg => {
          const box = svg.getBoundingClientRect();
          return {title: svg.querySelector('title').textContent, width: box.width,
                  height: box.height,
                  bars: [...svg.querySelectorAll('rect.bar')].map(r => r.getBBox().width),
                  whiskers: svg.querySelectorAll('line.ci').length,
                  gates: svg.querySelectorAll('line.gate').length};
        });""")
    by_title = {p["title"]: p for p in plots}
    assert sorted(by_title) == sorted([
        "correct: pass rate per arm, 95 % interval", "length: mean score per arm, 95 % interval",
        "tokens per run", "wall time per run"])
    correct = by_title["correct: pass rate per arm, 95 % interval"]
    assert correct["width"] > 300 and correct["height"] > 40
    assert len(correct["bars"]) == 2 and all(w > 0 for w in correct["bars"])
    assert correct["bars"][0] > correct["bars"][1]  # the board passes more often
    assert correct["whiskers"] == 6 and correct["gates"] == 2
    assert by_title["length: mean score per arm, 95 % interval"]["whiskers"] == 6
    resources = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []  # nothing fetched
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    rows = driver.execute_script(
        "return [...document.querySelectorAll('table')].map(t => t.rows.length)")
    assert rows[-1] == 1 + 8  # every run, with its id
    assert not driver.execute_script("return window.alertCalled === true")
