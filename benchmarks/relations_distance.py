"""How far a correct runtime is from itself: the self-consistency relations' distances on real runtimes.

    python benchmarks/relations_distance.py [--cases cases/gru cases/lstm cases/rnn] [--spec onnx-14 ...]

Runs the selection with ``--config relations=on`` (every case, the relations' derived calls beside
each pair: conformance/run/relations.py) on onnxruntime and on OpenVINO with its precision pinned,
and prints, per runtime and relation, how many pairs checked it, the largest distance (units in the
last place of the larger magnitude compared) among the relations that hold, the 99th percentile, and
how many broke the bound (``relations.ULPS``). docs/forms.md quotes the figures: they are what the
bound of 8 units rests on. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.run.relations import ULPS

CONFIGS = {"onnxruntime": "relations=on", "openvino": "precision=pinned/relations=on"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["cases/gru", "cases/lstm", "cases/rnn"])
    ap.add_argument("--spec", nargs="+", default=["onnx-14", "openvino-opset5"])
    ap.add_argument("--jobs", default="2")
    opts = ap.parse_args()
    distances: dict = defaultdict(list)
    broken: dict = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for runtime, config in CONFIGS.items():
            out = Path(tmp) / runtime
            args = [sys.executable, "-m", "conformance", "run", *opts.cases, "--runtime", runtime, "--config", config,
                    "--out", str(out), "--no-ablation", "--quiet", "--artifacts", "full", "--no-expectations",
                    "--jobs", opts.jobs]
            for spec in opts.spec:
                args += ["--spec", spec]
            subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
            for line in (out / "results.jsonl").read_text().splitlines():
                record = json.loads(line)
                for found in record.get("relations") or ():
                    if not found.get("checked"):
                        continue
                    ulps = float(found["ulps"])
                    key = (runtime, found["relation"])
                    (distances if ulps <= ULPS else broken)[key].append(ulps if ulps <= ULPS else record["case"])
    print(f"{'runtime':12} {'relation':12} {'checked':>8} {'max held':>9} {'99th':>7} {'broke':>6}")
    for key in sorted(set(distances) | set(broken)):
        held = sorted(distances.get(key, []))
        p99 = held[min(len(held) - 1, int(0.99 * len(held)))] if held else float("nan")
        print(f"{key[0]:12} {key[1]:12} {len(held) + len(broken.get(key, [])):8d} {max(held, default=0):9.2f} "
              f"{p99:7.2f} {len(broken.get(key, [])):6d}")
        for case in broken.get(key, [])[:3]:
            print(f"{'':26} broke on {case}")


if __name__ == "__main__":
    main()
