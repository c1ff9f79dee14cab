"""lib.irs.generators and lib.irs.train_generators: the sets a run measures, FID's interval,
the rankings' agreement, and the packed cache entries that come back from a GPU machine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.cache import atomic_savez, load_npz
from lib.irs import experiment as ie
from lib.irs import generators as gen
from lib.irs import train_generators as tg
from lib.paths import cache_dir


def test_the_sets_a_run_measures():
    config = ie.PRESETS["cpu"]
    labels = [s.label for s in gen.generated_sets_of(config)]
    assert len(labels) == len(set(labels)) == 3 * 3 + 2 + 3 + 1  # arms x fractions, guided, small width, held-out
    assert "class c32 100% w4" in labels and "diadm c32 100% held-out cond." in labels and "diadm c16 100%" in labels
    assert all(s.slug.replace("-", "").isalnum() for s in gen.generated_sets_of(config))
    assert set(gen.grid_labels(config)) <= set(labels) | {"memorise 0.1", "real held-out (SYN)"}


def test_gen_fractions_are_whole_epochs_labelled_as_trained_and_asked_in_increasing_order():
    """Notebook 04's side: at smoke (4 epochs) 0.5 and 0.52 both trained 2 epochs (two rows, one
    set), 0.01 trained one epoch labelled "1%", and the cpu preset's 0.25 and 0.5 of 25 epochs train 6 and 12
    (24 %, 48 %) under the labels "25%" and "50%"."""
    with pytest.raises(ValueError, match=r"gen_fractions: 0\.5 and 0\.52 are one budget, 2 of the 4 epochs"):
        ie.resolve_config("smoke", gen_fractions=(0.5, 0.52, 1.0))
    with pytest.raises(ValueError, match=r"gen_fractions entry=0\.01 is 0\.04 of the 4 training epochs"):
        ie.resolve_config("smoke", gen_fractions=(0.01, 1.0))
    cpu = gen.generated_sets_of(ie.PRESETS["cpu"])
    assert [s.fraction for s in cpu if s.arm == "class" and s.channels == 32 and s.guidance == 1.0] == [0.24, 0.48, 1.0]
    assert {"class c32 24% w1", "diadm c32 48%", "unconditional c32 100%"} <= {s.label for s in cpu}
    smoke = gen.generated_sets_of(ie.resolve_config("smoke", gen_fractions=(1.0, 0.5)))
    assert [s.fraction for s in smoke[:6]] == [0.5] * 3 + [1.0] * 3  # each budget continues the run's checkpoint


def test_fid_interval_covers_its_estimate_and_is_bias_corrected():
    rng = np.random.default_rng(0)
    real, fake = rng.standard_normal((500, 4)), rng.standard_normal((500, 4)) + 0.3
    out = gen.fid_interval(real, fake, reps=50, seed=1, alpha_e=0.05)
    assert out["fid_lower"] <= out["fid"] <= out["fid_upper"]
    assert out["fid"] == pytest.approx(4 * 0.09, abs=0.15)  # ||mu||^2 = 4 x 0.3^2, covariances equal
    none = gen.fid_interval(real, fake, reps=0, seed=1, alpha_e=0.05)
    assert none["fid"] == out["fid"] and np.isnan(none["fid_lower"])


def test_ranking_agreement_counts_opposite_pairs_and_kendall_tau():
    t = pd.DataFrame({"irs_adj": [0.9, 0.5, 0.1], "fid": [1.0, 3.0, 2.0], "recall": [0.9, 0.5, 0.1]},
                     index=["a", "b", "c"])
    agreement = gen.ranking_agreement(t)
    assert agreement["pairs"] == 3 and agreement["disagree"] == [("b", "c")]  # b more diverse, c lower FID
    assert agreement["tau"]["irs_adj / recall"] == pytest.approx(1.0)
    assert agreement["tau"]["irs_adj / fid"] == pytest.approx(1 / 3)
    ranks = gen.ranking(pd.DataFrame({"extractor": "e", "set": ["a", "b"], "irs_adj": [0.2, 0.4], "fid": [5, 9],
                                      "recall": [0.1, 0.3]}), "e")
    assert ranks.loc["b", "rank irs_adj"] == 1 and ranks.loc["a", "rank fid"] == 1


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="gen_channels entry=4"):
        ie.resolve_config("smoke", gen_channels=(4,))
    with pytest.raises(ValueError, match="must each hold 1.0"):
        ie.resolve_config("smoke", gen_fractions=(0.5,))
    with pytest.raises(ValueError, match="family.n=300"):  # more distinct conditioning rows than the 10 x 20 images
        ie.resolve_config("smoke", family={"n": 300, "train_per_class": 20})


def test_packed_entries_come_back_byte_for_byte_and_a_damaged_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    path = cache_dir() / "04" / "gen-x-n2-0123456789.npz"
    path.parent.mkdir(parents=True)
    atomic_savez(path, {"images": np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)})
    original = path.read_bytes()
    packed = tg.pack([path], tmp_path / "out")
    path.unlink()
    assert [p.name for p in tg.unpack(tmp_path / "out")] == [path.name] and path.read_bytes() == original
    assert load_npz(path)["images"].sum() == sum(range(12))
    with np.load(packed[0]) as arrays:
        damaged = arrays[path.name].copy()
    damaged[-1] ^= 1
    np.savez(tmp_path / "out" / "entries-0.npz", **{path.name: damaged})
    with pytest.raises(ValueError, match="fails its checksum"):
        tg.unpack(tmp_path / "out")


def test_unpack_refuses_a_truncated_bundle_and_a_missing_or_empty_folder_by_name(tmp_path, monkeypatch, capsys):
    """A truncated bundle raised a bare BadZipFile; a missing or empty folder unpacked nothing
    and exited 0."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    path = cache_dir() / "04" / "gen-x-n2-0123456789.npz"
    path.parent.mkdir(parents=True)
    atomic_savez(path, {"images": np.zeros((1, 2, 2, 3), np.uint8)})
    bundle = tg.pack([path], tmp_path / "out")[0]
    bundle.write_bytes(bundle.read_bytes()[:-40])  # cut short, as an interrupted copy leaves it
    with pytest.raises(ValueError, match=r"entries-0\.npz.*not a complete bundle"):
        tg.unpack(tmp_path / "out")
    (tmp_path / "empty").mkdir()
    for folder, reason in ((tmp_path / "missing", "no such folder"), (tmp_path / "empty", "holds no entries-")):
        with pytest.raises(ValueError, match=rf"{folder.name}.*{reason}"):
            tg.unpack(folder)
        with pytest.raises(SystemExit) as exit_:
            tg.main(["unpack", str(folder)])
        assert exit_.value.code != 0 and folder.name in capsys.readouterr().err


def test_train_generators_refuses_a_device_the_workbook_does_not_support(capsys):
    with pytest.raises(SystemExit) as exit_:
        tg.main(["train", "--preset", "smoke", "--device", "mps"])
    assert exit_.value.code != 0 and "--device='mps'" in capsys.readouterr().err
