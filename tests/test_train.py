"""lib.train: the one minibatch training loop of the small torch models, against hand-written loops."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

from lib import train
from lib.cache import atomic_torch_save


def _data(n: int = 50):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, generator=g)
    return x, x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(n, 1, generator=g)


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1))


def _mse(model, x, y):
    return lambda idx, _epoch: (model(x[idx]) - y[idx]).pow(2).mean()


def test_train_epochs_equals_the_hand_written_loop_it_replaced():
    """The loop the CVAE, flow and DQR had: Adam, a seeded permutation per epoch, the last partial batch kept,
    dropout from torch's generator seeded alike; the same bits, and the epoch losses as a batch-weighted mean."""
    x, y = _data()
    ref = _model(1)
    gen = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    ref.train()
    losses = []
    for _ in range(4):
        order, total = torch.randperm(len(x), generator=gen), 0.0
        for start in range(0, len(x), 16):
            idx = order[start:start + 16]
            opt.zero_grad()
            loss = (ref(x[idx]) - y[idx]).pow(2).mean()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(x))

    model = _model(1)
    gen = train.seeded(3)
    run = train.train_epochs(model, _mse(model, x, y), train.make_optimiser(model, lr=0.01), num_items=len(x),
                             plan=train.Epochs(4, 16), generator=gen)
    assert all(torch.equal(a, b) for a, b in zip(ref.state_dict().values(), model.state_dict().values()))
    assert run["history"] == losses and len(run["epoch_seconds"]) == 4
    assert not model.training


def test_schedules_set_the_learning_rate_of_every_step():
    x, y = _data(40)
    seen = {}
    for schedule in ("cosine_epochs", "cosine_steps", lambda step, total: (step + 1) / total):
        model = _model(0)
        opt = train.make_optimiser(model, "sgd", lr=0.1)
        lrs = []

        def loss(idx, _epoch, model=model, opt=opt, lrs=lrs):
            lrs.append(opt.param_groups[0]["lr"])
            return (model(x[idx]) - y[idx]).pow(2).mean()

        train.train_epochs(model, loss, opt, num_items=40, plan=train.Epochs(3, 16, schedule=schedule),
                           generator=train.seeded(0))
        seen[schedule if isinstance(schedule, str) else "factor"] = lrs
    cosine = lambda t, n: 0.05 * (1 + math.cos(math.pi * t / n))  # noqa: E731
    assert seen["cosine_epochs"] == pytest.approx([cosine(e, 3) for e in range(3) for _ in range(3)])
    assert seen["cosine_steps"] == pytest.approx([cosine(s, 9) for s in range(9)])
    assert seen["factor"] == pytest.approx([0.1 * (s + 1) / 9 for s in range(9)])


def test_drop_last_and_summed_losses():
    batches = list(train.shuffled_batches(10, 4, torch.Generator().manual_seed(0), drop_last=True))
    assert [len(b) for b in batches] == [4, 4]
    assert len(set(torch.cat(batches).tolist())) == 8
    assert [len(b) for b in train.shuffled_batches(10, 4, torch.Generator().manual_seed(0))] == [4, 4, 2]
    assert [len(b) for b in train.shuffled_batches(3, 4, torch.Generator().manual_seed(0), drop_last=True)] == [3]
    x, y = _data(10)
    model = _model(0)
    sums = []

    def summed(idx, _epoch):
        loss = (model(x[idx]) - y[idx]).pow(2).sum()
        sums.append(loss.item())
        return loss

    run = train.train_epochs(model, summed, train.make_optimiser(model), num_items=10,
                             plan=train.Epochs(1, 4, drop_last=True, summed_loss=True), generator=train.seeded(0))
    assert run["history"] == [(sums[0] + sums[1]) / 8]


@pytest.mark.parametrize("schedule", ["cosine_epochs", "constant"])
def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_weights(tmp_path, schedule):
    x, y = _data()
    plan = train.Epochs(4, 16, schedule=schedule)

    def run(max_steps=None, checkpoint=None):
        model = _model(2)
        gen = train.seeded(5)
        out = train.train_epochs(model, _mse(model, x, y), train.make_optimiser(model, "sgd", lr=0.05),
                                 num_items=len(x), plan=replace(plan, max_steps=max_steps),
                                 generator=gen, checkpoint=checkpoint)
        return model, out

    straight, straight_run = run()
    checkpoint = tmp_path / "ck.pt"
    run(max_steps=9, checkpoint=checkpoint)  # two whole epochs (4 steps each) and one step of the third
    assert train.load_checkpoint(checkpoint)["state"]["epoch"] == 2
    resumed, resumed_run = run(checkpoint=checkpoint)
    assert all(torch.equal(a, b) for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()))
    assert resumed_run["history"] == straight_run["history"]


def test_a_damaged_checkpoint_is_deleted_and_read_as_none(tmp_path):
    path = tmp_path / "ck.pt"
    atomic_torch_save({"step": 3}, path)
    assert train.load_checkpoint(path) == {"step": 3}
    path.write_bytes(path.read_bytes()[:-5])
    assert train.load_checkpoint(path) is None and not path.exists()
    assert train.load_checkpoint(None) is None


def test_ema_warms_up_then_uses_the_decay():
    avg = torch.zeros(2)
    train.ema_update(avg, torch.ones(2), 0.999, step=0)  # d = min(0.999, 1/10)
    assert torch.allclose(avg, torch.full((2,), 0.9))
    avg = torch.zeros(2)
    train.ema_update(avg, torch.ones(2), 0.5, step=1000)
    assert torch.allclose(avg, torch.full((2,), 0.5))


def test_bad_optimiser_and_plan_are_named():
    with pytest.raises(ValueError, match="optimiser"):
        train.make_optimiser(_model(0), "lbfgs")
    model = _model(0)
    with pytest.raises(ValueError, match="batch_size"):
        train.train_epochs(model, lambda idx, e: idx.sum(), train.make_optimiser(model), num_items=4,
                           plan=train.Epochs(1, 0), generator=train.seeded(0))


def _run_to(epochs: int, checkpoint, config=None, seed: int = 5, max_steps=None):
    x, y = _data()
    model = _model(2)
    out = train.train_epochs(model, _mse(model, x, y), train.make_optimiser(model, "sgd", lr=0.05), num_items=len(x),
                             plan=train.Epochs(epochs, 16, max_steps=max_steps), generator=train.seeded(seed),
                             checkpoint=checkpoint, **({} if config is None else {"config": config}))
    return model, out


def test_a_checkpoint_past_the_epochs_asked_is_refused_naming_it(tmp_path):
    """A run resumes forward only: the state at epoch 3 is not the state at epoch 2 (it returned the epoch-3 model
    as the epoch-2 one)."""
    checkpoint = tmp_path / "ck.pt"
    _run_to(3, checkpoint)
    with pytest.raises(ValueError, match=r"ck\.pt.*epoch 3.*2 epochs"):
        _run_to(2, checkpoint)
    assert train.checkpoint_epoch(checkpoint) == 3 and train.checkpoint_epoch(tmp_path / "none.pt") == 0
    _run_to(3, checkpoint)  # the epochs it holds: nothing left to train


def test_a_checkpoint_of_another_configuration_is_refused_and_one_without_resumes(tmp_path):
    config = {"seed": 5, "lr": 0.05, "data": np.arange(4)}
    straight, straight_run = _run_to(4, None)
    checkpoint = tmp_path / "ck.pt"
    _run_to(4, checkpoint, config, max_steps=9)  # two whole epochs, then cut
    with pytest.raises(ValueError, match=r"ck\.pt.*another run.*seed: 5 in the file, 6 here") as err:
        _run_to(4, checkpoint, {**config, "seed": 6})
    assert "lr" not in str(err.value)
    with pytest.raises(ValueError, match=r"ck\.pt.*data\.sha256"):
        _run_to(4, checkpoint, {**config, "data": np.arange(5)})
    # a checkpoint written before configurations were recorded resumes as before
    saved = train.load_checkpoint(checkpoint)
    del saved["config"]
    atomic_torch_save(saved, checkpoint)
    resumed, resumed_run = _run_to(4, checkpoint, config)
    assert all(torch.equal(a, b) for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()))
    assert resumed_run["history"] == straight_run["history"]
    assert train.load_checkpoint(checkpoint)["config"]["seed"] == 5  # and records it from then on


def test_a_foreign_file_at_the_checkpoint_path_is_refused_naming_it(tmp_path):
    checkpoint = tmp_path / "ck.pt"
    atomic_torch_save({"weights": torch.zeros(3)}, checkpoint)  # KeyError: 'net'
    with pytest.raises(ValueError, match=r"ck\.pt.*not a training checkpoint"):
        _run_to(2, checkpoint)
    other = nn.Linear(3, 1)
    saved = {"net": other.state_dict(), "opt": train.make_optimiser(other).state_dict(),
             "generator": torch.Generator().get_state(), "torch_rng": torch.get_rng_state(),
             "state": {"epoch": 1, "history": [0.0], "epoch_seconds": [0.0]}}
    atomic_torch_save(saved, checkpoint)  # a checkpoint of another model: a size mismatch
    with pytest.raises(ValueError, match=r"ck\.pt.*does not fit the model"):
        _run_to(2, checkpoint)


@pytest.mark.parametrize("n, batch, drop_last", [(12, 128, True), (10, 4, True), (10, 4, False), (50, 16, True)])
def test_items_seen_counts_the_items_of_every_batch(tmp_path, n, batch, drop_last):
    """Not steps x batch_size: a batch larger than the data holds the data, drop_last drops the rest; a run cut
    short and resumed counts what the uninterrupted one does."""
    x, y = _data(n)
    counted = []

    def run(max_steps=None, checkpoint=None):
        model = _model(0)

        def loss(idx, _epoch):
            counted.append(len(idx))
            return (model(x[idx]) - y[idx]).pow(2).mean()

        return train.train_epochs(model, loss, train.make_optimiser(model), num_items=n, generator=train.seeded(0),
                                  plan=train.Epochs(3, batch, drop_last=drop_last, max_steps=max_steps),
                                  checkpoint=checkpoint)

    whole = run()
    assert whole["items_seen"] == sum(counted) == 3 * train.Epochs(3, batch, drop_last=drop_last).items_per_epoch(n)
    counted.clear()
    cut = run(max_steps=whole["steps"] - 1)
    assert cut["items_seen"] == sum(counted) and cut["steps"] == whole["steps"] - 1
    checkpoint = tmp_path / "ck.pt"
    run(max_steps=whole["steps"] // 3 + 1, checkpoint=checkpoint)  # one epoch and a step
    assert run(checkpoint=checkpoint)["items_seen"] == whole["items_seen"]
