"""Notebook 04's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The trained generators' weights and samples are declared with the family they belong to
(`lib.diffusion.family.WEIGHTS`, `SAMPLES`: namespace 04, shared with notebook 02) and listed here with the rest.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from lib.diffusion.family import NAMESPACE, SAMPLES, WEIGHTS
from lib.stages import CACHED, PINNED, STORED, declare

CACHE_NAMESPACE = NAMESPACE  # notebook 04's cache namespace and stored layer (results/04/), the family's too


class Features(TypedDict):
    feats: np.ndarray  # (images, dims) float32


class Retrieval(TypedDict):
    idx: np.ndarray  # (queries,) the index of each query's nearest database image


class GeneratorScores(TypedDict):
    grid: np.ndarray  # (16, H, W, 3) uint8: the images the figure shows
    grid_sources: np.ndarray  # (16,) the training row each conditions on (-1: none)
    by_extractor: dict  # {extractor: IRS, FID, precision, recall, ... of the set}
    idx: np.ndarray  # (n,) each sample's nearest training image under the main extractor

FEATURES = declare(CACHE_NAMESPACE, "feats-*", "npz", PINNED, Features,
                   "an extractor's features of one image set (`lib.irs.features.cached_features`)")
RETRIEVAL = declare(CACHE_NAMESPACE, "nn-*", "npz", STORED, Retrieval,
                    "the nearest training image of each query image, per extractor (`lib.irs.experiment.retrieve`)")
TOY = declare(CACHE_NAMESPACE, "toy-*", "torch", STORED, list,
              "the toy generators' IRS, FID and k-NN precision, recall, density and coverage on one extractor "
              "(`lib.irs.experiment.toy_rows`)")
TOY_COVERAGE_K = declare(CACHE_NAMESPACE, "toy-coverage-k-*", "torch", CACHED, dict,
                         "the toy generators' coverage at several k (`lib.irs.experiment.toy_coverage_by_k`)")
GENERATOR_SCORES = declare(CACHE_NAMESPACE, "genscores-*", "torch", STORED, GeneratorScores,
                           "a trained or anchor generator's set measured under every evaluation extractor "
                           "(`lib.irs.generators.measure_set`)")
FOLDER_FEATURES = declare(CACHE_NAMESPACE, "folder-*", "npz", PINNED, Features,
                          "an extractor's features of every image of a folder (`lib.irs.folders.folder_features`)")
STAGES = (FEATURES, FOLDER_FEATURES, RETRIEVAL, TOY, TOY_COVERAGE_K, GENERATOR_SCORES, WEIGHTS, SAMPLES)
