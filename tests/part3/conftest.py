"""One load of the real SmolLM2-135M-Instruct per test session (the FP32 cache makes it
seconds after the first conversion of the GGUF file)."""
import pytest


@pytest.fixture(scope="session")
def smollm2():
    from verifiable_grpo.part3 import lab1_model

    return lab1_model.load()
