"""Conformance across releases (`conformance history`, docs/history.md).

One history session (:mod:`.session`: ``HistoryConfig``, ``history_session``, the releases chosen
and each one's run) on the cases named, or one file per feature class of the corpus
(:mod:`.corpus`). One isolated environment per runtime release (:mod:`.environments`), cached
between runs; the runtime there is driven from the suite's own worker processes through a small
pipe protocol (:mod:`.proxy` on the suite's side, :mod:`.remote` in the release's interpreter), so
translation, the oracle and the judgement always run with the pinned packages and only the
runtime's calls differ from release to release. The runs merge into one results set
(:mod:`.merge`), which the report's history view reads (:mod:`conformance.report.history`);
:mod:`.repeats` runs again what could be luck, :mod:`.bisect` the releases where something changes.
"""
