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
