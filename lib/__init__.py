"""`lib`: the workbook's shared library, a thin core plus one package per paper.

Shared core (any notebook may use it): `params` (parameter checks, presets), `cache` (configuration-keyed,
atomic cache), `glue` (results recorded in and read back from notebooks), `device` (CPU/GPU, threads),
`seeds`, `plotting`, `knn` (exact nearest neighbours), `manifold` (k-NN precision/recall/density/coverage),
`nn` (the small MLPs of notebooks 02 and 03), `data` (data root, checked files, CIFAR-10/10H, the synthetic
ring and banana), `models` (pretrained CIFAR ResNets).

One package per paper, each with the same anatomy: `<paper>/method.py` is the paper's mathematics,
`<paper>/experiment.py` the notebook's pipeline (presets, validation, cached stages), beside the paper's own
helpers. A paper's package imports the core only, never another paper's package (tests/test_layout.py).

- `lib.prcurves`: notebook 01, ensemble precision-recall curves (Morales, Jurie & Fadili 2025);
- `lib.crel`: notebook 02, CReL conformal reliability (ICML 2026);
- `lib.regret`: notebook 03, epistemic uncertainty evaluated by regret (NeurIPS 2026);
- `lib.irs`: notebook 04, the Image Retrieval Score (CVPR 2025).

"Spec 01 §2.3" in a docstring points to docs/specs/01-ensemble-pr-curves.md.

The flat modules of the first layout (`lib.stats`, `lib.ensemble_pr`, `lib.cvae`, ...) still import, as
aliases of their new homes (`MOVED_MODULES`), so users' code written against them keeps working.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED_MODULES: dict[str, str] = {
    "lib.ddpm": "lib.prcurves.ddpm",
    "lib.stats": "lib.prcurves.stats",
    "lib.ensemble_pr": "lib.prcurves.experiment",
    "lib.cvae": "lib.crel.cvae",
    "lib.conformal_baselines": "lib.crel.baselines",
    "lib.captions": "lib.crel.captions",
    "lib.hf_captioners": "lib.crel.hf_captioners",
    "lib.crel_experiments": "lib.crel.experiment",
    "lib.uq_methods": "lib.regret.uq",
    "lib.epistemic_sandbox": "lib.regret.sandbox",
    "lib.epistemic_regret": "lib.regret.experiment",
    "lib.features": "lib.irs.features",
    "lib.irs_experiment": "lib.irs.experiment",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the module at its new path (the same module object)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module) -> None:  # the new module is already executed
        pass


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
