"""The numbers the paper reports (CReL, conformal reliability (ICML 2026)) and its digest and our spec quote: each named
once, with its source, so that the code that compares with them and every sentence that states them (`{{ paper.NAME
}}` in docs/results/templates/*-02.md and 02-*.md; `lib.templates.paper_module`) read the same value.
"""

from __future__ import annotations
