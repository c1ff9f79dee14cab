"""Seeds: every random stream in the workbook is derived from explicit integers."""

from __future__ import annotations

import numpy as np


def derive_seed(*keys: int) -> int:
    """A 63-bit seed that depends on every key (order matters), for independent sub-streams.

    Example: `derive_seed(member_seed, 1)` seeds a member's sampling noise, distinct from its training stream.
    """
    if not keys or any(int(k) < 0 for k in keys):
        raise ValueError(f"derive_seed needs non-negative integer keys, got {keys!r}.")
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))
