"""Whole networks trained from scratch for the four uncertainty methods (spec 03 §2.3, B8).

The paper trains each method's whole network; the `cpu` preset's heads on frozen features cannot show
that comparison (members and dropout samples differ only in a small head). Training a CIFAR-10 network
from scratch is cheap with the "airbench" recipe of K. Jordan, *94% on CIFAR-10 in 3.29 Seconds on a
Single GPU* (arXiv:2404.00498; github.com/KellerJordan/cifar10-airbench). This module is our own
implementation of that recipe's ideas, not a copy of its code:

- **Net** (`FastCifarNet`): a frozen 2x2 *patch-whitening* convolution (its filters are the eigenvectors of
  the training patches' covariance scaled by 1/sqrt(eigenvalue), with their negatives: 24 channels), then
  three conv groups (conv3x3 -> maxpool 2 -> BN -> GELU -> conv3x3 -> BN -> GELU) of widths 64 / 256 / 256,
  a global 3x3 max pool and a bias-free linear layer whose logits are scaled by 1/9. BatchNorm has no
  trainable scale and a fast running-statistics momentum; convolutions start as identities (dirac init).
- **Optimisation**: Nesterov SGD on the *summed* batch loss with the recipe's decoupled hyper-parameters
  (lr 11.5 and weight decay 0.0153 per "kilostep" of 1024 x (1 + 1/(1 - momentum)) samples, momentum 0.85),
  BatchNorm biases at 64x the learning rate, batch 1024, a triangular schedule (0.2 -> 1 over the first
  23 % of steps, then down to 0.07), random flips and 2-pixel translations.
- **Changed**: plain cross-entropy, where the recipe smooths the labels by 0.2 (`label_smoothing`, a
  parameter). Smoothing buys accuracy but caps the predictive distribution's confidence, and q is what the
  regret is measured on: on the CPU-sized recipe it left the networks underconfident (mean confidence
  0.59-0.60 at 78-82 % accuracy, ECE 0.19-0.21; plain CE: 0.71-0.74 at the same accuracy, ECE 0.04-0.07),
  and removing it halved MC-Dropout's CE AuReC (0.660 -> 0.343; results/03/cpu/README.md).
- **Left out**, as the recipe's own "clean" variant does: lookahead / EMA, progressive freezing of the
  whitening bias, alternating flips, and test-time augmentation (the methods are evaluated on the network
  itself, one forward pass per sample).

The four methods' variants (spec §2.3); predictions come in the format of `lib.regret.uq.predict`:

- mc_dropout: dropout p before the last conv group and before the classifier; S passes at test time, the
  first two groups computed once. {"samples": (S, N, K)}
- ensemble: M networks from seeds seed, seed + 1, ... (initialisation and data order). {"samples": (M, N, K)}
- evidential: α = softplus(logits) + 1, trained with `uq.evidential_loss` on one-hot targets, with the
  logits *not* scaled by 1/9: a confident Dirichlet needs evidence in the hundreds, which the scaled logits
  barely reach in 10 epochs (CPU-sized recipe, one seed: 70.7 % test accuracy and median α₀ 34 with the
  scale, 75.8 % and 78 without; CE AuReC 0.672 -> 0.401). {"alpha": (N, K)}
- ddu: soft spectral normalisation (coefficient 3) on every trained conv and the classifier, residual conv
  groups (DDU's bi-Lipschitz feature map needs skips), class-conditional Gaussians on the last group's
  pooled features. {"probs": (N, K), "log_density": (N, C)}

`train_network` is seeded, checkpoints every epoch and resumes from the last checkpoint;
`lib.regret.experiment.whole_predictions` trains the eight networks (cached per network, not stored: too big)
and predicts; `prediction_arrays` / `from_arrays` are the compact form its predictions are cached in, and
stored in notebook 03's layer (`lib.store`, results/03/<preset>/) that a default run reads instead of training.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lib.params import PARAMETER, check_choice, check_int, check_real, shown
from lib.regret import uq
from lib.train import Epochs, train_epochs

NUM_CLASSES = 10
DROPOUT_STREAM = 1  # a network seeded s draws its dropout masks from torch seeded s + DROPOUT_STREAM


@dataclass(frozen=True)
class WholeSettings:
    """The from-scratch recipe (airbench's values unless stated) and the methods' settings. Notebook 03's
    parameters WHOLE_WIDTHS, WHOLE_EPOCHS and WHOLE_LABEL_SMOOTHING set three of them (`lib.params.PARAMETER`); the
    methods' settings are the presets' alone (PARAMETER None: MC_SAMPLES, MEMBERS, ... set the heads)."""

    widths: tuple[int, int, int] = field(default=(64, 256, 256), metadata={PARAMETER: "WHOLE_WIDTHS"})
    # airbench94: 9.9 with lookahead and TTA; its clean variant 10
    epochs: int = field(default=10, metadata={PARAMETER: "WHOLE_EPOCHS"})
    batch_size: int = 1024
    lr: float = 11.5  # per kilostep (decoupled, see the module docstring)
    momentum: float = 0.85
    weight_decay: float = 0.0153
    bias_scaler: float = 64.0
    # airbench: 0.2, which leaves q underconfident (module docstring)
    label_smoothing: float = field(default=0.0, metadata={PARAMETER: "WHOLE_LABEL_SMOOTHING"})
    translate: int = 2
    whiten_patches: int = 5000  # training images whose 2x2 patches set the whitening filters
    dropout: float = field(default=0.1, metadata={PARAMETER: None})  # MC-Dropout p (paper: 0.1)
    mc_samples: int = field(default=20, metadata={PARAMETER: None})  # S (paper: 20)
    members: int = field(default=5, metadata={PARAMETER: None})  # M (paper: 5)
    sn_coeff: float = field(default=3.0, metadata={PARAMETER: None})  # DDU (paper: 3.0)
    edl_loss: str = field(default="expected_ce", metadata={PARAMETER: None})  # spec B9, as the heads


def validate_whole(settings: WholeSettings) -> None:
    """Raise ValueError naming the field (as `whole.<field>`, its setting path) for any bad value."""
    if len(settings.widths) != 3:
        raise ValueError(f"{shown('whole.widths')}={settings.widths!r} must list three conv-group widths.")
    for w in settings.widths:
        check_int("whole.widths entry", w, minimum=1)
    check_int("whole.epochs", settings.epochs, minimum=1)
    check_int("whole.batch_size", settings.batch_size, minimum=2)
    check_real("whole.lr", settings.lr, low=0.0, open_low=True)
    check_real("whole.momentum", settings.momentum, low=0.0, high=1.0, open_high=True)
    check_real("whole.weight_decay", settings.weight_decay, low=0.0)
    check_real("whole.label_smoothing", settings.label_smoothing, low=0.0, high=1.0, open_high=True)
    check_int("whole.translate", settings.translate, minimum=0, maximum=8)
    check_int("whole.whiten_patches", settings.whiten_patches, minimum=10)
    check_real("whole.dropout", settings.dropout, low=0.0, high=1.0, open_low=True, open_high=True)
    check_int("whole.mc_samples", settings.mc_samples, minimum=2)
    check_int("whole.members", settings.members, minimum=2)
    check_real("whole.sn_coeff", settings.sn_coeff, low=0.0, open_low=True)
    check_choice("whole.edl_loss", settings.edl_loss, uq.EDL_LOSSES)


# ----------------------------------------------------------------------------------------------------
# The network
# ----------------------------------------------------------------------------------------------------
class _BatchNorm(nn.BatchNorm2d):
    """BatchNorm with a fixed unit scale (only the bias trains) and fast running statistics (airbench)."""

    def __init__(self, channels: int):
        super().__init__(channels, eps=1e-12, momentum=0.4)
        self.weight.requires_grad_(False)


class ConvGroup(nn.Module):
    """conv3x3 -> maxpool 2 -> BN -> GELU -> conv3x3 -> BN -> GELU (+ the pooled branch when `residual`)."""

    def __init__(self, c_in: int, c_out: int, residual: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding="same", bias=False)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding="same", bias=False)
        self.norm1, self.norm2 = _BatchNorm(c_out), _BatchNorm(c_out)
        self.residual = residual
        for conv in (self.conv1, self.conv2):  # identity start on the channels that exist (airbench's dirac init)
            w = conv.weight.data
            nn.init.dirac_(w[: min(w.shape[:2])])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        out = F.gelu(self.norm2(self.conv2(h)))
        return out + h if self.residual else out


class FastCifarNet(nn.Module):
    """The airbench-style CIFAR-10 net; `trunk` (whitening + groups 1-2) and `tail` split it for MC-Dropout."""

    def __init__(self, widths: tuple[int, int, int] = (64, 256, 256), num_classes: int = NUM_CLASSES,
                 dropout: float = 0.0, residual: bool = False):
        super().__init__()
        self.whiten = nn.Conv2d(3, 24, 2, bias=True)
        self.whiten.weight.requires_grad_(False)  # set from the data by `whiten_init`, never trained
        self.group1 = ConvGroup(24, widths[0], residual)
        self.group2 = ConvGroup(widths[0], widths[1], residual)
        self.group3 = ConvGroup(widths[1], widths[2], residual)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.linear = nn.Linear(widths[2], num_classes, bias=False)
        self.logit_scale = 1 / 9

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        return self.group2(self.group1(F.gelu(self.whiten(x))))

    def tail_features(self, h: torch.Tensor) -> torch.Tensor:
        return F.adaptive_max_pool2d(self.group3(self.drop(h)), 1).flatten(1)

    def tail(self, h: torch.Tensor) -> torch.Tensor:
        return self.linear(self.drop(self.tail_features(h))) * self.logit_scale

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The (N, widths[2]) features DDU's class-conditional Gaussians are fitted on."""
        return self.tail_features(self.trunk(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.trunk(x))


@torch.no_grad()
def whiten_init(net: FastCifarNet, images: torch.Tensor, eps: float = 5e-4) -> None:
    """Filters = eigenvectors of the 2x2x3 patch covariance of `images` / sqrt(eigenvalue + eps), and negatives."""
    patches = images.unfold(2, 2, 1).unfold(3, 2, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, 12).double()
    patches = patches - patches.mean(0)
    eigvals, eigvecs = torch.linalg.eigh(patches.T @ patches / len(patches))
    filters = (eigvecs.T / torch.sqrt(eigvals + eps)[:, None]).reshape(12, 3, 2, 2)
    net.whiten.weight.copy_(torch.cat([filters, -filters]).float())


# Bumped when a method's network or training changes, so that its cached networks are not reused
# (evidential 2: unscaled logits). Version 1 of every method is the airbench recipe's network, which
# `build_network` still builds when asked (notebook 03 compares the two).
NETWORK_VERSION = {"mc_dropout": 1, "ensemble": 1, "evidential": 2, "ddu": 1}


def build_network(method: str, settings: WholeSettings, seed: int, version: int | None = None) -> FastCifarNet:
    """The (untrained) network of `method` with weights drawn from `seed`; `version` (default
    NETWORK_VERSION[method]): evidential 1 scales its logits by 1/9 as the recipe does, 2 does not."""
    check_choice("method", method, uq.METHODS)
    version = NETWORK_VERSION[method] if version is None else version
    check_int("network version", version, minimum=1, maximum=NETWORK_VERSION[method])
    torch.manual_seed(seed)
    net = FastCifarNet(settings.widths, dropout=settings.dropout if method == "mc_dropout" else 0.0,
                       residual=method == "ddu")
    if method == "evidential" and version >= 2:  # the evidence softplus(logit) must reach the hundreds (docstring)
        net.logit_scale = 1.0
    if method == "ddu":
        for name in ("group1", "group2", "group3", "linear"):
            uq.add_spectral_norm(getattr(net, name), settings.sn_coeff)
    return net


# ----------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------
def augment(images: torch.Tensor, translate: int, generator: torch.Generator) -> torch.Tensor:
    """Random horizontal flips and translations by up to `translate` pixels (reflect padding) of (B, 3, H, W)."""
    flip = torch.rand(len(images), generator=generator) < 0.5
    out = torch.where(flip[:, None, None, None], images.flip(3), images)
    if translate == 0:
        return out
    t, size = translate, images.shape[-1]
    padded = F.pad(out, (t, t, t, t), mode="reflect")
    shifts = torch.randint(0, 2 * t + 1, (2, len(images)), generator=generator)
    for dy in range(2 * t + 1):  # one slice per shift: (2t + 1)^2 vectorised copies instead of B
        for dx in range(2 * t + 1):
            pick = (shifts[0] == dy) & (shifts[1] == dx)
            if pick.any():
                out[pick] = padded[pick, :, dy:dy + size, dx:dx + size]
    return out


def lr_factor(step: int, total: int) -> float:
    """Airbench's triangular schedule: 0.2 -> 1 over the first 23 % of the steps, then linearly to 0.07."""
    warm = max(1, int(0.23 * total))
    if step < warm:
        return 0.2 + 0.8 * step / warm
    return 1.0 + (0.07 - 1.0) * (step - warm) / max(1, total - warm)


def make_optimiser(net: nn.Module, settings: WholeSettings) -> torch.optim.SGD:
    """Nesterov SGD with the recipe's decoupled lr / weight decay; BatchNorm biases at bias_scaler x lr."""
    kilostep = 1024 * (1 + 1 / (1 - settings.momentum))
    lr = settings.lr / kilostep
    wd = settings.weight_decay * settings.batch_size / kilostep
    norm_biases = [p for m in net.modules() if isinstance(m, _BatchNorm) for p in (m.bias,)]
    ids = {id(p) for p in norm_biases}
    others = [p for p in net.parameters() if p.requires_grad and id(p) not in ids]
    groups = [{"params": others, "lr": lr, "weight_decay": wd, "base_lr": lr},
              {"params": norm_biases, "lr": lr * settings.bias_scaler,
               "weight_decay": wd / settings.bias_scaler, "base_lr": lr * settings.bias_scaler}]
    return torch.optim.SGD(groups, momentum=settings.momentum, nesterov=True)


def summed_loss(method: str, logits: torch.Tensor, labels: torch.Tensor, settings: WholeSettings) -> torch.Tensor:
    """The recipe's summed batch loss: label-smoothed CE, or the evidential loss on one-hot targets."""
    if method == "evidential":
        onehot = F.one_hot(labels, NUM_CLASSES).float()
        return uq.evidential_loss(logits, onehot, settings.edl_loss, 0.0) * len(labels)
    return F.cross_entropy(logits, labels, label_smoothing=settings.label_smoothing, reduction="sum")


def train_network(method: str, images: torch.Tensor, labels: torch.Tensor, settings: WholeSettings, seed: int, *,
                  checkpoint: Path | None = None, device: torch.device | None = None, progress: bool = False,
                  max_steps: int | None = None, version: int | None = None) -> dict:
    """Train one network; {"state", "history" (mean loss per epoch), "seconds", "epoch_seconds"}.

    images: (N, 3, 32, 32) float32 normalised (lib.models.images.to_tensor); labels: (N,) int64.
    `checkpoint`: a file written after every epoch (weights, optimiser, data-order generator, history); a run
    interrupted and started again resumes from it and ends with the same weights. `max_steps` stops early
    (tests; the schedule still spans all epochs). Every random draw comes from `seed`: initialisation, data
    order, augmentation (a generator seeded `seed`), dropout masks (torch's, seeded `seed + DROPOUT_STREAM`).
    """
    device = device or torch.device("cpu")
    net = build_network(method, settings, seed, version)
    whiten_init(net, images[: settings.whiten_patches])
    net.to(device, memory_format=torch.channels_last)  # 1.4x faster convolutions on this CPU (README)
    opt = make_optimiser(net, settings)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed + DROPOUT_STREAM)  # dropout masks (a checkpoint puts back the state it saved)

    def batch_loss(idx: torch.Tensor, _epoch: int) -> torch.Tensor:
        x = augment(images[idx], settings.translate, g).to(device, memory_format=torch.channels_last)
        return summed_loss(method, net(x), labels[idx].to(device), settings)

    # the recipe's triangular schedule per step; the last partial batch is dropped
    plan = Epochs(settings.epochs, settings.batch_size, schedule=lr_factor, drop_last=True, summed_loss=True,
                  max_steps=max_steps)
    run = train_epochs(net, batch_loss, opt, num_items=len(images), plan=plan, generator=g, checkpoint=checkpoint,
                       progress=progress, desc=f"{method} seed {seed}")
    net.cpu()
    return {"state": net.state_dict(), "history": run["history"], "seconds": float(sum(run["epoch_seconds"])),
            "epoch_seconds": run["epoch_seconds"]}


def load_network(method: str, settings: WholeSettings, seed: int, state: dict,
                 version: int | None = None) -> FastCifarNet:
    net = build_network(method, settings, seed, version)
    net.load_state_dict(state)
    return net.eval()


# ----------------------------------------------------------------------------------------------------
# Prediction
# ----------------------------------------------------------------------------------------------------
def _batched(fn, images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`lib.regret.uq.batched` in the channels_last layout the networks are trained in."""
    return uq.batched(fn, images, device, batch_size=500, memory_format=torch.channels_last)


@torch.no_grad()
def predict(method: str, nets: list[FastCifarNet], images: torch.Tensor, settings: WholeSettings, *, seed: int,
            ddu_fit: dict | None = None, device: torch.device | None = None) -> dict:
    """The method's prediction on `images`, in the format of `lib.regret.uq.predict` (numpy arrays).

    MC-Dropout: the first two conv groups run once per batch, the dropout tail S times (dropout on, BatchNorm
    in eval mode), so S samples cost about 1 + S/4 forward passes instead of S.
    """
    device = device or torch.device("cpu")
    if method == "mc_dropout":
        net = nets[0].to(device).eval()
        net.drop.train()
        torch.manual_seed(seed)

        def samples(x: torch.Tensor) -> torch.Tensor:
            h = net.trunk(x)
            return torch.stack([F.softmax(net.tail(h), 1) for _ in range(settings.mc_samples)], dim=1)

        out = _batched(samples, images, device).transpose(0, 1)
        net.eval().cpu()
        return {"samples": out.double().numpy()}
    return uq.predict_without_sampling(method, nets, lambda fn: _batched(fn, images, device), device, ddu_fit)


def accuracy(method: str, prediction: dict, labels: np.ndarray) -> float:
    """Top-1 accuracy of the method's predictive mean against hard labels."""
    q = uq.estimates(method, prediction, "zero_one", num_draws=2)["q"]
    return float(np.mean(q.argmax(1) == labels))


# ----------------------------------------------------------------------------------------------------
# The compact form of the predictions (cache entries, and notebook 03's stored layer)
# ----------------------------------------------------------------------------------------------------
_ARRAY_DTYPES = {"samples": np.float16, "alpha": np.float32, "probs": np.float32, "log_density": np.float32}
_EXPECTED = {"mc_dropout": ("samples",), "ensemble": ("samples",), "evidential": ("alpha",),
             "ddu": ("probs", "log_density")}


def prediction_arrays(method: str, test: dict, ood_scores: dict, meta: dict) -> dict[str, np.ndarray]:
    """The arrays one method's predictions are kept in: the test prediction (`test_<key>`: float16 samples,
    float32 otherwise), the CE Ê of every OOD set and of the in-distribution images they are compared with
    (`ood_<set>`, float32), and `meta` as a JSON string (`meta`). `from_arrays` reads them back."""
    check_choice("method", method, uq.METHODS)
    arrays = {f"test_{k}": np.asarray(test[k]).astype(_ARRAY_DTYPES[k]) for k in _EXPECTED[method]}
    arrays.update({f"ood_{k}": np.asarray(v, dtype=np.float32) for k, v in ood_scores.items()})
    arrays["meta"] = np.array(json.dumps({**meta, "method": method}, default=str))
    return arrays


def from_arrays(arrays: Mapping[str, np.ndarray], where: str = "the predictions") -> dict:
    """{"test": prediction dict (float64, `lib.regret.uq.predict`'s format), "ood": {set: Ê}, "meta"} from
    `prediction_arrays`' arrays; ValueError naming `where` when an array is missing or of the wrong shape."""
    if "meta" not in arrays:
        raise ValueError(f"{where}: no 'meta' array; not whole-network predictions")
    meta = json.loads(str(arrays["meta"]))
    method = meta.get("method")
    if method not in _EXPECTED:
        raise ValueError(f"{where}: meta names the method {method!r}, not one of {uq.METHODS}")
    test = {}
    for key in _EXPECTED[method]:
        if f"test_{key}" not in arrays:
            raise ValueError(f"{where}: the array 'test_{key}' is missing")
        arr = np.asarray(arrays[f"test_{key}"], dtype=np.float64)
        rows = arr.shape[1] if key == "samples" else arr.shape[0]
        ok = arr.ndim == (3 if key == "samples" else 2) and rows == meta["n_test"]
        if not ok or (key != "log_density" and arr.shape[-1] != NUM_CLASSES):
            raise ValueError(f"{where}: 'test_{key}' has shape {arr.shape}, not {meta['n_test']} rows of "
                             f"{'C' if key == 'log_density' else NUM_CLASSES} values")
        test[key] = arr
    if method == "ddu":
        test["embedding_dim"] = np.array(meta.get("embedding_dim", 0))
    ood = {k[4:]: np.asarray(v, dtype=np.float64) for k, v in arrays.items() if k.startswith("ood_")}
    return {"test": test, "ood": ood, "meta": meta}


def settings_from(meta: dict) -> WholeSettings:
    """The WholeSettings recorded in a stored file's metadata."""
    fields = dict(meta["settings"])
    fields["widths"] = tuple(fields["widths"])
    return replace(WholeSettings(), **fields)


def describe_settings(settings: WholeSettings) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()}
