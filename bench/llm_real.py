"""Councils of a real model: how many runs finish, how many repairs, what the engine adds.

Usage::

    python3 bench/llm_real.py [--url URL] [--seeds 10] [--label NAME]
                              [--set KEY=VALUE ...] [--json out.json]

``--url`` is the server's base URL (default ``$WOPDSL_TEST_LLAMA_URL``, which
``.ci/llama.sh`` prints: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct). Two
councils run over ``--seeds`` seeds each: ``councils/llm-review.toml`` (two model members)
and ``councils/llm-signoff.toml`` (two model members and a person in two rooms; the person
answered by a script: "Approved."). The seed reaches the server as the request's ``seed``
field, set by a loopback :class:`~wopdsl.testing.model_proxy.ModelProxy` that also records
every call. ``--set`` overrides keys of the councils' model profile (for a server that needs
``structured_output=json_object`` or ``stream=false``).

Reported per council:

* **finished**: runs that reached their natural end — completed, or waiting for the person —
  out of the seeds (the target: ≥ 9 of 10 on SmolLM2-135M); failures by code;
* **repairs / call**: ``envelope.retry.attempted`` per model call;
* **engine ms / call**: the run's wall time / its calls, beside **bare ms / call**: the same
  requests (as the proxy forwarded them, seed included) sent again one after another by the
  bare ``openai`` client through the same proxy. With a seeded server both get the same
  answers, so the difference is what the engine adds per call (prompts, checks, events,
  SQLite commits) — noisy on a shared machine, where the model's own time dominates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wopdsl import Council, load  # noqa: E402
from wopdsl.declare.toml import load_spec, spec_from_data  # noqa: E402
from wopdsl.testing.model_proxy import ModelProxy, ProxiedCall  # noqa: E402

COUNCILS = {"llm-review": HERE.parent / "councils" / "llm-review.toml",
            "llm-signoff": HERE.parent / "councils" / "llm-signoff.toml"}
TARGET_FINISHED = 0.9


async def one_run(name: str, url: str, seed: int, overrides: dict[str, Any],
                  folder: Path) -> dict[str, Any]:
    """One council run on one seed; its outcome, calls, repairs and timings."""
    with ModelProxy(url, set_fields={"seed": seed}) as proxy:
        os.environ["OPENAI_BASE_URL"] = proxy.url
        council = with_profile(COUNCILS[name], overrides)
        started = time.perf_counter()
        run = await council.arun(store=str(folder / f"{name}-{seed}.db"))
        replied = False
        if run.status == "waiting-input" and name == "llm-signoff" and not replied:
            replied = True
            await run.reply("Approved.", room="signoff", as_="owner")
            await run.wait()
        wall = time.perf_counter() - started
        calls = list(proxy.calls)
        bare = await bare_calls(proxy, calls)
    events = run.events
    return {
        "council": name, "seed": seed, "status": run.status,
        "error": (run.error or {}).get("message") if run.status == "failed" else None,
        "code": ((run.error or {}).get("details") or {}).get("nodeError")
        if run.status == "failed" else None,
        "calls": len(calls),
        "repairs": sum(1 for e in events if e["type"] == "envelope.retry.attempted"),
        "wall_s": wall, "bare_s": bare,
        "models": sorted({e["payload"]["model"] for e in events
                          if e["type"] == "provider.usage"}),
    }


def with_profile(path: Path, overrides: dict[str, Any]) -> Council:
    """The council in ``path`` with keys of its ``default`` model profile replaced."""
    if not overrides:
        return load(path)
    data = load_spec(path).definition()
    data["models"]["default"].update(overrides)
    return Council.from_spec(spec_from_data(data, source=str(path)), source=path)


async def bare_calls(proxy: ModelProxy, calls: list[ProxiedCall]) -> float:
    """The same requests, one after another, with the bare ``openai`` client (seconds)."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url, api_key="not-set", max_retries=0, timeout=600)
    total = 0.0
    try:
        for call in calls:
            body = dict(call.body or {})
            extra = {"seed": body.pop("seed")} if "seed" in body else {}
            started = time.perf_counter()
            if body.get("stream"):
                stream = await client.chat.completions.create(**body, extra_body=extra)
                async for _chunk in stream:
                    pass
            else:
                await client.chat.completions.create(**body, extra_body=extra)
            total += time.perf_counter() - started
    finally:
        await client.close()
    return total


def server_info(url: str) -> dict[str, Any]:
    """What the server says about itself: model id, llama.cpp build (when it tells)."""
    info: dict[str, Any] = {}
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
            info["model"] = json.load(response)["data"][0]["id"]
        root = url.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(f"{root}/props", timeout=10) as response:
            props = json.load(response)
        info["build"] = props.get("build_info")
        info["model_path"] = props.get("model_path")
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return info


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    finished = [r for r in runs if r["status"] in ("completed", "waiting-input")]
    calls = sum(r["calls"] for r in runs)
    codes: dict[str, int] = {}
    for r in runs:
        if r["status"] == "failed":
            codes[r["code"] or "?"] = codes.get(r["code"] or "?", 0) + 1
    return {
        "runs": len(runs), "finished": len(finished), "failures": codes,
        "calls": calls, "repairs_per_call": sum(r["repairs"] for r in runs) / max(1, calls),
        "engine_ms_per_call": 1000 * sum(r["wall_s"] for r in runs) / max(1, calls),
        "bare_ms_per_call": 1000 * sum(r["bare_s"] for r in runs) / max(1, calls),
        "median_calls_per_run": statistics.median(r["calls"] for r in runs) if runs else 0,
    }


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("WOPDSL_TEST_LLAMA_URL"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--label", default="llama.cpp llama-server")
    parser.add_argument("--councils", default=",".join(COUNCILS))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.url:
        parser.error("no server: pass --url or set WOPDSL_TEST_LLAMA_URL (.ci/llama.sh)")
    url = args.url.rstrip("/")
    overrides = {k: parse_value(v) for k, v in (s.split("=", 1) for s in args.set)}
    info = server_info(url)
    print(f"server: {args.label} at {url}; model {info.get('model')}; "
          f"build {info.get('build')}; profile overrides {overrides or 'none'}")
    report: dict[str, Any] = {"server": args.label, "info": info, "overrides": overrides,
                              "councils": {}}
    with tempfile.TemporaryDirectory() as folder:
        for name in args.councils.split(","):
            runs = []
            for seed in range(1, args.seeds + 1):
                outcome = await one_run(name, url, seed, overrides, Path(folder))
                runs.append(outcome)
                print(f"  {name} seed {seed}: {outcome['status']}"
                      f"{' ' + str(outcome['code']) if outcome['code'] else ''}, "
                      f"{outcome['calls']} calls, {outcome['repairs']} repairs"
                      f"{': ' + outcome['error'][:160] if outcome['error'] else ''}",
                      flush=True)
            report["councils"][name] = {"summary": summarise(runs), "runs": runs}
    print()
    print("| server | council | finished | repairs / call | engine ms / call | "
          "bare ms / call | calls |")
    print("|---|---|---|---|---|---|---|")
    met = True
    for name, entry in report["councils"].items():
        s = entry["summary"]
        met &= s["finished"] >= TARGET_FINISHED * s["runs"]
        failures = ", ".join(f"{n} {c}" for c, n in s["failures"].items())
        print(f"| {args.label} | {name} | {s['finished']} / {s['runs']}"
              f"{f' ({failures})' if failures else ''} | {s['repairs_per_call']:.2f} | "
              f"{s['engine_ms_per_call']:.0f} | {s['bare_ms_per_call']:.0f} | {s['calls']} |")
    print(f"\ntarget: >= {TARGET_FINISHED:.0%} of runs finish: {'met' if met else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
