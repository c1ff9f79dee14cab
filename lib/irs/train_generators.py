"""Train every arm of notebook 04's generator study and sample every generated set into the cache, one process
per arm and width; on a GPU machine lent for minutes, from an exported inputs file, packing the cache entries
into a few files to bring back.

    python -m lib.irs.train_generators export --preset cpu --out .gpu/inputs-cpu.npz   # the 16 x 16 sets
    python -m lib.irs.train_generators train --preset cpu [--inputs FILE] [--workers N] [--device cuda] [--pack DIR]
    python -m lib.irs.train_generators unpack DIR                                      # the packed entries -> cache

`train` computes exactly what notebook 04 computes for those sets with SOURCE="compute" (the same functions,
keys and seeds), so the entries it packs are the notebook's cache entries, byte for byte; `unpack` checks each
entry's checksum header before writing it into the cache. Without --inputs it reads CIFAR-10 from the data root.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch

from lib.cache import DamagedCacheEntry, load_npz, load_torch
from lib.device import pick_device
from lib.diffusion import family as family_mod
from lib.irs import experiment as ie
from lib.irs import generators as gen
from lib.irs import seed_study
from lib.irs.config import IRSConfig
from lib.paths import cache_dir
from lib.run import Run

BUNDLE_BYTES = 12_000_000  # a packed file stays under the device tool's 16 MiB per file


POOLS = ("train", "ref", "syn")


def _low_sets(config: IRSConfig, inputs: str | None) -> dict:
    """The sets at family.resolution with their labels and upsampled copies (`generators.low_res_sets`), from an
    exported inputs file or from CIFAR-10."""
    if not inputs:
        return gen.low_res_sets(config, ie.cifar_sets(config))
    arrays = dict(np.load(inputs))
    return {**arrays, **{f"{pool}_up": gen.for_extractor(arrays[pool]) for pool in POOLS}}


def run_on(device: str) -> Run:
    """The run of this command: the cache and compute (no stored layer), on `device`, no progress bars."""
    return Run(device=pick_device(device, name="--device"))


def _train_task(preset: str, inputs: str | None, arm: str, channels: int, device: str,
                seed: int | None = None) -> dict:
    """Train one arm at one width (checkpointed each epoch, so a killed process resumes) and sample its sets into the
    cache: the notebook's sets, or with `seed` the seed study's at that training seed (`lib.irs.seed_study`)."""
    torch.set_num_threads(1)
    config, run = ie.resolve_config(preset), run_on(device)
    low = _low_sets(config, inputs)
    conditioning, key = gen.conditioning_for(config, run)
    if seed is None:
        family, specs = config.family, gen.generated_sets_of(config)
    else:
        family, specs = seed_study.seeded_family(config, seed), seed_study.seed_sets(config, channels)
    start, done = time.perf_counter(), []
    for spec in specs:
        if spec.arm == arm and spec.channels == channels:
            gen.generated_images(family, low, spec, conditioning, key, run=run)
            done.append(spec.label)
    return {"arm": arm, "channels": channels, **({} if seed is None else {"seed": seed}),
            "seconds": time.perf_counter() - start, "sets": done}


def export_weights(preset: str, inputs: str | None, channels: int, seeds: list[int], out: Path) -> list[Path]:
    """The full-budget EMA weights of every arm trained at `channels` and each of `seeds` (those in the cache), as
    float16 .npz files (one array per parameter) beside a JSON of their recipe, cache key and training record
    (loss per epoch, seconds per epoch, images seen, the processor): what a reader needs to re-sample the arm."""
    import platform
    from dataclasses import asdict

    from lib.cache import config_hash
    from lib.device import cpu_model

    config = ie.resolve_config(preset)
    low = _low_sets(config, inputs)
    _, key = gen.conditioning_for(config, run_on("cpu"))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for seed in seeds:
        family = seed_study.seeded_family(config, seed)
        for arm in gen.ARMS:
            path = family_mod.weights_path(family, low, arm, channels, family.epochs, key)
            if not path.exists():
                continue
            trained = load_torch(path)
            name = f"weights-{arm}-c{channels}-s{seed}"
            np.savez(out / f"{name}.npz", **{k: v.numpy().astype(np.float16) for k, v in trained["ema"].items()})
            record = {"arm": arm, "channels": channels, "seed": seed, "preset": preset,
                      "recipe": family_mod.recipe_of(family, channels, arm).key(), "family": asdict(family),
                      "cache_entry": path.name, "training_key_hash": config_hash(
                          family_mod.training_key(family, low, arm, channels, key)),
                      "loss_per_epoch": [float(v) for v in trained["history"]],
                      "epoch_seconds": [float(v) for v in trained["epoch_seconds"]],
                      "images_seen": int(trained["images_seen"]), "parameters": int(trained["parameters"]),
                      "processor": cpu_model(), "machine": platform.machine(), "threads": 1}
            spec = family_mod.GeneratedSet(arm, channels, 1.0)
            set_file = family_mod.set_path(family, low, spec, key)
            if set_file.exists():  # the set's first images: what re-sampling the stored weights must give
                images = load_npz(set_file)["images"][:seed_study.CHECK_IMAGES]
                np.savez_compressed(out / f"{name}-first-images.npz", images=images)
                record["first_images"] = {"file": f"{name}-first-images.npz", "set": set_file.name}
            (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
            written.append(out / f"{name}.npz")
    return written


def train(preset: str, inputs: str | None, workers: int, device: str) -> list[dict]:
    """Every (arm, width) of the study in `workers` processes; DiADM's conditioning features first."""
    config = ie.resolve_config(preset)
    low = _low_sets(config, inputs)
    conditioning, _ = gen.conditioning_for(config, run_on(device))
    for pool in ("train", "syn"):
        conditioning(low[f"{pool}_up"], f"{pool}{len(low[pool])}-lr{config.family.resolution}")
    tasks = [(preset, inputs, arm, ch, device) for ch in config.gen_channels for arm in gen.ARMS]
    with mp.get_context("spawn").Pool(workers) as pool:
        return pool.starmap(_train_task, tasks)


def entry_paths(preset: str, inputs: str | None) -> list[Path]:
    """The cache entries of every generated set and of each arm's weights at its full budget."""
    config = ie.resolve_config(preset)
    low = _low_sets(config, inputs)
    extractor = ie.extractor_for(config, "efficientnet_lite0")
    family = config.family
    paths = [family_mod.set_path(family, low, spec, extractor.key) for spec in gen.generated_sets_of(config)]
    return paths + [family_mod.weights_path(family, low, arm, ch, family.epochs, extractor.key)
                    for ch in config.gen_channels for arm in gen.ARMS]


def pack(paths: list[Path], out: Path) -> list[Path]:
    """The files at `paths` as a few uncompressed .npz files of raw bytes (each under BUNDLE_BYTES)."""
    out.mkdir(parents=True, exist_ok=True)
    bundles, current, size = [], {}, 0
    for path in paths:
        data = np.frombuffer(path.read_bytes(), np.uint8)
        if current and size + data.size > BUNDLE_BYTES:
            bundles.append(current)
            current, size = {}, 0
        current[path.name], size = data, size + data.size
    bundles.append(current)
    written = []
    for i, bundle in enumerate(bundles):
        written.append(out / f"entries-{i}.npz")
        np.savez(written[-1], **bundle)
    return written


ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.(npz|pt)\Z")  # a cache entry's file name, nothing more


def bundles_in(folder: Path) -> list[Path]:
    """The packed files in `folder`; a missing folder, or one without any, is refused, naming it."""
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder (give the folder that `train --pack` wrote).")
    bundles = sorted(folder.glob("entries-*.npz"))
    if not bundles:
        raise ValueError(f"{folder} holds no entries-*.npz (the files `train --pack` writes): nothing to unpack.")
    return bundles


def _entries(bundle: Path) -> dict[str, bytes]:
    """{file name: bytes} of the entries of a packed file; one that is not a complete bundle is refused, naming it
    (cut short, it fails to open, or opens as the last entry it holds: a cache entry is itself a zip archive)."""
    try:
        with np.load(bundle) as arrays:
            entries = {name: arrays[name].tobytes() for name in arrays.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as err:
        raise ValueError(f"{bundle}: not a complete bundle ({type(err).__name__}: {err}); copy it again.") from None
    foreign = [name for name in entries if not ENTRY_NAME.match(name)]
    if foreign:
        raise ValueError(f"{bundle}: not a complete bundle (it holds {foreign[:3]}, not cache entries: a copy cut "
                         "short, or another file); copy it again.")
    return entries


def unpack(folder: Path) -> list[Path]:
    """Write every entry of the packed files in `folder` into the cache (namespace 04), each read back first with
    the cache's own checksum-verifying loader (`lib.cache.load_npz` / `load_torch`) and refused when it fails. A
    missing or empty folder and a file that is not a complete bundle are refused, naming them."""
    written = []
    for bundle in bundles_in(folder):
        for name, data in _entries(bundle).items():
            target = cache_dir() / "04" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_name(f".{name}.unpacking")
            staged.write_bytes(data)
            try:
                (load_npz if name.endswith(".npz") else load_torch)(staged)
            except DamagedCacheEntry as err:
                staged.unlink()
                raise ValueError(f"{bundle}: entry {name} fails its checksum ({err.reason}); "
                                 "not unpacked.") from err
            written.append(staged.replace(target))
    return written


def probe(preset: str, device: str, steps: int = 20) -> dict:
    """Milliseconds per training image and per image per network evaluation of the preset's main arm (the class
    arm, its widest) at its resolution, on random images after two warm-up steps: the paper preset's cost."""
    from lib.diffusion import Recipe, build_denoiser, edm_loss, guided, heun_sample

    config = ie.resolve_config(preset)
    r, ch = config.family.resolution, config.gen_channels[0]
    model = build_denoiser(Recipe(channels=ch), resolution=r, condition="class", cond_dim=10).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, c = torch.randn(config.family.batch, 3, r, r, device=device), torch.eye(10, device=device)[
        torch.arange(config.family.batch, device=device) % 10]
    generator = torch.Generator().manual_seed(0)

    def step() -> None:
        opt.zero_grad()
        edm_loss(model, x, c, generator=generator).backward()
        opt.step()

    def synced(fn, repeats: int) -> float:
        for _ in range(2):
            fn()
        torch.cuda.synchronize() if device.startswith("cuda") else None
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize() if device.startswith("cuda") else None
        return (time.perf_counter() - start) / repeats

    train_s = synced(step, steps)
    noise = torch.randn(500, 3, r, r, device=device)
    with torch.no_grad():
        sample_s = synced(lambda: heun_sample(guided(model.eval(), c[:1].expand(500, 10)), noise, steps=2), 3)
    parameters = sum(p.numel() for p in model.parameters())
    return {"preset": preset, "resolution": r, "channels": ch, "parameters": parameters, "batch": config.family.batch,
            "train_ms_per_image": 1000 * train_s / config.family.batch,
            "sample_ms_per_image_eval": 1000 * sample_s / 500 / 3}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.irs.train_generators", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export")
    ex.add_argument("--preset", default="cpu")
    ex.add_argument("--out", type=Path, required=True)
    tr = sub.add_parser("train")
    tr.add_argument("--preset", default="cpu")
    tr.add_argument("--inputs")
    tr.add_argument("--workers", type=int, default=1)
    tr.add_argument("--device", default="cpu")
    tr.add_argument("--pack", type=Path)
    se = sub.add_parser("seeds", help="train and sample extra training seeds, one (arm, seed) after another")
    se.add_argument("--preset", default="cpu")
    se.add_argument("--inputs")
    se.add_argument("--channels", type=int, default=16)
    se.add_argument("--device", default="cpu")
    se.add_argument("--log", type=Path, help="append one JSON line per finished (arm, seed)")
    se.add_argument("tasks", nargs="+", help="ARM:SEED, e.g. diadm:1 unconditional:1")
    xw = sub.add_parser("export-weights", help="the trained arms' EMA weights as float16 files with their record")
    xw.add_argument("--preset", default="cpu")
    xw.add_argument("--inputs")
    xw.add_argument("--channels", type=int, default=16)
    xw.add_argument("--seeds", type=int, nargs="+", required=True)
    xw.add_argument("--out", type=Path, required=True)
    pr = sub.add_parser("probe")
    pr.add_argument("--preset", default="paper")
    pr.add_argument("--device", default="cpu")
    un = sub.add_parser("unpack")
    un.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    try:  # the errors of the arguments themselves, before any work: a message naming them, exit status 2
        if "device" in args:
            args.device = str(pick_device(args.device, name="--device"))  # "auto" made concrete
        if args.command == "unpack":
            for path in unpack(args.folder):
                print(f"unpacked {path.name}")
            return 0
    except ValueError as err:
        parser.error(str(err))
    if args.command == "export":
        config = ie.resolve_config(args.preset)
        low = _low_sets(config, None)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, **{k: low[k] for pool in POOLS for k in (pool, f"{pool}_labels")})
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")
    elif args.command == "train":
        start = time.perf_counter()
        tasks = train(args.preset, args.inputs, args.workers, args.device)
        record = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
                  "wall_seconds": time.perf_counter() - start, "tasks": tasks}
        print(json.dumps(record, indent=1))
        if args.pack:
            for path in pack(entry_paths(args.preset, args.inputs), args.pack):
                print(f"packed {path} ({path.stat().st_size / 1e6:.1f} MB)")
            (args.pack / "train-record.json").write_text(json.dumps(record, indent=1))
    elif args.command == "seeds":
        tasks = [t.split(":") for t in args.tasks]
        for t in tasks:
            if len(t) != 2 or t[0] not in gen.ARMS or not t[1].isdigit():
                parser.error(f"task {':'.join(t)!r}: expected ARM:SEED with ARM one of {', '.join(gen.ARMS)}")
        for arm, seed in tasks:
            record = _train_task(args.preset, args.inputs, arm, args.channels, args.device, int(seed))
            print(json.dumps(record), flush=True)
            if args.log:
                with args.log.open("a") as log:
                    log.write(json.dumps({**record, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
    elif args.command == "export-weights":
        for path in export_weights(args.preset, args.inputs, args.channels, args.seeds, args.out):
            print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    else:
        print(json.dumps(probe(args.preset, args.device), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
