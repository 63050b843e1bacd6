"""The GPU check on the GPU machine: the targets found there, then three stages, each a ``conformance``
command in a process of its own, reading the bundle's oracle results (docs/gpu.md, "The check").

1. **corpus**: ``conformance run`` of the corpus on every GPU target and on the CPU targets of the same
   runtimes (the report puts a case's verdicts on both devices side by side), with the ablation held
   to a share of the time;
2. **production**: the bundle's production files on the GPU targets, in shards run side by side (each
   shard's judging is a process of its own, so the declared judgements at production shapes use every
   core), merged into one report by ``conformance report``;
3. **fuzz**: ``conformance fuzz`` on the GPU targets for a short budget.

Nothing is installed or downloaded: the commands run the packages present. A stage that runs past its
limit is stopped and the summary says so.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.gpucheck import bundle as bundles

#: the devices that are not GPUs: the check's GPU targets are the others
NOT_GPU = ("CPU", "default")


@dataclass
class Plan:
    """What the check runs: the GPU targets' runtimes and devices, and the stages' settings."""

    bundle: Path
    out: Path
    runtimes: list[str]
    devices: list[str]
    cases: Path
    jobs: int
    shards: int
    fuzz_budget: str
    timeout: float = 600.0
    ablation_time: float = 60.0
    plugins: list[str] = field(default_factory=list)
    #: the seconds a stage may take before it is stopped
    stage_limit: float = 420.0
    #: the fuzz campaign also ends after this many cases (0: its budget alone)
    fuzz_examples: int = 0
    #: the GPU targets' runtimes have CPU targets too: the corpus runs them beside (their CPU twins)
    cpu_twins: bool = True


@dataclass
class Stage:
    name: str
    out: Path
    status: int | None = None       # the command's exit status; None: stopped at its limit
    seconds: float = 0.0
    log: str = ""
    shards: list = field(default_factory=list)


def gpu_targets(targets) -> list:
    """The targets on a GPU (every device but the CPU's)."""
    return [t for t in targets if t.device not in NOT_GPU]


def _selection(plan: Plan, devices) -> list[str]:
    args = [a for r in plan.runtimes for a in ("--runtime", r)] + [a for d in devices for a in ("--device", d)]
    return args + [a for p in plan.plugins for a in ("--runtime-plugin", p)]


def _command(*args) -> list[str]:
    return [sys.executable, "-m", "conformance", *map(str, args)]


def _run(stage: Stage, commands: list[list[str]], env: dict, limit: float) -> Stage:
    """Run the commands side by side (each its own process), their output into the stage's folder."""
    stage.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    procs = []
    for i, cmd in enumerate(commands):
        log = open(stage.out / (f"command-{i}.log" if len(commands) > 1 else "command.log"), "w")
        procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True),
                      log))
    statuses: list[int | None] = []
    for proc, log in procs:
        left = max(1.0, limit - (time.monotonic() - started))
        try:
            statuses.append(proc.wait(timeout=left))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            statuses.append(None)
        finally:
            log.close()
    stage.seconds = time.monotonic() - started
    stage.shards = statuses
    stage.status = None if None in statuses else max((s for s in statuses if s is not None), default=0)
    return stage


def corpus(plan: Plan, env: dict) -> Stage:
    stage = Stage("corpus", plan.out / "corpus")
    devices = ["CPU", *plan.devices] if plan.cpu_twins else plan.devices
    cmd = _command("run", plan.cases, *_selection(plan, devices), "--jobs", plan.jobs,
                   "--timeout", plan.timeout, "--ablation-time", plan.ablation_time, "--fresh", "--quiet",
                   "--out", stage.out)
    return _run(stage, [cmd], env, plan.stage_limit)


def shards_of(files: list[str], shards: int) -> list[list[str]]:
    """``files`` (smallest first, as the bundle lists them) in at most ``shards`` groups, round-robin from
    the largest: with a shard per file, each file is a shard of its own."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(shards, len(files))))]
    for i, file in enumerate(reversed(files)):
        groups[i % len(groups)].append(file)
    return groups


def production(plan: Plan, env: dict, files: list[str]) -> Stage:
    """The production files in ``plan.shards`` shards (each about the same number of output elements:
    round-robin over the files, largest first), then one report of them all."""
    stage = Stage("production", plan.out / "production")
    if not files:
        stage.status, stage.log = 0, "no production file in the bundle"
        return stage
    groups = shards_of(files, plan.shards)
    per_shard = max(1, plan.jobs // len(groups))
    commands = [_command("run", *group, "--tier", "production", *_selection(plan, plan.devices), "--jobs", per_shard,
                         "--timeout", plan.timeout, "--no-ablation", "--fresh", "--quiet",
                         "--out", stage.out / f"shard-{i}")
                for i, group in enumerate(groups)]
    _run(stage, commands, env, plan.stage_limit)
    shards = [stage.out / f"shard-{i}" for i in range(len(groups))
              if (stage.out / f"shard-{i}" / "results.jsonl").is_file()]
    if shards:
        merged = subprocess.run(_command("report", *shards, "--out", stage.out / "report"), env=env,
                                capture_output=True, text=True, timeout=plan.stage_limit)
        stage.log = (merged.stdout + merged.stderr)[-2000:]
    return stage


def fuzz(plan: Plan, env: dict) -> Stage:
    stage = Stage("fuzz", plan.out / "fuzz")
    cmd = _command("fuzz", "--budget", plan.fuzz_budget, *_selection(plan, plan.devices), "--jobs", plan.jobs,
                   "--timeout", plan.timeout, "--out", stage.out / "findings", "--database", stage.out / "database",
                   "--regressions", plan.cases / "regressions")
    if plan.fuzz_examples:
        cmd += ["--max-examples", str(plan.fuzz_examples)]
    return _run(stage, [cmd], env, plan.stage_limit)


#: the stages, in the order they run
STAGES = ("corpus", "production", "fuzz")


def check(plan: Plan, manifest: dict, console=None, only=STAGES) -> list[Stage]:
    """The stages (``only``: some of STAGES), one after the other (each uses the whole machine)."""
    env = bundles.environment(plan.bundle)
    stages = []
    steps = {"corpus": lambda: corpus(plan, env),
             "production": lambda: production(plan, env, manifest.get("production_files", [])),
             "fuzz": lambda: fuzz(plan, env)}
    for name, step in ((n, steps[n]) for n in STAGES if n in only):
        if console:
            console.print(f"gpu-check: {name} ...", highlight=False)
        stage = step()
        if console:
            said = "stopped at its limit" if stage.status is None else f"exit {stage.status}"
            console.print(f"gpu-check: {name}: {said}, {stage.seconds:.0f} s", highlight=False)
        stages.append(stage)
    return stages
