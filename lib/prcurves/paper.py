"""The numbers the paper reports (Ensemble precision-recall curves (Morales, Jurie & Fadili 2025)) and its digest and
our spec quote: each named once, with its source, so that the code that compares with them and every sentence that
states them (`{{ paper.NAME }}` in docs/results/templates/*-01.md and 01-*.md; `lib.templates.paper_module`) read the
same value.
"""

from __future__ import annotations

MEMBERS = 30  # spec §1 (C1): M, the models per complexity of the authors' released curves
EPOCHS = {1: 10_001, 2: 10_001, 4: 15_001, 8: 20_001}  # spec §2.3: the authors' training epochs per complexity C
FAILED_AUC = 0.9  # spec §1's table: a model with AUC_raw below this counts as failed ("# models with AUC < 0.9")
WIDTH_RECALLS = (0.5, 0.8, 0.95)  # spec §1's table: the recalls at which it gives the band's width ("band at recall")

# Spec §1's table: the authors' released curves (n = 10,000, MEMBERS models per C), AUC_raw as in metrics_.json;
# {C: {"auc_mean", "auc_sd", "auc_median", "below_0.9" (models below FAILED_AUC), "width" (mean p90 - p10),
# "width@r" (the width at recall r of WIDTH_RECALLS)}}
TABLE = {
    C: {"auc_mean": mean, "auc_sd": sd, "auc_median": median, "below_0.9": below, "width": width,
        **{f"width@{r}": w for r, w in zip(WIDTH_RECALLS, at)}}
    for C, mean, sd, median, below, width, at in [
        (1, 0.829, 0.205, 0.919, 14, 0.424, (0.52, 0.60, 0.56)),
        (2, 0.964, 0.022, 0.975, 1, 0.057, (0.01, 0.10, 0.22)),
        (4, 0.976, 0.015, 0.981, 0, 0.040, (0.01, 0.05, 0.23)),
        (8, 0.869, 0.246, 0.976, 5, 0.546, (0.40, 0.96, 0.95)),
    ]
}
FRACTION_PAIRED_T = 0.442  # paper, Fig. 3 (spec §1, C6): the share of the recall grid where C = 4 beats C = 2
