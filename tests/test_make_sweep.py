"""lib.make.sweep: grid files and point ids, results.csv, failing points, interrupt and resume, a real dask
scheduler with two workers, a smoke grid of a real notebook, and the cache under concurrent writers.

The mechanics run tests/fixtures/sweep_point.ipynb (a parameters cell and a glue cell, sub-second)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from lib.make import sweep

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sweep_point.ipynb"
DASK = Path(sys.executable).parent / "dask"


def grid_file(tmp_path: Path, spec: dict, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "results.csv", newline="") as fh:
        return {row["X"]: row for row in csv.DictReader(fh)}


def logged(log: Path) -> list[str]:
    return log.read_text().split("\n")[:-1] if log.exists() else []


def env_for_subprocess(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **extra}


# ---------------------------------------------------------------- grid files, ids, table cells (no dask)


def test_grid_is_the_product_plus_explicit_points_over_the_fixed_parameters(tmp_path):
    spec = {"fixed": {"Y": 0.5, "SLEEP": 0.0}, "grid": {"X": [1, 2], "FAIL": [False, True]},
            "points": [{"X": 7, "Y": 2.0}, {"X": 1, "FAIL": False}], "resources": {"GPU": 1}, "timeout": 30}
    grid = sweep.load_grid(grid_file(tmp_path, spec))
    assert grid.points == [
        {"Y": 0.5, "SLEEP": 0.0, "X": 1, "FAIL": False}, {"Y": 0.5, "SLEEP": 0.0, "X": 1, "FAIL": True},
        {"Y": 0.5, "SLEEP": 0.0, "X": 2, "FAIL": False}, {"Y": 0.5, "SLEEP": 0.0, "X": 2, "FAIL": True},
        {"Y": 2.0, "SLEEP": 0.0, "X": 7},  # the explicit point overrides a fixed value; its duplicate is dropped
    ]
    assert grid.resources == {"GPU": 1} and grid.timeout == 30
    assert sweep.load_grid(grid_file(tmp_path, {"fixed": {"X": 3}})).points == [{"X": 3}]


@pytest.mark.parametrize("spec, message", [
    ({"grid": {"X": []}}, r"grid\.X=\[\] must be a non-empty list"),
    ({"grid": {"X": 3}}, r"grid\.X=3 must be a non-empty list"),
    ({"grids": {"X": [1]}}, r"unknown key\(s\) \['grids'\]"),
    ({"points": [3]}, "points must be a list of mappings"),
    ({"fixed": [1]}, "fixed must be a mapping"),
    ({"resources": {"GPU": 0}}, r"resources\.GPU=0 must be a positive number"),
    ({"timeout": "1h"}, "timeout='1h' must be a positive number"),
])
def test_bad_grid_files_fail_naming_the_key(tmp_path, spec, message):
    with pytest.raises(ValueError, match=message):
        sweep.load_grid(grid_file(tmp_path, spec))


def test_unknown_parameters_and_missing_files_fail_before_any_worker_starts(tmp_path, capsys, monkeypatch):
    import distributed

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for bad input")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    grid = grid_file(tmp_path, {"grid": {"X": [1], "Z": [2]}})
    assert sweep.main([str(FIXTURE), str(grid), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    message = "unknown parameter(s) ['Z'] for sweep_point.ipynb; known: ['FAIL', 'LOG', 'SLEEP', 'X', 'Y']"
    assert message in capsys.readouterr().err
    assert sweep.main([str(tmp_path / "nope.ipynb"), str(grid)]) == 2
    assert sweep.main([str(FIXTURE), str(tmp_path / "nope.yaml")]) == 2
    assert sweep.main([str(FIXTURE), str(grid), "--workers", "0"]) == 2
    assert sweep.main([str(FIXTURE), str(grid), "--env", "NOVALUE"]) == 2
    assert "--env 'NOVALUE' must look like NAME=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.csv").exists()


def test_point_ids_depend_on_the_code_and_the_parameters_only():
    nb = json.loads(FIXTURE.read_text())
    digest = sweep.notebook_digest(json.dumps(nb))
    pid = sweep.point_id(digest, {"X": 1, "Y": 0.5})
    assert pid == sweep.point_id(digest, {"Y": 0.5, "X": 1}) and len(pid) == 12
    assert pid != sweep.point_id(digest, {"X": 2, "Y": 0.5})
    assert pid != sweep.point_id(digest, {"X": 1, "Y": 0.5, "SLEEP": 0.0})  # stated explicitly: another point
    # outputs and markdown do not change what a point computes; code does
    nb["cells"][3]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "old output"}]
    nb["cells"][0]["source"] = "# A retitled fixture"
    assert sweep.notebook_digest(json.dumps(nb)) == digest
    nb["cells"][2]["source"] += "\nprint(1)"
    assert sweep.notebook_digest(json.dumps(nb)) != digest
    assert pid == "bb5da39b8780"  # recorded: the same in every run and process (a resumed sweep relies on it)


def test_glued_results_flatten_to_scalar_columns():
    flat = sweep.flatten({"a": 1.5, "d": {"x": [1, 2], "y": {"z": "s"}}, "curve": list(range(sweep.MAX_LIST + 1)),
                          "short": [None, True]})
    assert flat == {"a": 1.5, "d/x/0": 1, "d/x/1": 2, "d/y/z": "s", "short/0": None, "short/1": True}
    assert [sweep.cell(v) for v in (0.1 + 0.2, None, [1, "a"], True, 3)] == [
        "0.30000000000000004", "", '[1, "a"]', "True", "3"]


@pytest.mark.parametrize("grid", sorted((ROOT / "params" / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_grids_are_smoke_sized_and_name_parameters_of_their_notebook(grid):
    notebook = next((ROOT / "notebooks").glob(f"{grid.name[:2]}_*.ipynb"))  # NN_*.yaml runs NN_*.ipynb
    points = sweep.load_grid(grid).points
    sweep.check_parameters(notebook, points, grid.name)
    assert 2 <= len(points) <= 4 and all(p["PRESET"] == "smoke" and p["EXPLORER"] is False for p in points)


def test_dask_is_pinned_alike_for_pip_and_conda():
    import tomllib

    import distributed

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    conda = (ROOT / "environment.yml").read_text()
    version = distributed.__version__
    assert {f"dask=={version}", f"distributed=={version}"} <= set(deps)
    assert f"- dask-core={version}" in conda and f"- distributed={version}" in conda


# ---------------------------------------------------------------- the cache under concurrent writers
# Forked processes (this test process has imported lib.cache, and with it torch, once already).

SIZE = 1_000_000


def _compute_together(sync: Path, role: str, expected: np.ndarray) -> dict:
    """Both writers are inside `compute` before either writes: they compute the same entry at once."""
    (sync / f"computing-{role}").touch()
    while len(list(sync.glob("computing-*"))) < 2:
        time.sleep(0.01)
    return {"x": expected}


def _writer(role: str, path: Path, sync: Path, rounds: int, naive: bool) -> None:
    from lib.run import Run

    expected = np.random.default_rng(0).standard_normal(SIZE)
    first = Run().npz(path, lambda: _compute_together(sync, role, expected))["x"]
    for _ in range(rounds):
        if naive:  # the control: a write in place, as a cache without atomic renames would do
            np.savez(path, x=expected)
        else:
            Run(force=True).npz(path, lambda: {"x": expected})
    (sync / f"done-{role}").write_text(json.dumps({"equal": bool(np.array_equal(first, expected))}))


def _reader(path: Path, sync: Path) -> None:
    expected = np.random.default_rng(0).standard_normal(SIZE)
    good = bad = 0
    while len(list(sync.glob("done-*"))) < 2:
        try:
            from lib.cache import load_npz  # entries carry a checksum header

            ok = np.array_equal(load_npz(path)["x"], expected)
        except FileNotFoundError:
            continue
        except Exception:  # a truncated or half-written file
            ok = False
        good, bad = good + ok, bad + (not ok)
    (sync / "reader").write_text(json.dumps({"good": good, "bad": bad}))


def hammer_cache(tmp_path: Path, rounds: int, naive: bool = False) -> tuple[list[dict], dict]:
    """Two writer processes compute and store the same entry at once, then rewrite it `rounds` times,
    while a reader process loads it in a loop; returns what the writers and the reader saw."""
    import multiprocessing

    path, sync = tmp_path / "cache" / "entry.npz", tmp_path / "sync"
    sync.mkdir()
    fork = multiprocessing.get_context("fork")
    procs = [fork.Process(target=_writer, args=(f"w{i}", path, sync, rounds, naive)) for i in (1, 2)]
    procs.append(fork.Process(target=_reader, args=(path, sync)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    writers = [json.loads((sync / f"done-w{i}").read_text()) for i in (1, 2)]
    return writers, json.loads((sync / "reader").read_text())


def test_two_processes_computing_the_same_cached_entry_never_corrupt_it(tmp_path):
    writers, reader = hammer_cache(tmp_path, rounds=20)
    assert all(w["equal"] for w in writers)
    assert reader["bad"] == 0 and reader["good"] > 0
    entry = tmp_path / "cache" / "entry.npz"
    from lib.cache import load_npz

    assert np.array_equal(load_npz(entry)["x"], np.random.default_rng(0).standard_normal(SIZE))
    # no temporary file left behind; beside the entry, the record of the code it was computed with (lib.lineage)
    assert sorted(p.name for p in entry.parent.iterdir()) == [".lineage", "entry.npz"]
    assert [p.name for p in (entry.parent / ".lineage").iterdir()] == ["entry.npz.json"]


def test_the_reader_does_catch_writes_in_place(tmp_path):
    """The control of the test above: without atomic renames the same reader sees broken entries."""
    _, reader = hammer_cache(tmp_path, rounds=20, naive=True)
    assert reader["bad"] > 0


# ---------------------------------------------------------------- sweeps of the fixture notebook


@pytest.fixture(scope="module")
def local_cluster():
    """One 2-worker LocalCluster for the in-process sweeps of this module (its start-up paid once)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=40) as cluster:
        yield cluster


def test_a_bad_point_is_recorded_the_others_finish_and_a_rerun_retries_only_it(tmp_path, local_cluster, capsys):
    log, out = tmp_path / "ran.log", tmp_path / "out"
    grid = grid_file(tmp_path, {"fixed": {"Y": 0.5, "LOG": str(log)}, "grid": {"X": [1, 2]},
                                "points": [{"X": 3, "FAIL": True}]})
    argv = [str(FIXTURE), str(grid), "--scheduler", local_cluster.scheduler_address, "--out", str(out),
            "--env", "WORKBOOK_DATA=relative/data"]
    assert sweep.main(argv) == 1
    assert "failed: ValueError: FAIL=True: this point fails on purpose" in capsys.readouterr().err
    table = rows(out)
    assert [table[x]["status"] for x in "123"] == ["ok", "ok", "failed"]
    assert float(table["1"]["product"]) == 0.5 and float(table["2"]["product"]) == 1.0
    assert table["2"]["parts/sum"] == "2.5" and table["2"]["parts/pair/0"] == "2" and "parts/long/0" not in table["2"]
    assert table["1"]["threads"] == "1"  # single-threaded kernels
    assert table["1"]["data_root"] == os.path.abspath("relative/data")  # relative to where the sweep started
    assert table["3"]["error"] == "ValueError: FAIL=True: this point fails on purpose (cell 3)"
    assert table["3"]["product"] == ""
    partial = json.loads(Path(table["3"]["notebook"]).read_text())  # the partially executed notebook
    assert any(o.get("ename") == "ValueError" for c in partial["cells"] for o in c.get("outputs", []))
    assert {table[x]["worker"] for x in "123"} <= {"0", "1"} and float(table["1"]["runtime_s"]) > 0
    assert sorted(logged(log)) == ["1 0.5", "2 0.5", "3 0.5"]
    # a re-run skips the finished points and retries the failed one
    assert sweep.main(argv + ["--no-progress"]) == 1
    assert sorted(logged(log)) == ["1 0.5", "2 0.5", "3 0.5", "3 0.5"]
    assert list(rows(out)) == ["1", "2", "3"]


def test_interrupted_sweep_keeps_its_rows_and_the_rerun_runs_only_the_missing_points(tmp_path):
    log, out = tmp_path / "ran.log", tmp_path / "out"
    grid = grid_file(tmp_path, {"fixed": {"SLEEP": 1.0, "LOG": str(log)}, "grid": {"X": [1, 2, 3]}})
    command = [sys.executable, "-m", "lib.make.sweep", str(FIXTURE), str(grid), "--workers", "1", "--out", str(out),
               "--no-progress"]
    with open(tmp_path / "first.log", "w") as stdout:
        first = subprocess.Popen(command, cwd=ROOT, env=env_for_subprocess(), stdout=stdout, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not ((out / "results.csv").exists() and rows(out)) and first.poll() is None:
            assert time.monotonic() < deadline, "no point finished within 300 s"
            time.sleep(0.1)
        first.send_signal(signal.SIGINT)  # Ctrl-C after the first point
        assert first.wait(timeout=60) == 130, (tmp_path / "first.log").read_text()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    done = {x for x, row in rows(out).items() if row["status"] == "ok"}
    assert 1 <= len(done) < 3
    ran_before = len(logged(log))
    second = subprocess.run(command, cwd=ROOT, env=env_for_subprocess(), capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert sorted(line.split()[0] for line in logged(log)[ran_before:]) == sorted({"1", "2", "3"} - done)
    assert f"{3 - len(done)} point(s) run, {len(done)} already done, 0 failed" in second.stdout
    assert {row["status"] for row in rows(out).values()} == {"ok"} and len(rows(out)) == 3


@pytest.fixture
def dask_cluster(tmp_path):
    """A real `dask scheduler` and two `dask worker` processes on localhost (w1 offers a GPU resource)."""
    scheduler_file = tmp_path / "scheduler.json"
    env = env_for_subprocess()
    env.pop("WORKBOOK_DATA", None)  # the sweep passes it with --env
    logs = open(tmp_path / "cluster.log", "w")
    common = {"cwd": tmp_path, "env": env, "stdout": logs, "stderr": subprocess.STDOUT}
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", scheduler_file], **common)]
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and procs[0].poll() is None, "the scheduler did not start"
            time.sleep(0.1)
        for name, extra in [("w1", ["--resources", "GPU=1"]), ("w2", [])]:
            procs.append(subprocess.Popen([DASK, "worker", "--scheduler-file", scheduler_file, "--name", name,
                                           "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                                           "--death-timeout", "60", *extra], **common))
        from distributed import Client

        with Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=180)
            yield client.scheduler.address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        logs.close()


def test_sweep_on_a_running_scheduler_with_two_workers_and_a_gpu_resource(tmp_path, dask_cluster):
    data = str(tmp_path / "data-root")
    grid = grid_file(tmp_path, {"fixed": {"SLEEP": 0.5}, "grid": {"X": [1, 2, 3, 4]}})
    out = tmp_path / "out"
    argv = ["--scheduler", dask_cluster, "--env", f"WORKBOOK_DATA={data}", "--no-progress"]
    assert sweep.main([str(FIXTURE), str(grid), "--out", str(out), *argv]) == 0
    table = rows(out)
    assert sorted(table) == ["1", "2", "3", "4"] and {r["status"] for r in table.values()} == {"ok"}
    assert [float(table[x]["product"]) for x in "1234"] == [0.5, 1.0, 1.5, 2.0]
    assert {r["worker"] for r in table.values()} == {"w1", "w2"}  # both workers took points
    assert {r["data_root"] for r in table.values()} == {data} and {r["threads"] for r in table.values()} == {"1"}
    # points that request a GPU go only to the worker that offers one
    gpu = grid_file(tmp_path, {"grid": {"X": [5, 6]}, "resources": {"GPU": 1}}, "gpu.yaml")
    assert sweep.main([str(FIXTURE), str(gpu), "--out", str(tmp_path / "gpu"), *argv]) == 0
    assert {r["worker"] for r in rows(tmp_path / "gpu").values()} == {"w1"}


def test_a_sweep_on_two_workers_equals_its_points_run_alone(tmp_path, local_cluster):
    """Each row of a 2x2 sweep on two workers equals the same point run alone, key by key (the sweep machinery
    adds nothing to and loses nothing from a point's glued results)."""
    from distributed import Client

    grid = grid_file(tmp_path, {"fixed": {"SLEEP": 0.2}, "grid": {"X": [1, 2], "Y": [0.5, 1.5]}})
    with Client(local_cluster) as client:
        report = sweep.sweep(FIXTURE, grid, tmp_path / "out", env={}, progress=False, client=client)
    assert report.failed == [] and len(report.ran) == 4
    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        table = {(r["X"], r["Y"]): r for r in csv.DictReader(fh)}
    assert sorted(table) == [("1", "0.5"), ("1", "1.5"), ("2", "0.5"), ("2", "1.5")]
    assert {r["status"] for r in table.values()} == {"ok"} and {r["worker"] for r in table.values()} == {"0", "1"}
    text = FIXTURE.read_text()
    diagonal = [p for p in sweep.load_grid(grid).points if (p["X"], p["Y"]) in {(1, 0.5), (2, 1.5)}]
    assert len(diagonal) == 2  # every value of both axes once
    for point in diagonal:
        pid = sweep.point_id(sweep.notebook_digest(text), point)
        alone = sweep.make_row(sweep.run_point(text, point, point=pid, cwd=str(FIXTURE.parent), env={}), point,
                               Path("unused"))
        row = table[str(point["X"]), str(point["Y"])]
        assert alone["status"] == "ok" and row["point_id"] == pid
        values = {k for k in set(row) | set(alone) if k not in sweep.TAIL and k != "runtime_s"}
        assert {"product", "parts/sum", "parts/pair/0", "X", "Y"} <= values
        assert {k: row.get(k) for k in values} == {k: alone.get(k) for k in values}


# ---------------------------------------------------------------- a real notebook: a 3-point smoke grid

NOTEBOOK_04 = ROOT / "notebooks" / "04_image_retrieval_score.ipynb"


def test_smoke_points_of_notebook_04_run_on_two_workers_and_their_parameters_matter(tmp_path, local_cluster,
                                                                                     data_root):
    """Notebook 04, the cheapest smoke run, at three points slimmed to the pixel extractor: two that differ in
    ALPHA_E only and one that differs from the first in TRAIN_PER_CLASS only. (That a sweep's rows equal its
    points run alone is checked on the fixture notebook above, where it costs a second, not a minute.)

    The points share one cache folder, so the two points with the same TRAIN_PER_CLASS compute its features and
    neighbour lists at once on the two workers: another check of the cache under concurrency."""
    from distributed import Client

    spec = {"fixed": {"PRESET": "smoke", "PROGRESS": False, "EXPLORER": False, "EXTRACTORS": ["pixels"],
                      "SIM_REPS": 10},
            "grid": {"TRAIN_PER_CLASS": [100], "ALPHA_E": [0.05, 0.1]},
            "points": [{"TRAIN_PER_CLASS": 200, "ALPHA_E": 0.05}]}
    grid = grid_file(tmp_path, spec)
    env = {"WORKBOOK_DATA": str(data_root), "WORKBOOK_CACHE": str(tmp_path / "cache"),
           # decoded CIFAR-10 images: the session's, as in test_notebook_04
           "WORKBOOK_DATASET_CACHE": os.environ["WORKBOOK_CACHE_SESSION"]}
    with Client(local_cluster) as client:
        report = sweep.sweep(NOTEBOOK_04, grid, tmp_path / "out", env=env, progress=False, client=client)
    assert report.failed == [] and len(report.ran) == 3
    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        table = {(r["TRAIN_PER_CLASS"], r["ALPHA_E"]): r for r in csv.DictReader(fh)}
    assert sorted(table) == [("100", "0.05"), ("100", "0.1"), ("200", "0.05")]
    assert {r["status"] for r in table.values()} == {"ok"} and {r["worker"] for r in table.values()} == {"0", "1"}
    assert [table[k, "0.05"]["n_train"] for k in ("100", "200")] == ["1000", "2000"]
    assert len(table["100", "0.05"]) > 50  # the pixel extractor's glued results, parameters and status
    # the parameters matter: a wider interval with a smaller alpha, another database with another N
    lower = {alpha: float(table["100", alpha]["gap_irs_inf_real/pixels/0"]) for alpha in ("0.05", "0.1")}
    assert lower["0.05"] < lower["0.1"]
    assert table["100", "0.05"]["e3/pixels/g0.5/0"] != table["200", "0.05"]["e3/pixels/g0.5/0"]
