import numpy as np
import pytest
import torch

from lib.data import gaussian_ring
from lib.prcurves import ddpm

SEEDS = [11, 12, 13]


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
        torch.testing.assert_close(value[1], alone["params"][key][0], rtol=1e-5, atol=1e-6)
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
    assert torch.load(ckpt, weights_only=False)["step"] == 4
    resumed = ddpm.train_ensemble(points, complexity=1, seeds=SEEDS, num_steps=12, checkpoint=ckpt,
                                  checkpoint_every=4, progress=False)
    for key in straight["params"]:
        torch.testing.assert_close(straight["params"][key], resumed["params"][key], rtol=0, atol=0)
    np.testing.assert_array_equal(straight["losses"], resumed["losses"])


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
