"""CReL on embeddings of sampled outputs (spec 02 §2.4-§2.5): the one pipeline that the semi-synthetic
captions experiment (`lib.crel.captions`) and the BLIP/GIT captioners (`lib.crel.hf_captioners`) share.

Per captioner: PCA of the condition x and of the sampled output embeddings (fitted on the LGM images), a CVAE
on the PCA codes conditioned on PCA(x), DQR + calibration on one sample per image (S^gamma(x)), and the
reliability score CReL(x) = min over z in S^gamma(x) of rho(PCA^-1(Dec(z; x)), reference) with
rho = cosine similarity (CLIP-SIM with the image as reference, BERT-SIM with the ground-truth caption) by default,
or another of SIMILARITIES.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.crel import method as crel
from lib.crel.cvae import CVAESettings, train_cvae
from lib.crel.flow import FlowSettings, train_flow
from lib.device import one_thread
from lib.linalg import PCA
from lib.params import check_choice
from lib.progress import progress as progress_bar

LGMS = ("cvae", "flow")
# rho(y, reference), higher is better: the paper's cosine (CLIP-SIM, BERT-SIM), the inner product, and the negative
# Euclidean distance (for outputs whose length means something, e.g. regression targets)
SIMILARITIES = ("cosine", "dot", "neg_euclidean")


def cosine_metric(pca_y: PCA):
    """rho(y, reference) = cos(PCA^-1(y), reference) in the full embedding space; higher is better."""
    def metric(y_pred: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cosine_similarity(pca_y.inverse_torch(y_pred), reference, dim=1)
    return metric


def similarity_metric(pca_y: PCA, similarity: str):
    """rho(PCA^-1(y), reference) for the PGD of CReL, one of SIMILARITIES (torch, differentiable, (B,))."""
    check_choice("similarity", similarity, SIMILARITIES)
    if similarity == "cosine":
        return cosine_metric(pca_y)

    def metric(y_pred: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        y = pca_y.inverse_torch(y_pred)
        return (y * reference).sum(1) if similarity == "dot" else -torch.linalg.vector_norm(y - reference, dim=1)
    return metric


def sample_similarities(samples: np.ndarray, reference: np.ndarray, similarity: str) -> np.ndarray:
    """rho of each sampled output with its reference: samples (n, M, D), reference (n, D) -> (n, M) float64."""
    check_choice("similarity", similarity, SIMILARITIES)
    if similarity == "cosine":
        return np.einsum("imd,id->im", samples, reference) / (
            np.linalg.norm(samples, axis=2) * np.linalg.norm(reference, axis=1)[:, None])
    if similarity == "dot":
        return np.einsum("imd,id->im", samples, reference)
    return -np.linalg.norm(samples - reference[:, None, :], axis=2)


@dataclass(frozen=True)
class EmbeddingModelSettings:
    """The LGM, DQR and PGD settings of CReL on embeddings (spec 02 §2.4 for the captions' values)."""

    lgm: str = "cvae"  # "cvae" (the paper's) | "flow" (a bijection of the PCA codes: exact Coverage-Y)
    pca_dim: int | None = 32
    latent_dim: int = 3  # the CVAE's r; the flow's codes have the PCA dimension
    n_directions: int = 64
    epochs: int = 20  # CVAE and DQR
    hidden: tuple[int, ...] = (256, 256)  # CVAE
    dqr_hidden: tuple[int, ...] = (128, 128, 128)
    alpha: float = 0.1
    pgd_starts: int = 50
    pgd_steps: int = 100
    pgd_lr: float = 0.05
    seed: int = 0


def _train_lgm(x: np.ndarray, y: np.ndarray, s: EmbeddingModelSettings):
    """The LGM on the PCA codes, and the number of DQR directions it needs: a flow's codes have the PCA
    dimension, and 4 r directions keep the DQR polytope bounded there."""
    check_choice("lgm", s.lgm, LGMS)
    if s.lgm == "flow":
        lgm = train_flow(x, y, settings=FlowSettings(transforms=4, hidden=s.hidden, epochs=s.epochs, batch_size=256,
                                                     lr=1e-3), seed=s.seed)
        return lgm, max(s.n_directions, 4 * lgm.latent_dim)
    cv = CVAESettings(hidden=s.hidden, epochs=s.epochs, batch_size=256, lr=1e-3)
    return train_cvae(x, y, latent_dim=s.latent_dim, settings=cv, seed=s.seed), s.n_directions


def calibrated_crel(lgm_pairs: tuple[np.ndarray, np.ndarray], dqr_pairs: tuple[np.ndarray, np.ndarray],
                    cal_pairs: tuple[np.ndarray, np.ndarray], s: EmbeddingModelSettings) -> crel.CReL:
    """The LGM trained on `lgm_pairs` (x, y), the DQR region on `dqr_pairs`, gamma calibrated on `cal_pairs` at
    level s.alpha, the per-direction level being alpha (spec §2.1 steps 2-4)."""
    lgm, n_directions = _train_lgm(*lgm_pairs, s)
    fit = crel.FitSettings(n_directions=n_directions, tau_dir=s.alpha,
                           dqr=crel.DQRSettings(epochs=s.epochs, hidden=s.dqr_hidden))
    model = crel.fit(*dqr_pairs, fit, x_dqr=dqr_pairs[0], y_dqr=dqr_pairs[1], lgm=lgm, seed=s.seed)
    return model.calibrate(*cal_pairs, s.alpha)


@one_thread()  # its PCA, LGM, DQR and PGD moved with the thread count (CReL-BERT by 3e-4 on a small run)
def crel_on_embeddings(x: np.ndarray, samples: np.ndarray, reference: np.ndarray, folds: dict[str, np.ndarray],
                       s: EmbeddingModelSettings, *, similarity: str = "cosine", progress: bool = False) -> dict:
    """CReL of one captioner from embeddings.

    x: (n, p) condition per image (e.g. its CLIP image embedding or one of its captions); samples: (n, M, D)
    embedded sampled outputs; reference: (n, D) what rho compares with; folds: image indices "lgm", "dqr"
    (all M samples each), "cal" (the first sample) and "test" (scored). Coverage-Z is measured on the first
    sample of each test image, which also starts the PGD. similarity: rho, one of SIMILARITIES (the paper's cosine
    by default). progress: a text bar over the two long steps (the LGM and DQR fits with the calibration, then the
    worst cases' projected descent).
    Returns {"mean_sim", "crel", "crel_per_x", "coverage_z", "gamma", "spread", "test_images", "worst_y",
    "model"}: worst_y (n_test, D) is PCA^-1 of the worst decoded output per test image.
    Runs at one CPU thread whatever `set_threads` chose (`lib.device.one_thread`): the same bits at any NUM_THREADS.
    """
    check_choice("similarity", similarity, SIMILARITIES)
    lgm_i, dqr_i, cal_i, test_i = (np.asarray(folds[f]) for f in ("lgm", "dqr", "cal", "test"))
    if min(len(lgm_i), len(dqr_i), len(test_i)) < 1 or len(cal_i) < crel.min_calibration_points(s.alpha):
        raise ValueError(f"folds of {len(lgm_i)}/{len(dqr_i)}/{len(cal_i)}/{len(test_i)} images are too few "
                         f"for alpha={s.alpha}.")
    pca_x, pca_y = PCA.fit(x[lgm_i], s.pca_dim), PCA.fit(samples[lgm_i].reshape(-1, samples.shape[2]), s.pca_dim)

    def pairs(idx: np.ndarray, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        y = samples[idx] if k is None else samples[idx, :k]
        return np.repeat(pca_x.transform(x[idx]), y.shape[1], 0), pca_y.transform(y.reshape(-1, y.shape[2]))

    bar = progress_bar(total=2, desc="CReL: fits, worst cases", enabled=progress)
    model = calibrated_crel(pairs(lgm_i), pairs(dqr_i), pairs(cal_i, 1), s)
    bar.update()
    x_te, ref, first = pca_x.transform(x[test_i]), reference[test_i], pca_y.transform(samples[test_i, 0])
    rel = model.reliability(x_te, ref, similarity_metric(pca_y, similarity), z_init=model.latent(x_te, first),
                            starts=s.pgd_starts, steps=s.pgd_steps, lr=s.pgd_lr, seed=s.seed)
    bar.update()
    bar.close()
    sims = sample_similarities(samples[test_i], ref, similarity)
    return {"mean_sim": float(sims.mean()), "sims": sims, "crel": float(rel["score"].mean()),
            "crel_per_x": rel["score"], "coverage_z": float(np.mean(model.contains(x_te, first))),
            "gamma": model.gamma, "spread": float(rel["spread"].mean()), "test_images": test_i,
            "worst_y": pca_y.inverse_torch(torch.as_tensor(rel["y"])).numpy(), "model": model}
