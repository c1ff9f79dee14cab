"""`python -m lib.data verify` checks every data file; `python -m lib.data fetch NAME|all` downloads."""

from __future__ import annotations

import argparse
import sys

from lib.data.files import FILES, DataFileError, data_file, data_root, fetch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.data", description=__doc__)
    parser.add_argument("command", choices=["verify", "fetch"])
    parser.add_argument("names", nargs="*", help="registered file names (default: all)")
    args = parser.parse_args(argv)
    names = [n for n in args.names if n != "all"] or sorted(FILES)
    failures = 0
    for name in names:
        try:
            path = fetch(name) if args.command == "fetch" else data_file(name)
            print(f"ok       {path}")
        except (DataFileError, KeyError, OSError) as err:
            failures += 1
            print(f"FAILED   {name}: {err}", file=sys.stderr)
    print(f"{len(names) - failures}/{len(names)} files ok under {data_root()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
