"""The type of a canonical answer, and the type rules that decide before any value is compared.

:func:`answer_type` names what a canonical answer (``normalize``) is:

========== =====================================================================
type        written as
========== =====================================================================
choice      a letter A-E, ``(C)``
number      ``-12``, ``3/4``, ``\\frac{3}{4}``, ``12.5%``, ``0.\\overline{3}``, words, numerals
set         ``\\{1, 2\\}`` (order does not matter)
interval    ``[1, 2)``, ``(-\\infty, 3]``, a union ``(0, 1) \\cup (2, 3)``
tuple       ``(1, 2, 3)``, ``[1, 2, 3]``; ``(1, 2)`` is a point or an open interval
matrix      ``\\begin{pmatrix}..\\end{pmatrix}`` (``bmatrix``, ``array``, ...)
piecewise   ``\\begin{cases} x & x \\ge 0 \\\\ -x & x < 0 \\end{cases}`` (``f(x) =`` before it too)
list        ``1, 2, 3`` without brackets (the solutions of an equation: any order)
inequality  ``x \\ge 3``, ``1 < x < 2``
equation    ``y = 2x + 3``
parts       ``(a) 12; (b) 7``: the parts of a multi-part answer, in order
text        words (``Monday``, ``yes``)
expression  anything else (``2\\sqrt{3}``, ``x^2 + 1``)
========== =====================================================================

A quantity with a unit is read before canonical form drops the unit
(:mod:`~rewardsmith.reward_fns.math_verifier.units`).

:func:`type_verdict` refuses an answer whose type cannot be the gold's (a bound such as
``\\le 8`` or ``x > 4`` is never a number, nor a number a bound),
before math-verify (which reads ``(1, 2)`` as an interval and takes the set
``\\{1, 2\\}`` for it): a set for anything in ordered brackets, or anything
in ordered brackets for a set. :func:`vector_as_tuple` reads a matrix of one
row or one column as the tuple it is (the LaTeX is parsed by ``pylatexenc``),
so a column vector ``\\begin{pmatrix}1\\\\2\\end{pmatrix}`` equals ``(1, 2)``.
"""
from __future__ import annotations

import math
import re

ANSWER_TYPES = ("choice", "number", "set", "interval", "tuple", "matrix", "piecewise", "list", "inequality", "equation",
                "text", "expression")
_CHOICE = re.compile(r"^\(?[A-E]\)?$")
_SET = re.compile(r"^\\\{.*\\\}$", re.DOTALL)
_ORDERED = re.compile(r"^[(\[].*[)\]]$", re.DOTALL)
_INTERVAL = re.compile(r"^[(\[][^,()\[\]]*,[^,()\[\]]*[)\]]$")
_MATRIX = re.compile(r"^\\begin\{([pbBvV]?matrix|array)\}")
_INEQUALITY = re.compile(r"<|>|\\(?:le|ge|leq|geq|lt|gt|neq|ne)(?![A-Za-z])")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z '\-]*$")
_PIECEWISE = re.compile(r"^(?:[A-Za-z](?:\([a-z]\))?\s*=\s*)?\\begin\{cases\}(.*)\\end\{cases\}$", re.DOTALL)
# A part label: "(a)", "**(b)**", "Part (c):", "(ii)"; never the argument of a function ("f(a)").
_PART_LABEL = re.compile(r"(?:^|(?<=[\s;,.:*]))(?:\*\*)?(?:[Pp]art\s*)?\((?P<label>[a-h]|i{1,3}|iv|vi{0,3})\)(?:\*\*)?\s*[:.]?"
                         r"(?:\*\*)?\s*")
_PART_ORDERS = (("a", "b", "c", "d", "e", "f", "g", "h"), ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii"))
_MATRIX_ENVIRONMENTS = frozenset({"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "array"})


def _top_level_commas(text: str) -> int:
    depth = commas = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            commas += 1
    return commas


def answer_type(canonical: str) -> str:
    """The type of canonical answer ``canonical`` (one of :data:`ANSWER_TYPES`; see the module docstring)."""
    # Imported here: normalize imports this module (for vector_as_tuple).
    from rewardsmith.reward_fns.math_verifier.normalize import parse_number

    if _CHOICE.match(canonical):
        return "choice"
    if parse_number(canonical) is not None:
        return "number"
    if _MATRIX.match(canonical):
        return "matrix"
    if _PIECEWISE.match(canonical):
        return "piecewise"
    if _SET.match(canonical):
        return "set"
    if "\\cup" in canonical or (_INTERVAL.match(canonical) and canonical[0] + canonical[-1] in ("(]", "[)", "[]")):
        return "interval"
    if _ORDERED.match(canonical) and _top_level_commas(canonical[1:-1]) >= 1:
        return "interval" if "\\infty" in canonical else "tuple"
    if _INEQUALITY.search(canonical):
        return "inequality"
    if canonical.count("=") == 1:
        return "equation"
    if _top_level_commas(canonical) >= 1:
        return "list"
    if _WORDS.match(canonical):
        return "text"
    return "expression"


def type_verdict(answer: str, target: str) -> str | None:
    """Why ``answer`` cannot equal ``target`` by their types alone, else ``None``."""
    answer_kind, target_kind = answer_type(answer), answer_type(target)
    ordered = ("tuple", "interval", "matrix")
    if answer_kind == "set" and target_kind in ordered:
        return f"a set is no {target_kind}: the gold is ordered"
    if target_kind == "set" and answer_kind in ordered:
        return f"a {answer_kind} is no set"
    # "\\le 8", "x > 4": a bound on a value commits to no value, and a value is no bound.
    if {answer_kind, target_kind} == {"inequality", "number"}:
        return "a bound is no value" if answer_kind == "inequality" else "a value is no bound"
    return None


def piecewise_rows(canonical: str) -> list[tuple[str, str]] | None:
    """The ``(value, condition)`` rows of a ``cases`` environment, else ``None``.

    A row is ``value & condition`` or ``value, condition``; the words "if",
    "for", "when" before a condition are the condition's.
    """
    match = _PIECEWISE.match(canonical.strip())
    if match is None:
        return None
    rows = []
    for row in (r.strip() for r in re.split(r"\\\\", match.group(1))):
        if not row:
            continue
        if "&" in row:
            value, condition = row.split("&", 1)
        elif _top_level_commas(row) >= 1:
            value, condition = row.rsplit(",", 1)
        else:
            return None
        value = value.strip().rstrip(",").strip()
        if not value or not condition.strip():
            return None
        rows.append((value, condition.strip()))
    return rows or None


def labelled_parts(text: str) -> list[tuple[int, str]] | None:
    """The parts of ``text`` labelled (a), (b), ... or (i), (ii), ...: ``(offset, part text)`` of the
    last run of at least two labels in order from the first; ``None`` when there is none.

    A part's text runs from its label to the next label (the last one to the end of ``text``).
    """
    labels = list(_PART_LABEL.finditer(text))
    run: list[re.Match[str]] = []
    last: list[re.Match[str]] = []
    for label in labels:
        order = _PART_ORDERS[0] if label.group("label") in _PART_ORDERS[0] else _PART_ORDERS[1]
        index = order.index(label.group("label"))
        previous = run[-1].group("label") if run else None
        if index == 0:
            run = [label]
        elif previous in order and order.index(previous) == index - 1:
            run.append(label)
        else:
            run = []
        if len(run) >= 2:
            last = list(run)
    if not last:
        return None
    run = last
    ends = [label.start() for label in run[1:]]
    ends.append(next((label.start() for label in labels if label.start() > run[-1].start()), len(text)))
    return [(label.start(), text[label.end() : end]) for label, end in zip(run, ends)]


def part_values(answer: str) -> list[str] | None:
    """The values of an answer written as labelled parts (``(a) 12; (b) 7`` -> 12, 7), else ``None``."""
    parts = labelled_parts(answer.strip())
    if parts is None or parts[0][0] != 0:
        return None
    values = [part.strip().rstrip(";,.").strip() for _, part in parts]
    return values if all(values) else None


# A vector written transposed is the same vector: "(4, -1)^T", "(4, −1)ᵀ" (NFKC makes it a glued "T"),
# "[3, 6, 9]^\\top", a one-row matrix with "^\\mathsf{T}".
TRANSPOSE_MARK = (r"(?:\^\s*\{?\s*(?:T|\\top|\\intercal|\\mathsf\s*\{?\s*T\s*\}?|\\mathrm\s*\{?\s*T\s*\}?)\s*\}?"
                  r"|ᵀ|⊤)")
_TRANSPOSED = re.compile(r"^(\(.*\)|\[.*\]|\\begin\{(\w*matrix)\}.*\\end\{\2\})\s*(?:" + TRANSPOSE_MARK + r"|(?<=[)\]])T)$",
                         re.DOTALL)


def untransposed(canonical: str) -> str:
    """A tuple, bracketed list or matrix without a transpose mark after it; other text unchanged."""
    match = _TRANSPOSED.match(canonical.strip())
    return match.group(1) if match else canonical


def vector_as_tuple(canonical: str) -> str:
    """A matrix of one row or one column (at least two entries) as a tuple ``(a, b, ...)``; other text unchanged."""
    if not _MATRIX.match(canonical):
        return canonical
    from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker

    try:
        nodes, _, _ = LatexWalker(canonical, tolerant_parsing=False).get_latex_nodes()
    except Exception:  # noqa: BLE001 - pylatexenc's parse errors: not a matrix we can read
        return canonical
    if len(nodes) != 1 or not isinstance(nodes[0], LatexEnvironmentNode):
        return canonical
    node = nodes[0]
    if node.environmentname not in _MATRIX_ENVIRONMENTS:
        return canonical
    body = "".join(child.latex_verbatim() for child in node.nodelist)
    if node.environmentname == "array":
        body = re.sub(r"^\s*\{[^{}]*\}", "", body)  # the column spec
    rows = [row for row in (r.strip() for r in re.split(r"\\\\", body)) if row]
    cells = [[cell.strip() for cell in row.split("&")] for row in rows]
    if len(cells) > 1 and all(len(row) == 1 for row in cells):
        entries = [row[0] for row in cells]
    elif len(cells) == 1 and len(cells[0]) > 1:
        entries = cells[0]
    else:
        return canonical
    if not all(entries):
        return canonical
    return "(" + ", ".join(entries) + ")"


# A point named by a capital letter, P(3, -2), C\left(\frac12, 3\right), Q_1(0, 1, 2) (in canonical form).
_POINT_NAME = re.compile(r"^[\s$]*[A-Z](?:_\{?\w+\}?)?\s*(?=\\left\s*\(|\()")
_PERMUTATION_CALL = re.compile(r"^P\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
MAX_PERMUTATION_N = 1000


def _closing_index(text: str) -> int:
    """Where the bracket that opens ``text`` closes, else -1."""
    depth = 0
    for index, char in enumerate(text):
        depth += char in "(["
        depth -= char in ")]"
        if depth == 0:
            return index
    return -1


def in_gold_convention(answer: str, gold: str) -> str:
    """``answer`` as the row's convention (the gold's type) reads a letter before a tuple, else unchanged.

    ``P(5, 3)`` is a point named P where the gold is a point, and the number of 3-permutations of 5 (60)
    where the gold is a number: the gold says which question was asked. Against any other gold the
    letter stays, unread.
    """
    from rewardsmith.reward_fns.math_verifier.normalize import canonical_answer

    target = answer_type(canonical_answer(gold))
    name = _POINT_NAME.match(answer)
    if name is not None and target == "tuple":
        point = canonical_answer(answer[name.end() :])  # read apart: C(2, 1) is a binomial coefficient too
        whole = _closing_index(point) == len(point) - 1  # one group: not "A(1, 2) and B(3, 4)"
        return point if whole and answer_type(point) in ("tuple", "interval") else answer
    permutation = _PERMUTATION_CALL.match(canonical_answer(answer))
    if permutation is not None and target == "number":
        n, k = int(permutation.group(1)), int(permutation.group(2))
        if k <= n <= MAX_PERMUTATION_N:
            return str(math.perm(n, k))
    return answer
