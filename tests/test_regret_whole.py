"""Notebook 03's whole networks (lib.regret.whole): the airbench-style net, its training, the methods'
variants, resuming, and the stored predictions. Tiny nets, a few steps."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from lib.regret import experiment as ex
from lib.regret import method as regret
from lib.regret import whole as wh
from lib.run import Run

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
    for bad, name in ((dict(widths=(8, 8)), "whole.widths"), (dict(epochs=0), "whole.epochs"),
                      (dict(dropout=0.0), "whole.dropout"), (dict(label_smoothing=1.0), "whole.label_smoothing")):
        with pytest.raises(ValueError, match=rf"^{re.escape(name)}="):  # the setting's path (lib.params.configure)
            wh.validate_whole(replace(wh.WholeSettings(), **bad))
    for bad in ("gpu", "stored"):  # "stored" is SOURCE's business now: the whole networks are stored entries
        with pytest.raises(ValueError, match=rf"whole_source='{bad}' is not allowed.*'train', 'off'"):
            ex.resolve_config("cpu", whole_source=bad)
    config = ex.resolve_config("cpu", whole={"widths": [16, 32, 32], "epochs": None})
    assert config.whole.widths == (16, 32, 32) and config.whole.epochs == wh.WholeSettings().epochs


def _prediction(method: str, n: int = 30, s: int = 3, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    if method in ("mc_dropout", "ensemble"):
        return {"samples": rng.dirichlet(np.ones(10), size=(s, n))}
    if method == "evidential":
        return {"alpha": 1 + rng.random((n, 10)) * 50}
    return {"probs": rng.dirichlet(np.ones(10), size=n), "log_density": rng.normal(size=(n, 10)) * 100,
            "embedding_dim": np.array(8)}


@pytest.mark.parametrize("method", ex.uq.METHODS)
def test_prediction_arrays_round_trip_in_compact_form(method):
    """The cached form: samples as float16, the rest float32, read back as float64 with the metadata; DDU's
    embedding dimension comes back from the metadata."""
    test, ood = _prediction(method), {"id": np.random.default_rng(1).random(20), "mnist": np.zeros(20)}
    arrays = wh.prediction_arrays(method, test, ood, {"n_test": 30, "embedding_dim": 8, "seed": 0})
    assert {a.dtype for k, a in arrays.items() if k.startswith("test_samples")} <= {np.dtype(np.float16)}
    back = wh.from_arrays(arrays)
    assert back["meta"]["method"] == method and back["meta"]["seed"] == 0
    for key, value in test.items():
        if key == "embedding_dim":
            assert int(back["test"][key]) == 8
            continue
        assert back["test"][key].dtype == np.float64
        dtype = np.float16 if key == "samples" else np.float32
        np.testing.assert_array_equal(back["test"][key], value.astype(dtype).astype(np.float64))
    np.testing.assert_array_equal(back["ood"]["id"], ood["id"].astype(np.float32).astype(np.float64))


def test_prediction_arrays_of_the_wrong_shape_or_incomplete_are_refused():
    arrays = wh.prediction_arrays("ensemble", _prediction("ensemble"), {}, {"n_test": 30})
    with pytest.raises(ValueError, match=r"entry x: 'test_samples' has shape \(3, 30, 9\)"):
        wh.from_arrays({**arrays, "test_samples": arrays["test_samples"][:, :, :9]}, "entry x")
    with pytest.raises(ValueError, match=r"'test_samples' has shape \(3, 29, 10\), not 30 rows"):
        wh.from_arrays({**arrays, "test_samples": arrays["test_samples"][:, :29]})
    with pytest.raises(ValueError, match="'test_samples' is missing"):
        wh.from_arrays({k: v for k, v in arrays.items() if k != "test_samples"})
    with pytest.raises(ValueError, match="no 'meta' array"):
        wh.from_arrays({k: v for k, v in arrays.items() if k != "meta"})


def _tiny_cifar() -> dict:
    rng = np.random.default_rng(0)
    cifar = {"train_images": rng.integers(0, 256, (96, 32, 32, 3), dtype=np.uint8),
             "train_labels": np.arange(96) % 10, "test_images": rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8),
             "test_labels": np.arange(40) % 10}
    cifar["all_test_images"] = np.concatenate([cifar["test_images"]] * 2)
    return cifar


def _tiny_config(**overrides) -> ex.RegretConfig:
    return ex.resolve_config("smoke", **{"methods": ["ensemble", "ddu"], "n_ood": 20,
                                         "ood_sets": ["blur", "uniform_noise"],
                                         "whole": {"widths": [4, 8, 8], "epochs": 1, "batch_size": 32,
                                                   "whiten_patches": 20}, **overrides})


def _no_training(monkeypatch) -> None:
    monkeypatch.setattr(wh, "train_network", lambda *a, **k: pytest.fail("a whole network was trained"))


def test_whole_pipeline_on_a_tiny_cifar(tmp_path, monkeypatch):
    """whole_predictions: trained, cached per network and per method's predictions (a second call trains
    nothing, and with the networks gone it still reads the predictions), every OOD set scored."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    cifar, config = _tiny_cifar(), _tiny_config()
    out = ex.whole_predictions(config, cifar, Run())
    assert set(out) == {"ensemble", "ddu"}
    assert out["ensemble"]["test"]["samples"].shape == (2, 40, 10)
    assert set(out["ddu"]["ood"]) == {"id", "blur", "uniform_noise"} and len(out["ddu"]["ood"]["id"]) == 20
    assert out["ensemble"]["meta"]["n_train"] == 96 and len(out["ensemble"]["meta"]["train_seconds"]) == 2
    assert out["ensemble"]["meta"]["data_source"] == "jpeg" and out["ensemble"]["meta"]["variant"] == "ours"
    entries = sorted(p.name for p in (tmp_path / "cache" / "03").iterdir())
    assert len([e for e in entries if e.startswith("whole-") and e.endswith(".pt")]) == 3  # the networks
    assert [e.rsplit("-", 1)[0] for e in entries if e.endswith(".npz")] == ["whole-pred-ddu", "whole-pred-ensemble"]
    assert not any(e.endswith(".ckpt") for e in entries)
    _no_training(monkeypatch)
    for network in (tmp_path / "cache" / "03").glob("whole-*.pt"):
        network.unlink()  # the predictions are keyed by the images and the recipe, not by the networks
    again = ex.whole_predictions(config, cifar, Run())
    np.testing.assert_array_equal(again["ensemble"]["test"]["samples"], out["ensemble"]["test"]["samples"])
    np.testing.assert_array_equal(again["ddu"]["ood"]["blur"], out["ddu"]["ood"]["blur"])


def test_the_recipe_variant_trains_the_recipes_networks(tmp_path, monkeypatch):
    """variant="recipe": label smoothing 0.2 and every network at version 1 (the evidential logits scaled by
    1/9), in their own cache entries; "ours" keeps config.whole and the current versions."""
    config = _tiny_config(methods=["evidential"])
    assert ex.whole_variant(config, "ours") == (config.whole, wh.NETWORK_VERSION)
    settings, versions = ex.whole_variant(config, "recipe")
    assert settings == replace(config.whole, label_smoothing=0.2) and set(versions.values()) == {1}
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    seen = []
    train = wh.train_network
    monkeypatch.setattr(wh, "train_network", lambda *a, **k: seen.append((a[3], k["version"])) or train(*a, **k))
    cifar = _tiny_cifar()
    ex.whole_predictions(config, cifar, Run(), variant="recipe")
    assert seen == [(settings, 1)]
    inputs = ex.whole_inputs(config, cifar)
    assert ex.whole_prediction_entry(config, "evidential", inputs, "recipe").path.name.startswith("whole-recipe-pred-")
    assert ex.whole_prediction_entry(config, "evidential", inputs, "recipe").path != \
        ex.whole_prediction_entry(config, "evidential", inputs, "ours").path
    with pytest.raises(ValueError, match="variant='airbench' is not allowed"):
        ex.whole_variant(config, "airbench")


def test_the_prediction_key_follows_what_the_predictions_depend_on():
    """The key changes with the recipe, seed, images (n_train, n_test, OOD sets), data source and thread count,
    and is computed without any network."""
    cifar, config = _tiny_cifar(), _tiny_config()
    base = ex.whole_prediction_entry(config, "ddu", ex.whole_inputs(config, cifar)).path
    changed = {
        "recipe": _tiny_config(whole={"widths": [4, 8, 8], "epochs": 2, "batch_size": 32, "whiten_patches": 20}),
        "seed": _tiny_config(seed=1), "ood": _tiny_config(ood_sets=["blur"]), "n_ood": _tiny_config(n_ood=10),
        "source": _tiny_config(data_source="python")}
    for what, other in changed.items():
        assert ex.whole_prediction_entry(other, "ddu", ex.whole_inputs(other, cifar)).path != base, what
    fewer = {**cifar, "train_images": cifar["train_images"][:90], "train_labels": cifar["train_labels"][:90]}
    assert ex.whole_prediction_entry(config, "ddu", ex.whole_inputs(config, fewer)).path != base
    python = ex.whole_prediction_entry(changed["source"], "ddu", ex.whole_inputs(changed["source"], cifar)).path
    assert python.name.startswith("whole-pred-ddu-python-")


def _legacy_folder(folder, out: dict, **meta) -> None:
    """Write predictions as the pre-layer files of results/03/whole*/ were: <method>.npz, compressed, with a
    version-1 metadata record and the command and commit that wrote them."""
    folder.mkdir(parents=True)
    for method, p in out.items():
        legacy = {k: v for k, v in p["meta"].items() if k not in ("variant", "commit", "date", "compute_seconds")}
        arrays = wh.prediction_arrays(method, p["test"], p["ood"], {**legacy, "version": 1, "command": "legacy run",
                                                                      "commit": "c0ffee", "date": "then", **meta})
        np.savez_compressed(folder / f"{method}.npz", **arrays)


def test_converted_files_are_read_under_the_keys_the_code_computes(tmp_path, monkeypatch, capsys, thread_count):
    """convert: pre-layer files become the cache entries whole_predictions looks up and a stored layer with
    their provenance; a run with SOURCE="stored" and an empty cache then trains nothing and gets the files'
    numbers. A file made with another recipe or data source is refused, naming it. At one thread, the notebook's
    default NUM_THREADS: the keys hold the thread count (`lib.device.threads_key`), and plain pytest runs at more."""
    thread_count(1)
    from lib import store
    from lib.regret import store_whole

    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "trained"))
    cifar, config = _tiny_cifar(), _tiny_config()
    made = {v: ex.whole_predictions(config, cifar, Run(), variant=v) for v in ex.WHOLE_VARIANTS}
    for variant, out in made.items():
        _legacy_folder(tmp_path / "legacy" / variant, out)
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "converted"))
    folders = {v: tmp_path / "legacy" / v for v in ex.WHOLE_VARIANTS}
    layer = store_whole.convert(folders, config, cifar, command="convert it")
    manifest = store.read_manifest(layer)
    assert layer == tmp_path / "results" / "03" / "smoke" and len(manifest["entries"]) == 4
    assert manifest["command"] == "convert it"
    assert {e["origin"]["commit"] for e in manifest["entries"].values()} == {"c0ffee"}
    assert {e["origin"]["command"] for e in manifest["entries"].values()} == {"legacy run"}
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "empty"))
    _no_training(monkeypatch)
    run = Run.for_notebook("03", "smoke", source="stored", force=False, device="cpu", progress=False)
    assert "4 stored" in run.describe()
    for variant, out in made.items():
        read = ex.whole_predictions(config, cifar, run, variant=variant)
        for method in config.methods:
            for key, value in out[method]["test"].items():
                np.testing.assert_array_equal(read[method]["test"][key], value)
            assert read[method]["meta"]["converted"]["command"] == "convert it"
    assert run.summary().endswith("4 results read, 0 computed.")
    assert not (tmp_path / "empty").exists()  # read from the layer, nothing computed into the cache
    _legacy_folder(tmp_path / "legacy" / "jpeg-other", made["ours"], data_source="python")
    with pytest.raises(ValueError, match=r"jpeg-other/(ensemble|ddu).npz is not what PRESET='smoke' computes.*"
                                         r"data_source 'python', expected 'jpeg'"):
        store_whole.convert({"ours": tmp_path / "legacy" / "jpeg-other"}, config, cifar, command="x")
    with pytest.raises(ValueError, match=r"label_smoothing.*0\.2"):  # the recipe's files are not ours
        store_whole.convert({"ours": tmp_path / "legacy" / "recipe"}, config, cifar, command="x")


def _committed_layer() -> tuple:
    """results/03/cpu of the checkout: (folder, manifest, {name: manifest entry} of the whole networks' entries)."""
    from lib import store
    from lib.paths import PROJECT_ROOT

    layer = PROJECT_ROOT / "results" / "03" / "cpu"
    manifest = store.read_manifest(layer)
    return layer, manifest, {n: e for n, e in manifest["entries"].items() if n.startswith("whole-")}


def _variant(name: str) -> str:
    return "recipe" if name.startswith("whole-recipe-pred-") else "ours"


def test_the_committed_layer_holds_the_cpu_presets_whole_networks_with_their_provenance():
    """results/03/cpu: the eight whole-network entries (four methods, ours and the recipe's) and the width study's
    six (`_check_width_entry`) are intact (their
    SHA-256 and checksum header), in the predictions' format (10,000 rows, the recipe's S and M, every OOD set),
    made with the recipe and network version PRESET="cpu" trains for their variant, and the manifest and the
    README beside it name the command and commit of each training and of the conversion."""
    from lib.cache import load_npz
    from lib.paths import sha256_file

    config = ex.resolve_config("cpu")
    layer, manifest, entries = _committed_layer()
    readme = (layer / "README.md").read_text(encoding="utf-8")
    assert "`cifar10/cifar10-jpeg.zip`" in readme  # the layer is rewritten by each `make store`: its README stays
    assert all(entry["origin"]["commit"][:7] in readme for name, entry in manifest["entries"].items()
               if name.startswith("whole"))  # the command and commit of each network's training
    seen, study = set(), set()
    for name, entry in entries.items():
        assert sha256_file(layer / name) == entry["sha256"], name
        stored = wh.from_arrays(load_npz(layer / name), name)
        meta, variant = stored["meta"], _variant(name)
        method, (settings, versions) = meta["method"], ex.whole_variant(config, variant)
        if tuple(meta["settings"]["widths"]) != config.whole.widths:  # the width study: trained, not converted
            study.add(_check_width_entry(config, entry, meta, readme))
            continue
        seen.add((variant, method))
        assert wh.settings_from(meta) == settings and meta["network_version"] == versions[method], name
        assert entry["config"]["network_version"] == versions[method] and entry["config"]["seed"] == config.seed
        first = next(v for k, v in stored["test"].items() if k != "embedding_dim")
        assert (first.shape[1] if method in ("mc_dropout", "ensemble") else first.shape[0]) == 10_000
        if method in ("mc_dropout", "ensemble"):
            assert first.shape[0] == (settings.mc_samples if method == "mc_dropout" else settings.members)
        assert set(stored["ood"]) == {"id", *config.ood_sets}
        assert all(len(v) == config.n_ood for v in stored["ood"].values())
        assert meta["data_source"] == "jpeg" and meta["converted"]["commit"][:7] in readme  # the conversion, named
        assert entry["origin"]["command"] in readme and entry["origin"]["commit"] in readme, name
        assert entry["compute_seconds"] == pytest.approx(sum(meta["train_seconds"]), abs=0.1)
    assert seen == {(v, m) for v in ex.WHOLE_VARIANTS for m in ex.uq.METHODS}
    assert study == {(w, m) for w, methods in config.width_study for m in methods}


def _check_width_entry(config: ex.RegretConfig, entry: dict, meta: dict, readme: str) -> tuple:
    """A width-study entry: the cpu recipe at one of the study's widths, for a method the study trains there, with
    the store_whole command that trains it as its origin, its commit in the README and its computing time."""
    widths, method = tuple(meta["settings"]["widths"]), meta["method"]
    assert method in dict(config.width_study)[widths]
    assert wh.settings_from(meta) == ex.width_config(config, widths, (method,)).whole
    assert f"--widths {' '.join(map(str, widths))} --methods {method}" in entry["origin"]["command"]
    assert entry["origin"]["commit"][:7] in readme and meta["data_source"] == "jpeg"
    assert entry["compute_seconds"] == pytest.approx(meta["compute_seconds"], abs=0.1)
    return widths, method


def test_the_committed_entries_are_under_the_keys_the_cpu_preset_computes(data_root, thread_count):
    """The key whole_predictions computes for PRESET="cpu" from the CIFAR-10 JPEG copy is each committed entry's
    name, for every method and variant: a default run (NUM_THREADS=1, which the keys hold) reads them all and
    trains nothing."""
    thread_count(1)
    config = ex.resolve_config("cpu")
    inputs = ex.whole_inputs(config, ex.cifar_data(config))
    _, _, entries = _committed_layer()
    expected = {ex.whole_prediction_entry(config, m, inputs, v).path.name for v in ex.WHOLE_VARIANTS
                for m in config.methods}
    expected |= {ex.whole_prediction_entry(ex.width_config(config, w, methods), m, inputs).path.name
                 for w, methods in config.width_study for m in methods}  # the width study's, variant "ours"
    assert expected == set(entries)


def test_the_committed_accuracies_are_those_of_the_stored_predictions(data_root):
    """Independent check of the stored runs: each method's accuracy recomputed from its stored (float16)
    predictions against CIFAR-10's own test labels (not CIFAR-10H) is the one its metadata and README state."""
    from lib.cache import load_npz
    from lib.data.files import data_file

    labels = np.load(data_file("cifar10/test_labels.npy")).astype(np.int64)
    layer, _, entries = _committed_layer()
    readme = (layer / "README.md").read_text(encoding="utf-8")
    for name in entries:
        stored = wh.from_arrays(load_npz(layer / name), name)
        recomputed = wh.accuracy(stored["meta"]["method"], stored["test"], labels)
        assert recomputed == pytest.approx(stored["meta"]["test_accuracy"], abs=2e-4), name  # float16 rounding
        assert f"| {stored['meta']['method']} | {stored['meta']['test_accuracy']:.4f} |" in readme, name


def test_store_whole_trains_the_configuration_asked_for(tmp_path, monkeypatch, capsys):
    """The command's options reach the configuration whole_predictions trains (preset, variant, data source,
    methods, seed, recipe overrides), and it trains the entries notebook 03 looks up."""
    from lib.regret import store_whole

    seen = {}

    def fake_cifar(config):
        seen["cifar"] = config.data_source
        return _tiny_cifar()

    def fake_whole(config, cifar, run, **kwargs):
        seen.update(config=config, variant=kwargs["variant"], run=run)
        meta = {"test_accuracy": 0.5, "train_seconds": [60.0, 60.0]}
        return {m: {"meta": meta, "path": tmp_path / f"{m}.npz"} for m in config.methods}

    monkeypatch.setattr(ex, "cifar_data", fake_cifar)
    monkeypatch.setattr(ex, "whole_predictions", fake_whole)
    assert store_whole.main(["--data-source", "python", "--threads", "1", "--methods", "ddu"]) == 0
    out = capsys.readouterr().out
    assert f"ddu: test accuracy 0.5000, 2 network(s), 2.0 min of training; cached as {tmp_path}" in out
    assert seen["cifar"] == "python" and seen["config"].data_source == "python"
    assert seen["config"].methods == ("ddu",) and seen["variant"] == "ours"
    assert seen["run"].source == "compute" and seen["run"].progress and not seen["run"].force  # cache, else train
    assert seen["config"].whole == ex.resolve_config("cpu").whole  # the cpu preset's networks by default
    assert seen["config"].whole.widths == (16, 32, 32) and seen["config"].whole.batch_size == 256
    assert store_whole.main(["--preset", "whole", "--variant", "recipe", "--seed", "100", "--label-smoothing",
                             "0.1", "--methods", "ensemble"]) == 0
    assert seen["config"].whole == replace(wh.WholeSettings(), label_smoothing=0.1) and seen["config"].seed == 100
    assert seen["variant"] == "recipe"
    with pytest.raises(SystemExit):
        store_whole.main(["--data-source", "png"])


def test_only_the_evidential_network_has_unscaled_logits():
    """Airbench scales the logits by 1/9; the evidential network's are not scaled (its evidence softplus(logit)
    must grow large), and the change has its own network version, so older cached evidential networks are not
    reused; version 1 is still built, for the recipe's variant."""
    for method in ex.uq.METHODS:
        net = wh.build_network(method, TINY, seed=0)
        assert net.logit_scale == (1.0 if method == "evidential" else 1 / 9), method
        assert wh.build_network(method, TINY, seed=0, version=1).logit_scale == 1 / 9, method
    x = torch.randn(4, 3, 32, 32)
    net = wh.build_network("evidential", TINY, seed=0).eval()
    assert torch.allclose(net(x), net.linear(net.tail_features(net.trunk(x))))  # the linear layer's output as is
    assert wh.NETWORK_VERSION["evidential"] > wh.NETWORK_VERSION["ensemble"]
    with pytest.raises(ValueError, match="network version=3"):
        wh.build_network("evidential", TINY, seed=0, version=3)


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
