"""DirectML translator family: DML_RNN/GRU/LSTM_OPERATOR_DESC at DML_FEATURE_LEVEL_1_0.

``descriptor`` turns a canonical case into a descriptor document (JSON mirroring the C structs)
and its buffers; ``validate`` checks a written document against DirectML's documented constraints;
``buffers`` reads and writes tensors through a desc's Sizes and Strides; ``vocabulary`` holds
DirectML's names.
"""

from conformance.specs.directml.buffers import (
           DescriptorError,
           calc_buffer_tensor_size,
           read_tensor,
)
from conformance.specs.directml.descriptor import SPEC, DirectMLSpec
from conformance.specs.directml.validate import Violation, validate, validate_document

SPECS = {SPEC.name: SPEC}

__all__ = ["SPECS", "DescriptorError", "DirectMLSpec", "Violation", "calc_buffer_tensor_size",
           "read_tensor", "validate", "validate_document"]
