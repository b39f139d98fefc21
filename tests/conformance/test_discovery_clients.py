"""The official OpenWOP Python clients (2.7 and 1.8) parse `wop capabilities` over real HTTP.

`wop capabilities` (a real subprocess) prints the discovery document; a loopback HTTP server
serves it at `/.well-known/openwop`; each client's own `discovery_capabilities()` fetches
and parses it. 1.8 is the dev extra's pin; 2.7 (and 1.8, in the slow test) are
installed into scratch folders from PyPI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.conftest import Wop
from tests.openwop_client27 import client27_env, install_client27

pytest.importorskip("openwop_client")


@pytest.fixture
def discovery(wop: Wop) -> dict[str, object]:
    done = wop("capabilities", "--max-participants", "8")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


@pytest.fixture
def host(discovery: dict[str, object]) -> Iterator[str]:
    body = json.dumps(discovery).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/.well-known/openwop":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_document_lists_protocol_versions(discovery: dict[str, object]) -> None:
    assert discovery["protocolVersion"] == "1.0"
    assert discovery["protocolVersions"] == ["1.0", "2.0"]  # what `wop serve` speaks
    assert discovery["preferredVersion"] == "1.0"
    assert discovery["multiPartyConversation"] == {"supported": True, "maxParticipants": 8}


def _in_client27(target: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = client27_env(target)
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_2x_client_discovers_the_host(host: str, client27: Path) -> None:
    code = ("import json, sys, openwop_client\n"
            "from openwop_client import OpenwopClient\n"
            "assert openwop_client.__file__.startswith(sys.argv[2]), openwop_client.__file__\n"
            "caps = OpenwopClient(sys.argv[1], 'not-a-secret').discovery_capabilities()\n"
            "print(json.dumps([caps.protocolVersions, caps.preferredVersion, "
            "caps.protocolVersion, caps.raw['multiPartyConversation']['maxParticipants']]))\n")
    done = _in_client27(client27, code, host, str(client27))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["1.0", "2.0"], "1.0", "1.0", 8]


def test_without_protocol_versions_the_2x_client_fails(client27: Path) -> None:
    # The negative case: the document as it was before (issue 11, item 10).
    from wopdsl.protocol.capabilities import capabilities

    old = capabilities()
    del old["protocolVersions"]
    code = ("import json, sys\n"
            "from openwop_client.client import _capabilities_from_dict\n"
            "try:\n"
            "    _capabilities_from_dict(json.loads(sys.argv[1]))\n"
            "except KeyError as exc:\n"
            "    print('KeyError', exc)\n")
    done = _in_client27(client27, code, json.dumps(old))
    assert done.returncode == 0, done.stderr
    assert "KeyError" in done.stdout and "protocolVersions" in done.stdout


@pytest.mark.slow
def test_the_1x_client_discovers_the_host(host: str, tmp_path: Path) -> None:
    target = install_client27(tmp_path / "client18", "1.8.0")
    code = ("import json, sys, openwop_client\n"
            "from openwop_client import OpenwopClient\n"
            "assert openwop_client.__file__.startswith(sys.argv[2]), openwop_client.__file__\n"
            "caps = OpenwopClient(sys.argv[1], 'not-a-secret').discovery_capabilities()\n"
            "print(json.dumps({'v': caps.protocolVersion, 'limits': caps.limits.envelopesPerTurn,"
            " 'mpc': caps.multiPartyConversation.maxParticipants}))\n")
    env = client27_env(target)
    done = subprocess.run([sys.executable, "-c", code, host, str(target)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"v": "1.0", "limits": 1, "mpc": 8}
