import os

import pytest
import torch

torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture
def gen():
    """A seeded CPU generator for test data."""
    return torch.Generator().manual_seed(0)
