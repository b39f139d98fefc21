"""OTLP endpoint URLs: the traces URL of a base URL, and a URL fit to print."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["shown_url", "traces_url"]


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of ``endpoint``, read as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is.

    A base URL (``http://collector:4318``) gets ``/v1/traces``; a URL that already ends with
    ``/v1/traces`` is kept as it is.
    """
    parts = urlsplit(endpoint.strip())
    if parts.path.rstrip("/").endswith("/v1/traces"):
        return endpoint.strip()
    return urlunsplit(parts._replace(path=parts.path.removesuffix("/") + "/v1/traces"))


def shown_url(url: str) -> str:
    """``url`` fit to print: a password in it becomes ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
