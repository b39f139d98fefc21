"""Private: the lifetime of a threaded loopback server (the scripted model server, the proxy)."""

from __future__ import annotations

import socketserver
import threading
from typing import Self

__all__ = ["LoopbackService"]


class LoopbackService:
    """Serves a ``socketserver`` server from a daemon thread; a context manager."""

    _server: socketserver.BaseServer | None = None

    def start(self) -> Self:
        """Start serving (subclasses build their server, then call :meth:`_serve`)."""
        raise NotImplementedError

    def _serve(self, server: socketserver.BaseServer, name: str) -> Self:
        self._server = server
        threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
