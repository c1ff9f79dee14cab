import numpy as np
import pytest
import torch
from threads import at_one_and_two_threads, differing

from lib.cache import load_torch
from lib.data import gaussian_ring
from lib.prcurves import ddpm

SEEDS = [11, 12, 13]
# A member trained in a batch against the same member trained alone: the batched and the single matrix products
# round differently on some CPUs, and 25-30 Adam steps carry that along. Measured largest differences: within
# 1e-6 on the AMD EPYC machine, 2e-6 to 6.2e-6 (one element in 32,768) on an Intel Xeon (2026-12-01). One Adam
# step moves the parameters by up to 2e-3 (30 steps against 29, measured), 100x the tolerance, so a member that
# saw another member's data, noise or gradient for even one step would still fail.
TRAINED_ALONE_TOL = {"rtol": 1e-4, "atol": 2e-5}


@pytest.fixture(scope="module")
def points():
    return gaussian_ring(1_000, seed=7)


@pytest.mark.parametrize("complexity, expected", [(1, 71_218), (2, 141_490), (4, 282_034), (8, 563_122)])
def test_parameter_count(complexity, expected):
    assert ddpm.num_parameters(complexity) == expected
    assert sum(p.numel() for p in ddpm.DenoisingNet(complexity).parameters()) == expected


def test_cosine_schedule_reference_values():
    s = ddpm.cosine_schedule()
    assert s.num_steps == 100 and s.betas.dtype == torch.float32
    for value, expected in [(s.betas[0], 6.313e-4), (s.betas[98], 0.7499), (s.betas[99], 0.999),
                            (s.alpha_bars[49], 0.4938), (s.alpha_bars[99], 2.43e-7)]:
        assert float(value) == pytest.approx(expected, rel=1e-3)  # the spec rounds to 4 digits
    assert int((s.betas >= 0.999).sum()) == 1


def test_batched_forward_equals_the_reference_module():
    gens = [torch.Generator().manual_seed(s) for s in SEEDS]
    params = ddpm.stack_members([ddpm.init_member(2, g) for g in gens])
    x = torch.randn(3, 7, 2, generator=torch.Generator().manual_seed(0))
    t = torch.tensor([0.0, 50.0, 99.0])
    batched = ddpm.denoise(params, x, t)
    for i in range(3):
        net = ddpm.DenoisingNet(2).load_member(params, i)
        single = net(x[i], t[i].expand(7, 1))
        torch.testing.assert_close(batched[i], single, rtol=1e-5, atol=1e-6)


def test_member_in_batch_equals_member_trained_alone(points):
    together = ddpm.train_ensemble(points, complexity=2, seeds=SEEDS, num_steps=30, progress=False)
    alone = ddpm.train_ensemble(points, complexity=2, seeds=SEEDS[1:2], num_steps=30, progress=False)
    for key, value in together["params"].items():
        torch.testing.assert_close(value[1], alone["params"][key][0], **TRAINED_ALONE_TOL)
    np.testing.assert_allclose(together["losses"][:, 1], alone["losses"][:, 0], rtol=1e-5)
    samples_together = ddpm.sample_ensemble(together["params"], num_samples=200, seeds=SEEDS, progress=False)
    samples_alone = ddpm.sample_ensemble(alone["params"], num_samples=200, seeds=SEEDS[1:2], progress=False)
    np.testing.assert_allclose(samples_together[1], samples_alone[0], rtol=1e-4, atol=1e-4)


def test_members_differ_and_same_seed_repeats(points):
    first = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=5, progress=False)
    second = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=5, progress=False)
    for key in first["params"]:
        torch.testing.assert_close(first["params"][key], second["params"][key], rtol=0, atol=0)
    assert not torch.allclose(first["params"]["out.w"][0], first["params"]["out.w"][1])


def test_resuming_from_checkpoint_gives_the_uninterrupted_result(points, tmp_path):
    straight = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=12, progress=False)
    ckpt = tmp_path / "run.ckpt"
    ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=8, checkpoint=ckpt, checkpoint_every=4,
                        progress=False)  # "interrupted" after 8 of 12 steps: the checkpoint holds step 4
    assert load_torch(ckpt)["step"] == 4
    resumed = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=12, checkpoint=ckpt,
                                  checkpoint_every=4, progress=False)
    for key in straight["params"]:
        torch.testing.assert_close(straight["params"][key], resumed["params"][key], rtol=0, atol=0)
    np.testing.assert_array_equal(straight["losses"], resumed["losses"])


def test_snapshots_taken_before_an_interruption_survive_the_resume(points, tmp_path):
    """A long run evaluated at several budgets (the frontier study) keeps the states it passed before it was
    stopped: the checkpoint holds them, and the resumed run returns every snapshot, equal to a straight run's."""
    straight = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=12, snapshots=(2, 6, 12),
                                   progress=False)
    ckpt = tmp_path / "run.ckpt"
    ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=9, snapshots=(2, 6, 12), checkpoint=ckpt,
                        checkpoint_every=4, progress=False)  # "interrupted" after 9 steps: the checkpoint is at 8
    resumed = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=12, snapshots=(2, 6, 12),
                                  checkpoint=ckpt, checkpoint_every=4, progress=False)
    assert sorted(resumed["snapshots"]) == [2, 6, 12]
    for step, snap in straight["snapshots"].items():
        for key in snap["params"]:
            torch.testing.assert_close(snap["params"][key], resumed["snapshots"][step]["params"][key], rtol=0, atol=0)


def test_per_member_clipping_matches_torch(points):
    gens = [torch.Generator().manual_seed(s) for s in SEEDS]
    params = {k: v.requires_grad_() for k, v in ddpm.stack_members([ddpm.init_member(1, g) for g in gens]).items()}
    x = torch.randn(3, 50, 2, generator=torch.Generator().manual_seed(1)) * 100
    ddpm.denoise(params, x, torch.tensor([5.0, 6.0, 7.0])).pow(2).mean(dim=(1, 2)).sum().backward()
    expected = []
    for i in range(3):
        grads = [p.grad[i].clone().requires_grad_() for p in params.values()]
        for g in grads:
            g.grad = g.detach().clone()
        torch.nn.utils.clip_grad_norm_(grads, 1.0)
        expected.append([g.grad for g in grads])
    ddpm._clip_per_member([p.grad for p in params.values()], 1.0)
    for i in range(3):
        for p, e in zip(params.values(), expected[i]):
            torch.testing.assert_close(p.grad[i], e, rtol=1e-6, atol=1e-8)


def test_training_reduces_the_loss(points):
    result = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=150, progress=False)
    assert result["losses"][-50:].mean() < result["losses"][:10].mean()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_checkpoint_is_deleted_and_training_restarts(points, tmp_path, damage, caplog):
    """A truncated checkpoint crashed with PytorchStreamReader's error, a bit-flipped
    one resumed silently from altered weights. Now it is logged by name, deleted, and training restarts."""
    straight = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=8, progress=False)
    ckpt = tmp_path / "run.ckpt"
    ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=6, checkpoint=ckpt, checkpoint_every=4,
                        progress=False)
    raw = bytearray(ckpt.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    else:
        raw[len(raw) // 2] ^= 0x10
    ckpt.write_bytes(bytes(raw))
    with caplog.at_level("WARNING", logger="lib.cache"):
        resumed = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=8, checkpoint=ckpt,
                                      checkpoint_every=100, progress=False)
    assert str(ckpt) in caplog.text and not ckpt.exists()
    np.testing.assert_array_equal(straight["losses"], resumed["losses"])
CONVERGENCE = ddpm.TrainSettings(batch_size=64, t_sampling="stratified", lr_schedule="cosine", warmup_steps=5,
                                 ema_decay=0.99)


@pytest.mark.parametrize("settings", [ddpm.TrainSettings(batch_size=64, t_sampling="per_sample"), CONVERGENCE])
def test_member_in_batch_equals_member_alone_with_every_option(points, settings):
    together = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=25, settings=settings, progress=False)
    alone = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[2:], num_steps=25, settings=settings, progress=False)
    for part in ("params", "ema") if settings.ema_decay else ("params",):
        for key, value in together[part].items():
            torch.testing.assert_close(value[2], alone[part][key][0], **TRAINED_ALONE_TOL)


def test_block_streams_slice_epochs_and_stratify_time_steps():
    settings = ddpm.TrainSettings(batch_size=196, t_sampling="stratified")  # 196 = 2 x 98 time steps
    streams = ddpm.BlockStreams([5, 6], 1_000, settings, torch.device("cpu"))
    assert streams.steps_per_epoch == 6 and streams.steps_per_block == 6 * 34 >= ddpm.BLOCK_STEPS
    seen = []
    for step in range(6):  # one epoch: every point once, the last batch partial (1000 = 5 x 196 + 20)
        idx, t, eps = streams.batch(step)
        assert idx.shape == (2, 196 if step < 5 else 20) and eps.shape == (*idx.shape, 2) and t.shape == idx.shape
        seen.append(idx)
        if step < 5:  # a full batch holds every t in {1, ..., 98} exactly twice
            for member in t:
                np.testing.assert_array_equal(torch.bincount(member, minlength=99)[1:], np.full(98, 2))
    np.testing.assert_array_equal(torch.cat(seen, dim=1).sort(dim=1).values, torch.arange(1000).expand(2, -1))
    other = ddpm.BlockStreams([6], 1_000, settings, torch.device("cpu"))  # member 6 alone: the same stream
    for step in (0, 5, 300):  # 300: in the second block
        for a, b in zip(streams.batch(step), other.batch(step)):
            torch.testing.assert_close(a[1], b[0], rtol=0, atol=0)


def test_learning_rate_warmup_then_cosine_and_linear_decay():
    cosine = ddpm.TrainSettings(lr=1.0, lr_schedule="cosine", warmup_steps=10)
    assert [ddpm.learning_rate(cosine, s, 110) for s in (0, 4, 9)] == pytest.approx([0.1, 0.5, 1.0])
    assert [ddpm.learning_rate(cosine, s, 110) for s in (10, 60, 110)] == pytest.approx([1.0, 0.5, 0.0])
    linear = ddpm.TrainSettings(lr=2.0, lr_schedule="linear")
    assert [ddpm.learning_rate(linear, s, 100) for s in (0, 25, 100)] == pytest.approx([2.0, 1.5, 0.0])
    assert ddpm.learning_rate(ddpm.TrainSettings(), 12_345, 20) == 2e-3


def test_ema_is_the_warmed_up_moving_average(points):
    settings = ddpm.TrainSettings(batch_size=64, ema_decay=0.5)
    init = ddpm.stack_members([ddpm.init_member(1, torch.Generator().manual_seed(s)) for s in SEEDS[:2]])
    one = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=1, settings=settings, progress=False)
    two = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=2, settings=settings, progress=False)
    for key in init:  # decay min(0.5, (1 + s) / (10 + s)): 0.1 after step 0, then 2/11
        torch.testing.assert_close(one["ema"][key], 0.1 * init[key] + 0.9 * one["params"][key])
        torch.testing.assert_close(two["ema"][key], 2 / 11 * one["ema"][key] + 9 / 11 * two["params"][key])
    assert ddpm.sampling_params(two) is two["ema"]


def test_snapshots_and_resume_with_every_option(points, tmp_path):
    straight = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=12, settings=CONVERGENCE,
                                   snapshots=(6,), progress=False)
    ckpt = tmp_path / "run.ckpt"
    ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=9, settings=CONVERGENCE, checkpoint=ckpt,
                        checkpoint_every=6, progress=False)
    resumed = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=12, settings=CONVERGENCE,
                                  checkpoint=ckpt, checkpoint_every=6, progress=False)
    for part in ("params", "ema"):
        for key in straight[part]:
            torch.testing.assert_close(straight[part][key], resumed[part][key], rtol=0, atol=0)
    constant = ddpm.TrainSettings(batch_size=64)
    short = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=6, settings=constant, progress=False)
    longer = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS[:2], num_steps=9, settings=constant,
                                 snapshots=(6,), progress=False)
    for key in short["params"]:
        torch.testing.assert_close(longer["snapshots"][6]["params"][key], short["params"][key], rtol=0, atol=0)


@pytest.mark.parametrize("field, value, message", [
    ("t_sampling", "uniform", "settings.t_sampling='uniform' is not allowed"),
    ("lr_schedule", "step", "settings.lr_schedule='step'"),
    ("ema_decay", 1.0, r"settings.ema_decay=1.0 must lie in \[0.0, 1.0\)"),
    ("t_high", 0, "settings.t_high=0"),
    ("batch_size", 0, "settings.batch_size=0"),
])
def test_bad_train_settings_are_refused_before_training(points, field, value, message):
    from dataclasses import replace

    with pytest.raises(ValueError, match=message):
        ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=1,
                            settings=replace(ddpm.TrainSettings(), **{field: value}), progress=False)


def test_training_and_sampling_give_the_same_bits_at_one_and_two_threads(points, thread_count):
    """Measured: the ensembles do not move with the thread count (also at the cpu preset's settings, C = 8, M = 8:
    0 of 112 arrays differ), so notebook 01's stages keep using NUM_THREADS threads; this says when that stops
    being true (its cache entries would then depend on the run that wrote them)."""
    def train_and_sample() -> dict:
        trained = ddpm.train_ensemble(points, complexity=2, seeds=SEEDS[:2], num_steps=5, progress=False,
                                      settings=ddpm.TrainSettings(batch_size=128, ema_decay=0.9))
        return {**trained, "samples": ddpm.sample_ensemble(ddpm.sampling_params(trained), num_samples=200,
                                                           seeds=SEEDS[:2], progress=False)}

    one, two = at_one_and_two_threads(thread_count, train_and_sample)
    assert differing(one, two) == []
