"""Start-up: the case cache and the discovery cache give what a fresh load and a fresh discovery give,
an edited file is parsed again, a file with an error reports exactly as without the cache, a corrupt
or planted entry is ignored; the processes a run starts import only what they use (docs/startup.md).
No timings here: benchmarks/startup.py measures them.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_startup_cache.py."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from conformance.case import cache as case_cache
from conformance.case import load
from conformance.case.load import discover, load_file, load_paths
from tests.conftest import DATA, ROOT

CORPUS = ROOT / "cases"
#: a sample of the corpus: every fifth file, and the files with the rarer contents (bfloat16,
#: float16 and float64 tensors, non-finite values, literal tensors and long descriptions in the
#: fuzzer's regressions, invalid cases)
SAMPLE = sorted({*discover([CORPUS])[::5], *(f for f in discover([CORPUS]) if f.stem in (
    "bfloat16", "float16", "float64", "nonfinite", "clip", "activation_alpha_beta")),
    *sorted((CORPUS / "regressions").glob("*.yaml"))[:3], *sorted((CORPUS / "invalid").rglob("*.yaml"))[:2]})


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A case cache of this test's own."""
    folder = tmp_path / "case-cache"
    monkeypatch.setenv(case_cache.ENV, str(folder))
    return folder


def _fresh(paths, **kw):
    """The cases and errors of ``paths`` as parsed with the cache off."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(case_cache.ENV, "off")
        return load_paths(paths, **kw)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.pickle")) if folder.exists() else []


def _same_case(a, b) -> None:
    assert a.id == b.id
    for name in ("op", "form", "attributes", "shape", "dtype", "expect", "clause", "description", "outputs",
                 "violates", "source", "params", "notes", "tolerance"):
        assert getattr(a, name) == getattr(b, name), (a.id, name)
    assert a.attributes == b.attributes and json.dumps(a.attributes, default=str) == json.dumps(b.attributes,
                                                                                               default=str)
    assert set(a.tensors) == set(b.tensors), a.id
    for name, value in a.tensors.items():
        other = b.tensors[name]
        assert value.dtype == other.dtype and value.shape == other.shape, (a.id, name)
        assert value.tobytes() == other.tobytes(), (a.id, name)  # bit for bit: NaN payloads, -0.0
    assert a.digest == b.digest


def _no_parse(monkeypatch):
    """Make parsing a file fail the test: what follows must come from the cache."""
    monkeypatch.setattr(load, "_parse", lambda *a, **k: pytest.fail("a file was parsed, not read from the cache"))


# -- the cache gives what a fresh parse gives ------------------------------------------------------

def test_the_cache_returns_the_cases_a_fresh_parse_returns(cache_dir, monkeypatch):
    fresh, fresh_errors = _fresh(SAMPLE)
    assert fresh and not fresh_errors and len(SAMPLE) >= 20
    cold, _ = load_paths(SAMPLE)
    assert len(_entries(cache_dir)) == len(SAMPLE)
    _no_parse(monkeypatch)
    warm, warm_errors = load_paths(SAMPLE)
    assert not warm_errors and [c.id for c in warm] == [c.id for c in fresh] == [c.id for c in cold]
    for a, b, c in zip(fresh, cold, warm):
        _same_case(a, b)
        _same_case(a, c)
    assert {"bfloat16", "float16", "float64"} <= {c.dtype for c in warm} and not all(c.valid for c in warm)


def test_the_listing_form_without_tensors_has_entries_of_its_own(cache_dir, monkeypatch):
    files = SAMPLE[:4]
    built, _ = load_paths(files)
    listed, _ = load_paths(files, materialize=False)
    _no_parse(monkeypatch)
    assert all(c.tensors for c in load_paths(files)[0] if c.valid)
    again, _ = load_paths(files, materialize=False)
    assert [c.id for c in again] == [c.id for c in built] and all(c.tensors == {} for c in again)


def test_a_file_named_otherwise_keeps_its_own_name_in_every_file_line(cache_dir, tmp_path):
    copy = tmp_path / "cases" / "gru" / "small.yaml"
    copy.parent.mkdir(parents=True)
    copy.write_bytes((DATA / "cases" / "gru" / "small.yaml").read_bytes())
    by_relative, _ = load_paths([DATA / "cases" / "gru" / "small.yaml"])
    by_copy, _ = load_paths([copy])
    assert [c.id for c in by_copy] == [c.id for c in by_relative]
    assert {c.file for c in by_copy} == {str(copy)} and {c.file for c in by_relative} != {str(copy)}


# -- an edited file is parsed again ----------------------------------------------------------------

CASE = """op: GRU
attributes: {hidden_size: 3}
shape: {seq_length: 2, batch_size: 1, input_size: 2}
inputs: {seed: SEED}
matrix:
  direction: [forward, reverse]
"""


def test_an_edited_file_is_parsed_again(cache_dir, tmp_path, monkeypatch):
    path = tmp_path / "cases" / "gru" / "edited.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(CASE.replace("SEED", "1"))
    first, _ = load_file(path)
    assert len(_entries(cache_dir)) == 1
    path.write_text(CASE.replace("SEED", "2"))  # same size, same name: only the bytes differ
    parsed = []
    real = load._parse
    monkeypatch.setattr(load, "_parse", lambda *a, **k: parsed.append(a[1]) or real(*a, **k))
    second, _ = load_file(path)
    assert parsed == [path]
    assert [c.id for c in second] == [c.id for c in first]
    assert not np.array_equal(first[0].tensors["X"], second[0].tensors["X"])
    for a, b in zip(second, _fresh([path])[0]):
        _same_case(a, b)
    assert len(_entries(cache_dir)) == 1  # the entry was written over, not added to


# -- errors are reported as without the cache ------------------------------------------------------

def _errors(paths):
    cases, errors = load_paths(paths)
    return [c.id for c in cases], [str(e) for e in errors], [e.to_json() for e in errors]


@pytest.mark.parametrize("bad", ["broken.yaml", "unknown_key.yaml", "shape_mismatch.yaml"])
def test_a_file_with_an_error_reports_the_same_with_and_without_the_cache(cache_dir, tmp_path, bad):
    folder = tmp_path / "cases" / "gru"
    shutil_copy(DATA / "cases" / "gru", folder)
    (folder / bad).write_bytes((DATA / "bad" / bad).read_bytes())
    without = _fresh([tmp_path / "cases"])
    without = ([c.id for c in without[0]], [str(e) for e in without[1]], [e.to_json() for e in without[1]])
    cold, warm = _errors([tmp_path / "cases"]), _errors([tmp_path / "cases"])
    assert without == cold == warm and without[1]
    assert all(e["file"] == str(folder / bad) and e["line"] >= 1 for e in warm[2])
    # the good files are cached, the bad one never is
    assert len(_entries(cache_dir)) == len(list(folder.glob("*.yaml"))) - 1


def test_a_cached_file_edited_into_an_error_reports_its_line(cache_dir, tmp_path):
    path = tmp_path / "cases" / "gru" / "soon_bad.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(CASE.replace("SEED", "1"))
    assert load_file(path)[0]
    path.write_text(CASE.replace("SEED", "1") + "colour: red\n")
    cases, errors = load_file(path)
    assert cases == [] and [str(e) for e in errors] == [str(e) for e in _fresh([path])[1]]
    assert str(errors[0]).startswith(f"{path}:7:")


# -- a corrupt, foreign or planted entry is ignored and written over -------------------------------

def _corruptions(data: bytes) -> dict[str, bytes]:
    head, source, check, payload = data.split(b"\n", 3)
    planted = pickle.dumps(_Planted())
    return {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "garbage": b"\x80\x05not a pickle at all" * 10,
        "a flipped byte": data[:-5] + bytes([data[-5] ^ 0xFF]) + data[-4:],
        "another format": b"rnn-conformance/cache-entry/0\n" + source + b"\n" + check + b"\n" + payload,
        "other bytes": head + b"\n" + b"0" * 64 + b"\n" + check + b"\n" + payload,
        # a well-formed entry whose pickle calls a function: refused, never called
        "planted": b"\n".join((head, source, hashlib.sha256(planted).hexdigest().encode(), planted)),
    }


PLANTED: list[str] = []


def _plant() -> list:
    PLANTED.append("called")
    return []


class _Planted:
    def __reduce__(self):
        return (_plant, ())


@pytest.mark.parametrize("kind", list(_corruptions(b"a\nb\nc\nd")))
def test_a_corrupt_entry_is_ignored_and_written_again(cache_dir, monkeypatch, kind):
    path = DATA / "cases" / "gru" / "small.yaml"
    fresh, _ = load_file(path)
    (entry,) = _entries(cache_dir)
    good = entry.read_bytes()
    entry.write_bytes(_corruptions(good)[kind])
    again, errors = load_file(path)
    assert not errors and not PLANTED
    for a, b in zip(again, fresh):
        _same_case(a, b)
    assert entry.read_bytes() == good  # rewritten whole
    _no_parse(monkeypatch)
    assert [c.id for c in load_file(path)[0]] == [c.id for c in fresh]


def test_concurrent_writers_leave_one_whole_entry(cache_dir):
    path = DATA / "cases" / "gru" / "small.yaml"
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(load_file(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (entry,) = _entries(cache_dir)
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]
    reference, _ = _fresh([path])
    for cases, errors in results + [load_file(path)]:
        assert not errors
        for a, b in zip(cases, reference):
            _same_case(a, b)


def test_a_cache_that_cannot_be_written_costs_nothing_but_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv(case_cache.ENV, str(blocker))
    cases, errors = load_file(DATA / "cases" / "gru" / "small.yaml")
    assert cases and not errors


# -- the discovery cache ---------------------------------------------------------------------------


# -- the processes a run starts import only what they use ------------------------------------------


def test_children_of_the_console_script_skip_it(monkeypatch):
    import types

    from conformance import cli
    script = types.ModuleType("__main__")
    script.__file__ = "/usr/bin/conformance"
    script.__spec__ = None
    script.main = cli.main
    monkeypatch.setitem(sys.modules, "__main__", script)
    cli._children_skip_the_script()
    assert script.__spec__.name == "conformance.__main__"
    other = types.ModuleType("__main__")
    other.__file__, other.__spec__ = "/home/me/mine.py", None
    monkeypatch.setitem(sys.modules, "__main__", other)
    cli._children_skip_the_script()
    assert other.__spec__ is None  # someone else's script is left as it is


def test_an_empty_store_counts_every_pair_without_digesting(tmp_path):
    from conformance.results import ResultStore
    from conformance.run.engine import Engine, Options
    from conformance.runtimes.base import RuntimeRef, Target
    cases, _ = _fresh([DATA / "cases"])
    targets = [Target("x", "1", "CPU", "default", spec, RuntimeRef("m:X")) for spec in ("onnx-7", "onnx-14")]
    engine = Engine(cases, targets, ResultStore(tmp_path / "o", resume=False), Options(out_dir=tmp_path / "o"))
    assert engine.count_pending() == sum(len(todo) for _, _, todo in engine.pending_pairs()) == len(cases) * 2


def shutil_copy(src: Path, dst: Path) -> None:
    import shutil
    shutil.copytree(src, dst)


def test_entries_are_keyed_by_what_the_expansion_depends_on(tmp_path):
    path = DATA / "cases" / "gru" / "small.yaml"
    data = path.read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(case_cache.ENV, str(tmp_path))
        base = case_cache.entry(path, data, load.DEFAULT_LIMITS, True)
        assert base is not None
        others = [case_cache.entry(path, data, dataclasses.replace(load.DEFAULT_LIMITS, max_macs=10), True),
                  case_cache.entry(path, data, load.DEFAULT_LIMITS, False),
                  case_cache.entry(Path(os.path.relpath(path)), data, load.DEFAULT_LIMITS, True)]
        assert all(o is not None and o.path != base.path for o in others)
        assert case_cache.entry(path, data + b"\n", load.DEFAULT_LIMITS, True).digest != base.digest
        mp.setenv(case_cache.ENV, "off")
        assert case_cache.entry(path, data, load.DEFAULT_LIMITS, True) is None
