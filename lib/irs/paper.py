"""The numbers the paper reports (IRS, the Image Retrieval Score, and DiADM (CVPR 2025)) and its digest and our spec
quote: each named once, with its source, so that the code that compares with them and every sentence that states them
(`{{ paper.NAME }}` in docs/results/templates/*-04.md and 04-*.md; `lib.templates.paper_module`) read the same value.
"""

from __future__ import annotations
