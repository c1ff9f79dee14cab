"""The trained CIFAR-10 generators that notebooks 04 and 02 share: one family of diffusion models on the first
`train_per_class` training images of each class at `resolution`, in three arms, trained and sampled once into the
cache and read by both notebooks (spec 04 §8, spec 02 §2.6).

- `unconditional`: no condition;
- `diadm`: each training image's own feature vector as its condition (DiADM; notebook 04 supplies the
  conditioning extractor, EfficientNet-Lite0);
- `class`: the CIFAR-10 class, label dropout `label_dropout`, sampled at classifier-free guidance scales.

A `GeneratedSet` names one set of `n` samples: an arm at a width, its EMA weights at a fraction of the budget, a
guidance scale. Each trained arm and each set is a cache entry in namespace "04" (`NAMESPACE`: the family was
first trained for notebook 04; its keys and file names stay those, key policy (lib.store)), so notebook 02 reads the
very weights and samples that notebook 04 measures, and nothing trains twice. A conditioned set conditions on `n`
training rows drawn once (`source_rows`); `set_labels` gives the class of each sample of a class-conditional set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import torch
import torch.nn.functional as F

from lib.cache import cache_path
from lib.diffusion.training import Recipe, load_denoiser, one_hot, sample, train_denoiser
from lib.params import PARAMETER, shown
from lib.run import Run
from lib.seeds import derive_seed
from lib.stages import PINNED, declare
from lib.train import checkpoint_epoch

NAMESPACE = "04"  # the cache namespace of the family's entries (first trained for notebook 04)
ARMS = ("unconditional", "diadm", "class")
CONDITION_OF = {"unconditional": "none", "diadm": "feature", "class": "class"}
NUM_CLASSES = 10
GENERATORS_VERSION = 1  # salt of the arms' and sets' keys, frozen (lib.lineage detects code changes)
SOURCES_STREAM = 11  # the training rows a conditioned set conditions on
SAMPLES_STREAM = 13  # the sampler's starting noise
TRAIN_STREAM = 17  # the arms' training (data order, noise), equal for every arm


class Weights(TypedDict):
    ema: dict  # the EMA denoiser's state dict (float32, CPU)
    history: list  # mean loss per epoch
    epoch_seconds: list
    steps: int
    images_seen: int  # the images of every batch trained on
    parameters: int


class Checkpoint(TypedDict):  # an unfinished training, resumable (`lib.train.checkpoint_epoch`)
    net: dict
    opt: dict
    generator: torch.Tensor  # the data order's random state
    torch_rng: torch.Tensor
    state: dict
    config: dict


class Images(TypedDict):
    images: np.ndarray  # (n, H, W, 3) uint8
    sources: np.ndarray  # (n,) the training row each image conditions on (-1: none)


# The family's two stages (lib.stages), in notebook 04's namespace; lib.irs.stages lists them with 04's own
WEIGHTS = declare(NAMESPACE, "diffusion-*", "torch", PINNED, (Weights, Checkpoint),
                  "a trained arm's EMA weights after a number of epochs (`trained_weights`)")
SAMPLES = declare(NAMESPACE, "gen-*", "npz", PINNED, Images,
                  "a generated set's images and the training row each conditions on (`generated_images`)")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Family:
    """What a trained arm and a set sampled from it depend on, besides the arm, width and condition: the
    database (the first `train_per_class` CIFAR-10 training images of each class, area-averaged to
    `resolution`), the training budget and recipe, the sampler, the set size and the seed. Each notebook's config
    holds one (notebook 04's `IRSConfig.family`, notebook 02's `images.family`), from `FAMILIES` for its preset,
    so that both notebooks of one preset read the same cache entries. Where a notebook walks into it (04), each
    field is set by the notebook parameter its metadata names (`lib.params.setting_parameters`): `GEN_STEPS`
    sets `family.steps`, and `SEED` and `CIFAR_SOURCE` set the family's as well as the notebook's own."""

    resolution: int = field(default=16, metadata={PARAMETER: "GEN_RESOLUTION"})
    train_per_class: int = field(default=2000, metadata={PARAMETER: "GEN_TRAIN_PER_CLASS"})
    epochs: int = field(default=25, metadata={PARAMETER: "GEN_EPOCHS"})  # the budget, in epochs of the database
    batch: int = field(default=128, metadata={PARAMETER: "GEN_BATCH"})
    lr: float = field(default=1e-3, metadata={PARAMETER: "GEN_LR"})
    # the class arm's label dropout (DiADM has none, as the authors')
    label_dropout: float = field(default=0.1, metadata={PARAMETER: "GEN_LABEL_DROPOUT"})
    # Heun steps (2 x steps - 1 network evaluations; EDM's CIFAR-10 setting)
    steps: int = field(default=18, metadata={PARAMETER: "GEN_STEPS"})
    n: int = field(default=2500, metadata={PARAMETER: "GEN_N"})  # samples per generated set
    seed: int = field(default=0, metadata={PARAMETER: "SEED"})
    # lib.data.cifar10.load_cifar10's source of the database
    cifar_source: str = field(default="jpeg", metadata={PARAMETER: "CIFAR_SOURCE"})


# The family of each preset of notebooks 04 and 02: the one place its values are typed
FAMILIES = {
    "smoke": Family(resolution=8, train_per_class=30, epochs=4, batch=16, steps=4, n=250),
    "cpu": Family(),
    "paper": Family(resolution=32, train_per_class=5000, epochs=200, steps=32),
}


@dataclass(frozen=True)
class GeneratedSet:
    """One generated set: an arm of width `channels`, its EMA at `fraction` of the training budget, sampled at
    classifier-free `guidance`; a DiADM set conditioned on `heldout` (SYN pool) features instead of the
    database's is notebook 04's held-out control."""

    arm: str
    channels: int
    fraction: float = 1.0
    guidance: float = 1.0
    heldout: bool = False

    @property
    def label(self) -> str:
        """"class c32 48% w2": the fraction as the percentage it is (to 4 digits; `budget_fraction` makes a request
        the fraction of whole epochs a run trains, so the label states the budget used)."""
        text = f"{self.arm} c{self.channels} {100 * self.fraction:.4g}%"
        text += f" w{self.guidance:g}" if self.arm == "class" else ""
        return text + (" held-out cond." if self.heldout else "")

    @property
    def slug(self) -> str:
        return self.label.replace(" ", "-").replace("%", "pct").replace(".", "")


def recipe_of(family: Family, channels: int, arm: str) -> Recipe:
    return Recipe(channels=channels, batch_size=family.batch, lr=family.lr,
                  label_dropout=family.label_dropout if arm == "class" else 0.0)


# ----------------------------------------------------------------------------------------------------
# Images at the family's resolution
# ----------------------------------------------------------------------------------------------------
def downsample(images: np.ndarray, size: int) -> np.ndarray:
    """(n, H, W, 3) uint8 -> (n, size, size, 3) uint8: the mean of each (H / size)^2 block, rounded."""
    n, h, w, _ = images.shape
    if h % size or w % size:
        raise ValueError(f"cannot downsample {h} x {w} images to {size} x {size} by whole blocks.")
    blocks = images.reshape(n, size, h // size, size, w // size, 3).astype(np.float32).mean(axis=(2, 4))
    return np.round(blocks).astype(np.uint8)


def for_extractor(images: np.ndarray, size: int = 32) -> np.ndarray:
    """(n, h, w, 3) uint8 -> (n, size, size, 3) uint8, bilinear (the same map for every set and extractor)."""
    if images.shape[1] == size:
        return images
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float()
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()


def first_per_class(labels: np.ndarray, per_class: int, offset: int = 0) -> np.ndarray:
    """Row indices of the images offset .. offset + per_class - 1 of each class, in original order."""
    rows = [np.flatnonzero(labels == c)[offset: offset + per_class] for c in range(NUM_CLASSES)]
    if any(len(r) < per_class for r in rows):
        raise ValueError(f"fewer than {offset + per_class} images in some class.")
    return np.sort(np.concatenate(rows))


def database(family: Family) -> dict:
    """{"train": (10 m, r, r, 3) uint8, "train_labels", "train_up": the 32 x 32 bilinear copy}: the family's
    training images (the first m = train_per_class CIFAR-10 training images of each class at resolution r)."""
    from lib.data import cifar10

    split = cifar10.load_cifar10(family.cifar_source)["train"]
    rows = first_per_class(split.labels, family.train_per_class)
    low = downsample(split.images[rows], family.resolution)
    return {"train": low, "train_labels": split.labels[rows], "train_up": for_extractor(low)}


# ----------------------------------------------------------------------------------------------------
# Conditions, training and sampling (cached in NAMESPACE)
# ----------------------------------------------------------------------------------------------------
def condition_rows(family: Family, low: dict, arm: str, conditioning, *, heldout: bool = False,
                   rows: np.ndarray | None = None) -> np.ndarray | None:
    """The condition vectors of database rows `rows` (all by default), or of SYN rows when `heldout`: the
    conditioning features for DiADM (`conditioning(images_up, label)`), one-hot classes for the class arm, None
    for the unconditional."""
    if arm == "unconditional":
        return None
    pool = "syn" if heldout else "train"
    if arm == "class":
        cond = one_hot(low[f"{pool}_labels"], NUM_CLASSES)
    else:
        cond = conditioning(low[f"{pool}_up"], f"{pool}{len(low[pool])}-lr{family.resolution}")
    return cond if rows is None else cond[rows]


def training_key(family: Family, low: dict, arm: str, channels: int, conditioning_key: dict | None) -> dict:
    return {"v": GENERATORS_VERSION, "recipe": recipe_of(family, channels, arm).key(), "arm": arm,
            "train": low["train"], "seed": family.seed,
            "conditioning": conditioning_key if arm == "diadm" else None}


def budget_fraction(family: Family, fraction: float, name: str = "fraction") -> float:
    """The fraction of the budget that a request for `fraction` trains: round(fraction x epochs) whole epochs (a
    snapshot is taken at the end of an epoch) over the epochs, e.g. 12 / 25 for 0.5 of 25 epochs. A set is made and
    labelled with this value, never with the request; a request that rounds to no epoch is refused, naming `name`."""
    epochs = round(fraction * family.epochs)
    if epochs < 1:
        raise ValueError(f"{shown(name)}={fraction!r} is {fraction * family.epochs:.3g} of the {family.epochs} "
                         f"training epochs, which rounds to none; the smallest budget is {1 / family.epochs:g} "
                         "(one epoch).")
    return epochs / family.epochs


def epochs_at(family: Family, fraction: float) -> int:
    """The epochs of a snapshot at `fraction` of the budget, a whole number >= 1 (`budget_fraction` makes one of a
    request); a fraction the run would round is refused, so that no set trains another budget than it says."""
    epochs = fraction * family.epochs
    if round(epochs) < 1 or abs(epochs - round(epochs)) > 1e-6:
        raise ValueError(f"fraction={fraction!r} is {epochs:.3g} of the {family.epochs} training epochs; a snapshot "
                         "is a whole number of epochs (lib.diffusion.family.budget_fraction rounds a request to "
                         "one, and the set's label says which).")
    return round(epochs)


def checkpoint_path(family: Family, low: dict, arm: str, channels: int, conditioning_key: dict | None = None,
                    epochs: int | None = None):
    """The arm's run checkpoint, which every snapshot at or after its epoch continues; with `epochs`, that of a run
    of its own to `epochs` (`trained_weights`: a snapshot asked after the run's checkpoint passed its epoch)."""
    key = training_key(family, low, arm, channels, conditioning_key)
    if epochs is None:
        return cache_path(NAMESPACE, f"diffusion-{arm}-c{channels}-ckpt", key, ".pt")
    return cache_path(NAMESPACE, f"diffusion-{arm}-c{channels}-e{epochs}-ckpt", {**key, "epochs": epochs}, ".pt")


def trained_weights(family: Family, low: dict, arm: str, channels: int, fraction: float, conditioning=None,
                    conditioning_key: dict | None = None, *, run: Run) -> dict:
    """The EMA weights after `epochs_at(family, fraction)` epochs of the arm's single seeded run (a pinned entry of
    the cache, `lib.run`: trained on `run.device`, with its progress bar, where missing).

    The run's state at epoch e does not depend on how many epochs it is asked for (its schedule is a function of
    the step alone), so a snapshot continues the run's checkpoint where that is not past e (50 % then 100 % trains
    once). A checkpoint only goes forward: a snapshot asked after the checkpoint passed its epoch (100 % first,
    then 50 %) is trained from the start as a run of its own to e, with its own checkpoint (removed once the
    weights are written). That costs e epochs again, but gives the single run's weights at e in any order, where
    refusing would stop notebook 02's default order on an empty cache; its callers ask the budgets in increasing
    order (`lib.crel.images.label_to_image`, `lib.irs.generators.generated_sets_of`), so that this happens only
    when a later run asks a smaller budget. An entry that holds more epochs than its own (the code before this fix
    wrote the later weights under the snapshot's path) is trained again."""
    epochs = epochs_at(family, fraction)
    label, key = _weights_label_key(family, low, arm, channels, epochs, conditioning_key)

    def compute() -> dict:
        single = checkpoint_path(family, low, arm, channels, conditioning_key)
        own = checkpoint_epoch(single) > epochs
        checkpoint = checkpoint_path(family, low, arm, channels, conditioning_key, epochs) if own else single
        cond = condition_rows(family, low, arm, conditioning)
        out = train_denoiser(low["train"], cond, recipe_of(family, channels, arm), condition=CONDITION_OF[arm],
                             epochs=epochs, seed=derive_seed(family.seed, TRAIN_STREAM), checkpoint=checkpoint,
                             device=run.device, progress=run.progress)
        if own:
            checkpoint.unlink(missing_ok=True)
        return out

    weights = run.stage(WEIGHTS, label, key, compute)
    if len(weights["history"]) != epochs:  # written by the code that returned a later epoch's weights
        path = WEIGHTS.entry(label, key).path
        log.warning("%s holds %d epochs of training, not %d; training it again", path, len(weights["history"]), epochs)
        path.unlink()
        weights = run.stage(WEIGHTS, label, key, compute)
    return weights


def weights_path(family: Family, low: dict, arm: str, channels: int, epochs: int,
                 conditioning_key: dict | None = None):
    return WEIGHTS.entry(*_weights_label_key(family, low, arm, channels, epochs, conditioning_key)).path


def _weights_label_key(family: Family, low: dict, arm: str, channels: int, epochs: int,
                       conditioning_key: dict | None) -> tuple[str, dict]:
    key = training_key(family, low, arm, channels, conditioning_key)
    return f"diffusion-{arm}-c{channels}-e{epochs}", {**key, "epochs": epochs}


def source_rows(family: Family, n_pool: int, heldout: bool) -> np.ndarray:
    """The n rows (sorted, distinct) a conditioned set conditions on: of the database, or of SYN."""
    rng = np.random.default_rng(derive_seed(family.seed, family.n, int(heldout), SOURCES_STREAM))
    return np.sort(rng.choice(n_pool, family.n, replace=False))


def set_labels(family: Family, low: dict, spec: GeneratedSet) -> np.ndarray:
    """(n,) the class each sample of a class-conditional set was generated for."""
    if spec.arm != "class":
        raise ValueError(f"set_labels: {spec.label} is not a class-conditional set.")
    return low["train_labels"][source_rows(family, len(low["train"]), spec.heldout)]


def set_key(family: Family, low: dict, spec: GeneratedSet, conditioning_key: dict | None) -> dict:
    """What a generated set depends on. A set before the full budget also carries "snapshot": 2: before the snapshot
    fix (`trained_weights`), such a set could have been sampled from the full budget's weights, and those entries must
    not be served (key policy (lib.store), rule 1; a full-budget set's key is unchanged)."""
    epochs = epochs_at(family, spec.fraction)
    return {**training_key(family, low, spec.arm, spec.channels, conditioning_key),
            "epochs": epochs, "guidance": spec.guidance,
            "heldout": spec.heldout, "steps": family.steps, "n": family.n,
            "heldout_pool": low["syn"] if spec.heldout else None, **({"snapshot": 2} if epochs < family.epochs else {})}


def set_path(family: Family, low: dict, spec: GeneratedSet, conditioning_key: dict | None = None):
    return SAMPLES.entry(*_set_label_key(family, low, spec, conditioning_key)).path


def _set_label_key(family: Family, low: dict, spec: GeneratedSet, conditioning_key: dict | None) -> tuple[str, dict]:
    return f"gen-{spec.slug}-n{family.n}", set_key(family, low, spec, conditioning_key)


def generated_images(family: Family, low: dict, spec: GeneratedSet, conditioning=None,
                     conditioning_key: dict | None = None, *, run: Run) -> dict:
    """{"images": (n, r, r, 3) uint8, "sources": the conditioning row of each DiADM sample (-1: none)} (a pinned
    entry of the cache, `lib.run`: sampled on `run.device` where missing, the arm trained first where its weights
    are not cached)."""
    def compute() -> dict:
        weights = trained_weights(family, low, spec.arm, spec.channels, spec.fraction, conditioning,
                                  conditioning_key, run=run)
        pool = len(low["syn" if spec.heldout else "train"])
        rows = source_rows(family, pool, spec.heldout)
        cond = condition_rows(family, low, spec.arm, conditioning, heldout=spec.heldout, rows=rows)
        model = load_denoiser(weights["ema"], recipe_of(family, spec.channels, spec.arm),
                              resolution=family.resolution, condition=CONDITION_OF[spec.arm],
                              cond_dim=0 if cond is None else cond.shape[1], device=run.device)
        images = sample(model, family.n, cond=cond, guidance=spec.guidance, steps=family.steps,
                        seed=derive_seed(family.seed, SAMPLES_STREAM), progress=run.progress)
        return {"images": images, "sources": rows if spec.arm == "diadm" else np.full(family.n, -1)}

    return run.stage(SAMPLES, *_set_label_key(family, low, spec, conditioning_key), compute)
