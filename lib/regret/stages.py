"""Notebook 03's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The trained heads' label says which task they were trained for (`HEADS`: the synthetic task's or CIFAR-10H's).
A method's predictions are ON_REQUEST: the stored layer keeps the synthetic task's DDU predictions, whose density
moves with the processor; every other prediction is recomputed from the stored heads in seconds.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from lib.stages import CACHED, ON_REQUEST, PINNED, STORED, declare


class Pretrained(TypedDict):
    feats: np.ndarray  # (n, 64) the ResNet's penultimate features
    probs: np.ndarray  # (n, 10) its softmax


class Heads(TypedDict):
    states: list  # one state dict per head (an ensemble's members; one otherwise)
    history: np.ndarray  # (heads, epochs) training loss
    ddu_fit: dict | None  # DDU's class-conditional Gaussians {means, chol, jitter}; None for the other methods


class Prediction(TypedDict, total=False):  # one of three shapes, by method
    probs: np.ndarray  # (n, 10) DDU's softmax
    log_density: np.ndarray  # (n, 10) DDU's class-conditional log densities
    embedding_dim: np.ndarray  # () DDU's feature dimension
    samples: np.ndarray  # (S, n, 10) MC-Dropout's passes or the ensemble's members
    alpha: np.ndarray  # (n, 10) Evidential's Dirichlet concentrations


class ActiveLearning(TypedDict):
    budget: np.ndarray  # (rounds,) labelled points
    accuracy: np.ndarray  # (rounds,)
    nauc: np.ndarray  # () the normalised area under the curve


class PGapDraws(TypedDict):
    point: np.ndarray  # (methods,) the P-gap of each method
    draws: np.ndarray  # (B, methods) its paired bootstrap draws


class WholeNetwork(TypedDict):
    state: dict  # the network's state dict
    history: list  # training loss per epoch
    seconds: float  # training wall time
    epoch_seconds: list  # per epoch


class _WholePredictions(TypedDict):
    ood_id: np.ndarray  # (n_ood,) the method's CE epistemic estimate Ê on in-distribution images
    meta: np.ndarray  # () JSON: what was predicted with what


class WholePredictions(_WholePredictions, total=False):
    ood_mnist: np.ndarray  # Ê on each OOD set the run asks for (`experiment.OOD_SETS`)
    ood_gaussian_noise: np.ndarray
    ood_blur: np.ndarray
    ood_uniform_noise: np.ndarray
    test_probs: np.ndarray  # the test predictions, in the method's shape (Prediction)
    test_log_density: np.ndarray
    test_samples: np.ndarray
    test_alpha: np.ndarray

CACHE_NAMESPACE = "03"  # notebook 03's cache namespace and stored layer (results/03/)

PRETRAINED = declare(CACHE_NAMESPACE, "resnet*", "npz", PINNED, Pretrained,
                     "a pretrained CIFAR ResNet's features and probabilities of an image set "
                     "(`experiment.pretrained_outputs`)")
HEADS = {task: declare(CACHE_NAMESPACE, f"{task}-*", "torch", STORED, Heads,
                       f"one method's trained head(s) on the {what} (`experiment.trained_method`)")
         for task, what in (("synth", "synthetic task"), ("cifar", "CIFAR-10H soft labels"))}
PREDICTION = declare(CACHE_NAMESPACE, "pred-*", "npz", ON_REQUEST, Prediction,
                     "one method's prediction on a set of inputs (`experiment.method_prediction`)",
                     why="stored for the synthetic task's DDU, whose density moves with the processor; the others "
                         "are recomputed from the stored heads")
ACTIVE_LEARNING = declare(CACHE_NAMESPACE, "al-*", "npz", STORED, ActiveLearning,
                          "one method's active-learning curve and its NAUC (`experiment.active_learning`)")
PGAP_DRAWS = declare(CACHE_NAMESPACE, "pgap-draws-*", "npz", CACHED, PGapDraws,
                     "the P-gap's paired bootstrap draws under one loss (`experiment.pgap_pairs`)")
WHOLE_NETWORK = declare(CACHE_NAMESPACE, "whole-*", "torch", CACHED, WholeNetwork,
                        "one whole network trained from scratch, resumable (`experiment.whole_networks`)")
WHOLE_PREDICTIONS = {variant: declare(CACHE_NAMESPACE, f"whole{infix}-pred-*", "npz", STORED, WholePredictions,
                                      f"one method's whole-network predictions, {what} "
                                      "(`experiment.whole_predictions`)")
                     for variant, infix, what in (("ours", "", "our recipe"),
                                                  ("recipe", "-recipe", "the authors' recipe"))}
STAGES = (PRETRAINED, *HEADS.values(), PREDICTION, ACTIVE_LEARNING, PGAP_DRAWS, WHOLE_NETWORK,
          *WHOLE_PREDICTIONS.values())
