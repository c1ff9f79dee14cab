"""Notebook 03's whole networks (lib.regret.whole): the airbench-style net, its training, the methods'
variants, resuming, and the stored predictions. Tiny nets, a few steps."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from lib.regret import experiment as ex
from lib.regret import method as regret
from lib.regret import whole as wh

TINY = wh.WholeSettings(widths=(8, 8, 8), epochs=2, batch_size=32, mc_samples=4, members=2, whiten_patches=40)


@pytest.fixture(scope="module")
def toy():
    g = torch.Generator().manual_seed(0)
    return torch.randn(128, 3, 32, 32, generator=g), torch.randint(0, 10, (128,), generator=g)


def test_whitening_filters_decorrelate_patches():
    """Known answer: the 12 positive filters map 2x2x3 patches to coordinates with (near) identity covariance."""
    g = torch.Generator().manual_seed(1)
    mix = torch.randn(3, 3, generator=g)  # correlated colour channels
    images = torch.einsum("ij,njhw->nihw", mix, torch.randn(200, 3, 32, 32, generator=g))
    net = wh.FastCifarNet((8, 8, 8))
    wh.whiten_init(net, images, eps=0.0)
    with torch.no_grad():
        out = torch.nn.functional.conv2d(images, net.whiten.weight[:12])  # no bias
    flat = out.permute(0, 2, 3, 1).reshape(-1, 12).double()
    cov = torch.cov(flat.T)
    assert torch.allclose(cov, torch.eye(12, dtype=torch.float64), atol=0.02)
    assert torch.equal(net.whiten.weight[12:], -net.whiten.weight[:12])
    assert not net.whiten.weight.requires_grad


def test_schedule_is_airbenchs_triangle():
    total = 100
    assert wh.lr_factor(0, total) == pytest.approx(0.2)
    assert wh.lr_factor(23, total) == pytest.approx(1.0)
    assert wh.lr_factor(100, total) == pytest.approx(0.07)
    values = [wh.lr_factor(s, total) for s in range(total + 1)]
    assert np.argmax(values) == 23 and np.all(np.diff(values[23:]) < 0)


def test_augment_flips_and_shifts_exactly():
    g = torch.Generator().manual_seed(3)
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    out = wh.augment(x, 0, g)
    for i in range(2):  # without translation each image is itself or its mirror
        assert torch.equal(out[i], x[i]) or torch.equal(out[i], x[i].flip(2))
    out = wh.augment(x, 2, torch.Generator().manual_seed(4))
    for i in range(2):  # each output is a window of the reflect-padded image or of its mirror
        padded = torch.nn.functional.pad(torch.stack([x[i], x[i].flip(2)]), (2, 2, 2, 2), mode="reflect")
        windows = [padded[k, :, dy:dy + 8, dx:dx + 8] for k in range(2) for dy in range(5) for dx in range(5)]
        assert any(torch.equal(out[i], w) for w in windows)


@pytest.mark.parametrize("method", ["mc_dropout", "ensemble", "evidential", "ddu"])
def test_each_method_trains_and_predicts_in_the_heads_format(toy, method):
    x, y = toy
    run = wh.train_network(method, x, y, TINY, seed=0)
    assert len(run["history"]) == TINY.epochs and np.all(np.isfinite(run["history"]))
    nets = [wh.load_network(method, TINY, s, wh.train_network(method, x, y, TINY, seed=s)["state"])
            for s in range(2)] if method == "ensemble" else [wh.load_network(method, TINY, 0, run["state"])]
    fit = None
    if method == "ddu":
        fit = regret.gda_fit(wh._batched(nets[0].embed, x, torch.device("cpu")).double().numpy(), y.numpy(), 10)
        assert any("parametrizations" in name for name, _ in nets[0].named_modules())  # spectral norm
    pred = wh.predict(method, nets, x[:50], TINY, seed=5, ddu_fit=fit)
    if method in ("mc_dropout", "ensemble"):
        s = TINY.mc_samples if method == "mc_dropout" else 2
        assert pred["samples"].shape == (s, 50, 10)
        np.testing.assert_allclose(pred["samples"].sum(-1), 1, atol=1e-6)
        assert np.abs(pred["samples"][0] - pred["samples"][1]).max() > 1e-6  # samples / members differ
    elif method == "evidential":
        assert pred["alpha"].shape == (50, 10) and np.all(pred["alpha"] > 1)
    else:
        assert pred["probs"].shape == (50, 10) and pred["log_density"].shape == (50, 10)
    est = ex.uq.estimates(method, pred, "ce", num_draws=10)
    assert np.all(np.isfinite(est["E_hat"])) and est["q"].shape == (50, 10)


def test_mc_dropout_shortcut_equals_full_stochastic_passes(toy):
    """Independent check: the trunk-once prediction equals S full forward passes with dropout on."""
    x, y = toy
    net = wh.load_network("mc_dropout", TINY, 0, wh.train_network("mc_dropout", x, y, TINY, seed=0)["state"])
    fast = wh.predict("mc_dropout", [net], x[:40], TINY, seed=9)["samples"]
    net.eval()
    net.drop.train()
    torch.manual_seed(9)
    inputs = x[:40].contiguous(memory_format=torch.channels_last)  # predict's layout (dropout masks follow it)
    with torch.no_grad():
        naive = torch.stack([torch.softmax(net(inputs), 1) for _ in range(TINY.mc_samples)]).double().numpy()
    np.testing.assert_allclose(fast, naive, atol=1e-6)


def test_interrupted_training_resumes_to_the_same_weights(toy, tmp_path):
    x, y = toy
    settings = replace(TINY, epochs=3)
    straight = wh.train_network("mc_dropout", x, y, settings, seed=2)
    checkpoint = tmp_path / "net.ckpt"
    first = wh.train_network("mc_dropout", x, y, settings, seed=2, checkpoint=checkpoint, max_steps=8)  # 2 epochs
    assert len(first["history"]) == 2 and checkpoint.exists()
    resumed = wh.train_network("mc_dropout", x, y, settings, seed=2, checkpoint=checkpoint)
    assert resumed["history"] == straight["history"]
    assert all(torch.equal(straight["state"][k], resumed["state"][k]) for k in straight["state"])


def test_bad_recipe_values_are_named():
    for bad, name in ((dict(widths=(8, 8)), "whole_widths"), (dict(epochs=0), "whole_epochs"),
                      (dict(dropout=0.0), "whole_dropout"), (dict(label_smoothing=1.0), "whole_label_smoothing")):
        with pytest.raises(ValueError, match=name):
            wh.validate_whole(replace(wh.WholeSettings(), **bad))
    with pytest.raises(ValueError, match="whole_source"):
        ex.resolve_config("cpu", whole_source="gpu")
    config = ex.resolve_config("cpu", whole={"widths": [16, 32, 32], "epochs": None})
    assert config.whole.widths == (16, 32, 32) and config.whole.epochs == wh.WholeSettings().epochs


def _stored(tmp_path, method="ensemble", n=30, s=3, **meta):
    rng = np.random.default_rng(0)
    samples = rng.dirichlet(np.ones(10), size=(s, n))
    ood = {"id": rng.random(20), "mnist": rng.random(20)}
    path = wh.save_predictions(tmp_path, method, {"samples": samples}, ood,
                               {"n_test": n, "settings": wh.describe_settings(TINY), **meta})
    return path, samples, ood


def test_stored_predictions_round_trip(tmp_path):
    path, samples, ood = _stored(tmp_path)
    loaded = wh.load_predictions(tmp_path, "ensemble")
    np.testing.assert_allclose(loaded["test"]["samples"], samples, atol=1e-3)  # float16 storage
    assert loaded["test"]["samples"].dtype == np.float64
    np.testing.assert_allclose(loaded["ood"]["mnist"], ood["mnist"], rtol=1e-6)
    assert loaded["meta"]["version"] == wh.STORED_VERSION and wh.settings_from(loaded["meta"]) == TINY
    assert wh.load_predictions(tmp_path, "ensemble", n_test=10)["test"]["samples"].shape == (3, 10, 10)
    with pytest.raises(ValueError, match="n_test=31 exceeds"):
        wh.load_predictions(tmp_path, "ensemble", n_test=31)


def test_stored_predictions_of_the_wrong_version_or_shape_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="ensemble.npz"):
        wh.load_predictions(tmp_path, "ensemble")
    path, samples, _ = _stored(tmp_path)
    with np.load(path) as data:
        arrays = dict(data)
    meta = json.loads(str(arrays["meta"]))
    np.savez(path, **{**arrays, "meta": np.array(json.dumps({**meta, "version": 0}))})
    with pytest.raises(ValueError, match="version 0"):
        wh.load_predictions(tmp_path, "ensemble")
    np.savez(path, **{**arrays, "test_samples": arrays["test_samples"][:, :, :9]})
    with pytest.raises(ValueError, match=r"'test_samples' has shape \(3, 30, 9\)"):
        wh.load_predictions(tmp_path, "ensemble")
    np.savez(path, **{k: v for k, v in arrays.items() if k != "test_samples"})
    with pytest.raises(ValueError, match="'test_samples' is missing"):
        wh.load_predictions(tmp_path, "ensemble")


def test_stored_predictions_of_the_other_data_source_are_refused(tmp_path):
    """Predictions stored from one CIFAR-10 copy are for that copy's test images: loading (or checking) them
    for the other copy fails, naming DATA_SOURCE and WHOLE_SOURCE; a file without the field is the JPEG copy's."""
    _stored(tmp_path / "python", data_source="python")
    for call in (lambda: wh.load_predictions(tmp_path / "python", "ensemble"),
                 lambda: wh.load_predictions(tmp_path / "python", "ensemble", data_source="jpeg"),
                 lambda: wh.check_stored(tmp_path / "python", ("ensemble",))):
        with pytest.raises(ValueError, match=r"made from the 'python' copy.*DATA_SOURCE='jpeg'.*WHOLE_SOURCE='train'"):
            call()
    assert wh.load_predictions(tmp_path / "python", "ensemble", data_source="python")["meta"]["data_source"] == "python"
    wh.check_stored(tmp_path / "python", ("ensemble",), data_source="python")
    _stored(tmp_path / "unrecorded")  # written before the source was recorded: the JPEG copy
    assert "data_source" not in wh.load_predictions(tmp_path / "unrecorded", "ensemble")["meta"]
    wh.check_stored(tmp_path / "unrecorded", ("ensemble",), data_source="jpeg")
    with pytest.raises(ValueError, match=r"made from the 'jpeg' copy.*DATA_SOURCE='python'"):
        wh.check_stored(tmp_path / "unrecorded", ("ensemble",), data_source="python")
    config = ex.resolve_config("smoke", methods=["ensemble"], data_source="python")
    with pytest.raises(ValueError, match="DATA_SOURCE='python'"):
        ex.stored_whole_predictions(config, 10, folder=tmp_path / "unrecorded")
    assert ex.stored_whole_predictions(config, 10, folder=tmp_path / "python")["ensemble"]["test"]["samples"].shape \
        == (3, 10, 10)


# The committed folders: the stored networks of PRESET="whole-cpu", and the same with the airbench recipe unchanged
# (label smoothing 0.2, evidential logits scaled by 1/9: network version 1), which notebook 03 compares them with
COMMITTED = {"whole": (wh.STORED_DIR, ex.resolve_config("whole-cpu").whole, wh.NETWORK_VERSION),
             "whole-recipe": (wh.RECIPE_DIR, replace(ex.resolve_config("whole-cpu").whole, label_smoothing=0.2),
                              dict.fromkeys(wh.NETWORK_VERSION, 1))}


@pytest.mark.parametrize("name", COMMITTED)
def test_the_committed_stored_predictions_load_and_match_their_readme(name):
    """results/03/whole and whole-recipe: every method's file loads (10,000 rows, the recipe's S and M), is
    checked before any work by check_inputs, was trained with the settings its folder stands for, and its README
    names the command and commit that produced it."""
    folder, expected, versions = COMMITTED[name]
    wh.check_stored(folder, ex.uq.METHODS)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "`cifar10/cifar10-jpeg.zip`" in readme  # the copy they were made from, as their metadata says
    for method in ex.uq.METHODS:
        stored = wh.load_predictions(folder, method)
        settings = wh.settings_from(stored["meta"])
        first = next(iter(stored["test"].values()))
        assert (first.shape[1] if method in ("mc_dropout", "ensemble") else first.shape[0]) == 10_000
        if method == "mc_dropout":
            assert first.shape[0] == settings.mc_samples
        if method == "ensemble":
            assert first.shape[0] == settings.members == len(stored["meta"]["train_seconds"])
        assert {"id", "mnist", "gaussian_noise", "blur", "uniform_noise"} <= set(stored["ood"])
        assert stored["meta"]["command"] in readme and stored["meta"]["commit"] in readme
        assert 0.1 < stored["meta"]["test_accuracy"] <= 1
        assert wh.stored_data_source(stored["meta"]) == "jpeg"
        assert settings == expected, method  # e.g. what PRESET="whole-cpu" trains (the same cache keys)
        assert stored["meta"].get("network_version", 1) == versions[method], method


@pytest.mark.parametrize("name", COMMITTED)
def test_the_committed_stored_accuracies_are_those_of_the_stored_predictions(name):
    """Independent check of the stored runs: each method's accuracy recomputed from its stored (float16)
    predictions against CIFAR-10's own test labels (not CIFAR-10H) is the one its metadata and README state."""
    from lib.data.files import data_file

    folder = COMMITTED[name][0]
    labels = np.load(data_file("cifar10/test_labels.npy")).astype(np.int64)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for method in ex.uq.METHODS:
        stored = wh.load_predictions(folder, method)
        recomputed = wh.accuracy(method, stored["test"], labels)
        assert recomputed == pytest.approx(stored["meta"]["test_accuracy"], abs=2e-4), method  # float16 rounding
        assert f"| {method} | {stored['meta']['test_accuracy']:.4f} |" in readme


def test_whole_pipeline_on_a_tiny_cifar(tmp_path, monkeypatch):
    """whole_predictions: trained, cached per network (a second call trains nothing), every OOD set scored."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    cifar = {"train_images": rng.integers(0, 256, (96, 32, 32, 3), dtype=np.uint8),
             "train_labels": np.arange(96) % 10, "test_images": rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8),
             "test_labels": np.arange(40) % 10}
    cifar["all_test_images"] = np.concatenate([cifar["test_images"]] * 2)
    config = ex.resolve_config("smoke", methods=["ensemble", "ddu"], n_ood=20, ood_sets=["blur", "uniform_noise"],
                               whole={"widths": [4, 8, 8], "epochs": 1, "batch_size": 32, "whiten_patches": 20})
    out = ex.whole_predictions(config, cifar, device=torch.device("cpu"))
    assert set(out) == {"ensemble", "ddu"}
    assert out["ensemble"]["test"]["samples"].shape == (2, 40, 10)
    assert set(out["ddu"]["ood"]) == {"id", "blur", "uniform_noise"} and len(out["ddu"]["ood"]["id"]) == 20
    assert out["ensemble"]["meta"]["n_train"] == 96 and len(out["ensemble"]["meta"]["train_seconds"]) == 2
    assert out["ensemble"]["meta"]["data_source"] == "jpeg"  # config.data_source, stored by store_whole
    entries = sorted(p.name for p in (tmp_path / "cache" / "03").iterdir())
    assert len([e for e in entries if e.startswith("whole-")]) == 3 and not any(e.endswith(".ckpt") for e in entries)
    monkeypatch.setattr(wh, "train_network", lambda *a, **k: pytest.fail("a cached network was retrained"))
    again = ex.whole_predictions(config, cifar, device=torch.device("cpu"))
    np.testing.assert_array_equal(again["ensemble"]["test"]["samples"], out["ensemble"]["test"]["samples"])


def test_store_whole_records_the_data_source(tmp_path, monkeypatch):
    """`--data-source` reaches the config, every stored file's metadata and the README; the notebook then
    loads the files only with that DATA_SOURCE."""
    from lib.regret import store_whole

    seen = {}

    def fake_cifar(config):
        seen["cifar"] = config.data_source
        return {"train_labels": np.zeros(96, dtype=np.int64), "p_true": np.full((30, 10), 0.1)}

    def fake_whole(config, cifar, **kwargs):
        samples = np.random.default_rng(0).dirichlet(np.ones(10), size=(2, 30))
        meta = {"settings": wh.describe_settings(config.whole), "n_test": 30, "data_source": config.data_source,
                "test_accuracy": 0.5, "train_seconds": [1.0, 1.0], "epoch_seconds": [[1.0], [1.0]]}
        return {m: {"test": {"samples": samples}, "ood": {"id": np.zeros(5)}, "meta": meta} for m in config.methods}

    monkeypatch.setattr(ex, "cifar_data", fake_cifar)
    monkeypatch.setattr(ex, "whole_predictions", fake_whole)
    assert store_whole.main(["--data-source", "python", "--threads", "1", "--out", str(tmp_path)]) == 0
    assert seen["cifar"] == "python"
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "`cifar10/cifar-10-python.tar.gz`" in readme and 'DATA_SOURCE="python"' in readme
    assert wh.load_predictions(tmp_path, "ensemble", data_source="python")["meta"]["data_source"] == "python"
    with pytest.raises(ValueError, match="DATA_SOURCE='jpeg'"):
        wh.check_stored(tmp_path, ex.uq.METHODS)
    with pytest.raises(SystemExit):
        store_whole.main(["--data-source", "png", "--out", str(tmp_path)])
    # --preset whole-cpu and --methods: the CPU-sized recipe, only the methods asked for
    assert store_whole.main(["--preset", "whole-cpu", "--methods", "ddu", "--threads", "1",
                             "--out", str(tmp_path / "cpu")]) == 0
    assert sorted(p.name for p in (tmp_path / "cpu").glob("*.npz")) == ["ddu.npz"]
    with np.load(tmp_path / "cpu" / "ddu.npz") as data:
        meta = json.loads(str(data["meta"]))
    assert wh.settings_from(meta) == ex.resolve_config("whole-cpu").whole
    assert meta["settings"]["widths"] == [16, 32, 32] and meta["settings"]["batch_size"] == 256
    assert "training time of the 2 networks, summed: 0.0 min" in (tmp_path / "cpu" / "README.md").read_text()
    # --label-smoothing reaches the recipe (the recipe's 0.2 against the default plain cross-entropy)
    assert store_whole.main(["--preset", "whole-cpu", "--label-smoothing", "0.2", "--methods", "ensemble",
                             "--threads", "1", "--out", str(tmp_path / "ls")]) == 0
    with np.load(tmp_path / "ls" / "ensemble.npz") as data:
        assert json.loads(str(data["meta"]))["settings"]["label_smoothing"] == 0.2
    assert ex.resolve_config("whole-cpu").whole.label_smoothing == 0.0

    def seeded(config, cifar, **kwargs):
        seen["seed"] = config.seed
        return fake_whole(config, cifar, **kwargs)

    monkeypatch.setattr(ex, "whole_predictions", seeded)
    assert store_whole.main(["--preset", "whole-cpu", "--seed", "100", "--methods", "ddu", "--threads", "1",
                             "--out", str(tmp_path / "seed")]) == 0
    assert seen["seed"] == 100  # --seed reaches the config the networks are trained from


def test_only_the_evidential_network_has_unscaled_logits():
    """Airbench scales the logits by 1/9; the evidential network's are not scaled (its evidence softplus(logit)
    must grow large), and the change has its own network version, so older cached evidential networks are not
    reused."""
    for method in ex.uq.METHODS:
        net = wh.build_network(method, TINY, seed=0)
        assert net.logit_scale == (1.0 if method == "evidential" else 1 / 9), method
    x = torch.randn(4, 3, 32, 32)
    net = wh.build_network("evidential", TINY, seed=0).eval()
    assert torch.allclose(net(x), net.linear(net.tail_features(net.trunk(x))))  # the linear layer's output as is
    assert wh.NETWORK_VERSION["evidential"] > wh.NETWORK_VERSION["ensemble"]


def test_temperature_rows_and_whole_diagnostics():
    """T = 1 is q itself (its calibration and CE decomposition, computed directly); a lower T sharpens q (higher
    mean confidence); whole_diagnostics reads accuracy and ECE from the evaluation's q; a bad T is named."""
    rng = np.random.default_rng(0)
    p_true = rng.dirichlet(np.full(10, 0.2), size=300)
    q = rng.dirichlet(np.ones(10), size=300)
    labels = p_true.argmax(1)
    rows = ex.temperature_rows(q, p_true, labels, (0.5, 1.0, 2.0))
    direct = regret.decompose(p_true, q, "ce")
    assert rows[1]["mean E*"] == pytest.approx(direct["E"].mean())
    assert rows[1]["r_s(A*,E*)"] == pytest.approx(regret.spearman(direct["A"], direct["E"])["r_s"])
    assert rows[1]["ECE"] == pytest.approx(regret.calibration(q, labels)["ece"])
    assert rows[0]["mean confidence"] > rows[1]["mean confidence"] > rows[2]["mean confidence"]
    with pytest.raises(ValueError, match="temperature"):
        ex.temperature_rows(q, p_true, labels, (0.0,))
    config = ex.resolve_config("smoke", methods=["ddu"])
    ev = ex.evaluate(config, "ddu", {"probs": q, "log_density": rng.normal(size=(300, 10))}, p_true, "ce")
    diag = ex.whole_diagnostics(ev, labels)
    assert diag["accuracy"] == pytest.approx(np.mean(q.argmax(1) == labels))
    assert diag["ECE"] == pytest.approx(regret.calibration(q, labels)["ece"])
    assert diag["AuReC"] == ev["metrics"]["AuReC"] and diag["mean E*"] == pytest.approx(direct["E"].mean())


def test_epistemic_vs_total_separates_the_estimate_from_the_network():
    """Known answers: a DDU density that orders the images by their true regret E* gives the oracle AuReC and
    r_s(Ê, E*) = 1, better than H(q); a density of noise ranks nothing; "AuReC of Ê" is the table's AuReC."""
    rng = np.random.default_rng(1)
    p_true = rng.dirichlet(np.full(10, 0.3), size=400)
    q = 0.7 * p_true + 0.3 * rng.dirichlet(np.ones(10), size=400)
    config = ex.resolve_config("smoke", methods=["ddu"])
    E = regret.decompose(p_true, q, "ce")["E"]
    oracle_density = np.repeat(-E[:, None], 10, axis=1)  # Ê = -logsumexp = E* - log 10: E*'s own order
    ev = ex.evaluate(config, "ddu", {"probs": q, "log_density": oracle_density}, p_true, "ce")
    parts = ex.epistemic_vs_total(config, ev)
    assert parts["AuReC of Ê"] == pytest.approx(ev["metrics"]["AuReC"])
    assert parts["AuReC of Ê"] == pytest.approx(regret.aurec(E, E)) and parts["r_s(Ê,E*)"] == pytest.approx(1.0)
    assert parts["AuReC of H(q)"] > parts["AuReC of Ê"] and parts["r_s(H(q),E*)"] < 1
    noise = ex.evaluate(config, "ddu", {"probs": q, "log_density": rng.normal(size=(400, 10))}, p_true, "ce")
    assert abs(ex.epistemic_vs_total(config, noise)["r_s(Ê,E*)"]) < 0.15
