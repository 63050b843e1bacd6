"""The corpus as portable test vectors (``conformance export``): the oracle's values with the derived
tolerance per element (``vectors``), written as ONNX node tests (``onnx_node``) or WebNN conformance
tests in web-platform-tests' shape (``wpt``, run in a browser by ``wpt_harness.html``); ``cli`` is the
command. docs/bugreports.md describes the formats."""
