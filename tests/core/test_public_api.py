"""The public surface: one sorted ``__all__``, no private objects leaking out, light import."""

import importlib
import subprocess
import sys

import wopdsl

PUBLIC_MODULES = [
    "wopdsl",
    "wopdsl.model",
    "wopdsl.protocol",
    "wopdsl.store",
    "wopdsl.engine",
    "wopdsl.agents",
    "wopdsl.projections",
    "wopdsl.compile",
    "wopdsl.errors",
]


def test_root_all_is_sorted_and_complete():
    assert wopdsl.__all__ == sorted(wopdsl.__all__, key=lambda n: (n[0].islower(), n))
    for name in wopdsl.__all__:
        assert hasattr(wopdsl, name), name
    for name in ("Council", "CouncilSpec", "Run", "WopError", "compile", "load", "open_store",
                 "attach"):
        assert name in wopdsl.__all__


def test_public_modules_expose_no_private_objects():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            owner = getattr(obj, "__module__", "") or ""
            assert "._" not in owner, f"{module_name}.{name} comes from private {owner}"


def test_import_stays_light():
    code = (
        "import sys, wopdsl\n"
        "heavy = [m for m in ('textual', 'IPython', 'ipywidgets', 'syrupy', 'jinja2', 'pytest',"
        " 'jsonschema', 'psycopg', 'psycopg_pool', 'starlette', 'uvicorn', 'wopdsl.server')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
