"""Headless Chromium (Debian ``chromium`` + ``chromedriver``) for the chat page tests."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

T = TypeVar("T")


def require_browser() -> None:
    """Skip without chromium (never in CI: there a missing browser is a failure)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing and not os.environ.get("CI"):
        pytest.skip(f"needs chromium and chromium-driver (apt-get install chromium "
                    f"chromium-driver); missing {', '.join(missing)}")
    pytest.importorskip("selenium", reason="needs selenium (the dev extra)")


def new_driver(profile: Path) -> Any:
    """A headless Chromium with no network beyond the page's host, no first-run noise."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1280,800", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


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
