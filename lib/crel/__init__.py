"""Notebook 02: CReL, conformal reliability of conditional generators (Gao et al., ICML 2026).

Its modules: `method`, directional quantile regions, the conformal radius, the CReL score (spec 02 §3); `cvae`, the
paper's latent generative model (conditional VAE) with its collapse guard; `flow`, a conditional normalising flow
(zuko), a bijective LGM whose Coverage-Y is exact; `evaluation`, Coverage-Y and area measured exactly (bijective LGM) or
by the decoded-set distance, and Feldman et al.'s region measured the same way; `baselines`, the Y-grid, the DQR in the
output space and PCP, the other compared rows; `embeddings`, CReL on embeddings of sampled outputs; `captions`, the
MS-COCO captions experiment on sentence embeddings; `hf_captioners`, BLIP/GIT captioners scored with CLIP, the paper's
online path; `experiment`, presets, validation and the cached pipeline notebook 02 calls; `stages`, its expensive
results declared once (`lib.stages`); `plots`, its figures of a condition's latent region and decoded set and of the
generators' worst cases; `conditional`, coverage per bin of x, the PGD's spread across starts and the runtime's growth
factors; `images`, CReL of the trained label-to-image generators (notebook 04's class-conditional diffusion arm,
`lib.diffusion.family`); `guidance_seeds`, the guidance pair w = 2 / w = 4 of those generators over training seeds;
`readings`, the facts notebook 02's reading cells state (their sentences: readings-02.md); `paper`, the paper's numbers,
each named once; `claims`, the paper's claims and the verdicts the run decides (`lib.claims`). `own`, the evaluation on
your own conditional generator's samples or their embeddings: `crel_report` and the command `python -m lib.crel.own`
(docs/own-models.md). The paper's public functions are re-exported here, so `lib.crel.<name>` keeps working.
"""

from lib.crel.method import (  # noqa: F401
    CALIBRATION_SCORES,
    DQR_STREAM,
    EMPTY_REGION,
    INFLATIONS,
    CReL,
    DQRSettings,
    FitSettings,
    chebyshev_center,
    conformal_radius,
    directions,
    distance_to_region,
    distances_to_regions,
    fit,
    is_shifted_set,
    min_calibration_points,
    polygon,
    polygon_distances,
    project_inflated,
    projected_descent,
    steiner_area,
    train_dqr,
)


def __getattr__(name: str):
    """`crel_report` on first use (`lib.crel.own` imports more than the paper's method needs)."""
    if name == "crel_report":
        from lib.crel.own import crel_report

        return crel_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
