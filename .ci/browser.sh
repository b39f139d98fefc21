#!/usr/bin/env bash
# The headless browser the chat page tests drive (tests/server/test_web.py): Debian's
# chromium and its chromedriver. Installed only when missing; needs root (CI runs as root).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
chromium --version
