"""Notebook 03's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The trained heads' label says which task they were trained for (`HEADS`: the synthetic task's or CIFAR-10H's).
A method's predictions are ON_REQUEST: the stored layer keeps the synthetic task's DDU predictions, whose density
moves with the processor; every other prediction is recomputed from the stored heads in seconds.
"""

from __future__ import annotations

from lib.stages import CACHED, ON_REQUEST, PINNED, STORED, declare

CACHE_NAMESPACE = "03"  # notebook 03's cache namespace and stored layer (results/03/)

PRETRAINED = declare(CACHE_NAMESPACE, "resnet*", "npz", PINNED, dict,
                     "a pretrained CIFAR ResNet's features and probabilities of an image set "
                     "(`experiment.pretrained_outputs`)")
HEADS = {task: declare(CACHE_NAMESPACE, f"{task}-*", "torch", STORED, dict,
                       f"one method's trained head(s) on the {what} (`experiment.trained_method`)")
         for task, what in (("synth", "synthetic task"), ("cifar", "CIFAR-10H soft labels"))}
PREDICTION = declare(CACHE_NAMESPACE, "pred-*", "npz", ON_REQUEST, dict,
                     "one method's prediction on a set of inputs (`experiment.method_prediction`)",
                     why="stored for the synthetic task's DDU, whose density moves with the processor; the others "
                         "are recomputed from the stored heads")
ACTIVE_LEARNING = declare(CACHE_NAMESPACE, "al-*", "npz", STORED, dict,
                          "one method's active-learning curve and its NAUC (`experiment.active_learning`)")
PGAP_DRAWS = declare(CACHE_NAMESPACE, "pgap-draws-*", "npz", CACHED, dict,
                     "the P-gap's paired bootstrap draws under one loss (`experiment.pgap_pairs`)")
WHOLE_NETWORK = declare(CACHE_NAMESPACE, "whole-*", "torch", CACHED, dict,
                        "one whole network trained from scratch, resumable (`experiment.whole_networks`)")
WHOLE_PREDICTIONS = {variant: declare(CACHE_NAMESPACE, f"whole{infix}-pred-*", "npz", STORED, dict,
                                      f"one method's whole-network predictions, {what} "
                                      "(`experiment.whole_predictions`)")
                     for variant, infix, what in (("ours", "", "our recipe"),
                                                  ("recipe", "-recipe", "the authors' recipe"))}
STAGES = (PRETRAINED, *HEADS.values(), PREDICTION, ACTIVE_LEARNING, PGAP_DRAWS, WHOLE_NETWORK,
          *WHOLE_PREDICTIONS.values())
