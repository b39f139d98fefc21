"""Private commands that look into stored runs from outside: ``wop diff`` and ``wop trace``."""

from __future__ import annotations

import argparse

from wopdsl.cli._output import EXIT_FAILED, EXIT_OK, print_json
from wopdsl.cli._targets import Context
from wopdsl.store import EventStore, describe_target, open_store, require_run


def cmd_diff(ctx: Context, args: argparse.Namespace) -> int:
    """``wop diff RUN_A RUN_B [--store-b STORE]``: exit 0 when equal, 1 when they differ."""
    from wopdsl.projections.diff import diff_runs

    store_a = ctx.require_run(args.run_a, read_only=True)
    store_b: EventStore = store_a
    if args.store_b is not None:
        store_b = open_store(args.store_b, create=False, read_only=True)
    try:
        if store_b is not store_a:
            require_run(store_b, args.run_b, where=describe_target(args.store_b),
                        runs=f"wop --store {describe_target(args.store_b)} runs")
        else:
            ctx.require_run(args.run_b, read_only=True)
        diff = diff_runs(store_a.read(args.run_a), store_b.read(args.run_b))
    finally:
        if store_b is not store_a:
            store_b.close()
    if args.json:
        print_json(diff.to_json(), ctx.out)
    else:
        ctx.out.write(diff.text())
        ctx.out.flush()
    return EXIT_OK if diff.equal else EXIT_FAILED
