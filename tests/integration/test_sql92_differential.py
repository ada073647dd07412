"""Differential test: rmqctl's SQL92 filter evaluator against the broker's own classes.

Thousands of random expressions (fixed seed) over random property maps, plus every row of the
table in ``tests/unit/test_sql92.py``, go through ONE run of ``rmqctl.harness.Sql92Oracle``
(tests/harness), which compiles each with the 5.3.3 broker's ``FilterFactory`` and evaluates it in
the broker's ``MessageEvaluationContext``. Each answer must agree: refused, TRUE, FALSE, NULL or an
evaluation error (a message that does not match).

Skipped when ``java`` or ``mvn`` is missing, unless ``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
from pathlib import Path

from rmqctl.model.sql92 import Sql92Error, compile_sql92
from tests.harness.plugin import real_part_missing
from tests.unit.test_sql92 import OUTCOMES, REFUSED

SEED = 20261125
RANDOM_CASES = 4000

_PROPS = ("a", "b", "TAGS", "p_a")
_VALUES = ("5", "6", "-3", "+7", "5.5", "0", "-0", "0.0", "-0.0", "abc", "", " 5", "5 ", "true", "TRUE",
           "false", "3000000000", "2147483647", "2147483648", "-2147483648", "9223372036854775808",
           "1e3", "1E-3", "NaN", "-Infinity", "Infinity", "0x1p3", "1d", "2f", "\u0663", "x'y", "tagA",
           "tagB", "a b", ".5", "5.")
_LITERALS = ("5", "0", "7L", "2147483648", "3000000000", "5.5", ".5", "5.", "1e3", "0.0", "'5'", "'abc'",
             "''", "'tagA'", "'x''y'", "TRUE", "FALSE", "NULL", "-5", "- 5.5", "+3", "99999999999999999999")


def _operand(rng: random.Random) -> str:
    return rng.choice(_PROPS) if rng.random() < 0.55 else rng.choice(_LITERALS)


def _condition(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth > 0 and roll < 0.25:
        op = rng.choice((" AND ", " OR ", " and ", " Or "))
        return _condition(rng, depth - 1) + op + _condition(rng, depth - 1)
    if depth > 0 and roll < 0.35:
        return f"NOT ({_condition(rng, depth - 1)})"
    if depth > 0 and roll < 0.42:
        return f"({_condition(rng, depth - 1)})"
    x = _operand(rng)
    kind = rng.randrange(9)
    if kind == 0:
        return f"{x} {rng.choice(('=', '<>'))} {_operand(rng)}"
    if kind == 1:
        return f"{x} {rng.choice(('>', '>=', '<', '<='))} {_operand(rng)}"
    if kind == 2:
        return f"{x} {rng.choice(('BETWEEN', 'NOT BETWEEN'))} {_operand(rng)} AND {_operand(rng)}"
    if kind == 3:
        items = ", ".join(rng.choice(("'5'", "'abc'", "'tagA'", "'tagB'", "''", "5")) for _ in range(rng.randint(1, 6)))
        return f"{x} {rng.choice(('IN', 'NOT IN'))} ({items})"
    if kind == 4:
        return f"{x} IS {rng.choice(('', 'NOT '))}NULL"
    if kind == 5:
        op = rng.choice(("CONTAINS", "STARTSWITH", "ENDSWITH", "NOT CONTAINS", "NOT STARTSWITH", "NOT ENDSWITH"))
        return f"{x} {op} {rng.choice(('%s' % _LITERALS[12], chr(39) + 'a' + chr(39), chr(39) + '5' + chr(39)))}"
    if kind == 6:
        return rng.choice(_PROPS + ("TRUE", "FALSE", "NULL"))
    if kind == 7:
        return f"NOT {x} = {_operand(rng)}"
    return f"-{x} > {_operand(rng)}"


def _mangle(text: str, rng: random.Random) -> str:
    """Now and then break the text: drop, double or insert a character."""
    if rng.random() > 0.15 or not text:
        return text
    i = rng.randrange(len(text))
    choice = rng.randrange(3)
    if choice == 0:
        return text[:i] + text[i + 1:]
    if choice == 1:
        return text[:i] + text[i] + text[i:]
    return text[:i] + rng.choice("()',=<>-!/*\n") + text[i:]


def _cases() -> list[tuple[str, dict[str, str]]]:
    rng = random.Random(SEED)
    cases = [(expr, dict(props)) for expr, props, _ in OUTCOMES]
    cases += [(expr, {}) for expr in REFUSED]
    for _ in range(RANDOM_CASES):
        expr = _mangle(_condition(rng, rng.randint(0, 3)), rng)
        props = {p: rng.choice(_VALUES) for p in _PROPS if rng.random() < 0.7}
        cases.append((expr, props))
    return cases


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def _java_answers(cases: list[tuple[str, dict[str, str]]], workdir: Path) -> list[str]:
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        real_part_missing(f"{' and '.join(missing)} not found: cannot run the broker's filter classes",
                          part="Java")
    from tests.harness.realcluster import build_harness

    payload = "".join("\t".join([_b64(e), *(_b64(x) for kv in p.items() for x in kv)]) + "\n"
                      for e, p in cases)
    proc = subprocess.run(
        [shutil.which("java") or "java", f"-Duser.home={workdir}", "-Dfile.encoding=UTF-8",
         "-cp", build_harness(), "rmqctl.harness.Sql92Oracle"],
        input=payload.encode("ascii"), capture_output=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    lines = proc.stdout.decode("ascii").splitlines()
    assert len(lines) == len(cases)
    return lines


def _ours(expr: str, props: dict[str, str]) -> str:
    try:
        selector = compile_sql92(expr)
    except Sql92Error:
        return "parse"
    return selector.outcome(props)


def test_every_expression_evaluates_like_the_broker(tmp_path: Path) -> None:
    cases = _cases()
    java = _java_answers(cases, tmp_path)
    wrong = [(e, p, j, _ours(e, p)) for (e, p), j in zip(cases, java, strict=True) if _ours(e, p) != j]
    outcomes = {j for j in java}
    # the random cases reach every outcome, so the comparison covers each of them
    assert outcomes >= {"parse", "true", "false", "null", "error"}
    assert not wrong, "\n".join(f"{e!r} {p!r}: broker {j}, rmqctl {o}" for e, p, j, o in wrong[:30])
