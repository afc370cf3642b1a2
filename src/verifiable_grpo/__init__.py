"""GRPO from a verifiable reward: the training core of the book.

Importing the package needs no model; heavy modules are imported where used.
"""

import os as _os

# OpenMP threads that spin while waiting made small CPU steps 2-8x slower whenever another
# process shared the cores (measured here). Passive waiting changes timing, never results.
# It only takes effect if set before torch is first imported.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
