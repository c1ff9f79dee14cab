"""Notebook 04: the Image Retrieval Score (Dombrowski et al., CVPR 2025).

Its modules: `method`, retrieval, IRS_alpha, the IRS_inf maximum-likelihood estimate and its interval (spec 04 §1-§3);
`features`, the feature extractors and their cached features; `config`, notebook 04's settings (`IRSConfig`, its
presets, the extractor a setting names); `experiment`, validation and the cached pipeline notebook 04 calls; `stages`,
its expensive results declared once (`lib.stages`); `folders`, the paper-scale score on image folders, also of your own
generator (`irs_report` and the command `python -m lib.irs.folders`, docs/own-models.md); `embed`, image folders as
feature arrays for the commands that take arrays (`python -m lib.irs.embed`); `plots`, its figures that take more than a
few lines; `vote`, the extractor vote (paper §4.1); `readings`, the facts its reading cells state (their sentences:
readings-04.md); `paper`, the paper's and the spec's numbers, each named once; `generators`, the trained diffusion arms
(unconditional, DiADM, class) and their measurements (spec 04 §8); `train_generators`, their training as one command,
also for a GPU machine; `seed_study`, the arms trained again with other seeds and compared over seeds; `claims`, the
paper's claims and the verdicts the run decides (`lib.claims`). The paper's public functions are re-exported here, so
`lib.irs.<name>` keeps working.
"""

from lib.irs.method import (  # noqa: F401
    ALPHA_E,
    STIRLING_EXACT_MAX,
    adjusted_score,
    check_counts,
    equal_n_chunks,
    image_retrieval_score,
    irs_inf,
    log_likelihood,
    log_occupancy_pmf,
    log_stirling2,
    log_stirling_temme,
    mle_reachable,
    moment_estimate,
    nearest_train,
    retrieval_result,
    temme_G,
)


def __getattr__(name: str):
    """`irs_report` on first use (`lib.irs.folders` imports more than the paper's method needs)."""
    if name == "irs_report":
        from lib.irs.folders import irs_report

        return irs_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
