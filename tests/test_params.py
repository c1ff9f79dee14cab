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
