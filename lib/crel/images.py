"""CReL on trained label-to-image generators (spec 02 §2.6): the paper's text-to-image setting, with a CIFAR-10
class for the prompt.

The generators are the class-conditional arm of the shared CIFAR-10 diffusion family (`lib.diffusion.family`,
trained once, for notebook 04, and read from the same cache entries): one width at several training budgets,
and at several classifier-free guidance scales. Real held-out images of each class are a reference row (the
data's own spread). Per generator, with x = the class (one-hot) and Y = a generated image:

- rho(y, x) = cos(f(y), mu_x): f is the pretrained CIFAR-10 ResNet's pooled feature of the image (bilinearly
  upsampled to 32 x 32, as notebook 04's extractors see it), mu_x the normalised mean feature of real held-out
  images of class x at the generators' resolution. It is the analogue of CLIP-SIM (the cosine between an image
  embedding and its prompt's embedding), differentiable, and higher is better;
- the LGM: PCA of the flattened images (fitted on the LGM fold), then the notebook's CVAE (latent r) on the codes,
  conditioned on x; the DQR region, and gamma calibrated on the calibration fold (`lib.crel.embeddings`);
- CReL(x) = min over z in S^gamma(x) of rho(PCA^-1(Dec(z; x)), x), by projected descent from `pgd_starts` starts,
  for each class; CReL-rho is its mean over the classes, the mean rho that of every sample.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from lib.crel import method as crel
from lib.crel import paper
from lib.crel.cvae import dead_dimensions
from lib.crel.embeddings import EmbeddingModelSettings, calibrated_crel
from lib.crel.stages import LABEL_TO_IMAGE
from lib.device import one_thread
from lib.diffusion import family as fam
from lib.linalg import PCA
from lib.models import cifar_resnet
from lib.params import PARAMETER, check_choice, check_int, check_list, check_probability, check_real, shown
from lib.run import Run

VERSION = 1  # bump when `generator_crel` computes differently
FOLDS_STREAM = 31  # the split of a set's samples into the LGM / DQR / calibration / test folds
PGD_STREAM = 37  # the projected descent's random starts
LABEL = ("Trained label-to-image generators: the class-conditional diffusion arm of notebook 04 (16 x 16 CIFAR-10, the "
         "class as the prompt), not the paper's text-to-image models.")
REAL = "real held-out"  # the reference row: real test images of each class, as many as a generated set holds


@dataclass(frozen=True)
class ImageSettings:
    """Everything the label-to-image section depends on (spec 02 §2.6). Notebook 02's IMAGE_GENERATORS,
    PGD_STARTS and PGD_STEPS set `generators`, `pgd_starts` and `pgd_steps`; a field whose name a parameter of the
    synthetic table or the captions has (FOLDS, LGM, N_DIRECTIONS, SEED) is not set by it."""

    # the generators: notebook 04's of the same preset (not a parameter, nor walked into for parameters)
    family: fam.Family = field(default_factory=fam.Family, metadata={PARAMETER: None})
    # the class-conditional sets ranked: (width, fraction of the training budget, guidance scale)
    generators: tuple[tuple[int, float, float], ...] = field(default=(
        (32, 1.0, 1.0), (32, 1.0, 2.0), (32, 1.0, 4.0), (32, 0.5, 1.0), (32, 0.25, 1.0), (16, 1.0, 1.0)),
        metadata={PARAMETER: "IMAGE_GENERATORS"})
    include_real: bool = True  # the reference row of real held-out images
    # samples of each set: lgm / dqr / cal / test
    folds: tuple[int, int, int, int] = field(default=(1250, 500, 500, 250), metadata={PARAMETER: None})
    rho_depth: int = 20  # the CIFAR ResNet of rho (20: 2.8 x cheaper per descent step than 56)
    prototype_per_class: int = 500  # real test images of each class averaged into mu_x
    lgm: str = field(default="cvae", metadata={PARAMETER: None})
    pca_dim: int = 32
    latent_dim: int = 3
    n_directions: int = field(default=64, metadata={PARAMETER: None})
    epochs: int = 100  # CVAE and DQR
    hidden: tuple[int, ...] = (256, 256)
    alpha: float = 0.1
    pgd_starts: int = 50  # the paper's
    pgd_steps: int = 100  # spec §2.2: 50-100
    pgd_lr: float = 0.05
    shown_per_class: int = 3  # typical samples kept per class for the image grid
    seed: int = field(default=0, metadata={PARAMETER: None})

    def model_settings(self) -> EmbeddingModelSettings:
        return EmbeddingModelSettings(lgm=self.lgm, pca_dim=self.pca_dim, latent_dim=self.latent_dim,
                                      n_directions=self.n_directions, epochs=self.epochs, hidden=self.hidden,
                                      alpha=self.alpha, pgd_starts=self.pgd_starts, pgd_steps=self.pgd_steps,
                                      pgd_lr=self.pgd_lr, seed=self.seed)

    def specs(self) -> list[fam.GeneratedSet]:
        """The generated sets, each at the fraction of whole epochs its requested fraction trains
        (`lib.diffusion.family.budget_fraction`), and labelled with it."""
        return [fam.GeneratedSet("class", w, fam.budget_fraction(self.family, f, "images.generators fraction"), g)
                for w, f, g in self.generators]


def _check_generator(entry) -> None:
    """One entry of images.generators: [width, budget fraction, guidance]."""
    if isinstance(entry, (str, bytes)) or not isinstance(entry, (list, tuple)) or len(entry) != 3:
        raise ValueError(f"{shown('images.generators')} entry {entry!r} must be [width, budget fraction, guidance].")
    w, f, g = entry
    check_int("images.generators width", w, minimum=8, maximum=512)
    check_real("images.generators fraction", f, low=0.0, high=1.0, open_low=True)
    check_real("images.generators guidance", g, low=0.0, high=100.0)


def _check_distinct_sets(s: ImageSettings) -> None:
    """Two entries that make one set (fractions that round to the same whole epochs, say) would be two rows of one
    generator: refused, naming both."""
    seen: dict[str, object] = {}
    for entry, spec in zip(s.generators, s.specs()):
        if spec.label in seen:
            raise ValueError(f"{shown('images.generators')}: {seen[spec.label]!r} and {entry!r} are one set, "
                             f"{spec.label!r} (a budget trains whole epochs: {round(spec.fraction * s.family.epochs)} "
                             f"of the {s.family.epochs}); list it once.")
        seen[spec.label] = entry


def validate(s: ImageSettings) -> None:
    """Raise ValueError naming the setting (as `images.<field>`) for any bad value."""
    for entry in check_list("images.generators", s.generators):
        _check_generator(entry)
    _check_distinct_sets(s)
    if len(s.folds) != 4 or any(not isinstance(k, int) or k < 1 for k in s.folds) or sum(s.folds) > s.family.n:
        raise ValueError(f"images.folds={s.folds!r} must be four positive sample counts summing to at most the "
                         f"{s.family.n} samples of a set.")
    check_probability("images.alpha", s.alpha)
    if s.folds[2] < crel.min_calibration_points(s.alpha):
        raise ValueError(f"images.folds[2]={s.folds[2]} calibration samples are too few for alpha={s.alpha} (need "
                         f">= {crel.min_calibration_points(s.alpha)}).")
    if s.folds[3] < fam.NUM_CLASSES:
        raise ValueError(f"images.folds[3]={s.folds[3]}: the test fold needs a sample of each of the "
                         f"{fam.NUM_CLASSES} classes.")
    check_choice("images.rho_depth", s.rho_depth, cifar_resnet.DEPTHS)
    check_int("images.prototype_per_class", s.prototype_per_class, minimum=1, maximum=750)
    check_choice("images.lgm", s.lgm, ("cvae", "flow"))
    check_int("images.pca_dim", s.pca_dim, minimum=1, maximum=3 * s.family.resolution ** 2)
    check_int("images.latent_dim", s.latent_dim, minimum=1)
    check_int("images.pgd_starts", s.pgd_starts, minimum=1)
    check_int("images.pgd_steps", s.pgd_steps, minimum=0)


# ----------------------------------------------------------------------------------------------------
# rho: the cosine of a CIFAR ResNet feature with the class's mean real feature
# ----------------------------------------------------------------------------------------------------
class Similarity:
    """rho(y, x) = cos(f(upsample(y)), mu_x) with f the pretrained CIFAR ResNet's 64-d pooled feature.

    `of_images` scores uint8 images (rounded bilinear upsampling, `lib.diffusion.family.for_extractor`, as notebook
    04's extractors); `of_pixels` scores float images in [0, 1], (B, r * r * 3) rows in (H, W, C) order,
    differentiably (the same upsampling without rounding), for the projected descent."""

    def __init__(self, depth: int, prototypes: np.ndarray, resolution: int):
        self.net, _ = cifar_resnet.load_pretrained(depth)
        self.net.requires_grad_(False)
        self.set_prototypes(prototypes)
        self.resolution = resolution
        self._mean = torch.tensor(cifar_resnet.MEAN).view(1, 3, 1, 1)
        self._std = torch.tensor(cifar_resnet.STD).view(1, 3, 1, 1)

    def set_prototypes(self, prototypes: np.ndarray) -> None:
        """mu_x: the rows of `prototypes` (10, 64), normalised."""
        self.prototypes = torch.as_tensor(prototypes / np.linalg.norm(prototypes, axis=1, keepdims=True),
                                          dtype=torch.float32)

    def features_of_images(self, images: np.ndarray) -> np.ndarray:
        return cifar_resnet.predict(self.net, fam.for_extractor(images), features=True)

    def of_images(self, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        f = torch.as_tensor(self.features_of_images(images))
        return F.cosine_similarity(f, self.prototypes[torch.as_tensor(labels)], dim=1).double().numpy()

    def of_pixels(self, pixels: torch.Tensor, prototypes: torch.Tensor) -> torch.Tensor:
        r = self.resolution
        x = pixels.clamp(0.0, 1.0).reshape(-1, r, r, 3).permute(0, 3, 1, 2)
        if r != 32:
            x = F.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
        return F.cosine_similarity(self.net.features((x - self._mean) / self._std), prototypes, dim=1)

    def metric(self, pca: PCA):
        """rho of PCA codes, as `crel.CReL.reliability` takes it: metric(codes (B, k), mu rows (B, 64))."""
        return lambda codes, reference: self.of_pixels(pca.inverse_torch(codes), reference)


def held_out_classes(family: fam.Family, per_class: int, offset: int = 0) -> dict:
    """{"images", "labels"}: CIFAR-10 test images offset .. offset + per_class - 1 of each class at the family's
    resolution (never seen by the generators)."""
    from lib.data import cifar10

    split = cifar10.load_cifar10(family.cifar_source)["test"]
    rows = fam.first_per_class(split.labels, per_class, offset)
    return {"images": fam.downsample(split.images[rows], family.resolution), "labels": split.labels[rows]}


def similarity(s: ImageSettings) -> Similarity:
    """rho with mu_x from the first `prototype_per_class` test images of each class."""
    real = held_out_classes(s.family, s.prototype_per_class)
    rho = Similarity(s.rho_depth, np.ones((fam.NUM_CLASSES, cifar_resnet.FEATURE_DIM)), s.family.resolution)
    feats = rho.features_of_images(real["images"])
    rho.set_prototypes(np.stack([feats[real["labels"] == c].mean(0) for c in range(fam.NUM_CLASSES)]))
    return rho


# ----------------------------------------------------------------------------------------------------
# The sets and their CReL (cached and stored, one entry per set)
# ----------------------------------------------------------------------------------------------------
def sample_folds(labels: np.ndarray, s: ImageSettings) -> dict[str, np.ndarray]:
    perm = np.random.default_rng(s.seed + FOLDS_STREAM).permutation(len(labels))
    cuts = np.cumsum((0, *s.folds))
    folds = {n: np.sort(perm[a:b]) for n, a, b in zip(("lgm", "dqr", "cal", "test"), cuts[:-1], cuts[1:])}
    missing = set(range(fam.NUM_CLASSES)) - set(labels[folds["test"]].tolist())
    if missing:
        raise ValueError(f"the test fold of {s.folds[3]} samples has no sample of classes {sorted(missing)}; "
                         "give images.folds a larger test fold.")
    return folds


def real_set(s: ImageSettings) -> dict:
    """The reference row's samples: as many real test images per class as a generated set holds on average,
    after the prototypes' images."""
    per_class = s.family.n // fam.NUM_CLASSES
    return held_out_classes(s.family, per_class, offset=s.prototype_per_class)


def set_samples(s: ImageSettings, spec: fam.GeneratedSet | None, *, run: Run) -> dict:
    """{"images", "labels"} of a generated set (the family's cache entry, trained and sampled by `run` if missing),
    or of the real reference (spec None)."""
    if spec is None:
        return real_set(s)
    low = fam.database(s.family)
    out = fam.generated_images(s.family, low, spec, run=run)
    return {"images": out["images"], "labels": fam.set_labels(s.family, low, spec)}


def generator_crel(s: ImageSettings, spec: fam.GeneratedSet | None, run: Run) -> dict:
    """CReL-rho and mean rho of one set (the real reference when spec is None); cached and stored (`lib.store`):
    a stored run reads it without the generators' weights. A missing set is sampled on `run.device`."""
    label = REAL if spec is None else spec.label
    key = {"v": VERSION, "settings": asdict(s), "set": label}
    if spec is not None and spec.fraction < 1:  # its set may have been the full budget's: family.set_key
        key["snapshot"] = 2
    slug = "real" if spec is None else spec.slug
    samples = lambda: set_samples(s, spec, run=run)  # noqa: E731
    return run.stage(LABEL_TO_IMAGE, f"l2i-{slug}", key, lambda: _generator_crel(s, samples()))


@one_thread()  # cached: the same bits at any NUM_THREADS
def _generator_crel(s: ImageSettings, data: dict) -> dict:
    start = time.perf_counter()
    images, labels = data["images"], np.asarray(data["labels"])
    rho_net = similarity(s)
    rho = rho_net.of_images(images, labels)
    folds = sample_folds(labels, s)
    y = images.reshape(len(images), -1).astype(np.float64) / 255.0
    x = np.eye(fam.NUM_CLASSES)[labels]
    pca = PCA.fit(y[folds["lgm"]], s.pca_dim)

    def pairs(fold: str) -> tuple[np.ndarray, np.ndarray]:
        return x[folds[fold]], pca.transform(y[folds[fold]])

    model = calibrated_crel(pairs("lgm"), pairs("dqr"), pairs("cal"), s.model_settings())
    dead = dead_dimensions(model.lgm, pairs("lgm")[1], pairs("lgm")[0])[0]  # a collapsed latent dimension, if any
    x_test, y_test = pairs("test")
    classes = np.arange(fam.NUM_CLASSES)
    first = np.array([folds["test"][labels[folds["test"]] == c][0] for c in classes])  # a start per class
    rel = model.reliability(np.eye(fam.NUM_CLASSES), rho_net.prototypes.numpy(), rho_net.metric(pca),
                            z_init=model.latent(x[first], pca.transform(y[first])), starts=s.pgd_starts,
                            steps=s.pgd_steps, lr=s.pgd_lr, seed=s.seed + PGD_STREAM)
    worst = pca.inverse_torch(torch.as_tensor(rel["y"], dtype=torch.float64)).numpy()
    recon = np.clip(pca.inverse_torch(torch.as_tensor(y_test)).numpy(), 0, 1)
    q_alpha = np.array([np.quantile(rho[labels == c], s.alpha, method="inverted_cdf") for c in classes])
    shown = np.concatenate([np.flatnonzero(labels == c)[: s.shown_per_class] for c in classes])
    return {"mean_rho": float(rho.mean()), "rho_per_class": np.array([rho[labels == c].mean() for c in classes]),
            "rho": rho.astype(np.float32), "labels": labels.astype(np.int8),
            "crel": float(rel["score"].mean()), "crel_per_class": rel["score"], "start_scores": rel["start_scores"],
            "spread": float(rel["spread"].mean()), "coverage_z": float(np.mean(model.contains(x_test, y_test))),
            "gamma": model.gamma, "pre_coverage": model.info["pre_calibration_coverage"], "q_alpha": q_alpha,
            "tail_sanity": float(np.mean(rel["score"] <= q_alpha + 0.01)),
            "recon_rho": float(rho_net.of_images(_to_uint8(recon), labels[folds["test"]]).mean()),
            "pca_variance": _explained(pca, y[folds["lgm"]]),
            "worst_images": _to_uint8(worst), "typical_images": images[shown], "typical_labels": labels[shown],
            "empty_regions": model.info.get("empty_regions", 0), "dead_dimensions": dead,
            "seconds": time.perf_counter() - start}


def _to_uint8(rows: np.ndarray) -> np.ndarray:
    side = int(round((rows.shape[1] / 3) ** 0.5))
    return np.round(np.clip(rows, 0, 1) * 255).astype(np.uint8).reshape(len(rows), side, side, 3)


def _explained(pca: PCA, y: np.ndarray) -> float:
    centred = y - pca.mean
    return float(np.square(centred @ pca.components.T).sum() / np.square(centred).sum())


def label_to_image(s: ImageSettings, run: Run) -> dict:
    """{label: `generator_crel`} for every generator of the settings, in their order, then the real reference.
    The sets are computed in increasing budget, so that each continues its run's checkpoint
    (`lib.diffusion.family.trained_weights`)."""
    specs = s.specs()
    done = {spec.label: generator_crel(s, spec, run) for spec in sorted(specs, key=lambda spec: spec.fraction)}
    out = {spec.label: done[spec.label] for spec in specs}
    if s.include_real:
        out[REAL] = generator_crel(s, None, run)
    return out


# ----------------------------------------------------------------------------------------------------
# What notebook 02 shows
# ----------------------------------------------------------------------------------------------------
MEAN, WORST = "mean ρ", "CReL-ρ"  # the two scores the table ranks by


def crel_table(results: dict[str, dict]) -> pd.DataFrame:
    """One row per set: mean rho and its rank among the generators, CReL-rho and its rank, the standard deviation
    of rho over the samples (how concentrated the scores are: the paper's reason for its reversal), Coverage-Z on
    the test fold, the spread of the worst case across starts (mean over classes of the std), the model-free
    alpha-quantile of rho (mean over classes) and the mean rho of the test fold's PCA reconstructions ("recon.").
    The real reference is not ranked."""
    rows = pd.DataFrame({label: {MEAN: r["mean_rho"], WORST: r["crel"], "sd of ρ": float(np.std(r["rho"])),
                                 "Coverage-Z": r["coverage_z"],
                                 "spread": r["spread"], "q_α of ρ": float(np.mean(r["q_alpha"])),
                                 "ρ recon.": r["recon_rho"]}
                         for label, r in results.items()}).T
    generators = rows.index != REAL
    for column, name, at in ((MEAN, "rank (ρ)", 1), (WORST, "rank (CReL)", 3)):
        ranks = pd.Series(np.nan, index=rows.index)
        ranks[generators] = rows.loc[generators, column].rank(ascending=False)
        rows.insert(at, name, ranks)
    return rows.rename_axis("set")


def reversal_facts(table: pd.DataFrame) -> dict:
    """Which generator each score ranks first and last, Kendall's tau between the two rankings, and the pairs
    the rankings order differently (a rank reversal), with the largest mean-rho gap among them."""
    from scipy.stats import kendalltau

    g = table.dropna(subset=["rank (ρ)"])
    mean, worst = g[MEAN], g[WORST]
    pairs = [(a, b) for i, a in enumerate(g.index) for b in g.index[i + 1:]
             if np.sign(mean[a] - mean[b]) * np.sign(worst[a] - worst[b]) < 0]
    tau = kendalltau(mean, worst).statistic if len(g) > 1 else float("nan")
    return {"best_mean": mean.idxmax(), "best_crel": worst.idxmax(), "worst_mean": mean.idxmin(),
            "worst_crel": worst.idxmin(), "tau": float(tau),
            "reversed_pairs": pairs, "n_pairs": len(g) * (len(g) - 1) // 2}


def section_facts(results: dict[str, dict], table: pd.DataFrame) -> dict:
    """What notebook 02's reading of this section states: `reversal_facts` with, per reversed pair, whether the
    model-free alpha-quantile of rho orders it as CReL does ("samples") or not ("set") and whether the CReL winner's
    rho is the more concentrated (the paper's reason for BLIP-base's reversal), how far apart the unguided sets
    (budgets and widths at w = 1) lie in mean rho and in CReL-rho, and the pairs that the
    alpha-quantile itself orders unlike the mean; over the generators the ranges of
    Coverage-Z, of the spread across starts (and its ratio to the paper's), of tail sanity, the mean gap between
    mean rho and the rho of the LGM's PCA reconstructions, the sets whose CVAE lost a latent dimension, and the
    real reference's scores where it was measured."""
    gens = {label: r for label, r in results.items() if label != REAL}

    def span(key: str) -> tuple[float, float]:
        values = [float(r[key]) for r in gens.values()]
        return min(values), max(values)

    worst_gap = {label: r["mean_rho"] - r["crel"] for label, r in gens.items()}
    facts = reversal_facts(table)
    tail = table["q_α of ρ"]
    # a reversed pair (a above b in mean, below in CReL) is "in the samples" when the model-free alpha-quantile of
    # rho orders them as CReL does (a's own samples have the heavier lower tail), else "in the set" (the LGM's
    # calibrated set, not the samples' tail, puts a's worst case below b's)
    facts["reasons"] = {(a, b): "samples" if tail[a] < tail[b] else "set" for a, b in facts["reversed_pairs"]}
    # the paper's reason for its reversal: the CReL winner's scores are the more concentrated (sd of rho)
    facts["concentration"] = {(a, b): bool(table.at[b, "sd of ρ"] < table.at[a, "sd of ρ"])
                              for a, b in facts["reversed_pairs"]}
    mean = table.loc[list(gens), MEAN]
    facts["tail_reversed_pairs"] = [(a, b) for i, a in enumerate(mean.index) for b in mean.index[i + 1:]
                                    if np.sign(mean[a] - mean[b]) * np.sign(tail[a] - tail[b]) < 0]
    unguided = [label for label in gens if label.endswith(" w1")]  # budgets and widths, without guidance
    facts["unguided_ranges"] = {column: float(np.ptp(table.loc[unguided, column])) if unguided else float("nan")
                                for column in (MEAN, WORST)}
    return {**facts, "coverage": span("coverage_z"), "spread": span("spread"),
            "spread_ratio": span("spread")[0] / paper.SPREAD, "tail": span("tail_sanity"),
            "recon_gap": float(np.mean([r["mean_rho"] - r["recon_rho"] for r in gens.values()])),
            "largest_gap": max(worst_gap, key=worst_gap.get), "smallest_gap": min(worst_gap, key=worst_gap.get),
            "collapsed": [label for label, r in gens.items() if r["dead_dimensions"]],
            "real": {k: results[REAL][k] for k in ("mean_rho", "crel", "coverage_z")} if REAL in results else None}
