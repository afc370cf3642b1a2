"""Moved to part3/smollm2/loader.py; this name stays until the branches that import it merge."""
import sys

from verifiable_grpo.part3.smollm2 import loader

sys.modules[__name__] = loader
