"""W(N, T) with sync python members as a module ``wop run`` can load: ``wop run baton:council``.

``bench/langgraph.py`` runs it as a user would (``wop run``, a real subprocess); N and T come
from ``WOP_BENCH_MEMBERS`` and ``WOP_BENCH_TURNS`` (defaults 3 and 1,000).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import build_council

council = build_council("python-sync", int(os.environ.get("WOP_BENCH_MEMBERS", "3")),
                        int(os.environ.get("WOP_BENCH_TURNS", "1000")))
