"""The suite's test doubles, in one folder: deliberate, named stand-ins for the suite's own machinery (runtime
plugins that crash, hang, chatter or answer wrongly; numpy implementations with a planted bug; fake releases
for the history, fake converters, fake browsers). None of them stands in for a runtime under test: they test
the suite. docs/development.md, "Test doubles"."""


def ort_cpu(model: bytes, feeds):
    """The right answer the onnxruntime-based doubles start from: onnxruntime's CPU provider, quiet."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 4
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)
