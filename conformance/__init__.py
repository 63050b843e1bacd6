"""Cross-spec conformance suite and differential fuzzer for RNN, GRU and LSTM.

The public surface is small on purpose: load cases (:mod:`conformance.case`), translate them into a
spec's program (:mod:`conformance.specs`), run programs on runtimes (:mod:`conformance.runtimes`),
compare with the oracle (:mod:`conformance.compare`), orchestrate (:mod:`conformance.run`) and report
(:mod:`conformance.report`).
"""

__version__ = "0.1.0"
