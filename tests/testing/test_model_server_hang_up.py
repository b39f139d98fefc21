"""The scripted model server sees a client close an endless stream the moment it does.

``CapturedRequest.ended`` is when a stopped stream was closed (the steering tests and
``bench/steer.py`` time a steer by it), not the next chunk's write after it: with a chunk
every 5 s, the server must not need 5 s (or two writes) to notice.
"""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

from wopdsl.testing.model_server import Endless, ScriptedModelServer


def test_a_stream_the_client_closes_ends_at_once_between_slow_chunks() -> None:
    with ScriptedModelServer() as server:
        server.default = Endless("la ", delay_s=5.0, max_s=60)
        url = urlsplit(server.url)
        client = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        client.request("POST", f"{url.path}/chat/completions", json.dumps({
            "model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}),
            {"Content-Type": "application/json"})
        response = client.getresponse()
        assert response.status == 200
        assert b"la " in response.read1()  # the first chunk: the stream is running
        response.close()
        client.close()  # the client hangs up, 5 s before the next chunk
        closed = time.monotonic()
        deadline = closed + 30
        while server.requests[0].ended is None and time.monotonic() < deadline:
            time.sleep(0.01)
        request = server.requests[0]
        assert request.hung_up
        assert request.ended is not None and request.ended - closed < 1.0
