"""Notebook 01: ensemble precision-recall curves of DDPMs on a 2-D ring (Morales, Jurie & Fadili 2025).

Its modules: `method`, the kNN precision-recall estimator and ensemble bands (spec 01 §3); `stats`, point-wise paired
tests across ensemble members, multiplicity corrections (spec 01 §4); `ddpm`, the denoising diffusion models trained as
an ensemble (spec 01 §2); `experiment`, presets, validation and the cached pipeline notebook 01 calls; `stages`, its
expensive results declared once (`lib.stages`); `plots`, its figure helpers (an ensemble's band, significant ranges);
`readings`, the facts its reading cells state (their sentences: readings-01.md); `paper`, the paper's numbers, each
named once; `budget`, the training-budget study that chose the `cpu` preset; `stored`, per-member curves stored from a
run the notebook did not train; `spaces`, the same samples evaluated in fixed embeddings of the plane (the paper's
feature-space limitation); `families`, ensembles of a small VAE and a neural spline flow on the ring (the paper's
model-family limitation); `claims`, the paper's claims and the verdicts the run decides (`lib.claims`). `own`, the
evaluation on your own generators' samples: `ensemble_report` and the command `python -m lib.prcurves.own`
(docs/own-models.md). The paper's public functions are re-exported here, so `lib.prcurves.<name>` keeps working.
"""

from lib.prcurves.method import (  # noqa: F401
    DUP_RECALL,
    auc_raw,
    default_k,
    ensemble_band,
    error_rates,
    frontier,
    interpolate_precision,
    lambda_grid,
    max_f_beta,
    member_matrix,
    neighbour_scores,
    pr_curve,
    pr_curve_from_split,
    recall_grid,
    seeded_split,
    split_half,
    summarise,
)
from lib.prcurves.stats import (  # noqa: F401
    ALTERNATIVES,
    CORRECTIONS,
    TESTS,
    benjamini_hochberg,
    compare_scalars,
    decomposition_bands,
    permutation_maxT,
    pointwise_compare,
    variance_decomposition,
    welch_t,
    wilcoxon_signflip,
)


def __getattr__(name: str):
    """`ensemble_report` on first use (`lib.prcurves.own` imports more than the paper's method needs)."""
    if name == "ensemble_report":
        from lib.prcurves.own import ensemble_report

        return ensemble_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
