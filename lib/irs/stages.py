"""Notebook 04's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The trained generators' weights and samples are declared with the family they belong to
(`lib.diffusion.family.WEIGHTS`, `SAMPLES`: namespace 04, shared with notebook 02) and listed here with the rest.
"""

from __future__ import annotations

from lib.diffusion.family import NAMESPACE, SAMPLES, WEIGHTS
from lib.stages import CACHED, PINNED, STORED, declare

CACHE_NAMESPACE = NAMESPACE  # notebook 04's cache namespace and stored layer (results/04/), the family's too

FEATURES = declare(CACHE_NAMESPACE, "feats-*", "npz", PINNED, dict,
                   "an extractor's features of one image set (`lib.irs.features.cached_features`)")
RETRIEVAL = declare(CACHE_NAMESPACE, "nn-*", "npz", STORED, dict,
                    "the nearest training image of each query image, per extractor (`lib.irs.experiment.retrieve`)")
TOY = declare(CACHE_NAMESPACE, "toy-*", "torch", STORED, list,
              "the toy generators' IRS, FID and k-NN precision, recall, density and coverage on one extractor "
              "(`lib.irs.experiment.toy_rows`)")
TOY_COVERAGE_K = declare(CACHE_NAMESPACE, "toy-coverage-k-*", "torch", CACHED, dict,
                         "the toy generators' coverage at several k (`lib.irs.experiment.toy_coverage_by_k`)")
GENERATOR_SCORES = declare(CACHE_NAMESPACE, "genscores-*", "torch", STORED, dict,
                           "a trained or anchor generator's set measured under every evaluation extractor "
                           "(`lib.irs.generators.measure_set`)")
FOLDER_FEATURES = declare(CACHE_NAMESPACE, "folder-*", "npz", PINNED, dict,
                          "an extractor's features of every image of a folder (`lib.irs.folders.folder_features`)")
STAGES = (FEATURES, FOLDER_FEATURES, RETRIEVAL, TOY, TOY_COVERAGE_K, GENERATOR_SCORES, WEIGHTS, SAMPLES)
