"""Sweep benchmark (`make sweep`, lib.make.sweep): a 4-point smoke sweep on a 2-worker LocalCluster against the same
points run one after another, and the per-point overhead of the sweep machinery.

1. Speed-up. The grid's points (default: notebook 04's smoke preset with two cheap extractors over
   TRAIN_PER_CLASS in {100, 200} x ALPHA_E in {0.05, 0.1}, the 2x2 grid of tests/test_make_sweep.py; `--grid`
   for another, e.g. params/sweeps/04_irs_smoke.yaml) run (a) serially, one papermill execution after
   another in this process, and
   (b) by `lib.make.sweep.sweep` on a LocalCluster of `--workers` single-threaded workers, cluster start-up and
   shut-down included. Each mode gets its own empty result cache (points of one mode may share cached
   features, as they would in any sweep); the decoded CIFAR-10 images are decoded once beforehand and shared.
2. Overhead, with the sub-second fixture notebook tests/fixtures/sweep_point.ipynb:
   - papermill start-up: the median wall time of one papermill execution (kernel start, parameter cell,
     two tiny cells, results read back), serially in this process;
   - scheduling: a sweep of `--points` fixture points on an already running 1-worker LocalCluster,
     (sweep wall time - the sum of the points' own papermill times) / points: submission, transfer of the
     notebook both ways, results.csv rewrite, progress bar;
   - cluster start-up: the time to start the LocalCluster (paid once per sweep).
   For the smoke sweep it also reports papermill's share of each point: the worker's time for the point minus
   the notebook's own `runtime_s` glue (kernel start-up and papermill's bookkeeping).
Usage: python benchmarks/bench_sweep.py [--grid GRID.yaml] [--workers 2] [--repeats 1]
       [--points 4] [--skip-smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sweep_point.ipynb"
DEFAULT_GRID = {"fixed": {"PRESET": "smoke", "PROGRESS": False, "EXPLORER": False, "EXTRACTORS": ["pixels", "randproj"],
                          "SIM_REPS": 10},
                "grid": {"TRAIN_PER_CLASS": [100, 200], "ALPHA_E": [0.05, 0.1]}}


def notebook_for(grid: Path) -> Path:
    """params/sweeps/NN_*.yaml runs notebooks/NN_*.ipynb."""
    return next((ROOT / "notebooks").glob(f"{grid.name[:2]}_*.ipynb"))


def serial(notebook: Path, points: list[dict], env: dict) -> tuple[float, list[dict]]:
    from lib.make import sweep

    text = notebook.read_text()
    digest = sweep.notebook_digest(text)
    start = time.perf_counter()
    records = [sweep.run_point(text, p, point=sweep.point_id(digest, p), cwd=str(notebook.parent), env=env)
               for p in points]
    return time.perf_counter() - start, records


def smoke_comparison(grid: Path, workers: int, work: Path, repeat: int) -> dict:
    import csv

    from lib.make import sweep

    notebook = notebook_for(grid)
    points = sweep.load_grid(grid).points
    serial_env = {"WORKBOOK_CACHE": str(work / f"serial-cache-{repeat}")}
    t_serial, records = serial(notebook, points, serial_env)
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    os.environ["WORKBOOK_CACHE"] = str(work / f"sweep-cache-{repeat}")  # the LocalCluster's workers inherit it
    start = time.perf_counter()
    report = sweep.sweep(notebook, grid, work / f"sweep-{repeat}", workers=workers, progress=False)
    t_sweep = time.perf_counter() - start
    assert not report.failed, report.failed
    with open(report.table, newline="") as fh:
        rows = list(csv.DictReader(fh))
    inner = [float(r.get("result/runtime_s") or "nan") for r in rows]
    papermill_share = [float(r["runtime_s"]) - i for r, i in zip(rows, inner)]
    return {"serial_s": t_serial, "sweep_s": t_sweep, "speedup": t_serial / t_sweep,
            "serial_point_s": [r["runtime_s"] for r in records],
            "sweep_point_s": [float(r["runtime_s"]) for r in rows],
            "papermill_share_s": papermill_share}


def overhead(points: int, repeats: int, work: Path) -> dict:
    from distributed import Client, LocalCluster

    from lib.make import sweep

    fixture = [{"X": i, "Y": 0.5} for i in range(points)]
    single = []
    for _ in range(repeats):
        _, records = serial(FIXTURE, fixture[:1], {})
        single.append(records[0]["runtime_s"])
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40)
    client = Client(cluster)
    startup = time.perf_counter() - start
    per_point = []
    try:
        for r in range(repeats):
            grid = work / f"fixture-{r}.yaml"
            grid.write_text(json.dumps({"grid": {"X": list(range(points))}, "fixed": {"Y": 0.5 + r}}))
            begin = time.perf_counter()
            report = sweep.sweep(FIXTURE, grid, work / f"fixture-{r}", progress=False, client=client)
            wall = time.perf_counter() - begin
            import csv

            with open(report.table, newline="") as fh:
                busy = sum(float(row["runtime_s"]) for row in csv.DictReader(fh))
            per_point.append((wall - busy) / points)
    finally:
        client.close()
        cluster.close()
    return {"papermill_point_s": statistics.median(single), "papermill_runs_s": single,
            "scheduling_per_point_s": statistics.median(per_point), "scheduling_runs_s": per_point,
            "cluster_startup_s": startup}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", type=Path, help="NN_*.yaml, run on notebooks/NN_*.ipynb (default: see above)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="repeats of the smoke comparison")
    parser.add_argument("--points", type=int, default=4, help="fixture points of the overhead sweep")
    parser.add_argument("--overhead-repeats", type=int, default=3)
    parser.add_argument("--skip-smoke", action="store_true", help="only the overhead measurement")
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    os.environ.setdefault("WORKBOOK_DATA", str((ROOT / ".." / "shared" / "data").resolve()))
    from lib.device import cpu_model

    print(f"machine: {os.cpu_count()} cores ({cpu_model()}), load average at start {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        work = Path(tmp)
        os.environ["WORKBOOK_DATASET_CACHE"] = str(work / "datasets")
        result: dict = {"load_start": os.getloadavg()[0]}
        result["overhead"] = over = overhead(args.points, args.overhead_repeats, work)
        print(f"papermill start-up per point (fixture notebook, median of {args.overhead_repeats}): "
              f"{over['papermill_point_s']:.2f} s")
        print(f"scheduling per point ({args.points} fixture points on 1 worker, median of {args.overhead_repeats}): "
              f"{over['scheduling_per_point_s']:.2f} s; LocalCluster start-up {over['cluster_startup_s']:.1f} s")
        if not args.skip_smoke:
            from lib.data import cifar10

            if args.grid is None:
                args.grid = work / "04_slim_smoke.yaml"
                args.grid.write_text(json.dumps(DEFAULT_GRID))

            cifar10.load_cifar10("jpeg")  # decoded once, shared by both modes
            runs = [smoke_comparison(args.grid, args.workers, work, r) for r in range(args.repeats)]
            result["smoke"] = runs
            best = statistics.median(r["speedup"] for r in runs)
            for r in runs:
                print(f"{args.grid.name}: serial {r['serial_s']:.1f} s, sweep on {args.workers} workers "
                      f"{r['sweep_s']:.1f} s, speed-up {r['speedup']:.2f}x; papermill's share per point "
                      f"{statistics.median(r['papermill_share_s']):.1f} s (median)")
            print(f"median speed-up over {args.repeats} repeat(s): {best:.2f}x")
        result["load_end"] = os.getloadavg()[0]
        print(f"load average at the end {result['load_end']:.1f}")
        print(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
