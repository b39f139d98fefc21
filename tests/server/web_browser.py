"""Headless Chromium (Debian ``chromium`` + ``chromedriver``) for the chat page tests."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from tests.server.conftest import Served

CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
"""The browser's names on PATH: Debian's, other distributions', Google's."""

NO_BROWSER = ("no headless Chromium for the chat page tests: put chromium (or Chrome) and "
              "chromedriver on PATH; `.ci/browser.sh` installs Debian's chromium and "
              "chromium-driver (as root)")
"""The one skip reason of every browser test (the same words, so they sum up in one line)."""

WEB_COUNCILS = Path(__file__).resolve().parent / "web_councils"

T = TypeVar("T")

_CLICK_JS = """const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e;"""
_ATTRIBUTES_JS = """return [...document.querySelectorAll(arguments[0])].map(
  e => e.getAttribute(arguments[1]));"""
_TEXTS_BY_JS = """return [...document.querySelectorAll(arguments[0])].map(
  e => [e.getAttribute(arguments[1]), e.innerText]);"""
_MESSAGES_JS = """return [...document.querySelectorAll('#list .msg')].map(li =>
  [li.dataset.id, li.querySelector('.from').textContent, li.querySelector('.text').textContent]);"""


def host_path(councils: Path) -> str:
    """``PYTHONPATH`` of a `wop serve`: the councils' handler modules, then the tree under test
    (so the host serves this checkout's page, not an installed wopdsl's)."""
    parts = [str(councils), str(Path(__file__).resolve().parents[2]),
             os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


@dataclass(frozen=True)
class Browser:
    """A Chromium and its chromedriver, found on PATH."""

    chromium: str
    chromedriver: str


def find_browser() -> Browser | None:
    """The first of :data:`CHROMIUMS` on PATH with a chromedriver, or ``None``."""
    chromium = next((found for name in CHROMIUMS if (found := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    return Browser(chromium, driver) if chromium and driver else None


def require_browser() -> Browser:
    """The browser, or skip saying how to get one (in CI, where one is installed, fail)."""
    browser = find_browser()
    if browser is None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{NO_BROWSER}; CI never skips these tests", pytrace=False)
        pytest.skip(NO_BROWSER)
    pytest.importorskip("selenium", reason="needs selenium (the dev extra)")
    return browser


def new_driver(browser: Browser, profile: Path, extra_args: tuple[str, ...] = ()) -> Any:
    """A headless Chromium with no network beyond the page's host, no first-run noise."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser.chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1280,800", f"--user-data-dir={profile}", *extra_args):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(browser.chromedriver), options=options)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 20) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except Exception as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def screenshot_dir(tmp: Path) -> Path:
    """Where screenshots go: ``WOP_WEB_SCREENSHOTS`` (the docs' images) or the test's tmp."""
    target = Path(os.environ.get("WOP_WEB_SCREENSHOTS") or tmp / "screens")
    target.mkdir(parents=True, exist_ok=True)
    return target


@dataclass
class Page:
    """One browser tab on one host."""

    driver: Any
    served: Served
    shots: Path

    def open(self, path: str = "/") -> None:
        self.driver.get(self.served.url + path)

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def click(self, css: str) -> None:
        """Click the element ``css`` finds, in one step in the page.

        The tabs and the roster are drawn again on most events: an element found by the
        driver may be gone (stale) by the time the driver clicks it.
        """
        assert self.js(_CLICK_JS, css), f"nothing matches {css}"

    def attributes(self, css: str, name: str) -> list[str]:
        """Attribute ``name`` of each element ``css`` finds, read in one step in the page."""
        return list(self.js(_ATTRIBUTES_JS, css, name))

    def texts_by(self, css: str, name: str) -> dict[str, str]:
        """The rendered text of each element ``css`` finds, by its attribute ``name``."""
        return dict(self.js(_TEXTS_BY_JS, css, name))

    def messages(self) -> list[list[str]]:
        """``[id, sender, text]`` of each message in the shown room's list."""
        return list(self.js(_MESSAGES_JS))

    def texts(self) -> list[str]:
        return [m[2] for m in self.messages()]

    def status(self) -> str:
        return str(self.find("#run-status").text)

    def run_id(self) -> str:
        return str(self.driver.current_url.rsplit("/runs/", 1)[1])

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        assert path.stat().st_size > 1000
        return path

    def start(self, council: str) -> str:
        self.open("/")
        button = wait_for(f"the council {council}", lambda: self.find(
            f'li[data-council="{council}"] button.start'))
        button.click()
        wait_for("the run page", lambda: "/runs/" in self.driver.current_url and
                 self.find("#run-status").text)
        return self.run_id()


def api_messages(served: Served, run_id: str, room: str) -> list[str]:
    """The message ids of a room, in order, as the API reports them."""
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, page
    return [e["payload"]["turn"]["messageId"] for e in page["events"]
            if e["type"] == "conversation.exchanged" and e["payload"]["turn"]["groupId"] == room]
