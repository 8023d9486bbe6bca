"""Answers written in the syntax of a programming language or a CAS, read into the LaTeX the verifier reads.

:func:`code_expression` reads one whole answer written as code: Python and
its libraries (``**``, ``math.sqrt(3)/2``, ``np.pi``, ``Fraction(7, 12)``),
SymPy's reprs (``Rational(3, 4)``, ``sqrt(3)*pi``, ``Interval(0, 1)``,
``FiniteSet(1, 2)``, ``oo``), R (``17 %% 5``, ``log(8, base = 2)``,
``factorial(5)``, ``choose(5, 2)``), spreadsheet formulas (``=SQRT(10)``,
``=PI()/2``, ``=POWER(5,2)``, ``=SUM(12,24)``) and Mathematica
(``Sqrt[5]``, ``Log[10, 2]``, a ``Solve`` result ``{{x -> 1}, {x -> 3}}``).
There is one translation layer and one parser per family: the code is
checked token by token against a whitelist, then parsed by SymPy's own
parsers (``parse_expr`` with a namespace holding only the whitelisted
names and no builtins, or ``parse_mathematica``), and the value is written
back as LaTeX for the rest of the verifier.

What stays unread (``None``, so the answer goes on as written and, where no
other reader knows it, stays undecided): text without a code mark (a
function call of a whitelisted name, ``**``, ``%%``, a library prefix, a
leading ``=``, Mathematica brackets), any name outside the whitelist
(``ROUNDDOWN``, ``foo``), an attribute of anything but ``math`` / ``cmath`` /
``np`` / ``numpy`` / ``sympy`` / ``sp``, ``e`` / ``i`` / ``j`` alone (a
variable in code, a constant in math), ``%`` not between two operands (a
percent), and anything beyond the size bounds (:data:`MAX_CODE_LENGTH`
characters, literals up to :data:`MAX_LITERAL`, exponents, exponentials and
counts of small literals only, at most :data:`MAX_POWERS` powers; no floor or
ceiling, which would force a huge value out digit by digit), so that parsing
and evaluation are bounded. Nothing is half-read: one unknown token leaves the
whole answer unread.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

MAX_CODE_LENGTH = 200
MAX_LITERAL = 10**6
MAX_EXPONENT = 100
MAX_FACTORIAL = 1000
MAX_POWERS = 2

_TOKEN = re.compile(r"\s*(?:(?P<number>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|"
                    r"(?P<name>[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*)|"
                    r"(?P<op>\*\*|%%|[-+*/^%(),\[\]]))")
_MODULES = frozenset({"math", "cmath", "np", "numpy", "sympy", "sp"})
# Code names and what SymPy calls them; spreadsheet names are matched in upper case.
_FUNCTIONS = {
    "sqrt": "sqrt", "cbrt": "cbrt", "exp": "exp", "log": "log", "ln": "log", "log10": "_log10", "log2": "_log2",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "arcsin": "asin",
    "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "abs": "Abs", "Abs": "Abs",
    "fabs": "Abs", "factorial": "factorial", "binomial": "binomial", "comb": "binomial", "choose": "binomial",
    "gcd": "gcd", "lcm": "lcm", "Rational": "Rational",
    "Fraction": "Rational", "Integer": "Integer", "Interval": "Interval", "FiniteSet": "FiniteSet", "pow": "Pow",
    "Pow": "Pow", "Mod": "Mod", "mod": "Mod", "perm": "_perm",
}
_CONSTANTS = {"pi": "pi", "Pi": "pi", "PI": "pi", "oo": "oo", "inf": "oo", "E": "E", "I": "I"}
_SPREADSHEET = {"SQRT": "sqrt", "PI": "_pi", "POWER": "Pow", "FACT": "factorial", "MOD": "Mod", "SUM": "_sum",
                "PRODUCT": "_product", "ABS": "Abs", "EXP": "exp", "LN": "log", "LOG10": "_log10", "LOG": "_log_ten",
                "COMBIN": "binomial", "PERMUT": "_perm", "GCD": "gcd", "LCM": "lcm", "SIN": "sin", "COS": "cos",
                "TAN": "tan", "DEGREES": "_degrees", "RADIANS": "_radians"}
_MATHEMATICA = frozenset({"Sqrt", "Exp", "Log", "Sin", "Cos", "Tan", "ArcSin", "ArcCos", "ArcTan", "Abs", "Binomial",
                          "Factorial", "Power", "Rational", "Pi", "E", "I", "Infinity", "CubeRoot", "Surd", "Log2",
                          "Log10", "GCD", "LCM", "Mod"})
_MATHEMATICA_LEFT = {"Binomial": "binomial", "Factorial": "factorial", "GCD": "gcd", "LCM": "lcm", "Mod": "Mod",
                     "CubeRoot": "cbrt"}
# Calls whose value grows past any bound with their arguments: counts (factorials, binomials,
# permutations) and powers.
_COUNTS = frozenset({"factorial", "FACT", "Factorial", "binomial", "comb", "choose", "COMBIN", "Binomial", "perm",
                     "PERMUT"})
_POWER_CALLS = frozenset({"pow", "Pow", "POWER", "Power"})
_EXPONENTIALS = frozenset({"exp", "EXP", "Exp"})
# A variable in code (``x**2 + 1``); e, i and j are constants in math and variables in code: unread.
_VARIABLE = re.compile(r"^[a-df-hk-zA-DF-HJ-Z]$")
_R_LOG_BASE = re.compile(r",\s*base\s*=\s*")
_SOLVE_RULES = re.compile(r"^\{\s*(\{\s*[a-z]\s*->\s*[^{}]+\}(?:\s*,\s*\{\s*[a-z]\s*->\s*[^{}]+\})*)\s*\}$")
_RULE = re.compile(r"\{\s*([a-z])\s*->\s*([^{}]+)\}")
_MATHEMATICA_CALL = re.compile(r"[A-Z][A-Za-z0-9]*\[")
_WRAPPERS = (re.compile(r"^\\texttt\s*\{(.*)\}$", re.DOTALL), re.compile(r"^`+([^`]+)`+$"),
             re.compile(r"^\\verb(.)(.*)\1$", re.DOTALL))


def _unwrapped(text: str) -> str:
    text = text.strip()
    for wrapper in _WRAPPERS:
        match = wrapper.match(text)
        if match is not None:
            text = match.group(match.lastindex).strip()
    # \texttt keeps braces escaped: \{\{x -> 1\}\}
    return text.replace("\\{", "{").replace("\\}", "}").replace("\\_", "_")


def _tokens(code: str) -> list[tuple[str, str]] | None:
    tokens, at = [], 0
    code = code.rstrip()
    while at < len(code):
        match = _TOKEN.match(code, at)
        if match is None:
            return None
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        at = match.end()
    return tokens


def _literal_ok(text: str, bound: float) -> bool:
    try:
        return abs(float(text)) <= bound
    except ValueError:  # noqa: PERF203 - a literal float() cannot read is no literal
        return False


def _bounded(tokens: list[tuple[str, str]]) -> bool:
    """Whether evaluating ``tokens`` stays small: bounded literals, exponents and factorials of small literals."""
    if sum(value in ("**", "^") for _, value in tokens) > MAX_POWERS:
        return False
    for index, (kind, value) in enumerate(tokens):
        if kind == "number" and not _literal_ok(value, MAX_LITERAL):
            return False
        following = [v for _, v in tokens[index + 1 : index + 3]]
        if value in ("**", "^"):
            exponent = following[1:] if following[:1] in (["-"], ["+"]) else following
            if not exponent or not (_literal_ok(exponent[0], MAX_EXPONENT) or _VARIABLE.match(exponent[0])
                                    or exponent[0] == "("):
                return False
            if exponent[0] != "(" and tokens[index + 1 + len(following) - len(exponent) + 1:][:1] in (
                    [("op", "**")], [("op", "^")]):
                return False  # a tower, 2**10**10: right-associative, unbounded
            if exponent[0] == "(":
                group = _group(tokens, index + 1 + (len(following) - len(exponent)))
                if group is None or any(k == "name" or (k == "number" and not _literal_ok(v, MAX_EXPONENT))
                                        or v in ("**", "^") for k, v in group):
                    return False
        name = value.rpartition(".")[2]
        if kind == "name" and name in _EXPONENTIALS and any(
                k == "number" and not _literal_ok(v, MAX_EXPONENT) for k, v in _group(tokens, index + 1) or []):
            return False
        if kind == "name" and (name in _COUNTS or name in _POWER_CALLS):
            arguments = _arguments(_group(tokens, index + 1))
            bound = MAX_FACTORIAL if name in _COUNTS else MAX_EXPONENT
            # Each argument one literal (a count up to MAX_FACTORIAL, an exponent up to MAX_EXPONENT) or a letter.
            checked = arguments if name in _COUNTS else arguments[1:]
            if not arguments or not all(len(a) == 1 and (_literal_ok(a[0][1], bound) or _VARIABLE.match(a[0][1]))
                                        for a in checked):
                return False
    return True


def _arguments(group: list[tuple[str, str]] | None) -> list[list[tuple[str, str]]]:
    """The top-level comma-separated arguments of a call's ``group`` (empty when there is none)."""
    if not group:
        return []
    arguments: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for token in group:
        depth += token[1] in ("(", "[")
        depth -= token[1] in (")", "]")
        if token[1] == "," and depth == 0:
            arguments.append([])
        else:
            arguments[-1].append(token)
    return arguments


def _group(tokens: list[tuple[str, str]], start: int) -> list[tuple[str, str]] | None:
    """The tokens inside the bracket opened at ``tokens[start]``, else ``None``."""
    if start >= len(tokens) or tokens[start][1] not in ("(", "["):
        return None
    depth = 0
    for index in range(start, len(tokens)):
        value = tokens[index][1]
        depth += value in ("(", "[")
        depth -= value in (")", "]")
        if depth == 0:
            return tokens[start + 1 : index]
    return None


@lru_cache(maxsize=1)
def _namespace() -> dict[str, Any]:
    import sympy

    def sum_(*args: Any) -> Any:
        return sympy.Add(*args)

    def product(*args: Any) -> Any:
        return sympy.Mul(*args)

    names: dict[str, Any] = {name: getattr(sympy, name) for name in set(_FUNCTIONS.values()) | set(_CONSTANTS.values())
                             if not name.startswith("_")}
    names.update({
        "_log10": lambda x: sympy.log(x, 10), "_log2": lambda x: sympy.log(x, 2),
        "_log_ten": lambda x, base=10: sympy.log(x, base), "_sum": sum_, "_product": product,
        "_perm": lambda n, k: sympy.factorial(n) / sympy.factorial(n - k), "_pi": lambda: sympy.pi,
        "_degrees": lambda x: x * 180 / sympy.pi, "_radians": lambda x: x * sympy.pi / 180,
        "Integer": sympy.Integer, "Float": sympy.Float, "Symbol": sympy.Symbol, "__builtins__": {},
    })
    return names


def _translated(tokens: list[tuple[str, str]], spreadsheet: bool) -> str | None:
    """Python source over the whitelisted names for ``tokens``, else ``None`` (a name or mark not read)."""
    out = []
    for index, (kind, value) in enumerate(tokens):
        called = index + 1 < len(tokens) and tokens[index + 1][1] == "("
        if kind == "name":
            name = value
            if "." in name:
                module, _, name = name.rpartition(".")
                if module not in _MODULES or "." in name:
                    return None
            if spreadsheet and name.upper() in _SPREADSHEET and called:
                value = _SPREADSHEET[name.upper()]
            elif called and name in _FUNCTIONS:
                value = _FUNCTIONS[name]
            elif not called and name in _CONSTANTS:
                value = _CONSTANTS[name]
            elif not called and _VARIABLE.match(name) and "." not in value:
                value = f"Symbol('{name}')"
            else:
                return None
        elif value == "%%":
            value = "%"
        elif value == "%":
            previous = tokens[index - 1] if index else ("op", "")
            following = tokens[index + 1] if index + 1 < len(tokens) else ("op", "")
            if (previous[0] == "op" and previous[1] != ")") or (following[0] == "op" and following[1] != "("):
                return None  # "50%" is a percent, not a remainder
        elif value in ("[", "]"):
            return None  # a list: read by the list and matrix readers, not as code
        elif value == "^":
            value = "**"
        out.append(value)
    return " ".join(out)


def _code_marked(tokens: list[tuple[str, str]], spreadsheet: bool) -> bool:
    """Whether the answer is written as code: a library prefix, a whitelisted call, ``**`` or ``%%``/``%``."""
    for index, (kind, value) in enumerate(tokens):
        called = index + 1 < len(tokens) and tokens[index + 1][1] == "("
        if value in ("**", "%%", "%") or (kind == "name" and ("." in value or called)):
            return True
    return spreadsheet


def _latex(value: Any) -> str | None:
    import sympy

    if isinstance(value, sympy.FiniteSet):
        return "\\{" + ", ".join(sympy.latex(v) for v in sorted(value, key=sympy.default_sort_key)) + "\\}"
    if isinstance(value, sympy.Interval):
        opening, closing = "(" if value.left_open else "[", ")" if value.right_open else "]"
        return f"{opening}{sympy.latex(value.start)}, {sympy.latex(value.end)}{closing}"
    if not isinstance(value, sympy.Expr) or value.has(sympy.zoo, sympy.nan):
        return None
    if isinstance(value, sympy.Float):
        return repr(float(value))
    return sympy.latex(value, mul_symbol="dot")  # "4 x^{3}" would read as 4 of a unit


def code_value(code: str) -> str | None:
    """The LaTeX of Python-syntax ``code`` over the whitelisted names, read whole and bounded, else ``None``.

    Unlike :func:`code_expression` it asks for no code mark: for readers (spoken math) that write code.
    """
    return _python_value(code, spreadsheet=False, marked=True)


def _python_value(code: str, spreadsheet: bool, marked: bool = False) -> str | None:
    tokens = _tokens(_R_LOG_BASE.sub(", ", code))
    if not tokens or not (marked or _code_marked(tokens, spreadsheet)) or not _bounded(tokens):
        return None
    source = _translated(tokens, spreadsheet)
    if source is None:
        return None
    from sympy.parsing.sympy_parser import auto_number, parse_expr, rationalize

    try:
        return _latex(parse_expr(source, local_dict={}, global_dict=dict(_namespace()), transformations=(auto_number, rationalize)))
    except Exception:  # noqa: BLE001 - a syntax or arity error, or a value too long to write: code we cannot read
        return None


def _mathematica_value(code: str) -> str | None:
    tokens = _tokens(code.replace("[", "(").replace("]", ")"))
    if not tokens or not _bounded(tokens):
        return None
    for kind, value in tokens:
        if kind == "name" and value not in _MATHEMATICA and not _VARIABLE.match(value):
            return None
    import sympy
    from sympy.core.function import AppliedUndef
    from sympy.parsing.mathematica import parse_mathematica

    try:
        value = parse_mathematica(code)
        # Names parse_mathematica leaves as undefined functions, and SymPy's function for each.
        value = value.replace(lambda e: isinstance(e, AppliedUndef) and e.func.__name__ in _MATHEMATICA_LEFT,
                              lambda e: getattr(sympy, _MATHEMATICA_LEFT[e.func.__name__])(*e.args))
        if value.atoms(AppliedUndef):
            return None
        return _latex(value)
    except Exception:  # noqa: BLE001 - parse errors, or a value too long to write: code we cannot read
        return None


def code_expression(text: str) -> str | None:
    """The LaTeX of an answer written whole in code syntax (see the module docstring), else ``None``."""
    code = _unwrapped(text)
    if not code or len(code) > MAX_CODE_LENGTH or not code.isascii() or "\\" in code:
        return None
    spreadsheet = code.startswith("=")
    if spreadsheet:
        code = code[1:].strip()
    rules = _SOLVE_RULES.match(code)
    if rules is not None and not spreadsheet:
        rule_list = _RULE.findall(rules.group(1))
        values = [_mathematica_value(value) for _, value in rule_list]
        if len({name for name, _ in rule_list}) != 1 or not all(values):
            return None  # rules for several variables are a point or a system, not a list of roots
        return ", ".join(values)  # type: ignore[arg-type]
    if _MATHEMATICA_CALL.search(code) and "(" not in code and not spreadsheet:
        return _mathematica_value(code)
    return _python_value(code, spreadsheet)
