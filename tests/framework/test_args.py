"""PluginArgs: the one decoder of plugin args, its defaults and its words."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from ksched import (
    ArgsErrors,
    Duration,
    FilterPlugin,
    Int32,
    PluginArgs,
    PluginArgsError,
)
from ksched.api.objects import NodeAffinity
from ksched.framework.args import EMPTY_IS_DEFAULT, KubeArgs
from ksched.framework.registry import PluginSpec, parse_plugin_args


class Point(PluginArgs):
    x: Int32 = 0
    y: Int32 = 0


class Shape(PluginArgs):
    points: list[Point] = []
    timeout: Duration = 10.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=5)] = 3
    seed: int | None = None
    ratio: float = 0.5
    affinity: NodeAffinity | None = None
    tags: dict[str, str] = {}

    def validate(self, errs: ArgsErrors) -> None:
        if len(self.points) > 1 and self.points[0].x >= self.points[1].x:
            errs.invalid("points[1].x", self.points[1].x, "must increase")


class Plain(FilterPlugin):
    name = "Plain"

    class Args(PluginArgs):
        forbidden: list[str] = []
        max_count: Int32 = 4


def err(data: Any, cls: type[PluginArgs] = Shape) -> str:
    with pytest.raises(PluginArgsError) as e:
        cls.parse("P", data)
    return str(e.value)


def test_defaults_come_from_the_fields_and_lists_are_not_shared() -> None:
    a, b = Shape.parse("P", {}), Shape.parse("P", {})
    assert a == Shape() and a.timeout == 10.0 and a.limit == 3 and a.seed is None
    a.points.append(Point(1, 2))
    a.tags["k"] = "v"
    assert b.points == [] and b.tags == {} and Shape().points == []


def test_camel_case_names_nested_args_and_values() -> None:
    s = Shape.parse(
        "P",
        {
            "points": [{"x": 1}, {"x": 2, "y": 3}],
            "timeout": "1m30s",
            "seed": None,
            "ratio": 2,
            "tags": {"a": "b"},
            "affinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            },
        },
    )
    assert s.points == [Point(1, 0), Point(2, 3)]
    assert s.timeout == 90.0 and s.ratio == 2 and s.tags == {"a": "b"}
    assert s.affinity is not None
    assert Plain.Args.parse("Plain", {"maxCount": 2}).max_count == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"points": [{"x": "1"}]}, "args.points[0].x: must be an integer, got '1'"),
        ({"points": [{"x": True}]}, "args.points[0].x: must be an integer, got True"),
        ({"points": [{"z": 1}]}, "args.points[0].z: unknown field (known fields: x, y)"),
        ({"points": {"x": 1}}, "args.points: must be a list, got {'x': 1}"),
        ({"points": [3]}, "args.points[0]: must be an object, got 3"),
        ({"points": [{"x": 2**31}]}, "args.points[0].x: must be a 32-bit integer, got 2147483648"),
        ({"timeout": 5}, "args.timeout: must be a string, got 5"),
        ({"timeout": "soon"}, 'args.timeout: Invalid value: "soon": must be a duration'),
        ({"limit": 0}, "args.limit: must be at least 1, got 0"),
        ({"limit": 9}, "args.limit: must be at most 5, got 9"),
        ({"seed": "7"}, "args.seed: must be an integer or null, got '7'"),
        ({"ratio": "x"}, "args.ratio: must be a number, got 'x'"),
        ({"tags": {"a": 1}}, "args.tags.a: must be a string, got 1"),
        (
            {"affinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"bogus": 1}}},
            "args.affinity.requiredDuringSchedulingIgnoredDuringExecution.bogus: unknown field",
        ),
        (
            {"affinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "x"}]}},
            "args.affinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
            "Expected `int`, got `str`",
        ),
        ({"points": [{"x": 2}, {"x": 1}]}, "args.points[1].x: Invalid value: 1: must increase"),
        (
            {"limit": "a", "nope": 1, "seed": 1.5},
            "args: [nope: unknown field (known fields: points, timeout, limit, seed, ratio, "
            "affinity, tags), limit: must be an integer, got 'a', seed: must be an integer or "
            "null, got 1.5]",
        ),
        ([1], "args: expected a mapping, got list"),
    ],
)
def test_problems_name_the_field_path(data: Any, message: str) -> None:
    assert err(data) == f"plugin P: {message}"


def test_validate_runs_only_on_well_typed_args() -> None:
    # A type problem stops before validate, which could not read the field.
    assert err({"points": [{"x": 2}, {"x": "1"}]}) == (
        "plugin P: args.points[1].x: must be an integer, got '1'"
    )


def test_kube_args_word_problems_as_kube_scheduler() -> None:
    class K(KubeArgs):
        weight: Annotated[int, EMPTY_IS_DEFAULT] = 1
        on: bool = False

    assert err({"bogus": 1}, K) == "plugin P: args.bogus: unknown field"
    assert err({"on": [1]}, K) == "plugin P: args.on: must be a boolean, got a list"
    assert err({"weight": True}, K) == "plugin P: args.weight: must be an integer, got true"
    assert K.parse("P", {"weight": 0}).weight == 1  # Go's zero value gets the default


def test_rename_none_keeps_the_names_as_written() -> None:
    class Snake(PluginArgs, rename=None):
        favorite_color: str = ""

    assert Snake.parse("P", {"favorite_color": "red"}).favorite_color == "red"
    assert "known fields: favorite_color" in err({"favoriteColor": "red"}, Snake)


def test_a_plugin_gets_its_args_from_an_args_a_dict_or_nothing() -> None:
    assert Plain().args == Plain.Args([], 4)
    assert Plain({"forbidden": ["lead"]}).args.forbidden == ["lead"]
    given = Plain.Args(forbidden=["tin"])
    assert Plain(given).args is given
    with pytest.raises(PluginArgsError, match=r"plugin Plain: args\.maxCount: must be"):
        Plain({"maxCount": "4"})


def test_the_registry_decodes_with_the_same_decoder() -> None:
    spec = PluginSpec("Plain", lambda a, h: Plain(a, h), Plain)
    assert parse_plugin_args(spec, {"forbidden": ["x"]}) == Plain.Args(["x"])
    with pytest.raises(PluginArgsError, match=r"args\.forbidden: must be a list"):
        parse_plugin_args(spec, {"forbidden": "x"})


class S(KubeArgs):
    name: str = ""
    weight: Annotated[int, EMPTY_IS_DEFAULT] = 1


class A(KubeArgs):
    resources: Annotated[list[S], EMPTY_IS_DEFAULT] = msgspec.field(
        default_factory=lambda: [S("cpu")]
    )
    timeout: Duration = 10.0
    later: Duration | None = None
    flag: bool = False
    extra: list[str] = []


def test_with_defaults_shows_what_the_effective_config_writes() -> None:
    assert A.with_defaults({}) == {
        "resources": [{"name": "cpu", "weight": 1}],
        "timeout": "10s",
        "flag": False,
    }
    raw = {"timeout": "1m", "resources": [{"name": "gpu"}, "junk"], "x": 1}
    out = A.with_defaults(raw)
    assert list(out) == ["timeout", "resources", "x", "flag"]  # the user's order first
    assert out["resources"] == [{"name": "gpu", "weight": 1}, "junk"]  # parse refuses junk
    assert raw["resources"] == [{"name": "gpu"}, "junk"]  # not modified
    assert A.with_defaults({"resources": []})["resources"] == [{"name": "cpu", "weight": 1}]
