"""The MR² loss on a CUDA device against the same loss on the CPU (skipped without a GPU).

On CUDA the loss takes its fixed-shape, sync-free paths (dense pairs, B statistics slots when
B < K); on the CPU the label-dependent ones (sparse pairs, slots of the classes present). The
values, gradients and statistics must agree. Imports only torch and mr2's method layer, so it
runs on a bare GPU machine (``scripts/gpu_check.sh``).
"""

import pytest
import torch
from test_losses import assert_same_steps, mr2_steps

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("k,b", [(10, 64), (100, 512), (1000, 512)])
@pytest.mark.parametrize("method", ["mr2", "mr2_uniform", "mr2_no_rep"])
def test_cuda_loss_equals_cpu_loss(k, b, method):
    assert_same_steps(mr2_steps(method, k, b, 32, device="cuda"), mr2_steps(method, k, b, 32))
