"""Numeric precision helpers shared by the method layer."""

from __future__ import annotations

import torch

LOW_PRECISION = (torch.float16, torch.bfloat16)


def upcast(x: torch.Tensor) -> torch.Tensor:
    """Promote half-precision tensors (autocast outputs) to float32; keep float32/float64 as is.

    Losses and statistics accumulate in at least float32, and in float64 when asked to.
    """
    return x.float() if x.dtype in LOW_PRECISION else x
