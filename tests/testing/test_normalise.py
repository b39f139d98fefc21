"""Event-log normalisation and transcript recognition (wopdsl.testing.normalise)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from wopdsl import load
from wopdsl._ids import FixedClock
from wopdsl.testing.normalise import dump_events, is_transcript, normalise_events


def event(run_id: str, sequence: int, **extra: Any) -> dict[str, Any]:
    return {"eventId": f"evt.{run_id}.{sequence:012d}", "runId": run_id, "sequence": sequence,
            "type": "node.started", "timestamp": f"2026-01-0{sequence + 1}T00:00:00.000Z",
            "payload": {}, **extra}


def test_ids_times_durations_and_paths_become_placeholders_and_the_rest_is_kept() -> None:
    events = [
        event("rt-9f3a", 0, payload={"metadata": {"source": "/home/ann/p/councils/x.toml",
                                                  "council": {"timeout_ms": 5}},
                                     "durationMs": 12}),
        event("rt-9f3a", 1, causationId="evt.rt-9f3a.000000000000",
              payload={"conversationId": "rt-9f3a:room:review",
                       "turn": {"ts": 1767225600004, "text": "see rt-9f3a and rt-9f3ab"}}),
    ]
    original = copy.deepcopy(events)

    out = normalise_events(events)

    assert events == original
    assert out[0] == {
        "eventId": "<event:0>", "runId": "<run>", "sequence": 0, "type": "node.started",
        "timestamp": "<ts>",
        "payload": {"metadata": {"source": "<path:x.toml>", "council": {"timeout_ms": 5}},
                    "durationMs": "<duration>"},
    }
    assert out[1]["causationId"] == "<event:0>"
    assert out[1]["payload"] == {
        "conversationId": "<run>:room:review",
        # A run id is replaced as a whole token only, never inside a longer id.
        "turn": {"ts": "<ts>", "text": "see <run> and rt-9f3ab"},
    }


def test_two_runs_get_numbered_placeholders_and_outside_references_are_marked() -> None:
    events = [event("a-1", 0), event("b-1", 0, causationId="evt.a-1.000000000000"),
              event("b-1", 1, causationId="evt.zz.000000000042")]

    out = normalise_events(events)

    assert [(e["runId"], e["eventId"], e.get("causationId")) for e in out] == [
        ("<run>", "<event:0>", None),
        ("<run:2>", "<event:2:0>", "<event:0>"),
        ("<run:2>", "<event:2:1>", "<event:?1>"),
    ]


def test_the_same_run_under_another_id_and_clock_normalises_identically(
    release_team_path: Path,
) -> None:
    council = load(release_team_path)
    first = council.run(store="memory:", deterministic=True)
    second = council.run(store="memory:", run_id="another-id-0042",
                         clock=FixedClock(start_ms=1_000_000, step_ms=7))

    assert first.run_id != second.run_id
    assert dump_events(first.events) == dump_events(second.events)
    assert normalise_events(normalise_events(first.events)) == normalise_events(first.events)


def test_dump_is_sorted_pretty_json_with_a_final_newline() -> None:
    text = dump_events([{"runId": "r", "b": 1, "a": "é"}])

    assert text == '[\n  {\n    "a": "é",\n    "b": 1,\n    "runId": "<run>"\n  }\n]\n'
    assert json.loads(text) == [{"a": "é", "b": 1, "runId": "<run>"}]


def test_a_transcript_is_recognised_by_its_first_line(release_team_path: Path) -> None:
    transcript = load(release_team_path).run(store="memory:", deterministic=True).transcript

    assert is_transcript(transcript)
    assert is_transcript("council x: failed [TEAM_NODE_FAILED] boom\n")
    assert not is_transcript("council x: completed")  # no line end: not a rendered transcript
    assert not is_transcript("the council x: completed\n")
    assert not is_transcript(b"council x: completed\n")
    assert not is_transcript(["council x: completed\n"])

