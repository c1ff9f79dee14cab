"""lib.diffusion: the condition paths, EDM's sampler against the closed form of a Gaussian, classifier-free
guidance, and training that resumes from a checkpoint to the weights of an uninterrupted run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.diffusion import Recipe, build_denoiser, guided, heun_sample, noise_levels, sample, train_denoiser
from lib.diffusion.training import WithEMA, _batch_loss
from lib.diffusion.unet import UNet, normalize

TINY = Recipe(channels=8, batch_size=16, warmup_steps=5)


def _randomised(denoiser):
    """The zero-initialised output layers filled in, so that the network's output depends on its inputs."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in denoiser.parameters():
            if not p.any():
                p.normal_(0, 0.2)
    return denoiser.eval()


@pytest.mark.parametrize("resolution", [16, 32])
@pytest.mark.parametrize("condition, dim", [("none", 0), ("class", 10), ("feature", 32)])
def test_shapes_and_condition_paths(resolution, condition, dim):
    torch.manual_seed(0)
    d = build_denoiser(TINY, resolution=resolution, condition=condition, cond_dim=dim)
    x, sigma = torch.randn(3, 3, resolution, resolution), torch.tensor([0.1, 1.0, 10.0])
    cond = torch.randn(3, dim) if dim else None
    assert d(x, sigma, cond).shape == x.shape
    names = [n for n, _ in d.named_parameters()]
    assert any("emb_label" in n for n in names) == (condition != "none")  # the unconditional net has no label weights


def test_a_change_of_condition_changes_the_output_and_the_unconditional_net_refuses_one():
    torch.manual_seed(0)
    d = _randomised(build_denoiser(TINY, resolution=16, condition="class", cond_dim=10))
    x, sigma = torch.randn(2, 3, 16, 16), torch.full((2,), 0.5)
    a, b = torch.eye(10)[[0, 0]], torch.eye(10)[[3, 3]]
    assert (d(x, sigma, a) - d(x, sigma, b)).abs().max() > 1e-3
    assert torch.equal(d(x, sigma, a), d(x, sigma, a))
    with pytest.raises(ValueError, match="needs cond of shape"):
        d(x, sigma, None)
    u = build_denoiser(TINY, resolution=16)
    with pytest.raises(ValueError, match="takes no cond"):
        u(x, sigma, a)
    with pytest.raises(ValueError, match="cond_dim"):
        UNet(condition="class", cond_dim=0)


def test_normalize_scales_rows_to_sqrt_d_and_keeps_the_empty_condition_zero():
    x = torch.tensor([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    out = normalize(x)
    assert torch.linalg.vector_norm(out[0]).item() == pytest.approx(2.0, rel=1e-3)  # sqrt(4)
    assert torch.equal(out[1], torch.zeros(4))


def test_guidance_blends_the_conditional_and_the_empty_branch():
    torch.manual_seed(0)
    d = _randomised(build_denoiser(TINY, resolution=16, condition="class", cond_dim=10))
    x, sigma, c = torch.randn(4, 3, 16, 16), torch.full((4,), 2.0), torch.eye(10)[[1, 2, 3, 4]]
    conditional, empty = d(x, sigma, c), d(x, sigma, torch.zeros_like(c))
    assert torch.allclose(guided(d, c, 1.0)(x, sigma), conditional)
    assert torch.allclose(guided(d, c, 0.0)(x, sigma), empty, atol=1e-5)
    assert torch.allclose(guided(d, c, 3.0)(x, sigma), empty + 3 * (conditional - empty), atol=1e-5)


def test_label_dropout_trains_the_empty_condition_at_its_rate():
    torch.manual_seed(0)
    recipe = Recipe(channels=8, batch_size=400, label_dropout=0.3)
    trainer = WithEMA(build_denoiser(recipe, resolution=16, condition="class", cond_dim=10))
    seen = []
    trainer.model.net.register_forward_pre_hook(lambda module, args: seen.append(args[2].clone()))
    data, conds = torch.zeros(400, 3, 16, 16), torch.eye(10)[torch.arange(400) % 10]
    _batch_loss(trainer, data, conds, recipe, torch.Generator().manual_seed(0))(torch.arange(400), 0)
    empty = (seen[0].abs().sum(1) == 0).float().mean().item()
    assert abs(empty - 0.3) < 3 * np.sqrt(0.3 * 0.7 / 400)


def test_heun_sampler_on_a_gaussian_converges_to_edm_s_closed_form():
    """Data N(mu, s^2) per pixel: the ideal denoiser is mu + s^2 / (s^2 + sigma^2) (x - mu), and the probability-flow
    ODE maps x(sigma_max) to mu + (x - mu) s / sqrt(s^2 + sigma_max^2): sample mean mu, variance s^2. Heun's error
    falls as a power of the steps (0.12 at 18 steps, 0.008 at 64, 5e-4 at 256 here)."""
    mu, s = 0.3, 0.5
    denoise = lambda x, sigma: mu + s**2 / (s**2 + sigma.reshape(-1, 1, 1, 1) ** 2) * (x - mu)  # noqa: E731
    noise = torch.randn((4000, 3, 2, 2), generator=torch.Generator().manual_seed(0))
    errors = {}
    for steps in (18, 64, 256):
        sigma_max = noise_levels(steps)[0]
        exact = mu + (noise * sigma_max - mu) * s / np.sqrt(s**2 + sigma_max**2)
        out = heun_sample(denoise, noise, steps=steps)
        errors[steps] = (out - exact).abs().max().item()
    assert errors[64] < errors[18] / 8 and errors[256] < errors[64] / 8 and errors[256] < 1e-3
    se = s / np.sqrt(out.numel())
    assert out.mean().item() == pytest.approx(mu * (1 - s / sigma_max), abs=4 * se)
    assert out.var().item() == pytest.approx(s**2, rel=0.03)


def test_noise_levels_follow_edm_s_schedule():
    t = noise_levels(5, sigma_min=0.002, sigma_max=80.0, rho=7.0)
    assert t[0] == pytest.approx(80.0) and t[-2] == pytest.approx(0.002) and t[-1] == 0.0
    assert np.all(np.diff(t) < 0)
    with pytest.raises(ValueError, match="steps"):
        noise_levels(0)


def _images(n=48, size=16, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def test_a_training_run_killed_and_resumed_equals_an_uninterrupted_one(tmp_path):
    images, conds = _images(), np.eye(10, dtype=np.float32)[np.arange(48) % 10]
    recipe = Recipe(channels=8, batch_size=16, warmup_steps=5, label_dropout=0.2)
    run = dict(condition="class", seed=3)
    whole = train_denoiser(images, conds, recipe, epochs=3, **run)
    checkpoint = tmp_path / "ckpt.pt"
    cut = train_denoiser(images, conds, recipe, epochs=3, checkpoint=checkpoint, max_steps=4, **run)  # dies in epoch 2
    assert len(cut["history"]) == 2 and checkpoint.exists()
    resumed = train_denoiser(images, conds, recipe, epochs=3, checkpoint=checkpoint, **run)
    assert resumed["history"][0] == whole["history"][0] and len(resumed["history"]) == 3
    for name, value in whole["ema"].items():
        assert torch.equal(value, resumed["ema"][name]), name
    # and the 25 / 50 / 100 % snapshots come from the same run: epochs 1 then 3 on one checkpoint
    staged = tmp_path / "staged.pt"
    train_denoiser(images, conds, recipe, epochs=1, checkpoint=staged, **run)
    final = train_denoiser(images, conds, recipe, epochs=3, checkpoint=staged, **run)
    assert all(torch.equal(v, final["ema"][k]) for k, v in whole["ema"].items())


def test_sampling_depends_on_the_seed_not_on_the_batch_size():
    torch.manual_seed(0)
    d = _randomised(build_denoiser(TINY, resolution=16, condition="feature", cond_dim=5))
    cond = np.random.default_rng(0).standard_normal((9, 5)).astype(np.float32)
    a = sample(d, 9, cond=cond, steps=3, seed=1, batch_size=4)
    b = sample(d, 9, cond=cond, steps=3, seed=1, batch_size=9)
    assert a.shape == (9, 16, 16, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert not np.array_equal(a, sample(d, 9, cond=cond, steps=3, seed=2))


def test_training_refuses_conditions_that_do_not_fit_the_arm():
    with pytest.raises(ValueError, match="needs conds of shape"):
        train_denoiser(_images(8), None, TINY, condition="class", epochs=1, seed=0)
    with pytest.raises(ValueError, match="needs conds of shape"):
        train_denoiser(_images(8), np.zeros((7, 10), np.float32), TINY, condition="class", epochs=1, seed=0)


def test_training_refuses_images_that_are_not_uint8_and_conditions_that_are_not_finite():
    """Float images in [0, 1] were read as uint8 (all near -1 in model space); NaN conditions trained NaN weights."""
    floats = _images(8).astype(np.float32) / 255
    with pytest.raises(ValueError, match=r"images of dtype float32.*uint8"):
        train_denoiser(floats, None, TINY, condition="none", epochs=1, seed=0)
    with pytest.raises(ValueError, match=r"images.*\(n, H, W, 3\)"):
        train_denoiser(_images(8)[..., 0], None, TINY, condition="none", epochs=1, seed=0)
    conds = np.eye(10, dtype=np.float32)[np.arange(8)]
    conds[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"conds holds 1 non-finite value"):
        train_denoiser(_images(8), conds, TINY, condition="class", epochs=1, seed=0)
    with pytest.raises(ValueError, match=r"seed=-1"):
        train_denoiser(_images(8), None, TINY, condition="none", epochs=1, seed=-1)


def test_images_seen_counts_the_images_of_the_batches():
    """12 images at batch 128: each epoch's one batch holds 12 (it said 128)."""
    out = train_denoiser(_images(12), None, TINY_BIG_BATCH, condition="none", epochs=2, seed=0)
    assert out["images_seen"] == 24
    assert train_denoiser(_images(40), None, TINY, condition="none", epochs=1, seed=0)["images_seen"] == 32  # 2 x 16


TINY_BIG_BATCH = Recipe(channels=8, batch_size=128, warmup_steps=5)


def test_a_checkpoint_of_another_run_is_refused_naming_the_file_and_fields(tmp_path):
    """The run's recipe, seed, condition and data are recorded in its checkpoint: resuming one of another seed,
    learning rate or database is refused; a checkpoint recorded before (no configuration) resumes as before."""
    from dataclasses import replace

    from lib.cache import atomic_torch_save
    from lib.train import load_checkpoint

    images = _images(32)
    checkpoint = tmp_path / "ckpt.pt"
    train_denoiser(images, None, TINY, condition="none", epochs=1, seed=3, checkpoint=checkpoint)
    with pytest.raises(ValueError, match=r"ckpt\.pt.*another run.*seed: 3 in the file, 4 here"):
        train_denoiser(images, None, TINY, condition="none", epochs=2, seed=4, checkpoint=checkpoint)
    with pytest.raises(ValueError, match=r"ckpt\.pt.*recipe\.lr: 0\.001 in the file, 0\.002 here"):
        train_denoiser(images, None, replace(TINY, lr=2e-3), condition="none", epochs=2, seed=3, checkpoint=checkpoint)
    with pytest.raises(ValueError, match=r"ckpt\.pt.*images\.sha256"):
        train_denoiser(_images(32, seed=1), None, TINY, condition="none", epochs=2, seed=3, checkpoint=checkpoint)
    saved = load_checkpoint(checkpoint)
    del saved["config"]  # as lib.train wrote checkpoints before they recorded their run
    atomic_torch_save(saved, checkpoint)
    resumed = train_denoiser(images, None, TINY, condition="none", epochs=2, seed=3, checkpoint=checkpoint)
    whole = train_denoiser(images, None, TINY, condition="none", epochs=2, seed=3)
    assert all(torch.equal(v, resumed["ema"][k]) for k, v in whole["ema"].items())


def test_sampling_refuses_bad_arguments_by_name():
    torch.manual_seed(0)
    d = build_denoiser(TINY, resolution=16, condition="class", cond_dim=10)
    cond = np.eye(10, dtype=np.float32)[[1, 2]]
    for bad, match in (({"batch_size": 0}, "batch_size=0"), ({"steps": 2.5}, "steps=2.5"),
                       ({"steps": True}, "steps=True"), ({"seed": 2**64}, "seed=18446744073709551616"),
                       ({"seed": -1}, "seed=-1")):
        with pytest.raises(ValueError, match=match):
            sample(d, 2, cond=cond, **{"steps": 2, "seed": 0, **bad})
    nan = cond.copy()
    nan[1, 0] = np.nan  # sampled all-zero images
    with pytest.raises(ValueError, match=r"cond holds 1 non-finite value"):
        sample(d, 2, cond=nan, steps=2, seed=0)
    with pytest.raises(ValueError, match=r"cond.*\(2, 10\)"):
        sample(d, 2, cond=cond[:, :5], steps=2, seed=0)


def test_a_foreign_file_given_to_load_denoiser_is_refused_naming_it(tmp_path):
    from lib.cache import atomic_torch_save
    from lib.diffusion import load_denoiser

    torch.manual_seed(0)
    wide = build_denoiser(Recipe(channels=16), resolution=16)
    path = tmp_path / "weights.pt"
    atomic_torch_save({"ema": wide.state_dict()}, path)
    with pytest.raises(ValueError, match=r"weights\.pt.*do not fit"):
        load_denoiser(path, TINY, resolution=16, condition="none", cond_dim=0)
    atomic_torch_save({"net": {}, "opt": {}}, path)  # a training checkpoint, not weights
    with pytest.raises(ValueError, match=r"weights\.pt.*no denoiser weights"):
        load_denoiser(path, TINY, resolution=16, condition="none", cond_dim=0)
    atomic_torch_save({"ema": build_denoiser(TINY, resolution=16).state_dict()}, path)
    assert isinstance(load_denoiser(path, TINY, resolution=16, condition="none", cond_dim=0), torch.nn.Module)
    with pytest.raises(ValueError, match="do not fit"):
        load_denoiser(wide.state_dict(), TINY, resolution=16, condition="none", cond_dim=0)
