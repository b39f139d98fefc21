"""What a newcomer meets on the chat page, in a real headless Chromium against `wop serve`:
the composer keeps its shape, the icon loads, a council the host refuses is not offered."""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path
from typing import Any

from tests.server.conftest import REPO
from tests.server.web_browser import WEB_COUNCILS, wait_for

_BOX = "const r = document.getElementById(arguments[0]).getBoundingClientRect(); return r.width;"


def _widths(p: Any) -> tuple[float, float, float]:
    return (float(p.js(_BOX, "text")), float(p.js(_BOX, "send")),
            float(p.js(_BOX, "composer")))


def test_the_composer_keeps_its_shape_in_a_room_without_a_person(page: Any) -> None:
    p = page()
    p.start("board")
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    text, send, composer = _widths(p)
    assert text > composer / 2 and send < 150  # The founder's room: the box fills the row.
    p.click('#tabs [data-room="ops"]')
    wait_for("the ops room", lambda: "no human member" in p.find("#composer-note").text)
    assert not p.find(".speaker").is_displayed()
    text, send, composer = _widths(p)
    # Not a tiny box beside a full-width button: the box keeps its column, the button its own.
    assert text > composer / 2, (text, composer)
    assert send < 150, send
    box, button = p.find("#text").rect, p.find("#send").rect
    assert button["x"] >= box["x"] + box["width"]  # Side by side, on one row.
    assert button["y"] < box["y"] + box["height"]
    p.shot("web-ops-room-composer")


def test_the_page_has_an_icon_and_the_browser_logs_no_error(page: Any) -> None:
    p = page()
    p.open("/")
    wait_for("the councils", lambda: p.finds("#councils li"))
    icon = p.js("return document.querySelector('link[rel=icon]').href")
    assert icon == p.served.url + "/ui/icon.svg"
    for path in ("/favicon.ico", "/ui/icon.svg"):
        status = p.js("const r = await fetch(arguments[0]); return [r.status, "
                      "r.headers.get('content-type')];", path)
        assert status == [200, "image/svg+xml; charset=utf-8"], (path, status)
    with urllib.request.urlopen(p.served.url + "/favicon.ico", timeout=10) as resp:
        assert resp.read().startswith(b"<svg")
    errors = [e for e in p.driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def _councils_with_the_oversize_one(tmp_path: Path) -> Path:
    folder = tmp_path / "councils"
    shutil.copytree(WEB_COUNCILS, folder)
    shutil.copy(REPO / "councils" / "conformance-multi-party-council-oversize.toml", folder)
    return folder


def test_a_council_the_host_refuses_is_not_offered(page: Any, tmp_path: Path) -> None:
    folder = _councils_with_the_oversize_one(tmp_path)
    p = page(councils=folder)
    p.open("/")
    oversize = '#councils li[data-council="conformance-multi-party-council-oversize"]'
    note = wait_for("the oversize council's note", lambda: p.find(f"{oversize} .note").text)
    assert note == ("Too large for this host: room convo has 64 agent participants, the host "
                    "allows 32 (wop serve --max-participants).")
    assert not p.find(f"{oversize} button.start").is_enabled()
    assert p.find('#councils li[data-council="board"] button.start').is_enabled()
    p.shot("web-home-oversize")
    # A host that allows the roster offers it.
    roomy = page(councils=folder, args=("--max-participants", "64"))
    roomy.open("/")
    start = wait_for("the oversize council", lambda: roomy.find(f"{oversize} button.start"))
    assert start.is_enabled()
    assert roomy.finds(f"{oversize} .note") == []
