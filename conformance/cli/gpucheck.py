"""``conformance gpu-check``: the corpus, a short fuzz campaign and the production tier on every GPU target
present, in the minutes a lent GPU machine is held, from a bundle of the oracle's results made
beforehand (``--prepare``, on any machine): docs/gpu.md."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from conformance.cli.options import parse_size, runtime_plugin_option


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@click.command("gpu-check")
@click.argument("bundle", type=click.Path(path_type=Path), default=Path("reports/gpu-check-bundle"))
@click.option("--prepare", is_flag=True,
              help="Write the bundle (the oracle's results for the corpus and the production files that fit "
                   "--production-bytes) instead of running the check; on any machine, beforehand.")
@click.option("--spec", "specs", multiple=True,
              help="--prepare: the spec versions whose results the bundle holds (repeatable; default: the specs of "
                   "the runtimes with GPU targets: torch, onnx-14, openvino-opset5, webnn-cr-20260122).")
@click.option("--production-bytes", default="128MiB", show_default=True, callback=lambda c, p, v: parse_size(v),
              help="--prepare: the most the production files' results may take, gzipped (smallest files first).")
@click.option("--cases", "case_root", default=Path("cases"), show_default=True, type=click.Path(path_type=Path),
              help="The corpus (its production/ and regressions/ folders included).")
@click.option("--out", "out_dir", default=Path("reports/gpu-check"), show_default=True,
              type=click.Path(path_type=Path, file_okay=False), help="Where the check writes its stages and check.md.")
@click.option("-j", "--jobs", default=None, type=click.IntRange(1), help="Worker processes (default: one per core).")
@click.option("--shards", default=None, type=click.IntRange(1),
              help="Production shards run side by side (default: one per core, at most one per file).")
@click.option("--fuzz-budget", default="60s", show_default=True, help="The fuzz campaign's budget.")
@click.option("--fuzz-examples", default=0, type=click.IntRange(0),
              help="The fuzz campaign also ends after this many cases (0: its budget alone).")
@click.option("--stage-limit", default=420.0, show_default=True, type=click.FloatRange(1),
              help="Seconds a stage may take before it is stopped.")
@click.option("--timeout", default=600.0, show_default=True, type=click.FloatRange(1),
              help="Seconds one runtime call may take.")
@click.option("--stage", "only", multiple=True, type=click.Choice(("corpus", "production", "fuzz")),
              help="Only this stage (repeatable; default: all three).")
@click.option("--runtime", "runtimes", multiple=True, help="Only targets of this runtime (repeatable).")
@runtime_plugin_option
def gpucheck_command(bundle, prepare, specs, production_bytes, case_root, out_dir, jobs, shards, fuzz_budget,
                     fuzz_examples, stage_limit, timeout, only, runtimes, plugins):
    """Run the GPU check from BUNDLE (default reports/gpu-check-bundle), or make BUNDLE with --prepare.

    Exit status: 0 when no stage found a new divergence; 1 when one did, or a stage was stopped at its
    limit; 2 when no GPU target is present (each gap is listed with its reason) or BUNDLE is not one.
    """
    from rich.console import Console

    from conformance.gpucheck import bundle as bundles
    from conformance.gpucheck import stages as steps
    from conformance.gpucheck.summary import summarize
    from conformance.selection import select_targets
    console = Console(stderr=False)
    jobs = jobs or _cores()
    if prepare:
        manifest = bundles.prepare(bundle, [case_root], tuple(specs) or bundles.GPU_SPECS,
                                   production_bytes if production_bytes is not None else bundles.PRODUCTION_BYTES,
                                   jobs=jobs, console=console)
        console.print(f"bundle {bundle}: {manifest['results']} oracle results, {manifest['bytes'] / 2**20:.1f} MiB; "
                      f"{len(manifest['production_files'])} production files, "
                      f"{len(manifest['production_left_out'])} left out; {len(manifest['failed'])} failed",
                      highlight=False, soft_wrap=True)
        sys.exit(2 if manifest["failed"] or manifest["case_errors"] else 0)
    try:
        manifest = bundles.read(bundle)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    targets, skipped, _ = select_targets((), plugins, runtimes, ())
    gpu = steps.gpu_targets(targets)
    gaps = [(getattr(s, "name", "?"), getattr(s, "reason", str(s))) for s in skipped]
    if not gpu:
        summarize(out_dir, [], manifest, [], gaps)
        for name, why in gaps:
            console.print(f"skipped {name}: {why}", highlight=False, soft_wrap=True, markup=False)
        console.print("no GPU target present: nothing to check (check.md lists the gaps)", highlight=False)
        sys.exit(2)
    plan = steps.Plan(bundle=bundle, out=out_dir, runtimes=sorted({t.runtime for t in gpu}),
                      devices=sorted({t.device for t in gpu}), cases=case_root, jobs=jobs,
                      shards=shards or jobs, fuzz_budget=fuzz_budget, timeout=timeout,
                      plugins=list(plugins), stage_limit=stage_limit, fuzz_examples=fuzz_examples,
                      cpu_twins=any(t.device == "CPU" and t.runtime in {g.runtime for g in gpu} for t in targets))
    console.print(f"gpu-check: {len(gpu)} GPU targets ({', '.join(plan.devices)}: {', '.join(plan.runtimes)}); "
                  f"bundle of {manifest.get('results')} oracle results", highlight=False, soft_wrap=True)
    found = summarize(out_dir, steps.check(plan, manifest, console, tuple(only) or steps.STAGES), manifest, gpu, gaps)
    console.print(f"gpu-check: exit {found['status']}; {out_dir / 'check.md'}", highlight=False)
    sys.exit(found["status"])
