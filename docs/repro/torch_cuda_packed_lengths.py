"""torch.nn.GRU (and RNN, LSTM) on CUDA, packed input whose lengths are one too many for the batch
(pack_padded_sequence(x, lengths) with len(lengths) = batch + 1): on the CPU the call raises a clean
RuntimeError ("INDICES element is out of DATA bounds"); on CUDA an index kernel hits a device-side
assert, and every later CUDA call in the process raises it too (the context is lost). Standalone:
torch. Seen on torch 2.11.0+cu130, cuDNN 9.19.0, an NVIDIA H200 (docs/gpu.md, "What the check found on an NVIDIA H200");
the drafted upstream report is docs/gpu.md, "A drafted issue: packed lengths past the batch".

    python docs/repro/torch_cuda_packed_lengths.py cpu
    python docs/repro/torch_cuda_packed_lengths.py cuda
"""
import sys

import torch
from torch.nn.utils.rnn import pack_padded_sequence

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
module = torch.nn.GRU(2, 3).to(device)
x = torch.rand(4, 3, 2, device=device)                     # [seq_length 4, batch 3, input 2]
try:
    packed = pack_padded_sequence(x, torch.tensor([2, 2, 2, 2]), enforce_sorted=False)   # 4 lengths, batch 3
    out, h = module(packed)
    h.sum().item()
    print(device, "invalid call: returned", tuple(h.shape))
except Exception as exc:  # noqa: BLE001 - what it raises is the finding
    print(device, "invalid call raised:", type(exc).__name__, str(exc).splitlines()[0][:150])
try:
    print(device, "a later valid call: ok", torch.ones(4, device=device).sum().item())
except Exception as exc:  # noqa: BLE001
    print(device, "a later valid call raised:", type(exc).__name__, str(exc).splitlines()[0][:150])
