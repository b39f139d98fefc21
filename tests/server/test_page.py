"""The chat page's files over HTTP: served without a token, locked down, shipped in the wheel."""

from __future__ import annotations

import re
import tomllib
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any

from tests.server.conftest import ALICE, REPO
from wopdsl.server.page import ASSETS

STATIC = REPO / "wopdsl" / "server" / "static"


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def test_the_page_and_its_files_are_served_without_a_token(serve: Any, tokens_file: Path
                                                           ) -> None:
    served = serve(args=("--tokens", str(tokens_file)))
    for path in ("/", "/runs/desk-0123abcd"):
        status, body, headers = _get(served.url + path)
        assert status == 200 and body.startswith(b"<!doctype html>"), path
        assert headers["content-type"].startswith("text/html")
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "unsafe-inline" not in csp
    for name, media in ASSETS.items():
        status, body, headers = _get(f"{served.url}/ui/{name}")
        assert status == 200 and body, name
        assert headers["content-type"].startswith(media)
        assert headers["x-content-type-options"] == "nosniff"
    # Only the page's own files are public; any other path fails closed.
    assert _get(served.url + "/ui/secrets.js")[0] == 401
    status, body, _ = _get(served.url + "/ui/secrets.js", {"Authorization": f"Bearer {ALICE}"})
    assert status == 404 and b'"not_found"' in body
    # Everything else still needs the token.
    assert served.request("GET", "/v1/workflows", token=None)[0] == 401
    assert served.request("GET", "/v1/whoami", token=None)[0] == 401


def test_whoami_names_the_principal_and_never_the_token(serve: Any, tokens_file: Path) -> None:
    served = serve(args=("--tokens", str(tokens_file)))
    status, me, _ = served.request("GET", "/v1/whoami", token=ALICE)
    assert status == 200 and me == {"principal": "alice", "auth": True}
    assert ALICE not in served.logs()
    local = serve()
    assert local.request("GET", "/v1/whoami")[1] == {"principal": "local", "auth": False}
    paths = local.request("GET", "/v1/openapi.json")[1]["paths"]
    assert "/v1/whoami" in paths


def test_the_static_files_ship_as_package_data() -> None:
    names = {"index.html", *ASSETS}
    assert {p.name for p in STATIC.iterdir()} == names
    for name in names:
        assert resources.files("wopdsl.server").joinpath("static", name).is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["wopdsl.server"]
    for name in names:
        assert any(Path("static", name).match(p) for p in patterns), name
    html = (STATIC / "index.html").read_text()
    # No build step and no CDN: every script and stylesheet is one of ours.
    assert set(re.findall(r'(?:src|href)="(/ui/[^"]+)"', html)) == {
        "/ui/app.js", "/ui/app.css", "/ui/icon.svg"}
    assert "http" not in re.sub(r"<!--.*?-->", "", html)


def test_no_markup_is_built_from_strings() -> None:
    # Text from members and people reaches the DOM through textContent only.
    for path in STATIC.glob("*.js"):
        source = path.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                     "eval(", "new Function"):
            assert sink not in source, f"{path.name} uses {sink}"
