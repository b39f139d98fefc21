"""The 2.x client (openwop-client 2.7) parses this host's discovery document.

The 1.8 client (v1 wire) is a dev dependency and drives the host in test_client_v1.py; the
2.x client is the same distribution name, so it cannot live in the same environment. This
slow test installs it from PyPI into a throw-away virtual environment and runs its real
``discovery_capabilities`` against a real ``wop serve``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

SCRIPT = """
import json, sys
from openwop_client import OpenwopClient
client = OpenwopClient(base_url=sys.argv[1], api_key="unused-for-discovery")
caps = client.discovery_capabilities()
print(json.dumps({"protocolVersions": caps.protocolVersions,
                  "preferredVersion": caps.preferredVersion,
                  "protocolVersion": caps.protocolVersion,
                  "implementation": caps.implementation}))
"""


@pytest.mark.slow
def test_the_2x_client_parses_discovery(serve: Any, tmp_path: Path) -> None:
    env_dir = tmp_path / "client-v2"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "openwop-client==2.7.0"], check=True, timeout=300)
    served = serve()
    out = subprocess.run([str(python), "-c", SCRIPT, served.url], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    caps = json.loads(out)
    assert caps["protocolVersions"] == ["1.0"] and caps["preferredVersion"] == "1.0"
    assert caps["protocolVersion"] == "1.0"
    assert caps["implementation"]["name"] == "wopdsl"
    assert sys.executable != str(python)
