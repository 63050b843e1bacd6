"""``conformance fuzz --cluster``: one independent campaign per worker, findings merged here.

Each conformance worker of the cluster (:mod:`conformance.cluster.worker`) runs a
:class:`~conformance.fuzz.campaign.Campaign` of its own, with its own seed (the campaign's seed +
the shard's index), on the selected targets it holds, in its own worker processes, for what is
left of the budget; it starts from the findings already known here (the central index: ``--out``
and cases/regressions/), so it does not report them again. Its findings come back as Findings (the
case and its records), and this process writes them, de-duplicated by their signatures exactly as
one campaign de-duplicates its own (:meth:`Campaign._write`: a finding whose signature is written or
whose origin an earlier one covers is dropped; one needing fewer features supersedes those of this
campaign needing more), so a cluster campaign writes one set of case files and one summary.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from conformance.fuzz.campaign import Campaign, CampaignConfig, CampaignResult

#: seconds of the budget kept back for the shards' ending (their worker processes stopped), their
#: answers and the central writing: a tenth of the budget, within these bounds
RESERVE_S = (10.0, 90.0)
#: seconds past the budget (at least; or the budget again, if longer) after which a shard that has not
#: answered is given up: its worker left, or its campaign overran the budget (as a local campaign
#: may while hypothesis shrinks many findings)
GRACE_S = 300.0


@dataclass
class Shard:
    """What one worker's campaign needs: the settings of the command, and what is known."""

    index: int
    seed: int
    target_ids: list
    budget_s: float
    timeout: float
    scope: object
    max_examples: int | None
    shrink: bool
    tolerance: str | None
    prec: int
    plugins: dict
    expectations: object
    known: object                      # the central FindingIndex


@dataclass
class ShardAnswer:
    index: int
    worker: str
    host: str
    seed: int
    targets: list
    result: CampaignResult
    findings: list = field(default_factory=list)   # [(written_s, Finding)] in the order written


def run_shard(shard: Shard) -> ShardAnswer:
    """A Dask task: the shard's campaign on this worker's targets, in its own worker processes."""
    from conformance.cluster.worker import _plugin
    plugin = _plugin()
    targets = [t for t in plugin.targets if t.id in set(shard.target_ids)]
    # the Dask worker's own threads use the random module while hypothesis draws: not the strategies'
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    with tempfile.TemporaryDirectory(prefix="conformance-shard-") as tmp:
        config = CampaignConfig(targets=targets, out_dir=Path(tmp) / "findings", budget_s=shard.budget_s,
                                jobs=plugin.jobs, seed=shard.seed, started=time.monotonic(),
                                expectations=shard.expectations, database=None,  # type: ignore[arg-type]
                                timeout=shard.timeout, scope=shard.scope, max_examples=shard.max_examples,  # type: ignore[arg-type]
                                shrink=shard.shrink, tolerance=shard.tolerance, prec=shard.prec, plugins=shard.plugins)
        campaign = Campaign(config)
        campaign.index.merge(shard.known)  # type: ignore[arg-type]
        result = campaign.run() if targets else CampaignResult(seed=shard.seed)
        findings = [(w.written_s, w.finding) for w in result.written]
        result.written, result.superseded = [], []
    return ShardAnswer(shard.index, plugin.worker_name, plugin.hostname, shard.seed, [t.id for t in targets],
                       result, findings)


def merge(answers: list, central: Campaign, seed: int, elapsed_s: float) -> CampaignResult:
    """The shards' results as one, their findings written by ``central`` (de-duplicated)."""
    out = central.result
    out.seed = seed
    for a in answers:
        r = a.result
        for name in ("examples", "valid", "invalid", "skipped", "reduction_runs", "chunks"):
            setattr(out, name, getattr(out, name) + getattr(r, name))
        out.busy_s += r.busy_s
        out.ready_s = max(out.ready_s, r.ready_s)  # the shards start side by side
        out.interrupted = out.interrupted or r.interrupted
        for target_id, verdicts in r.verdicts.items():
            out.verdicts[target_id].update(verdicts)
        for name in ("new_by_target", "known_by_target", "expected_by_target", "expected_by_entry"):
            getattr(out, name).update(getattr(r, name))
        for key, at in r.first_new_at.items():
            out.first_new_at[key] = min(out.first_new_at.get(key, at), at)
        for key, at in r.first_failure_at.items():
            out.first_failure_at[key] = min(out.first_failure_at.get(key, at), at)
    ordered = sorted(((s, a.index, a.seed, f) for a in answers for s, f in a.findings), key=lambda x: x[:2])
    for _, _, shard_seed, finding in ordered:
        out.seed = shard_seed            # the seed written with the finding is the shard's that found it
        central._write(finding)
    out.seed = seed
    out.elapsed_s = elapsed_s
    return out


def shard_seeds(seed: int | None, n: int) -> tuple[int, list[int]]:
    base = seed if seed is not None else random.SystemRandom().randrange(2 ** 32)
    return base, [(base + i) % 2 ** 32 for i in range(n)]


def run_on_cluster(cluster, config: CampaignConfig, console) -> tuple[Campaign, CampaignResult, list[str]]:
    """One shard per conformance worker holding a selected target; (the central campaign, the
    merged result, problems: shards lost or failed)."""
    started = config.started if config.started is not None else time.monotonic()
    central = Campaign(dataclasses.replace(config, database=None))
    central._start = started
    wanted = {t.id for t in config.targets}
    holders = [w for w in cluster.workers if wanted & {t.id for t in w["targets"]}]
    base, seeds = shard_seeds(config.seed, len(holders))
    spent = time.monotonic() - started
    reserve = min(RESERVE_S[1], max(RESERVE_S[0], 0.1 * config.budget_s))
    budget = max(1.0, config.budget_s - spent - reserve)
    cap = config.max_examples
    futures = []
    for i, (w, seed) in enumerate(zip(holders, seeds)):
        shard = Shard(i, seed, sorted(wanted & {t.id for t in w["targets"]}), budget, config.timeout,
                      config.scope.for_targets(config.targets),
                      -(-cap // len(holders)) if cap else None, config.shrink, config.tolerance, config.prec,
                      config.plugins, config.expectations, central.index)
        console.print(f"shard {i}: worker {w['name']} on {w['host']}, seed {seed}, {len(shard.target_ids)} targets, "
                      f"{budget:.0f} s", highlight=False, markup=False, soft_wrap=True)
        futures.append((w, cluster.client.submit(run_shard, shard, workers=[w["address"]], allow_other_workers=False,
                                                 pure=False, key=f"fuzz-shard-{base}-{i}")))
    problems: list[str] = []
    answers = []
    deadline = time.monotonic() + budget + max(GRACE_S, budget)
    try:
        while time.monotonic() < deadline and not all(f.done() for _, f in futures):
            time.sleep(0.5)
    except KeyboardInterrupt:  # Ctrl-C: what the shards that answered found is still written
        central.result.interrupted = True
    for w, f in futures:
        if f.status == "finished":
            answers.append(f.result())
        elif f.status == "error":
            problems.append(f"the shard on worker {w['name']} ({w['host']}) failed: {f.exception()!r}"[:500])
        else:
            problems.append(f"the shard on worker {w['name']} ({w['host']}) did not answer (its worker left, or its "
                            f"campaign ran past the budget and the grace); its findings are lost")
            f.cancel()
    result = merge(answers, central, base, time.monotonic() - started)
    counts = Counter(a.host for a in answers)
    if counts:
        console.print("shards answered: " + ", ".join(f"{h} ×{n}" for h, n in counts.items())
                      + f"; {sum(len(a.findings) for a in answers)} findings came back, {len(result.written)} written "
                        f"after de-duplication by signature", highlight=False, markup=False)
    return central, result, problems
