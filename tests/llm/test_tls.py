"""TLS for llm members: one context per process, and ``SSL_CERT_FILE`` is honoured.

The model server here speaks HTTPS on loopback with a certificate made by the real
``openssl`` command; the real ``openai`` client and httpx verify it.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import KEY, KEY_ENV, llm_council
from wopdsl.agents.llm.tls import _context_for
from wopdsl.agents.llm.tls import tls_context as _tls_context
from wopdsl.testing.model_server import Answer, ScriptedModelServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="needs the openssl command to make a certificate")

DONE = {"summary": "Done.", "posts": []}


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def https_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    cert, key = _certificate(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with ScriptedModelServer(tls=context) as server:
        server.default = Answer(DONE)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv(KEY_ENV, KEY)
        yield server, cert


def _council(retries: int = 0) -> Any:
    return llm_council(members={"solo": {}}, profile={"retries": retries})


async def test_runs_share_one_context_and_trust_ssl_cert_file(
        https_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, cert = https_server
    assert server.url.startswith("https://127.0.0.1:")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    _context_for.cache_clear()
    first = _tls_context()
    council = _council()
    for n in range(2):
        run = await council.arun(store=str(tmp_path / f"runs{n}.db"))
        assert run.status == "completed", run.error
    assert len(server.requests) == 2
    assert _tls_context() is first  # Both runs' clients were built with this one context.
    assert _context_for.cache_info().misses == 1
    assert any(c.get("subject") == ((("commonName", "127.0.0.1"),),)
               for c in first.get_ca_certs())


async def test_without_the_certificate_the_call_is_refused(
        https_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, cert = https_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    run = await _council(retries=2).arun(store=str(tmp_path / "runs.db"))
    assert run.status == "failed"
    assert run.error is not None
    message = run.error["message"]
    assert "TLS certificate is not trusted" in message and "SSL_CERT_FILE" in message, message
    assert "gave up" not in message  # Not retried: the certificate would not change.
    assert server.requests == []  # The handshake failed: nothing reached the server.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # Read again for the next client.
    run = await _council().arun(store=str(tmp_path / "again.db"))
    assert run.status == "completed", run.error
    assert _tls_context() is not _context_for(None, None)
