"""Seeds: every random stream in the workbook is derived from a run's seed and a named stream.

A module names each stream it draws as a constant `<WHAT>_STREAM` beside the code that uses it (e.g.
`lib.prcurves.ddpm.SAMPLING_STREAM`), so no bare number stands at a call site. Two derivations are in use, each
kept where its stored results were drawn with it (changing one would change every number those results hold):

- notebooks 01 and 04 hash: `derive_seed(seed, ..., X_STREAM)`, independent streams for any keys;
- notebooks 02 and 03 add: `seed + X_STREAM` (a small offset; a module that also steps through seeds, such as
  the ensemble members seed, seed + 1, ..., names offsets far from them, e.g. `PREDICTION_STREAM = 10_000`).
"""

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
