"""Handlers of the fault-injection councils (tests/server/test_faults.py)."""

import os
import time
from pathlib import Path


def slow(turn):
    """A sync handler whose first call takes 3 s, with markers for the test to read."""
    marks = Path(os.environ["WOP_TEST_MARKS"])
    (marks / "started").write_text(str(time.time()))
    time.sleep(3)
    (marks / "finished").write_text(str(time.time()))
    return "done slowly"


def wide(turn):
    """A handler returning an integer no reader of the log could serve (2^70)."""
    return {"summary": "wide", "data": {"n": 2**70}}
