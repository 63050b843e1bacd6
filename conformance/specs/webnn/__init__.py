"""WebNN translator family: gru, gruCell, lstm and lstmCell as a WebNN graph document.

``document`` turns a canonical case into the document (JSON: operands, operator calls with their
options, outputs); ``validate`` checks a document against the operators' method steps;
``vocabulary`` holds WebNN's names and the published versions; ``replay.html`` is the page that
replays a document in a browser (docs/webnn.md).
"""

from pathlib import Path

from conformance.specs.webnn.document import SPECS, WebNNSpec
from conformance.specs.webnn.validate import DocumentError, Violation, load_document, validate_document

#: the page that replays documents (served by conformance.runtimes.webnn, or opened by hand)
REPLAY_PAGE = Path(__file__).with_name("replay.html")

__all__ = ["REPLAY_PAGE", "SPECS", "DocumentError", "Violation", "WebNNSpec", "load_document",
           "validate_document"]
