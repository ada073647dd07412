"""``rmqctl.records.dataclass`` builds the same classes as ``dataclasses.dataclass``: each shape
below is defined by both decorators and every observable behaviour is compared."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

from rmqctl import records


def shapes(decorate: Callable[..., Any]) -> dict[str, type]:
    """The same class definitions, decorated by ``decorate``."""

    @decorate(frozen=True, slots=True)
    class Queue:
        """A frozen slotted record."""

        topic: str
        broker: str
        queue_id: int = 0

    @decorate(frozen=True, slots=True)
    class View:
        """Defaults, factories, a field left out of init, compare and repr."""

        group: str
        queues: tuple[int, ...] = ()
        errors: Mapping[str, str] = dataclasses.field(default_factory=dict)
        seen: int = dataclasses.field(default=5, compare=False)
        hidden: str = dataclasses.field(default="h", repr=False)
        weight: float = dataclasses.field(default=1.0, hash=False)
        _derived: dict[str, Any] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
        LIMIT: ClassVar[int] = 3

        @property
        def size(self) -> int:
            return len(self.queues)

    @decorate(frozen=True, slots=True)
    class Fielded:
        """Every kind of field, and no class variable."""

        group: str
        queues: tuple[int, ...] = ()
        errors: Mapping[str, str] = dataclasses.field(default_factory=dict)
        seen: int = dataclasses.field(default=5, compare=False)
        hidden: str = dataclasses.field(default="h", repr=False)
        weight: float = dataclasses.field(default=1.0, hash=False)
        _derived: dict[str, Any] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    @decorate
    class Loose:
        """Not slotted: the class keeps each default as its attribute."""

        name: str
        count: int = dataclasses.field(default=2, repr=False)
        items: list[int] = dataclasses.field(default_factory=list)
        plain: str = "p"

    @decorate(frozen=True)
    class Plain:
        """Frozen, no slots."""

        name: str
        count: int = 1

    @decorate
    class Mutable:
        """Not frozen: unhashable, assignable."""

        name: str
        items: list[int] = dataclasses.field(default_factory=list)

    @decorate(frozen=True, slots=True)
    class Single:
        """One field: compared and hashed as a one-tuple."""

        value: float

    @decorate(frozen=True, slots=True)
    class Empty:
        """No fields at all."""

    @decorate(frozen=True, slots=True)
    class Own:
        """Methods of its own are kept."""

        name: str

        def __repr__(self) -> str:
            return f"<own {self.name}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Own) and other.name.lower() == self.name.lower()

        def __hash__(self) -> int:
            return hash(self.name.lower())

    @decorate
    class Posted:
        """``__post_init__`` runs after the fields are set."""

        name: str
        upper: str = ""

        def __post_init__(self) -> None:
            self.upper = self.name.upper()

    return {c.__name__: c for c in (Queue, View, Fielded, Loose, Plain, Mutable, Single, Empty, Own, Posted)}


STANDARD = shapes(dataclasses.dataclass)
OURS = shapes(records.dataclass)

ARGS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Queue": [(("T", "b"), {}), (("T", "b", 3), {}), ((), {"topic": "T", "broker": "b", "queue_id": 2})],
    "View": [(("g",), {}), (("g", (1, 2)), {"errors": {"b": "x"}, "seen": 9}), (("g",), {"hidden": "z", "weight": 2.5}),
             (("h", (1,)), {"seen": 1})],
    "Fielded": [(("g",), {}), (("g", (1, 2)), {"errors": {"b": "x"}, "seen": 9}), (("h", (1,)), {"weight": 2.5})],
    "Loose": [(("n",), {}), (("n", 3, [1]), {"plain": "q"})],
    "Plain": [(("n",), {}), (("n", 2), {})],
    "Mutable": [(("n",), {}), (("n", [1, 2]), {})],
    "Single": [((1.0,), {}), ((float("nan"),), {})],
    "Empty": [((), {})],
    "Own": [(("Ab",), {}), (("aB",), {})],
    "Posted": [(("ab",), {})],
}


def build(classes: dict[str, type], name: str) -> list[Any]:
    return [classes[name](*args, **kwargs) for args, kwargs in ARGS[name]]


def outcome(action: Callable[[], Any]) -> Any:
    """What ``action`` returns, or the type and message of what it raises."""
    try:
        return ("ok", action())
    except Exception as exc:  # noqa: BLE001 - the exception is the observed behaviour
        return ("raised", type(exc).__name__, str(exc))


def first_field(obj: Any) -> str:
    return next((f.name for f in dataclasses.fields(obj)), "")


def describe(cls: type, objs: list[Any]) -> dict[str, Any]:
    """Every behaviour compared, with class names made comparable."""
    hashable = cls.__hash__ is not None
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return {
        "fields": [(f.name, f.type, f.default, f.init, f.repr, f.compare, f.hash) for f in dataclasses.fields(cls)],
        "params": (params.init, params.repr, params.eq, params.order, params.unsafe_hash, params.frozen),
        "signature": str(inspect.signature(cls)),
        "init_annotations": cls.__init__.__annotations__,  # type: ignore[misc]
        "match_args": getattr(cls, "__match_args__", None),
        "slots": getattr(cls, "__slots__", None),
        "class_attributes": {name: repr(value) for name, value in vars(cls).items() if name in cls.__dataclass_fields__
                             and not inspect.ismemberdescriptor(value)},  # type: ignore[attr-defined]
        "doc": cls.__doc__,
        "hashable": hashable,
        "repr": [repr(o) for o in objs],
        "eq": [[a == b for b in objs] for a in objs],
        "ne": [[a != b for b in objs] for a in objs],
        "eq_other_type": [o == (o,) for o in objs],
        "eq_copy": [o == copy.copy(o) for o in objs],
        "hash": [outcome(lambda o=o: hash(o)) for o in objs] if hashable else None,
        # on copies: a class that is not frozen lets them through
        "setattr": [outcome(lambda o=o: setattr(copy.copy(o), first_field(o), "x")) for o in objs if first_field(o)],
        "setattr_other": [outcome(lambda o=o: setattr(copy.copy(o), "not_a_field", 1))[0] for o in objs],
        "delattr": [outcome(lambda o=o: delattr(copy.copy(o), first_field(o))) for o in objs if first_field(o)],
        "reduce": [repr(o.__reduce_ex__(2)[2]) for o in objs],
        "deepcopy": [repr(copy.deepcopy(o)) for o in objs],
        "asdict": [dataclasses.asdict(o) for o in objs],
        "astuple": [dataclasses.astuple(o) for o in objs],
        "replace": [repr(dataclasses.replace(o)) for o in objs],
        "state": [o.__getstate__() if hasattr(o, "__getstate__") else None for o in objs],
    }


@pytest.mark.parametrize("name", sorted(ARGS))
def test_the_class_behaves_as_the_standard_decorators(name: str) -> None:
    ours, standard = OURS[name], STANDARD[name]
    assert ours.__init__ is not standard.__init__  # type: ignore[misc]
    assert describe(ours, build(OURS, name)) == describe(standard, build(STANDARD, name))


def test_the_methods_are_not_compiled_from_source_and_init_only_when_needed() -> None:
    @records.dataclass(frozen=True, slots=True)
    class Lazy:
        """Built by this module."""

        a: int
        b: str = "x"

    assert isinstance(Lazy.__dict__["__init__"], records._LazyInit)
    assert Lazy.__eq__.__module__ == Lazy.__hash__.__module__ == Lazy.__repr__.__module__ == "rmqctl.records"
    first = Lazy(1)
    assert isinstance(Lazy.__dict__["__init__"], records._LazyInit)  # a handful of objects: not compiled
    assert first == Lazy(1, "x") and Lazy(1) != Lazy(2)
    assert str(inspect.signature(Lazy)) == "(a: 'int', b: 'str' = 'x') -> None"
    assert inspect.isfunction(Lazy.__dict__["__init__"])  # looked up on the class: compiled


def test_init_is_compiled_after_enough_objects() -> None:
    @records.dataclass(frozen=True, slots=True)
    class Many:
        """Built often."""

        a: int

    for i in range(records.COMPILE_AFTER):
        assert isinstance(Many.__dict__["__init__"], records._LazyInit)
        assert Many(i).a == i
    assert Many(-1).a == -1 and inspect.isfunction(Many.__dict__["__init__"])


def compiled_and_generic(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """What constructing ``name`` with these arguments gives under the generic binder and under the
    compiled ``__init__`` (a fresh pair of classes, one of them compiled first)."""
    generic_cls, compiled_cls = shapes(records.dataclass)[name], shapes(records.dataclass)[name]
    inspect.signature(compiled_cls)  # compiles its __init__
    assert isinstance(generic_cls.__dict__["__init__"], records._LazyInit)
    assert inspect.isfunction(compiled_cls.__dict__["__init__"])
    results = []
    for cls in (generic_cls, compiled_cls):
        made = outcome(lambda c=cls: c(*args, **kwargs))
        if made[0] == "ok":
            obj = made[1]
            made = ("ok", repr(obj), [(f.name, repr(getattr(obj, f.name, "<unset>"))) for f in dataclasses.fields(obj)],
                    sorted(vars(obj)) if hasattr(obj, "__dict__") else None)
        results.append(made)
    return results[0], results[1]


WRONG_ARGS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Queue": [(("T",), {}), (("T", "b", 1, 2), {}), (("T", "b"), {"topic": "U"}), ((), {"broker": "b"}),
              (("T", "b"), {"nope": 1})],
    "View": [(("g",), {"_derived": {}}), ((), {}), (("g", (), {}, 1, "h", 1.0, 2), {})],
    "Empty": [((1,), {}), ((), {"a": 1})],
    "Posted": [((), {"upper": "x"})],
}


@pytest.mark.parametrize("name", sorted(ARGS))
def test_the_generic_binder_gives_what_the_compiled_init_gives(name: str) -> None:
    for args, kwargs in ARGS[name] + WRONG_ARGS.get(name, []):
        generic, compiled = compiled_and_generic(name, args, kwargs)
        assert generic == compiled, (args, kwargs)


def test_factories_run_once_per_object_under_both() -> None:
    for _ in range(2):
        first, second = OURS["View"]("g"), OURS["View"]("g")
        assert first.errors == {} and first.errors is not second.errors
        assert first._derived is not second._derived


def test_wrong_arguments_fail_as_with_the_standard_decorator() -> None:
    for classes in (OURS, STANDARD):
        queue, view = classes["Queue"], classes["View"]
        assert outcome(lambda q=queue: q("T"))[:2] == ("raised", "TypeError")
        assert outcome(lambda q=queue: q("T", "b", 1, 2))[:2] == ("raised", "TypeError")
        assert outcome(lambda v=view: v("g", _derived={}))[:2] == ("raised", "TypeError")


def test_a_non_default_field_after_a_default_one_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @records.dataclass(frozen=True, slots=True)
        class Bad:
            """Out of order."""

            a: int = 1
            b: int  # type: ignore[misc]


def test_shapes_it_does_not_build_go_to_the_standard_decorator() -> None:
    @records.dataclass(order=True, frozen=True)
    class Ordered:
        """Ordered comparisons are the standard decorator's."""

        a: int

    @records.dataclass(frozen=True)
    class NoDoc:
        a: int

    for cls in (Ordered, NoDoc):
        assert cls.__eq__.__module__ != "rmqctl.records"
    assert Ordered(1) < Ordered(2)
    assert NoDoc.__doc__ == "NoDoc(a: 'int')"


def test_model_objects_pickle_and_copy_by_their_fields() -> None:
    from rmqctl.model import GroupView, MessageQueue

    queue = MessageQueue("T", "broker-a", 3)
    view = GroupView("G", (), {}, {}, (), topic_queues={"T": (queue,)})
    for obj in (queue, view):
        assert pickle.loads(pickle.dumps(obj)) == obj == copy.copy(obj) == copy.deepcopy(obj)
    with pytest.raises(dataclasses.FrozenInstanceError):
        queue.queue_id = 4  # type: ignore[misc]
