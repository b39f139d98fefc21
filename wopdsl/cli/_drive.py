"""Private commands that execute a run and print its transcript live: run, resume, reply, fork."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar, cast

from wopdsl import Council, Run, StoreError, ValidationError, attach, fork
from wopdsl.cli._live import LivePrinter
from wopdsl.cli._output import (
    MEMORY_GONE,
    CommandError,
    exit_code_for_status,
    print_json,
    print_stop,
    resume_hint,
    run_json,
)
from wopdsl.cli._targets import (
    Context,
    check_same_council,
    council_of_run,
    load_council,
)
from wopdsl.cli._tool_check import opened_tools
from wopdsl.protocol.conversation import MAX_DEPTH, json_depth
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.state import TERMINAL

T = TypeVar("T")


def run_until_stop(main: Coroutine[Any, Any, int]) -> int:
    """Like ``asyncio.run``, but Ctrl-C returns at once (raising ``KeyboardInterrupt``).

    ``asyncio.run`` waits for the default executor on the way out, i.e. for every sync member
    handler still running in a worker thread; an interrupted command must not wait for them.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(main)
    interrupted = False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if interrupted:
            raise KeyboardInterrupt
        interrupted = True
        loop.call_soon_threadsafe(task.cancel)

    previous: Any = None
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        while True:
            try:
                return loop.run_until_complete(task)
            except asyncio.CancelledError:
                if interrupted:
                    raise KeyboardInterrupt from None
                raise
            except RuntimeError:
                if task.done():
                    raise
                # "Event loop stopped before Future completed": a handler stopped the loop
                # past guard_loop (type(loop).stop(loop)). The command is not done: go on.
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            if not interrupted:
                loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


async def follow_while(run: Run, printer: LivePrinter, job: Awaitable[T]) -> T:
    """Print the run's events live (``run.events``) while ``job`` executes the run.

    A quiet printer (``--json``) prints nothing, so nothing is followed.
    """
    if printer.quiet:
        return await job

    async def follow() -> None:
        printer.attach(asyncio.get_running_loop())
        store, run_id = run.store, run.run_id
        # The batches this process commits are fed in place, as they become durable (no
        # read, no decode); what it did not take (others' posts, a blind council's events)
        # is read from the log as each commit wakes the follower.
        stop = store.observe_commits(run_id, printer.committed)
        try:
            if stop is None:
                await _subscribe(run, printer)
                return
            while True:
                for event in await store.call(store.read, run_id, printer.last_sequence):
                    printer.feed(event)
                fed = printer.last_sequence
                await store.wait_for_change(run_id, fed)
                while printer.last_sequence > fed:
                    # Woken by a commit fed in place: the wait checks the log's length again
                    # and returns at once if anything is left to read.
                    fed = printer.last_sequence
                    await store.wait_for_change(run_id, fed)
        finally:
            if stop is not None:
                stop()
            printer.attach(None)

    follower = asyncio.ensure_future(follow())
    try:
        result = await job
    except BaseException:
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        with contextlib.suppress(StoreError):  # The job's own failure says more.
            printer.catch_up(run.store, run.run_id)
        raise
    follower.cancel()
    await asyncio.gather(follower, return_exceptions=True)
    # Whatever the follower had not reached yet (the last batch, a refused start).
    printer.catch_up(run.store, run.run_id)
    return result


async def _subscribe(run: Run, printer: LivePrinter) -> None:
    """Feed ``printer`` from ``run.store.subscribe`` (a store that does not tell its commits)."""
    # Every event until ``run.started`` says whether the printer folds; from then on, unless
    # it does, only the events it prints (the others are not even decoded).
    types = printer.wanted()
    while True:
        events = cast(AsyncGenerator[RunEventDoc, None], run.store.subscribe(
            run.run_id, printer.last_sequence, types=types))
        async with contextlib.aclosing(events):
            async for event in events:
                printer.feed(event)
                if types is None and printer.wanted() is not None:
                    break
            else:
                return
        types = printer.wanted()


def finish(ctx: Context, run: Run, printer: LivePrinter, *, as_json: bool) -> int:
    """Print the stop summary (or the JSON document) and return the exit code."""
    printer.catch_up(run.store, run.run_id)
    state = run.state
    if as_json:
        print_json(run_json(run.run_id, state), ctx.out)
    else:
        print_stop(run.run_id, state, ctx.out, ctx.err, store_flag=ctx.store_flag,
                   debug=ctx.debug, memory=ctx.is_memory, council=ctx.council_ref,
                   store=run.store)
    if as_json and state.status not in TERMINAL and ctx.is_memory:
        print(f"note: {MEMORY_GONE}", file=ctx.err, flush=True)
    return exit_code_for_status(state.status)


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    """``wop run FILE``: start a run and print its transcript live."""
    council = load_council(args.file)
    council.compile()  # Every declaration problem before anything is written.
    ctx.remember_council(council, args.file)
    store = ctx.store()
    if args.run_id is not None and store.exists(args.run_id):
        raise CommandError("STORE_CONFLICT", f"run {args.run_id} already exists in "
                           f"{ctx.store_shown}",
                           hint=f"choose another --run-id, or continue it with "
                                f"`{resume_hint(args.run_id, ctx.store_flag, ctx.council_ref)}`")

    tools = contextlib.AsyncExitStack()

    async def begin() -> tuple[Run, str]:
        # Tools are checked (MCP servers started, listed) before anything is written; the
        # servers stay up for the run (DESIGN.md §20). A server that is down fails the turns
        # that need it, as under `wop serve`.
        await tools.enter_async_context(opened_tools(council, down_ok=True))
        run = council.start(store, args.run_id, max_participants=args.max_participants)
        return run, f"run {run.run_id} (council {council.id}, store {ctx.store_shown})"

    async def until(run: Run) -> Any:
        async with tools:
            return await run.wait()

    return _live(ctx, LivePrinter(ctx.out, quiet=args.json), args.json, begin, until)


def _live(ctx: Context, printer: LivePrinter, as_json: bool,
          begin: Callable[[], Awaitable[tuple[Run, str | None]]],
          until: Callable[[Run], Awaitable[Any]]) -> int:
    """Run a command's run live and return its exit code.

    ``begin`` starts or opens the run and gives its header line; the run's messages are
    printed until ``until(run)`` returns, then its outcome.
    """

    async def go() -> int:
        run, header = await begin()
        ctx.run_id = run.run_id
        if header and not as_json:
            print(header, file=ctx.out, flush=True)
        await follow_while(run, printer, until(run))
        return finish(ctx, run, printer, as_json=as_json)

    return run_until_stop(go())


def _rebind(ctx: Context, run_id: str, target: str | None) -> Council:
    """The council to continue ``run_id`` with: from FILE / MODULE:ATTR, or from the log."""
    store = ctx.require_run(run_id)
    if target is None:
        council = council_of_run(store, run_id)
    else:
        council = load_council(target)
        check_same_council(council, store, run_id)
        ctx.remember_council(council, target)
    unbound = council.compile().unbound()
    if unbound:
        how = "pass the council file or MODULE:ATTR that binds them"
        raise CommandError(
            "DECLARATION_INVALID",
            f"run {run_id} has python members without a handler here: {', '.join(unbound)}",
            hint=f"{how}, e.g. `wop{ctx.store_flag} resume {run_id} mymodule:council`",
        )
    return council


def cmd_resume(ctx: Context, args: argparse.Namespace) -> int:
    """``wop resume RUN [FILE]``: continue an interrupted or waiting run."""
    council = _rebind(ctx, args.run, args.council)

    async def begin() -> tuple[Run, str]:
        run = council.open(args.run, ctx.store())
        return run, f"run {run.run_id} (council {council.id}, store {ctx.store_shown})"

    return _live(ctx, LivePrinter(ctx.out, quiet=args.json), args.json, begin, Run.resume)


def cmd_reply(ctx: Context, args: argparse.Namespace) -> int:
    """``wop reply RUN --room R [--as MEMBER] [--steer] TEXT``: post as the human, go on."""

    async def post(run: Run) -> None:
        await run.reply(args.text or "", room=args.room, as_=args.as_,
                        resume=_resume_payload(args), steer=args.steer)

    return act_then_follow(ctx, args, post)


def act_then_follow(ctx: Context, args: argparse.Namespace,
                    act: Callable[[Run], Awaitable[str | None]]) -> int:
    """Act on the stored run ``args.run`` (a post, a vote, a decision), then follow it.

    ``act`` gets the run (its python handlers re-bound from ``args.council``) and returns a
    line to print first, or ``None``. What the run logged before is known, not printed again.
    Exit codes as ``wop run``: the run goes on until it ends or waits.
    """
    council = _rebind(ctx, args.run, args.council)
    store = ctx.store()
    printer = LivePrinter.resuming(ctx.out, store, args.run, quiet=args.json)
    ctx.run_id = args.run

    async def begin() -> tuple[Run, str | None]:
        run = attach(store, args.run, council=council)
        return run, await act(run)

    return _live(ctx, printer, args.json, begin, Run.wait)


def _resume_payload(args: argparse.Namespace) -> dict[str, Any] | None:
    """The RFC 0005 §E payload of ``wop reply`` (``--payload``, ``--close``), if any."""
    given = [args.text is not None, args.payload is not None, bool(args.close)]
    if sum(given) != 1:
        raise ValidationError("give exactly one of TEXT, --payload JSON or --close",
                              hint='e.g. wop reply RUN --room R "text @member"')
    if args.close:
        return {"operation": "close", "outcome": _json_arg(args.outcome, "--outcome")}
    if args.payload is not None:
        raw = sys.stdin.read() if args.payload == "-" else args.payload
        payload = _json_arg(raw, "--payload")
        if not isinstance(payload, dict):
            raise ValidationError("--payload must be a JSON object",
                                  hint='e.g. {"operation": "exchange", "turn": {"content": '
                                       '{"text": "hi"}}}')
        return payload
    return None


def _json_arg(raw: str | None, flag: str) -> Any:
    """Parse a JSON argument strictly: no NaN/Infinity, no nesting past the intake limit."""
    if raw is None:
        return None

    def refuse_constant(name: str) -> Any:
        raise ValidationError(f"{flag} holds {name}, which is not JSON",
                              hint="use a number, a string or null")

    try:
        value = json.loads(raw, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{flag} is not valid JSON: {exc}",
                              hint="quote the JSON for your shell") from None
    except RecursionError:
        value = None
        depth = MAX_DEPTH + 1
    else:
        depth = json_depth(value)
    if depth > MAX_DEPTH:
        raise ValidationError(f"{flag} nests deeper than {MAX_DEPTH} levels",
                              hint="send a flatter JSON value")
    return value


def cmd_fork(ctx: Context, args: argparse.Namespace) -> int:
    """``wop fork RUN --from SEQ``: a new run from the source's log up to SEQ, continued."""
    council = _rebind(ctx, args.run, args.council)
    store = ctx.store()

    async def begin() -> tuple[Run, str]:
        new_id = fork(store, args.run, args.from_, mode=args.mode, run_id=args.run_id,
                      base_url=args.base_url)
        return council.open(new_id, store), (
            f"run {new_id} (fork of {args.run} at #{args.from_}, mode {args.mode}, "
            f"store {ctx.store_shown})")

    return _live(ctx, LivePrinter(ctx.out, quiet=args.json), args.json, begin, Run.resume)
