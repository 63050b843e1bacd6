"""Case files: YAML loading, validation with file:line errors, matrix expansion, input generation."""

from conformance.case.load import discover, load_file, load_paths
from conformance.case.model import Case, CaseError
from conformance.case.schema import SCHEMA

__all__ = ["Case", "CaseError", "SCHEMA", "discover", "load_file", "load_paths"]
