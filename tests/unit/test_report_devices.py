"""The devices side by side (conformance/report/devices.py): one runtime and spec version on two
devices or more, the cases whose verdicts part between them, in index.html, summary.md and a case's
own page, from records built here; nothing of it where no runtime ran on two devices.

This module holds the unit tier's tests of it (no runtime, no process); the browser's look at it:
tests/corpus/test_html_report.py."""

from __future__ import annotations

from conformance.report.devices import differing, side_by_side
from conformance.report.html import render
from conformance.report.markdown import MAX_DEVICE_ROWS, summary
from conformance.report.view import slug
from conformance.results import Record, records_of

TORCH = "torch-2.11.0+cu130"
CPU = f"{TORCH}/CPU@torch"
TF32 = f"{TORCH}/CUDA/precision=default→tf32@torch"
PINNED = f"{TORCH}/CUDA/precision=pinned@torch"
SEGV = "worker died from signal SIGSEGV"
ASSERT = "CUDA error: device-side assert triggered"


def rec(case: str, target: str, verdict: str, message: str = "", **extra) -> Record:
    """A record with the fields a target's record has, taken from the parts a test names (the report
    itself never parses the id: the fields are what it reads)."""
    runtime, rest = target.split("/", 1)
    where, spec = rest.rsplit("@", 1)
    device, _, config = where.partition("/")
    name, version = runtime.rsplit("-", 1)
    precision = ""
    if config.startswith("precision=default→"):
        config, precision = "default", config.rsplit("→", 1)[1]
    line = {"case": case, "target": target, "spec": spec, "spec_family": spec.split("-")[0], "runtime": name,
            "runtime_family": name, "runtime_version": version, "device": device, "config": config or "default",
            "target_precision": precision, "op": "GRU",
            "form": "sequence", "dtype": "float32", "expect": "valid", "verdict": verdict,
            "message": message or f"{verdict} on {device}", "repro": f"conformance run -k '{case}'"}
    line.update(extra)
    return Record.from_dict(line)


def two_device_records() -> list[Record]:
    recs = []
    for i in range(5):   # agree: pass everywhere
        for t in (CPU, TF32, PINNED):
            recs.append(rec(f"gru/basic[i={i}]", t, "pass", op="GRU"))
    # a valid GRU case that passes on CPU and pinned CUDA, fails in tf32
    recs += [rec("gru/long[seq=64]", CPU, "pass", op="GRU"),
             rec("gru/long[seq=64]", TF32, "fail", "Y[0,0,0,1] = 0.5, but should be within 0.49 … 0.491", op="GRU"),
             rec("gru/long[seq=64]", PINNED, "pass", op="GRU")]
    # the same invalid LSTM case crashes on both, in two ways
    recs += [rec("invalid/lstm/W_shape", CPU, "crash", SEGV, op="LSTM", expect="invalid"),
             rec("invalid/lstm/W_shape", TF32, "crash", ASSERT, op="LSTM", expect="invalid"),
             rec("invalid/lstm/W_shape", PINNED, "crash", ASSERT, op="LSTM", expect="invalid")]
    # a case only CPU ran: no side by side
    recs.append(rec("rnn/cpu-only", CPU, "fail", op="RNN"))
    # another runtime on one device only: no group
    recs += [rec("gru/long[seq=64]", "onnxruntime-1.32.0/CPU@onnx-14", "fail", op="GRU"),
             rec("gru/basic[i=0]", "onnxruntime-1.32.0/CPU@onnx-14", "pass", op="GRU")]
    return recs


def test_groups_columns_rows_and_pairs():
    groups = side_by_side(two_device_records())
    assert [g.label for g in groups] == ["torch 2.11.0+cu130 @torch"]   # onnxruntime ran on CPU only
    g = groups[0]
    assert [c.label for c in g.columns] == ["CPU", "CUDA/precision=default→tf32", "CUDA/precision=pinned"]
    assert g.devices == ["CPU", "CUDA"]
    # the differing case first, then the one that fails alike; agreeing passes and CPU-only cases are out
    assert [r.case for r in g.rows] == ["gru/long[seq=64]", "invalid/lstm/W_shape"]
    long, crash = g.rows
    assert long.differ and [c.verdict if c else None for c in long.cells] == ["pass", "fail", "pass"]
    assert not crash.differ and crash.failing and [c.message for c in crash.cells if c] == [SEGV, ASSERT, ASSERT]
    # the pairs: CPU against each CUDA configuration, never the two CUDA configurations together
    assert [(p.left.label, p.right.label) for p in g.pairs] == [("CPU", "CUDA/precision=default→tf32"),
                                                                ("CPU", "CUDA/precision=pinned")]
    tf32, pinned = g.pairs
    assert (tf32.n_agree, tf32.n_differ, tf32.differences) == (6, 1, [("pass", "fail", 1)])
    assert tf32.agree == {"pass": 5, "crash": 1}
    assert (pinned.n_agree, pinned.n_differ, pinned.differences) == (7, 0, [])


def test_every_row_for_a_case_page_and_the_spec_versions_apart():
    one = [r for r in two_device_records() if r.case == "gru/basic[i=0]"]
    assert side_by_side(one) and not side_by_side(one)[0].rows          # agreeing passes: no row in the index
    assert [r.case for r in side_by_side(one, every=True)[0].rows] == ["gru/basic[i=0]"]   # but on its page
    # the same runtime under two spec versions is two groups: a spec version is never compared with another
    recs = [rec("gru/a", f"ort-1.0/{d}@{s}", v) for s in ("onnx-14", "onnx-22")
            for d, v in (("CPU", "pass"), ("CUDA", "rejected" if s == "onnx-22" else "pass"))]
    groups = side_by_side(recs)
    assert [g.label for g in groups] == ["ort 1.0 @onnx-14", "ort 1.0 @onnx-22"]
    assert [len(g.rows) for g in groups] == [0, 1]
    # two versions of one runtime on different devices are not one runtime on two devices
    versions = [rec("gru/a", "ort-1.0/CPU@onnx-14", "pass"), rec("gru/a", "ort-1.1/CUDA@onnx-14", "fail")]
    assert side_by_side(versions) == []


def test_differing_rows_most_severe_first():
    recs = []
    for case, cuda in (("gru/a", "fail"), ("gru/b", "crash"), ("gru/c", "rejected"), ("gru/d", "pass")):
        recs += [rec(case, "ort-1.0/CPU@onnx-14", "pass"), rec(case, "ort-1.0/CUDA@onnx-14", cuda)]
    recs += [rec("gru/e", "ort-1.0/CPU@onnx-14", "timeout"), rec("gru/e", "ort-1.0/CUDA@onnx-14", "timeout")]
    found = [(row.case, row.worst) for _, row in differing(side_by_side(recs))]
    assert found == [("gru/b", "crash"), ("gru/a", "fail"), ("gru/c", "rejected")]   # e agrees: not differing


def test_index_case_page_and_summary_show_it(tmp_path):
    recs = two_device_records()
    index = render(recs, {"suite": "t"}, tmp_path, clusters=None).read_text()
    section = index.split('id="devices"', 1)[1].split("</section>", 1)[0]
    assert "torch 2.11.0+cu130 @torch" in section and "onnxruntime" not in section
    assert section.count('class="frow dev-row') == 2 and section.count('class="frow dev-row differ"') == 1
    assert SEGV in section and "device-side assert triggered" in section   # the messages below the verdicts
    assert f'title="{SEGV}"' in section                                     # and on hover
    assert "rnn/cpu-only" not in section and "gru/basic" not in section
    assert 'href="index.html#devices"' in index                             # the navigation names it
    page = (tmp_path / "cases" / f"{slug('gru/long[seq=64]')}.html").read_text()
    own = page.split('id="devices"', 1)[1].split("</section>", 1)[0]
    assert own.count('<td class="dev-cell"') == 3 and "should be within 0.49" in own
    assert 'id="devices"' not in (tmp_path / "cases" / f"{slug('rnn/cpu-only')}.html").read_text()
    md = summary(recs, {"suite": "t"}, clusters=None)
    part = md.split("## Devices side by side", 1)[1].split("\n## ", 1)[0]
    assert "`CPU` vs `CUDA/precision=default→tf32`: 6 agree, 1 differ (pass / fail 1)" in part
    assert "`CPU` vs `CUDA/precision=pinned`: 7 agree, 0 differ" in part
    table = [line for line in part.splitlines() if line.startswith("| ") and "`" in line]
    assert table == ["| fail | `gru/long[seq=64]` | `torch 2.11.0+cu130 @torch` | `CPU` **pass** · "
                     "`CUDA/precision=default→tf32` **fail** · `CUDA/precision=pinned` **pass** |"]
    assert "1 case diverges alike on every device of its runtime" in part


def test_summary_caps_its_table_with_the_worst_first():
    recs = []
    for i in range(MAX_DEVICE_ROWS + 5):
        recs += [rec(f"gru/n[i={i:02d}]", "ort-1.0/CPU@onnx-14", "pass"),
                 rec(f"gru/n[i={i:02d}]", "ort-1.0/GPU@onnx-14", "fail" if i else "crash")]
    md = summary(recs, {"suite": "t"}, clusters=None)
    rows = [line for line in md.split("## Devices side by side", 1)[1].splitlines() if line.startswith("| ")
            and "`gru/n" in line]
    assert len(rows) == MAX_DEVICE_ROWS and rows[0].startswith("| crash | `gru/n[i=00]`")
    assert "… and 5 more" in md
    assert "`CPU` vs `GPU`: 0 agree, 25 differ (pass / crash 1, pass / fail 24)" in md   # the worst pair first


def test_nothing_appears_without_a_runtime_on_two_devices(tmp_path):
    recs = [r for r in two_device_records() if r.device == "CPU"]
    assert side_by_side(recs) == []
    index = render(recs, {"suite": "t"}, tmp_path, clusters=None).read_text()
    page = index.split("</style>", 1)[1]      # the stylesheet is the same for every report
    for absent in ('id="devices"', "#devices", "Devices side by side", "dev-group", "dev-row", "dev-pair"):
        assert absent not in page, absent
    md = summary(recs, {"suite": "t"}, clusters=None)
    assert "device" not in md.lower()
    for page in (tmp_path / "cases").glob("*.html"):
        assert 'id="devices"' not in page.read_text()
    # records that do not say their device (an older or foreign line) are left out, not guessed at
    bare = records_of([{"case": "rnn/x", "target": "rt/CPU@onnx-7", "verdict": "crash"},
                       {"case": "rnn/x", "target": "rt/GPU@onnx-7", "verdict": "pass"}])
    assert side_by_side(bare) == []
