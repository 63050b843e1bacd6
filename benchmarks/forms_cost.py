"""The execution forms' cost per pair, side by side with the plain (static, constant, fresh) form's.

    python benchmarks/forms_cost.py [--rounds 3] [--cases cases/gru cases/lstm] [--runtime onnxruntime ...]

For each runtime, each round runs the same selection once in the plain configuration and once in
each form (conformance/runtimes/forms.py ``CONFIGURATIONS``, on ``precision=pinned`` for OpenVINO),
in an order that rotates from round to round, each a fresh ``conformance run`` with ``--no-ablation``
and a warm oracle cache (a first, untimed round fills it). A pair's cost is the run's wall time inside
the engine (``run.json`` ``wall_s``) divided by its pairs, and the time inside the runtime's own calls
(``runtime_s``) divided by its pairs; the table gives each form's medians and their ratio to the
plain form's of the same round. Timings only: nothing here is asserted (docs/forms.md quotes them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.runtimes.forms import CONFIGURATIONS, compose, of

#: the plain configuration the forms of each runtime are compared with
PLAIN = {"onnxruntime": "default", "openvino": "precision=pinned"}


def configs(runtime: str) -> list[str]:
    base = PLAIN[runtime]
    return [base] + [compose(base, f) for f in CONFIGURATIONS]


def run_once(runtime: str, config: str, cases: list[str], specs: list[str], out: Path) -> dict:
    # every form key named: exactly this configuration, and the sliced forms on every case (the same pairs)
    explicit = "/".join([*(i for i in config.split("/") if "=" in i and i.split("=")[0] not in of(config))]
                        + [f"{k}={v}" for k, v in of(config).items()])
    args = [sys.executable, "-m", "conformance", "run", *cases, "--runtime", runtime, "--config", explicit,
            "--out", str(out), "--fresh", "--no-ablation", "--quiet", "--jobs", "1"]
    for spec in specs:
        args += ["--spec", spec]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
    info = json.loads((out / "run.json").read_text())
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    pairs = sum(1 for r in lines if r.get("config", "default") == config and r["verdict"] != "not-expressible")
    return {"pairs": pairs, "wall_s": info["wall_s"], "runtime_s": info["runtime_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["cases/gru/basic.yaml", "cases/lstm/sequence_lens.yaml",
                                                   "cases/rnn/basic.yaml"])
    ap.add_argument("--runtime", nargs="+", default=["onnxruntime", "openvino"])
    ap.add_argument("--spec", nargs="+", default=["onnx-14"])
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    opts = ap.parse_args()
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in opts.runtime:
            names = configs(runtime)
            for name in names:  # warm-up: the oracle cache, the case cache, the discovery cache
                run_once(runtime, name, opts.cases, opts.spec, Path(tmp) / "warm")
            per: dict = {n: {"wall": [], "runtime": [], "ratio": [], "pairs": 0} for n in names}
            for k in range(opts.rounds):
                order = names[k % len(names):] + names[:k % len(names)]
                got = {n: run_once(runtime, n, opts.cases, opts.spec, Path(tmp) / f"{runtime}-{k}-{i}")
                       for i, n in enumerate(order)}
                plain = got[names[0]]
                for n, g in got.items():
                    pairs = max(1, g["pairs"])
                    per[n]["pairs"] = g["pairs"]
                    per[n]["wall"].append(1e3 * g["wall_s"] / pairs)
                    per[n]["runtime"].append(1e3 * g["runtime_s"] / pairs)
                    per[n]["ratio"].append((g["wall_s"] / pairs) / (plain["wall_s"] / max(1, plain["pairs"])))
            figures[runtime] = {n: {"pairs": v["pairs"], "ms_per_pair": statistics.median(v["wall"]),
                                    "runtime_ms_per_pair": statistics.median(v["runtime"]),
                                    "vs_plain": statistics.median(v["ratio"])} for n, v in per.items()}
    print(f"{'runtime':12} {'configuration':40} {'pairs':>6} {'ms/pair':>8} {'in runtime':>10} {'× plain':>8}")
    for runtime, rows in figures.items():
        for name, f in rows.items():
            print(f"{runtime:12} {name:40} {f['pairs']:6d} {f['ms_per_pair']:8.1f} {f['runtime_ms_per_pair']:10.1f} "
                  f"{f['vs_plain']:8.2f}")
    if opts.json:
        opts.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
