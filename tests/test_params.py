from dataclasses import dataclass, field

import numpy as np
import pytest

from lib import params


def test_choice_names_parameter_value_and_allowed():
    with pytest.raises(ValueError, match=r"PRESET='fast' is not allowed; choose one of \['smoke', 'cpu'\]"):
        params.check_choice("PRESET", "fast", ["smoke", "cpu"])


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "4"])
def test_int_rejects(value):
    with pytest.raises(ValueError, match="C"):
        params.check_int("C", value, minimum=1)


def test_probability_is_open_interval():
    assert params.check_probability("alpha", 0.05) == 0.05
    for bad in (0, 1, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            params.check_probability("alpha", bad)


def test_ints_rejects_duplicates_and_empty():
    assert params.check_ints("complexities", [1, 2]) == (1, 2)
    with pytest.raises(ValueError, match="duplicates"):
        params.check_ints("complexities", [2, 2])
    with pytest.raises(ValueError, match="at least 1"):
        params.check_ints("complexities", [])


def test_percentiles():
    assert params.check_percentiles("band", (10, 90)) == (10.0, 90.0)
    with pytest.raises(ValueError, match="lo < hi"):
        params.check_percentiles("band", (90, 10))


def test_with_overrides_keeps_none_turns_lists_into_tuples_and_names_unknown_parameters():
    from dataclasses import dataclass

    from lib.params import with_overrides

    @dataclass(frozen=True)
    class Config:
        size: int = 3
        ks: tuple = (1, 2)

    assert with_overrides(Config(), {"size": None, "ks": [5]}) == Config(3, (5,))
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['sizes'\]; known: \['ks', 'size'\]"):
        with_overrides(Config(), {"sizes": 4})


def test_with_overrides_reaches_nested_settings_by_dict_or_flat_names():
    from dataclasses import dataclass, field

    from lib.params import resolve_preset, with_overrides

    @dataclass(frozen=True)
    class Head:
        epochs: int = 5
        widths: tuple = (8,)

    @dataclass(frozen=True)
    class Config:
        seed: int = 0
        head: Head = field(default_factory=Head)

    base = Config()
    assert with_overrides(base, {"head": {"epochs": 7, "widths": None}}) == Config(0, Head(7, (8,)))
    flat = with_overrides(base, {"epochs": 2, "widths": [4, 4], "seed": 3}, flat=("head",))
    assert flat == Config(3, Head(2, (4, 4)))
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['epochs'\]"):
        with_overrides(base, {"epochs": 2})  # not routed without flat=
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['epoch'\]"):
        with_overrides(base, {"head": {"epoch": 2}})
    with pytest.raises(ValueError, match=r"PRESET='fast' is not allowed; choose one of \['smoke'\]"):
        resolve_preset({"smoke": base}, "fast", {})


@pytest.mark.parametrize("value", ["false", "False", "no", 0, 1, None])
def test_bool_accepts_only_real_booleans(value):
    with pytest.raises(ValueError, match="EXPLORER=.* must be True or False"):
        params.check_bool("EXPLORER", value)
    assert params.check_bool("EXPLORER", False) is False


def test_bool_string_gets_the_papermill_hint():
    with pytest.raises(ValueError, match="-p EXPLORER False"):
        params.check_bool("EXPLORER", "false")


def test_type_follows_the_annotation():
    from typing import Optional

    assert params.check_type("ALPHAS", None, Optional[list]) is None  # noqa: UP045
    assert params.check_type("ALPHAS", [0.1], Optional[list]) == [0.1]  # noqa: UP045
    assert params.check_type("TRUNC", 3, float) == 3
    for name, value, annotation, message in [
        ("ALPHAS", 0.1, Optional[list], r"ALPHAS=0.1 must be a list \(or None"),  # noqa: UP045
        ("NUM_THREADS", 1.5, int, "NUM_THREADS=1.5 must be an integer"),
        ("NUM_THREADS", True, int, "NUM_THREADS=True must be an integer"),
        ("PRESET", 3, str, "PRESET=3 must be a string"),
        ("INCLUDE_PCP", "no", Optional[bool], "INCLUDE_PCP='no' must be True or False"),  # noqa: UP045
    ]:
        with pytest.raises(ValueError, match=message):
            params.check_type(name, value, annotation)


def _namespace(**injected):
    from typing import Optional

    source = "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in injected.items())
    ns = {"__annotations__": {"NUM_MEMBERS": Optional[int], "EXPLORER": bool}, "NUM_MEMBERS": None,  # noqa: UP045
          "EXPLORER": True, "In": ["", "import time", "NUM_MEMBERS: int = None", source, "x = 1"]}  # noqa: UP045
    ns.update(injected)
    return ns


def test_notebook_parameters_unknown_name_gets_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\): NUM_MEMBER \(did you mean NUM_MEMBERS\?\)"):
        params.check_notebook_parameters(_namespace(NUM_MEMBER=3))
    with pytest.raises(ValueError, match=r"unknown parameter\(s\): ZZZ; this notebook's parameters are"):
        params.check_notebook_parameters(_namespace(ZZZ=3))


def test_notebook_parameters_checks_types_and_passes_good_values():
    params.check_notebook_parameters(_namespace(NUM_MEMBERS=3, EXPLORER=False))
    params.check_notebook_parameters({"__annotations__": {"X": int}, "X": 1})  # nothing injected, no `In`
    with pytest.raises(ValueError, match="EXPLORER='false' must be True or False"):
        params.check_notebook_parameters(_namespace(EXPLORER="false"))


def test_notebook_parameters_refuse_a_thread_count_beyond_the_machine():
    """NUM_THREADS=10**6 passed the configuration cell, whose next line hands it to torch,
    BLAS and OpenMP (lib.device.set_threads)."""
    import os

    limit = params.MAX_THREADS_PER_CPU * (os.cpu_count() or 1)
    params.check_notebook_parameters({"__annotations__": {"NUM_THREADS": int}, "NUM_THREADS": limit})
    for bad, message in [(10**6, rf"NUM_THREADS=1000000 must be <= {limit}"), (0, "NUM_THREADS=0 must be >= 1")]:
        with pytest.raises(ValueError, match=message):
            params.check_notebook_parameters({"__annotations__": {"NUM_THREADS": int}, "NUM_THREADS": bad})


# ----------------------------------------------------------------------------------------------------
# Array checks
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_finite_names_the_argument_count_and_first_row(bad):
    x = np.zeros((6, 3), np.float32)
    x[4, 2], x[5, 0] = bad, bad
    with pytest.raises(ValueError, match=r"^train_feats holds 2 non-finite value\(s\) \(first at row 4, column 2"):
        params.check_finite("train_feats", x)
    with pytest.raises(ValueError, match=r"first at member 4, grid point 2.*drop that member"):
        params.check_finite("a", x, axes=("member", "grid point"), hint="drop that member")
    with pytest.raises(ValueError, match=r"^v holds 1 non-finite value\(s\) \(first at index 1"):
        params.check_finite("v", [0.0, bad])
    with pytest.raises(ValueError, match=r"first at index \(0, 1, 0\)"):
        params.check_finite("cube", np.array([[[0.0], [bad]]]))


def test_finite_keeps_the_dtype_scans_in_blocks_and_refuses_non_numbers(monkeypatch):
    x = np.ones((50, 7), np.float32)
    assert params.check_finite("x", x) is x and params.check_finite("i", [1, 2]).dtype.kind == "i"
    monkeypatch.setattr(params, "_SCAN_BLOCK", 10)  # blocks of one row: the count and the first still right
    x[[17, 3, 40], [1, 6, 0]] = np.nan
    with pytest.raises(ValueError, match=r"holds 3 non-finite.*row 3, column 6"):
        params.check_finite("x", x)
    with pytest.raises(ValueError, match="must be a numeric array; got dtype <U1"):
        params.check_finite("x", ["a"])


def test_ndim_and_nonempty_name_the_shape():
    assert params.check_ndim("values", np.zeros((2, 3, 4)), 3, "(M, R, G)").shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"values must be a \(M, R, G\) array; got shape \(2, 3\) \(2-D\)"):
        params.check_ndim("values", np.zeros((2, 3)), 3, "(M, R, G)")
    with pytest.raises(ValueError, match="scores must hold at least 1 value"):
        params.check_nonempty("scores", [])
    with pytest.raises(ValueError, match="a must hold at least 2"):
        params.check_nonempty("a", [1.0], min_len=2)
    with pytest.raises(ValueError, match=r"a must be a \(members, grid\) array .* no empty axis; got shape \(8, 0\)"):
        params.check_nonempty("a", np.zeros((8, 0)), min_len=2, shape="(members, grid)")
    assert params.check_nonempty("a", np.zeros((2, 1)), min_len=2).shape == (2, 1)


def test_nonnegative_names_the_first_negative_entry():
    assert params.check_nonnegative("regret", [0.0, 0.5]).tolist() == [0.0, 0.5]
    with pytest.raises(ValueError, match=r"regret must be >= 0 everywhere; it holds 2 negative value\(s\), the "
                                         r"first at index 1: -1.0"):
        params.check_nonnegative("regret", [0.0, -1.0, -2.0])
    with pytest.raises(ValueError, match="regret holds 1 non-finite"):
        params.check_nonnegative("regret", [float("nan")])


@pytest.mark.parametrize("indices, message", [
    ([0, 5, 50, 99], r"indices must lie in \[0, n_train\) = \[0, 10\); 2 index\(es\) do not, the first at "
                     r"position 2: 50"),
    ([3, -1], r"the first at position 1: -1"),
    ([0.0, 1.0], "indices must hold integer indices; got dtype float64"),
    ([True, False], "got dtype bool"),
    ([[0, 1]], r"indices must be a 1-D \(n,\) array; got shape \(1, 2\)"),
])
def test_indices_must_be_integers_within_range(indices, message):
    with pytest.raises(ValueError, match=message):
        params.check_indices("indices", indices, 10, n_name="n_train")


def test_good_indices_come_back_as_int64():
    out = params.check_indices("indices", np.array([0, 9, 9], np.uint8), 10)
    assert out.dtype == np.int64 and out.tolist() == [0, 9, 9]
    assert params.check_indices("indices", [], 10).dtype == np.int64


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_real_refuses_non_finite_values_whatever_the_interval(value):
    with pytest.raises(ValueError, match=rf"MEM_NOISE={value!r} must be a finite real number"):
        params.check_real("MEM_NOISE", value, low=0.0)  # no upper bound: inf lay within [0, inf]
    with pytest.raises(ValueError, match="must be a finite real number"):
        params.check_real("x", value)


@pytest.mark.parametrize("values, repeated", [
    (["pixels", "pixels"], "'pixels'"), ([0.1, 0.5, 0.1], "0.1"), ((250, 500, 500), "500"), ([1, 1.0], "1.0"),
])
def test_list_refuses_a_repeated_entry_naming_it(values, repeated):
    with pytest.raises(ValueError, match=rf"EXTRACTORS=.* holds duplicates \({repeated} more than once\)"):
        params.check_list("EXTRACTORS", values)
    assert params.check_list("EXTRACTORS", list(dict.fromkeys(values))) == tuple(dict.fromkeys(values))


def test_list_refuses_a_non_list_and_too_few_entries():
    for bad in ("ce", 3, None, {"a": 1}):
        with pytest.raises(ValueError, match=r"LOSSES=.* must be a list"):
            params.check_list("LOSSES", bad)
    with pytest.raises(ValueError, match=r"LOSSES=\(\) must hold at least 1 value"):
        params.check_list("LOSSES", ())
    assert params.check_list("p_fail_sweep", (), min_len=0) == ()


def test_ints_names_the_repeated_entry():
    with pytest.raises(ValueError, match=r"complexities=\[2, 4, 2\] holds duplicates \(2 more than once\)"):
        params.check_ints("complexities", [2, 4, 2])


def test_parameter_names_rename_the_leading_setting_of_every_check_inside_the_block_only():
    names = {"num_members": "NUM_MEMBERS", "train.batch_size": "BATCH_SIZE", "folds": "FOLDS", "e2_reps": "CLASS_DRAWS"}
    with params.parameter_names(names):
        for check, message in [
            (lambda: params.check_int("num_members", 1, minimum=2), r"^NUM_MEMBERS=1 must be >= 2"),
            (lambda: params.check_int("train.batch_size", 0, minimum=1), r"^BATCH_SIZE=0 must be >= 1"),
            (lambda: params.check_ints("folds", [1, -1], minimum=1), r"^FOLDS entry=-1"),
            (lambda: params.check_real("folds[2]", 2.0, high=1.0), r"^FOLDS\[2\]=2.0 must lie in"),
            (lambda: params.check_int("e2_reps", 0, minimum=1), r"^CLASS_DRAWS=0 must be >= 1"),
            (lambda: params.check_choice("num_membersx", 0, [1]), r"^num_membersx=0 is not allowed"),  # no prefix match
        ]:
            with pytest.raises(ValueError, match=message):
                check()
        assert params.shown("seed") == "seed"
    with pytest.raises(ValueError, match=r"^num_members=1 must be >= 2"):  # outside the block: the setting's name
        params.check_int("num_members", 1, minimum=2)


def test_output_dir_is_created_or_refused_naming_the_parameter(tmp_path):
    assert params.check_output_dir("FIGURES_DIR", "") is None
    folder = tmp_path / "a" / "figs"
    assert params.check_output_dir("FIGURES_DIR", str(folder)) == folder and folder.is_dir()
    assert list(folder.iterdir()) == []  # the probe file is gone
    (tmp_path / "file").write_text("x")
    for bad in ("/dev/null/figs", str(tmp_path / "file"), str(tmp_path / "file" / "figs")):
        with pytest.raises(ValueError, match=rf"FIGURES_DIR='{bad}' is not a writable folder \(\w+Error"):
            params.check_output_dir("FIGURES_DIR", bad)


def test_output_dir_that_cannot_be_written_is_refused(tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # a read-only folder (root ignores chmod)
    with pytest.raises(ValueError, match=r"FIGURES_DIR='.*' is not a writable folder \(PermissionError"):
        params.check_output_dir("FIGURES_DIR", str(tmp_path))


def test_available_memory_is_a_plausible_byte_count():
    available = params.available_memory()
    assert available is None or 1e8 < available < 1e14


def test_memory_check_names_the_largest_part_its_settings_and_the_estimate():
    terms = [params.MemoryTerm("the rings", 3.2e12, {"n_train": 10**12}),
             params.MemoryTerm("the losses", 1e9, {"budget": 10, "num_members": 4})]
    assert params.check_memory(terms[1:], available=2e9) == 1e9
    with params.parameter_names({"n_train": "N_TRAIN"}):
        with pytest.raises(ValueError, match=r"needs about 3,201.0 GB of memory, more than the 2.0 GB available; "
                                             r"the largest part, the rings, takes about 3,200.0 GB and grows with "
                                             r"N_TRAIN=1000000000000"):
            params.check_memory(terms, available=2e9)


@pytest.mark.parametrize("value", ["../..", "..", ".", "", "a/b", "/tmp", ".hidden", 3, None])
def test_a_name_that_becomes_a_path_must_be_plain(value):
    with pytest.raises(ValueError, match=r"^PRESET=.* is not a plain name"):
        params.check_name("PRESET", value)


def test_a_plain_name_may_also_be_required_to_be_one_of_a_list():
    assert params.check_name("PRESET", "cpu", ["cpu", "smoke"]) == "cpu"
    with pytest.raises(ValueError, match=r"PRESET='gpu' is not allowed; choose one of \['cpu', 'smoke'\]"):
        params.check_name("PRESET", "gpu", ["cpu", "smoke"])


@pytest.mark.parametrize("parts", [("..",), ("a", "../../b"), ("/etc",), ("link",)])
def test_a_path_built_from_a_parameter_stays_in_its_folder(tmp_path, parts):
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ValueError, match=rf"^OUT=.* leads outside its folder {root}"):
        params.path_inside(root, *parts, name="OUT")
    assert params.path_inside(root, "a", "b", name="OUT") == root / "a" / "b"


@pytest.mark.parametrize("module, setting", [("lib.prcurves.experiment", "base_seed"),
                                             ("lib.prcurves.experiment", "split_seed"),
                                             ("lib.crel.experiment", "seed"), ("lib.regret.experiment", "seed"),
                                             ("lib.irs.experiment", "seed")])
@pytest.mark.parametrize("value", [2**64, 2**63, -1])
def test_a_seed_out_of_range_is_refused_naming_the_notebook_parameter(module, setting, value):
    """A seed >= 2**64 passed the integer check, then stopped the first training cell with 'Overflow when
    unpacking long long'; now the configuration cell names the parameter."""
    import importlib

    ex = importlib.import_module(module)
    notebook = {"PRESET": "smoke", setting.upper(): value, "__annotations__": {"PRESET": str, setting.upper(): int}}
    with pytest.raises(ValueError, match=rf"^{setting.upper()}={value} must be (<= {2**63 - 1}|>= 0)"):
        params.configure(ex.resolve_config, ex.PRESETS, notebook)
    assert params.check_seed("SEED", params.MAX_SEED) == 2**63 - 1


# ----------------------------------------------------------------------------------------------------
# Each parameter named once: derived from the config dataclass
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Inner:
    batch_size: int = 32
    seed: int = field(default=0, metadata={params.PARAMETER: None})  # not the notebook's SEED
    draws: int = field(default=3, metadata={params.PARAMETER: "CLASS_DRAWS"})


@dataclass(frozen=True)
class _Toy:
    preset: str = "a"  # PRESET itself: not an override
    seed: int = 0
    alphas: tuple = (0.1,)
    inner: _Inner = field(default_factory=_Inner)


def _resolve_toy(preset: str, **overrides) -> _Toy:
    config = params.resolve_preset({"a": _Toy(), "b": _Toy(preset="b", seed=5)}, preset, overrides)
    params.check_int("inner.batch_size", config.inner.batch_size, minimum=1)
    return config


def test_the_parameters_are_derived_from_the_dataclass_capitals_nesting_and_metadata():
    assert params.setting_parameters(_Toy()) == {"seed": "SEED", "alphas": "ALPHAS", "inner.batch_size": "BATCH_SIZE",
                                                 "inner.draws": "CLASS_DRAWS"}
    assert params.setting_parameters(_Toy(), declared=["SEED", "CLASS_DRAWS"]) == {"seed": "SEED",
                                                                                    "inner.draws": "CLASS_DRAWS"}


def test_configure_passes_the_notebooks_parameters_in_one_call_and_errors_name_them():
    notebook = {"PRESET": "b", "SEED": None, "ALPHAS": [0.2, 0.05], "BATCH_SIZE": 8, "CLASS_DRAWS": None,
                "OTHER": 1, "__annotations__": dict.fromkeys(["PRESET", "SEED", "ALPHAS", "BATCH_SIZE", "CLASS_DRAWS",
                                                               "OTHER"])}
    config = params.configure(_resolve_toy, {"a": _Toy(), "b": _Toy(preset="b", seed=5)}, notebook)
    assert config == _Toy(preset="b", seed=5, alphas=(0.2, 0.05), inner=_Inner(batch_size=8))  # None keeps "b"'s
    with pytest.raises(ValueError, match=r"^BATCH_SIZE=0 must be >= 1"):
        params.configure(_resolve_toy, {"a": _Toy()}, {**notebook, "PRESET": "a", "BATCH_SIZE": 0})
    with pytest.raises(ValueError, match=r"^PRESET='c' is not allowed"):
        params.configure(_resolve_toy, {"a": _Toy()}, {**notebook, "PRESET": "c"})


def test_the_resolved_table_shows_what_the_run_uses_and_the_presets_value_where_it_differs():
    presets = {"a": _Toy(), "b": _Toy(preset="b", seed=5)}
    notebook = {"PRESET": "b", "SEED": None, "ALPHAS": [0.2], "__annotations__": dict.fromkeys(["PRESET", "SEED",
                                                                                                  "ALPHAS"])}
    config = params.configure(_resolve_toy, presets, notebook)
    assert params.resolved_parameters(config, presets, notebook) == [
        {"parameter": "SEED", "value": "5", "preset": ""}, {"parameter": "ALPHAS", "value": "[0.2]", "preset": "[0.1]"}]


def test_the_resolved_table_shows_a_string_as_the_reader_types_it():
    @dataclass(frozen=True)
    class Source:
        preset: str = "a"
        cifar_source: str = "jpeg"
        note: str = ""

    notebook = {"PRESET": "a", "CIFAR_SOURCE": "python", "NOTE": None,
                "__annotations__": dict.fromkeys(["PRESET", "CIFAR_SOURCE", "NOTE"])}
    config = params.configure(lambda preset, **o: params.resolve_preset({"a": Source()}, preset, o), {"a": Source()},
                              notebook)
    assert params.resolved_parameters(config, {"a": Source()}, notebook) == [
        {"parameter": "CIFAR_SOURCE", "value": "python", "preset": "jpeg"},
        {"parameter": "NOTE", "value": "''", "preset": ""}]


def test_a_parameter_that_sets_settings_of_different_values_shows_each():
    @dataclass(frozen=True)
    class Two:
        preset: str = "a"
        steps: int = 30
        inner: _Inner = field(default_factory=lambda: _Inner(batch_size=100))
        other: _Inner = field(default_factory=_Inner)

    notebook = {"PRESET": "a", "BATCH_SIZE": None, "__annotations__": dict.fromkeys(["PRESET", "BATCH_SIZE"])}
    rows = params.resolved_parameters(Two(), {"a": Two()}, notebook)
    assert rows == [{"parameter": "BATCH_SIZE", "value": "inner.batch_size: 100; other.batch_size: 32", "preset": ""}]


def test_every_paper_package_types_its_config_and_takes_no_callback_that_stands_in_for_an_import():
    """A paper package's functions take their notebook's config class (IRSConfig, CReLConfig, …), never
    `config: Any`: a typed config is what a reader follows and a checker checks. `Any` stays in the core, whose
    functions take every notebook's config. No function takes an `extractor_for`-style callback of its own
    package (notebook 04's generators once did, to avoid importing IRSConfig)."""
    import ast
    from pathlib import Path

    import lib

    root, found = Path(lib.__file__).parent, []
    for package in ("prcurves", "crel", "regret", "irs", "diffusion"):
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
                    note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                    if arg.arg == "config" and note in ("", "Any"):
                        found.append(f"{package}/{path.name}:{fn.lineno} {fn.name}(config: {note or 'untyped'})")
                    if arg.arg == "extractor_for":
                        found.append(f"{package}/{path.name}:{fn.lineno} {fn.name}(extractor_for)")
    assert not found, found
