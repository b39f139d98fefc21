"""The response of an event stream (SSE, AG-UI): light enough for thousands at once.

Starlette's ``StreamingResponse`` runs each stream in an anyio task group of two tasks
(the body and a disconnect listener), and keeps the last chunk it sent while it waits for
the next one — a stream's first chunk holds its run's first events, the largest (the
declaration), for as long as the run lasts. :class:`SubscriberStream` sends in the
request's own task, listens for the disconnect in one plain task that stops the feed
subscriber (its frames then end), and keeps nothing it has sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from wopdsl.server.feed import Subscriber

__all__ = ["SubscriberStream"]


class SubscriberStream(StreamingResponse):
    """A ``text/event-stream`` response of ``chunks``, which follow ``subscriber``.

    Args:
        subscriber: The feed subscriber the chunks come from; stopped when the client
            goes away.
        chunks: The encoded frames.
        headers: Extra response headers.
    """

    def __init__(self, subscriber: Subscriber, chunks: AsyncGenerator[bytes, None],
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(chunks, media_type="text/event-stream", headers=headers)
        self._subscriber = subscriber
        self._chunks = chunks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the stream until it ends or the client goes away."""
        chunks = self._chunks
        listener = asyncio.ensure_future(_disconnected(receive))
        listener.add_done_callback(self._gone)
        try:
            await send({"type": "http.response.start", "status": self.status_code,
                        "headers": self.raw_headers})
            while True:
                try:
                    # No local keeps a chunk: the stream waits here between events.
                    await send({"type": "http.response.body", "body": await anext(chunks),
                                "more_body": True})
                except StopAsyncIteration:
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()
            await chunks.aclose()

    def _gone(self, listener: asyncio.Task[None]) -> None:
        if not listener.cancelled():  # The client went away (or the connection failed).
            listener.exception()
            self._subscriber.stop()


async def _disconnected(receive: Receive) -> None:
    """Return once the client has gone away."""
    while (await receive())["type"] != "http.disconnect":
        pass
