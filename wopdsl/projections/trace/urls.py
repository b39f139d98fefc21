"""OTLP endpoint URLs: a URL fit to print."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["shown_url"]


def shown_url(url: str) -> str:
    """``url`` fit to print: a password in it becomes ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
