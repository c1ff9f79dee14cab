"""CReL's latent generative models and output-space measurements: the flow's exact round trip,
exact Coverage-Y and area on a toy bijection with a known region, the decoded-set distance against the
known distance to a box, the CVAE collapse guard, infinite scores in calibration, and the flow's exact
Coverage-Y within sampling error of 1 - alpha over re-splits; and that the trainings give the same bits at one and
two CPU threads (their results are cached, whatever NUM_THREADS filled the cache)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from threads import at_one_and_two_threads, differing

from lib.crel import captions as cap
from lib.crel import cvae as cvae_mod
from lib.crel import evaluation as ev
from lib.crel import method as crel
from lib.crel.baselines import Grid
from lib.crel.embeddings import EmbeddingModelSettings, crel_on_embeddings
from lib.crel.flow import FlowSettings, train_flow
from lib.data.banana import banana
from lib.run import Run


class SinhLGM(torch.nn.Module):
    """A toy bijection y = sinh(z) per coordinate (code z = asinh(y)), ignoring x."""

    bijective = True
    latent_dim = 2

    def __init__(self):
        super().__init__()
        self.register_buffer("y_mean", torch.zeros(2))

    def encode(self, y: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.asinh(y), torch.zeros_like(y)

    def decode(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.sinh(z)


class NonBijectiveSinh(SinhLGM):
    bijective = False


class XQuantiles(torch.nn.Module):
    """A stand-in DQR: the unit box {|z_i| <= 1} for x >= 0; a crossing (empty) region for x < 0."""

    def forward(self, x: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
        box = -torch.ones(len(x), len(U))
        crossed = torch.full((len(x), len(U)), 0.5)
        return torch.where(x[:, :1] >= 0, box, crossed)


AXES = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])  # U z >= -1 <=> |z_i| <= 1


def box_model(lgm: torch.nn.Module | None = None) -> crel.CReL:
    m = crel.CReL(U=AXES, dqr=XQuantiles(), lgm=lgm or SinhLGM(), tau_dir=0.1)
    m.gamma, m.alpha = 0.0, 0.1
    return m


def test_flow_round_trip_on_the_banana_is_exact_to_1e_4():
    x, y = banana(400, 0)
    flow = train_flow(x, y, settings=FlowSettings(epochs=2, transforms=3, hidden=(32, 32)), seed=0)
    z = cvae_mod.encode_mean(flow, y, x)
    assert z.shape == (400, 2) and flow.bijective and flow.latent_dim == 2
    assert np.abs(cvae_mod.decode(flow, z, x) - y).max() < 1e-4
    zt = torch.zeros(3, 2, requires_grad=True)  # decoding is differentiable (CReL's PGD needs it)
    flow.decode(zt, torch.ones(3, 1)).sum().backward()
    assert torch.isfinite(zt.grad).all() and zt.grad.abs().sum() > 0


def test_exact_coverage_y_and_area_of_a_known_region_on_a_toy_bijection():
    m = box_model()
    s = math.sinh(1.0)  # the decoded set is the box |y_i| <= sinh(1)
    rng = np.random.default_rng(0)
    y = rng.uniform(-2, 2, (400, 2))
    x = np.ones((400, 1))
    grid = Grid(np.array([-2.0, -2.0]), np.array([2.0, 2.0]), 41)  # spacing 0.1; no point within 0.02 of |y|=s
    truth_in = (np.abs(y) <= s).all(1)
    out = ev.exact_output_evaluation(m, x[:5], y[:5], grid)
    assert np.array_equal(m.contains(x, y), truth_in)
    pts = grid.points
    expected_area = np.sum((np.abs(pts) <= s).all(1))
    assert expected_area == 23 ** 2  # -1.1 .. 1.1 in steps of 0.1
    assert np.all(out["area"] == expected_area)
    # the decoded-set path (projected optimisation) gives the same answer with a small tolerance
    dec = ev.decoded_set_evaluation(m, x[:5], y[:5], np.stack(np.meshgrid(*[np.linspace(-1.5, 1.5, 31)] * 2), -1)
                                    .reshape(-1, 2), grid, tol=1e-3)
    assert np.array_equal(dec["covered"], truth_in[:5]) and np.all(dec["area"] == expected_area)


def test_decoded_set_distance_matches_the_known_distance_to_a_box():
    m = box_model()
    s = math.sinh(1.0)
    z_grid = np.stack(np.meshgrid(*[np.linspace(-1.5, 1.5, 13)] * 2), -1).reshape(-1, 2)  # coarse: spacing 0.25
    dec = ev.DecodedSet(m, np.ones(1), AXES, -np.ones(4), 0.0, "ball", z_grid)
    y = np.array([[0.13, 2.0], [2.0, 2.5], [0.3, -0.4], [-1.5, 0.0]])
    truth = np.linalg.norm(np.maximum(np.abs(y) - s, 0), axis=1)
    d = dec.distances(y)
    assert np.allclose(d[truth > 0], truth[truth > 0], atol=2e-3)
    assert d[2] <= 2e-3  # inside: a decoded point within the optimiser's precision
    assert dec.within(y, 1e-2).tolist() == (truth <= 1e-2).tolist()
    cloud_only = dec.tree.query(y)[0]
    assert cloud_only[0] > truth[0] + 0.005  # the coarse cloud alone overstates the distance


def test_collapse_guard_names_the_seed_and_the_dead_dimension():
    torch.manual_seed(0)
    model = cvae_mod.CVAE(2, 1, 3, (16, 16))
    x, y = banana(200, 0)
    model.set_scaling(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32))
    with torch.no_grad():  # dimension 1: mu = 0 and log-variance = 0 for every input, i.e. KL = 0 exactly
        for head in (model.mu, model.logvar):
            head.weight[1].zero_()
            head.bias[1].zero_()
        model.mu.weight[[0, 2]] *= 50  # the others carry information
    kl = cvae_mod.latent_kl(model, y, x)
    assert kl[1] == pytest.approx(0.0, abs=1e-9) and kl[0] > 0.05 and kl[2] > 0.05
    with pytest.warns(cvae_mod.CollapseWarning, match=r"seed 7.*dimension\(s\) \[1\]"):
        assert cvae_mod.check_collapse(model, y, x, seed=7) == [1]
    with pytest.raises(ValueError, match=r"seed 3.*\[1\]"):
        cvae_mod.check_collapse(model, y, x, seed=3, error=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cvae_mod.check_collapse(SinhLGM(), y, x, seed=0) == []  # a bijection cannot collapse


def test_conformal_radius_accepts_infinite_scores():
    scores = np.r_[np.arange(1.0, 18.0), [math.inf] * 2, [-math.inf]]  # n = 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert crel.conformal_radius(scores, 0.2) == 16.0  # k = ceil(21 * 0.8) = 17 -> the 16th finite value
    with pytest.warns(RuntimeWarning, match="2 of 20 calibration scores are \\+inf"):
        assert crel.conformal_radius(scores, 0.05) == math.inf  # k = 20 falls on +inf
    with pytest.raises(ValueError, match="NaN"):
        crel.conformal_radius(np.r_[scores, math.nan], 0.2)


def test_feldman_calibration_accepts_empty_regions():
    m = box_model()
    grid = Grid(np.array([-2.0, -2.0]), np.array([2.0, 2.0]), 21)
    z_grid = np.stack(np.meshgrid(*[np.linspace(-1.5, 1.5, 13)] * 2), -1).reshape(-1, 2)
    feld = ev.FeldmanRegion(m, AXES, z_grid, grid)
    x = np.r_[np.ones(18), -np.ones(2)][:, None]  # the last two conditions have no region
    y = np.r_[np.linspace(-1, 2.5, 18)[:, None].repeat(2, 1), np.zeros((2, 2))]
    s = feld.scores(x, y)
    assert np.isposinf(s[-2:]).all() and np.isfinite(s[:-2]).all()
    assert (s[:-2] <= 0).sum() == np.sum((np.abs(y[:-2]) <= math.sinh(1)).all(1))  # inside <=> score <= 0
    assert math.isfinite(feld.calibrate(x, y, 0.2).radius)
    with pytest.warns(RuntimeWarning, match=r"\+inf"):
        assert feld.calibrate(x, y, 0.05).radius == math.inf
    out = feld.evaluate(x[-2:], y[-2:])  # an infinite radius covers everything
    assert out["covered"].all() and np.all(out["area"] == 21 ** 2)
    # the decoded-set path (a non-bijective LGM: membership by optimisation, tol 1e-3) gives the same scores
    m_nb = box_model(NonBijectiveSinh())
    s_nb = ev.FeldmanRegion(m_nb, AXES, z_grid, grid, tol=1e-3).scores(x, y)
    assert np.isposinf(s_nb[-2:]).all()
    assert np.allclose(s_nb[:-2], s[:-2], atol=2e-3)


def test_flow_exact_coverage_y_is_within_sampling_error_over_resplits():
    alpha = 0.1
    x, y = banana(2600, 3)
    flow = train_flow(x[:600], y[:600], settings=FlowSettings(epochs=4, transforms=2, hidden=(32, 32)), seed=0)
    fit = crel.FitSettings(n_directions=16, tau_dir=alpha, dqr=crel.DQRSettings(epochs=4, lr=3e-3))
    m = crel.fit(x[:600], y[:600], fit, x_dqr=x[600:1200], y_dqr=y[600:1200], lgm=flow, seed=0)
    xp, yp = x[1200:], y[1200:]
    scores = m.scores(xp, yp)
    rng = np.random.default_rng(1)
    n_cal, cov = 300, []
    for _ in range(40):
        perm = rng.permutation(len(xp))
        m.gamma = crel.conformal_radius(scores[perm[:n_cal]], alpha)
        test = perm[n_cal:n_cal + 250]
        covered = ev.exact_output_evaluation(m, xp[test], yp[test], None)["covered"]
        assert np.array_equal(covered, scores[test] <= m.gamma + 1e-12)  # Enc(y) in S <=> score <= gamma
        cov.append(covered.mean())
    cov = np.array(cov)
    # the mean over splits is within 3 standard errors of [1 - alpha, 1 - alpha + 1/(n_cal + 1)]
    se = cov.std(ddof=1) / math.sqrt(len(cov))
    assert 1 - alpha - 3 * se - 0.005 <= cov.mean() <= 1 - alpha + 1 / (n_cal + 1) + 3 * se + 0.005


def test_table_runs_are_cached_per_run_and_keyed_by_what_they_measure(monkeypatch):
    from lib.crel import experiment as ex

    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), flow_epochs=2, dqr_epochs=2, z_grid_size=100,
                               y_grid_size=200, area_eval_n_x=5, include_feldman=False, include_pcp=False,
                               seed=11)
    first = ex.synthetic_table_rows(config, 11, 0.1, Run(), lgm="flow")
    assert [r["method"] for r in first["rows"]] == ["CReL", "DQR (latent, uncalibrated)", "DQR (Y-space)"]

    def fail(*args, **kwargs):
        raise AssertionError("the table run was measured again instead of loaded")

    monkeypatch.setattr(ex, "_measure_table_run", fail)
    # a setting the run does not depend on (the re-splits) keeps the cached entry
    again = ex.synthetic_table_rows(replace(config, coverage_resplits=7, runtime_dims=(2,)), 11, 0.1, Run(), lgm="flow")
    pd.testing.assert_frame_equal(pd.DataFrame(again["rows"]), pd.DataFrame(first["rows"]))  # NaN-aware
    np.testing.assert_array_equal(again["test_scores"], first["test_scores"])
    assert again["model"].gamma == first["model"].gamma == crel.conformal_radius(first["cal_scores"], 0.1)
    assert again["model"].contains(*ex.synthetic_folds(config, 11)["test"]).mean() == first["rows"][0]["coverage_z"]
    # a setting it does depend on misses the cache
    with pytest.raises(AssertionError, match="measured again"):
        ex.synthetic_table_rows(replace(config, decoded_tolerance=0.02), 11, 0.1, Run(), lgm="flow")


def test_polygon_projection_matches_the_exact_qp_projection():
    rng = np.random.default_rng(4)
    U = crel.directions(64, 2)
    q = -1 - 0.5 * rng.random(64)
    Z = rng.normal(size=(300, 2)) * 1.5  # inside and outside
    expected = np.stack([crel.project_inflated(z, U, q, 0.0, "ball") for z in Z])
    np.testing.assert_allclose(ev._project_polygon(Z, crel.polygon(U, q)), expected, atol=1e-7)


def test_the_collapse_guard_is_applied_to_a_cached_table_run_at_the_current_threshold(monkeypatch):
    from lib.crel import experiment as ex
    from lib.crel.cvae import CollapseWarning

    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), cvae_epochs=2, dqr_epochs=2, z_grid_size=100,
                               y_grid_size=200, area_eval_n_x=3, pgd_steps=2, include_feldman=False,
                               include_pcp=False, seed=12)
    first = ex.synthetic_table_rows(config, 12, 0.1, Run(), lgm="cvae")
    monkeypatch.setattr(ex, "_measure_table_run", lambda *a, **k: pytest.fail("measured again"))
    with pytest.warns(CollapseWarning, match="seed 12"):  # every dimension is below an absurd threshold
        strict = ex.synthetic_table_rows(replace(config, collapse_threshold=1e6), 12, 0.1, Run(), lgm="cvae")
    by_method = {r["method"]: r for r in strict["rows"]}
    assert by_method["CReL"]["collapsed"] == [0, 1] and by_method["DQR (Y-space)"]["collapsed"] == []
    # every re-training collapsed as well at that threshold: the first training is kept, the others are named
    assert by_method["CReL"]["collapsed_attempts"] == list(range(config.cvae_restarts + 1))
    assert by_method["CReL"]["lgm_attempt"] == 0
    assert by_method["CReL"]["coverage_y"] == first["rows"][0]["coverage_y"]  # the measurements are the cached ones


def test_collapse_guard_finds_a_dimension_the_decoder_ignores_whatever_its_kl():
    """Free bits (or a KL just above the floor) can keep a dimension's KL up while the decoder ignores it, as on
    seeds 1 and 3 of the `cpu` preset: the decoder-sensitivity criterion reports it."""
    torch.manual_seed(0)
    model = cvae_mod.CVAE(2, 1, 2, (16, 16))
    x, y = banana(200, 0)
    model.set_scaling(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32))
    with torch.no_grad():
        model.mu.weight *= 50  # both dimensions carry a lot of KL ...
        model.z_in.weight[:, 0].zero_()  # ... but the decoder never reads dimension 0
    assert (cvae_mod.latent_kl(model, y, x) > 1.0).all()
    sens = cvae_mod.decoder_sensitivity(model, y, x)
    assert sens[0] == pytest.approx(0.0, abs=1e-7) and sens[1] > 0
    with pytest.warns(cvae_mod.CollapseWarning, match=r"seed 5.*dimension\(s\) \[0\]"):
        assert cvae_mod.check_collapse(model, y, x, seed=5) == [0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cvae_mod.check_collapse(model, y, x, seed=5, sensitivity_threshold=0.0) == []  # KL alone: missed


def test_a_collapsed_cvae_is_trained_again_from_another_initialisation_and_the_table_says_so(monkeypatch):
    """`fitted_models` keeps the first training whose guard finds no dead dimension: here the first training
    (initialised from the seed) has a decoder that ignores latent dimension 0, the second does not."""
    from lib.crel import experiment as ex

    real = ex.train_cvae
    inits = []

    def train(*args, seed, **kwargs):
        inits.append(seed)
        model = real(*args, seed=seed, **kwargs)
        if seed == 13:  # the first training: dimension 0 never reaches the decoder
            with torch.no_grad():
                model.z_in.weight[:, 0].zero_()
        return model

    monkeypatch.setattr(ex, "train_cvae", train)
    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), cvae_epochs=2, dqr_epochs=2, z_grid_size=100,
                               y_grid_size=200, area_eval_n_x=3, pgd_steps=2, include_feldman=False,
                               include_pcp=False, seed=13, kl_warmup_epochs=0, sensitivity_threshold=0.01,
                               collapse_threshold=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cvae_mod.CollapseWarning)  # the re-trained model is healthy: no warning
        run = ex.synthetic_table_rows(config, 13, 0.1, Run(), lgm="cvae")
    assert inits == [13, 13 + ex.RESTART_STRIDE]
    crel_row = next(r for r in run["rows"] if r["method"] == "CReL")
    assert crel_row["lgm_attempt"] == 1 and crel_row["collapsed_attempts"] == [0] and crel_row["collapsed"] == []
    assert run["model"].lgm.z_in.weight[:, 0].abs().sum() > 0  # the table measured the second training
    # without re-trainings the first model is used, and the guard names it
    with pytest.warns(cvae_mod.CollapseWarning, match=r"seed 13.*dimension\(s\) \[0\]"):
        once = ex.synthetic_table_rows(replace(config, cvae_restarts=0), 13, 0.1, Run(), lgm="cvae")
    crel_once = next(r for r in once["rows"] if r["method"] == "CReL")
    assert crel_once["lgm_attempt"] == 0 and crel_once["collapsed"] == [0] and crel_once["collapsed_attempts"] == [0]
    assert crel_once["coverage_z"] != crel_row["coverage_z"] or crel_once["area"] != crel_row["area"]


def test_the_y_space_dqr_is_fitted_once_for_both_lgms_and_only_where_its_row_is_wanted(monkeypatch):
    from lib.crel import experiment as ex

    real, transforms = ex.crel.fit, []

    def fit(x, y, settings, **kwargs):
        transforms.append(settings.transform)
        return real(x, y, settings, **kwargs)

    monkeypatch.setattr(ex.crel, "fit", fit)
    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), cvae_epochs=2, dqr_epochs=2, flow_epochs=2,
                               seed=14, cvae_restarts=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cvae_mod.CollapseWarning)  # 2 epochs: the CVAE may collapse, not the point
        flow = ex.fitted_models(config, 14, 0.1, run=Run(), lgm="flow")
        cvae = ex.fitted_models(config, 14, 0.1, run=Run(), lgm="cvae")
        bare = ex.fitted_models(config, 14, 0.02, run=Run(), lgm="flow", identity=False)
    assert transforms == ["cvae", "identity", "cvae", "cvae"]  # the Y-space DQR once, shared by both LGMs
    assert flow["dqr"] is not cvae["dqr"] and bare["dqr"] is None
    for a, b in zip(flow["dqr"].dqr.state_dict().values(), cvae["dqr"].dqr.state_dict().values()):
        assert torch.equal(a, b)


# ----------------------------------------------------------------------------------------------------
# One thread or two: the same bits (a cache entry must not depend on the NUM_THREADS of the run that wrote it)
# ----------------------------------------------------------------------------------------------------
def toy_caption_embeddings(n_img: int = 85, per_image: int = 10, seed: int = 0) -> dict:
    """Unit 384-d embeddings around one centre per image: x (n_img, 384), samples (n_img, per_image, 384), and
    the reference (the centre), with folds of 40 / 30 / 10 / 5 images."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_img, 384))
    x = centres + 0.5 * rng.standard_normal((n_img, 384))
    samples = centres[:, None] + 0.7 * rng.standard_normal((n_img, per_image, 384))
    cuts = np.cumsum([0, 40, 30, 10, 5])
    return {"x": x / np.linalg.norm(x, axis=1, keepdims=True),
            "samples": samples / np.linalg.norm(samples, axis=2, keepdims=True),
            "reference": centres / np.linalg.norm(centres, axis=1, keepdims=True),
            "folds": {f: np.arange(a, b) for f, a, b in zip(("lgm", "dqr", "cal", "test"), cuts[:-1], cuts[1:])}}


TINY_EMBEDDING_MODELS = EmbeddingModelSettings(lgm="flow", epochs=1, hidden=(32, 32), dqr_hidden=(32,), pca_dim=16,
                                               n_directions=16, pgd_starts=3, pgd_steps=3)


def captions_outputs(res: dict) -> dict:
    """What the captions stage keeps of `crel_on_embeddings`: the scores, the calibration and both networks."""
    keep = ("crel_per_x", "coverage_z", "gamma", "spread", "worst_y")
    return {**{k: res[k] for k in keep}, "lgm": res["model"].lgm, "dqr": res["model"].dqr}


@pytest.mark.parametrize("lgm", ["flow", "cvae"])
def test_the_captions_models_give_the_same_bits_at_one_and_two_threads(thread_count, lgm):
    """Measured before: at two threads the PCA codes (OpenBLAS), calibration scores and PGD moved in the last bits
    (up to 2e-7 here; CReL-BERT by 3e-4, gamma by 0.011 on a 600-image captions run)."""
    toy, settings = toy_caption_embeddings(), replace(TINY_EMBEDDING_MODELS, lgm=lgm)
    one, two = at_one_and_two_threads(thread_count, lambda: captions_outputs(crel_on_embeddings(
        toy["x"], toy["samples"], toy["reference"], toy["folds"], settings)))
    assert differing(one, two) == []


def test_one_thread_inside_leaves_a_single_threaded_run_bit_identical(thread_count):
    """Forcing one thread changes nothing for NUM_THREADS=1 (the notebooks' default): the cache entries written
    before stay valid, and no key needed a new version."""
    thread_count(1)
    toy = toy_caption_embeddings()
    args = (toy["x"], toy["samples"], toy["reference"], toy["folds"], TINY_EMBEDDING_MODELS)
    unforced = captions_outputs(crel_on_embeddings.__wrapped__(*args))  # the function as it was
    assert differing(captions_outputs(crel_on_embeddings(*args)), unforced) == []


def toy_caption_corpus(s: cap.CaptionSettings, n_img: int = 85, per_image: int = 6) -> dict:
    """`captions.prepare`'s output for a made-up corpus: unique texts, embeddings clustered by image."""
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((n_img, 384))
    emb = (np.repeat(centres, per_image, 0) + 0.6 * rng.standard_normal((n_img * per_image, 384))).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    texts = [f"image {i} caption {j}" for i in range(n_img) for j in range(per_image)]
    rows = np.repeat(np.arange(n_img), per_image)
    roles = cap.assign_roles(texts, rows, s.seed)
    pools = cap.build_pools(texts, roles, cap.neighbour_ranks(emb, roles), s)
    return {"emb": emb, "roles": roles, "pools": pools, "folds": cap.image_folds(n_img, s), "digest": "toy"}


def test_a_captioner_run_gives_the_same_bits_at_one_and_two_threads(thread_count):
    s = cap.CaptionSettings(folds=(40, 30, 10, 5), samples_per_image=10, reference_samples=20, near_band=(1, 3),
                            mid_band=(5, 20), unrelated_min_rank=40, pca_dim=16, n_directions=16, hidden=(32, 32),
                            epochs=1, pgd_starts=3, pgd_steps=3)
    data = toy_caption_corpus(s)
    one, two = at_one_and_two_threads(thread_count, lambda: cap._run_captioner(cap.captioner_weights("A"), data, s))
    assert differing(one, two) == []


@pytest.mark.parametrize("lgm", ["flow", "cvae"])
def test_the_synthetic_tables_lgm_trains_to_the_same_bits_at_one_and_two_threads(thread_count, lgm):
    """Measured: the banana LGMs and DQRs do not move with the thread count (their batches of 256 stay below
    torch's parallel grain), so the table is not forced to one thread; this says when that stops being true."""
    x, y = banana(600, 0)
    if lgm == "flow":
        train = lambda: train_flow(x, y, settings=FlowSettings(epochs=2), seed=0)  # noqa: E731
    else:
        train = lambda: cvae_mod.train_cvae(x, y, latent_dim=2, settings=cvae_mod.CVAESettings(epochs=2), seed=0)  # noqa: E731
    one, two = at_one_and_two_threads(thread_count, train)
    assert differing(one, two) == []


def test_the_table_measures_coverage_y_once_and_drops_the_retired_cloud_columns_of_stored_runs(monkeypatch):
    """Coverage-Y and area are measured one way (exact for the flow, decoded-set distance for the CVAE); a table
    run stored while the decoded-cloud check was still computed keeps its key, and its cloud columns are dropped
    when it is read."""
    from lib.crel import experiment as ex

    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), flow_epochs=2, dqr_epochs=2, z_grid_size=100,
                               y_grid_size=200, area_eval_n_x=5, include_pcp=False, seed=14)
    measure = ex._measure_table_run

    def stored_by_the_old_code(*args, **kwargs):
        out = measure(*args, **kwargs)
        out["rows"][0] = {**out["rows"][0], "coverage_y_cloud": 1.0, "area_cloud": 60.0}
        return out

    monkeypatch.setattr(ex, "_measure_table_run", stored_by_the_old_code)
    rows = ex.synthetic_table_rows(config, 14, 0.1, Run(), lgm="flow")["rows"]
    assert [r["method"] for r in rows] == ["CReL", "DQR (latent, uncalibrated)", "Feldman", "DQR (Y-space)"]
    assert not any(k.endswith("_cloud") for r in rows for k in r)
    assert {"coverage_y", "area"} <= set(rows[0]) and rows[0]["measure"] == "exact"


def test_the_runtime_study_times_the_feldman_region_the_table_measures(monkeypatch):
    from lib.crel import experiment as ex

    config = ex.resolve_config("smoke", folds=(300, 300, 200, 200), runtime_dims=(2, 3), runtime_y_grid=(100, 300),
                               runtime_z_grid=(100, 300), runtime_n_points=5, runtime_n_feldman=2, runtime_epochs=1)
    timed, scores = [], ev.FeldmanRegion.scores

    def counted(self, x, y):
        timed.append((self.U.shape, len(x)))
        return scores(self, x, y)

    monkeypatch.setattr(ev.FeldmanRegion, "scores", counted)
    crel_calls, crel_scores = [], ex.crel.CReL.scores
    monkeypatch.setattr(ex.crel.CReL, "scores", lambda self, x, y: crel_calls.append(len(x)) or crel_scores(self, x, y))
    rows = ex.runtime_rows(config, Run())
    assert crel_calls == [config.runtime_n_points] * ex.RUNTIME_REPEATS * 2  # the median of repeats, at each d
    assert [r["d"] for r in rows] == [2, 3] and all(r["feldman_s"] > 0 and r["crel_s"] > 0 for r in rows)
    for r in rows:  # the mean over the timed points is the inside and outside means weighted by their counts
        n, k = min(config.runtime_n_feldman, config.folds[2]), r["feldman_inside"]
        parts = [(k, r["feldman_in_s"]), (n - k, r["feldman_out_s"])]
        assert r["feldman_s"] == pytest.approx(sum(c * t for c, t in parts if c) / n)
    # point by point (inside and outside timed apart): two calls of one point at each d
    assert timed == [((config.feldman_directions, 2), 1)] * 2 + [((config.feldman_directions, 3), 1)] * 2


def test_the_condition_figure_draws_the_decoded_grid_points_of_the_set_at_most_max_points():
    import matplotlib.pyplot as plt

    from lib.crel import plots

    m = box_model()
    m.gamma = 0.25
    z_grid = Grid(np.array([-2.0, -2.0]), np.array([2.0, 2.0]), 41).points  # spacing 0.1
    inside = ev.in_set_mask(z_grid, AXES, -np.ones(4), 0.25)
    for cap_points, drawn in ((10_000, int(inside.sum())), (50, 50)):
        fig, (ax_z, ax_y) = plt.subplots(1, 2)
        plots.plot_condition({"model": m, "z_grid": z_grid}, 0.5, ax_z, ax_y, max_points=cap_points)
        decoded = next(c for c in ax_y.collections if c.get_label() == plots.DECODED_LABEL).get_offsets()
        plt.close(fig)
        assert len(decoded) == drawn
        assert np.isin(np.round(np.arcsinh(np.asarray(decoded)), 6), np.round(z_grid[inside], 6)).all()
