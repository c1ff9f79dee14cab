"""The four uncertainty methods of spec 03 §2.3 as PyTorch modules, their training and their predictions.

Every method is a *head* on D-dimensional inputs (frozen 64-d ResNet features in the `cpu` preset, the raw
8-d inputs of the synthetic regression), optionally behind a trainable image *backbone* (the `paper`
preset trains backbone and head together):

| method | module | prediction (numpy) |
|---|---|---|
| "mc_dropout" | MLP with dropout p after every hidden layer | {"samples": (S, N, K)}: S stochastic passes |
| "ensemble" | M MLPs with different seeds | {"samples": (M, N, K)} |
| "evidential" | MLP, α = softplus(logits) + 1 | {"alpha": (N, K)} |
| "ddu" | residual MLP with soft spectral normalisation (coefficient c); class-conditional | {"probs": (N, K), |
|       | Gaussians on its last hidden layer | "log_density": (N, C)} |

Estimates Â, Ê from these predictions are in `lib.regret` (spec §3.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

from lib.params import check_choice, check_int, check_real
from lib.regret import method as regret
from lib.train import Epochs, make_optimiser, seeded, train_epochs

METHODS = ("mc_dropout", "ensemble", "evidential", "ddu")
EDL_LOSSES = ("expected_ce", "edl_mse")  # spec B9


@dataclass(frozen=True)
class HeadSettings:
    """Architecture and training of one head (spec §2.3; B8: the paper's training is unknown)."""

    hidden: int = 128
    hidden_layers: int = 2
    dropout: float = 0.1  # MC-Dropout p (paper: 0.1)
    mc_samples: int = 20  # S (paper: 20)
    members: int = 5  # M (paper: 5)
    sn_coeff: float = 3.0  # DDU's Lipschitz coefficient (paper: 3.0)
    edl_loss: str = "expected_ce"  # B9
    lambda_kl: float = 0.0  # paper: 0
    epochs: int = 30
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-4


def validate_head(settings: HeadSettings, prefix: str = "") -> None:
    """Raise ValueError naming the field (after `prefix`, e.g. "synth_head.") for any bad value."""
    check_int(f"{prefix}hidden", settings.hidden, minimum=2)
    check_int(f"{prefix}hidden_layers", settings.hidden_layers, minimum=1)
    check_real(f"{prefix}dropout", settings.dropout, low=0.0, high=1.0, open_high=True)
    check_int(f"{prefix}mc_samples", settings.mc_samples, minimum=2)
    check_int(f"{prefix}members", settings.members, minimum=2)
    check_real(f"{prefix}sn_coeff", settings.sn_coeff, low=0.0, open_low=True)
    check_choice(f"{prefix}edl_loss", settings.edl_loss, EDL_LOSSES)
    check_real(f"{prefix}lambda_kl", settings.lambda_kl, low=0.0)
    check_int(f"{prefix}epochs", settings.epochs, minimum=1)
    check_int(f"{prefix}batch_size", settings.batch_size, minimum=1)
    check_real(f"{prefix}lr", settings.lr, low=0.0, open_low=True)
    check_real(f"{prefix}weight_decay", settings.weight_decay, low=0.0)


# ----------------------------------------------------------------------------------------------------
# Soft spectral normalisation (DDU, omegafragger/DDU net/spectral_normalization)
# ----------------------------------------------------------------------------------------------------
class SoftSpectralNorm(nn.Module):
    """W -> W / max(1, σ(W) / coeff), σ by one power iteration per training forward (persistent u).

    For a convolution, σ is that of the weight reshaped to (out, in·k·k), an approximation of the
    convolution operator's norm that DDU computes exactly (a stated deviation of the `paper` preset).
    """

    def __init__(self, weight: torch.Tensor, coeff: float, seed: int = 0):
        super().__init__()
        self.coeff = coeff
        g = torch.Generator().manual_seed(seed)
        u = torch.randn(weight.shape[0], generator=g)
        self.register_buffer("u", F.normalize(u, dim=0))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        mat = weight.reshape(weight.shape[0], -1)
        if self.training:
            with torch.no_grad():
                v = F.normalize(mat.t() @ self.u, dim=0)
                self.u.copy_(F.normalize(mat @ v, dim=0))
        v = F.normalize(mat.t() @ self.u, dim=0).detach()
        sigma = self.u @ mat @ v
        return weight / torch.clamp(sigma / self.coeff, min=1.0)


def add_spectral_norm(module: nn.Module, coeff: float) -> nn.Module:
    """Register soft spectral normalisation on every Linear and Conv2d weight inside `module`."""
    for i, layer in enumerate(m for m in module.modules() if isinstance(m, (nn.Linear, nn.Conv2d))):
        parametrize.register_parametrization(layer, "weight", SoftSpectralNorm(layer.weight, coeff, seed=i))
    return module


# ----------------------------------------------------------------------------------------------------
# Heads
# ----------------------------------------------------------------------------------------------------
class MLPHead(nn.Module):
    """in_dim -> `depth` hidden layers (Linear, ReLU[, Dropout]) -> K; `residual` adds skip connections (DDU's
    bi-Lipschitz feature map needs them); `embed` returns the last hidden layer."""

    def __init__(self, in_dim: int, num_classes: int, hidden: int, depth: int, dropout: float = 0.0,
                 residual: bool = False):
        super().__init__()
        self.inp = nn.Linear(in_dim, hidden)
        self.blocks = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(depth - 1))
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.out = nn.Linear(hidden, num_classes)
        self.residual = residual

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(F.relu(self.inp(x)))
        for block in self.blocks:
            z = self.drop(F.relu(block(h)))
            h = h + z if self.residual else z
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(x))


class WithBackbone(nn.Module):
    """An image backbone with a `features(x)` method (e.g. lib.models.cifar_resnet) followed by a head."""

    def __init__(self, backbone: nn.Module, head: MLPHead):
        super().__init__()
        self.backbone, self.head = backbone, head

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.head.embed(self.backbone.features(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone.features(x))


def build_head(method: str, in_dim: int, num_classes: int, settings: HeadSettings, seed: int) -> MLPHead:
    """The head of `method` with weights drawn from `seed`."""
    check_choice("method", method, METHODS)
    torch.manual_seed(seed)
    dropout = settings.dropout if method == "mc_dropout" else 0.0
    head = MLPHead(in_dim, num_classes, settings.hidden, settings.hidden_layers, dropout, residual=method == "ddu")
    if method == "ddu":
        add_spectral_norm(head, settings.sn_coeff)
    return head


# ----------------------------------------------------------------------------------------------------
# Losses
# ----------------------------------------------------------------------------------------------------
def soft_ce(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with soft (or one-hot) targets (N, K)."""
    return -(targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


def evidential_alpha(logits: torch.Tensor) -> torch.Tensor:
    """α = softplus(logits) + 1 (spec §2.3)."""
    return F.softplus(logits) + 1.0


def evidential_loss(logits: torch.Tensor, targets: torch.Tensor, kind: str, lambda_kl: float) -> torch.Tensor:
    """expected_ce: Σ_k y_k (ψ(α₀) - ψ(α_k)) (spec §3.2 [inferred]); edl_mse: Sensoy et al.'s error + variance.

    λ_KL weights the KL(Dir(α̃) || Dir(1)) term on the misleading evidence α̃ = y + (1 - y) α (paper: 0).
    """
    alpha = evidential_alpha(logits)
    alpha0 = alpha.sum(dim=1, keepdim=True)
    if kind == "expected_ce":
        loss = (targets * (torch.digamma(alpha0) - torch.digamma(alpha))).sum(dim=1)
    else:
        mean = alpha / alpha0
        loss = ((targets - mean) ** 2 + mean * (1 - mean) / (alpha0 + 1)).sum(dim=1)
    if lambda_kl > 0:
        tilde = targets + (1 - targets) * alpha
        t0 = tilde.sum(dim=1)
        k = torch.tensor(float(tilde.shape[1]))
        kl = (torch.lgamma(t0) - torch.lgamma(k) - torch.lgamma(tilde).sum(dim=1)
              + ((tilde - 1) * (torch.digamma(tilde) - torch.digamma(t0)[:, None])).sum(dim=1))
        loss = loss + lambda_kl * kl
    return loss.mean()


def loss_for(method: str, settings: HeadSettings) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if method == "evidential":
        return lambda logits, y: evidential_loss(logits, y, settings.edl_loss, settings.lambda_kl)
    return soft_ce


# ----------------------------------------------------------------------------------------------------
# Training and prediction
# ----------------------------------------------------------------------------------------------------
@torch.no_grad()
def batched(fn: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor, device: torch.device,
            batch_size: int = 1024, memory_format: torch.memory_format = torch.preserve_format) -> torch.Tensor:
    return torch.cat([fn(inputs[i:i + batch_size].to(device, memory_format=memory_format)).cpu()
                      for i in range(0, len(inputs), batch_size)])


def predict(method: str, modules: list[nn.Module], inputs: torch.Tensor, *, settings: HeadSettings, seed: int,
            ddu_fit: dict | None = None, device: torch.device | None = None) -> dict:
    """Predictions of a trained method on `inputs` (numpy arrays; see the module docstring)."""
    device = device or torch.device("cpu")
    if method == "mc_dropout":
        net = modules[0].to(device)
        net.eval()
        for m in net.modules():  # dropout stays on at test time, everything else in eval mode
            if isinstance(m, nn.Dropout):
                m.train()
        torch.manual_seed(seed)
        samples = [batched(lambda x: F.softmax(net(x), 1), inputs, device) for _ in range(settings.mc_samples)]
        net.eval()
        return {"samples": torch.stack(samples).double().numpy()}
    return predict_without_sampling(method, modules, lambda fn: batched(fn, inputs, device), device, ddu_fit)


def predict_without_sampling(method: str, modules: list[nn.Module],
                             run: Callable[[Callable[[torch.Tensor], torch.Tensor]], torch.Tensor],
                             device: torch.device, ddu_fit: dict | None) -> dict:
    """The predictions of "ensemble", "evidential" and "ddu", the methods that draw nothing at test time, in
    `predict`'s format; `run(fn)`: fn applied to every batch of the inputs on `device`, concatenated on the CPU
    (`batched`). `predict` and `lib.regret.whole.predict` (MC-Dropout aside, each its own) share it."""
    if method == "ensemble":
        members = [m.to(device) for m in modules]
        return {"samples": torch.stack([run(lambda x, m=m: F.softmax(m(x), 1)) for m in members]).double().numpy()}
    net = modules[0].to(device)
    if method == "evidential":
        return {"alpha": run(lambda x: evidential_alpha(net(x))).double().numpy()}
    logits = run(net)
    emb = run(net.embed).double().numpy()
    return {"probs": F.softmax(logits.double(), 1).numpy(), "log_density": regret.gda_log_density(emb, ddu_fit),
            "embedding_dim": np.array(emb.shape[1])}


def fit_method(method: str, inputs: torch.Tensor, targets: torch.Tensor, *, settings: HeadSettings, seed: int,
               groups: np.ndarray, num_groups: int, make_module: Callable[[int], nn.Module],
               device: torch.device | None = None, progress: bool = False, optimiser: str = "adam",
               augment: Callable | None = None) -> dict:
    """Train `method` ({"modules", "history", "ddu_fit"}); `make_module(seed)` builds one network.

    groups: (N,) int, the GDA classes of DDU (the hard labels, or age decades for regression).
    Members of the ensemble use seeds seed, seed + 1, ...; the other methods one network with `seed`.
    Each network trains by `lib.train.train_epochs` with `settings`' epochs, batch size, lr and weight decay, its
    seed ordering the data (and drawing `augment(batch, generator)`, for image batches) and the dropout masks.
    optimiser="adam" (heads) or "sgd" (a cosine schedule over the steps; the `paper` preset's backbones).
    """
    check_choice("method", method, METHODS)
    device = device or torch.device("cpu")
    seeds = [seed + i for i in range(settings.members)] if method == "ensemble" else [seed]
    plan = Epochs(settings.epochs, settings.batch_size, schedule="cosine_steps" if optimiser == "sgd" else "constant")
    loss_fn = loss_for(method, settings)
    modules, history = [], []
    for s in seeds:
        module = make_module(s).to(device)
        opt = make_optimiser(module, optimiser, settings.lr, settings.weight_decay)
        gen = seeded(s)  # data order (and augmentations); torch's generator: dropout masks

        def batch_loss(idx: torch.Tensor, _epoch: int, module: nn.Module = module, gen: torch.Generator = gen):
            x = inputs[idx] if augment is None else augment(inputs[idx], gen)
            return loss_fn(module(x.to(device)), targets[idx].to(device))

        run = train_epochs(module, batch_loss, opt, num_items=len(inputs), plan=plan, generator=gen,
                           progress=progress, desc=f"{method} seed {s}")
        history.append(run["history"])
        modules.append(module.cpu())
    fit = None
    if method == "ddu":
        emb = batched(modules[0].to(device).embed, inputs, device).double().numpy()
        modules[0].cpu()
        fit = regret.gda_fit(emb, groups, num_groups)
    return {"modules": modules, "history": np.array(history), "ddu_fit": fit}


# ----------------------------------------------------------------------------------------------------
# From predictions to estimates (spec §3.2)
# ----------------------------------------------------------------------------------------------------
def estimates(method: str, prediction: dict, loss: str, values: np.ndarray | None = None, *,
              num_draws: int = 1000, seed: int = 0) -> dict:
    """{"q": (N, K) predictive, "A_hat", "E_hat"} of a method's prediction for `loss` (spec §2.4 step 2-3)."""
    check_choice("method", method, METHODS)
    if method in ("mc_dropout", "ensemble"):
        est = regret.estimate(prediction["samples"], loss, values=values)
        q = prediction["samples"].mean(axis=0)
    elif method == "evidential":
        est = regret.estimate_dirichlet(prediction["alpha"], loss, values=values, num_draws=num_draws, seed=seed)
        q = prediction["alpha"] / prediction["alpha"].sum(axis=1, keepdims=True)
    else:
        q = regret.normalise_rows(prediction["probs"])
        if loss in regret.CLASSIFICATION_LOSSES:
            a_hat = regret.ddu_aleatoric(q, loss)
        else:  # the Bayes risk of the softmax output itself [inferred, spec B10]
            a_hat = regret.decompose(q, q, loss, values=values)["A"]
        est = {"A": a_hat, "E": regret.ddu_epistemic(prediction["log_density"])}
    return {"q": regret.normalise_rows(q), "A_hat": est["A"], "E_hat": est["E"]}
