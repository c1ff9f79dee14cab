"""`lib`: the workbook's shared library.

Shared infrastructure: `params` (parameter checks), `cache` (configuration-keyed, atomic cache),
`glue` (results recorded in and read back from notebooks), `device`, `plotting`, `seeds`,
`data` (data root, checked files, the synthetic ring), `knn` (exact kNN search on faiss), `manifold`
(k-NN precision/recall/density/coverage).

Notebook 01 (ensemble PR curves): `ddpm`, `prcurves`, `stats`, `ensemble_pr`.
"""
