"""Parameter sweeps of a notebook on Dask distributed: `python -m lib.make.sweep NOTEBOOK GRID.yaml`.

A grid file (YAML) names the fixed parameters of every point and lists of values; the sweep is the
product of the lists (plus any explicit points). Each point is one papermill execution of the
notebook on a `dask.distributed` worker: a LocalCluster of single-threaded workers by default (one per
core, or `--workers N`), or the workers of an existing scheduler (`--scheduler tcp://host:port`).

    fixed: {PRESET: smoke, PROGRESS: false, EXPLORER: false}   # every point
    grid: {K: [3, 10], TEST: [paired_t, welch]}                  # their product: 4 points
    points: [{K: 30, TEST: wilcoxon}]                            # optional explicit points
    resources: {GPU: 1}                                          # optional: run only on such workers
    timeout: 600                                                 # optional: seconds per cell

A point's id is a hash of the notebook's code and the point's parameters, so it is the same on every
run. Its executed notebook goes to `OUT/<id>.ipynb` (also when it failed: the partial run), and
`OUT/results.csv` gets its row (parameters, every scalar glued result, status, error, notebook,
runtime, worker) as soon as it finishes; the file is rewritten atomically, so a killed sweep keeps
what it had. A re-run skips points whose row says `ok` and retries the others. The exit status is 1
when any point failed. See docs/sweeps.md for clusters, GPU workers and the environment they need.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import itertools
import json
import os
import re
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from lib.cache import atomic_write, config_hash
from lib.make.report import IPCKernelManager, temporary_environ

GRID_KEYS = ("fixed", "grid", "points", "resources", "timeout")
HEAD = ("point_id", "status")
TAIL = ("error", "notebook", "runtime_s", "worker", "host", "finished")
# one thread per worker: BLAS, OpenMP and torch in the kernel would otherwise each take every core
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}
# folders the notebooks find through the environment; a relative one would move with the kernel's cwd
PATH_ENV = ("WORKBOOK_DATA", "WORKBOOK_CACHE", "WORKBOOK_DATASET_CACHE")
MAX_LIST = 16  # glued lists up to this length are spread over columns name/0, name/1, ...; longer ones are left out


@dataclass(frozen=True)
class Grid:
    """A parsed grid file: the points (each a full parameter dict) and what every point requests."""

    points: list[dict[str, Any]]
    resources: dict[str, float] = field(default_factory=dict)
    timeout: float | None = None


# ---------------------------------------------------------------- grid files and point ids


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (see the module docstring); errors name the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"grid file {path} does not exist.")
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: a grid file is a mapping with keys {list(GRID_KEYS)}.")
    unknown = sorted(set(spec) - set(GRID_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; allowed: {list(GRID_KEYS)}.")
    return Grid(points=expand(spec, where=str(path)), resources=_resources(spec.get("resources"), str(path)),
                timeout=_timeout(spec.get("timeout"), str(path)))


def expand(spec: Mapping[str, Any], where: str = "grid") -> list[dict[str, Any]]:
    """The points of a grid spec: `fixed` merged with each element of the product of `grid`'s lists, then
    with each of the explicit `points`; no grid and no points is the one point `fixed`. Duplicates are
    dropped (first kept)."""
    fixed = _mapping(spec.get("fixed"), f"{where}: fixed")
    grid = _mapping(spec.get("grid"), f"{where}: grid")
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}: grid.{name}={values!r} must be a non-empty list of values.")
    explicit = spec.get("points") or []
    if not isinstance(explicit, list) or not all(isinstance(p, dict) for p in explicit):
        raise ValueError(f"{where}: points must be a list of mappings (parameter: value).")
    points = [{**fixed, **dict(zip(grid, combo))} for combo in itertools.product(*grid.values())] if grid else []
    points += [{**fixed, **p} for p in explicit]
    if not grid and not explicit:
        points = [dict(fixed)]
    unique: dict[str, dict] = {}
    for p in points:
        unique.setdefault(config_hash(p, 16), p)
    return list(unique.values())


def _mapping(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a mapping (parameter: value), not {value!r}.")
    return dict(value)


def _resources(value: Any, where: str) -> dict[str, float]:
    resources = _mapping(value, f"{where}: resources")
    for name, amount in resources.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
            raise ValueError(f"{where}: resources.{name}={amount!r} must be a positive number.")
    return resources


def _timeout(value: Any, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise ValueError(f"{where}: timeout={value!r} must be a positive number of seconds per cell.")
    return value


def notebook_digest(notebook_text: str) -> str:
    """SHA-256 of the notebook's code cells (their sources only: outputs, metadata and markdown do not
    change what a point computes, so stripping outputs or fixing a typo in the text keeps the ids)."""
    cells = json.loads(notebook_text).get("cells", [])
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in cells if c.get("cell_type") == "code"]
    return hashlib.sha256(json.dumps(sources).encode()).hexdigest()


def point_id(digest: str, parameters: Mapping[str, Any]) -> str:
    """A point's stable id: 12 hex digits of the hash of the notebook's code digest and its parameters."""
    return config_hash({"notebook": digest, "parameters": dict(parameters)}, 12)


def check_parameters(notebook: Path, points: list[dict[str, Any]], where: str) -> None:
    """Every parameter of every point must be one of the notebook's `parameters` cell."""
    import papermill as pm

    known = set(pm.inspect_notebook(str(notebook)))
    used = sorted({name for p in points for name in p})
    unknown = [name for name in used if name not in known]
    if unknown:
        hint = f"known: {sorted(known)}" if known else "the notebook has no cell tagged `parameters`"
        raise ValueError(f"{where}: unknown parameter(s) {unknown} for {notebook.name}; {hint}.")


# ---------------------------------------------------------------- one point, on a worker


def run_point(notebook_text: str, parameters: dict[str, Any], *, point: str, cwd: str,
              timeout: float | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Execute one point with papermill and return {point_id, status, error, results, notebook_text,
    runtime_s, worker, host}. Runs on a dask worker (or anywhere): the notebook travels as text and
    comes back executed, so workers need the package and the data, not the client's folders.
    Never raises for a failure of the notebook; the error goes into the record."""
    import papermill as pm

    from lib.glue import read_results

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"sweep-{point}-") as tmp:
        source, executed = Path(tmp) / "input.ipynb", Path(tmp) / f"{point}.ipynb"
        source.write_text(notebook_text, encoding="utf-8")
        error = ""
        with temporary_environ(kernel_environ(env)):
            try:
                # IPC sockets, not TCP ports: two workers' kernels starting at once could pick the same free
                # port (a point failed "Address already in use" in a CI run beside another CPU-bound process)
                pm.execute_notebook(source, executed, parameters=parameters, progress_bar=False,
                                    cwd=cwd if Path(cwd).is_dir() else tmp, execution_timeout=timeout,
                                    kernel_manager_class=IPCKernelManager)
            except pm.PapermillExecutionError as exc:
                error = f"{exc.ename}: {_plain(exc.evalue)} (cell {exc.exec_count})"
            except Exception as exc:  # a kernel that died, a timeout, a bad parameter type
                error = f"{type(exc).__name__}: {_plain(str(exc))}"
        text = executed.read_text(encoding="utf-8") if executed.exists() else ""
        results = read_results(executed) if text else {}
    return {"point_id": point, "status": "failed" if error else "ok", "error": error, "results": results,
            "notebook_text": text, "runtime_s": time.perf_counter() - start, "worker": _worker_name(),
            "host": socket.gethostname()}


def kernel_environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a point's kernel gets on top of the worker's environment: one thread (THREAD_ENV), then the
    sweep's `--env`, with the data and cache folders made absolute (the kernel runs in the notebook's folder)."""
    values = {**THREAD_ENV, **(env or {})}
    values.update({k: os.path.abspath(v) for k in PATH_ENV if (v := values.get(k, os.environ.get(k)))})
    return values


def _plain(text: str) -> str:
    """An error message on one line without terminal colour codes."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return "local"


# ---------------------------------------------------------------- results.csv


def flatten(results: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar leaves of glued results: nested dicts and lists up to MAX_LIST long become `name/key`
    columns; longer lists (curves, per-sample values) stay in the executed notebook only."""
    flat: dict[str, Any] = {}
    for key, value in results.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}/"))
        elif isinstance(value, list):
            if len(value) <= MAX_LIST:
                flat.update(flatten({str(i): v for i, v in enumerate(value)}, f"{name}/"))
        else:
            flat[name] = value
    return flat


def cell(value: Any) -> str:
    """A value as results.csv writes it: floats at full precision, lists and dicts as JSON, None empty."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def read_table(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The columns and rows (by point id, as text) of an existing results.csv; nothing if there is none."""
    if not path.exists():
        return [], {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = {row["point_id"]: row for row in reader}
        return list(reader.fieldnames or []), rows


def write_table(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    """Write results.csv atomically (a reader or a killed sweep never sees half a file)."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, restval="")
            writer.writeheader()
            writer.writerows(rows)

    atomic_write(path, write)


def make_row(record: Mapping[str, Any], parameters: Mapping[str, Any], notebook_path: Path) -> dict[str, str]:
    """One results.csv row from a run_point record; a result named like a parameter or a bookkeeping
    column is written as `result/<name>`."""
    row = {"point_id": record["point_id"], "status": record["status"]}
    row.update({name: cell(v) for name, v in parameters.items()})
    for name, value in flatten(record.get("results", {})).items():
        row[f"result/{name}" if name in row or name in TAIL else name] = cell(value)
    row.update(error=record.get("error", ""), notebook=str(notebook_path) if record.get("notebook_text") else "",
               runtime_s=f"{record.get('runtime_s', 0.0):.2f}", worker=record.get("worker", ""),
               host=record.get("host", ""), finished=datetime.now(UTC).isoformat(timespec="seconds"))
    return row


class ResultsTable:
    """results.csv kept in step with the points as they finish: rows in the grid's order (rows of other
    points already in the file are kept after them), columns: id and status, parameters, results, tail."""

    def __init__(self, path: Path, ids: list[str], parameters: list[dict[str, Any]]):
        self.path = path
        old_columns, self.rows = read_table(path)
        self.ids = ids + [i for i in self.rows if i not in set(ids)]
        params = list(dict.fromkeys(name for p in parameters for name in p))
        self.columns = list(dict.fromkeys([*HEAD, *params, *(c for c in old_columns if c not in TAIL)]))

    def status(self, point: str) -> str:
        return self.rows.get(point, {}).get("status", "")

    def add(self, row: dict[str, str]) -> None:
        self.rows[row["point_id"]] = row
        self.columns += [c for c in row if c not in self.columns and c not in TAIL]
        write_table(self.path, self.columns + list(TAIL), [self.rows[i] for i in self.ids if i in self.rows])


# ---------------------------------------------------------------- the sweep, on a client


@dataclass
class SweepReport:
    """What a sweep did: the table, how many points ran / were skipped, which ids failed."""

    table: Path
    ran: list[str]
    skipped: list[str]
    failed: list[str]
    seconds: float


def sweep(notebook: str | Path, grid_file: str | Path, out: str | Path, *, scheduler: str | None = None,
          workers: int | None = None, env: Mapping[str, str] | None = None, progress: bool = True,
          client: Any = None) -> SweepReport:
    """Run every point of `grid_file` that has no `ok` row in `out`/results.csv yet; see the module
    docstring. `client`: an existing dask Client (else one is made from `scheduler` or a LocalCluster)."""
    start = time.perf_counter()
    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise ValueError(f"notebook {notebook} does not exist.")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers={workers} must be >= 1.")
    grid = load_grid(grid_file)
    check_parameters(notebook, grid.points, str(grid_file))
    text = notebook.read_text(encoding="utf-8")
    digest = notebook_digest(text)
    ids = [point_id(digest, p) for p in grid.points]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = ResultsTable(out / "results.csv", ids, grid.points)
    todo = [(i, p) for i, p in zip(ids, grid.points) if table.status(i) != "ok"]
    skipped = [i for i in ids if table.status(i) == "ok"]
    failed: list[str] = []
    if todo:
        with _client(client, scheduler, workers, grid.resources) as dask_client:
            failed = _run(dask_client, todo, grid, text, str(notebook.parent), dict(env or {}), table, out, progress)
    return SweepReport(table=table.path, ran=[i for i, _ in todo], skipped=skipped, failed=failed,
                       seconds=time.perf_counter() - start)


def _run(client: Any, todo: list, grid: Grid, text: str, cwd: str, env: dict, table: ResultsTable, out: Path,
         progress: bool) -> list[str]:
    from distributed import as_completed
    from tqdm import tqdm

    params = dict(todo)
    futures = {client.submit(run_point, text, p, point=i, cwd=cwd, timeout=grid.timeout, env=env,
                             key=f"sweep-point-{i}-{uuid.uuid4().hex[:8]}", resources=grid.resources or None,
                             pure=False): i for i, p in todo}
    failed: list[str] = []
    with tqdm(total=len(todo), unit="point", desc="sweep", disable=not progress, file=sys.stderr) as bar:
        for future in as_completed(futures):
            point = futures[future]
            try:
                record = future.result()
            except Exception as exc:  # the worker died (KilledWorker) or the task could not run
                record = {"point_id": point, "status": "failed", "error": f"{type(exc).__name__}: {_plain(str(exc))}"}
            path = (out / f"{point}.ipynb").resolve()
            if record.get("notebook_text"):
                atomic_write(path, lambda tmp, t=record["notebook_text"]: tmp.write_text(t, encoding="utf-8"))
            table.add(make_row(record, params[point], path))
            if record["status"] != "ok":
                failed.append(point)
                bar.write(f"point {point} failed: {record['error'][:300]}", file=sys.stderr)
            bar.set_postfix(failed=len(failed))
            bar.update()
    return failed


@contextlib.contextmanager
def _client(client: Any, scheduler: str | None, workers: int | None, resources: dict) -> Iterator[Any]:
    """The given client, or one on `scheduler`, or on a LocalCluster of single-threaded worker processes."""
    if client is not None:
        _check_resources(client, resources)
        yield client
        return
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            remote = Client(scheduler, timeout=30)
        except OSError as exc:
            raise ValueError(f"--scheduler {scheduler}: no scheduler answered ({exc}).") from None
        with remote:
            _check_resources(remote, resources)
            yield remote
        return
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **THREAD_ENV}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):  # dashboard ":0": any free port
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=":0", resources=_local_resources(resources) or None,
                               silence_logs=50)  # a worker that loses the scheduler at shutdown logs an ERROR
    with cluster, Client(cluster) as local:
        yield local


def _local_resources(resources: dict) -> dict:
    """Every local worker offers what the points request; a GPU only if this machine has CUDA."""
    if resources.get("GPU"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"the points request resources {resources} but this machine has no CUDA device; "
                             "run them on GPU workers (`dask worker ... --resources GPU=1`) with --scheduler.")
    return dict(resources)


def _check_resources(client: Any, resources: dict) -> None:
    if not resources:
        return
    offers = [w.get("resources", {}) for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    if not any(all(o.get(k, 0) >= v for k, v in resources.items()) for o in offers):
        print(f"warning: no worker connected now offers {resources}; the points wait until one joins "
              "(start workers with `dask worker ... --resources GPU=1`).", file=sys.stderr)


# ---------------------------------------------------------------- command line


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--env {item!r} must look like NAME=VALUE.")
        env[name] = value
    return env


def main(argv: list[str] | None = None) -> int:
    """Command line: exit status 0 when every point is ok, 1 when some failed, 2 on bad input."""
    parser = argparse.ArgumentParser(prog="python -m lib.make.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="the notebook to run, e.g. notebooks/04_image_retrieval_score.ipynb")
    parser.add_argument("grid", help="the grid file (YAML), e.g. params/sweeps/04_irs_smoke.yaml")
    parser.add_argument("--scheduler", help="address of a running dask scheduler (tcp://host:8786); "
                                            "default: a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, help="LocalCluster workers (one thread each); default: one per core")
    parser.add_argument("--out", help="output folder (default: runs/sweeps/<grid name>)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment variable for the kernels on the workers (repeatable), "
                             "e.g. WORKBOOK_DATA=/shared/data")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    # Ctrl-C must stop the sweep (and keep its rows) even when it was started from a background job or a
    # script: POSIX shells start those with SIGINT ignored, Python then keeps it ignored, and the sweep ran on
    # to the end (the interrupt test failed that way in CI-like runs).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out = Path(args.out) if args.out else Path("runs") / "sweeps" / Path(args.grid).stem
    try:
        env = _parse_env(args.env)  # folders given relative to where the sweep is started
        env.update({k: os.path.abspath(v) for k, v in env.items() if k in PATH_ENV and v})
        report = sweep(args.notebook, args.grid, out, scheduler=args.scheduler, workers=args.workers,
                       env=env, progress=not args.no_progress)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; the finished points are in {out / 'results.csv'} (a re-run skips them)", file=sys.stderr)
        return 130
    print(f"{len(report.ran)} point(s) run, {len(report.skipped)} already done, {len(report.failed)} failed "
          f"in {report.seconds:.1f} s; results: {report.table}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    from lib.make.sweep import main as _main  # the module's own functions, so that workers can unpickle them

    sys.exit(_main())
