"""Notebook 02's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The synthetic study's models (an LGM, the latent DQR on it, the output-space DQR) are ON_REQUEST: the stored layer
keeps the models of the run whose regions the figures draw (`experiment.synthetic_table_rows` with `with_model`,
the runtime and PCP studies of notebook 02's own run), the other tables' models are the cache's alone (a stored
table needs none of them). The label-to-image generators' weights and samples are notebook 04's
(`lib.diffusion.family`).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
from torch import nn

from lib.crel import cvae, flow
from lib.crel import method as crel
from lib.stages import ON_REQUEST, PINNED, STORED, declare

CACHE_NAMESPACE = "02"  # notebook 02's cache namespace and stored layer (results/02/)
# The classes a stored model is made of (lib.cache.load_torch's allow list)
MODEL_CLASSES = tuple(dict.fromkeys((*crel.CACHE_CLASSES, *cvae.CACHE_CLASSES, *flow.CACHE_CLASSES)))
KEPT = ("stored for the run whose regions the figures draw (a caller building a stored result on it keeps it), "
        "cached for the others")



class Embeddings(TypedDict):
    emb: np.ndarray  # (texts, 384) MiniLM's unit embeddings
    sentences_per_s: np.ndarray  # () the encoder's speed when it computed them


class LatentDQR(TypedDict):
    crel: crel.CReL  # the fitted CReL (its DQR on the LGM's codes; the LGM itself is the LGM stage's entry)


class Guard(TypedDict):
    attempt: int  # the training attempt chosen
    dead: list  # the chosen LGM's dead latent dimensions
    kl: list  # each latent dimension's KL to the prior
    collapsed_attempts: list  # the attempts refused as collapsed


class Table(TypedDict):
    rows: list  # one dict per method: coverage Z and Y, area, ... (`experiment.SYNTHETIC_COLUMNS`)
    test_scores: np.ndarray  # (n_test,) CReL's nonconformity scores of the test fold
    gamma: float  # the calibrated radius
    info: dict  # the calibration's: empty regions, pre-calibration coverage, n_cal, cal_scores


class Captioner(TypedDict):
    mean_rho: float  # mean BERT-SIM of the captioner's captions
    crel: float  # CReL-BERT: the mean worst case over the test images
    crel_per_x: np.ndarray  # (images,) the worst case per test image
    spread_mean: float  # the mean spread of the worst case over PGD's starts
    coverage_z: float
    gamma: float
    pre_coverage: float  # coverage before calibration
    q_alpha: np.ndarray  # (images,) the alpha-quantile of each test image's BERT-SIM over reference captions
    tail_sanity: float  # the share of worst cases at or below q_alpha + 0.01
    test_images: np.ndarray  # (images,) their rows
    worst_caption: np.ndarray  # (images,) the caption nearest each worst case
    rho_samples: np.ndarray  # (images, captions) the BERT-SIM of each test image's drawn captions
    pool_share: float | None  # the share of the worst cases in each pool (None: not measured)
    empty_regions: int


class LabelToImage(TypedDict):
    mean_rho: float  # the generator's mean rho (cosine to its class's prototype in a CIFAR ResNet's features)
    rho_per_class: np.ndarray  # (10,)
    rho: np.ndarray  # (n,) per image
    labels: np.ndarray  # (n,)
    crel: float  # CReL: the mean worst case over the classes
    crel_per_class: np.ndarray  # (10,)
    start_scores: np.ndarray  # (10, starts) PGD's worst case from each start, per class
    spread: float  # the mean spread of the worst case over the starts
    coverage_z: float
    gamma: float
    pre_coverage: float
    q_alpha: np.ndarray  # (10,) the alpha-quantile of rho per class
    tail_sanity: float
    recon_rho: float  # rho of the LGM's reconstructions of the test images
    pca_variance: float  # the share of the images' variance the LGM's PCA keeps
    worst_images: np.ndarray  # the worst-case images, uint8
    typical_images: np.ndarray
    typical_labels: np.ndarray
    empty_regions: int
    dead_dimensions: list
    seconds: float


LGM = declare(CACHE_NAMESPACE, "banana-*", "torch", ON_REQUEST, nn.Module,
              "an LGM (flow or CVAE) trained on one seed's lgm fold (`experiment.healthy_lgm`)", why=KEPT,
              allow=MODEL_CLASSES)
LATENT_DQR = declare(CACHE_NAMESPACE, "banana-dqr-*", "torch", ON_REQUEST, LatentDQR,
                     "CReL's DQR on an LGM's codes (`experiment.fitted_models`)", why=KEPT, allow=MODEL_CLASSES)
IDENTITY_DQR = declare(CACHE_NAMESPACE, "banana-dqr-identity-*", "torch", ON_REQUEST, crel.CReL,
                       "the DQR in the output space, which needs no LGM (`experiment.fitted_models`)", why=KEPT,
                       allow=MODEL_CLASSES)
GUARD = declare(CACHE_NAMESPACE, "guard-*", "torch", STORED, Guard,
                "the collapse guard's choice of an LGM training for one seed (`experiment.lgm_choice`)")
TABLE = declare(CACHE_NAMESPACE, "table-*", "torch", STORED, Table,
                "every method's coverage and area at one seed, alpha and LGM (`experiment.synthetic_table_rows`)")
EMBEDDINGS = declare(CACHE_NAMESPACE, "minilm-*", "npz", PINNED, Embeddings,
                     "MiniLM embeddings of a list of texts (`captions.cached_embeddings`)")
CAPTIONER = declare(CACHE_NAMESPACE, "captioner", "torch", STORED, Captioner,
                    "one captioner's CReL-BERT and mean BERT-SIM (`captions.run_captioner`)")
LABEL_TO_IMAGE = declare(CACHE_NAMESPACE, "l2i-*", "torch", STORED, LabelToImage,
                         "CReL of one label-to-image generator's set, or of the real images (`images.generator_crel`)")
STAGES = (LGM, LATENT_DQR, IDENTITY_DQR, GUARD, TABLE, EMBEDDINGS, CAPTIONER, LABEL_TO_IMAGE)
