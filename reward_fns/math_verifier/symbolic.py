"""The symbolic judges of ``math_answer``: equations, math-verify and sympy.

Importing this module imports math-verify and sympy, so the parent process
of a reward run only pays for it when a case needs symbolic algebra, and the
timeout guard subprocess preloads it before its clock starts. :func:`judge`
is the entry point the guard runs (see :mod:`~rewardsmith.reward_fns.math_verifier.judges` for the order
of the judges).
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache, partial
from typing import Any, Callable

import sympy
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig
from sympy.parsing.sympy_parser import (
    convert_xor,
    implicit_multiplication_application,
    parse_expr,
    standard_transformations,
)

from rewardsmith.reward_fns.math_verifier.answer_types import answer_type, piecewise_rows
from rewardsmith.reward_fns.math_verifier.normalize import ParsedNumber
from rewardsmith.reward_fns.math_verifier.readable import SPECIAL_FUNCTION_NAMES
from rewardsmith.reward_fns.math_verifier.judges import STRICT, GradingPolicy, Verdict, approximation_verdict, run_judges
from rewardsmith.reward_fns.math_verify_lib import parse, verify

_PLAIN_MATH = re.compile(r"^[0-9a-zA-Z+\-*/^(). ]+$")
# Only these multi-letter names may appear in plain-text math handed to sympy's
# parser (which evaluates Python): anything else is not parsed at all.
_PLAIN_NAMES = frozenset({"sqrt", "pi", "e", "i", "I", "log", "ln", "sin", "cos", "tan", "exp"})
_TRANSFORMATIONS = (*standard_transformations, implicit_multiplication_application, convert_xor)
# math-verify reads an unbased \log as base 10; answers and golds often mean the natural log.
_UNBASED_LOG = re.compile(r"\\log(?![_A-Za-z])")
_RELATIONS = re.compile(r"\\(?:le|ge|leq|geq|neq|ne|lt|gt)(?![A-Za-z])|[<>!]")


# One judgement of each kind of notation, made at import: latex2sympy's ANTLR parser builds
# its prediction tables (DFA) the first time it meets each construct, which costs 10-50 ms a
# construct, and sympy fills its caches on first use. The timeout guard pays this when it
# loads this module, before its clock starts (about a second), not inside the first samples.
_WARM_UP = (("\\sqrt{3}", "\\sqrt{2}"), ("x^2 + 2x + 1", "(x+1)^2"), ("(x-1)(x-2)", "x^2-3x+2"),
            ("y = 2x + 3", "2x - y + 3 = 0"), ("x^2 + y^2 = 5", "x^2+y^2=25"),
            ("\\begin{pmatrix}1 & 2\\\\3 & 4\\end{pmatrix}", "\\begin{bmatrix}1 & 2\\\\3 & 4\\end{bmatrix}"),
            ("[1, 2)", "x \\ge 1"), ("(-\\infty, 2) \\cup (3, \\infty)", "(-\\infty,2]"), ("x \\in [2, 5]", "[2,5]"),
            ("\\{1, 2\\}", "1, 2"), ("1, 1, 2, 3", "1, 1, 2, 3"), ("(1, \\frac{1}{2})", "(1, 2)"),
            ("\\sin 60^\\circ", "\\frac{\\sqrt{3}}{2}"), ("\\sin^2 45^\\circ", "\\cos(\\pi/4)"),
            ("\\tan 30", "\\arctan 1"), ("e^{i\\pi}", "-1"), ("e^{2\\pi i}", "1"), ("\\frac{1}{2} + \\frac{\\sqrt{3}}{2}i", "3 - 4i"),
            ("\\ln 2", "\\log 2"), ("\\log_2 8", "\\log_{3} 6"), ("\\left(\\dfrac{1}{2}\\right)", "{1 \\over 2}"),
            ("1.5 \\times 10^3", "6.02\\times 10^{23}"), ("1F_{16}", "123_5"), ("3pi/2", "\\frac{3\\pi}{2}"),
            ("\\operatorname{lcm}(4,6) = 12", "12"), ("\\binom{5}{2} + 3!", "\\sqrt[3]{8} \\cdot 2"),
            ("\\text{not } 12", "12"), ("ab(a+b)", "a^2b+ab^2"), ("\\pm 2", "2, -2"))


def _warm_up() -> None:
    for pred, gold in _WARM_UP:
        judge(pred, gold)


def judge(pred: str, gold: str, policy: GradingPolicy = STRICT) -> Verdict:
    """Full judgement of answer ``pred`` against ``gold``; may take unbounded time.

    A failure inside sympy or math-verify (seen: a ``KeyError`` holding an assumptions dict from sympy's
    caches, after many judgements in one guard process) decides nothing: the verdict is ``undecided``.
    """
    try:
        verdict = run_judges(pred, gold, partial(symbolic_equal, policy=policy), policy)
    except Exception as exc:  # noqa: BLE001 - the libraries' own failures are no verdict on the answer
        return Verdict("undecided", "could not compare", f"could not compare: the symbolic judges raised "
                                                         f"{type(exc).__name__} ({str(exc)[:80]!r})")
    assert verdict is not None  # symbolic_equal always decides
    return verdict


def _math_verify_parse(text: str) -> list[Any]:
    return list(_cached_parse(text))


# The gold of a group is parsed once for all its samples, and an answer string once per
# judgement that needs it (the equation and \log paths parse sides again); sympy values are
# immutable, so sharing them is safe. math-verify's own cache keeps only the last 20.
@lru_cache(maxsize=2048)
def _cached_parse(text: str) -> tuple[Any, ...]:
    text, values = _special_calls(text)
    # Wrapped in \boxed{} so that an answer without $..$ still parses as LaTeX.
    parsed = parse("\\boxed{" + text + "}", (LatexExtractionConfig(),), fallback_mode="no_fallback")
    parsed = parsed or parse(text, (ExprExtractionConfig(),), fallback_mode="no_fallback")
    if not values:
        return tuple(parsed)
    return tuple(value.xreplace({s: values[s.name] for s in value.free_symbols if s.name in values})
                 if isinstance(value, sympy.Basic) else value for value in parsed)


# Special functions, by the name an answer gives them, as sympy evaluates them (math-verify's parser
# drops \operatorname{erf}, reads "\text{erf}(x+1)" as a product and "\Gamma (x)" as Euler's constant
# times x); cis t is e^{it}.
SPECIAL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "Gamma": sympy.gamma, "zeta": sympy.zeta, "erf": sympy.erf, "erfc": sympy.erfc, "erfi": sympy.erfi,
    "Ei": sympy.Ei, "Si": sympy.Si, "Ci": sympy.Ci, "li": sympy.li, "digamma": sympy.digamma,
    "B": lambda a, b: sympy.gamma(a) * sympy.gamma(b) / sympy.gamma(a + b),
    "Beta": lambda a, b: sympy.gamma(a) * sympy.gamma(b) / sympy.gamma(a + b),
    "cis": lambda t: sympy.exp(sympy.I * t),
}
assert set(SPECIAL_FUNCTIONS) == SPECIAL_FUNCTION_NAMES
_NAMES = "|".join(sorted(SPECIAL_FUNCTIONS, key=len, reverse=True))
# The name as a command, an operator name or roman text, or bare (not inside a longer name).
_SPECIAL_NAME = re.compile(rf"(?:\\operatorname\*?\s*\{{\s*|\\mathrm\s*\{{\s*|\\text\s*\{{\s*|\\|(?<![A-Za-z\\]))"
                           rf"({_NAMES})(?:\s*\}})?(?![A-Za-z])\s*")
# Without parentheses, cis takes a fraction, a command or a number ("\operatorname{cis}\frac{\pi}{2}").
_BARE_ARGUMENT = re.compile(r"\\frac\s*\{[^{}]*\}\s*\{[^{}]*\}|\\[A-Za-z]+|\{[^{}]*\}|[0-9.]+(?:\s*\\pi)?")


def _special_calls(text: str) -> tuple[str, dict[str, Any]]:
    """``text`` with each special function call whose arguments parse replaced by a placeholder symbol,
    and the placeholders' names (as the parser spells them) with their values."""
    values: dict[str, Any] = {}
    position = 0
    while (match := _SPECIAL_NAME.search(text, position)) is not None:
        position = match.end()
        arguments, end = _call_arguments(text, match.end(), bare=match.group(1) == "cis")
        parsed = [_first_expression(_math_verify_parse(argument)) for argument in arguments or ()]
        if not parsed or any(argument is None for argument in parsed):
            continue
        try:
            value = SPECIAL_FUNCTIONS[match.group(1)](*parsed)
        except Exception:  # noqa: BLE001 - the wrong number of arguments: the call stays unread
            continue
        placeholder = f"90{len(values)}"
        values[f"xi_{{{placeholder}}}"] = value
        text = f"{text[:match.start()]} \\Xi_{{{placeholder}}} {text[end:]}"
        position = match.start()
    return text, values


def _call_arguments(text: str, start: int, bare: bool) -> tuple[list[str] | None, int]:
    """The comma-separated arguments in the parentheses that open at ``start`` (or, when ``bare``, the one
    argument written there without them) and where the call ends; ``None`` when there is none."""
    if text.startswith("(", start):
        depth = 0
        for index in range(start, len(text)):
            depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(text[index], 0)
            if depth == 0:
                inner = text[start + 1 : index]
                return [a for a in re.split(r",(?![^(){}]*[)}])", inner)], index + 1
        return None, start
    argument = _BARE_ARGUMENT.match(text, start) if bare else None
    return ([argument.group(0)], argument.end()) if argument else (None, start)


def _first_expression(parsed: list[Any]) -> Any | None:
    return next((value for value in parsed if isinstance(value, sympy.Expr)), None)


def _exact_real(parsed: list[Any]) -> Any | None:
    """The first exact real number among math-verify's parses (a Fraction when rational)."""
    for value in parsed:
        if getattr(value, "is_number", False) and getattr(value, "is_real", False) and not value.is_Float:
            return Fraction(int(value.p), int(value.q)) if value.is_Rational else value
    return None


def _plain_sympy(text: str) -> Any | None:
    """``text`` as a sympy expression when it is plain-text math over known names only."""
    if len(text) > 200 or not _PLAIN_MATH.match(text):
        return None
    if any(len(name) > 1 and name not in _PLAIN_NAMES for name in re.findall(r"[A-Za-z]+", text)):
        return None
    try:
        return parse_expr(text.replace("ln", "log"), transformations=_TRANSFORMATIONS)
    except Exception:  # noqa: BLE001 - unparsable text simply is not plain math
        return None


def _is_equation(text: str) -> bool:
    return text.count("=") == 1 and not _RELATIONS.search(text)


def _equation_difference(text: str) -> Any | None:
    """``lhs - rhs`` of a one-``=`` equation, as a sympy expression."""
    sides = [_first_expression(_math_verify_parse(side)) for side in text.split("=")]
    if any(side is None for side in sides):
        return None
    return sides[0] - sides[1]


def equation_verdict(answer: str, target: str) -> Verdict:
    """Two equations are the same when ``lhs - rhs`` of one is a nonzero constant times the other's.

    ``y = 2x + 3``, ``2x - y + 3 = 0`` and ``4x - 2y = -6`` are the same line.
    Wrong when the variables differ or the ratio takes two values at the probe
    points; undecided when a side cannot be read or the ratio is not shown
    constant yet takes one value wherever evaluated.
    """
    answer_difference, target_difference = _equation_difference(answer), _equation_difference(target)
    if answer_difference is None:
        return Verdict("undecided", "unparsed answer")
    if target_difference is None:
        return Verdict("undecided", "could not compare", "could not compare: a side of the gold cannot be read")
    unread = _unread_part(answer_difference)
    if unread is not None:
        return Verdict("undecided", "unreadable answer", f"unreadable answer: {unread}")
    answer_difference, target_difference = _by_name(answer_difference), _by_name(target_difference)
    if not answer_difference.free_symbols or answer_difference.free_symbols != target_difference.free_symbols:
        return Verdict(False, "equation", "the equations are in different variables")
    ratio = sympy.simplify(answer_difference / target_difference)
    if ratio.is_number:
        return Verdict(bool(ratio.is_finite and ratio != 0), "equation")
    names = sorted(str(symbol) for symbol in ratio.free_symbols)
    # powers of each probe point, shifted: no two variables move together, nor their sum, from point to point
    values = [_evaluate(ratio, {name: point ** (index + 1) + index for index, name in enumerate(names)})
              for point in _PROBE_POINTS]
    values = [v for v in values if v is not None]
    if any(abs(v - values[0]) > 1e-9 * (1 + abs(values[0])) for v in values):
        return Verdict(False, "equation", "lhs - rhs of one is no constant multiple of the other's")
    return Verdict("undecided", "undecidable", "sympy cannot show lhs - rhs of one a constant multiple of the "
                   "other's, and their ratio is one value wherever evaluated")


def _imaginary_unit_equal(pred_parsed: list[Any], gold_parsed: list[Any]) -> bool:
    # "e^{i\pi}" parses with a symbol i; when i is the only symbol on either side it is the unit.
    pred, gold = _first_expression(pred_parsed), _first_expression(gold_parsed)
    if pred is None or gold is None:
        return False
    symbols = pred.free_symbols | gold.free_symbols
    if not symbols or any(getattr(symbol, "name", None) != "i" for symbol in symbols):
        return False
    difference = (pred - gold).subs({symbol: sympy.I for symbol in symbols})
    # expand_complex puts polar forms (sqrt(2) e^{i pi/4}) in a + bi form, where simplify stops at (-1)^(1/4)
    return sympy.simplify(difference) == 0 or sympy.simplify(sympy.expand_complex(difference)) == 0


def _verified(answer: str, target: str) -> tuple[bool, list[Any], list[Any]]:
    gold_parsed, pred_parsed = _math_verify_parse(target), _math_verify_parse(answer)
    correct = bool(gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, allow_set_relation_comp=True))
    return correct, gold_parsed, pred_parsed


def symbolic_equal(
    answer: str,
    target: str,
    answer_number: ParsedNumber | None,
    target_number: ParsedNumber | None,
    policy: GradingPolicy = STRICT,
) -> Verdict:
    """Equations, math-verify (``\\log`` read both ways), the approximation rule, then sympy on plain text."""
    if _is_equation(answer) and _is_equation(target):
        return equation_verdict(answer, target)
    antiderivative = antiderivative_verdict(answer, target)
    if antiderivative is not None:
        return antiderivative
    if "piecewise" in (answer_type(answer), answer_type(target)):
        piecewise = piecewise_verdict(answer, target)
        if piecewise is not None:
            return piecewise
    correct, gold_parsed, pred_parsed = _verified(answer, target)
    # math-verify rounds to 6 decimals, so it takes 2.718282 for e: a decimal answer must equal
    # exactly, and digits before an ellipsis ("2...") never do.
    written_out = answer_number is not None and (answer_number.decimals is not None or answer_number.truncated)
    if correct and not (written_out and not _exactly(answer_number, gold_parsed)):
        return Verdict(True, "math_verify")
    if _UNBASED_LOG.search(answer + target) and _verified(_UNBASED_LOG.sub(r"\\ln", answer),
                                                           _UNBASED_LOG.sub(r"\\ln", target))[0]:
        return Verdict(True, "math_verify")
    approximation = _approximation(answer_number, target_number, pred_parsed, gold_parsed, policy)
    if approximation is not None:
        return approximation
    if answer_number is not None and answer_number.truncated:
        return Verdict(False, "ellipsis")
    if _imaginary_unit_equal(pred_parsed, gold_parsed):
        return Verdict(True, "sympy")
    # Plain-text math ("3pi/2") that the LaTeX parser misreads: sympy's own parser on that side.
    plain_answer, plain_target = _plain_sympy(answer), _plain_sympy(target)
    golds = [plain_target] if plain_target is not None else gold_parsed
    preds = [plain_answer] if plain_answer is not None else pred_parsed
    if (plain_answer is not None or plain_target is not None) and golds and preds and verify(golds, preds):
        return Verdict(True, "sympy")
    if not golds:
        return Verdict("undecided", "unparsed gold")
    if not preds:
        return Verdict("undecided", "unparsed answer")
    # sympy's parser may give a class ("O" is its Order), math-verify's a symbol
    answer_value, target_value = _first_value(preds, pred_parsed), _first_value(golds, gold_parsed)
    if answer_value is None:
        return Verdict("undecided", "unparsed answer")
    unread = _unread_part(answer_value)
    if unread is not None:
        return Verdict("undecided", "unreadable answer", f"unreadable answer: {unread}")
    unread = None if target_value is None else _unread_part(target_value)
    if unread is not None:
        return Verdict("undecided", "could not compare", f"could not compare: the gold has {unread}")
    step = _step_function_verdict(_first_expression(preds), _first_expression(golds))
    if step is not None:
        return step
    items = _items_verdict(answer_value, target_value)
    return items if items is not None else _decided_difference(_first_expression(preds), _first_expression(golds))


def _items(value: Any) -> tuple[str, list[Any]] | None:
    """``(kind, items)`` of a finite set, tuple, interval or matrix of expressions, else ``None``."""
    if isinstance(value, sympy.FiniteSet):
        return "set", list(value.args)
    if isinstance(value, sympy.Tuple):
        return f"tuple of {len(value)}", list(value.args)
    if isinstance(value, sympy.Interval):
        return "interval" + "[("[bool(value.left_open)] + "])"[bool(value.right_open)], [value.start, value.end]
    if isinstance(value, sympy.MatrixBase):
        return f"matrix {value.shape}", list(value)
    return None


def _items_verdict(answer: Any, target: Any) -> Verdict | None:
    """A collection math-verify did not find equal, item by item: ``wrong`` when the kinds or sizes differ
    or an item differs from every item it may stand for (numerically, at a probe point), else
    ``undecided`` (equal where evaluated, not shown equal); ``None`` when either is no such collection or
    an item is no expression."""
    answer_items, target_items = _items(answer), _items(target)
    if answer_items is None or target_items is None:
        return None
    (kind, items), (gold_kind, golds) = answer_items, target_items
    if not all(isinstance(item, sympy.Expr) for item in items + golds):
        return None
    if kind != gold_kind or len(items) != len(golds):
        return Verdict(False, "math_verify", f"{answer} and {target} differ in kind, size or end points")

    def may_equal(item: Any, gold: Any) -> bool:
        return _decided_difference(item, gold).verdict != "wrong"

    if kind == "set":
        unmatched = [item for item in items if not any(may_equal(item, gold) for gold in golds)]
        unmatched += [gold for gold in golds if not any(may_equal(item, gold) for item in items)]
        if unmatched:
            return Verdict(False, "math_verify", f"{unmatched[0]} is in one set and differs from every item of the other")
    else:
        for place, (item, gold) in enumerate(zip(items, golds), 1):
            if not may_equal(item, gold):
                return Verdict(False, "math_verify", f"item {place} differs: {item} against {gold}")
    return Verdict("undecided", "undecidable", f"each item of the {kind} equals the gold's where evaluated, "
                   "but sympy cannot show them equal")


def _first_value(*parses: list[Any]) -> Any | None:
    """The first typed value (number, expression, set, interval, tuple, matrix, relation) among the parses."""
    return next((value for parsed in parses for value in parsed if isinstance(value, (sympy.Basic, sympy.MatrixBase))),
                None)


# A constant of integration added last: "+ C", "+ K", "+ C_1", "+ c", "+ const".
_CONSTANT_TERM = re.compile(r"^(.*\S)\s*\+\s*(C(?:_\{?\d\}?)?|K|c|const(?:ant)?)$")


def antiderivative_verdict(answer: str, target: str) -> Verdict | None:
    """Antiderivatives, when either side adds a constant of integration: equal when they differ by a
    constant (the derivative of the difference is zero in every variable), whatever the constant is
    named and whether the other side writes one; ``None`` when neither side does, or a constant's
    name is used in either expression too ("A + B + C" against "C + B + A" is no antiderivative)."""
    answer_parts, target_parts = _CONSTANT_TERM.match(answer), _CONSTANT_TERM.match(target)
    if answer_parts is None and target_parts is None:
        return None
    answer_body = answer_parts.group(1) if answer_parts else answer
    target_body = target_parts.group(1) if target_parts else target
    # math-verify may lower-case a symbol's name: a constant's name is matched in either case
    constants = {parts.group(2).lower() for parts in (answer_parts, target_parts) if parts is not None}
    expressions = [_first_expression(_math_verify_parse(body)) for body in (answer_body, target_body)]
    if any(e is None for e in expressions):
        return None
    pred, gold = (_by_name(e) for e in expressions)
    variables = pred.free_symbols | gold.free_symbols
    if not variables or any(str(v).lower() in constants for v in variables) or _unread_part(pred) or _unread_part(gold):
        return None
    difference = pred - gold
    slopes = [sympy.diff(difference, variable) for variable in variables]
    if all(sympy.simplify(slope) == 0 for slope in slopes):
        return Verdict(True, "antiderivative", "antiderivatives that differ by a constant")
    names = sorted(str(v) for v in variables)
    for point in _PROBE_POINTS:
        values = {name: point * (index + 1) for index, name in enumerate(names)}
        for slope in slopes:
            value = _evaluate(slope, values)
            if value is not None and abs(value) > 1e-9:
                return Verdict(False, "antiderivative", "their difference is no constant: its derivative is "
                               f"{value.real:.6g} at " + ", ".join(f"{n} = {v}" for n, v in values.items()))
    return Verdict("undecided", "antiderivative", "sympy cannot show that the difference is a constant")


_OTHERWISE = re.compile(r"^(?:otherwise|else|elsewhere|all other [a-z]+|\\text\s*\{\s*(?:otherwise|else)\s*\})$",
                        re.IGNORECASE)
_CONDITION_WORD = re.compile(r"\\text\s*\{\s*(?:if|for|when|where)?\s*\}|\b(?:if|for|when|where)\b")


def _by_name(value: Any) -> Any:
    # math-verify may build one variable as symbols with different assumptions: one plain symbol per name.
    return value.xreplace({symbol: sympy.Symbol(symbol.name) for symbol in value.free_symbols})


def _condition(text: str) -> Any | None:
    text = _CONDITION_WORD.sub(" ", text).strip(" ,")
    if _OTHERWISE.match(text):
        return sympy.true
    parsed = _math_verify_parse(text)
    conditions = [v for v in parsed if isinstance(v, sympy.core.relational.Relational)]
    if not conditions and parsed and isinstance(parsed[0], sympy.FiniteSet):
        conditions = [sympy.And(*parsed[0])]  # "0 < x \\text{ and } x < 1"
    if not conditions and parsed and isinstance(parsed[0], sympy.logic.boolalg.Boolean):
        conditions = [parsed[0]]
    return _by_name(conditions[0]) if conditions else None


def _function(text: str) -> Any | None:
    """``text`` as a sympy function of its variables: a ``cases`` environment as a Piecewise, else an expression."""
    rows = piecewise_rows(text)
    if rows is None:
        expression = _first_expression(_math_verify_parse(text))
        return None if expression is None else _by_name(expression)
    pieces = []
    for value_text, condition_text in rows:
        value, condition = _first_expression(_math_verify_parse(value_text)), _condition(condition_text)
        if value is None or condition is None:
            return None
        pieces.append((_by_name(value), condition))
    try:
        return sympy.Piecewise(*pieces)
    except Exception:  # noqa: BLE001 - sympy refuses conditions that are no booleans
        return None


def _half_line(condition: Any, variable: Any) -> tuple[Any, Any | None] | None:
    """The substitution that puts ``variable`` strictly on the side of a boundary ``condition`` states
    (``x >= 1``: x = 1 + t, t > 0) and the boundary itself when the condition includes it (1), or the one
    value of an equality; ``None`` for other conditions. The boundary is checked apart: a piecewise
    function may give it to either branch when both agree there."""
    if not isinstance(condition, sympy.core.relational.Relational):
        return None
    lhs, rhs = condition.lhs, condition.rhs
    if lhs != variable:
        lhs, rhs, condition = rhs, lhs, condition.reversed
    if lhs != variable or rhs.free_symbols:
        return None
    if isinstance(condition, sympy.Eq):
        return rhs, None
    if not isinstance(condition, (sympy.Gt, sympy.Ge, sympy.Lt, sympy.Le)):
        return None
    t = sympy.Symbol("t_piece", positive=True)
    inside = rhs + t if isinstance(condition, (sympy.Gt, sympy.Ge)) else rhs - t
    return inside, (None if isinstance(condition, (sympy.Gt, sympy.Lt)) else rhs)


def piecewise_verdict(answer: str, target: str) -> Verdict | None:
    """A piecewise function (a ``cases`` environment) against a function, by value; ``None`` when unread.

    Wrong when the two differ (or one is undefined) at a probe point on
    either side of each boundary; correct when each branch is proven equal
    to the other side on its half-line (``x \\ge 0``: x = t, t >= 0, and
    simplify); else undecided.
    """
    pred, gold = _function(answer), _function(target)
    if pred is None or gold is None:
        return None
    variables = (pred.free_symbols | gold.free_symbols)
    if len(variables) != 1:
        return Verdict("undecided", "piecewise", "a piecewise function of other than one variable")
    variable = next(iter(variables))
    difference = pred - gold
    boundaries = {float(atom) for atom in (pred.atoms(sympy.Number) | gold.atoms(sympy.Number)) if atom.is_real}
    points = {float(p) for p in _PROBE_POINTS} | {b + d for b in boundaries for d in (-0.37, 0.0, 0.41)}
    for point in sorted(points):
        value = _evaluate(difference, {str(variable): sympy.nsimplify(point)})
        if value is None or value != value or abs(value) > 1e-9:  # None or nan: one side undefined there
            if _evaluate(pred, {str(variable): sympy.nsimplify(point)}) is None and \
                    _evaluate(gold, {str(variable): sympy.nsimplify(point)}) is None:
                continue  # neither is defined here
            return Verdict(False, "piecewise", f"they differ at {variable} = {point:g}")
    for piecewise, other in ((pred, gold), (gold, pred)):
        if not isinstance(piecewise, sympy.Piecewise):
            continue
        for index, (value, condition) in enumerate(piecewise.args):
            if condition is sympy.true and index == 1:
                condition = ~piecewise.args[0][1]  # "otherwise" after one half-line is the other half-line
            where = _half_line(condition, variable)
            if where is None:
                return Verdict("undecided", "piecewise", f"the branch for {condition} is equal where evaluated, "
                               "not proven")
            if any(sympy.simplify((value - other).subs(variable, at)) != 0 for at in where if at is not None):
                return Verdict("undecided", "piecewise", f"the branch for {condition} is not proven equal")
    return Verdict(True, "piecewise", "each branch equals the other side on its half-line")


def _evaluate(expression: Any, values: dict[str, Any]) -> complex | None:
    """``expression`` as a complex number with each symbol set to the value of its name, else ``None``."""
    try:
        substituted = expression.subs({symbol: values[str(symbol)] for symbol in expression.free_symbols})
        return complex(substituted.evalf(_PROBE_DIGITS))
    except Exception:  # noqa: BLE001 - sympy raises many types for what has no numeric value
        return None


# Points at which two expressions that sympy could not prove equal are told apart: numbers
# no simple answer is built around, so a difference that vanishes at all of them is a real doubt.
_PROBE_POINTS = (sympy.Rational(37, 100), sympy.Rational(-113, 70), sympy.Rational(271, 100))
_PROBE_DIGITS = 30


# A floor or ceiling in one variable is compared on a grid, since sympy proves few identities of them
# (floor((n+1)/2) = ceil(n/2)): a variable named n, m or k is an integer, so the grid is the integers;
# another is real, so the grid also holds every 1/24 between -4 and 4, where the steps of simple answers
# fall (and the integers, where floor(x) + 1 and ceil(x) part).
_INTEGER_NAMES = frozenset({"n", "m", "k"})
_INTEGER_GRID = tuple(sympy.Integer(i) for i in range(-30, 31))
_REAL_GRID = tuple(sympy.Integer(i) for i in range(-10, 11)) + tuple(
    sympy.Rational(24 * i + j, 24) for i in range(-4, 4) for j in range(1, 24))


def _step_function_verdict(answer: Any | None, target: Any | None) -> Verdict | None:
    """Equal or not on the grid, for a floor or ceiling in one variable; ``None`` when not such a pair."""
    if not all(isinstance(v, sympy.Expr) for v in (answer, target)):
        return None
    if not (answer.has(sympy.floor, sympy.ceiling) or target.has(sympy.floor, sympy.ceiling)):
        return None
    answer, target = _by_name(answer), _by_name(target)
    symbols = answer.free_symbols | target.free_symbols
    if len(symbols) != 1:
        return None
    (symbol,) = symbols
    grid = _INTEGER_GRID if str(symbol) in _INTEGER_NAMES else _REAL_GRID
    try:
        # exact rational arithmetic: in floats (1/3) * 9 may be above 3, and its ceiling 4
        difference = answer - target
        values = [sympy.simplify(difference.xreplace({symbol: point})) for point in grid]
    except Exception:  # noqa: BLE001 - a pole or an undefined value on the grid: no decision here
        return None
    if any(not (v.is_real and v.is_finite) for v in values):
        return None
    kind = "integer" if grid is _INTEGER_GRID else "real"
    for point, value in zip(grid, values):
        if value != 0:
            return Verdict(False, "step function", f"they differ at {symbol} = {point}")
    return Verdict(True, "step function", f"equal at every {kind} point of the grid ({len(grid)} points)")


def _decided_difference(answer: Any | None, target: Any | None) -> Verdict:
    """``wrong`` when ``answer - target`` is numerically nonzero somewhere, else ``undecided``.

    math-verify says only "not shown equal"; it may be equal in a form sympy
    cannot simplify. Anything but two expressions (sets, intervals, matrices,
    relations) is compared structurally by math-verify, whose "no" stands.
    """
    if answer is None or target is None:
        return Verdict(False, "math_verify")
    if answer.is_infinite or target.is_infinite:  # oo - oo has no value; two different infinities differ
        return Verdict(answer == target, "math_verify", f"{answer} and {target}: an infinity equals only itself")
    difference = answer - target
    # The two sides may spell one variable as symbols with different assumptions: one value per name.
    names = sorted({str(symbol) for symbol in answer.free_symbols | target.free_symbols})
    # i alone is the imaginary unit, as _imaginary_unit_equal read it: evaluated as such, not as a variable.
    points = [{"i": sympy.I}] if names == ["i"] else \
        [{name: point * (index + 1) for index, name in enumerate(names)} for point in _PROBE_POINTS] if names else [{}]
    for values in points:
        value, scale = _evaluate(difference, values), _evaluate(target, values)
        if value is None:
            continue  # not a number here (a pole, an undefined function): try the next point
        if abs(value) > 1e-12 * (1.0 + abs(scale or 0.0)):
            where = "" if not names else " at " + ", ".join(f"{name} = {v}" for name, v in values.items())
            return Verdict(False, "math_verify", f"math-verify (sympy) finds them different; their difference is "
                           f"{value.real:.6g}{'' if value.imag == 0 else f'{value.imag:+.6g}i'}{where}")
    return Verdict("undecided", "undecidable", "sympy cannot simplify the difference to zero, and it does not "
                   "differ from zero where it was evaluated")


# A symbol the parser made from a command it keeps as text (\mathcal{X} as math{x}, \text{B}).
_COMMAND_SYMBOL = re.compile(r"text\{|math[a-z]*\{|operatorname")


def _unread_part(value: Any) -> str | None:
    """What in a parsed value has no value the verifier knows: an undefined function applied to values
    (``c(2)`` of ``sinc(2)``; ``f(x)`` of variables is function notation) or a symbol made of a command;
    else ``None``."""
    for function in value.atoms(sympy.core.function.AppliedUndef):
        if not all(isinstance(argument, sympy.Symbol) for argument in function.args):
            return f"the unknown function {function.func.__name__!r} in {function}"
    for symbol in value.free_symbols:
        if _COMMAND_SYMBOL.search(getattr(symbol, "name", "")):
            return f"the unread name {symbol.name!r}"
    return None


def _exactly(literal: ParsedNumber, parsed: list[Any]) -> bool:
    exact = _exact_real(parsed)
    return not literal.truncated and isinstance(exact, Fraction) and exact == literal.value


def _approximation(
    answer_number: ParsedNumber | None,
    target_number: ParsedNumber | None,
    pred_parsed: list[Any],
    gold_parsed: list[Any],
    policy: GradingPolicy,
) -> Verdict | None:
    # A decimal literal on one side against an exact symbolic value (pi, sqrt(2)) on the other.
    if answer_number is not None and answer_number.decimals is not None:
        exact = _exact_real(gold_parsed)
        return None if exact is None else approximation_verdict(answer_number, exact, policy)
    if target_number is not None and target_number.decimals is not None:
        exact = _exact_real(pred_parsed)
        return None if exact is None else approximation_verdict(target_number, exact, policy, literal_is_answer=False)
    return None


_warm_up()
