"""``import wopdsl`` stays light: the notebook, TUI and template dependencies load lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHECK = (
    "import sys, wopdsl; "
    "assert 'IPython' not in sys.modules and 'ipywidgets' not in sys.modules "
    "and 'textual' not in sys.modules and 'jinja2' not in sys.modules, "
    "sorted(m for m in ('IPython', 'ipywidgets', 'textual', 'jinja2') if m in sys.modules)"
)


def test_import_wopdsl_loads_no_ui_dependency() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_rendering_a_run_loads_no_ui_dependency() -> None:
    # _repr_html_ / _repr_markdown_ need only the standard library.
    code = ("import sys, wopdsl; run = wopdsl.load('councils/release-team.toml').run("
            "store='memory:'); html = run._repr_html_(); md = run._repr_markdown_(); "
            "assert 'completed' in html and 'completed' in md; "
            "assert 'IPython' not in sys.modules and 'ipywidgets' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
