"""``dataclass`` for rmqctl's own classes, built without compiling source at import time.

:func:`dataclasses.dataclass` writes the source of up to six methods per class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, and a frozen class's ``__setattr__`` and ``__delattr__``)
and compiles each one; for the few dozen classes a command imports that is most of the time the
model takes to import. This decorator takes the same options and gives the same class: the
standard decorator still collects the fields (``dataclasses.fields``, ``replace``, ``asdict``,
``__match_args__``, slots and pickling are its own), but the comparison, hash, repr and frozen
methods are closures over the field names, which need no compiler. ``__init__``, which must be
compiled to construct many objects fast, is compiled once the class has been constructed
:data:`COMPILE_AFTER` times or its ``__init__`` is looked up on the class (for a signature);
until then a generic binder assigns the same fields in the same order from the same arguments
(most classes a command imports build a handful of objects), and any call it cannot bind
cleanly goes to the compiled one, which raises the standard decorator's error. The methods behave as the
standard ones: ``__eq__`` compares the same tuples of fields of two objects of the same class,
``__hash__`` hashes that tuple, ``__repr__`` prints the fields with ``repr=True``, assigning or
deleting a field of a frozen object raises :class:`dataclasses.FrozenInstanceError` (so does any
other attribute of a frozen slotted object, where Python 3.11's decorator fails with a
``TypeError`` from its ``super()`` call), and a class that defines one of these methods itself
keeps its own. Anything outside that common
shape (``order``, ``unsafe_hash``, ``kw_only``, ``InitVar``, dataclass bases, a class without a
docstring) goes to :func:`dataclasses.dataclass` unchanged.

Type checkers see :func:`dataclasses.dataclass` itself. Standard library only; must not import
anything from rmqctl.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from types import MemberDescriptorType, MethodType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    def dataclass(cls: type | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,
                  order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
                  kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> Any:
        options = {"init": init, "repr": repr, "eq": eq, "order": order, "unsafe_hash": unsafe_hash,
                   "frozen": frozen, "match_args": match_args, "kw_only": kw_only, "slots": slots,
                   "weakref_slot": weakref_slot}

        def wrap(cls: type) -> type:
            return _build(cls, options)

        return wrap if cls is None else wrap(cls)


_MISSING = dataclasses.MISSING

#: Constructions of a class that go through the generic binder before its ``__init__`` is compiled.
COMPILE_AFTER = 64


def _plain(cls: type, options: dict[str, bool]) -> bool:
    """Whether ``cls`` and ``options`` are of the shape this module builds itself."""
    if (options["order"] or options["unsafe_hash"] or options["kw_only"] or options["weakref_slot"]
            or not (options["init"] and options["repr"] and options["eq"])):
        return False
    own = cls.__dict__
    if not own.get("__doc__"):
        return False  # the standard decorator writes a docstring from the signature
    if options["frozen"] and ("__setattr__" in own or "__delattr__" in own):
        return False  # the standard decorator refuses them
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        return False
    for annotation in own.get("__annotations__", {}).values():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
        if "InitVar" in text or "KW_ONLY" in text:
            return False
    return not any(isinstance(value, dataclasses.Field) and value.kw_only is True for value in own.values())


def _build(cls: type, options: dict[str, bool]) -> type:
    if not _plain(cls, options):
        return _standard(cls, options)
    own = cls.__dict__
    class_hash = own.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
    frozen = options["frozen"]
    new = _collected(cls, options)
    if new is None:
        new = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False,
                                    match_args=options["match_args"], slots=options["slots"])
    fields = list(dataclasses.fields(new))
    _check_default_order(new, fields)
    names = tuple(f.name for f in fields)
    _install(new, "__init__", _LazyInit(new, fields, frozen))
    _install(new, "__repr__", _repr_method(new, tuple(f.name for f in fields if f.repr)))
    compared = tuple(f.name for f in fields if f.compare)
    _install(new, "__eq__", _eq_method(new, compared))
    if frozen:
        _install(new, "__setattr__", _frozen_setattr(new, names))
        _install(new, "__delattr__", _frozen_delattr(new, names))
        if options["slots"]:
            setattr(new, "__getstate__", _getstate)  # noqa: B010 - pickling, as the standard decorator
            setattr(new, "__setstate__", _setstate)  # noqa: B010
    if not explicit_hash:
        if frozen:
            hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
            setattr(new, "__hash__", _hash_method(new, hashed))  # noqa: B010
        else:
            setattr(new, "__hash__", None)  # noqa: B010 - unhashable, as the standard decorator
    params = getattr(new, "__dataclass_params__")  # noqa: B009
    params.init, params.repr, params.eq, params.frozen = True, True, True, frozen
    return new


def _collected(cls: type, options: dict[str, bool]) -> type | None:
    """``cls`` with its fields collected as the standard decorator collects them (the same
    ``Field`` objects, class attributes, ``__match_args__``, parameters and slotted class), for
    the plainest classes: a direct subclass of ``object`` whose annotations are strings naming
    neither ``ClassVar``, ``InitVar`` nor ``KW_ONLY``. None, having changed nothing, for any
    other class (or one the standard decorator refuses), which it then collects itself."""
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    params_type = dataclasses._DataclassParams  # type: ignore[attr-defined]
    slots_of_params = getattr(params_type, "__slots__", ())
    if (cls.__bases__ != (object,) or type(cls) is not type or "__slots__" in own
            or not slots_of_params or not set(slots_of_params) <= options.keys()
            or not hasattr(dataclasses, "_FIELD")):
        return None
    if any(not isinstance(text, str) or "ClassVar" in text or "InitVar" in text or "KW_ONLY" in text
           for text in annotations.values()):
        return None
    if any(isinstance(value, dataclasses.Field) and name not in annotations for name, value in own.items()):
        return None
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name in annotations:
        declared = own.get(name, _MISSING)
        f = declared if isinstance(declared, dataclasses.Field) else dataclasses.field(default=declared)
        if f.default.__class__.__hash__ is None or f.kw_only is True:
            return None  # a mutable default: the standard decorator's error
        fields[name] = f
    for name, f in fields.items():
        f.name, f.type = name, annotations[name]
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        if f.kw_only is _MISSING:
            f.kw_only = False
        if isinstance(own.get(name), dataclasses.Field):
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    params = object.__new__(params_type)
    for name in slots_of_params:
        setattr(params, name, options[name])
    setattr(cls, "__dataclass_params__", params)  # noqa: B010
    setattr(cls, "__dataclass_fields__", fields)  # noqa: B010
    if options["match_args"] and "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(name for name, f in fields.items() if f.init))  # noqa: B010
    if not options["slots"]:
        return cls
    namespace = dict(own)
    namespace["__slots__"] = tuple(fields)
    for name in fields:
        namespace.pop(name, None)
    namespace.pop("__dict__", None)
    slotted = type(cls.__name__, cls.__bases__, namespace)
    slotted.__qualname__ = cls.__qualname__
    return slotted


def _standard(cls: type, options: dict[str, bool]) -> type:
    made: type = dataclasses.dataclass(cls, **options)
    return made


def _install(cls: type, name: str, method: Any) -> None:
    """Set ``method`` unless the class body defined ``name`` itself (as the standard decorator)."""
    if name in cls.__dict__:
        return
    if not isinstance(method, _LazyInit):
        method.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, method)


def _check_default_order(cls: type, fields: list[dataclasses.Field[Any]]) -> None:
    seen_default = False
    for f in fields:
        if not f.init:
            continue
        if f.default is _MISSING and f.default_factory is _MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True


def _tuple_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_method(cls: type, names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _tuple_of(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other is self:
            return True  # what comparing the fields would say, as the standard decorator's tuples do
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    return __eq__


def _hash_method(cls: type, names: tuple[str, ...]) -> Callable[[Any], int]:
    values = _tuple_of(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))
    return __hash__


def _repr_method(cls: type, names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"
    return __repr__


def _frozen_setattr(cls: Any, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)
    return __setattr__


def _frozen_delattr(cls: Any, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __delattr__


def _getstate(self: Any) -> list[Any]:
    # a frozen slotted object is pickled and copied by its fields' values, as the standard decorator
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


class _Plan:
    """How the generic binder of a class assigns its fields: the ``__init__`` parameters in order
    (name, default, factory), the parameter names a keyword may name after ``n`` positional
    arguments, the assignments in field order (name, the parameter's index or -1 for a field
    outside ``__init__``, default, factory; a field outside ``__init__`` without a default is not
    assigned), and whether ``__post_init__`` runs."""

    __slots__ = ("params", "keywords_after", "steps", "post_init")

    def __init__(self, cls: type, fields: list[dataclasses.Field[Any]]) -> None:
        self.params = [(f.name, f.default, f.default_factory) for f in fields if f.init]
        names = [name for name, _, _ in self.params]
        self.keywords_after = [frozenset(names[n:]) for n in range(len(names) + 1)]
        index = {name: i for i, name in enumerate(names)}
        self.steps = [(f.name, index.get(f.name, -1), f.default, f.default_factory) for f in fields
                      if f.init or f.default is not _MISSING or f.default_factory is not _MISSING]
        self.post_init = hasattr(cls, "__post_init__")


class _LazyInit:
    """The class's ``__init__`` until it is compiled: for its first :data:`COMPILE_AFTER`
    constructions a generic binder sets the fields; then, or when ``__init__`` is looked up on the
    class, it compiles the real one (the source the standard decorator would write), puts it on
    the class and steps aside."""

    __slots__ = ("_cls", "_fields", "_frozen", "_left", "_plan")

    def __init__(self, cls: type, fields: list[dataclasses.Field[Any]], frozen: bool) -> None:
        self._cls, self._fields, self._frozen = cls, fields, frozen
        self._left = COMPILE_AFTER
        self._plan: _Plan | None = None

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is not None and self._left > 0:
            self._left -= 1
            return MethodType(self._bind, obj)
        real = self._compile()
        return real if obj is None else real.__get__(obj, objtype)

    def _bind(self, obj: Any, /, *args: Any, **kwargs: Any) -> None:
        """Set ``obj``'s fields from the arguments as the compiled ``__init__`` would; a call that
        does not bind (too many, unknown, repeated or missing arguments) goes to the compiled one."""
        plan = self._plan
        if plan is None:
            plan = self._plan = _Plan(self._cls, self._fields)
        given = len(args)
        if given > len(plan.params) or (kwargs and not kwargs.keys() <= plan.keywords_after[given]):
            return self._compile()(obj, *args, **kwargs)
        values = list(args)
        for name, default, factory in plan.params[given:]:
            if name in kwargs:
                values.append(kwargs[name])
            elif factory is not _MISSING:
                values.append(_HAS_FACTORY)  # called in field order below, as the compiled one does
            elif default is not _MISSING:
                values.append(default)
            else:
                return self._compile()(obj, *args, **kwargs)
        assign = object.__setattr__ if self._frozen else setattr
        for name, i, default, factory in plan.steps:
            if i < 0:
                value = factory() if factory is not _MISSING else default
            else:
                value = values[i]
                if value is _HAS_FACTORY and factory is not _MISSING:
                    value = factory()
            assign(obj, name, value)
        if plan.post_init:
            obj.__post_init__()
        return None

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> None:
        self._compile()(obj, *args, **kwargs)

    def _compile(self) -> Callable[..., None]:
        current = self._cls.__dict__.get("__init__")
        if current is not self:
            return cast("Callable[..., None]", current)  # compiled by another caller meanwhile
        cls = self._cls
        namespace: dict[str, Any] = {"__dataclass_object__": object, "__dataclass_factory__": _HAS_FACTORY}
        this = "__dataclass_self__" if any(f.name == "self" for f in self._fields) else "self"
        params, body = [this], []
        for f in self._fields:
            default_name = f"__dataclass_dflt_{f.name}__"
            if f.default_factory is not _MISSING:
                namespace[default_name] = f.default_factory
                if f.init:
                    params.append(f"{f.name}=__dataclass_factory__")
                    value = f"{default_name}() if {f.name} is __dataclass_factory__ else {f.name}"
                else:
                    value = f"{default_name}()"
            elif f.init:
                if f.default is not _MISSING:
                    namespace[default_name] = f.default
                    params.append(f"{f.name}={default_name}")
                else:
                    params.append(f.name)
                value = f.name
            elif f.default is not _MISSING:
                namespace[default_name] = f.default
                value = default_name
            else:
                continue
            slot = cls.__dict__.get(f.name)
            if self._frozen and isinstance(slot, MemberDescriptorType):
                # a slot's own setter: what object.__setattr__ finds after looking the name up,
                # at about half its cost (most objects of a round are built here)
                setter = f"__dataclass_set_{f.name}__"
                namespace[setter] = slot.__set__
                body.append(f"    {setter}({this}, {value})")
            elif self._frozen:
                body.append(f"    __dataclass_object__.__setattr__({this}, {f.name!r}, {value})")
            else:
                body.append(f"    {this}.{f.name} = {value}")
        if hasattr(cls, "__post_init__"):
            body.append(f"    {this}.__post_init__()")
        source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
        exec(source, namespace)  # noqa: S102 - the source is built above from the field names
        init: Callable[..., None] = namespace["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        init.__module__ = cls.__module__
        init.__annotations__ = {f.name: f.type for f in self._fields if f.init} | {"return": None}
        type.__setattr__(cls, "__init__", init)
        return init


class _HasFactory:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _HasFactory()
