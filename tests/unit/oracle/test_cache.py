"""The on-disk cache: hits, keys, corruption, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import oracles
from oracles import cache


def _case():
    rng = np.random.default_rng(0)
    tensors = {"X": rng.uniform(-1, 1, (3, 2, 2)).astype(np.float32),
               "W": rng.uniform(-1, 1, (1, 9, 2)).astype(np.float32),
               "R": rng.uniform(-1, 1, (1, 9, 3)).astype(np.float32),
               "sequence_lens": np.array([3, 1], dtype=np.int32)}
    return {"hidden_size": 3, "linear_before_reset": 1}, tensors


def _key(attributes, tensors, profile="onnx", prec=128, check_prec=192):
    return cache.key(oracles.ORACLE_VERSION, "GRU", attributes, tensors, profile, prec, check_prec)


def test_cached_reads_the_cache_and_computes_nothing(private_cache):
    attributes, tensors = _case()
    assert oracles.cached("GRU", attributes, tensors) is None
    assert not list(private_cache.glob("*.json"))  # a miss computes and stores nothing
    first = oracles.evaluate("GRU", attributes, tensors)
    hit = oracles.cached("GRU", attributes, tensors)
    assert hit is not None and hit.from_cache and hit.to_json() == first.to_json()
    assert oracles.cached("GRU", attributes, tensors, profile="openvino") is None  # keyed like evaluate
    for path in private_cache.glob("*.json"):
        path.write_text("{not json")
    assert oracles.cached("GRU", attributes, tensors) is None  # a corrupt entry is a miss


def test_second_call_hits_the_cache(private_cache):
    attributes, tensors = _case()
    first = oracles.evaluate("GRU", attributes, tensors)
    files = list(private_cache.glob("*.json"))
    assert len(files) == 1 and files[0].stem == _key(attributes, tensors)
    second = oracles.evaluate("GRU", attributes, tensors)
    assert not first.from_cache and second.from_cache
    assert second.to_json() == first.to_json()
    for a, b in zip(first.readings, second.readings):
        for name in a.outputs:
            np.testing.assert_array_equal(a.outputs[name].hi, b.outputs[name].hi)
            np.testing.assert_array_equal(a.outputs[name].lo, b.outputs[name].lo)
            np.testing.assert_array_equal(a.outputs[name].unspecified, b.outputs[name].unspecified)
    assert not list(private_cache.glob("*.tmp"))


def test_cache_false_neither_reads_nor_writes(private_cache):
    attributes, tensors = _case()
    result = oracles.evaluate("GRU", attributes, tensors, cache=False)
    assert not result.from_cache and not private_cache.exists()


def test_every_input_is_in_the_key():
    attributes, tensors = _case()
    base = _key(attributes, tensors)
    assert _key(dict(reversed(attributes.items())), dict(reversed(tensors.items()))) == base
    changed = []
    bumped = dict(tensors, X=tensors["X"].copy())
    bumped["X"].view(np.uint32)[0, 0, 0] ^= 1  # one ulp of one element
    changed.append(_key(attributes, bumped))
    changed.append(_key(attributes, dict(tensors, X=tensors["X"].astype(np.float64))))
    changed.append(_key(attributes, dict(tensors, X=tensors["X"].reshape(3, 1, 4))))
    changed.append(_key(attributes, dict(tensors, sequence_lens=np.array([3, 2], np.int32))))
    changed.append(_key(attributes, {k: v for k, v in tensors.items() if k != "sequence_lens"}))
    changed.append(_key(dict(attributes, linear_before_reset=0), tensors))
    changed.append(_key(dict(attributes, clip=1.0), tensors))
    changed.append(_key(dict(attributes, clip=1.0 + 2 ** -40), tensors))
    changed.append(_key(attributes, tensors, profile="directml"))
    changed.append(_key(attributes, tensors, prec=160))
    changed.append(_key(attributes, tensors, check_prec=256))
    changed.append(cache.key("0.0.0", "GRU", attributes, tensors, "onnx", 128, 192))
    assert base not in changed
    assert len(set(changed)) == len(changed)


def test_corrupt_cache_file_is_recomputed(private_cache):
    attributes, tensors = _case()
    good = oracles.evaluate("GRU", attributes, tensors)
    path = cache.path_for(_key(attributes, tensors))
    for garbage in ("{not json", json.dumps({"op": "GRU"}), ""):
        path.write_text(garbage)
        again = oracles.evaluate("GRU", attributes, tensors)
        assert not again.from_cache
        assert again.to_json() == good.to_json()
        assert oracles.OracleResult.from_json(path.read_text()).to_json() == good.to_json()


def test_json_round_trip_is_exact():
    attributes, tensors = _case()
    result = oracles.evaluate("GRU", attributes, tensors, cache=False)
    back = oracles.OracleResult.from_json(result.to_json())
    assert back.certificate == result.certificate and back.ambiguities == result.ambiguities
    y, y_back = result.readings[0].outputs["Y"], back.readings[0].outputs["Y"]
    np.testing.assert_array_equal(y.hi, y_back.hi)
    np.testing.assert_array_equal(y.unspecified, y_back.unspecified)
    assert y.reasons == y_back.reasons


def test_default_directory_is_next_to_the_package(monkeypatch):
    monkeypatch.delenv(cache.ENV, raising=False)
    assert cache.directory() == Path(oracles.__file__).resolve().parent / "cache"


@pytest.mark.parametrize("attempts", [3])
def test_parallel_writers_leave_one_valid_file(private_cache, attempts):
    attributes, tensors = _case()
    result = oracles.evaluate("GRU", attributes, tensors, cache=False)
    key = _key(attributes, tensors)
    for _ in range(attempts):  # what concurrent writers do: each replaces the file whole
        cache.store(key, result)
    assert [p.name for p in private_cache.iterdir()] == [f"{key}.json"]
    assert cache.load(key).to_json() == result.to_json()
