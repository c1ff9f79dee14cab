"""lib.crel.own: notebook 02's CReL on your own conditional generator, as a function and as a command, end to end on
the example files of docs/own-models.md, checked against the notebook's pipeline (`crel_on_embeddings`); the
similarity chosen; bad input refused by name."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
import torch
from own_models_page import ROOT, page_argv

from lib import crel
from lib.crel import own
from lib.crel.embeddings import SIMILARITIES, crel_on_embeddings, sample_similarities, similarity_metric
from lib.crel.hf_captioners import EmbeddingCReLSettings, random_folds
from lib.linalg import PCA

EXAMPLES = ROOT / "docs" / "examples" / "02"
SMALL = EmbeddingCReLSettings(epochs=2, pgd_starts=4, pgd_steps=5, hidden=(32, 32), dqr_hidden=(16, 16))


def example() -> dict[str, np.ndarray]:
    return {name: np.load(EXAMPLES / f"{name}.npy") for name in ("conditions", "samples", "reference")}


def test_the_pages_command_matches_the_notebooks_pipeline_on_the_example_files(tmp_path, capsys):
    argv = page_argv("lib.crel.own", tmp_path)
    assert own.main(argv) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "figure.png").stat().st_size > 10_000
    report = json.loads((tmp_path / "results.json").read_text())
    similarity = argv[argv.index("--similarity") + 1]
    alpha = float(argv[argv.index("--alpha") + 1])
    x, y, ref = (a.astype(np.float64) for a in example().values())
    s = replace(EmbeddingCReLSettings(), alpha=alpha, seed=0)
    direct = crel_on_embeddings(x, y, ref, random_folds(len(x), s.fractions, s.seed), s, similarity=similarity)
    assert report["crel"] == direct["crel"] and report["coverage_z"] == direct["coverage_z"]
    assert report["gamma"] == direct["gamma"] and report["mean_similarity"] == direct["mean_sim"]
    assert [r["index"] for r in report["per_condition"]] == direct["test_images"].tolist()
    assert [r["crel"] for r in report["per_condition"]] == direct["crel_per_x"].tolist()
    worst = sorted(report["per_condition"], key=lambda r: r["crel"])[:5]
    assert [w["index"] for w in report["worst"]] == [w["index"] for w in worst]
    assert report["settings"]["similarity"] == similarity
    # the example's generator is biased where x_0 > 0.5: its worst cases are mostly there
    assert np.mean(x[[w["index"] for w in report["worst"]], 0] > 0.5) >= 0.6


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_each_similarity_is_what_its_name_says(similarity):
    rng = np.random.default_rng(0)
    samples, reference = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 4))
    expected = {"cosine": lambda a, b: a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), "dot": lambda a, b: a @ b,
                "neg_euclidean": lambda a, b: -np.linalg.norm(a - b)}[similarity]
    got = sample_similarities(samples, reference, similarity)
    np.testing.assert_allclose(got, [[expected(samples[i, m], reference[i]) for m in range(3)] for i in range(5)])
    pca = PCA.fit(rng.normal(size=(20, 4)), None)  # the identity: codes are the outputs less the mean
    codes = torch.as_tensor(samples[:, 0] - pca.mean)
    np.testing.assert_allclose(similarity_metric(pca, similarity)(codes, torch.as_tensor(reference)).numpy(),
                               got[:, 0])


def test_the_function_is_the_packages_and_a_similarity_changes_the_score():
    data = example()
    cos = crel.crel_report(**data, similarity="cosine", settings=SMALL)
    euc = crel.crel_report(**data, similarity="neg_euclidean", settings=SMALL)
    assert cos["coverage_z"] == euc["coverage_z"]  # the region does not depend on rho
    assert -1 <= cos["crel"] <= 1 and euc["crel"] < 0 and cos["crel"] != euc["crel"]
    assert len(cos["worst"]) == 5 and len(cos["worst"][0]["worst_output"]) == 8


def _save(tmp_path, name, arr):
    np.save(tmp_path / name, arr)
    return str(tmp_path / name)


@pytest.mark.parametrize("case, message", [
    ("nan", r"--samples \(.*samples\.npy\) holds 1 non-finite value\(s\) \(first at index \(7, 2, 1\)"),
    ("rows", r"conditions, samples and reference must have one row per condition; got n = 240, 240 and 239"),
    ("dimension", r"samples \(n, M, D\) and reference \(n, D\) must have the same D; got 8 and 5"),
    ("shape", r"samples must be a non-empty \(n, M, D\) array; got shape \(240, 8\)"),
    ("few", r"too few conditions \(n = 40\) for the folds \(0\.4, 0\.3, 0\.2\) and alpha = 0\.05: cal fold 8 < 19"),
    ("zero", r"reference holds 1 zero vector\(s\) \(first at index \(4,\)\), which have no cosine"),
    ("pickle", r"--reference: '.*reference\.npy' could not be read as a plain numeric array"),
])
def test_bad_input_is_refused_before_any_work_naming_the_file_and_the_problem(tmp_path, capsys, case, message):
    data = {k: v.astype(np.float64) for k, v in example().items()}
    alpha = "0.05" if case == "few" else "0.1"
    if case == "nan":
        data["samples"][7, 2, 1] = np.nan
    elif case == "rows":
        data["reference"] = data["reference"][:-1]
    elif case == "dimension":
        data["reference"] = data["reference"][:, :5]
    elif case == "shape":
        data["samples"] = data["samples"][:, 0]
    elif case == "few":
        data = {k: v[:40] for k, v in data.items()}
    elif case == "zero":
        data["reference"][4] = 0
    paths = {k: _save(tmp_path, f"{k}.npy", v) for k, v in data.items()}
    if case == "pickle":
        paths["reference"] = _save(tmp_path, "reference.npy", np.array([None], dtype=object))
    argv = [a for k, p in paths.items() for a in (f"--{k}", p)]
    with pytest.raises(SystemExit) as stop:
        own.main([*argv, "--alpha", alpha, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_an_unknown_similarity_is_refused_by_the_command_and_the_function(tmp_path, capsys):
    with pytest.raises(SystemExit):
        own.main(["--conditions", "a.npy", "--samples", "b.npy", "--reference", "c.npy", "--similarity", "l1",
                  "--out", str(tmp_path)])
    assert "--similarity: invalid choice: 'l1'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="similarity='l1' is not allowed"):
        crel.crel_report(**example(), similarity="l1")
