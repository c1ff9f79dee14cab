"""`lib`: the workbook's shared library, a thin core plus one package per paper.

Shared core (any notebook may use it): `paths` (where files live: the checkout, the cache and results/ roots; the
regular-file check and SHA-256 of a file; imports nothing from `lib`), `params` (parameter checks, presets), `cache`
(the entry format of the configuration-keyed, atomic cache), `store` (its committed, read-only layer of stored
results in results/NN/<preset>/), `run` (a run's lookup order: cache, stored layer, compute; its counts), `stages`
(each notebook's expensive results declared once: namespace, form, policy), `lineage` (the code a result was
computed with: a result whose code changed since is computed again), `verify` (one stored result recomputed and
compared with the committed one, `make verify`), `claims` (the claims ledger: a paper's claims, the verdict of four
each takes from a run, the rules they share), `glue` (results recorded in and read back from notebooks), `device`
(CPU/GPU, threads), `seeds` (derived seeds, named streams), `plotting` (the house style, saving and showing
figures), `progress` (text progress bars), `knn` (exact nearest neighbours), `manifold` (k-NN
precision/recall/density/coverage), `metrics` (AuROC, Fréchet distance), `replicates` (an effect over training
seeds, with sampling and training noise), `linalg` (least-squares line, PCA), `nn` (the small MLPs of notebooks 02
and 03), `train` (the one training loop of the small torch models: seeded batches, optimiser, schedule, checkpoints;
the EMA), `provenance` (the git commit a stored result records; the run a page shows), `reading` (the notebooks'
sentences about their run, written by the run), `cli` (the one style of the `python -m lib...` commands), `make`
(what only `make` runs: the runner of `make run` and its HTML reports, the results pages, the book, sweeps on Dask,
the stored layers' writer, `make status`), `tables` (tables rounded to what their numbers mean, headed by the
papers' names), `templates` (the template language of the generated text; the Findings box each notebook shows at
its top), `data` (data root, checked files, CIFAR-10/10H, the synthetic ring and banana), `models` (pretrained CIFAR
ResNets, the image normaliser), `diffusion` (a small image-diffusion family: EDM's UNet, sampler and training, and
the trained CIFAR-10 family; notebooks 04 and 02).

One package per paper, each with the same anatomy: `<paper>/method.py` is the paper's mathematics,
`<paper>/experiment.py` the notebook's pipeline (presets, validation, cached stages), `<paper>/plots.py` the
notebook's figure helpers where it has any, beside the paper's own helpers. A paper's package imports the
core only, never another paper's package (tests/test_layout.py).

- `lib.prcurves`: notebook 01, ensemble precision-recall curves (Morales, Jurie & Fadili 2025);
- `lib.crel`: notebook 02, CReL conformal reliability (ICML 2026);
- `lib.regret`: notebook 03, epistemic uncertainty evaluated by regret (NeurIPS 2026);
- `lib.irs`: notebook 04, the Image Retrieval Score (CVPR 2025).

"Spec 01 §2.3" in a docstring points to docs/specs/01-ensemble-pr-curves.md.
"""
