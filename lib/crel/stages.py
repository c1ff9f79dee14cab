"""Notebook 02's expensive results, declared once (`lib.stages`): what each is, its policy and its form.

The synthetic study's models (an LGM, the latent DQR on it, the output-space DQR) are ON_REQUEST: the stored layer
keeps the models of the run whose regions the figures draw (`experiment.synthetic_table_rows` with `with_model`,
the runtime and PCP studies of notebook 02's own run), the other tables' models are the cache's alone (a stored
table needs none of them). The label-to-image generators' weights and samples are notebook 04's
(`lib.diffusion.family`).
"""

from __future__ import annotations

from torch import nn

from lib.crel import cvae, flow
from lib.crel import method as crel
from lib.stages import ON_REQUEST, PINNED, STORED, declare

CACHE_NAMESPACE = "02"  # notebook 02's cache namespace and stored layer (results/02/)
# The classes a stored model is made of (lib.cache.load_torch's allow list)
MODEL_CLASSES = tuple(dict.fromkeys((*crel.CACHE_CLASSES, *cvae.CACHE_CLASSES, *flow.CACHE_CLASSES)))
KEPT = ("stored for the run whose regions the figures draw (a caller building a stored result on it keeps it), "
        "cached for the others")

LGM = declare(CACHE_NAMESPACE, "banana-*", "torch", ON_REQUEST, nn.Module,
              "an LGM (flow or CVAE) trained on one seed's lgm fold (`experiment.healthy_lgm`)", why=KEPT,
              allow=MODEL_CLASSES)
LATENT_DQR = declare(CACHE_NAMESPACE, "banana-dqr-*", "torch", ON_REQUEST, dict,
                     "CReL's DQR on an LGM's codes (`experiment.fitted_models`)", why=KEPT, allow=MODEL_CLASSES)
IDENTITY_DQR = declare(CACHE_NAMESPACE, "banana-dqr-identity-*", "torch", ON_REQUEST, crel.CReL,
                       "the DQR in the output space, which needs no LGM (`experiment.fitted_models`)", why=KEPT,
                       allow=MODEL_CLASSES)
GUARD = declare(CACHE_NAMESPACE, "guard-*", "torch", STORED, dict,
                "the collapse guard's choice of an LGM training for one seed (`experiment.lgm_choice`)")
TABLE = declare(CACHE_NAMESPACE, "table-*", "torch", STORED, dict,
                "every method's coverage and area at one seed, alpha and LGM (`experiment.synthetic_table_rows`)")
EMBEDDINGS = declare(CACHE_NAMESPACE, "minilm-*", "npz", PINNED, dict,
                     "MiniLM embeddings of a list of texts (`captions.cached_embeddings`)")
CAPTIONER = declare(CACHE_NAMESPACE, "captioner", "torch", STORED, dict,
                    "one captioner's CReL-BERT and mean BERT-SIM (`captions.run_captioner`)")
LABEL_TO_IMAGE = declare(CACHE_NAMESPACE, "l2i-*", "torch", STORED, dict,
                         "CReL of one label-to-image generator's set, or of the real images (`images.generator_crel`)")
STAGES = (LGM, LATENT_DQR, IDENTITY_DQR, GUARD, TABLE, EMBEDDINGS, CAPTIONER, LABEL_TO_IMAGE)
