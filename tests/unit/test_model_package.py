"""The model package: cut by concern, every public name reachable from ``rmqctl.model``, and no
output dicts (documents are built in ``rmqctl.report``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import rmqctl.model

SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(rmqctl.model.__path__))


def test_the_package_is_cut_by_concern() -> None:
    assert SUBMODULES == ["cluster", "consumer", "finding", "formatting", "group", "history", "java", "message",
                          "names", "sql92"]


def test_every_public_name_is_re_exported() -> None:
    for name in SUBMODULES:
        module = importlib.import_module(f"rmqctl.model.{name}")
        own = {n for n, v in vars(module).items()
               if not n.startswith("_") and getattr(v, "__module__", module.__name__) == module.__name__
               and not inspect.ismodule(v) and n != "annotations"}
        missing = {n for n in own if getattr(rmqctl.model, n, None) is not getattr(module, n)}
        assert missing == set(), (name, missing)
    assert set(rmqctl.model.__all__) == {n for n in dir(rmqctl.model) if not n.startswith("_")} - {
        "annotations", *SUBMODULES}


def test_the_model_keeps_no_output_dicts() -> None:
    shaped = {name for name in rmqctl.model.__all__
              if inspect.isclass(cls := getattr(rmqctl.model, name))
              and any(hasattr(cls, attr) for attr in ("as_dict", "to_dict", "to_json"))}
    assert shaped == set()
