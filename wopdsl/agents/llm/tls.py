"""The process's TLS context for model calls, built as httpx builds its own, once.

An ``AsyncOpenAI`` made without one loads the CA bundle again (about 20 ms), and a run makes
its clients afresh (they are closed when the run stops), so the context is built once per
``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` pair and reused. Those variables are honoured, as httpx
does (read at each call, so changing them takes effect for the next client); otherwise
certifi's bundle, httpx's default.
"""

from __future__ import annotations

import functools
import os
import ssl

__all__ = ["tls_context", "tls_context_ready"]


def _settings() -> tuple[str | None, str | None]:
    return (os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


def tls_context() -> ssl.SSLContext:
    """The context for the CA settings in effect (built on first use: blocking I/O)."""
    return _context_for(*_settings())


def tls_context_ready() -> bool:
    """Whether :func:`tls_context` would return at once (nothing to load)."""
    return _settings() in _built


_built: set[tuple[str | None, str | None]] = set()


@functools.cache
def _context_for(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    settings = (cafile, capath)
    if not cafile and not capath:
        try:
            import certifi
        except ImportError:  # pragma: no cover - httpx depends on certifi
            context = ssl.create_default_context()
            _built.add(settings)
            return context
        cafile = certifi.where()
    context = ssl.create_default_context(cafile=cafile, capath=capath)
    _built.add(settings)
    return context
