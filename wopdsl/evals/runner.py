"""Run an evaluation: every arm on every case, ``repeats`` times, ``jobs`` at once.

Each run is an ordinary run of the arm's council on the store (its task the case's), with a
deterministic id (:mod:`wopdsl.evals.naming`) and the tags ``eval=…``, ``arm=…``, ``case=…``,
``repeat=…``. Before running one, the runner looks for it: a finished run is reused as it is,
an interrupted one (Ctrl-C, kill -9, a crash) is resumed where it stopped, so running the same
eval again never repeats finished work. ``jobs`` runs share one event loop and the embedded
engine; each model profile's ``max_concurrency`` still bounds its calls in flight. After each
run its checks are applied (judges run right after, in the same job) and the
``on_record`` callback hears of it (progress, a live table). :meth:`EvalRunner.stop` stops
cleanly: runs in flight are detached, resumable, and the outcome says it is partial.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wopdsl import Council, EventStore, Run
from wopdsl.evals.cassettes import Mode, RunCassette
from wopdsl.evals.checks import CheckResult, apply_check
from wopdsl.evals.judge import judge_council, judge_task, judgement
from wopdsl.evals.load import Arm, Check, Evaluation
from wopdsl.evals.naming import judge_run_id, run_id, run_metadata, run_tags
from wopdsl.evals.observe import Observation, observe
from wopdsl.evals.record import RunRecord
from wopdsl.evals.templates import TemplateError

__all__ = ["EvalOutcome", "EvalRunner", "Planned"]

_FINISHED = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class Planned:
    """One run the eval needs."""

    arm: Arm
    case: str
    repeat: int


@dataclass(slots=True)
class EvalOutcome:
    """What running an evaluation gave (the report is built from it)."""

    evaluation: Evaluation
    planned: int
    records: list[RunRecord] = field(default_factory=list)
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)
    """Recorded answers that did not match (``--offline``) or could not be recorded."""
    wall_s: float = 0.0
    runs_wall_s: float = 0.0
    """The runs' own time, summed (what the harness adds is ``wall_s`` minus this / jobs)."""

    @property
    def complete(self) -> bool:
        """Whether every planned run finished and was checked."""
        return not self.interrupted and len(self.records) == self.planned


OnRecord = Callable[[RunRecord, int, int], None]
"""Called after each run: the record, how many are done, how many there are."""


class EvalRunner:
    """Runs an :class:`~wopdsl.evals.Evaluation` on a store.

    Args:
        evaluation: The loaded eval file.
        store: Where runs are kept (and looked for).
        mode: ``live`` (call the models), ``record`` or ``offline`` (recorded answers).
        limit: Run only the first ``limit`` cases.
        on_record: Called after each run (see :data:`OnRecord`).
        on_judged: Called with each run's check results (OpenTelemetry export).
    """

    def __init__(self, evaluation: Evaluation, store: EventStore, *, mode: Mode = "live",
                 limit: int | None = None, on_record: OnRecord | None = None,
                 on_judged: Callable[[RunRecord, EventStore], None] | None = None) -> None:
        self.evaluation = evaluation
        self.store = store
        self.mode = mode
        self.cases = evaluation.cases[:limit] if limit else list(evaluation.cases)
        self._cases = {case.id: case for case in self.cases}
        self.on_record = on_record
        self.on_judged = on_judged
        self._councils: dict[tuple[str, str], tuple[Council, str]] = {}
        self._clients: dict[tuple[str, str], Any] = {}
        """Model profile clients shared by every run (see :meth:`_share_clients`)."""
        self._digests: dict[str, str] = {}
        """Per arm, its council's digest (the runs' ids hash it with the case's task)."""
        self._stop: asyncio.Event | None = None
        self._how = f"`wop eval {evaluation.shown} --record`"

    def plan(self) -> list[Planned]:
        """Every run, repeat by repeat, case by case, arm by arm (a partial eval is balanced)."""
        return [Planned(arm, case.id, repeat)
                for repeat in range(1, self.evaluation.spec.eval.repeats + 1)
                for case in self.cases for arm in self.evaluation.arms]

    def stop(self) -> None:
        """Stop soon: no new run starts; runs in flight are detached (resumable)."""
        if self._stop is not None:
            self._stop.set()

    async def arun(self) -> EvalOutcome:
        """Run what is planned; return when done or stopped."""
        plan = self.plan()
        outcome = EvalOutcome(self.evaluation, len(plan))
        self._stop = stop = asyncio.Event()
        queue = deque(plan)
        began = time.perf_counter()
        jobs = max(1, min(self.evaluation.spec.eval.jobs, len(plan)))
        workers = [asyncio.ensure_future(self._worker(queue, outcome)) for _ in range(jobs)]
        stopping = asyncio.ensure_future(stop.wait())
        failure: BaseException | None = None
        try:
            running: set[asyncio.Future[Any]] = set(workers)
            while running and failure is None:
                done, _ = await asyncio.wait({*running, stopping},
                                             return_when=asyncio.FIRST_COMPLETED)
                if stopping in done:
                    outcome.interrupted = True
                    break
                running -= done
                failure = next((t.exception() for t in done if t.exception()), None)
        finally:
            # Stopped, failed or cancelled: the jobs still running detach their runs.
            for task in (*workers, stopping):
                task.cancel()
            await asyncio.gather(*workers, stopping, return_exceptions=True)
            outcome.wall_s = time.perf_counter() - began
        if failure is not None:
            raise failure
        return outcome

    # -- one job ---------------------------------------------------------------------------

    async def _worker(self, queue: deque[Planned], outcome: EvalOutcome) -> None:
        while queue:
            planned = queue.popleft()
            began = time.perf_counter()
            record = await self._one(planned, outcome)
            outcome.runs_wall_s += time.perf_counter() - began
            outcome.records.append(record)
            if self.on_record is not None:
                self.on_record(record, len(outcome.records), outcome.planned)

    def _council(self, arm: Arm, case: str) -> tuple[Council, str]:
        """The arm's council with the case's task, and its digest (one per arm and case)."""
        key = (arm.id, case)
        found = self._councils.get(key)
        if found is None or self.mode != "live":
            digest = self._digests.get(arm.id)
            if digest is None:
                digest = self._digests[arm.id] = arm.council.spec.digest()
            found = _with_task(arm.council, arm.tasks[case], digest)
            if self.mode == "live":
                self._share_clients(found[0])
                self._councils[key] = found
        return found

    def _share_clients(self, council: Council) -> None:
        """Give ``council``'s llm members the eval's one client per model profile.

        So a profile's ``max_concurrency`` bounds every run's calls together (each council
        would have its own otherwise). Recording needs a client per run (each run's calls go
        to its own cassette).
        """
        from wopdsl.agents.llm import LlmAgent  # only llm members have clients

        for member in council.compile().members.values():
            agent = member.agent
            if isinstance(agent, LlmAgent):
                key = (agent.client.name, agent.client.profile.model_dump_json())
                agent.client = self._clients.setdefault(key, agent.client)

    async def _one(self, planned: Planned, outcome: EvalOutcome) -> RunRecord:
        arm, case, repeat = planned.arm, planned.case, planned.repeat
        evaluation = self.evaluation
        council, digest = self._council(arm, case)
        rid = run_id(evaluation.id, arm.id, case, repeat, digest)
        cassette = None if self.mode == "live" else RunCassette(
            evaluation.cassettes, arm.id, case, repeat, self.mode, how=self._how)
        completed, how = False, "ran"
        try:
            run, how = await self._drive(
                council, rid, cassette, run_tags(evaluation.id, arm.id, case, repeat),
                run_metadata(evaluation.id, arm.id, case, repeat, evaluation.shown))
            observation = observe(rid, self.store.read(rid), run.state)
            record = RunRecord.of(arm.id, case, repeat, observation, how)
            await self._check(record, observation, run, cassette)
            completed = observation.status == "completed"
        finally:
            if cassette is not None:
                outcome.problems.extend(cassette.finish(completed=completed,
                                                        reused=how == "reused"))
        if self.on_judged is not None:
            self.on_judged(record, self.store)
        return record

    async def _drive(self, council: Council, rid: str, cassette: RunCassette | None,
                     tags: list[str], metadata: dict[str, Any],
                     tap: int = 1) -> tuple[Run, str]:
        """Run (or resume, or reuse) one run to its end; return it and how."""
        store = self.store
        if store.exists(rid):
            run = council.open(rid, store)
            if await run.astatus() in _FINISHED:
                return run, "reused"
            how = "resumed"
        else:
            run = None
            how = "ran"
        if cassette is not None:
            cassette.tap(council, tap)
        if run is None:
            run = await council.astart(store, rid, tags=tags, metadata=metadata)
        try:
            if how == "resumed":
                await run.resume()
            else:
                await run.wait()
        except asyncio.CancelledError:
            await run.detach()  # stopped: the run stays resumable, nothing is appended
            raise
        return run, how

    async def _check(self, record: RunRecord, observation: Observation, run: Run,
                     cassette: RunCassette | None) -> None:
        case = self._cases[record.case].data
        for index, check in enumerate(self.evaluation.checks):
            if check.spec.kind == "judge":
                record.checks[check.id] = await self._judge(check, record, observation, case,
                                                            cassette, tap=2 + index)
            else:
                record.checks[check.id] = apply_check(check, observation, record.case, case,
                                                      run)

    async def _judge(self, check: Check, record: RunRecord, observation: Observation,
                     case: dict[str, Any], cassette: RunCassette | None,
                     tap: int) -> CheckResult:
        if observation.status != "completed":
            return judgement(check, None, observation, None)
        try:
            task = judge_task(check, observation, case)
        except TemplateError as exc:
            return CheckResult(error=f"the judge's prompt does not render: {exc}")
        profile = self.evaluation.spec.models[str(check.spec.model)]
        council = judge_council(check, profile, task)
        if self.mode == "live":
            self._share_clients(council)
        rid = judge_run_id(record.run_id, check.id, council.spec.digest())
        eval_id, shown = self.evaluation.id, self.evaluation.shown
        where = (eval_id, record.arm, record.case, record.repeat)
        await self._drive(council, rid, cassette, run_tags(*where, judge=check.id),
                          run_metadata(*where, shown, judges=record.run_id), tap=tap)
        judged = observe(rid, self.store.read(rid))
        record.add_judge_usage(judged.usage)
        return judgement(check, judged, observation, rid)


def _with_task(council: Council, task: str, digest: str) -> tuple[Council, str]:
    """The council with ``task``, and a digest of both (the council's digest and the task)."""
    spec = council.spec
    if task != spec.council.task:
        spec = spec.model_copy(update={"council": spec.council.model_copy(update={"task": task})})
    derived = Council.from_spec(spec)
    derived.source, derived.base_dir = council.source, council.base_dir
    derived.handlers.update(council.handlers)
    return derived, hashlib.sha256(f"{digest}\0{task}".encode()).hexdigest()
