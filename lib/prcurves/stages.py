"""Notebook 01's expensive results, declared once (`lib.stages`): what each is, its policy, its form and the record
it returns (M members, n samples each, L points of a PR curve, R re-split or bootstrap draws)."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from lib.stages import CACHED, STORED, declare


class _Ensemble(TypedDict):
    params: dict  # the members' weights, stacked along a first axis of M ({name: tensor})
    losses: np.ndarray  # (steps, M) training losses
    snapshots: dict  # {step: {"params", "ema"?}} kept along the way (empty unless asked)


class Ensemble(_Ensemble, total=False):
    ema: dict  # the weights' moving average, when the training keeps one (ema_decay > 0)


class Samples(TypedDict):
    samples: np.ndarray  # (M, n, 2) every member's generated points


class Losses(TypedDict):
    losses: np.ndarray  # (steps, M)


class Curves(TypedDict):
    precision: np.ndarray  # (M, R, L); R = 1 for the plain curves
    recall: np.ndarray  # (M, R, L)
    lambdas: np.ndarray  # (L,) the slopes the curve is traced at


class FamilyMember(TypedDict):
    samples: np.ndarray  # (n, 2)
    history: np.ndarray  # (epochs,) training loss
    scale: np.ndarray  # (2,) the data's scale the member was trained on


class Family(TypedDict):
    samples: np.ndarray  # (M, n, 2)
    history: np.ndarray  # (M, epochs)
    scale: np.ndarray  # (M, 2)
    parameters: np.ndarray  # (1,) one member's parameter count
    precision: np.ndarray  # (M, 1, L)
    recall: np.ndarray  # (M, 1, L)
    lambdas: np.ndarray  # (L,)


class _Frontier(TypedDict):
    rows: np.ndarray  # () the rows as one JSON string


class Frontier(_Frontier, total=False):
    origin: np.ndarray  # () JSON: the command and commit that wrote rows converted from a CSV

CACHE_NAMESPACE = "01"  # notebook 01's cache namespace and stored layer (results/01/)

ENSEMBLE = declare(CACHE_NAMESPACE, "ensemble-*", "torch", CACHED, Ensemble,
                   "an ensemble's trained member weights and losses, resumable (`experiment.trained_ensemble`)")
SAMPLES = declare(CACHE_NAMESPACE, "samples-*", "npz", STORED, Samples,
                  "every member's generated samples (`experiment.generated_samples`)")
LOSSES = declare(CACHE_NAMESPACE, "losses-*", "npz", STORED, Losses,
                 "every member's training losses (`experiment.training_losses`)")
CURVES = declare(CACHE_NAMESPACE, "curves-*", "npz", STORED, Curves,
                 "every member's kNN PR curve, or its re-split or bootstrap draws (`experiment.cached_curves`)")
FAMILY_MEMBER = declare(CACHE_NAMESPACE, "family-*-member*", "npz", CACHED, FamilyMember,
                        "one VAE or flow member's samples and training history (`experiment.run_family`)")
FAMILY = declare(CACHE_NAMESPACE, "family-*-M*", "npz", STORED, Family,
                 "a VAE or flow ensemble's samples, histories and curves (`experiment.run_family`)")
FRONTIER = declare(CACHE_NAMESPACE, "authors-recipe-*", "npz", STORED, Frontier,
                   "the authors'-recipe study's rows of one C: members trained and evaluated at each budget "
                   "(`budget.frontier_study`)")
STAGES = (ENSEMBLE, SAMPLES, LOSSES, CURVES, FAMILY_MEMBER, FAMILY, FRONTIER)
