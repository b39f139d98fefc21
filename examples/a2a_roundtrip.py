"""A2A both ways: a council convenes another council, served as an A2A agent, as a member.

Starts ``wop serve examples/a2a-desk.toml --a2a`` on a free loopback port (the desk council
becomes an A2A agent), then runs ``examples/a2a-board.toml``, whose ``desk`` member is that
agent (``engine = "a2a"``). The desk asks which market to size: its A2A task waits for input,
so the board's run waits too, the question shown in the board's room. The answer given here
(what ``wop reply RUN --room board "Germany"`` does from a shell) goes back to the same task,
once; the desk's answer becomes the desk member's post. Run it with
``python examples/a2a_roundtrip.py`` (after ``make install``); the logs land in ``.wop/``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from wopdsl import load

HERE = Path(__file__).resolve().parent


def serve_desk(store: str) -> tuple[subprocess.Popen[bytes], str]:
    """``wop serve examples/a2a-desk.toml --a2a`` on a free port; its agent's URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    host = subprocess.Popen([sys.executable, "-m", "wopdsl", "--store", store, "serve",
                             str(HERE / "a2a-desk.toml"), "--a2a", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/a2a/desk"
    for _ in range(300):  # its card answers once it serves
        try:
            with urllib.request.urlopen(url + "/.well-known/agent-card.json", timeout=1):
                return host, url
        except OSError:
            time.sleep(0.1)
    host.kill()
    raise SystemExit("wop serve did not start")


def main(folder: Path) -> str:
    """Run the board against the served desk, answer the desk's question; the transcript."""
    host, url = serve_desk(str(folder / "desk.db"))
    try:
        board = (HERE / "a2a-board.toml").read_text(encoding="utf-8")
        here = folder / "a2a-board.toml"  # the board, its desk at the port served now
        here.write_text(board.replace("http://127.0.0.1:8000/a2a/desk", url), encoding="utf-8")
        run = load(here).run(store=str(folder / "board.db"))
        question = next(iter(run.state.asks.open.values())).question
        print(f"{run.status}: the desk asks: {question}")
        run.reply_sync("Germany")  # as `you`, in the room where the question waits
        print(f"{run.wait_sync()}: {run.run_id}")
        return run.transcript
    finally:
        host.terminate()
        host.wait(10)


if __name__ == "__main__":
    Path(".wop").mkdir(exist_ok=True)
    print(main(Path(".wop")))
