"""``wop validate`` reads each a2a member's agent card and says what is wrong with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.a2a.conftest import TOKEN, TOKEN_ENV, council_toml, free_port, serving


def _validate(tmp_path: Path, text: str, **env: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "council.toml"
    path.write_text(text, encoding="utf-8")
    environ = {**os.environ, TOKEN_ENV: f"Bearer {TOKEN}", **env}
    for name in [k for k, v in env.items() if v == ""]:
        del environ[name]
    done = subprocess.run([sys.executable, "-m", "wopdsl", "validate", str(path)], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)
    assert TOKEN not in done.stdout + done.stderr
    return done


def _line_of(text: str, key: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(key))


def test_validate_shows_the_agents_card(tmp_path, agent):
    done = _validate(tmp_path, council_toml(agent))
    assert done.returncode == 0, done.stderr
    assert "analyst [market analyst] engine=a2a" in done.stdout
    assert "agent 'Market analyst' 1.0.0: skills size; streams" in done.stdout


def test_a_card_unfit_for_a_member_is_refused_saying_why(tmp_path, log, monkeypatch):
    with serving(log, A2A_TEST_CARD="bare", A2A_TEST_STREAMING="0") as url:
        text = council_toml(url)
        done = _validate(tmp_path, text)
    assert done.returncode == 2
    assert f"council.toml:{_line_of(text, 'url =')}:1: members[2] (analyst).url" in done.stderr
    assert "is not fit for a member: it has no name; it lists no skills" in done.stderr


def test_an_agent_that_cannot_be_reached_is_refused_at_its_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    done = _validate(tmp_path, council_toml(url))
    assert done.returncode == 2
    assert "members[2] (analyst).url" in done.stderr
    assert "could not read its agent card" in done.stderr
    assert "hint: start the agent" in done.stderr


def test_a_wrong_token_is_refused_without_showing_it(tmp_path, agent):
    done = _validate(tmp_path, council_toml(agent), **{TOKEN_ENV: f"Bearer {TOKEN}x"})
    assert done.returncode == 2
    assert "401" in done.stderr


def test_an_unset_header_variable_is_named(tmp_path, agent):
    done = _validate(tmp_path, council_toml(agent), **{TOKEN_ENV: ""})
    assert done.returncode == 2
    assert "members[2] (analyst).headers.Authorization" in done.stderr
    assert "ANALYST_TOKEN, which is not set" in done.stderr


def test_a2a_keys_are_checked_in_the_declaration(tmp_path):
    text = council_toml("http://127.0.0.1:9").replace('url = "http://127.0.0.1:9"\n', "")
    done = _validate(tmp_path, text.replace('engine = "script"\ninitial_turn = false',
                                            'engine = "script"\nurl = "http://x"\n'
                                            'initial_turn = false'))
    assert done.returncode == 2
    assert "engine 'a2a' needs url" in done.stderr
    assert "url is only for engine 'a2a' (this member's engine is 'script')" in done.stderr
