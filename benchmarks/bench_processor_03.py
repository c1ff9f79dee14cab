"""How far notebook 03's `SOURCE="compute"` results move with the processor's float rounding.

    OMP_NUM_THREADS=1 WORKBOOK_DATA=... python benchmarks/bench_processor_03.py [CACHE]   # 9 min on one core

CACHE: an empty folder of its own (default: a new temporary one); the predictions of each precision are cached
in CACHE/float32 and CACHE/float64. Copying the checkout's data/cache/cifar10 and the ResNet-20 features
(data/cache/03/resnet20-t*.npz) into CACHE/float32 first saves decoding CIFAR-10 and computing them.

Another CPU (AVX2 against AVX-512 kernels) rounds float32 sums in another order. Without a second processor, the
same kind of change is made here two ways, on the `cpu` preset's own inputs and stored heads:

- active learning (`al_nauc`): the heads of every round trained at 2 threads instead of 1 (another summation
  order in every matrix product of the training);
- synth_age and the CIFAR-10H table: each method's predictions computed by its stored heads in float64 instead
  of float32.

Prints, for each, the largest change of the values the notebook records. Figures measured are in
benchmarks/README.md.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from lib import store
from lib.regret import experiment as ex
from lib.regret import paper, uq
from lib.run import Run

CPU = torch.device("cpu")


@contextmanager
def threads(n: int):
    before = torch.get_num_threads()
    with threadpool_limits(n):
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)


@contextmanager
def float64_heads():
    """uq.predict with every module (and its input) in float64."""
    original = uq.predict

    def predict(method, modules, inputs, **kwargs):
        return original(method, [m.double() for m in modules], inputs.double(), **kwargs)

    uq.predict = predict
    try:
        yield
    finally:
        uq.predict = original


def al_shift(config, cifar, feats) -> dict:
    """{method: (NAUC at 1 thread, NAUC at 2 threads)} of the notebook's active learning."""
    pool = ex.train_subset(cifar["train_labels"], config.al_pool, config.seed + ex.AL_POOL_STREAM)
    args = (feats["train"]["feats"][pool], cifar["train_labels"][pool], feats["test"]["feats"][: config.al_test],
            cifar["test_labels"][: config.al_test])
    out = {}
    for method in config.methods:
        one = ex._active_learning(config, method, *args, strategy="epistemic", device=CPU)["nauc"]
        with threads(2):
            two = ex._active_learning.__wrapped__(config, method, *args, strategy="epistemic", device=CPU)["nauc"]
        out[method] = (float(one), float(two))
    return out


def prediction_shift(config, cifar, feats, cache: Path) -> dict:
    """{(table, method, loss, metric): (float32 value, float64 value)} of the synth_age and CIFAR-10H tables; the
    heads are the stored layer's, the predictions cached under cache/<precision>."""
    targets = torch.from_numpy(np.eye(10, dtype=np.float32)[cifar["train_labels"]])
    inputs = {n: torch.from_numpy(feats[n]["feats"]) for n in ("train", "test")}
    run = Run()  # compute on the CPU: every prediction computed (or cached), none read from the layer
    out = {}
    for precision in ("float32", "float64"):
        os.environ["WORKBOOK_CACHE"] = str(cache / precision)
        with float64_heads() if precision == "float64" else threads(1):
            synth = ex.synth_run(config, run)
            for (method, loss), ev in synth["results"].items():
                for metric in paper.COLUMNS:
                    out.setdefault(("synth", method, loss, metric), []).append(ev["metrics"][metric])
            for method in config.methods:
                trained = ex.trained_method(config, method, inputs["train"], targets, cifar["train_labels"],
                                            head=config.head, label="cifar", run=run)
                pred = ex.method_prediction(config, method, trained, inputs["test"], label="cifar", head=config.head,
                                            run=run)
                for loss in config.losses:
                    metrics = ex.evaluate(config, method, pred, cifar["p_true"], loss)["metrics"]
                    for metric in paper.COLUMNS:
                        out.setdefault(("cifar", method, loss, metric), []).append(metrics[metric])
    return out


def main() -> None:
    start = time.perf_counter()
    cache = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="bench-processor-03-")).resolve()
    for precision in ("float32", "float64"):  # the stored heads, as the default run reads them, in each cache
        (cache / precision / "03").mkdir(parents=True, exist_ok=True)
        for head in store.layer_dir("03", "cpu").glob("*.pt"):
            shutil.copyfile(head, cache / precision / "03" / head.name)
    os.environ["WORKBOOK_CACHE"] = str(cache / "float32")
    config = replace(ex.resolve_config("cpu"), whole_source="off")
    cifar = ex.cifar_data(config)
    feats = {n: ex.pretrained_outputs(config.depth, cifar[f"{n}_images"], n) for n in ("train", "test")}
    for method, (one, two) in al_shift(config, cifar, feats).items():
        print(f"AL NAUC {method:<11} 1 thread {one:.4f}  2 threads {two:.4f}  change {two - one:+.4f}")
    shifts = prediction_shift(config, cifar, feats, cache)
    for table in ("synth", "cifar"):
        rows = [(abs(b - a) / max(abs(a), 1e-12), key, a, b) for key, (a, b) in shifts.items() if key[0] == table]
        worst = max(rows)
        moved = sum(r[0] > 1e-9 for r in rows)
        print(f"{table}: {moved} of {len(rows)} values move with float64 predictions; largest relative change "
              f"{worst[0]:.2e} ({'/'.join(worst[1][1:])}: {worst[2]:.6g} -> {worst[3]:.6g})")
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
