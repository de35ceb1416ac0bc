"""Where reading a tensor's value on the host is free, the method takes data-dependent fast paths."""

from __future__ import annotations

import torch


def host_reads_are_free(device: torch.device) -> bool:
    """True where reading a tensor's value on the host forces no device synchronisation: the CPU.

    Code with a data-dependent fast path (``nonzero``, ``.item()``) takes it only here, so that
    the same step stays free of host syncs on CUDA.
    """
    return device.type == "cpu"
