"""IRS benchmarks (spec 04 §6): retrieval with the shared faiss search vs chunked torch.cdist + argmin (the
authors' approach, BeyondFID irs.py::compute_support, here on CPU), and irs_inf at ImageNet scale.

1. Retrieval, N_train = 50,000, n = 10,000, d = 512, the same fixed-seed float32 features and thread count
   for both; each contender in its own subprocess so its peak memory (growth of the peak RSS over the
   process's state just before the search) is its own; median of repeats after a warm-up. Both must
   return the same nearest indices (up to float32 near-ties, counted).
2. `irs_inf` with its interval at N = 1,281,167, n = 50,000 (median of repeats); 2b. its first (cold) call at
   n <= 5,000, where Stirling numbers are exact, against building the whole O(n^2) row first.
3. Throughput at d = 2048 (faiss, N = 50,000, n = 2,000), extrapolated to a full ImageNet-scale
   retrieval: 2 n N d FLOP with n = 50,000, N = 1,281,167, d = 2048.
Usage: python benchmarks/bench_irs.py [--threads 2] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from lib.device import cpu_model

IMAGENET = {"n_train": 1_281_167, "n": 50_000, "d": 2048}
H200_FP32_TFLOPS = 67.0  # NVIDIA data sheet, FP32 (non-tensor-core); cdist uses no TF32 unless enabled


def features(n_train: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Clustered Gaussian features (100 centres), float32, built in row blocks so that no temporary larger
    than a block raises the process's peak memory before the measurement starts."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((100, d), dtype=np.float32)

    def draw(rows: int) -> np.ndarray:
        out = np.empty((rows, d), np.float32)
        for r0 in range(0, rows, 4096):
            r1 = min(rows, r0 + 4096)
            out[r0:r1] = centres[rng.integers(0, 100, r1 - r0)] + rng.standard_normal((r1 - r0, d), dtype=np.float32)
        return out

    return draw(n_train), draw(n)


def search_faiss(train: np.ndarray, queries: np.ndarray) -> np.ndarray:
    from lib.irs import nearest_train

    return nearest_train(train, queries)  # the default path: centred, streamed in blocks


def search_cdist(train: np.ndarray, queries: np.ndarray, batch: int = 2048) -> np.ndarray:
    """BeyondFID's compute_support on CPU: cdist(train, batch) then argmin over the training axis."""
    import torch

    train_t = torch.from_numpy(train)
    out = []
    for q0 in range(0, len(queries), batch):
        dist = torch.cdist(train_t, torch.from_numpy(queries[q0 : q0 + batch]), p=2)
        out.append(dist.argmin(dim=0))
    return torch.cat(out).numpy()


def worker(impl: str, n_train: int, n: int, d: int, repeats: int, threads: int) -> dict:
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    train, queries = features(n_train, n, d)
    fn = {"faiss": search_faiss, "cdist": search_cdist}[impl]
    fn(train[:5000], queries[:500])  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        idx = fn(train, queries)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"impl": impl, "times": times, "median_s": float(np.median(times)), "peak_mb": peak / 1024,
            "gflops": 2 * n * n_train * d / float(np.median(times)) / 1e9, "indices": idx.tolist()}


def run_in_subprocess(impl: str, n_train: int, n: int, d: int, repeats: int, threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, __file__, "--worker", impl, "--n-train", str(n_train), "--n", str(n),
                          "--d", str(d), "--repeats", str(repeats), "--threads", str(threads)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_irs_inf(repeats: int) -> dict:
    from lib.irs import irs_inf

    n_train, n = IMAGENET["n_train"], IMAGENET["n"]
    k = int(np.unique(np.random.default_rng(0).integers(0, int(0.77 * n_train), n)).size)
    times = []
    for _ in range(repeats):
        _clear_stirling_caches()
        start = time.perf_counter()
        result = irs_inf(n_train, n, k)
        times.append(time.perf_counter() - start)
    return {"median_s": float(np.median(times)), "times": times, "result": result}


COLD_CASES = ((20_000, 5_000, 4_000), (10_000, 2_000, 1_999))  # n <= 5,000: the exact (one-sided Stirling) path


def _clear_stirling_caches() -> None:
    from lib.irs import method

    for cached in (method._log_stirling_exact_row, method._log_stirling_high, method._log_stirling_low):
        cached.cache_clear()


def _full_row_interval(n_train: int, n: int, k: int) -> tuple[int, int]:
    """The previous exact path: the whole O(n^2) log-Stirling row first, then the same bisections."""
    from lib.irs import method

    row = method._log_stirling_exact_row(n)
    tails = lambda s: method._tail_probabilities(n, k, s, row)  # noqa: E731
    upper = method._bisect_last_true(lambda s: tails(s)[0] >= method.ALPHA_E, k, n_train)
    lower = method._bisect_first_true(lambda s: tails(s)[1] >= method.ALPHA_E, k, n_train)
    return (n_train if lower is None else lower), upper


def bench_irs_inf_cold(repeats: int) -> list[dict]:
    """A first call (no cached Stirling table) of irs_inf for n <= 5,000, against the full-row path."""
    from lib.irs import irs_inf

    rows = []
    for case in COLD_CASES:
        times = {"irs_inf": [], "full_row": []}
        for _ in range(repeats):
            contenders = (("irs_inf", lambda c=case: irs_inf(*c)), ("full_row", lambda c=case: _full_row_interval(*c)))
            for name, fn in contenders:
                _clear_stirling_caches()
                start = time.perf_counter()
                out = fn()
                times[name].append(time.perf_counter() - start)
                if name == "irs_inf":
                    ours = (out["s_lower"], out["s_upper"])
                else:
                    assert out == ours, (case, out, ours)
        rows.append({"case": case, **{f"{k}_s": float(np.median(v)) for k, v in times.items()}})
    return rows


def print_cold(repeats: int) -> None:
    repeats = max(repeats, 5)
    print(f"\n2b. irs_inf first call (cold, exact Stirling numbers), median of {repeats}, vs the full O(n^2) "
          f"row built up front (the previous path: same bisections, identical intervals)")
    for row in bench_irs_inf_cold(repeats):
        print(f"   (N, n, k) = {row['case']}: {row['irs_inf_s'] * 1e3:8.2f} ms  full row "
              f"{row['full_row_s'] * 1e3:8.2f} ms  ({row['full_row_s'] / row['irs_inf_s']:.0f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N = 20,000, n = 2,000 (a CI-sized check)")
    parser.add_argument("--cold-only", action="store_true", help="only 2b, the cold irs_inf calls at n <= 5,000")
    parser.add_argument("--worker")
    parser.add_argument("--n-train", type=int, default=50_000)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--d", type=int, default=512)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n_train, args.n, args.d, args.repeats, args.threads)))
        return
    if args.quick:
        args.n_train, args.n = 20_000, 2_000
    if args.cold_only:
        print_cold(args.repeats)
        return
    print(f"machine: {cpu_model()}, {args.threads} threads (OMP_NUM_THREADS, torch, faiss), os.cpu_count() = "
          f"{os.cpu_count()}")
    print(f"\n1. retrieval N_train = {args.n_train:,}, n = {args.n:,}, d = {args.d}, float32, median of {args.repeats}")
    res = {impl: run_in_subprocess(impl, args.n_train, args.n, args.d, args.repeats, args.threads)
           for impl in ("faiss", "cdist")}
    for r in res.values():
        print(f"   {r['impl']:6s} {r['median_s']:7.2f} s  {r['gflops']:6.1f} GFLOP/s  "
              f"peak memory +{r['peak_mb']:7.0f} MB")
    differ = int(np.sum(np.array(res["faiss"]["indices"]) != np.array(res["cdist"]["indices"])))
    print(f"   cdist / faiss time ratio: {res['cdist']['median_s'] / res['faiss']['median_s']:.2f}x; "
          f"indices differing (float32 near-ties): {differ} of {args.n}")
    print(f"   input features: train {args.n_train * args.d * 4 / 2**20:.0f} MB, "
          f"queries {args.n * args.d * 4 / 2**20:.0f} MB")

    r = bench_irs_inf(args.repeats)
    print(f"\n2. irs_inf at N = {IMAGENET['n_train']:,}, n = {IMAGENET['n']:,}: median {r['median_s']:.3f} s "
          f"(target < 1 s); estimate {r['result']['estimate']:.4f} "
          f"[{r['result']['lower']:.4f}, {r['result']['upper']:.4f}] for s_true = 0.77 N")

    print_cold(args.repeats)

    d = IMAGENET["d"]
    t = run_in_subprocess("faiss", 50_000, 2_000, d, args.repeats, args.threads)
    flop = 2 * IMAGENET["n"] * IMAGENET["n_train"] * d
    print(f"\n3. faiss at d = {d}, N = 50,000, n = 2,000: {t['median_s']:.2f} s, {t['gflops']:.1f} GFLOP/s")
    print(f"   ImageNet scale ({IMAGENET['n']:,} queries x {IMAGENET['n_train']:,} x {d}) = {flop:.3g} FLOP: "
          f"about {flop / (t['gflops'] * 1e9) / 60:.0f} min per query set on this CPU; "
          f"an H200 at {H200_FP32_TFLOPS:.0f} TFLOP/s FP32 needs about {flop / (H200_FP32_TFLOPS * 1e12):.0f} s "
          f"of arithmetic (+ 10.5 GB of training features on the device; chunk the queries so that the "
          f"N x batch distance block, 1.28 M x batch x 4 B, fits)")


if __name__ == "__main__":
    main()
