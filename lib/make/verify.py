"""`make verify NB=01 STAGE='losses-C1-*'`: one stored stage recomputed alone and compared with its committed entry
(`lib.verify`; how the run does it: `lib.run.Run._verified`).

    python -m lib.make.verify 01 'losses-C1-*' [--preset cpu] [--rtol 1e-6] [--out runs/verify]

Runs the notebook with SOURCE="stored" into OUT (the executed notebook and a JSON-lines file of the comparisons),
prints one line per recomputed entry, and exits 0 when every entry is within RTOL of the layer's, 1 when one is
not (or could not be compared), 2 when STAGE matched no stored entry of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lib.cli import command_parser
from lib.paths import PROJECT_ROOT
from lib.run import VERIFY_ENV, VERIFY_OUT_ENV
from lib.verify import RTOL, within


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.make.verify", __doc__)
    parser.add_argument("notebook", help="the notebook's number, e.g. 01")
    parser.add_argument("stage", help="a pattern of the stored entries' labels (their file names without the key)")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rtol", type=float, default=RTOL)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "runs" / "verify")
    args = parser.parse_args(argv)
    found = sorted((PROJECT_ROOT / "notebooks").glob(f"{args.notebook}_*.ipynb"))
    if len(args.notebook) != 2 or not args.notebook.isdigit() or len(found) != 1:
        parser.error(f"NB={args.notebook!r}: the two digits of one notebook in notebooks/ (01 to 04)")
    if not args.stage.strip() or "/" in args.stage:
        parser.error(f"STAGE={args.stage!r}: a pattern of entry labels, e.g. 'losses-C1-*' (`make status` lists them)")
    if not 0 <= args.rtol < 1:
        parser.error(f"RTOL={args.rtol}: a relative tolerance in [0, 1)")
    args.out.mkdir(parents=True, exist_ok=True)
    lines = args.out / f"verify-{args.notebook}.jsonl"
    lines.unlink(missing_ok=True)
    env = {**os.environ, VERIFY_ENV: args.stage, VERIFY_OUT_ENV: str(lines)}
    command = [sys.executable, "-m", "lib.make.report", str(found[0]), str(args.out), "-p", "PRESET", args.preset,
               "-p", "SOURCE", "stored", "-p", "EXPLORER", "False", "-p", "FIGURES_DIR", str(args.out / "figures")]
    done = subprocess.run(command, env=env, cwd=PROJECT_ROOT, check=False)
    compared = [json.loads(line) for line in lines.read_text().splitlines()] if lines.exists() else []
    if done.returncode != 0:
        print(f"the notebook failed (exit {done.returncode}); {len(compared)} entries were compared before")
        return 1
    if not compared:
        print(f"STAGE={args.stage!r} matched no stored entry of notebook {args.notebook}'s run at PRESET="
              f"{args.preset} (`make status` lists the layer's entries)")
        return 2
    failed = 0
    for c in compared:
        if "comparison" not in c:
            failed += 1
            print(f"{c['entry']}: recomputed in {c['seconds']:.1f} s, not compared ({c['refused']})")
            continue
        k = c["comparison"]
        ok = within(k, args.rtol)
        failed += not ok
        what = ("equal" if k["equal"] else f"largest difference {k['max_abs']:.3g}, {k['max_rel']:.3g} relative, "
                f"in {k['worst']}" + (f"; structure differs at {', '.join(k['mismatched'][:3])}"
                                      if k["mismatched"] else ""))
        print(f"{c['entry']}: recomputed in {c['seconds']:.1f} s; {k['leaves']} values compared, {what}: "
              f"{'within' if ok else 'NOT within'} rtol {args.rtol:g}")
        for where, absolute, relative in k.get("differing", [])[:3] if not k["equal"] else []:
            print(f"    {where}: {absolute:.3g} ({relative:.3g} relative)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
