"""The numbers the paper reports (IRS, the Image Retrieval Score, and DiADM (CVPR 2025)) and its digest and our spec
quote: each named once, with its source, so that the code that compares with them and every sentence that states them
(`{{ paper.NAME }}` in docs/results/templates/*-04.md and 04-*.md; `lib.templates.paper_module`) read the same value.
"""

from __future__ import annotations

import pandas as pd

# The paper's main table (spec §1, "Main table"; ImageNet-512, SwAV features): IRS_∞,a of EDM-2
XL = 0.77  # EDM-2-XL, class-conditional: "the best model covers only 77 %" (spec §1, further claims)
XL_UNCONDITIONAL = 0.03  # EDM-2-XL, unconditional: "far worse: 0.77 vs 0.03" (spec §1, further claims)
XXL = 0.75  # EDM-2-XXL, class-conditional: "0.77 vs 0.75 ... within noise" (spec §1's caveat)
XS = 0.46  # EDM-2-XS: "XS to XL raises IRS from 46 % to 77 %" (spec §1, further claims)
XS_XL_FID = 0.9  # "... while FID changes by only 0.9" from EDM-2 XS to XL (spec §1, further claims)

# The paper's further claims (spec §1): DeepFloyd's diversity, and the recall at which it saturates
DEEPFLOYD = 0.5  # "DeepFloyd reaches about 50 % diversity when the prompt leaves gender unspecified"
RECALL_SATURATION = 0.8  # "Recall saturates at 0.8 once all classes are present" (ImageNet)

# The paper's DiADM ablation (spec §1, "DiADM versus EDM"; EDM -> DiADM at 1/10 of EDM's training budget; FID and
# IRS_∞,a): the FID reference set and the guidance of these numbers are not in the authors' code (their pipeline
# computes FID against train and test, and samples with and without guidance 1.4)
DIADM = pd.DataFrame(
    {"EDM FID": [51.59, 40.92, 24.29, 68.41], "DiADM FID": [22.28, 6.24, 6.76, 13.64],
     "EDM IRS_∞,a": [0.09, 0.23, 0.19, 0.18], "DiADM IRS_∞,a": [0.15, 1.51, 1.08, 0.69]},
    index=pd.Index(["ImageNet-512", "FFHQ", "ChestX-ray14", "CelebV-HQ"], name="dataset"))

# The paper's scale (spec §1's caveat, §5): ImageNet-1k train as the database, 50k samples of a model, and the
# half-width of the 90 % interval there ("about ±3.5 points")
IMAGENET_TRAIN, IMAGENET_SAMPLES = 1_281_167, 50_000
IMAGENET_HALF_WIDTH = 0.035

# The spec's reference simulation (spec §5, N = 10k, s = 9k, n = 2k): its coverage, its s / N and its n / N
SPEC_COVERAGE = 0.85
SPEC_TRUTH, SPEC_RATIO = 0.9, 0.2
