"""A new user's first hour (issue 37): the gate excuses a pair only for the defect its entry names,
one default gate for every command, an empty selection is a usage error, case-file errors say
"did you mean" once per file:line, errors name what they are about, the fuzzer leaves a record of a
clean campaign, repro commands name one configuration, and nox installs once.

Everything here is the suite's own machinery on small records and files; the real runtimes are in
the slow modules (tests/runtime/test_hostile.py runs the plugin that returns Python lists).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_first_hour.py."""

from __future__ import annotations

import importlib
import json
import re
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.case.load import load_paths
from conformance.gate import Expectations, ExpectationsError, classify, expectation_paths
from conformance.gate.apply import cause_of, regate
from conformance.gate.audit import audit
from conformance.results import Record
from tests.conftest import ROOT

T = "rt-1.0/CPU@onnx-14"


def _expectations(tmp_path: Path, entries: str, targets: str = "rt-*") -> Expectations:
    path = tmp_path / "exp.yaml"
    path.write_text(f'targets: "{targets}"\nentries:\n{entries}')
    return Expectations.load([path])


def _entry(features: str, reason: str, verdict: str = "fail") -> str:
    return (f"  - features: {features}\n    verdict: {verdict}\n    kind: known-bug\n    reason: {reason}\n"
            f"    upstream: none found (searched 2026-11-27)\n")


def _rec(case: str, verdict: str, features, target: str = T) -> Record:
    return Record.from_dict({"case": case, "target": target, "verdict": verdict, "features": list(features)})


def _cluster(cause: str, features, pairs, ablated: str) -> dict:
    by_target: dict = {}
    for case, target in pairs:
        by_target.setdefault(target, []).append(case)
    return {"cause": cause, "features": list(features), "cases_by_target": by_target,
            "ablations": [{"case": f"{ablated}~{features[0] if features else 'x'}", "target": T}]}


# -- the gate: an entry excuses a pair only for the defect it names --------------------------------

def test_of_two_entries_the_one_naming_the_clusters_cause_excuses_the_pair(tmp_path):
    exp = _expectations(tmp_path, _entry('["act=*"]', "ignores the activations attribute")
                        + _entry("[clip]", "ignores clip"))
    rec = _rec("gru/clip[clip=0.5,act=Relu]", "fail", ["clip", "act=Relu"])
    assert classify(rec, exp)["expected"]["reason"] == "ignores the activations attribute"   # the first, blind
    cluster = _cluster("fails whenever clip is set", ["clip"], [(rec.case, T)], rec.case)
    (judged,) = regate([rec], exp, None, [cluster])
    assert judged.gate == "expected" and judged.expected["reason"] == "ignores clip"
    assert judged.expected["names_cause"] is True
    assert audit([judged], exp, [cluster]).off_cause == []


def test_an_entry_excusing_a_cause_it_does_not_name_is_warned_once_with_its_count(tmp_path):
    exp = _expectations(tmp_path, _entry("[P]", "ignores the peephole input P"))
    recs = [_rec(f"lstm/input_forget[k={k}]", "fail", ["P", "input_forget"]) for k in range(3)]
    cluster = _cluster("fails whenever input_forget is 1", ["input_forget"], [(r.case, T) for r in recs],
                       recs[0].case)
    judged = regate(recs, exp, None, [cluster])
    assert all(r.gate == "expected" and r.expected["names_cause"] is False for r in judged)
    lines = audit(judged, exp, [cluster]).lines()
    assert lines == [("warning", f"expectation at {exp.entries[0].where} (ignores the peephole input P) excuses "
                                 f"3 pairs whose cause is not among its features: fails whenever input_forget is 1")]


def test_an_entry_naming_no_feature_the_ablation_can_name_is_not_warned_and_is_preferred_over_another_defects(
        tmp_path):
    exp = _expectations(tmp_path, _entry("[reverse]", "reverse computes forward")
                        + _entry("[[nan, inf]]", "a NaN stops propagating"))
    rec = _rec("gru/nonfinite[direction=reverse]", "fail", ["reverse", "nan", "B", "initial_h"])
    cluster = _cluster("fails whenever a bias B is given", ["B"], [(rec.case, T)], rec.case)
    (judged,) = regate([rec], exp, None, [cluster])
    assert judged.expected["reason"] == "a NaN stops propagating" and "names_cause" not in judged.expected
    assert audit([judged], exp, [cluster]).off_cause == []


def test_a_pair_has_its_clusters_cause_only_with_the_features_of_the_case_the_ablation_took_apart():
    reverse = _rec("rnn/x[direction=reverse]", "fail", ["reverse"])
    both = _rec("rnn/x[direction=bidirectional]", "fail", ["reverse", "bidirectional"])
    cluster = _cluster("fails whenever the direction is reverse", ["direction"],
                       [(reverse.case, T), (both.case, T)], reverse.case)
    features = {r.case: r.features for r in (reverse, both)}
    assert cause_of(cluster, reverse, features) == {"reverse"}
    assert cause_of(cluster, both, features) is None   # the group's first case was one-direction


def test_an_entry_whose_features_also_cover_passing_pairs_is_reported_with_the_counts(tmp_path):
    exp = _expectations(tmp_path, _entry("[reverse]", "reverse computes forward"))
    recs = [_rec("rnn/d[direction=reverse]", "fail", ["reverse"]),
            _rec("rnn/d[direction=bidirectional]", "pass", ["reverse", "bidirectional"]),
            _rec("gru/d[direction=bidirectional]", "pass", ["reverse", "bidirectional"])]
    judged = regate(recs, exp, None, [])
    checked = audit(judged, exp, [])
    assert [(e.reason, p, f) for e, p, f in checked.broad] == [("reverse computes forward", 2, 1)]
    (line,) = checked.lines()
    assert line[0] == "note" and "1 expectation also cover passing pairs" in line[1]
    assert f"{exp.entries[0].where} covers 2 passing beside 1 failing" in line[1]
    assert "also covers 2 passing pairs beside the 1 failing one" in checked.lines(each=True)[0][1]
    assert json.loads(json.dumps(checked.to_json()))["broad"][0]["passing"] == 2


def test_an_entry_with_nothing_in_a_slice_is_no_warning_and_in_a_whole_corpus_one_that_matches_nothing_is(tmp_path):
    exp = _expectations(tmp_path, _entry("[clip]", "ignores clip") + _entry("[P]", "ignores P")
                        + "  - features: [clip]\n    targets: other-*\n    kind: known-bug\n    reason: elsewhere\n")
    recs = [_rec("lstm/clip[a]", "pass", ["clip"]), _rec("lstm/basic[a]", "pass", [])]
    checked = audit(regate(recs, exp, None, []), exp, [])
    assert [(e.reason, n) for e, n in checked.stale] == [("ignores clip", 1)]
    assert [e.reason for e in checked.unmatched] == ["ignores P"] and checked.idle == 1   # other-*: did not run
    clip, p = (str(e.where) for e in exp.entries[:2])
    assert checked.lines() == [("warning", f"expectation at {p} matches nothing (ignores P)"),
                               ("warning", f"expectation at {clip} covers 1 pair here and none fails: it can go "
                                           f"(ignores clip)")]
    # a -k or path slice may have left their pairs out: one note, no warning
    assert checked.lines(sliced=True) == [("note", f"expectation at {clip} covers 1 pair here and none fails in "
                                                   f"this selection (ignores clip)")]


def test_a_slice_is_a_k_or_a_path_inside_the_corpus(monkeypatch):
    from conformance.cli.options import is_slice
    monkeypatch.chdir(ROOT)
    assert not is_slice((), "") and not is_slice((Path("cases"),), "")
    # a corpus of one's own is whole under expectations of one's own, a slice under ./expectations/
    assert not is_slice((ROOT / "tests" / "data" / "cases",), "", default_gate=False)
    assert is_slice((ROOT / "tests" / "data" / "cases",), "")
    assert is_slice((), "reverse") and is_slice((Path("cases/gru"),), "")
    assert is_slice((Path("cases/gru/basic.yaml"),), "")


# -- one default gate ------------------------------------------------------------------------------

def test_run_fuzz_and_report_gate_on_the_expectations_folder_by_default_and_say_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert expectation_paths(()) == ()
    (tmp_path / "expectations").mkdir()
    assert expectation_paths(()) == (Path("expectations"),)
    assert expectation_paths((), none=True) == ()
    assert expectation_paths((Path("x.yaml"),)) == (Path("x.yaml"),)
    with pytest.raises(ExpectationsError, match="contradict"):
        expectation_paths((Path("x.yaml"),), none=True)
    from conformance.cli import main
    for command in ("run", "fuzz", "report"):
        shown = " ".join(CliRunner().invoke(main, [command, "--help"], terminal_width=200).output.split())
        assert "./expectations/ where it" in shown and "--no-expectations" in shown, command
    # report keeps the gate its run judged, unless told to judge anew
    assert "Default: the gate each run judged" in " ".join(
        CliRunner().invoke(main, ["report", "--help"], terminal_width=200).output.split())


def test_run_help_gives_the_exit_statuses_it_exits_with():
    from conformance.cli import main
    shown = " ".join(CliRunner().invoke(main, ["run", "--help"], terminal_width=200).output.split())
    assert "2 when a case file has an error" in shown and "or when a case file has an error" not in shown


# -- an empty selection is a usage error -------------------------------------------------------------


# -- case files: did you mean, once per file:line ---------------------------------------------------

HEAD = "op: GRU\nclause: test\ndescription: test\nshape: {seq_length: 2, batch_size: 1, input_size: 2}\n"


def test_a_misspelt_value_in_a_matrix_is_one_error_with_did_you_mean(tmp_path):
    (tmp_path / "bad.yaml").write_text(HEAD + "attributes:\n  hidden_size: 3\nmatrix:\n  direction: [forward, revers]\n"
                                              "  linear_before_reset: [0, 1]\n  B: [random, zeros, absent]\n")
    cases, errors = load_paths([tmp_path], materialize=False)
    assert len(cases) == 6
    (err,) = errors
    text = str(err)
    assert text.startswith(f"{tmp_path / 'bad.yaml'}:8: attributes.direction:")
    assert "got 'revers' (in 6 of the matrix's combinations); did you mean 'reverse'?" in text
    assert "expect: invalid" not in text


@pytest.mark.parametrize("body, line, said", [
    ("attributes:\n  hiden_size: 3\n", 6, "unknown key 'hiden_size'; did you mean 'hidden_size'?"),
    ("attributes:\n  hidden_size: 3\ninptus: {seed: 1}\n", 7, "unknown key 'inptus'; did you mean 'inputs'?"),
    ("attributes:\n  hidden_size: 3\n  activations: [Sigmoid, Tahn]\n", 7, "did you mean 'Tanh'?"),
    ("attributes:\n  hidden_size: 3\nmatrix:\n  directoin: [forward]\n", 8, "did you mean 'direction'?"),
])
def test_a_misspelt_key_or_name_gets_did_you_mean_not_every_key(tmp_path, body, line, said):
    (tmp_path / "bad.yaml").write_text(HEAD + body)
    _, (err,) = load_paths([tmp_path], materialize=False)
    assert str(err).startswith(f"{tmp_path / 'bad.yaml'}:{line}:") and said in str(err), str(err)
    assert "known keys" not in str(err) and "one of:" not in str(err)


# -- errors a user need not decode ------------------------------------------------------------------

def test_a_malformed_upstream_says_what_it_takes_not_a_regular_expression(tmp_path):
    with pytest.raises(ExpectationsError) as caught:
        _expectations(tmp_path, "  - features: [clip]\n    kind: known-bug\n    reason: r\n    upstream: not yet\n")
    text = str(caught.value)
    assert "'not yet' is not in the form this key takes" in text and "none found (searched YYYY-MM-DD)" in text
    assert "pattern" not in text and "\\S" not in text and "…" not in text


def test_a_missing_engine_is_named_by_its_package():
    from conformance.runtimes import not_installed
    text = not_installed("conformance.runtimes.mnn", ImportError("No module named '_tools'"))
    assert text.startswith("MNN is not installed here (No module named '_tools')") and ".[engines]" in text
    assert "iree-base-compiler and iree-base-runtime are not installed" in not_installed(
        "conformance.runtimes.iree", ImportError("x"))


# -- the fuzzer -------------------------------------------------------------------------------------

def test_the_fuzzers_table_never_cuts_a_target_name():
    from collections import Counter, defaultdict

    from rich.console import Console

    from conformance.fuzz.campaign import CampaignResult
    from conformance.fuzz.display import per_target
    r = CampaignResult()
    names = [f"onnxruntime-1.32.0/CPU@onnx-{v}" for v in (7, 14, 22)]
    r.verdicts = defaultdict(Counter, {n: Counter(pass_=0, **{"pass": 12, "fail": 3}) for n in names})
    for width in (200, 60):
        console = Console(width=width, record=True, color_system=None)
        console.print(per_target(console, r))
        shown = console.export_text()
        assert all(n in shown for n in names) and "…" not in shown, shown


def test_a_clean_campaign_leaves_a_record_of_its_seed_and_counts(tmp_path):
    from collections import Counter, defaultdict

    from conformance.fuzz.campaign import CampaignConfig, CampaignResult
    from conformance.fuzz.session import record_campaign
    result = CampaignResult(examples=40, valid=35, invalid=5, seed=1234)
    result.verdicts = defaultdict(Counter, {T: Counter({"pass": 40})})
    config = CampaignConfig(targets=[types.SimpleNamespace(id=T)], out_dir=tmp_path / "fuzz", budget_s=60)
    path = record_campaign(result, config)
    record_campaign(result, config)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert path == tmp_path / "fuzz" / "campaigns.jsonl" and len(lines) == 2
    assert lines[0]["seed"] == 1234 and lines[0]["new"] == 0 and lines[0]["verdicts"] == {T: {"pass": 40}}


# -- what it says is what it did ---------------------------------------------------------------------

def test_the_summary_line_counts_the_case_file_errors():
    from rich.console import Console

    from conformance.report.terminal import summary
    console = Console(width=200, record=True, color_system=None)
    summary(console,
            [Record.from_dict({"case": "rnn/a", "target": T, "verdict": "pass", "features": [], "gate": "ok"})],
            ["x.yaml:3: bad"], [], "OUT", ran=1, resumed=0, wall_s=28.0)
    last = console.export_text().strip().splitlines()[-1]
    assert ("1 verdicts (1 pass); gate: nothing to report; 1 case file error (exit status 2)" in last
            and "28.0 s" in last)


def test_a_repro_names_its_configuration_where_the_runtime_has_several():
    from conformance.case.model import Case
    from conformance.run.engine import repro
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.selection import config_selecting
    assert config_selecting("default", ["default"]) == ""
    assert config_selecting("default", ["precision=pinned"]) == "precision=default"
    assert config_selecting("precision=pinned", ["default"]) == "precision=pinned"
    ref = RuntimeRef("x:y")
    default, pinned = (Target("openvino", "1", "CPU", c, "onnx-14", ref) for c in ("default", "precision=pinned"))
    case = types.SimpleNamespace(file="cases/gru/basic.yaml", id="gru/basic[direction=forward]")
    assert repro(case, pinned, [default, pinned]).endswith("--spec onnx-14 --config precision=pinned")
    assert repro(case, default, [default, pinned]).endswith("--spec onnx-14 --config precision=default")
    assert "--config" not in repro(case, default, [default])
    assert Case  # the record's case type is what repro reads: file and id


def test_the_matrix_header_shows_a_configurations_values_apart():
    from conformance.report.matrix import config_leaf
    assert config_leaf("precision=default→bf16") == ("precision", "default→bf16")
    assert config_leaf("precision=pinned") == ("precision", "pinned")
    assert config_leaf("precision=pinned/threads=4") == ("precision · threads", "pinned · 4")
    assert config_leaf("default") == ("configuration", "default")


def test_webnn_contexts_that_report_nothing_of_their_own_fold_into_cpu():
    from conformance.runtimes.webnn import same_as_cpu
    cpu = {"ok": True, "accelerated": None, "opSupportLimits": {"gru": 1}, "preferredInputLayout": "nhwc"}
    assert same_as_cpu(dict(cpu), cpu)
    assert not same_as_cpu(dict(cpu, accelerated=True), cpu)
    assert not same_as_cpu(dict(cpu, opSupportLimits={"gru": 2}), cpu)
    assert not same_as_cpu(dict(cpu), None)


#: the front page, and the manuals that hold what it held before it became one
FRONT_PAGE_AND_MANUALS = ("README.md", "docs/usage.md", "docs/targets.md", "docs/gate.md", "docs/outputs.md",
                          "docs/case-format.md", "docs/fuzzing.md", "docs/cluster.md", "docs/plugins.md",
                          "docs/development.md")


@pytest.mark.parametrize("name", FRONT_PAGE_AND_MANUALS)
def test_the_readme_hard_codes_no_count_that_goes_stale(name):
    text = (ROOT / name).read_text()
    assert not re.search(r"\b\d+\s+entries\b", text), "count the entries, do not state them"
    for found in re.finditer(r"\d+ cases on \d+ targets", text):
        assert "measured" in text[max(0, found.start() - 80):found.start()], found.group(0)


# -- nox: install once, name the folder it wrote --------------------------------------------------

class _NoxDouble(types.ModuleType):
    """A deliberate test double of the `nox` module, enough to import noxfile.py."""

    def __init__(self):
        super().__init__("nox")
        self.options = types.SimpleNamespace()
        self.session = lambda *a, **k: (lambda f: f)


class _Session:
    def __init__(self, venv: Path):
        self.virtualenv = types.SimpleNamespace(location=str(venv))
        self.calls: list = []

    def install(self, *args):
        self.calls.append(("install", args))

    def run(self, *args, **kwargs):
        self.calls.append(("run", args))

    def log(self, text):
        self.calls.append(("log", text))


def test_nox_installs_only_when_what_it_installs_from_changed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "nox", _NoxDouble())
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delenv("CONFORMANCE_REINSTALL", raising=False)
    noxfile = importlib.import_module("noxfile")
    monkeypatch.chdir(tmp_path)
    for name in noxfile.INSTALLED_FROM:
        (tmp_path / name).write_text(f"{name} v1\n")
    first, second, other = _Session(tmp_path), _Session(tmp_path), _Session(tmp_path)
    noxfile.install(first)
    noxfile.install(second)
    noxfile.install(other, "runtimes")
    installs = [[c for c in s.calls if c[0] == "install"] for s in (first, second, other)]
    assert len(installs[0]) == 2 and installs[1] == [] and len(installs[2]) == 2
    assert any(c[0] == "log" and "up to date" in c[1] for c in second.calls)
    (tmp_path / "constraints.txt").write_text("constraints.txt v2\n")
    again = _Session(tmp_path)
    noxfile.install(again, "runtimes")
    assert len([c for c in again.calls if c[0] == "install"]) == 2
    assert noxfile.out_of(["cases/gru", "--out", "reports/gru"], "reports/latest") == "reports/gru"
    assert noxfile.out_of(["--out=x"], "reports/latest") == "x"
    assert noxfile.out_of(["cases"], "reports/latest") == "reports/latest"


def _requirements(text: str) -> list:
    from packaging.requirements import Requirement
    return [Requirement(line.split("#")[0]) for line in text.splitlines() if line.split("#")[0].strip()]


def test_the_gpu_session_installs_onnxruntime_gpu_pinned_and_never_onnxruntime(tmp_path, monkeypatch):
    """`nox -s conformance-gpu` installs the `runtimes-gpu` extra alone (onnxruntime-gpu, pinned in
    constraints.txt, instead of onnxruntime: both provide the `onnxruntime` module) and torch as the
    other sessions do; then runs `conformance run` as `nox -s conformance` does."""
    import tomllib

    from packaging.utils import canonicalize_name
    monkeypatch.setitem(sys.modules, "nox", _NoxDouble())
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("CONFORMANCE_REINSTALL", "1")
    noxfile = importlib.import_module("noxfile")
    session = _Session(tmp_path)
    session.posargs = []
    noxfile.conformance_gpu(session)
    installed = [args for kind, args in session.calls if kind == "install"]
    assert installed == [("-c", "constraints.txt", "torch==2.13.0"), ("-c", "constraints.txt", "-e", ".[runtimes-gpu]")]
    runs = [args for kind, args in session.calls if kind == "run"]
    assert ("conformance", "run", "--jobs", noxfile.JOBS, "cases", "--out", "reports/gpu") in runs
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    gpu = {canonicalize_name(r.name): r for r in _requirements("\n".join(extras["runtimes-gpu"]))}
    assert "onnxruntime" not in gpu and {"cuda", "cudnn"} <= gpu["onnxruntime-gpu"].extras
    cpu = {canonicalize_name(r.name) for r in _requirements("\n".join(extras["runtimes"]))}
    assert set(gpu) == cpu - {"onnxruntime"} | {"onnxruntime-gpu"}, "the same runtimes, the GPU packages instead"
    pins = {canonicalize_name(r.name): str(r.specifier) for r in _requirements((ROOT / "constraints.txt").read_text())}
    assert pins["onnxruntime-gpu"].startswith("==") and pins["onnxruntime"].startswith("==")
    assert f"onnxruntime-gpu {pins['onnxruntime-gpu'][2:]}" in (ROOT / "docs" / "targets.md").read_text()


# -- the ablation's sentences, as the reports show them ---------------------------------------------

def test_a_plain_path_divergence_is_one_cluster_across_case_families():
    """The refusal of every LSTMSequence-1 was one cluster per case family (about 12); its sentence
    names no case family, so it is one."""
    from conformance.run.ablation import _merge
    cause = "rejects the case: the plain LSTM sequence path diverges, whatever single feature is removed"
    explained = [((T, "rejected", stem, ""), [f"{stem}[a=1]"], cause, [], []) for stem in
                 ("lstm/basic", "lstm/layout", "lstm/outputs", "lstm/clip")]
    (cluster,) = _merge(explained, {}, {T: "rt"})
    assert (cluster["case_families"] == ["lstm/basic", "lstm/layout", "lstm/outputs", "lstm/clip"]
            and cluster["size"] == 4)


def test_a_configuration_cause_names_the_cpu_once_and_a_pinned_target_computing_narrower_names_the_dtype():
    from conformance.run.ablation_axes import PINNED, _configuration_cause
    from conformance.runtimes.effective import host
    default = types.SimpleNamespace(device="CPU", config="default")
    cause, features = _configuration_cause(default, "bf16", "pass")
    assert features == ["configuration"] and f"on this CPU ({host().get('cpu')})" in cause
    assert "avx" not in cause and "fma" not in cause     # not the CPU's flag string (run.json has it)
    cause, features = _configuration_cause(types.SimpleNamespace(device="CPU", config=PINNED), "f32", None, "float64")
    assert features == ["dtype"] and cause.startswith("fails whenever the dtype is float64: it computes in f32")
    assert "no pinned-precision configuration" not in cause
    assert _configuration_cause(default, "bf16", "fail")[1] == []   # the pinned target's cluster names the cause
    # an execution form on the pinned precision is pinned too: its float64 pairs computed in f32 are the dtype's
    dynamic = types.SimpleNamespace(device="CPU", config=PINNED + "/shape=dynamic")
    cause, features = _configuration_cause(dynamic, "f32", None, "float64")
    assert features == ["dtype"] and "fails only in the" not in cause
