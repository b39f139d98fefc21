"""Which server a model profile calls, and where that address came from.

In order: the profile's ``base_url``; the base URL the run recorded when it started (so a
resumed run or a fork calls the server its run called, whatever the shell says now); then
``$OPENAI_BASE_URL``; else the ``openai`` client's default (OpenAI's API). Every connection
error names the address and its origin. A run records ``$OPENAI_BASE_URL`` in its
``run.started`` metadata (``models.NAME.baseUrl``) for each profile without ``base_url``,
unless the address carries credentials (user info or a query string): those never go into a
log.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from wopdsl.model.llm import ModelProfile

__all__ = ["ENV", "OPENAI_DEFAULT_URL", "Endpoint", "recorded_endpoints", "recorded_from",
           "resolve", "shown"]

ENV = "OPENAI_BASE_URL"
"""The environment variable a profile without ``base_url`` reads."""
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
"""Where the ``openai`` client goes when no base URL is set anywhere."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A resolved base URL: ``url`` (``None``: the client's default) and its ``origin``."""

    url: str | None
    origin: str

    def describe(self) -> str:
        """``http://127.0.0.1:8089/v1 (from OPENAI_BASE_URL)``: for error messages."""
        return f"{shown(self.url or OPENAI_DEFAULT_URL)} ({self.origin})"


def resolve(profile: ModelProfile, recorded: str | None = None) -> Endpoint:
    """The base URL a call of ``profile`` goes to, given what its run recorded."""
    if profile.base_url:
        return Endpoint(profile.base_url, "from the profile's base_url")
    env = os.environ.get(ENV) or None
    if recorded and recorded != env:
        return Endpoint(recorded, f"recorded by the run when it started; {ENV} is "
                                  f"{'another' if env else 'unset'} now")
    if env:
        return Endpoint(env, f"from {ENV}")
    return Endpoint(None, f"{ENV} is unset and the profile has no base_url: the openai "
                          "client's default")


def recorded_endpoints(profiles: Iterable[tuple[str, ModelProfile]]) -> dict[str, Any]:
    """The ``models`` entry of ``run.started`` metadata: ``{NAME: {baseUrl}}``.

    For the profiles without ``base_url``, when ``$OPENAI_BASE_URL`` is set and carries no
    secret (user info, a query).
    """
    env = os.environ.get(ENV) or ""
    if not env or shown(env) != env:
        return {}
    return {name: {"baseUrl": env} for name, profile in profiles if not profile.base_url}


def recorded_from(metadata: Mapping[str, Any]) -> dict[str, str]:
    """Profile name → recorded base URL, read from a run's metadata (bad entries ignored)."""
    models = metadata.get("models")
    if not isinstance(models, dict):
        return {}
    return {name: entry["baseUrl"] for name, entry in models.items()
            if isinstance(entry, dict) and isinstance(entry.get("baseUrl"), str)}


def shown(url: str) -> str:
    """``url`` without user info, query or fragment (what may appear in a message or log)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<an invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))
