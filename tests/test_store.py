"""The stored layer (lib.store): written from a run's recorded entries, read before computing under
SOURCE="stored", refused when damaged, ignored when stale or under SOURCE="compute"."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lib import store
from lib.cache import cache_entry, cache_path
from lib.make import store_writer
from lib.paths import sha256_file
from lib.run import Run


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """A cache and a results root of their own, and the recording of the layer's entries switched on."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(store.RECORD_ENV, str(tmp_path / "records.jsonl"))
    return tmp_path


def run_of(source: str, namespace: str = "xx", preset: str = "test", **changes) -> Run:
    """The run of a notebook `namespace` under `preset` (made after the fixture set the recording)."""
    run = Run.for_notebook(namespace, preset, source=source, force=False, device="cpu", progress=False)
    return replace(run, **changes)


def fill(roots, seed: int = 0) -> dict:
    """Compute two stored entries and one that is not stored, and write the layer "xx/test" from the records."""
    run = run_of("compute")
    values = {"a": run.npz(cache_entry("xx", "samples", {"seed": seed}, ".npz"),
                           lambda: {"x": np.arange(5.0) + seed}, stored=True)["x"],
              "b": run.torch(cache_entry("xx", "rows", {"seed": seed}, ".pt"),
                             lambda: [{"auc": 0.5 + seed}], stored=True),
              "weights": run.npz(cache_path("xx", "weights", {"seed": seed}, ".npz"),
                                 lambda: {"w": np.ones(3)})["w"]}
    store.write_layer("xx", "test", store.read_records(roots / "records.jsonl"),
                      {"command": "test", "commit": "abc", "date": "today"})
    return values


def fail() -> dict:
    raise AssertionError("computed although the stored layer holds the entry")


def empty_cache(roots, monkeypatch, name: str = "cache2") -> None:
    monkeypatch.setenv("WORKBOOK_CACHE", str(roots / name))


def test_a_layer_holds_exactly_the_stored_entries_with_their_provenance(roots):
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    manifest = json.loads((layer / "manifest.json").read_text())
    names = sorted(manifest["entries"])
    assert [n.rsplit("-", 1)[0] for n in names] == ["rows", "samples"]  # not the weights
    assert sorted(p.name for p in layer.iterdir()) == sorted(names + ["manifest.json"])
    entry = manifest["entries"][names[1]]
    assert entry["config"] == {"seed": 0} and entry["bytes"] == (layer / names[1]).stat().st_size
    assert entry["sha256"] == sha256_file(layer / names[1]) and entry["compute_seconds"] >= 0
    assert manifest["commit"] == "abc"
    assert manifest["total_bytes"] == sum(e["bytes"] for e in manifest["entries"].values())


def test_stored_entries_load_without_computing_and_equal_the_computed_ones(roots, monkeypatch, capsys):
    values = fill(roots)
    empty_cache(roots, monkeypatch)
    run = run_of("stored")
    assert "2 stored" in run.describe()
    x = run.npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), fail, stored=True)["x"]
    rows = run.torch(cache_entry("xx", "rows", {"seed": 0}, ".pt"), fail, stored=True)
    assert np.array_equal(x, values["a"]) and rows == values["b"]
    assert run.summary().endswith("2 results read, 0 computed.")
    assert not (roots / "cache2").exists()  # read in place, not copied into the cache


def test_compute_ignores_the_layer(roots, monkeypatch):
    fill(roots)
    empty_cache(roots, monkeypatch)
    x = run_of("compute").npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.zeros(2)},
                              stored=True)["x"]
    assert np.array_equal(x, np.zeros(2))


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_damaged_stored_file_is_refused_by_name_and_computed(roots, monkeypatch, capsys, damage):
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    path = next(layer.glob("samples-*.npz"))
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[:100]))
    else:
        path.unlink()
    empty_cache(roots, monkeypatch)
    run = run_of("stored")
    x = run.npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.full(2, 7.0)}, stored=True)["x"]
    assert np.array_equal(x, np.full(2, 7.0))
    out = capsys.readouterr().out
    assert f"stored result {path} refused" in out and "computing it instead" in out and "make store NB=xx" in out
    assert "1 refused" in run.summary()


def test_a_stale_entry_is_computed_and_the_notebook_says_so_once(roots, monkeypatch, capsys):
    fill(roots)
    empty_cache(roots, monkeypatch)
    run = run_of("stored")
    for seed in (1, 2):  # the configuration changed: same labels, other keys
        run.npz(cache_entry("xx", "samples", {"seed": seed}, ".npz"), lambda: {"x": np.zeros(1)}, stored=True)
    out = capsys.readouterr().out
    assert out.count("is stale") == 1 and "make store NB=xx PRESET=test" in out
    assert run.summary().endswith("0 results read, 2 computed, 2 stale.")


def test_force_recomputes_even_what_the_layer_holds(roots, monkeypatch):
    fill(roots)
    empty_cache(roots, monkeypatch)
    x = run_of("stored", force=True).npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.ones(1)},
                                         stored=True)["x"]
    assert np.array_equal(x, np.ones(1))


@pytest.mark.parametrize("namespace, preset", [("yy", "test"), ("xx", "cpu")])
def test_another_notebooks_or_presets_layer_is_not_read(roots, monkeypatch, namespace, preset):
    fill(roots)
    empty_cache(roots, monkeypatch)
    x = run_of("stored", namespace, preset).npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"),
                                                lambda: {"x": np.ones(1)}, stored=True)["x"]
    assert np.array_equal(x, np.ones(1))


def test_a_missing_layer_is_said_in_one_line(roots):
    assert run_of("stored", preset="cpu").describe().startswith(
        "SOURCE='stored': there is no stored layer for PRESET='cpu'")


def test_a_bad_source_is_refused_naming_the_parameter(roots):
    with pytest.raises(ValueError, match=r"^SOURCE='stord' is not one of \('stored', 'compute'\)"):
        run_of("stord")


def test_a_recorded_entry_outside_the_namespace_is_refused(roots, tmp_path):
    with pytest.raises(ValueError, match="not in the cache namespace 'xx'"):
        store.write_layer("xx", "test", [{"path": str(tmp_path / "elsewhere" / "a-0123456789.npz")}], {})


FULL_NOTEBOOKS = ("01_ensemble_pr_curves.ipynb", "02_crel_conformal_reliability.ipynb",
                  "03_epistemic_regret_cifar10h.ipynb", "04_image_retrieval_score.ipynb")


@pytest.mark.full
@pytest.mark.parametrize("filename", FULL_NOTEBOOKS)
def test_the_default_runs_glue_equals_the_from_scratch_runs(filename, tmp_path):
    """The committed `cpu` layer gives the glued results of a from-scratch `cpu` run (clocks aside).
    Skipped unless `pytest --run-full`: the from-scratch run takes up to 90 minutes on 2 cores."""
    from notebook_runner import notebook_runner

    from lib.glue import without_clocks

    run = notebook_runner(filename)
    stored = run(tmp_path, "stored", tmp_path / "cache-stored", PRESET="cpu", SOURCE="stored")
    computed = run(tmp_path, "computed", tmp_path / "cache-computed", cell_timeout=6000, PRESET="cpu",
                   SOURCE="compute")
    assert without_clocks(stored) == without_clocks(computed)


def test_rewriting_a_layer_keeps_its_readme_and_what_it_recorded_about_unchanged_entries(roots):
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    (layer / "README.md").write_text("how these were made")
    manifest = json.loads((layer / "manifest.json").read_text())
    name = next(n for n in manifest["entries"] if n.startswith("rows"))
    manifest["entries"][name]["provenance"] = "trained elsewhere"
    (layer / "manifest.json").write_text(json.dumps(manifest))
    records = [{"path": str(roots / "cache" / "xx" / n), "config": None} for n in manifest["entries"]]
    store.write_layer("xx", "test", records, {"command": "again", "commit": "def", "date": "later"})
    again = json.loads((layer / "manifest.json").read_text())
    assert (layer / "README.md").read_text() == "how these were made" and again["commit"] == "def"
    assert again["entries"][name]["provenance"] == "trained elsewhere"
    assert again["entries"][name]["config"] == {"seed": 0}  # kept: this run did not know it


# ------------------------------------------------------------------------------------------------------------
# Paths built from parameters, empty layers, the manifest's form and what a layer entry may be
# ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("namespace, preset", [("xx", "../.."), ("xx", ".."), ("xx", "."), ("../..", "test"),
                                               ("xx", "ABSOLUTE"), ("xx", "a/b"), ("xx", "")])
def test_a_layer_outside_its_folder_is_refused_and_nothing_is_deleted(roots, namespace, preset):
    # every case stays under roots, so that even the code before the check deletes nothing else
    preset = str(roots / "victim") if preset == "ABSOLUTE" else preset
    fill(roots)
    bystander = roots / "keep.txt"
    bystander.write_text("mine")
    records = store.read_records(roots / "records.jsonl")
    with pytest.raises(ValueError, match=r"(namespace|PRESET)=.* is not a plain name"):
        store.write_layer(namespace, preset, records, {"command": "test", "commit": "abc", "date": "today"})
    assert bystander.read_text() == "mine" and (roots / "results" / "xx" / "test" / "manifest.json").exists()


def test_a_symbolic_link_out_of_the_results_root_is_refused(roots, tmp_path):
    (roots / "results").mkdir()
    (roots / "results" / "xx").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ValueError, match="leads outside its folder"):
        store.layer_dir("xx", "test")


@pytest.mark.parametrize("argv, message", [
    (["--preset", "../.."], r"--preset '\.\./\.\.' is not one of notebook 04's PRESETS"),
    (["-p", "SOURCE", "stored"], "-p SOURCE 'stored': a layer is written from a run that computes"),
    (["-p", "PRESET", "smoke"], "-p PRESET 'smoke' contradicts --preset 'cpu'"),
])
def test_the_store_command_refuses_a_bad_preset_or_source_before_running(roots, capsys, argv, message):
    bystander = roots / "keep.txt"
    bystander.write_text("mine")
    with pytest.raises(SystemExit) as stop:
        store_writer.main(["notebooks/04_image_retrieval_score.ipynb", "--out", str(roots / "runs"), *argv])
    assert stop.value.code == 2 and re_search(message, capsys.readouterr().err)
    assert bystander.read_text() == "mine" and not (roots / "runs").exists()  # refused before the run


def no_run(*args, **kwargs):
    raise AssertionError("the notebook ran before the command's arguments were checked")


@pytest.mark.parametrize("argv, message", [
    (["--reuse-cache", "--scratch-run", "missing.ipynb"], r"--scratch-run missing\.ipynb does not exist"),
    (["--scratch-run", "README.md"], r"--scratch-run is the executed notebook of the run that filled the cache: "
                                     r"give it with --reuse-cache"),
    (["-p", "PRSET", "smoke"], r"-p PRSET: not a parameter of 04_image_retrieval_score\.ipynb"),
    (["--out", "README.md"], r"--out README\.md is not a folder"),
])
def test_the_store_command_checks_every_argument_before_running(roots, monkeypatch, capsys, argv, message):
    """`--scratch-run missing.ipynb` ran the notebook for 70 s, then raised FileNotFoundError
    and deleted the cache it had computed."""
    monkeypatch.setattr(store_writer, "_execute_timed", no_run)
    with pytest.raises(SystemExit) as stop:
        store_writer.main(["notebooks/04_image_retrieval_score.ipynb", "--preset", "smoke", "--out",
                           str(roots / "runs"), *argv])
    assert stop.value.code == 2 and re_search(message, capsys.readouterr().err)


def test_the_store_command_keeps_the_cache_it_computed_when_a_later_step_fails(roots, monkeypatch, capsys):
    """An error after the run (here: the layer cannot be written) leaves the temporary cache in place and says
    how to write the layer from it without computing again."""
    def fake_run(notebook, out, parameters):
        Run.for_notebook("04", "smoke", source="compute", force=False, device="cpu", progress=False).npz(
            cache_entry("04", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.ones(2)}, stored=True)
        return out / notebook.name, {"wall_seconds": 1.0, "cpu_seconds": 1.0}

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_writer, "_execute_timed", fake_run)
    monkeypatch.setattr(store_writer, "write_layer", full_disk)
    with pytest.raises(OSError, match="No space left"):
        store_writer.main(["notebooks/04_image_retrieval_score.ipynb", "--preset", "smoke", "--out",
                           str(roots / "runs")])
    err = capsys.readouterr().err
    kept = re.search(r"the run's cache is kept in (\S+) ", err)
    assert kept and list(Path(kept[1]).glob("04/samples-*.npz")), err
    assert f"WORKBOOK_CACHE={kept[1]}" in err and "--reuse-cache" in err


def re_search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, " ".join(text.split())) is not None


def computed_instead(roots, monkeypatch, capsys) -> str:
    """Read seed 0's samples from the layer into an empty cache, check that they were computed instead of read,
    and return what the run printed."""
    empty_cache(roots, monkeypatch)
    x = run_of("stored").npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.full(1, 9.0)},
                             stored=True)["x"]
    assert np.array_equal(x, np.full(1, 9.0))
    return capsys.readouterr().out


def test_a_run_that_recorded_nothing_leaves_the_layer_and_fails_loudly(roots):
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    before = (layer / "manifest.json").read_text()
    with pytest.raises(ValueError, match="recorded no stored entry of notebook xx"):
        store.write_layer("xx", "test", [], {"command": "test", "commit": "abc", "date": "today"})
    assert (layer / "manifest.json").read_text() == before


def test_a_stored_file_recorded_for_another_configuration_is_refused_by_name(roots, monkeypatch, capsys):
    """The layer's file of seed 0 replaced by the bytes (and the manifest entry) of seed 1's: the manifest's
    recorded configuration differs from the key the run asks for, so it is refused, not read."""
    fill(roots)
    fill(roots, seed=1)  # the layer now holds seed 1's entries
    layer = roots / "results" / "xx" / "test"
    manifest = json.loads((layer / "manifest.json").read_text())
    zero, one = (cache_path("xx", "samples", {"seed": seed}, ".npz").name for seed in (0, 1))
    (layer / zero).write_bytes((layer / one).read_bytes())
    manifest["entries"][zero] = manifest["entries"][one]
    (layer / "manifest.json").write_text(json.dumps(manifest))
    out = computed_instead(roots, monkeypatch, capsys)
    assert f"stored result {layer / zero} refused: the configuration its manifest records differs" in out


def test_a_stored_file_swapped_for_another_entrys_bytes_is_refused_by_name(roots, monkeypatch, capsys):
    """Seed 0's file replaced by seed 1's bytes with only its sha256 and bytes updated in the
    manifest (its recorded configuration still seed 0's) was read as seed 0's value. The file carries the key
    it was computed for, and seed 1's key is not the one asked for."""
    fill(roots)
    fill(roots, seed=1)
    layer = roots / "results" / "xx" / "test"
    manifest = json.loads((layer / "manifest.json").read_text())
    zero, one = (cache_path("xx", "samples", {"seed": seed}, ".npz").name for seed in (0, 1))
    (layer / zero).write_bytes((layer / one).read_bytes())
    manifest["entries"][zero].update(sha256=sha256_file(layer / zero), bytes=(layer / zero).stat().st_size)
    (layer / "manifest.json").write_text(json.dumps(manifest))
    out = computed_instead(roots, monkeypatch, capsys)
    assert re_search(rf"stored result {layer / zero} refused: the key inside it is not this entry's", out)


def test_a_stored_file_without_its_key_is_refused_until_the_layer_is_keyed(roots, monkeypatch, capsys):
    """A layer written before stored files carried their key (a plain cache entry in the layer, its manifest
    row matching) is refused by name; `key_layer` gives each file the key its manifest records, and it loads."""
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    name = cache_path("xx", "samples", {"seed": 0}, ".npz").name
    (layer / name).write_bytes((roots / "cache" / "xx" / name).read_bytes())
    manifest = json.loads((layer / "manifest.json").read_text())
    manifest["entries"][name].update(sha256=sha256_file(layer / name), bytes=(layer / name).stat().st_size)
    (layer / "manifest.json").write_text(json.dumps(manifest))
    assert re_search(rf"stored result {layer / name} refused: it carries no key", computed_instead(roots, monkeypatch,
                                                                                                     capsys))
    assert store.key_layer(layer) == [name] and store.key_layer(layer) == []
    empty_cache(roots, monkeypatch, "cache3")
    x = run_of("stored").npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), fail, stored=True)["x"]
    assert np.array_equal(x, np.arange(5.0))


def test_every_committed_stored_file_carries_the_key_of_its_name_and_manifest_entry():
    """The class of item 7 on the committed layers: each file's own header holds the digest of the configuration
    its manifest records, whose short hash is the one in the file's name; and its SHA-256 is the manifest's."""
    from lib import cache
    from lib.paths import PROJECT_ROOT

    manifests = sorted((PROJECT_ROOT / "results").glob("*/*/manifest.json"))
    assert len(manifests) >= 4
    for path in manifests:
        for name, entry in json.loads(path.read_text())["entries"].items():
            key = cache.key_digest(entry["config"])
            assert store.NAME.match(name)["key"] == key.hex()[:10], f"{path.parent / name}: name and config differ"
            assert cache.file_key(path.parent / name) == key, f"{path.parent / name} does not carry its key"
            assert sha256_file(path.parent / name) == entry["sha256"], f"{path.parent / name}: SHA-256 differs"


@pytest.mark.parametrize("text, reason", [
    ("<<<<<<< HEAD\n{}", "JSONDecodeError"),
    ("[1, 2]", "it holds a list, not an object"),
    ('{"commit": "abc", "date": "today", "entries": []}', "its 'entries' is list"),
    ('{"commit": "abc", "date": "today", "entries": {"a-0123456789.npz": {"bytes": 1, "config": {}}}}',
     "entry 'a-0123456789.npz' has no valid 'sha256'"),
    ('{"commit": "abc", "date": "today", "entries": {"../../x-0123456789.npz": {}}}', "is not a cache file name"),
    ('{"commit": 3, "date": "today", "entries": {}}', "its 'commit' is 3, not a string"),
])
def test_a_malformed_manifest_is_an_error_naming_the_file(roots, text, reason):
    layer = roots / "results" / "xx" / "test"
    layer.mkdir(parents=True)
    (layer / "manifest.json").write_text(text)
    with pytest.raises(store.DamagedManifest, match="is not a valid stored-layer manifest") as err:
        run_of("stored").describe()
    assert str(layer / "manifest.json") in str(err.value) and reason in str(err.value)


def test_a_deeply_nested_manifest_is_an_error_naming_the_file(roots):
    """A 100,000-deep manifest.json raised a bare RecursionError."""
    layer = roots / "results" / "xx" / "test"
    layer.mkdir(parents=True)
    (layer / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(store.DamagedManifest, match="RecursionError") as err:
        run_of("stored").describe()
    assert str(layer / "manifest.json") in str(err.value)


def under_file_size_limit(code: str, limit: int = 4096) -> subprocess.CompletedProcess:
    """`code` run by this Python with `ulimit -f` at `limit` bytes (writes past it fail with EFBIG)."""

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return subprocess.run([sys.executable, "-c", code], preexec_fn=limited, capture_output=True, text=True,
                          timeout=120)


def test_a_layer_write_past_the_file_size_limit_names_the_file_and_leaves_nothing(roots):
    """`ulimit -f` during write_layer gave a bare `OSError: File too large`; the error names the
    layer and the file, the layer stays as it was and no partial file or staging folder remains."""
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    before = sorted(p.name for p in layer.parent.iterdir()), (layer / "manifest.json").read_text()
    big = cache_entry("xx", "big", {"n": 1}, ".npz")
    Run().npz(big, lambda: {"x": np.arange(10_000.0)}, stored=True)
    done = under_file_size_limit(
        "from lib import store\n"
        f"store.write_layer('xx', 'test', [{{'path': {str(big.path)!r}, 'config': {{'n': 1}}}}], {{}})")
    assert done.returncode != 0 and "LayerNotWritten" in done.stderr, done.stderr
    assert re_search(rf"the stored layer {layer} was not written: its file {big.path.name} could not be written "
                     r"\(File too large", done.stderr)
    assert (sorted(p.name for p in layer.parent.iterdir()), (layer / "manifest.json").read_text()) == before


def test_a_stamp_past_the_file_size_limit_names_the_notebook_and_leaves_no_partial_file(tmp_path):
    """The stamp of an executed notebook (`make run`, `make store`) left `.NAME.stamp-PID`."""
    import nbformat

    executed = tmp_path / "01_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * 10_000)]), executed)
    before = executed.read_text()
    done = under_file_size_limit(f"from lib.provenance import stamp\nstamp({str(executed)!r}, commit='abc')")
    assert done.returncode != 0 and re_search(rf"{executed} could not be stamped", done.stderr), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01_x.ipynb"] and executed.read_text() == before


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_directory_or_fifo_in_place_of_a_stored_file_is_refused_without_blocking(roots, monkeypatch, capsys, kind):
    import os

    fill(roots)
    path = next((roots / "results" / "xx" / "test").glob("samples-*.npz"))
    path.unlink()
    path.mkdir() if kind == "directory" else os.mkfifo(path)
    out = computed_instead(roots, monkeypatch, capsys)
    assert f"stored result {path} refused: it is a {'directory' if kind == 'directory' else 'FIFO'}" in out
    with pytest.raises(ValueError, match="not a regular file"):
        sha256_file(path)


def test_the_committed_layers_stay_under_65_mb():
    """Every refresh of a layer stays in git's history: results/ is kept under 65 MiB (as `du -sh` counts; 40 until
    notebook 02's label-to-image section added its seven entries, 45 until notebook 01 stored the paper's M = 30
    members, 55 until the generators' weights at other seeds; lib/store.py)."""
    from lib.paths import PROJECT_ROOT

    total = sum(p.stat().st_size for p in (PROJECT_ROOT / "results").rglob("*") if p.is_file())
    assert total < 65 * 2**20, f"results/ holds {total / 2**20:.1f} MiB"


def test_a_from_scratch_run_that_was_interrupted_is_refused_as_the_layers_cost(tmp_path):
    from test_make_book import half_run

    half_run(tmp_path / "03.ipynb")
    with pytest.raises(ValueError, match=r"^--scratch-run: .*03.ipynb is a run that was interrupted"):
        store.scratch_run_info(tmp_path / "03.ipynb")


def test_an_entry_moved_to_a_new_key_is_served_there_with_its_provenance_and_never_under_the_old(roots, monkeypatch):
    """`rekey_entry`: a label or salt that changed without changing the value moves the entry to its new name and key
    (payload byte for byte, the manifest's provenance kept, the move recorded); the old key is no longer served, and
    a configuration that does not hash to the new name, or a file that no longer matches its row, is refused."""
    fill(roots)
    layer = roots / "results" / "xx" / "test"
    old = cache_path("xx", "samples", {"seed": 0}, ".npz").name
    new_config = {"seed": 0, "salt": 2}
    new = cache_path("xx", "samples-moved", new_config, ".npz").name
    with pytest.raises(ValueError, match="does not hash to its name"):
        store.rekey_entry(layer, old, new, {"seed": 0, "salt": 3}, "test")
    payload = (layer / old).read_bytes()[72:]  # after the keyed header (40 + 32 bytes)
    store.rekey_entry(layer, old, new, new_config, "a label that changed")
    assert not (layer / old).exists() and (layer / new).read_bytes()[72:] == payload
    entry = json.loads((layer / "manifest.json").read_text())["entries"][new]
    assert entry["config"] == new_config and entry["migrated"] == {"from": old, "config": {"seed": 0},
                                                                   "why": "a label that changed"}
    empty_cache(roots, monkeypatch)
    x = run_of("stored").npz(cache_entry("xx", "samples-moved", new_config, ".npz"), fail, stored=True)["x"]
    assert np.array_equal(x, np.arange(5.0))
    assert run_of("stored").npz(cache_entry("xx", "samples", {"seed": 0}, ".npz"), lambda: {"x": np.zeros(1)},
                                stored=True)["x"].tolist() == [0.0]
    (layer / new).write_bytes(payload)
    with pytest.raises(ValueError, match="does not match its manifest entry"):
        store.rekey_entry(layer, new, old, {"seed": 0}, "back")


def test_make_verify_recomputes_one_stage_alone_and_compares_it_with_the_layer(roots, monkeypatch, capsys):
    """`make verify` (`lib.run.VERIFY_ENV`): the entries whose label matches are computed afresh from a stored run
    and compared with the layer's (`lib.verify.compare`); the others are read from the layer; nothing is cached."""
    from lib.run import VERIFY_ENV, VERIFY_OUT_ENV
    from lib.verify import within

    fill(roots)
    empty_cache(roots, monkeypatch)
    out = roots / "verify.jsonl"
    monkeypatch.setenv(VERIFY_ENV, "sampl*")
    monkeypatch.setenv(VERIFY_OUT_ENV, str(out))
    run = run_of("stored")
    entry = cache_entry("xx", "samples", {"seed": 0}, ".npz")
    calls = []
    for _ in range(2):  # a later stage asking again gets the same value: computed and compared once per run
        value = run.npz(entry, lambda: calls.append(1) or {"x": np.arange(5.0) * (1 + 1e-9), "seconds": np.array(3.0)},
                        stored=True)
    assert np.array_equal(value["x"], np.arange(5.0)) and not entry.path.exists()  # the layer's value, not cached
    assert calls == [1]
    rows = run.torch(cache_entry("xx", "rows", {"seed": 0}, ".pt"), fail, stored=True)  # not matched: the layer's
    assert rows == [{"auc": 0.5}]
    (line,) = [json.loads(s) for s in out.read_text().splitlines()]
    c = line["comparison"]
    assert not c["equal"] and c["max_rel"] == pytest.approx(1e-9, rel=1e-3) and c["worst"] == "/x"
    assert within(c, 1e-6) and not within(c, 1e-10) and "recomputed" in capsys.readouterr().out


def test_verify_compares_nested_results_leaf_by_leaf_without_clocks():
    from lib.verify import compare

    a = {"rows": [{"auc": 0.5, "runtime_s": 1.0}], "w": np.ones(3), "name": "x", "seconds": 4.0}
    b = {"rows": [{"auc": 0.5, "runtime_s": 9.0}], "w": np.ones(3), "name": "x", "seconds": 1.0}
    assert compare(a, b) == {"equal": True, "max_abs": 0.0, "max_rel": 0.0, "worst": None, "leaves": 3,
                             "mismatched": [], "differing": []}
    c = compare({**a, "w": np.array([1.0, 1.0, 1.5]), "name": "y"}, b)
    assert (c["equal"], c["max_abs"], c["worst"], c["mismatched"]) == (False, 0.5, "/w", ["/name"])
    assert compare({"w": np.ones(2)}, {"w": np.ones(3)})["mismatched"] == ["/w (shape (2,) against (3,))"]
    assert compare({"v": float("nan")}, {"v": float("nan")})["equal"]
