"""PRIME math scorer for the ``numina_*`` rows: verl's ``reward_score/prime_math``, verdict for verdict.

Extraction (``match_answer``): the text after the last "answer:" / "answer
is" / "answers are", before the last "is answer" / "is the answer" ..., then
the last ``\\boxed{}``/``\\fbox{}`` content, then what follows the last
"be " / "is " / "=" / ": " / "get " ... ; an answer without a digit is
unmatched (but still graded).

Grading: :func:`prm800k_grader.grade_answer` (the ``PRIME`` variant) first;
otherwise ``math_equal`` (ToRA's grader: string, numeric with a 1e-4 relative
tolerance where 25 also matches 0.25 and 2500, intervals, tuples, points and
``pmatrix`` golds, with ``\\pi`` read as 3.14159... and as 3.14). Any error is
"wrong". The score is 1.0 or 0.0, as verl's ``default_compute_score`` returns
``float(is_correct)``.

Two deliberate differences from verl's code, neither changing a verdict on an
answer written as math:

* verl evaluates answer text with Python's ``eval`` (``\\pi`` answers and
  list answers against a ``pmatrix`` gold). Here only number literals,
  arithmetic and lists/tuples of them are evaluated; a name or a call (which
  verl would run) counts as "does not evaluate", and a power above
  ``MAX_EXPONENT`` too (verl would compute it, or hang). Likewise a sympy
  ``Matrix(...)`` answer is parsed only when it holds numbers and arithmetic.
* verl 0.9.1's final sympy check (``symbolic_equal``) never decides: its
  timeout guard is used as a context manager, which raises, and the error is
  swallowed, so it always answers "not equal". It answers "not equal" here too.
"""
from __future__ import annotations

import ast
import math
import operator
import re
from math import isclose
from typing import Any

from rewardsmith.reward_fns.prm800k_grader import PRIME, grade_answer
from rewardsmith.reward_fns.scorer_inputs import require_text

MAX_EXPONENT = 10_000
# Python's operators, as verl's eval reads answer text ("2^3" is xor there too).
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
# A sympy ``Matrix(...)`` answer of numbers only: safe to give sympy's parser (which evaluates Python).
_NUMERIC_MATRIX = re.compile(r"^Matrix\([\[\]0-9+\-*/().,\s]*\)$")
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def safe_eval(text: str) -> Any:
    """Evaluate number literals, arithmetic and lists/tuples of them; raise ``ValueError`` on anything else."""
    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [value(element) for element in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent {right} over {MAX_EXPONENT}")
            return _BINARY[type(node.op)](left, right)
        raise ValueError(f"not evaluated: {ast.dump(node)[:80]}")

    return value(ast.parse(text.strip(), mode="eval").body)


def _last_boxed_only_string(string: str) -> str | None:
    idx = string.rfind("\\boxed")
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth, left, right = 0, None, None
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
            if left is None:
                left = i
        elif string[i] == "}":
            depth -= 1
            if depth == 0:
                right = i
                break
    if left is None or right is None:
        return None
    return string[left + 1:right].strip()


def _after_last(response: str, markers: list[str]) -> tuple[bool, str]:
    # Each marker in turn cuts the response after its last occurrence.
    matched = False
    for marker in markers:
        idx = response.lower().rfind(marker)
        if idx != -1:
            matched = True
            response = response[idx + len(marker):].strip()
            if response.endswith("\n"):
                response = response[:-2]
    return matched, response


def match_answer(response: str) -> tuple[bool, str]:
    """verl's answer extraction: ``(matched, answer text)`` (see the module docstring)."""
    is_matched, response = _after_last(response, ["answer:", "answer is", "answers are"])
    for marker in ["is answer", "is the answer", "are answers", "are the answers"]:
        idx = response.lower().rfind(marker)
        if idx != -1:
            is_matched = True
            response = response[:idx].strip()
            if response.endswith("\n"):
                response = response[:-2]
    boxed = _last_boxed_only_string(response)
    if boxed:
        is_matched, response = True, boxed
    if ". " in response:
        response = response[:response.lower().rfind(". ")].strip()
    matched_tail, response = _after_last(
        response, ["be ", "is ", "are ", "=", ": ", "get ", "be\n", "is\n", "are\n", ":\n", "get\n"])
    is_matched = is_matched or matched_tail
    return (is_matched if any(c.isdigit() for c in response) else False), response


def _is_digit(s: Any) -> tuple[bool, float | None]:
    try:
        if "{,}" in str(s):
            return True, float(str(s).replace("{,}", ""))
        return True, float(str(s).replace(",", ""))
    except ValueError:
        return False, None


def _handle_pi(string: Any, pi: float) -> Any:
    if isinstance(string, str) and "\\pi" in string:
        idx = string.find("\\pi")
        while idx != -1:
            factor = "*" if idx > 0 and string[idx - 1].isdigit() else "1*"
            string = string[:idx] + f"{factor}{pi}" + string[idx + 3:]
            idx = string.find("\\pi", idx + 1)
        try:
            string = safe_eval(string)
        except Exception:  # noqa: BLE001 - not arithmetic: keep the text, as verl
            pass
    return string


def _normalize(answer: Any, pi: float) -> Any:
    if isinstance(answer, str) and re.match(r"\$\d+(\.\d+)?", answer):
        return answer[1:]
    if isinstance(answer, str) and (re.match(r"^\d+(\.\d+)?%$", answer) or re.match(r"^\d+(\.\d+)?\\%$", answer)):
        return answer.replace("\\%", "").replace("%", "")
    if isinstance(answer, str) and "_" in answer:
        # A base subscript (101_2): verl keeps the digits as a number, raising when they are not one.
        answer = int(float(answer.split("_")[0]))
    return _handle_pi(answer, pi)


def _format_intervals(prediction: str) -> str:
    for prefix, opening, closing in (("Interval(", "[", "]"), ("Interval.Ropen(", "[", ")"),
                                     ("Interval.Lopen(", "(", "]"), ("Interval.open(", "(", ")")):
        match = re.match("^" + re.escape(prefix) + r"(.*)\)$", prediction)
        if match:
            return opening + match.group(1) + closing
    return prediction


def _all_equal(preds: list[Any], refs: list[Any], include_percentage: bool, tolerance: float) -> bool:
    return all(math_equal(pred, ref, include_percentage, tolerance) for pred, ref in zip(preds, refs))


def math_equal(prediction: Any, reference: Any, include_percentage: bool = True,
               tolerance: float = 1e-4, pi: float = math.pi) -> bool:
    """ToRA's answer equality as verl's prime_math grader has it (raises where verl's does)."""
    prediction = _normalize(prediction, pi)
    reference = _normalize(reference, pi)
    if isinstance(prediction, str) and len(prediction) > 1000:
        prediction = prediction[:1000]
    if isinstance(prediction, str) and isinstance(reference, str):
        if prediction.strip().lower() == reference.strip().lower():
            return True
        if prediction.replace(" ", "") == reference.replace(" ", ""):
            return True
    try:
        if _is_digit(prediction)[0] and _is_digit(reference)[0]:
            prediction, reference = _is_digit(prediction)[1], _is_digit(reference)[1]
            candidates = [reference / 100, reference, reference * 100] if include_percentage else [reference]
            return any(isclose(item, prediction, rel_tol=tolerance) for item in candidates)
    except Exception:  # noqa: BLE001 - as verl: fall through to the textual rules
        pass
    if not prediction and prediction not in [0, False]:
        return False

    reference = str(reference).strip()
    prediction = _format_intervals(str(prediction).strip())
    pred_str, ref_str = prediction, reference
    if (prediction.startswith("[") and prediction.endswith("]") and not reference.startswith("(")) or (
            prediction.startswith("(") and prediction.endswith(")") and not reference.startswith("[")):
        pred_str, ref_str = pred_str.strip("[]()"), ref_str.strip("[]()")
    for s in "{}()":
        ref_str, pred_str = ref_str.replace(s, ""), pred_str.replace(s, "")
    if pred_str == ref_str:
        return True

    if (prediction and reference and prediction[0] in "([" and prediction[-1] in ")]"
            and prediction[0] == reference[0] and prediction[-1] == reference[-1]):
        pred_parts, ref_parts = prediction[1:-1].split(","), reference[1:-1].split(",")
        if len(pred_parts) == len(ref_parts) and _all_equal(pred_parts, ref_parts, include_percentage, tolerance):
            return True
    if "," in prediction and "," in reference:
        pred_parts = [item.strip() for item in prediction.split(",")]
        ref_parts = [item.strip() for item in reference.split(",")]
        if len(pred_parts) == len(ref_parts):
            return _all_equal(pred_parts, ref_parts, include_percentage, tolerance)
    if prediction.startswith("Point") and reference[0] == "(" and reference[-1] == ")":
        pred_parts = prediction[prediction.find("(") + 1:-1].split(",")
        ref_parts = reference[1:-1].split(",")
        if len(pred_parts) == len(ref_parts) and _all_equal(pred_parts, ref_parts, include_percentage, tolerance):
            return True
    if r"\begin{pmatrix}" in reference and prediction.startswith("Matrix"):
        if _NUMERIC_MATRIX.match(prediction):
            try:
                from sympy.parsing.sympy_parser import parse_expr

                pred_matrix = parse_expr(prediction)
                items = reference.split()[1:-1:2]
                if len(pred_matrix) == len(items) and _all_equal(list(pred_matrix), items, include_percentage, tolerance):
                    return True
            except Exception:  # noqa: BLE001 - as verl
                pass
    elif r"\begin{pmatrix}" in reference and prediction.startswith("[") and prediction.endswith("]"):
        # verl evaluates the list outside its try: an answer that does not evaluate raises (scored wrong).
        if isinstance(safe_eval(prediction), list):
            try:
                pred_matrix = safe_eval(prediction)
                rows = (reference.removeprefix(r"\\begin{pmatrix}").removeprefix(r"\begin{pmatrix}")
                        .removesuffix(r"\\end{pmatrix}").removesuffix(r"\end{pmatrix}")).split("\\")
                rows = [row.split("&") if "&" in row else row for row in rows]
                if len(pred_matrix) == len(rows) and _all_equal(pred_matrix, rows, include_percentage, tolerance):
                    return True
            except Exception:  # noqa: BLE001 - as verl
                pass
    # verl's symbolic_equal would come here; in verl 0.9.1 it always answers False (module docstring).
    return False


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    **kwargs: Any,
) -> float:
    """1.0 when the extracted answer equals ``ground_truth`` under verl's prime_math rules, else 0.0."""
    output = require_text("prime_math", "solution_str", solution_str)
    gold = require_text("prime_math", "ground_truth", ground_truth)
    _, extracted = match_answer(output)
    if grade_answer(extracted, gold, PRIME):
        return 1.0
    try:
        if "\\pi" in extracted or "\\pi" in gold:
            correct = any(math_equal(extracted, gold, pi=pi) for pi in (math.pi, 3.14))
        else:
            correct = math_equal(extracted, gold)
    except Exception:  # noqa: BLE001 - verl scores any grading error as wrong
        correct = False
    return float(correct)
