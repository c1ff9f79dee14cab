"""Device choice: CUDA when present, else CPU. Never hard-code a device elsewhere."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

SUPPORTED = "choose 'auto', 'cpu', 'cuda' or 'cuda:N'"
_DEVICE = re.compile(r"(cpu|cuda)(:\d+)?\Z")


def pick_device(prefer: str | None = None, name: str = "DEVICE") -> torch.device:
    """Return `prefer` if given ("cpu", "cuda", "cuda:1"), else CUDA when available, else CPU.

    Notebooks expose this as a `DEVICE: str = "auto"` parameter; "auto" maps to `prefer=None`. Only the devices
    the workbook runs on are taken: torch also knows "mps", "xla", "meta" and others, which passed here and then
    failed at the first tensor operation without naming the parameter; they, and a CUDA device that is not
    present, are refused here, naming `name` (the parameter or option that gave it).
    """
    if prefer is None or prefer == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(prefer, str) or not _DEVICE.match(prefer):
        raise ValueError(f"{name}={prefer!r} is not a device the workbook supports; {SUPPORTED}.")
    device = torch.device(prefer)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={prefer!r} was requested but CUDA is not available here; use 'auto' or 'cpu'.")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"{name}={prefer!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                         f"cuda:0 to cuda:{torch.cuda.device_count() - 1}.")
    return device


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: torch.device) -> str:
    """A human-readable name for `device`, used in notebook headers and benchmark reports."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    threads = torch.get_num_threads()
    return f"cpu ({cpu_model()}, {threads} thread{'s' if threads != 1 else ''})"


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def set_threads(n: int, name: str = "NUM_THREADS") -> int:
    """Use `n` CPU threads for everything numeric in this process and in the processes it starts.

    Sets PyTorch's intra-op threads and (when still possible) its inter-op threads, the BLAS/OpenMP pools
    already loaded (NumPy's, faiss's, through threadpoolctl) and the OMP/MKL/OpenBLAS environment variables
    that subprocesses read. The notebooks expose it as `NUM_THREADS` (default 1: their matrices are small, and
    on a shared 2-core machine a second thread oversubscribes the cores; measured in the README). Cached stages
    whose results moved with the count run at `one_thread()` or put `threads_key()` into their cache key.
    """
    from lib.params import check_int

    n = check_int(name, n, minimum=1)
    for var in THREAD_ENV:
        os.environ[var] = str(n)
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:  # only settable before the first inter-op parallel work; then it stays as it was
        pass
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)
    return n


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the body with one CPU thread in torch and in the loaded BLAS/OpenMP pools, whatever `set_threads`
    chose; restore them afterwards. Also a decorator: `@one_thread()`.

    Float sums split across threads (torch's large reductions and matrix products, OpenBLAS's) round in another
    order, so their last bits depend on the thread count, and a training carries a last-bit difference into
    visibly different numbers: a cached stage would then hold whatever the run that filled the cache used. A
    stage of small models runs inside this instead, so it gives the bits of a NUM_THREADS=1 run (the default)
    whatever NUM_THREADS says, and a NUM_THREADS=1 run is unchanged. Stages too costly for one thread put
    `threads_key()` into their cache key instead. The processor's kernels (AVX2 vs AVX-512) still change the
    last bits; nothing cheap removes that.
    """
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    with threadpool_limits(1):
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def threads_key() -> dict:
    """The thread count as a cache key needs it: {} at one thread (a default adds nothing: key policy in
    lib.store), {"cpu_threads": n} otherwise. For stages whose results depend on the thread count
    and that are too costly to run at `one_thread()`."""
    n = torch.get_num_threads()
    return {} if n == 1 else {"cpu_threads": n}
