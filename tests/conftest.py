import os

import pytest
import torch

# One intra-op thread: on a loaded 2-core machine two threads make small ops ~50x slower.
torch.set_num_threads(1)


@pytest.fixture
def gen():
    """A seeded CPU generator for test data."""
    return torch.Generator().manual_seed(0)
