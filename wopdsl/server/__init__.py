"""The OpenWOP v1 HTTP host (``wop serve``): councils for chat apps and ``openwop-client``.

Needs the ``server`` extra (``pip install 'wopdsl[server]'``: Starlette and uvicorn);
``import wopdsl`` never imports this package.

Example:
    >>> from wopdsl.server import create_app  # doctest: +SKIP
    >>> app = create_app(".wop/runs.db", ["councils/release-team.toml"])  # doctest: +SKIP
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra.
    raise ImportError(
        "the OpenWOP host needs the server extra: pip install 'wopdsl[server]'") from exc

from wopdsl.server.app import create_app
from wopdsl.server.config import Limits, Tokens, load_tokens
from wopdsl.server.host import Host

__all__ = ["Host", "Limits", "Tokens", "create_app", "load_tokens"]
