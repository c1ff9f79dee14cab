"""Notebook 03: epistemic uncertainty evaluated by regret on CIFAR-10H (NeurIPS 2026).

Its modules: `method`, the regret decomposition T* = A* + E*, estimators, AuReC, Pareto gap (spec 03 §3-§4); `uq`, the
four uncertainty-quantification methods (MC-Dropout, ensembles, DDU, evidential); `sandbox`, the synthetic regression
sandbox with a known p*(y | x); `whole`, whole networks (an airbench-style net) trained from scratch per method, and the
compact form of their predictions; `store_whole`, the command that trains them into the cache and the conversion of
their first stored files into the stored layer; `experiment`, presets, validation and the cached pipeline notebook 03
calls; `stages`, its expensive results declared once (`lib.stages`); `plots`, its figures that take more than a few
lines (the width study); `theorem_lp`, the constrained problems as linear programs over all selectors; `density`, the
label-density study (k annotators per image); `readings`, the facts notebook 03's reading cells state (their sentences:
readings-03.md); `paper`, the paper's and the spec's quoted numbers, each named once; `claims`, the paper's claims and
the verdicts the run decides (`lib.claims`). `own`, the evaluation on your own predictions, uncertainty score and soft
labels: `regret_report` and the command `python -m lib.regret.own` (docs/own-models.md). The paper's public functions
are re-exported here, so `lib.regret.<name>` keeps working.
"""

from lib.regret.method import (  # noqa: F401
    CLASSIFICATION_LOSSES,
    CURVE_NORMS,
    JITTERS,
    LOSSES,
    PGAP_SCALES,
    Q_FLOOR,
    REGRESSION_LOSSES,
    SCORE_DECIMALS,
    TIES,
    area_under_curve,
    attainable_front,
    aurc,
    aurec,
    aurec_interval,
    aurec_ranking,
    calibration,
    check_loss,
    ddu_aleatoric,
    ddu_epistemic,
    decompose,
    default_coverages,
    dirichlet_draws,
    entropy,
    estimate,
    estimate_dirichlet,
    ex_aurec,
    expected_abs,
    first_argmax,
    gda_fit,
    gda_log_density,
    igd_plus,
    median_index,
    nondominated,
    normalise_rows,
    optimal_front,
    paired_differences,
    paired_draws,
    pareto_gap,
    pareto_gap_details,
    pgap_draws,
    pgap_pairs,
    regret_metrics,
    selection_order,
    selective_curve,
    selector_points,
    spearman,
    standardise,
    vacuity,
)


def __getattr__(name: str):
    """`regret_report` on first use (`lib.regret.own` imports more than the paper's method needs)."""
    if name == "regret_report":
        from lib.regret.own import regret_report

        return regret_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
