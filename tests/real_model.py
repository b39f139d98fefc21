"""The real small model for the tests: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct.

The server comes from ``$WOPDSL_TEST_LLAMA_URL`` (its OpenAI-wire base URL), which
``.ci/llama.sh`` builds, starts and prints. Tests marked ``@pytest.mark.real_model`` are
skipped without it, and say how to start one; in CI (``CI=true``) they fail instead, never
skip. They assert the wire and the invariants (events validate, ``wop check`` passes, replay
calls nothing, provenance records the model the server reports), never the wisdom.
"""

from __future__ import annotations

import json
import os
import urllib.request

import pytest

ENV = "WOPDSL_TEST_LLAMA_URL"


def llama_url() -> str:
    """The server's base URL, or skip (fail in CI) when none is configured."""
    url = os.environ.get(ENV, "")
    if url:
        return url.rstrip("/")
    reason = (f"no real model server: set {ENV} (e.g. {ENV}=\"$(.ci/llama.sh)\", which "
              "builds llama-server and starts it with SmolLM2-135M on loopback)")
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI never skips these tests", pytrace=False)
    pytest.skip(reason)


def served_model(url: str) -> str:
    """The model id the server reports (``GET /v1/models``)."""
    with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
        models = json.load(response)
    return str(models["data"][0]["id"])
