"""Part III's models are tiny (a 24k-parameter GRU, a 4k-parameter MLP): one thread runs
them about twice as fast as two (the module's outputs are identical at 1, 2 and 4)."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
