"""`lib`: the workbook's shared library.

Shared infrastructure: `params` (parameter checks), `cache` (configuration-keyed, atomic cache),
`glue` (results recorded in and read back from notebooks), `device`, `plotting`, `seeds`,
`data` (data root, checked files, the synthetic ring), `knn` (exact kNN search on faiss), `manifold`
(k-NN precision/recall/density/coverage).

Notebook 01 (ensemble PR curves): `ddpm`, `prcurves`, `stats`, `ensemble_pr`.

"Spec 01 §2.3" or "A2" in a docstring points to docs/specs/01-ensemble-pr-curves.md.
"""
