"""The pytest plugin as users load it: entry point, fixtures, snapshot files, diffs, updates.

Each test runs an inner pytest session (pytester) on a small project, so what is checked is
exactly what a user sees: exit codes, the failure report and the files on disk.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.testing.helpers import INI, RELEASE_TEAM_TOML, run, snapshot_files

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

README_EXAMPLE = '''
from wopdsl.testing.snapshot import EventLogSnapshot

def test_release_team(run_council, snapshot):
    run = run_council("councils/release-team.toml")
    assert run.transcript == snapshot            # readable .md/.txt snapshot per test
    assert run.events == snapshot(extension_class=EventLogSnapshot)   # normalised JSON
'''

TRANSCRIPT = """\
council release-team: completed

room review (writer, reviewer)
  writer team/writer/1/0 @reviewer: Please review: Prepare a release note.
  reviewer team/reviewer/2/0 @writer: Reviewed team/writer/1/0: Please review: Prepare a release note.

results
  writer (writer): Finished after review team/reviewer/2/0: Prepare a release note.
  reviewer (reviewer): Draft checked.
"""  # noqa: E501 - transcript lines are as long as their messages.


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user project: strict pytest config and DESIGN.md §4's council file."""
    pytester.makefile(".ini", pytest=INI)
    councils = pytester.mkdir("councils")
    (councils / "release-team.toml").write_text(RELEASE_TEAM_TOML, encoding="utf-8")
    return pytester


def test_the_plugin_is_loaded_from_its_entry_point(project: pytest.Pytester) -> None:
    project.makepyfile(test_loaded='''
        def test_loaded(request, run_council, arun_council, snapshot):
            manager = request.config.pluginmanager
            assert manager.get_plugin("wopdsl").__name__ == "wopdsl.testing.plugin"
            assert manager.has_plugin("wopdsl-snapshot")
            assert type(snapshot).__name__ == "CouncilSnapshotAssertion"
    ''')

    run(project).assert_outcomes(passed=1)


def test_the_readme_example_writes_a_text_and_a_json_file_then_passes(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_release=README_EXAMPLE)

    missing = run(project)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*Snapshot 'test_release_team' does not exist!*"])

    created = run(project, "--snapshot-update")
    created.assert_outcomes(passed=1)
    created.stdout.fnmatch_lines(["*2 snapshots generated.*"])
    files = snapshot_files(project)
    assert sorted(files) == ["test_release/test_release_team.1.json",
                             "test_release/test_release_team.txt"]
    assert files["test_release/test_release_team.txt"] == TRANSCRIPT
    events = json.loads(files["test_release/test_release_team.1.json"])
    assert [e["type"] for e in events][:2] == ["run.started", "node.started"]
    assert events[-1]["type"] == "run.completed"
    assert {e["runId"] for e in events} == {"<run>"}
    assert {e["timestamp"] for e in events} == {"<ts>"}
    assert [e["eventId"] for e in events] == [f"<event:{n}>" for n in range(len(events))]
    assert events[0]["payload"]["metadata"]["council"]["council"]["id"] == "release-team"
    assert events[0]["payload"]["metadata"]["source"] == "<path:release-team.toml>"

    again = run(project)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*2 snapshots passed.*"])
    assert snapshot_files(project) == files


def _changed_council(project: pytest.Pytester) -> pytest.RunResult:
    """Record the README example's snapshots, change the reviewer's summary, run again."""
    project.makepyfile(test_release=README_EXAMPLE)
    run(project, "--snapshot-update").assert_outcomes(passed=1)
    council = project.path / "councils" / "release-team.toml"
    council.write_text(RELEASE_TEAM_TOML.replace("Draft checked.", "Draft approved."),
                       encoding="utf-8")
    changed = run(project)
    changed.assert_outcomes(failed=1)
    return changed


def test_a_changed_council_fails_with_a_small_readable_diff_and_update_rewrites(
    project: pytest.Pytester,
) -> None:
    changed = _changed_council(project)
    assert changed.ret == pytest.ExitCode.TESTS_FAILED
    report = changed.stdout.lines
    changed.stdout.fnmatch_lines([
        "*assert run.transcript == snapshot*",
        "E       assert [+ received] == [- snapshot]",
        "E         -   reviewer (reviewer): Draft checked.",
        "E         +   reviewer (reviewer): Draft approved.",
    ])
    diff = [line for line in report if line.startswith(("E         -", "E         +"))]
    assert diff == ["E         -   reviewer (reviewer): Draft checked.",
                    "E         +   reviewer (reviewer): Draft approved."]
    # The first failing assertion stops the test: the event log is compared once fixed.
    assert not any("Please review: Prepare" in line and line.startswith("E         ")
                   and "writer team/writer/1/0" in line for line in report)

    updated = run(project, "--snapshot-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["*2 snapshots updated.*"])
    files = snapshot_files(project)
    assert files["test_release/test_release_team.txt"] == TRANSCRIPT.replace(
        "Draft checked.", "Draft approved.")
    assert '"summary": "Draft approved."' in files["test_release/test_release_team.1.json"]
    run(project).assert_outcomes(passed=1)


def _guide_block(after: str) -> list[str]:
    """The lines of docs/guides/testing.md's first code block after the line ``after``."""
    guide = (ROOT / "docs" / "guides" / "testing.md").read_text(encoding="utf-8")
    block = guide.split(f"\n{after}\n", 1)[1].split("```\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def test_a_failed_assertion_leaves_the_later_snapshots_unused_as_the_guide_says(
    project: pytest.Pytester,
) -> None:
    changed = _changed_council(project)
    # What the guide quotes, word for word (syrupy's own report lines).
    quoted = [line for line in _guide_block(
        'The report under the failure above also counts a snapshot as unused:') if line]
    assert quoted == ["1 snapshot failed. 1 snapshot unused.",
                      "Re-run pytest with --snapshot-update to delete unused snapshots."]
    changed.stdout.fnmatch_lines([quoted[0], "", quoted[1]])
    before = snapshot_files(project)

    # The guide's warning: --snapshot-update while the test fails before its snapshot
    # assertions deletes the snapshots it did not reach.
    project.makepyfile(test_release=README_EXAMPLE.replace(
        "    assert run.transcript == snapshot",
        '    assert run.status == "failed"\n    assert run.transcript == snapshot'))
    run(project, "--snapshot-update").assert_outcomes(failed=1)
    assert sorted(before) == ["test_release/test_release_team.1.json",
                              "test_release/test_release_team.txt"]
    assert snapshot_files(project) == {}


def test_an_event_log_diff_shows_the_changed_json_lines(project: pytest.Pytester) -> None:
    project.makepyfile(test_events='''
        def test_events(run_council, snapshot):
            assert run_council("councils/release-team.toml").events == snapshot
    ''')
    run(project, "--snapshot-update").assert_outcomes(passed=1)
    council = project.path / "councils" / "release-team.toml"
    council.write_text(RELEASE_TEAM_TOML.replace("Draft checked.", "Draft approved."),
                       encoding="utf-8")

    changed = run(project)

    changed.assert_outcomes(failed=1)
    diff = [line for line in changed.stdout.lines
            if line.startswith(("E         -", "E         +"))]
    assert diff
    assert len(diff) <= 8
    # The council's digest changes with it; with CI=true pytest shows that line too.
    assert all("Draft" in line or "councilDigest" in line for line in diff)
    changed.stdout.fnmatch_lines(['E         -*"summary": "Draft checked."*',
                                  'E         +*"summary": "Draft approved."*'])


def test_unused_snapshots_fail_the_session_and_update_deletes_them(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_two='''
        def test_kept(run_council, snapshot):
            assert run_council("councils/release-team.toml").transcript == snapshot

        def test_dropped(run_council, snapshot):
            assert run_council("councils/release-team.toml").events == snapshot
    ''')
    run(project, "--snapshot-update").assert_outcomes(passed=2)
    assert sorted(snapshot_files(project)) == ["test_two/test_dropped.json",
                                               "test_two/test_kept.txt"]
    project.makepyfile(test_two='''
        def test_kept(run_council, snapshot):
            assert run_council("councils/release-team.toml").transcript == snapshot
    ''')

    unused = run(project)

    unused.assert_outcomes(passed=1)
    assert unused.ret != pytest.ExitCode.OK
    unused.stdout.fnmatch_lines(["*1 snapshot passed. 1 snapshot unused.*",
                                 "*Re-run pytest with --snapshot-update to delete unused*"])

    cleaned = run(project, "--snapshot-update")
    assert cleaned.ret == pytest.ExitCode.OK
    assert sorted(snapshot_files(project)) == ["test_two/test_kept.txt"]


def test_other_values_keep_syrupy_defaults_and_a_named_extension_wins(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_mixed='''
        from syrupy.extensions.amber import AmberSnapshotExtension
        from syrupy.extensions.json import JSONSnapshotExtension
        from wopdsl.testing.snapshot import EventLogSnapshot, TranscriptSnapshot

        def test_mixed(run_council, snapshot):
            run = run_council("councils/release-team.toml")
            assert {"status": run.status} == snapshot
            assert "plain text, not a transcript\\n" == snapshot
            assert run.transcript == snapshot(extension_class=JSONSnapshotExtension)
            assert run.transcript == snapshot.use_extension(AmberSnapshotExtension)(name="amb")
            assert run == snapshot(extension_class=TranscriptSnapshot)
            assert run.events == snapshot(name="log")
            assert run.events.to_list() == snapshot(name="list", extension_class=EventLogSnapshot)
    ''')

    run(project, "--snapshot-update").assert_outcomes(passed=1)

    files = snapshot_files(project)
    assert sorted(files) == ["test_mixed.ambr", "test_mixed/test_mixed.2.json",
                             "test_mixed/test_mixed.3.txt", "test_mixed/test_mixed[list].json",
                             "test_mixed/test_mixed[log].json"]
    assert files["test_mixed/test_mixed[list].json"] == files["test_mixed/test_mixed[log].json"]
    assert files["test_mixed/test_mixed.3.txt"] == TRANSCRIPT
    assert json.loads(files["test_mixed/test_mixed.2.json"]) == TRANSCRIPT
    assert "'status': 'completed'" in files["test_mixed.ambr"]
    assert "plain text, not a transcript" in files["test_mixed.ambr"]
    assert "# name: test_mixed[amb]" in files["test_mixed.ambr"]
    assert json.loads(files["test_mixed/test_mixed[log].json"])[0]["runId"] == "<run>"
    run(project).assert_outcomes(passed=1)


def test_a_value_an_extension_cannot_store_fails_with_a_clear_message(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_wrong='''
        from wopdsl.testing.snapshot import EventLogSnapshot, TranscriptSnapshot

        def test_not_text(snapshot):
            assert {"a": 1} == snapshot(extension_class=TranscriptSnapshot)

        def test_not_events(snapshot):
            assert "council x: completed\\n" == snapshot(extension_class=EventLogSnapshot)
    ''')

    result = run(project, "--snapshot-update")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*TypeError: TranscriptSnapshot stores run.transcript (text); got dict*",
        "*TypeError: EventLogSnapshot stores run.events (a list of event dicts); got str*",
    ])
    assert snapshot_files(project) == {}


def test_text_is_stored_byte_for_byte(project: pytest.Pytester) -> None:
    project.makepyfile(test_bytes='''
        from wopdsl import Council, Post, Reply

        def test_crlf_and_unicode(run_council, snapshot):
            council = Council("bytes", task="Keep every byte.")
            council.room("all", members=["a"])

            @council.member(role="sender")
            def a(turn):
                return Reply(summary="sent", posts=[
                    Post(room="all", text="one\\r\\ntwo\\tthree \\u00e9\\u2603 end\\r")])

            assert run_council(council).transcript == snapshot
    ''')

    run(project, "--snapshot-update").assert_outcomes(passed=1)

    raw = (project.path / "__snapshots__" / "test_bytes" / "test_crlf_and_unicode.txt")
    assert "one\r\n    two\tthree é☃ end\r\n".encode() in raw.read_bytes()
    run(project).assert_outcomes(passed=1)


def test_a_subclass_names_its_file_extension_in_either_spelling(
    project: pytest.Pytester,
) -> None:
    # syrupy 5 renamed `_file_extension` to `file_extension`: both work on every version.
    project.makepyfile(test_formats='''
        from wopdsl.testing.snapshot import TextSnapshot

        class Markdown(TextSnapshot):
            file_extension = "md"

        class Csv(TextSnapshot):
            _file_extension = "csv"

        def test_formats(snapshot):
            assert "# title\\n" == snapshot(extension_class=Markdown)
            assert "a,b\\n" == snapshot(extension_class=Csv)
    ''')

    run(project, "--snapshot-update").assert_outcomes(passed=1)

    assert snapshot_files(project) == {"test_formats/test_formats.md": "# title\n",
                                       "test_formats/test_formats.1.csv": "a,b\n"}
    run(project).stdout.fnmatch_lines(["*2 snapshots passed.*"])


def test_without_syrupy_the_council_fixtures_still_work(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain='''
        def test_plain(request, run_council):
            assert not request.config.pluginmanager.has_plugin("wopdsl-snapshot")
            run = run_council("councils/release-team.toml")
            assert run.status == "completed"
            assert "reviewer team/reviewer/2/0 @writer" in run.transcript
    ''')

    run(project, "-p", "no:syrupy").assert_outcomes(passed=1)


def test_sync_and_async_tests_both_run_councils(project: pytest.Pytester) -> None:
    project.makepyfile(test_loops='''
        import asyncio

        def test_sync(run_council):
            assert run_council("councils/release-team.toml").status == "completed"

        async def test_async(arun_council, run_council):
            asyncio.get_running_loop()
            run = await arun_council("councils/release-team.toml")
            assert run.status == "completed"
            # The sync fixture works inside a running loop too (on a loop of its own).
            again = run_council("councils/release-team.toml")
            assert again.transcript == run.transcript
    ''')

    run(project).assert_outcomes(passed=2)


def test_a_relative_path_is_found_beside_the_test_file_then_under_the_rootdir(
    project: pytest.Pytester,
) -> None:
    suite = project.mkpydir("suite")
    (suite / "councils").mkdir()
    (suite / "councils" / "release-team.toml").write_text(
        RELEASE_TEAM_TOML.replace('id = "release-team"', 'id = "local-team"'), encoding="utf-8")
    (project.path / "councils" / "root-only.toml").write_text(RELEASE_TEAM_TOML,
                                                              encoding="utf-8")
    (suite / "test_where.py").write_text(textwrap.dedent('''
        import pytest

        def test_beside_the_test_file_first(run_council):
            assert run_council("councils/release-team.toml").run_id == "local-team-1"

        def test_then_under_the_rootdir(run_council):
            assert run_council("councils/root-only.toml").run_id == "release-team-1"

        def test_a_missing_file_names_every_place_tried(run_council):
            with pytest.raises(FileNotFoundError, match=r"nowhere.toml.*tried .*suite.*\\)$"):
                run_council("councils/nowhere.toml")
    '''), encoding="utf-8")

    run(project).assert_outcomes(passed=3)
