"""lib.seeds: derived seeds are independent and reproducible, and every random stream in `lib` is named."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import lib
from lib.seeds import derive_seed

LIB = Path(lib.__file__).resolve().parent


def test_derive_seed_is_reproducible_order_sensitive_and_refuses_negative_keys():
    assert derive_seed(3, 1) == derive_seed(3, 1)
    assert len({derive_seed(3, 1), derive_seed(1, 3), derive_seed(3, 2), derive_seed(3)}) == 4
    assert 0 <= derive_seed(2**40, 7) < 2**63
    with pytest.raises(ValueError, match="non-negative"):
        derive_seed(3, -1)


def _names_a_seed(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "seed" in name.lower()


def _bare_streams(source: str, where: str) -> list[str]:
    """`seed + <number>` and `derive_seed(..., <number>, ...)`: streams chosen by a number that says nothing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _names_a_seed(node.left)
                and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int)):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "derive_seed"
                and any(isinstance(a, ast.Constant) for a in node.args)):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    return found


def test_every_random_stream_in_lib_and_the_notebooks_is_named():
    """A stream is `seed + X_STREAM` (notebooks 02, 03) or `derive_seed(seed, ..., X_STREAM)` (01, 04), with the
    constant named and explained beside its use (lib/seeds.py), never a bare number such as `seed + 2`."""
    bare = [hit for path in sorted(LIB.rglob("*.py")) if path.name != "seeds.py"
            for hit in _bare_streams(path.read_text(), str(path.relative_to(LIB.parent)))]
    for notebook in sorted((LIB.parent / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        bare += [hit for i, cell in enumerate(cells) if cell["cell_type"] == "code"
                 for hit in _bare_streams("".join(cell["source"]), f"{notebook.name} cell {i}")]
    assert not bare, f"random streams chosen by a bare number: {bare}"


def test_the_named_streams_keep_the_numbers_the_stored_results_were_drawn_with():
    """Renaming is free; renumbering changes every number a stored result holds (and its cache key does not say so)."""
    from lib.crel import baselines, captions
    from lib.crel import method as crel
    from lib.irs import experiment as irs
    from lib.prcurves import ddpm
    from lib.regret import experiment as regret
    from lib.regret import whole

    assert (ddpm.SAMPLING_STREAM, ddpm.TRAIN_STREAM) == (1, 2)
    assert (crel.DQR_STREAM, baselines.PCP_AREA_STREAM, baselines.PCP_COVERAGE_STREAM) == (1, 1, 2)
    assert (captions.POOLS_STREAM, captions.FOLDS_STREAM, captions.CAPTIONER_STREAM,
            captions.REFERENCE_STREAM) == (1, 2, 10, 99)
    assert (whole.DROPOUT_STREAM, regret.PREDICTION_STREAM, regret.AL_POOL_STREAM) == (1, 10_000, 1)
    assert (irs.GAP_STREAM, irs.MEMORISER_STREAM, irs.PCA_SAMPLES_STREAM, irs.ADJUSTED_STREAM, irs.REFERENCE_STREAM,
            irs.KEPT_CLASSES_STREAM) == (1, 3, 5, 7, 9, 55)
    assert ddpm.member_seeds(0, 4, 3) == [4000, 4001, 4002]
