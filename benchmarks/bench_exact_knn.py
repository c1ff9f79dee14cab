"""The exact k-NN engine (`lib.knn.exact_knn`) and PRDC (`lib.manifold`) beside the peer packages, in one run.

Cases: Gaussian and Student-t(3) features at 5,000 x 64, 10,000 x 512 and 50,000 x 2,048 (the IRS regime: a base
of 50,000, `--big-queries` queries), and the cached CIFAR-10 features of notebook 04 (ResNet-56, EfficientNet-Lite0,
3,072-d pixels; base = the 20,000 training images, queries = the 5,000 reference images). Synthetic features are
float32, as extractor features are. Per case:
- k-NN, k = 5: ours (float64 exact) beside faiss `IndexFlatL2` (float32, not exact) and `torch.cdist` + `topk`
  (float32, not exact);
- PRDC, k = 5, real vs fake of equal size (the 50,000 case has none: `prdc` holds three N x N float32 matrices, 30 GB):
  ours beside `prdc.compute_prdc`.
Each contender runs in its own process, pinned to one core with one thread (its memory: the peak RSS during the
call less the RSS before it, inputs loaded), one repeat per process, the contenders taking turns so that a shared
machine's load falls on all of them; times are medians. Exactness: our k-NN indices against a float64 brute force
(direct differences, stable order) on a sample of queries, and our PRDC values against `prdc`'s (timed on the
float32 features; compared also on float64 copies, untimed, since on float32 it rounds its distances to float32).
`--profile`: how many rows and pairs the refinement decides. Per contender the row prints the median of the
per-repeat ratios peer / ours (each repeat's contenders ran back to back) and their range over the repeats.
`--big-prdc`: the 50,000 x 2,048 cases get a PRDC row too (real = the base, fake = 50,000 more draws); `prdc` then
runs under `--prdc-limit-gb` of address space (RLIMIT_AS), and its MemoryError, if any, is the measured outcome.
Usage: python benchmarks/bench_exact_knn.py [--repeats 3] [--big-queries 2000] [--cases gauss-5000x64 ...]
       [--tasks knn prdc] [--big-prdc] [--prdc-limit-gb 16]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 5
SYNTHETIC = {"5000x64": (5_000, 5_000, 64), "10000x512": (10_000, 10_000, 512), "50000x2048": (50_000, None, 2_048)}
REAL = {"resnet56": "ResNet-56", "efficientnet_lite0": "EfficientNet-Lite0", "pixels": "pixels"}
KNN_PEERS = ("ours", "faiss", "torch")
PRDC_PEERS = ("ours", "prdc")


def case_names() -> list[str]:
    return [f"{dist}-{size}" for size in SYNTHETIC for dist in ("gauss", "t3")] + [f"real-{name}" for name in REAL]


def cached_features(name: str, label: str) -> np.ndarray | None:
    """Notebook 04's cached features (`feats-NAME-LABEL-*.npz` in $WORKBOOK_CACHE/04), None when absent."""
    from lib.cache import load_npz
    from lib.paths import cache_dir

    found = sorted((cache_dir() / "04").glob(f"feats-{name}-{label}-lr16-*.npz"))
    return load_npz(found[0])["feats"].astype(np.float32) if found else None


def make_inputs(case: str, big_queries: int, folder: Path, big_prdc: bool = False) -> str | None:
    """Write the case's base, queries, real and fake (float32) to folder/case.npz; a reason when it cannot."""
    if case.startswith("real-"):
        name = case[5:]
        train, ref = cached_features(name, "train20000"), cached_features(name, "ref5000")
        if train is None or ref is None:
            return f"no cached {name} features in $WORKBOOK_CACHE/04 (run notebook 04 once to make them)"
        arrays = {"base": train, "queries": ref, "real": ref, "fake": train[: len(ref)]}
    else:
        dist, size = case.split("-")
        n_base, n_queries, dim = SYNTHETIC[size]
        rng = np.random.default_rng(0)
        draw = (lambda n: rng.standard_t(3, size=(n, dim))) if dist == "t3" else (lambda n: rng.normal(size=(n, dim)))
        base, queries = draw(n_base).astype(np.float32), draw(n_queries or big_queries).astype(np.float32)
        arrays = {"base": base, "queries": queries}
        if n_queries is not None:
            arrays |= {"real": base, "fake": queries}
        elif big_prdc:  # drawn after the queries, so that the k-NN inputs stay those of a run without it
            arrays |= {"real": base, "fake": draw(n_base).astype(np.float32)}
    np.savez(folder / f"{case}.npz", **arrays)
    return None


def run_contender(task: str, impl: str, path: str, profile: bool, limit_gb: float | None = None) -> dict:
    """One timed call in this process: {"seconds", "peak_mb", "result" (a path to the output arrays)}. With
    limit_gb, the call runs under that much address space (RLIMIT_AS); a MemoryError then gives "error" (numpy's
    message: the allocation that failed) instead of "result", and "seconds" is the time until it."""
    with np.load(path) as arrays:
        data = dict(arrays)
    counters = _count_refinement() if profile and impl == "ours" else None
    import faiss  # noqa: F401  (imported before the baseline, as the library imports it)
    import torch

    import lib.knn  # noqa: F401
    import lib.manifold  # noqa: F401

    limits = {}
    if limit_gb:
        import resource

        limits = {"limit_gb": limit_gb, "vm_size_before_gb": _status_kb("VmSize") / 2**20}
        resource.setrlimit(resource.RLIMIT_AS, (int(limit_gb * 2**30),) * 2)
    before = _reset_peak_rss()
    start = time.perf_counter()
    try:
        out = CONTENDERS[task][impl](data, torch)
    except MemoryError as error:
        seconds = time.perf_counter() - start
        import traceback

        frames = traceback.extract_tb(error.__traceback__)
        where = [f"{Path(f.filename).name}:{f.lineno} {f.name}: {f.line}" for f in frames
                 if "joblib" not in f.filename]  # the caller's frames, not the thread pool's re-raise
        return {"seconds": seconds, "peak_mb": (_status_kb("VmHWM") - before) / 1024, "error": str(error),
                "where": where[-4:], "profile": counters, **limits}
    seconds = time.perf_counter() - start
    peak_mb = (_status_kb("VmHWM") - before) / 1024
    result = path.replace(".npz", f"-{task}-{impl}.npz")
    np.savez(result, **out)
    return {"seconds": seconds, "peak_mb": peak_mb, "result": result, "profile": counters, **limits}


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> int:
    """Reset this process's peak RSS to its current RSS (Linux: 5 to /proc/self/clear_refs); return it, kB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kb("VmRSS")


def _count_refinement() -> dict:
    """Wrap the refinement's steps of lib.knn and lib.manifold to count what they decide (--profile)."""
    import lib.knn as knn
    import lib.manifold as manifold

    counts = {"rows": 0, "fallback_rows": 0, "fallback_s": 0.0, "pairs_exact": 0}

    def wrap(module, name, count):
        original = getattr(module, name, None)
        if original is None:  # another version of the library (the "before" run of benchmarks/README.md)
            return

        def wrapped(*args, **kwargs):
            start = time.perf_counter()
            out = original(*args, **kwargs)
            count(args, time.perf_counter() - start)
            return out
        setattr(module, name, wrapped)

    wrap(knn, "_exact_candidates", lambda a, t: counts.__setitem__("rows", counts["rows"] + len(a[0])))
    wrap(knn, "_within_kth", lambda a, t: counts.update(fallback_rows=counts["fallback_rows"] + len(a[0]),
                                                        fallback_s=counts["fallback_s"] + t))
    wrap(knn, "_brute_force_sq", lambda a, t: counts.update(fallback_rows=counts["fallback_rows"] + len(a[0]),
                                                            fallback_s=counts["fallback_s"] + t))  # before
    wrap(knn, "_pair_sq", lambda a, t: counts.__setitem__("pairs_exact", counts["pairs_exact"] + len(a[2])))
    wrap(manifold, "_pair_sq", lambda a, t: counts.__setitem__("pairs_exact", counts["pairs_exact"] + len(a[2])))
    return counts


def knn_ours(data, torch):
    from lib.knn import exact_knn

    out = exact_knn(data["queries"], data["base"], K)
    return {"indices": out["indices"], "distances": out["distances"]}


def knn_faiss(data, torch):
    import faiss

    index = faiss.IndexFlatL2(data["base"].shape[1])
    index.add(data["base"])
    sq, idx = index.search(data["queries"], K)
    return {"indices": idx, "distances": np.sqrt(sq)}


def knn_torch(data, torch):
    dist, idx = torch.cdist(torch.from_numpy(data["queries"]), torch.from_numpy(data["base"])).topk(K, largest=False)
    return {"indices": idx.numpy(), "distances": dist.numpy()}


def prdc_ours(data, torch):
    from lib.manifold import precision_recall_density_coverage

    out = precision_recall_density_coverage(real=data["real"], fake=data["fake"], k=K)
    return {key: np.float64(value) for key, value in out.items()}


def prdc_peer(data, torch, dtype=np.float32):
    import prdc

    real, fake = data["real"].astype(dtype), data["fake"].astype(dtype)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints the set sizes
        out = prdc.compute_prdc(real_features=real, fake_features=fake, nearest_k=K)
    return {key: np.float64(value) for key, value in out.items()}


def prdc_peer64(data, torch):
    """prdc on float64 copies: on float32 features it rounds its distances to float32 (sklearn returns them in
    the input's dtype), so ties at a radius can differ from the float64 decision; this run is not timed."""
    return prdc_peer(data, torch, np.float64)


CONTENDERS = {"knn": {"ours": knn_ours, "faiss": knn_faiss, "torch": knn_torch},
              "prdc": {"ours": prdc_ours, "prdc": prdc_peer, "prdc64": prdc_peer64}}


def in_subprocess(task: str, impl: str, path: str, profile: bool, limit_gb: float | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", task, impl, path] + (["--profile"] if profile else [])
    cmd += ["--prdc-limit-gb", str(limit_gb)] if limit_gb else []
    env = os.environ | {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{task} {impl} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def brute_force_check(path: str, result: str, sample: int) -> tuple[int, int, float]:
    """Our k-NN against float64 brute force (direct differences, stable order, ties by lower index) on `sample`
    evenly spaced queries: (rows checked, rows whose indices differ, largest relative distance difference)."""
    with np.load(path) as arrays, np.load(result) as ours:
        base, queries = arrays["base"].astype(np.float64), arrays["queries"].astype(np.float64)
        rows = np.unique(np.linspace(0, len(queries) - 1, min(sample, len(queries))).astype(int))
        differ, worst = 0, 0.0
        for row in rows:
            diff = base - queries[row]
            sq = np.einsum("ij,ij->i", diff, diff)
            idx = np.argsort(sq, kind="stable")[:K]
            differ += not np.array_equal(idx, ours["indices"][row])
            worst = max(worst, float(np.max(np.abs(ours["distances"][row] - np.sqrt(sq[idx])) / np.sqrt(sq[idx]))))
    return len(rows), differ, worst


def bench_case(case: str, folder: Path, args) -> list[dict]:
    path = str(folder / f"{case}.npz")
    tasks = [("knn", KNN_PEERS)] + ([("prdc", PRDC_PEERS)] if "real" in np.load(path).files else [])
    big = case.endswith("50000x2048")
    rows = []
    for task, peers in [(task, peers) for task, peers in tasks if task in args.tasks]:
        runs = {impl: [] for impl in peers}
        for _ in range(args.repeats):  # contenders take turns
            for impl in peers:
                limit = args.prdc_limit_gb if impl == "prdc" else None
                runs[impl].append(in_subprocess(task, impl, path, args.profile, limit))
        row = {"case": case, "task": task}
        for impl in peers:
            row[impl] = {"median_s": float(np.median([r["seconds"] for r in runs[impl]])),
                         "times": [round(r["seconds"], 3) for r in runs[impl]],
                         "peak_mb": max(r["peak_mb"] for r in runs[impl]), "profile": runs[impl][-1]["profile"]}
            row[impl] |= {key: runs[impl][-1][key] for key in ("error", "where", "limit_gb", "vm_size_before_gb")
                          if key in runs[impl][-1]}
            if impl != "ours" and "error" not in runs[impl][-1]:
                ratios = [mine["seconds"] / theirs["seconds"] for mine, theirs in zip(runs[impl], runs["ours"])]
                row[impl] |= {"ratio_median": float(np.median(ratios)), "ratios": [round(r, 3) for r in ratios]}
        if "error" in row.get("prdc", {}):
            with np.load(runs["ours"][-1]["result"]) as a:
                row["values"] = {key: float(a[key]) for key in a.files}
        elif task == "knn":
            row["checked"], row["differ"], row["rel_err"] = brute_force_check(path, runs["ours"][-1]["result"],
                                                                              args.sample)
        else:
            # density: prdc takes (1/k) * mean of the counts, we take their sum / (k M): equal up to rounding
            with np.load(runs["ours"][-1]["result"]) as a:
                row["values"] = {key: float(a[key]) for key in a.files}
            for peer in ("prdc", "prdc64"):
                if big and peer == "prdc64":  # prdc on float64 copies would need twice its float32 memory
                    continue
                result = (runs["prdc"][-1] if peer == "prdc" else in_subprocess(task, peer, path, False))["result"]
                with np.load(result) as b:
                    row[f"same_{peer}"] = all(abs(row["values"][key] - b[key]) <= 1e-12 for key in b.files)
                    row[f"values_{peer}"] = {key: float(b[key]) for key in b.files}
        rows.append(row)
        print_row(row, peers)
    return rows


def print_row(row: dict, peers: tuple) -> None:
    ours = row["ours"]["median_s"]
    cells = [f"{impl} {row[impl]['median_s']:.2f} s {row[impl]['peak_mb']:.0f} MB" for impl in peers]
    ratios = " ".join(f"{impl}/ours {row[impl]['median_s'] / ours:.2f} (per repeat: median "
                      f"{row[impl]['ratio_median']:.3f}, {min(row[impl]['ratios']):.3f}-{max(row[impl]['ratios']):.3f})"
                      for impl in peers[1:] if "ratios" in row[impl])
    if "error" in row.get("prdc", {}):
        failed = row["prdc"]
        check = (f"prdc under RLIMIT_AS {failed['limit_gb']} GB (VmSize {failed['vm_size_before_gb']:.1f} GB before "
                 f"the call): MemoryError after {failed['median_s']:.1f} s: {failed['error']} at {failed['where']}; "
                 f"ours {row['values']}")
    elif row["task"] == "knn":
        check = (f"indices identical to float64 brute force in {row['checked'] - row['differ']}/{row['checked']} "
                 f"rows, rel. distance diff <= {row['rel_err']:.1e}")
    else:
        check = (f"values equal to prdc's on float64 / float32 features (density to 1e-12): "
                 f"{row.get('same_prdc64', 'not run')} / {row['same_prdc']}; ours {row['values']}"
                 + ("" if row["same_prdc"] else f", prdc float32 {row['values_prdc']}"))
    print(f"{row['case']:22s} {row['task']:4s} | " + " | ".join(cells) + f" | {ratios} | {check}", flush=True)
    if row["ours"]["profile"]:
        print(f"{'':27s} profile of ours: {row['ours']['profile']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--big-queries", type=int, default=2_000, help="queries of the 50,000 x 2,048 case")
    parser.add_argument("--sample", type=int, default=200, help="queries checked against float64 brute force")
    parser.add_argument("--cases", nargs="+", default=case_names(), choices=case_names())
    parser.add_argument("--tasks", nargs="+", default=["knn", "prdc"], choices=["knn", "prdc"])
    parser.add_argument("--big-prdc", action="store_true", help="a PRDC row for the 50,000 x 2,048 cases too")
    parser.add_argument("--prdc-limit-gb", type=float, help="address space for each prdc process (RLIMIT_AS)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        # one core for every contender: prdc's sklearn call starts 8 threads of its own (n_jobs=8)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(run_contender(*args.worker, args.profile, args.prdc_limit_gb)))
        return
    try:
        import prdc  # noqa: F401
    except ImportError:
        sys.exit("prdc is not installed: it is a benchmark-only dependency, `pip install -e '.[bench]'`")
    from lib.device import cpu_model

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; each contender in its own process pinned to one core, "
          f"one thread (torch, faiss, BLAS); medians of {args.repeats}, k = {K}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            missing = make_inputs(case, args.big_queries, Path(tmp), args.big_prdc)
            if missing:
                print(f"{case:22s} NOT MEASURED: {missing}", flush=True)
                continue
            rows += bench_case(case, Path(tmp), args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
