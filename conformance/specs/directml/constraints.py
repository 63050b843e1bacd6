"""DirectML's documented constraints on the RNN, GRU and LSTM operator descriptors, each under an id
with the sentence it rests on (``CONSTRAINTS``), and a ``Violation`` of one (validate.py checks a
written descriptor against them)."""

from __future__ import annotations

from dataclasses import dataclass

#: constraint id -> the documented sentence it rests on
CONSTRAINTS = {
    "document": "the descriptor document: OperatorDesc {Type, Desc} and bindings (this suite's format)",
    "operator-type": "DML_OPERATOR_DESC.Type: DML_OPERATOR_RNN, DML_OPERATOR_GRU or DML_OPERATOR_LSTM",
    "struct-fields": "DML_*_OPERATOR_DESC: every field of the struct, and no other (DirectML.h)",
    "required-tensor": "InputTensor, WeightTensor and RecurrenceTensor are not _Maybenull_ (DML_*_OPERATOR_DESC)",
    "tensor-type": "DML_TENSOR_DESC.Type DML_TENSOR_TYPE_BUFFER with a DML_BUFFER_TENSOR_DESC "
                   "{DataType, Flags, DimensionCount, Sizes, Strides, TotalTensorSizeInBytes, "
                   "GuaranteedBaseOffsetAlignment}",
    "dimension-count": "'Tensor support': every tensor of these operators has 4 dimensions; Sizes "
                       "and Strides have DimensionCount entries (DML_BUFFER_TENSOR_DESC)",
    "sizes": "DML_BUFFER_TENSOR_DESC.Sizes: 'Specifying a size of zero in any dimension is invalid'; "
             "Sizes and Strides are UINT",
    "data-type": "'Tensor support': FLOAT32 or FLOAT16 for every tensor but SequenceLengthsTensor, "
                 "which is UINT32",
    "same-data-type": "'Tensor constraints': the float tensors 'must have the same DataType'",
    "tensor-flags": "every tensor of these operators 'doesn't support the DML_TENSOR_FLAG_OWNED_BY_DML "
                    "flag'; DML_TENSOR_FLAGS has NONE and OWNED_BY_DML only",
    "total-size": "TotalTensorSizeInBytes 'must be at least as large as the minimum implied size' "
                  "(DMLCalcBufferTensorSize), and bound buffers have a DWORD-aligned total size",
    "element-count": "'The total size of a buffer tensor may not exceed (2^32 - 1) elements'",
    "base-alignment": "GuaranteedBaseOffsetAlignment: 0, or 'a power of two that is at least as "
                      "large as the element size'",
    "tensor-sizes": "DML_*_OPERATOR_DESC member Sizes: X {1,S,B,I}, W {1,D,G*H,I}, R {1,D,G*H,H}, "
                    "B {1,1,D,2*G*H}, initial states {1,D,B,H}, SequenceLengths {1,1,1,B}, "
                    "Peephole {1,1,D,3*H}, OutputSequence {S,D,B,H}, OutputSingle/OutputCellSingle "
                    "{1,D,B,H}",
    "direction": "Direction: a DML_RECURRENT_NETWORK_DIRECTION (FORWARD, BACKWARD, BIDIRECTIONAL)",
    "activation-count": "ActivationDescCount is the size of ActivationDescs: 1/2 (RNN), 2/4 (GRU), "
                        "3/6 (LSTM) for one direction / bidirectional",
    "activation-desc": "ActivationDescs: DML_ACTIVATION_* descs of unary element-wise functions, "
                       "with InputTensor and OutputTensor NULL (as for fused activations: 'you must "
                       "set the activation's InputTensor and OutputTensor to NULL'), FLOAT parameters",
    "activation-parameter": "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC Steepness: 'This value cannot be "
                            "less than 1'",
    "scalar-field": "BOOL fields are TRUE (1) or FALSE (0); ClipThreshold is a FLOAT",
    "bindings": "binding: 'the size of the buffer range must be at least as large as the "
                "TotalTensorSizeInBytes'; a NULL tensor is bound with DML_BINDING_TYPE_NONE",
}


@dataclass(frozen=True)
class Violation:
    constraint: str   # a key of CONSTRAINTS
    field: str        # where, e.g. "WeightTensor.Sizes"
    message: str      # "<field> = <value>, but should be <what>"

    def __str__(self) -> str:
        return f"{self.message} [{self.constraint}: {CONSTRAINTS[self.constraint]}]"
