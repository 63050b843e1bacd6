"""``conformance run``: its options, handed to the run session (:func:`conformance.run.session.run_session`),
and what the command does around it (the gate's inputs, targets found meanwhile, SIGTERM, a broken pipe)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from pathlib import Path

import click

from conformance.cli import main
from conformance.cli.options import (
    DEFAULT_CASES,
    EXIT_USAGE,
    GATE_HELP,
    case_limits,
    is_slice,
    limit_options,
    parse_size,
    runtime_plugin_option,
    selected,
    tier_option,
)
from conformance.run.engine import REPEAT_UNDER
from conformance.run.select import SelectError, compile_expression
from conformance.selection import CONFIG_HELP, CONVERTER_HELP


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--runtime", "runtimes", multiple=True,
              help="Only targets of this runtime (repeatable), e.g. onnxruntime, openvino, onnx-reference, or a "
                   "plugin's name.")
@runtime_plugin_option
@click.option("--spec", "spec_filter", multiple=True,
              help="Only these spec versions (prefix match, repeatable), e.g. onnx-14.")
@click.option("--device", "devices", multiple=True,
              help="Only targets on this device (repeatable), e.g. CPU, or CPU/precision=pinned as target ids name it.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help=CONFIG_HELP)
@click.option("--converter", "converters", multiple=True, metavar="NAME", help=CONVERTER_HELP)
@click.option("-k", "expr", default="", help="Select cases by id: substrings with and/or/not, like pytest -k.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256), help="Worker processes.")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Run the pairs on a Dask cluster of `conformance worker`s (tcp://HOST:8786), or on a LocalCluster "
                   "of this machine (local); results are written here as without.")
@click.option("--workers", default=None, type=click.IntRange(1, 1024),
              help="With --cluster local: how many workers (default 2), each with --jobs worker processes; with an "
                   "address: wait for this many workers before starting (default 1).")
@click.option("--out", "out_dir", default=Path("reports/latest"), show_default=True, type=click.Path(path_type=Path),
              help="Output folder.")
@click.option("--timeout", default=60.0, show_default=True, type=float,
              help="Seconds one runtime call may take before it is a timeout.")
@click.option("--fresh", is_flag=True, help="Start over instead of resuming the results in --out.")
@click.option("--tolerance", "tolerance_policy", default=None, metavar="POLICY",
              help="Judge with a named policy of conformance/compare/policies.yaml instead of the derived bound "
                   "(e.g. interim-dtype-v1); a case's own override still wins.")
@click.option("--prec", default=128, show_default=True, type=click.IntRange(64, 4096), help="Oracle precision in bits.")
@click.option("--no-entry-points", is_flag=True,
              help="Ignore runtimes registered in the conformance.runtimes entry-point group.")
@click.option("--expectations", "expectation_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help=GATE_HELP)
@click.option("--no-expectations", is_flag=True, help="Gate on no expectations: every divergence is new.")
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="An earlier results.jsonl: fail only on pairs that were not failing there.")
@click.option("--ablation/--no-ablation", default=True, show_default=True,
              help="Explain failing groups by re-running them with one feature removed at a time (OUT/clusters.json).")
@click.option("--ablation-budget", default=4000, show_default=True, type=click.IntRange(0),
              help="At most this many ablation runs.")
@click.option("--ablation-time", default=600.0, show_default=True, type=click.FloatRange(0),
              help="At most this many seconds of ablation; groups left over are listed as not ablated.")
@click.option("--memory-limit", default=None, metavar="SIZE", callback=lambda ctx, p, v: parse_size(v),
              help="Memory one worker (with what it started) may hold, e.g. 4GiB or 500MB; 0 for none. "
                   "Default: half the machine's memory shared by --jobs workers.")
@click.option("--repeat-under", default=REPEAT_UNDER, show_default=True, type=click.FloatRange(0), metavar="S",
              help="Run a pair whose spec leaves output elements undefined a second time when its call took at most "
                   "S seconds: an undefined element that changes between the runs is garbage. 0: never.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress bar, configurations or per-target table: the new divergences by cause, warnings "
                   "and the totals.")
@click.option("--verbose", "-v", is_flag=True,
              help="Also every new divergent pair with its message and repro, and the known causes.")
@click.option("--artifacts", type=click.Choice(("failing", "full")), default="failing", show_default=True,
              envvar="CONFORMANCE_ARTIFACTS",
              help="failing: programs, case pages and full results.jsonl lines only for divergences the gate does not "
                   "excuse (summary lines for the rest); full: everything.")
@click.option("--batch/--no-batch", default=True, show_default=True,
              help="Send a runtime that takes several programs per call (WebNN) its pairs in batches; a pair that is "
                   "not pass in a batch is run again alone before it is recorded.")
@tier_option
@limit_options
def run(paths, runtimes, plugins, spec_filter, devices, configs, converters, expr, jobs, cluster, workers, out_dir,
        timeout, fresh, prec, no_entry_points, expectation_paths, no_expectations, baseline, ablation, ablation_budget,
        ablation_time, tolerance_policy, memory_limit, repeat_under, quiet, tier, verbose, artifacts, batch):
    """Run cases (default: ./cases) on every runtime present and write OUT/results.jsonl, gated on
    ./expectations/ where it exists (--expectations, --no-expectations).

    Exit status: 0 when no verdict is a new failure; 1 when a verdict is fail, rejected (a valid
    case refused), accepted-invalid, crash, timeout or error and neither an expectation nor the
    baseline covers it; 2 when a case file has an error (with file:line; the other files' cases
    still run), on a usage error (a malformed expectations file or baseline, a -k or a target
    selection that selects nothing).
    """
    command_started = time.monotonic()   # what the summary's time counts from: the whole command
    from rich.console import Console

    from conformance.case.load import load_paths
    from conformance.files import Busy, WriteError, is_write_error, write_error
    from conformance.run.probe import PROBE_TIMEOUT
    from conformance.run.session import RunConfig, run_session
    from conformance.selection import check_tolerance, select_targets
    console = Console(stderr=False)
    sliced = is_slice(paths, expr, default_gate=not expectation_paths)
    paths = paths or tuple(Path(p) for p in DEFAULT_CASES if Path(p).exists())
    if not paths:
        raise click.UsageError("no case paths given and ./cases does not exist")
    check_tolerance(tolerance_policy)
    if cluster and converters:
        raise click.UsageError("--converter runs on this machine: a cluster's workers do not make converter targets "
                               "(docs/converters.md)")
    try:
        select = compile_expression(expr)
    except SelectError as exc:
        raise click.UsageError(str(exc)) from exc
    # the targets are found in throwaway processes while this one loads the expectations and the
    # corpus; with --cluster, the cluster's workers have the targets (opened below)
    finding = None if cluster else Meanwhile(select_targets, spec_filter, plugins, runtimes, devices,
                                             not no_entry_points, configs, converters)
    try:
        expectations, base = _gate_inputs(expectation_paths, baseline, no_expectations)
        cases, load_errors = load_paths(paths, limits=case_limits(), tier=tier)
    finally:
        if finding is not None:
            targets, skipped, _ = finding.result()  # its usage error first, as when it ran alone
    if base is not None and base.skipped:
        console.print(f"warning: {baseline}: {base.skipped} line(s) that are not results skipped (the first at line "
                      f"{base.first_skipped})", highlight=False, markup=False, soft_wrap=True)
    cases = selected(cases, select, expr)
    grid = None
    if cluster:
        from conformance.cluster.client import open_cluster
        grid = open_cluster(cluster, workers, jobs, memory_limit, spec_filter, plugins, runtimes, devices,
                            not no_entry_points, configs, measure_timeout=min(timeout, PROBE_TIMEOUT))
        targets, skipped = grid.targets, grid.skipped
    config = RunConfig(out_dir=Path(out_dir), jobs=jobs, timeout=timeout, fresh=fresh, prec=prec,
                       tolerance=tolerance_policy, repeat_under=repeat_under, batch=batch, expectations=expectations,
                       baseline=base, ablation=ablation, ablation_budget=ablation_budget, ablation_time=ablation_time,
                       memory_limit=memory_limit, quiet=quiet, verbose=verbose, artifacts=artifacts, cluster=grid,
                       sliced=sliced, started=command_started, configs=tuple(configs))
    try:
        with grid or contextlib.nullcontext(), ended_by_sigterm():
            code = run_session(cases, targets, config, console, load_errors, skipped)
    except Busy as exc:
        console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except WriteError as exc:
        console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and not stdout_closed():
            # click takes every broken pipe for a closed stdout (`| head`) and ends with 1, silently
            import traceback
            traceback.print_exc()
            console.print(f"error: a pipe inside the suite broke ({exc}): an internal error; the results "
                          f"written so far in {out_dir} are kept", highlight=False, markup=False, soft_wrap=True)
            sys.exit(EXIT_USAGE)
        if not is_write_error(exc):
            raise
        console.print(f"error: {write_error(exc, exc.filename or out_dir)}", highlight=False, markup=False,
                      soft_wrap=True)
        sys.exit(EXIT_USAGE)
    sys.exit(code)


def stdout_closed() -> bool:
    """Whether this process's standard output is a pipe whose reader has gone (``| head``
    finished): the one broken pipe that is not the suite's own fault."""
    import select
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured), or no poll here
        return False


class Meanwhile:
    """``func(*args)`` in a thread of its own, started now: :meth:`result` waits for its value or
    raises its exception. For work that waits on short-lived processes (discovery); never for work
    that starts a process meant to outlive the thread (a pool's worker dies with the thread that
    started it: PR_SET_PDEATHSIG)."""

    def __init__(self, func, *args):
        self._value, self._error = None, None
        self._thread = threading.Thread(target=self._call, args=(func, args), daemon=True,
                                        name=f"conformance-{getattr(func, '__name__', 'call')}")
        self._thread.start()

    def _call(self, func, args) -> None:
        try:
            self._value = func(*args)
        except BaseException as exc:  # noqa: BLE001 - raised again by result()
            self._error = exc

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _gate_inputs(expectation_paths, baseline, no_expectations=False):
    """(Expectations or None, Baseline or None) of --expectations (default: ./expectations/ where
    it exists) and --baseline; a malformed file is a usage error."""
    from conformance.gate import ExpectationsError
    from conformance.gate import expectation_paths as gate_paths
    try:
        expectation_paths = gate_paths(expectation_paths, no_expectations)
    except ExpectationsError as exc:
        raise click.UsageError(str(exc)) from exc
    if not expectation_paths and not baseline:
        return None, None
    from conformance.gate import Expectations
    from conformance.gate.baseline import Baseline
    try:
        return (Expectations.load(expectation_paths) if expectation_paths else None,
                Baseline.load(baseline) if baseline else None)
    except ExpectationsError as exc:
        raise click.UsageError(str(exc)) from exc


@contextlib.contextmanager
def ended_by_sigterm():
    """SIGTERM ends the run the way Ctrl-C does: every worker group is killed on the way out."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
