"""The numbers the paper reports (CReL, conformal reliability (ICML 2026)) and its digest and our spec quote: each named
once, with its source, so that the code that compares with them and every sentence that states them (`{{ paper.NAME
}}` in docs/results/templates/*-02.md and 02-*.md; `lib.templates.paper_module`) read the same value.
"""

from __future__ import annotations

ALPHAS = (0.1, 0.02)  # spec §1, Table 1: the miscoverage levels α of the paper's synthetic table, the headline first
_HEADLINE, _LOW = ALPHAS
TABLE = {  # spec §1, Table 1, the paper's synthetic table: (Coverage-Z, Coverage-Y, Area) per (method, α)
    ("CReL", _HEADLINE): (0.8953, 0.8915, 232.7), ("Feldman", _HEADLINE): (None, 0.8940, 234.5),
    ("DQR", _HEADLINE): (0.8823, 0.9145, 287.4), ("CReL", _LOW): (0.9770, 0.9760, 398.5),
    ("DQR", _LOW): (0.9818, 0.9872, 749.1), ("PCP", _HEADLINE): (None, None, 854.24),
}
TEST_POINTS = 4000  # spec §2.2: the paper's test fold, on which its single run's coverages are measured
SPREAD = 0.00027  # spec §1: the std of the worst case across the paper's 50 PGD starts
