"""Part III fixtures.

The synthetic labs' models are tiny (a 24k-parameter GRU, a 4k-parameter MLP): one thread
runs them about twice as fast as two (the module's outputs are identical at 1, 2 and 4).
The model labs' tests keep the machine's threads and load the real SmolLM2-135M-Instruct
once per session (the FP32 cache makes it seconds after the first conversion of the GGUF
file)."""

import pytest
import torch

MODEL_LAB_MODULES = (
    "test_smollm2_model",
    "test_lab_runs",
    "test_smollm2_trainer",
    "test_suite_lab",
    "test_smollm2_data",
    "test_lab_commands",
)


@pytest.fixture(autouse=True, scope="module")
def one_thread(request):
    if request.module.__name__.rsplit(".", 1)[-1] in MODEL_LAB_MODULES:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def smollm2():
    from verifiable_grpo.models import smollm2 as loader

    return loader.load()


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """SmolLM2's real tokenizer alone: from the FP32 cache when it exists, else read from the
    GGUF file's metadata (seconds; the weights are not dequantised)."""
    from transformers import AutoTokenizer

    from verifiable_grpo.core.config import resolve
    from verifiable_grpo.models import smollm2 as loader

    cache = resolve(loader.CACHE)
    if (cache / "source.json").is_file():
        return AutoTokenizer.from_pretrained(str(cache))
    source = loader.gguf_file()
    return AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
