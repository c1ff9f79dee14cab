"""Comparisons over training seeds: an effect measured once per independently trained replicate (a generator arm
trained with another seed), each measurement with its own sampling error, decided with both noises counted.

A trained model's score varies for two reasons: the samples drawn from it (sampling noise, which the per-arm
bootstrap or binomial intervals measure) and the training run itself (training noise: initialisation, data order,
diffusion noise, which only another seed shows). Each seed s gives one effect d_s (for example log IRS of DiADM
minus log IRS of the unconditional arm, both arms of seed s) with sampling standard error se_s. The d_s are then
independent draws of d_s = delta + t_s + e_s, training t_s ~ (0, tau^2) and sampling e_s ~ (0, se_s^2), so

- the mean over seeds estimates delta, and Student's t interval over the S seeds (df = S - 1) covers delta with
  both noises counted, without assuming tau (it uses the seeds' own spread, which contains both);
- the spread of the d_s beyond the sampling errors estimates tau: tau^2 = max(0, var(d) - mean(se^2))
  (the method of moments, as DerSimonian and Laird's random-effects meta-analysis);
- a single seed decides nothing about training noise: its interval is the sampling interval alone, and the verdict
  says so (`verdict`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.params import check_real

VERDICTS = ("holds", "fails", "undecided")


@dataclass(frozen=True)
class SeedComparison:
    """An effect over training seeds: per seed its value and sampling standard error; over seeds the mean, its
    interval at `level` (Student's t over seeds, or the sampling interval when there is one seed), the spread of the
    seeds' effects and the training standard deviation it implies, and the verdict on "effect > 0"."""

    effects: tuple[float, ...]
    sampling_se: tuple[float, ...]
    mean: float
    lower: float
    upper: float
    level: float
    spread: float  # the standard deviation of the per-seed effects (NaN for one seed)
    training_sd: float  # sqrt(max(0, spread^2 - mean sampling variance)) (NaN for one seed)
    verdict: str  # "holds": the interval is above 0; "fails": below 0; "undecided": it holds 0, or one seed
    why: str

    @property
    def seeds(self) -> int:
        return len(self.effects)

    @property
    def same_sign(self) -> int:
        """How many seeds' effects have the sign of the mean."""
        return int(sum(np.sign(e) == np.sign(self.mean) for e in self.effects))


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def compare_over_seeds(effects, sampling_se, *, level: float = 0.95) -> SeedComparison:
    """The effect over training seeds (module docstring). `effects`, `sampling_se`: one value per seed (finite,
    the standard errors >= 0). The verdict is on the direction "effect > 0": *holds* when the whole interval is
    above 0, *fails* when it is below, *undecided* otherwise, and always *undecided* with one seed (training noise
    unmeasured)."""
    from scipy.stats import t as student

    d, se = np.asarray(effects, dtype=float), np.asarray(sampling_se, dtype=float)
    if d.ndim != 1 or d.size == 0 or se.shape != d.shape:
        raise ValueError(f"effects and sampling_se must be 1-d of one length >= 1, got shapes {d.shape} and "
                         f"{se.shape}.")
    if not (np.isfinite(d).all() and np.isfinite(se).all() and (se >= 0).all()):
        raise ValueError(f"effects must be finite and sampling_se finite and >= 0, got {d.tolist()} and "
                         f"{se.tolist()}.")
    check_real("level", level, low=0.0, high=1.0, open_low=True, open_high=True)
    mean, s = float(d.mean()), d.size
    if s == 1:
        half = _normal_quantile(0.5 + level / 2) * float(se[0])
        spread = training_sd = math.nan
        verdict, why = "undecided", "one training seed: the interval holds sampling noise only"
    else:
        spread = float(d.std(ddof=1))
        half = float(student.ppf(0.5 + level / 2, s - 1)) * spread / math.sqrt(s)
        training_sd = math.sqrt(max(0.0, spread ** 2 - float(np.mean(se ** 2))))
        lower, upper = mean - half, mean + half
        verdict = "holds" if lower > 0 else "fails" if upper < 0 else "undecided"
        why = (f"t interval over {s} seeds " + ("above 0" if verdict == "holds" else "below 0" if verdict == "fails"
                                                else "holds 0"))
    return SeedComparison(effects=tuple(map(float, d)), sampling_se=tuple(map(float, se)), mean=mean,
                          lower=mean - half, upper=mean + half, level=level, spread=spread, training_sd=training_sd,
                          verdict=verdict, why=why)


def most_seeds(folder: Path, prefix: str, channels: int, command: str) -> Path:
    """The committed measurements file `<prefix>-c<channels>-seeds-<s>-<s>....json` of `folder` that covers the most
    seeds; FileNotFoundError naming the folder and the `command` that writes one when there is none."""
    pattern = re.compile(rf"{re.escape(prefix)}-c(?P<channels>\d+)-seeds-(?P<seeds>\d+(?:-\d+)*)\.json")
    found = [(len(m["seeds"].split("-")), p) for p in sorted(folder.glob(f"{prefix}-*.json"))
             if (m := pattern.fullmatch(p.name)) and int(m["channels"]) == channels]
    if not found:
        raise FileNotFoundError(f"no {prefix}-c{channels}-seeds-*.json in {folder}: `python -m {command} "
                                f"--channels {channels} --out ...` writes one")
    return max(found)[1]


def log_ratio_se(lower: float, upper: float, *, level: float) -> float:
    """The standard error of log(estimate) implied by a two-sided `level` interval [lower, upper] of a positive
    estimate, from the interval's width on the log scale (delta method): (log upper - log lower) / (2 z)."""
    if not (0 < lower <= upper) or not all(map(math.isfinite, (lower, upper))):
        raise ValueError(f"an interval of a positive estimate must have 0 < lower <= upper, got [{lower}, {upper}].")
    return (math.log(upper) - math.log(lower)) / (2 * _normal_quantile(0.5 + level / 2))
