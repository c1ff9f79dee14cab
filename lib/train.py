"""One training loop for the workbook's small torch models, and the pieces of the one loop that does not fit it.

`train_epochs` runs minibatch epochs over a seeded data order: optimiser step, learning-rate schedule (torch's
cosine over epochs or steps, or a factor per step), the loss of every epoch, a text progress bar, and an
optional checkpoint after every epoch from which an interrupted run resumes to the same weights. It trains
notebook 02's CVAE, flow and DQR (`lib.crel`) and notebook 03's heads and whole networks (`lib.regret`).

Randomness: the data order (and whatever the caller's `batch_loss` draws, e.g. augmentations) comes from one
`torch.Generator`; dropout and sampling inside the model from torch's global generator, which `seeded` sets.
`batch_loss` is called right after its batch is cut, so its own draws from the generator fall between two
epochs' permutations exactly where the caller makes them.

Notebook 01's DDPM ensemble trains M members as one flat (M, P) tensor on step-indexed device-side streams
(`lib.prcurves.ddpm`), which an epoch loop over one model does not describe; it uses `ema_update` and
`load_checkpoint` from here.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lib.cache import DamagedCacheEntry, atomic_torch_save, canonical, discard_damaged, load_torch
from lib.params import check_choice, check_int
from lib.progress import progress as progress_bar

OPTIMISERS = ("adam", "sgd")
# batch_loss(indices of the batch (b,) int64, epoch) -> the scalar loss to minimise
BatchLoss = Callable[[torch.Tensor, int], torch.Tensor]


def seeded(seed: int) -> torch.Generator:
    """Seed torch's global generator (weight initialisation, dropout, the model's own noise) with `seed` and
    return a new generator seeded with it too, for the data order."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    return generator


def float_rows(*arrays: np.ndarray) -> tuple[torch.Tensor, ...]:
    """Each array as a float32 tensor of rows, (n, -1) (a 1-D array becomes one column)."""
    return tuple(torch.as_tensor(np.asarray(a, np.float32).reshape(len(a), -1)) for a in arrays)


def make_optimiser(model: nn.Module, kind: str = "adam", lr: float = 1e-3,
                   weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """Adam, or Nesterov SGD with momentum 0.9, over the model's trainable parameters."""
    check_choice("optimiser", kind, OPTIMISERS)
    params = [p for p in model.parameters() if p.requires_grad]
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay, nesterov=True)


def shuffled_batches(n: int, batch_size: int, generator: torch.Generator, device: torch.device | str | None = None,
                     drop_last: bool = False) -> Iterator[torch.Tensor]:
    """One epoch's minibatch indices: a permutation of range(n) drawn from `generator`, cut into batches of
    `batch_size`; the last, smaller one is kept, or dropped with `drop_last` (unless it is the only one).
    Lazy, so draws made between batches keep their order."""
    order = torch.randperm(n, generator=generator)
    if device is not None:
        order = order.to(device)
    count = max(1, n // batch_size) if drop_last else math.ceil(n / batch_size)
    for b in range(count):
        yield order[b * batch_size:(b + 1) * batch_size]


@dataclass(frozen=True)
class Epochs:
    """How `train_epochs` goes through the data.

    schedule: "constant"; "cosine_epochs" / "cosine_steps", torch's CosineAnnealingLR stepped after every epoch /
        every optimiser step; or a function factor(step, total_steps) by which every parameter group's
        "base_lr" (its starting lr when it has none) is multiplied before each step.
    summed_loss: the batch loss is a sum over the batch, not a mean (the epoch's loss divides by the points seen).
    max_steps: stop after this many optimiser steps (tests; the schedule still spans every epoch).
    """

    epochs: int
    batch_size: int
    schedule: str | Callable[[int, int], float] = "constant"
    drop_last: bool = False
    summed_loss: bool = False
    max_steps: int | None = None

    def steps_per_epoch(self, num_items: int) -> int:
        return max(1, num_items // self.batch_size) if self.drop_last else math.ceil(num_items / self.batch_size)

    def items_per_epoch(self, num_items: int) -> int:
        """The items an epoch's batches hold: all of them, less what drop_last drops (a batch larger than the data
        holds the data, so steps x batch_size overcounts)."""
        return min(num_items, self.steps_per_epoch(num_items) * self.batch_size)


def _scheduler(optimiser: torch.optim.Optimizer, plan: Epochs, total_steps: int):
    if callable(plan.schedule) or plan.schedule == "constant":
        return None
    length = plan.epochs if plan.schedule == "cosine_epochs" else total_steps
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, length)


def load_checkpoint(path: Path | None) -> dict | None:
    """A checkpoint's contents, or None when there is none; a damaged one (`lib.cache.load_torch`) is logged,
    deleted, and read as none."""
    if path is None or not Path(path).exists():
        return None
    try:
        return load_torch(path)
    except DamagedCacheEntry as err:
        discard_damaged(err)
        return None


def checkpoint_epoch(path: Path | None) -> int:
    """The complete epochs a checkpoint holds (0 when there is none, or it is damaged)."""
    saved = load_checkpoint(path)
    return 0 if saved is None else _progress(path, saved)["epoch"]


def recorded(config: Mapping[str, Any] | None) -> dict | None:
    """A run's configuration as its checkpoint records it: canonical JSON values (arrays by SHA-256 and shape,
    `lib.cache.canonical`), so that it loads back as written and compares field by field."""
    return None if config is None else json.loads(json.dumps(canonical(dict(config))))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested dict as {"outer.inner": value}."""
    if not isinstance(value, dict):
        return {prefix: value}
    return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}.{key}" if prefix else key).items()}


def _differences(saved: dict, asked: dict) -> list[str]:
    """"field: its value in the file, here" for every field of two recorded configurations that differs."""
    old, new = _flat(saved), _flat(asked)
    short = lambda v: repr(v[:12] + "...") if isinstance(v, str) and len(v) > 16 else repr(v)  # noqa: E731 (digests)
    return [f"{k}: {short(old.get(k, '(none)'))} in the file, {short(new.get(k, '(none)'))} here"
            for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]


def _progress(checkpoint: Path, saved: Any) -> dict:
    """The checkpoint's progress ({"epoch", "history", "epoch_seconds"}); a file that is not a checkpoint of
    `train_epochs` (a foreign file at the path) is refused, naming it."""
    if not isinstance(saved, dict) or not {"net", "opt", "generator", "torch_rng", "state"} <= saved.keys():
        keys = sorted(saved)[:5] if isinstance(saved, dict) else type(saved).__name__
        raise ValueError(f"{checkpoint}: not a training checkpoint of lib.train (it holds {keys}); delete it, or "
                         "give another checkpoint path.")
    return saved["state"]


def _check_resumable(checkpoint: Path, saved: dict, config: dict | None, epochs: int) -> None:
    """Refuse a checkpoint of another run (its recorded configuration differs; one without a record, written
    before runs recorded theirs, resumes) or one past the epochs asked (a run resumes forward only)."""
    progress = _progress(checkpoint, saved)
    if config is not None and saved.get("config") is not None and saved["config"] != config:
        differences = "; ".join(_differences(saved["config"], config))
        raise ValueError(f"{checkpoint}: the checkpoint of another run ({differences}); delete it to train this run "
                         "from the start, or give another checkpoint path.")
    if progress["epoch"] > epochs:
        raise ValueError(f"{checkpoint}: the checkpoint holds epoch {progress['epoch']}, past the {epochs} "
                         "epochs asked; a run resumes forward only, so train those epochs from the start (without "
                         "this checkpoint).")


def _resume(checkpoint: Path | None, model: nn.Module, optimiser: torch.optim.Optimizer, scheduler,
            generator: torch.Generator, config: dict | None, epochs: int) -> dict:
    """The progress so far ({"epoch", "history", "epoch_seconds"}), with the model, optimiser, schedule and both
    generators put back to where the checkpoint left them; a fresh start without one. A checkpoint that is not
    this run's (`_check_resumable`) or does not fit the model is refused, naming the file."""
    saved = load_checkpoint(checkpoint)
    if saved is None:
        return {"epoch": 0, "history": [], "epoch_seconds": []}
    _check_resumable(checkpoint, saved, config, epochs)
    try:
        model.load_state_dict(saved["net"])
        optimiser.load_state_dict(saved["opt"])
    except (RuntimeError, ValueError, KeyError) as err:
        raise ValueError(f"{checkpoint}: the checkpoint does not fit the model or its optimiser "
                         f"({str(err).strip().splitlines()[0]}); delete it, or give another checkpoint path.") from None
    if scheduler is not None:
        scheduler.load_state_dict(saved["sched"])
    generator.set_state(saved["generator"])
    torch.set_rng_state(saved["torch_rng"])
    return saved["state"]


def _save(checkpoint: Path, model: nn.Module, optimiser: torch.optim.Optimizer, scheduler,
          generator: torch.Generator, state: dict, config: dict | None) -> None:
    saved = {"net": model.state_dict(), "opt": optimiser.state_dict(), "generator": generator.get_state(),
             "torch_rng": torch.get_rng_state(), "state": state}
    if config is not None:  # a run that records nothing writes the checkpoint it wrote before
        saved["config"] = config
    if scheduler is not None:
        saved["sched"] = scheduler.state_dict()
    atomic_torch_save(saved, checkpoint)


def _batch_step(batch_loss: BatchLoss, idx: torch.Tensor, epoch: int, optimiser: torch.optim.Optimizer, scheduler,
                plan: Epochs, step: int, total: int, after_step: Callable[[int], None] | None = None) -> float:
    """Optimiser step `step` (0-based, of `total`) on the batch `idx`: the learning rate of a factor schedule,
    the step itself, `after_step(step)` (an EMA), torch's per-step cosine after it; returns the batch's loss
    summed over its items (the loss itself with plan.summed_loss)."""
    if callable(plan.schedule):
        for group in optimiser.param_groups:
            group["lr"] = group.setdefault("base_lr", group["lr"]) * plan.schedule(step, total)
    loss = batch_loss(idx, epoch)
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    optimiser.step()
    if after_step is not None:
        after_step(step)
    if plan.schedule == "cosine_steps":
        scheduler.step()
    return loss.item() * (1 if plan.summed_loss else len(idx))


def train_epochs(model: nn.Module, batch_loss: BatchLoss, optimiser: torch.optim.Optimizer, *, num_items: int,
                 plan: Epochs, generator: torch.Generator, index_device: torch.device | str | None = None,
                 checkpoint: Path | None = None, progress: bool = False, desc: str = "epochs",
                 after_step: Callable[[int], None] | None = None, config: Mapping[str, Any] | None = None) -> dict:
    """Train `model` (in train mode; left in eval mode) for plan.epochs epochs of `shuffled_batches(num_items, ...)`
    drawn from `generator` (indices on `index_device`), one optimiser step per batch on `batch_loss(idx, epoch)`.

    With `checkpoint`, the model, optimiser, schedule, both generators and the history are written there
    (atomically) after every complete epoch, and a run finds it and resumes from it: the result is that of an
    uninterrupted run. `config` (what the run depends on: its settings, seed, data fingerprint) is recorded in
    the checkpoint, and a checkpoint that records another is refused, naming the file and the fields that differ;
    so is a checkpoint past plan.epochs (a run resumes forward only) and a file that is not a checkpoint of this
    model. `after_step(step)` runs after every optimiser step (an EMA of weights the model holds as buffers or
    frozen parameters, so that the checkpoint carries it). Returns {"history": the mean loss of every epoch,
    "epoch_seconds": wall time of each, "steps": the optimiser steps taken, "items_seen": the items of their
    batches}, each counting the epochs a checkpoint held.
    """
    check_int("epochs", plan.epochs, minimum=0)
    check_int("batch_size", plan.batch_size, minimum=1)
    per_epoch = plan.steps_per_epoch(num_items)
    total = plan.epochs * per_epoch
    scheduler = _scheduler(optimiser, plan, total)
    model.train()
    config = recorded(config)
    state = _resume(checkpoint, model, optimiser, scheduler, generator, config, plan.epochs)
    step, items = state["epoch"] * per_epoch, state["epoch"] * plan.items_per_epoch(num_items)
    for epoch in progress_bar(range(state["epoch"], plan.epochs), desc=desc, enabled=progress):
        start, total_loss, seen, complete = time.perf_counter(), 0.0, 0, True
        for idx in shuffled_batches(num_items, plan.batch_size, generator, index_device, plan.drop_last):
            if plan.max_steps is not None and step >= plan.max_steps:
                complete = False
                break
            total_loss += _batch_step(batch_loss, idx, epoch, optimiser, scheduler, plan, step, total, after_step)
            step, seen = step + 1, seen + len(idx)
        items += seen
        if plan.schedule == "cosine_epochs":
            scheduler.step()
        state = {"epoch": epoch + 1, "history": [*state["history"], total_loss / max(seen, 1)],
                 "epoch_seconds": [*state["epoch_seconds"], time.perf_counter() - start]}
        if checkpoint is not None and complete:  # a cut-short epoch (max_steps) is not a resumable state
            _save(checkpoint, model, optimiser, scheduler, generator, state, config)
        if plan.max_steps is not None and step >= plan.max_steps:
            break
    model.eval()
    return {"history": state["history"], "epoch_seconds": state["epoch_seconds"], "steps": step, "items_seen": items}


def ema_update(average: torch.Tensor, current: torch.Tensor, decay: float, step: int) -> None:
    """average <- average + (1 - d)(current - average) in place, with the usual warm-up d = min(decay,
    (1 + step) / (10 + step)) after optimiser step `step` (0-based)."""
    average.lerp_(current, 1 - min(decay, (1 + step) / (10 + step)))
