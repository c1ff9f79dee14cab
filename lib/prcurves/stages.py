"""Notebook 01's expensive results, declared once (`lib.stages`): what each is, its policy and its form."""

from __future__ import annotations

from lib.stages import CACHED, STORED, declare

CACHE_NAMESPACE = "01"  # notebook 01's cache namespace and stored layer (results/01/)

ENSEMBLE = declare(CACHE_NAMESPACE, "ensemble-*", "torch", CACHED, dict,
                   "an ensemble's trained member weights and losses, resumable (`experiment.trained_ensemble`)")
SAMPLES = declare(CACHE_NAMESPACE, "samples-*", "npz", STORED, dict,
                  "every member's generated samples (`experiment.generated_samples`)")
LOSSES = declare(CACHE_NAMESPACE, "losses-*", "npz", STORED, dict,
                 "every member's training losses (`experiment.training_losses`)")
CURVES = declare(CACHE_NAMESPACE, "curves-*", "npz", STORED, dict,
                 "every member's kNN PR curve, or its re-split or bootstrap draws (`experiment.cached_curves`)")
FAMILY_MEMBER = declare(CACHE_NAMESPACE, "family-*-member*", "npz", CACHED, dict,
                        "one VAE or flow member's samples and training history (`experiment.run_family`)")
FAMILY = declare(CACHE_NAMESPACE, "family-*-M*", "npz", STORED, dict,
                 "a VAE or flow ensemble's samples, histories and curves (`experiment.run_family`)")
FRONTIER = declare(CACHE_NAMESPACE, "authors-recipe-*", "npz", STORED, dict,
                   "the authors'-recipe study's rows of one C: members trained and evaluated at each budget "
                   "(`budget.frontier_study`)")
STAGES = (ENSEMBLE, SAMPLES, LOSSES, CURVES, FAMILY_MEMBER, FAMILY, FRONTIER)
