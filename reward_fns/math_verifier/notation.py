"""Notations of a final answer rewritten into the forms :mod:`~rewardsmith.reward_fns.math_verifier.normalize` reads.

Used by :func:`~rewardsmith.reward_fns.math_verifier.normalize.canonical_answer`:

* :func:`typeset_quantities`: siunitx macros (``\\SI{5}{\\meter}``,
  ``\\qty{12}{cm}``, ``\\num{1200}``, ``\\si{cm}``) become a number and a
  ``\\text`` unit group; a temperature unit after a degree sign (``100°C``)
  goes with the sign; unicode superscripts (``x²``, ``10⁻³``) become powers.
* :func:`spelled_number`: what a model writes in words or with a suffix for a
  number: fractions in words ("three quarters"), ordinals ("the
  3rd", ``21^{st}``, "the third"), a mixed number with "and" ("2 and 1/2"),
  and a base-n number with its digits in parentheses (``(1011)_2``).
* :func:`scaled_number`: a number with a magnitude word or suffix ("3.2
  million", "2 billion", ``4.5k``, ``1.5\\text{M}``, "2bn") as the plain number.
* :func:`chance_phrase`: a chance written in words ("1 in 4", "3 out of 8",
  "1 chance in 6") as the fraction it is. Odds ("1 to 3") are no chance:
  they are left alone.
* :func:`solution_set`: the names of the two special solution sets, in words
  or symbols, as one name each: the empty set (``\\emptyset``,
  ``\\varnothing``, ``∅``, ``\\{\\}``, "no solution", "no real roots", "none")
  is ``\\emptyset``; the real line (``\\mathbb{R}``, ``ℝ``, ``(-\\infty,
  \\infty)``, "all real numbers", "all reals") is ``\\mathbb{R}``; "infinitely
  many (solutions)" is ``infinitely many``; the real line without some numbers
  (``\\mathbb{R} \\setminus \\{0\\}``, ``\\mathbb{R} - \\{1, 2\\}``) is the union of
  the open intervals between them (:func:`real_line_minus`).
* :func:`factorial_power`: a falling or rising factorial power of whole
  numbers (``6^{\\underline{3}}`` = 120, ``6^{\\overline{3}}`` = 336) is its value.
* :func:`written_form`: numbers written in a notation of their own: terms
  of a sequence joined by arrows ("4 → 2 → 1" is ``4, 2, 1``), a ratio
  in words ("3 to 2" is ``3:2``), a binomial coefficient (``C(10, 3)``,
  ``5C2``, ``{}_{10}C_{3}``: its value, by ``math.comb``), scientific notation
  in plain text ("2.4 x 10^3", ``2.4*10^{3}``: its value when a whole
  number), a number in inline code ("`42`"), and a base named in words
  (``1F_{\\text{sixteen}}`` is ``1F_{16}``; :func:`based_number` reads a
  prefix, ``0x1F``, ``0b1011``, ``0o17``, itself), and a combination of
  the unit vectors i, j, k the tuple it names (``\\mathbf{i} - 2\\mathbf{j}``
  is ``(1, -2)``).
* :func:`plain_typesetting`: typesetting of another convention in its plain
  LaTeX form: HTML character references (``4&#53;`` is ``45``), sized
  delimiters (``\\bigl( ... \\bigr)``, ``\\Big(``), TeX's ``{a \\over b}``
  (``\\frac{a}{b}``), French interval brackets (``]2, 5[`` is ``(2, 5)``,
  ``[1, 3[`` is ``[1, 3)``) and the tg / ctg / arctg / cosec names of
  \\tan, \\cot, \\arctan, \\csc; a note set over or under a value
  (``\\overset{A}{B}``, ``\\underset{A}{B}``, ``\\stackrel{A}{B}``,
  ``\\underbrace{B}_{A}``, ``\\overbrace{B}^{A}``) is dropped: the value is B.
* :func:`matlab_matrix` (in :func:`written_form`): a MATLAB / Octave matrix
  with ``;`` between rows or a ``'`` transpose (``[1 2; 3 4]``) as a
  ``pmatrix``; and (in :func:`plain_typesetting`) presentation MathML,
  ``\\color`` / ``\\textcolor`` / ``\\colorbox`` (decoration), a multinomial
  coefficient ``\\binom{7}{3,2,2}`` whose parts add up, permutations
  ``{}_{10}P_{3}`` and ``10P3``, Mathematica's ``Pi``, ``Sqrt[..]``, ``Exp[..]``, ``Binomial[n, k]``, R's
  ``choose(n, k)``, SymPy's ``oo`` and ``Interval(a, b)``.
* :func:`base_marked`: a number with its base marked in any notation
  (``25_{(8)}``, ``25_{\\text{base } 8}``, ``25₈``, "25 (base 8)", "25 in
  base 8", ``25_{\\text{eight}}``) as ``25_{8}``: the base changes the value,
  so the mark is never dropped as a remark or a unit.
* :func:`decimal_comma`: a decimal comma in LaTeX, ``2{,}5`` (the braces
  keep TeX from spacing it as a list), is ``2.5`` when the digits after it
  cannot be a thousands group (not exactly three: ``1{,}000`` stays 1000).
* :func:`separator_readings`: a plain comma number, ``3,5``, in a response
  written in a language that writes decimal commas (German, French, Spanish,
  Italian, Portuguese, Dutch, Indonesian: at least :data:`MIN_LANGUAGE_WORDS`
  of their common words) reads as ``3.5``; followed by exactly three digits
  ("1,234") it reads both ways, a thousands group or a decimal comma, and a
  grader decides only when both readings agree. In English "3,5" stays a
  list. These languages (and the rupiah, the real and the euro written
  beside a number) group thousands with a dot: there "250.000" reads
  both ways too (250000 or 250.0); dot groups of three after a first group,
  "1.250.000", are thousands in any language (no decimal has two points).
* :func:`accounting_negatives`: a number in parentheses, ``(12)`` or ``($12)``,
  is negative, -12, in a response that says it writes negatives so
  ("parentheses mark negative values", "negatives in parentheses",
  "accounting notation", a "profit/(loss)" line); elsewhere "(12)" is 12.
* :func:`negative_in_words`: whether a response gives a number's sign in
  words: "15 m below sea level", "8 degrees below zero", "a loss of $20", "$30
  in debt", "a deficit of 12" (a grader takes it for the negative gold it
  names; against a positive gold the number stands as written).
* :func:`set_builder`: a set in set-builder notation, ``\\{x \\mid x > 3\\}``,
  ``\\{x \\in \\mathbb{R} : -2 \\le x \\le 5\\}``, is its condition (an
  inequality, read against an interval or inequality gold); over the
  integers or the naturals with both bounds, ``\\{n \\in \\mathbb{Z} : 0 < n <
  4\\}``, it is the list of its elements ``\\{1,2,3\\}``.
* :func:`congruence`: a residue class (``x \\equiv 3 \\pmod{7}``, ``3 \\bmod 7``,
  "3 (mod 7)") as ``(residue, modulus)``.
"""
from __future__ import annotations

import html
import math
import re
from fractions import Fraction

from rewardsmith.reward_fns.latex_boxes import closing_brace_index
from rewardsmith.reward_fns.math_verifier.numerals import DIGIT_GROUPS

_UNIT_BODY = r"((?:[^{}]|\{[^{}]*\})*)"
_SI_QUANTITY = re.compile(r"\\(?:SI|qty)\s*\{([^{}]*)\}\s*\{" + _UNIT_BODY + r"\}")
_SI_NUMBER = re.compile(r"\\num\s*\{([^{}]*)\}")
_SI_UNIT = re.compile(r"\\(?:si|unit)\s*\{" + _UNIT_BODY + r"\}")
# Unit words may hold only what a trailing \text unit group may hold.
_NOT_UNIT_CHAR = re.compile(r"[^A-Za-z .^0-9/-]")
_TEMPERATURE = re.compile(
    r"(°|\^\s*\{\s*\\circ\s*\}|\^\s*\\circ)\s*(?:\\(?:text|mathrm)\s*\{\s*[CFK]\s*\}|[CFK](?![A-Za-z]))")
_SUPERSCRIPT = re.compile(r"[⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_SUPERSCRIPT_PLAIN = str.maketrans("⁺⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "+-0123456789")

_SMALL = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10}
_DENOMINATORS = {"half": 2, "halve": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6,
                 "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
             "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
             "twentieth": 20}
_WORD_FRACTION = re.compile(r"^(\w+)[\s-]+(\w+?)s?$")
_ORDINAL_SUFFIX = re.compile(r"^(?:the\s+)?([+-]?\d+)\s*(?:\^\s*\{\s*(?:st|nd|rd|th)\s*\}|\^?(?:st|nd|rd|th))$")
_ORDINAL_WORD = re.compile(r"^the\s+(\w+)(?:\s+[a-z]+)?$")  # "the fifth", "the fifth term"
_MIXED_WITH_AND = re.compile(r"^(\d+)\s+and\s+(\d+\s*/\s*\d+|\\frac\s*\{\d+\}\s*\{\d+\})$")
_PARENTHESISED_BASE = re.compile(r"^\((\w+)\)(_\s*\{?\d+\}?)$")


# Magnitude words and suffixes: a word after a space or glued, a letter glued ("45k", "1.5M") or alone in a
# \text group; of single letters only k/K and upper-case M ("300 K" is kelvin, "5m" a metre, "2B" a choice).
_MAGNITUDES = {"hundred": 10**2, "thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mn": 10**6,
               "billion": 10**9, "bn": 10**9, "trillion": 10**12, "lakh": 10**5, "lakhs": 10**5, "crore": 10**7,
               "crores": 10**7}
_SCALED = re.compile(r"^([+-]?(?:" + DIGIT_GROUPS + r"|\d+)(?:\.\d+)?)(?:\s*\\(?:text|mathrm)\s*\{\s*(\w+)\s*\}|\s*(hundred|thousand|million|billion|"
                     r"trillion|lakhs?|crores?|mn|bn)(?:\s+[A-Za-z]+)?|(k|K|M))$", re.IGNORECASE)  # "2.5 million dollars": of a unit  # a lone letter glued: "300 K" is kelvin
_SCALED_LETTERS = frozenset({"k", "K", "M", "mn", "bn"})
_CHANCE = re.compile(r"^(\d+)\s*(?:\\text\s*\{\s*)?(?:chances?\s+)?(?:in|out\s+of)(?:\s*\})?\s*(\d+)"
                     r"(?:\s*(?:\\text\s*\{\s*)?(?:chances?|tries|trials|cases)?(?:\s*\})?)?$", re.IGNORECASE)
EMPTY_SET, REAL_LINE, INFINITELY_MANY = "\\emptyset", "\\mathbb{R}", "infinitely many"
_EMPTY_SET = re.compile(r"^(?:\\emptyset|\\varnothing|∅|\\\{\s*\\\}|\{\s*\}|(?:the\s+)?empty\s+set|none|"
                        r"(?:there\s+(?:is|are)\s+)?no\s+(?:real\s+|such\s+|possible\s+|valid\s+)?"
                        r"(?:solutions?|roots?|values?|zeros?|answers?|integers?|numbers?|pairs?|triples?|points?)(?:\s+exists?)?)$", re.IGNORECASE)
_REAL_LINE = re.compile(r"^(?:\\mathbb\s*\{?\s*R\s*\}?|ℝ|\\R|\(\s*-\s*\\infty\s*,\s*\+?\s*\\infty\s*\)|"
                        r"(?:all|any|every)\s+real(?:\s+numbers?|s|\s+values?(?:\s+of\s+[a-z])?|\s+[a-z])?)$",
                        re.IGNORECASE)
_INFINITELY_MANY = re.compile(r"^(?:there\s+are\s+)?infinitely\s+many(?:\s+(?:real\s+)?solutions)?$", re.IGNORECASE)
_MOD = r"(?:\\pmod|\\bmod|\\mod|\\operatorname\s*\{\s*mod\s*\}|mod)"
_CONGRUENCE = re.compile(r"^(?:[A-Za-z](?:_\{?\w+\}?)?\s*(?:\\equiv|≡)\s*)?([+-]?\d+)\s*(\()?\s*" + _MOD +
                         r"\s*\{?\s*(\d+)\s*\}?\s*(\))?$")


def scaled_number(text: str) -> str | None:
    """The plain number of a number with a magnitude word or suffix ("2.5 million" -> 2500000), else ``None``."""
    match = _SCALED.match(text)
    if match is None:
        return None
    word = match.group(2) or match.group(3) or match.group(4)
    if match.group(2) and word.lower() not in _MAGNITUDES:
        return None
    if len(word) <= 2 and word not in _SCALED_LETTERS:
        return None  # "5 m" is five metres, "5 mm" five millimetres
    value = Fraction(match.group(1).replace(",", "")) * _MAGNITUDES[word.lower()]
    return str(value.numerator) if value.denominator == 1 else None


_RATIO_WORDS = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s+to\s+([+-]?\d+(?:\.\d+)?)$", re.IGNORECASE)
_BINOMIAL = re.compile(r"^(?:(?:C|choose|nCr)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)|Binomial\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]|(\d+)\s*C\s*(\d+)|(?:\{\s*\})?_\s*\{?\s*(\d+)\s*\}?\s*C_\s*\{?\s*(\d+)\s*\}?)$")
# \binom{7}{3,2,2}: a multinomial coefficient, read when its parts add up to its top (else left unread).
_MULTINOMIAL = re.compile(r"^\\binom\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+(?:\s*,\s*\d+)+)\s*\}$")
# {}_{10}P_{3}, 10P3: permutations (P(10, 3) is also a labelled point, so it is not read).
_PERMUTATIONS = re.compile(r"^(?:(?:\{\s*\})?_\s*\{?\s*(\d+)\s*\}?\s*P_\s*\{?\s*(\d+)\s*\}?|(\d+)\s*P\s*(\d+))$")
_PLAIN_SCIENTIFIC = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*(?:x|X|\*|\\times|\\cdot)\s*10\s*(?:\^|\*\*)\s*\{?\s*([+-]?\d+)\s*\}?$")
_INLINE_CODE = re.compile(r"^`+([^`]+)`+$")
_ARROWS = re.compile(r"\s*(?:→|⟶|->|\\to(?![A-Za-z])|\\rightarrow(?![A-Za-z])|\\longrightarrow(?![A-Za-z]))\s*")
_NUMBER_TERM = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_BASE_PREFIX = re.compile(r"^0([xXbBoO])([0-9A-Fa-f]+)$")
_PREFIX_BASES = {"x": 16, "b": 2, "o": 8}
_BASE_WORD = re.compile(r"^([0-9A-Za-z]+)\s*_\s*\{?\s*(?:\\text\s*\{\s*)?([a-z]+)\s*\}?\s*\}?$", re.IGNORECASE)
_BASE_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
               "eleven": 11, "twelve": 12, "sixteen": 16, "binary": 2, "octal": 8, "decimal": 10, "hex": 16,
               "hexadecimal": 16}


_UNIT_VECTOR_MACRO = re.compile(
    r"\\(?:hat|vec|mathbf|boldsymbol|bm)\s*\{\s*(?:([ijk])|\\([ij])math)\s*\}|\\hat\s*(?:([ijk])|\\([ij])math\b)")
_UNIT_VECTOR_TERM = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d+)?|\d+/\d+|\\frac\{\d+\}\{\d+\})?\s*\*?\s*([ijk])\s*")


def unit_vectors(text: str) -> str | None:
    """The tuple a combination of the unit vectors i, j, k names (``\\mathbf{i} - 2\\mathbf{j} + 3\\mathbf{k}``:
    ``(1, -2, 3)``; ``3\\hat{i} + 4\\hat{j}``: ``(3, 4)``), when there are two or more terms, each a number
    times a unit vector, and j or k is among them (``2 + 3i`` is a complex number), or a marked k alone
    (``\\mathbf{k}``: ``(0, 0, 1)``); else ``None``."""
    plain = _UNIT_VECTOR_MACRO.sub(lambda m: next(g for g in m.groups() if g), text)
    terms, at = {}, 0
    while at < len(plain):
        term = _UNIT_VECTOR_TERM.match(plain, at)
        if term is None or term.end() == at or term.group(3) in terms or (at and not term.group(1)):
            return None
        terms[term.group(3)] = ("-" if term.group(1) == "-" else "") + (term.group(2) or "1")
        at = term.end()
    # "3j" alone is the engineers' imaginary 3i; a marked k alone (\mathbf{k}) is the third axis.
    if not {"j", "k"} & terms.keys() or (len(terms) < 2 and not (terms.keys() == {"k"} and plain != text)):
        return None
    axes = "ijk" if "k" in terms else "ij"
    return "(" + ", ".join(terms.get(axis, "0") for axis in axes) + ")"


_MATLAB_MATRIX = re.compile(r"^\[([^\[\]]*)\]\s*(')?$")
_MATLAB_ENTRY = re.compile(r"^[+-]?\d+(?:\.\d+)?$")


def matlab_matrix(text: str) -> str | None:
    """The ``pmatrix`` of a MATLAB / Octave matrix (``[1 2; 3 4]``, ``[0, 1; 1, 0]``, a column ``[2; -1]``,
    a transposed row ``[3 5]'``) with a ``;`` between rows or a transpose mark; else ``None`` (``[1, 2]``
    is a list or an interval)."""
    match = _MATLAB_MATRIX.match(text.strip())
    if match is None or (";" not in match.group(1) and not match.group(2)):
        return None
    rows = [re.split(r"\s*,\s*|\s+", row.strip()) for row in match.group(1).split(";")]
    if any(not all(_MATLAB_ENTRY.match(entry) for entry in row) for row in rows) or len({len(row) for row in rows}) != 1:
        return None
    if match.group(2):
        rows = [list(column) for column in zip(*rows)]
    return "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(row) for row in rows) + "\\end{pmatrix}"


def written_form(text: str) -> str | None:
    """The plain form of a number written in a notation of its own (see the module docstring), else ``None``."""
    arrows = _ARROWS.split(text)
    if len(arrows) > 1 and all(_NUMBER_TERM.match(term.strip()) for term in arrows):
        return ", ".join(term.strip() for term in arrows)
    vector = unit_vectors(text)
    if vector:
        return vector
    code = _INLINE_CODE.match(text)
    if code:
        return code.group(1).strip()
    matrix = matlab_matrix(text)
    if matrix:
        return matrix
    ratio = _RATIO_WORDS.match(text)
    if ratio:
        return f"{ratio.group(1)}:{ratio.group(2)}"
    multinomial = _MULTINOMIAL.match(text)
    if multinomial and sum(parts := [int(k) for k in multinomial.group(2).split(",")]) == int(multinomial.group(1)):
        return str(math.factorial(int(multinomial.group(1))) // math.prod(math.factorial(k) for k in parts))
    permutations = _PERMUTATIONS.match(text)
    if permutations:
        n, r = (int(g) for g in permutations.groups() if g is not None)
        return str(math.perm(n, r))
    binomial = _BINOMIAL.match(text)
    if binomial:
        n, k = (int(g) for g in binomial.groups() if g is not None)
        return str(math.comb(n, k))
    scientific = _PLAIN_SCIENTIFIC.match(text)
    if scientific:
        value = Fraction(scientific.group(1)) * Fraction(10) ** int(scientific.group(2))
        return str(value.numerator) if value.denominator == 1 else f"{scientific.group(1)}\\times 10^{{{scientific.group(2)}}}"
    named = _BASE_WORD.match(text)
    if named and named.group(2).lower() in _BASE_WORDS:
        return f"{named.group(1)}_{{{_BASE_WORDS[named.group(2).lower()]}}}"
    return None


_HTML_REFERENCE = re.compile(r"&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z]+\d*);")
_SIZED_DELIMITER = re.compile(r"\\(?:big|Big|bigg|Bigg)[lrm]?(?![A-Za-z])\s*")
_TEX_OVER = re.compile(r"\{([^{}]*?)\\over(?![A-Za-z])([^{}]*)\}")
_BARE_TEX_OVER = re.compile(r"^([^{}]*?)\\over(?![A-Za-z])([^{}]*)$")
_FRENCH_INTERVAL = re.compile(r"^([\[\]])\s*([^\[\],]+?)\s*,\s*([^\[\],]+?)\s*([\[\]])$")
_NATIONAL_TRIG = re.compile(r"\\(?:mathrm|operatorname|text|rm)\s*\{\s*(arc)?(tg|ctg|cotg|cosec)\s*\}|\\?(?<![A-Za-z])(arc)?(tg|ctg|cotg|cosec)(?![A-Za-z])")
_TRIG_NAMES = {"tg": "tan", "ctg": "cot", "cotg": "cot", "cosec": "csc"}


def _trig_name(match: re.Match[str]) -> str:
    arc, name = (match.group(1) or match.group(3)), _TRIG_NAMES[match.group(2) or match.group(4)]
    if arc:
        return "\\arctan " if name == "tan" else f"\\operatorname{{arc{name}}} "
    return f"\\{name} "


_COLOR = re.compile(r"\\(?:textcolor|colorbox|color)\s*(?:\[[^\[\]]*\])?\s*\{([A-Za-z0-9#!.,\s-]*)\}")


def _visible_colour(match: re.Match[str]) -> str:
    """A colour is decoration (``\\textcolor{red}{5}`` is 5), but white text is hidden: left unread."""
    colour = match.group(1).strip().lower().lstrip("#")
    return match.group(0) if colour.startswith("white") or colour in ("fff", "ffffff", "1,1,1", "255,255,255") else ""


_MATHML_LEAF = re.compile(r"<(mn|mi|mtext)(?:\s[^<>]*)?>([^<>]*)</\1>")
_MATHML_OPERATOR = re.compile(r"<mo(?:\s[^<>]*)?>([^<>]*)</mo>")
_MATHML_GROUP = re.compile(r"<(mrow|mfrac|msqrt|msup|msub|mroot|mfenced)(?:\s[^<>]*)?>([^<>]*)</\1>")
_MATHML_ROOT = re.compile(r"^\s*<math(?:\s[^<>]*)?>([^<>]*)</math>\s*$")
_BRACED = re.compile(r"\{[^{}]*\}|\\frac\{[^{}]*\}\{[^{}]*\}|\\sqrt\{[^{}]*\}")


def _mathml_group(match: re.Match[str]) -> str:
    tag, inner = match.group(1), match.group(2)
    children = _BRACED.findall(inner)
    if tag in ("mrow", "msqrt", "mfenced"):
        body = "{" + inner + "}"
        return {"mrow": body, "msqrt": "{\\sqrt" + body + "}", "mfenced": "{(" + inner + ")}"}[tag]
    if len(children) != 2 or "".join(children) != inner.replace(" ", ""):
        return match.group(0)  # not two arguments: left unread
    first, second = children
    return {"mfrac": "{\\frac" + first + second + "}", "msup": "{" + first + "^" + second + "}",
            "msub": "{" + first + "_" + second + "}", "mroot": "{\\sqrt[" + second[1:-1] + "]" + first + "}"}[tag]


def mathml(text: str) -> str | None:
    """The LaTeX of a presentation-MathML answer (``<math><mfrac><mn>3</mn><mn>5</mn></mfrac></math>`` is
    ``\\frac{3}{5}``): numbers, identifiers, operators, rows, fractions, roots, powers and indices;
    ``None`` when any other element is left."""
    text = _MATHML_OPERATOR.sub(lambda m: html.unescape(m.group(1)).strip(), _MATHML_LEAF.sub(lambda m: "{" + m.group(2).strip() + "}", text))
    while True:
        grouped = _MATHML_GROUP.sub(_mathml_group, text)
        if grouped == text:
            break
        text = grouped
    root = _MATHML_ROOT.match(text)
    return root.group(1).strip() if root else None


_CODE_NAMES = ((re.compile(r"(?<![A-Za-z\\])Pi(?![A-Za-z])"), r"\\pi "),
               (re.compile(r"(?<![A-Za-z\\])Sqrt\[([^\[\]]*)\]"), r"\\sqrt{\1}"),
               (re.compile(r"(?<![A-Za-z\\])Exp\[([^\[\]]*)\]"), r"e^{\1}"),
               (re.compile(r"(?<![A-Za-z\\])Interval\.open\(([^()]*),([^()]*)\)"), r"(\1,\2)"),
               (re.compile(r"(?<![A-Za-z\\])Interval\.Lopen\(([^()]*),([^()]*)\)"), r"(\1,\2]"),
               (re.compile(r"(?<![A-Za-z\\])Interval\.Ropen\(([^()]*),([^()]*)\)"), r"[\1,\2)"),
               (re.compile(r"(?<![A-Za-z\\])Interval\(([^()]*),([^()]*)\)"), r"[\1,\2]"),
               (re.compile(r"(?<![A-Za-z\\])oo(?![A-Za-z])"), r"\\infty "))


def _code_names(text: str) -> str:
    """Mathematica's ``Pi``, ``Sqrt[..]``, ``Exp[..]`` and SymPy's ``oo`` and ``Interval(a, b)`` (closed
    unless ``.open`` / ``.Lopen`` / ``.Ropen``; an infinite end is open whatever is written) in LaTeX."""
    for pattern, latex in _CODE_NAMES:
        text = pattern.sub(latex, text)
    return re.sub(r"\[\s*(-\\infty)", r"(\1", re.sub(r"(\\infty)\s*\]", r"\1)", text))


def plain_typesetting(text: str) -> str:
    """``text`` with the typesetting of other conventions (see the module docstring) in plain LaTeX."""
    if "&" in text:
        text = _HTML_REFERENCE.sub(lambda m: html.unescape(m.group(0)), text)
    if "\\big" in text or "\\Big" in text:
        text = _SIZED_DELIMITER.sub("", text)
    if "\\over" in text:
        text = _TEX_OVER.sub(r"\\frac{\1}{\2}", text)
        text = _BARE_TEX_OVER.sub(r"\\frac{\1}{\2}", text.strip())
    if "tg" in text or "cosec" in text:
        text = _NATIONAL_TRIG.sub(_trig_name, text)
    if "set" in text or "brace" in text or "stackrel" in text:
        text = without_notes(text)
    if "\\color" in text or "\\textcolor" in text:
        text = _COLOR.sub(_visible_colour, text)
    if "<m" in text:
        text = mathml(text) or text
    if "Pi" in text or "Sqrt[" in text or "Exp[" in text or "oo" in text or "Interval" in text:
        text = _code_names(text)
    interval = _FRENCH_INTERVAL.match(text.strip())
    if interval and (interval.group(1) == "]" or interval.group(4) == "["):
        opening, low, high, closing = interval.groups()
        text = f"{'(' if opening == ']' else '['}{low}, {high}{')' if closing == '[' else ']'}"
    return text


_NOTE_OVER_OR_UNDER = re.compile(r"\\(overset|underset|stackrel|underbrace|overbrace)\s*(?=\{)")
_NOTE_SCRIPT = re.compile(r"\s*[_^]\s*(?:\\[A-Za-z]+|(?=\{)|[^\s{])")
_SECOND_GROUP = re.compile(r"\s*\{")


def without_notes(text: str) -> str:
    """``text`` with every note set over or under a value dropped, the value kept as a group: a remark on
    a value is not part of it (``\\underbrace{6 \\times 7}_{42}`` is 6 x 7; ``\\overset{42?}{41}`` is 41)."""
    while (match := _NOTE_OVER_OR_UNDER.search(text)) is not None:
        first = closing_brace_index(text, match.end())
        if first is None:
            return text
        if match.group(1) in ("underbrace", "overbrace"):
            value, end = text[match.end() + 1 : first], first + 1
            script = _NOTE_SCRIPT.match(text, end)
            if script is not None:
                end = script.end()
                if text[end : end + 1] == "{":
                    close = closing_brace_index(text, end)
                    if close is None:
                        return text
                    end = close + 1
        else:
            second = _SECOND_GROUP.match(text, first + 1)
            close = None if second is None else closing_brace_index(text, second.end() - 1)
            if close is None:
                return text
            value, end = text[second.end() : close], close + 1
        text = text[: match.start()] + "{" + value + "}" + text[end:]
    return text


_BASED = re.compile(r"^([0-9A-Za-z]+)\s*_\s*\{?\s*(\d+)\s*\}?$")
_BASE_NAME = r"(\d+|" + "|".join(sorted(_BASE_WORDS, key=len, reverse=True)) + r")"
_BASE_MARK = re.compile(
    r"^\(?([0-9A-Za-z]+)\)?\s*(?:"
    r"_\s*\{?\s*(?:\\(?:text|mathrm|rm)\s*\{\s*)?\(?\s*(?:base\s*\}?\s*(?:-|\\[,;: ])?\s*)?" + _BASE_NAME + r"\s*\)?\s*\}?\s*\}?"
    r"|\(\s*(?:in\s+)?base\s*-?\s*" + _BASE_NAME + r"\s*\)"
    r"|,?\s*(?:in\s+)?base\s*-?\s*" + _BASE_NAME + r"|([₀-₉]+))$", re.IGNORECASE)
_SUBSCRIPT_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def base_marked(text: str) -> str | None:
    """``digits_{base}`` for a number whose base is marked in any notation (see the module docstring), so
    that the base is read with it; ``None`` for other text and for a base out of 2 to 36."""
    match = _BASE_MARK.match(text.strip())
    if match is None or not any(c.isdigit() for c in match.group(1)):
        return None
    name = next(g for g in match.groups()[1:] if g)
    base = int(name.translate(_SUBSCRIPT_DIGITS)) if name[0].translate(_SUBSCRIPT_DIGITS).isdigit() else _BASE_WORDS.get(name.lower())
    if base is None or not 2 <= base <= 36:
        return None
    return f"{match.group(1)}_{{{base}}}"


def is_prefixed(text: str) -> bool:
    """Whether ``text`` is a number with a programmer's base prefix (``0x1F``, ``0b101``, ``0o17``)."""
    return _BASE_PREFIX.match(text.strip()) is not None


def based_number(text: str) -> tuple[str, int] | None:
    """``(digits, base)`` of a number written with its base as a subscript (``1F_{16}``) or a prefix
    (``0x1F``), else ``None``.

    The digits must hold a decimal digit and be valid in the base (2 to 36):
    ``x_1`` and ``a_{12}`` are indexed variables, not numbers.
    """
    prefixed = _BASE_PREFIX.match(text.strip())
    match = prefixed or _BASED.match(text.strip())
    if match is None:
        return None
    digits = match.group(2 if prefixed else 1).upper()
    base = _PREFIX_BASES[prefixed.group(1).lower()] if prefixed else int(match.group(2))
    if not 2 <= base <= 36 or not (prefixed or any(c.isdigit() for c in digits)):
        return None
    try:
        int(digits, base)
    except ValueError:
        return None
    return digits.lstrip("0") or "0", base


def chance_phrase(text: str) -> str | None:
    """The fraction of a chance in words ("3 out of 8" -> ``\\frac{3}{8}``), else ``None``."""
    match = _CHANCE.match(text)
    if match is None or int(match.group(2)) == 0:
        return None
    return f"\\frac{{{match.group(1)}}}{{{match.group(2)}}}"


def solution_set(text: str) -> str | None:
    """The one name of a special solution set (see the module docstring), else ``None``."""
    text = " ".join(text.split()).rstrip(".")
    if _EMPTY_SET.match(text):
        return EMPTY_SET
    if _REAL_LINE.match(text):
        return REAL_LINE
    minus = real_line_minus(text)
    if minus is not None:
        return minus
    if _INFINITELY_MANY.match(text):
        return INFINITELY_MANY
    return None


_REAL_LINE_MINUS = re.compile(r"^(?:\\mathbb\s*\{?\s*R\s*\}?|ℝ|\\R)\s*(?:\\setminus|\\smallsetminus|\\backslash|-)"
                              r"\s*\\\{(.*)\\\}$")
_POINT = re.compile(r"^([+-]?)(?:(\d+(?:\.\d+)?)|\\frac\s*\{(\d+)\}\s*\{(\d+)\})$")


def _point_value(text: str) -> Fraction | None:
    match = _POINT.match(text.strip())
    if match is None or (match.group(4) is not None and int(match.group(4)) == 0):
        return None
    value = Fraction(match.group(2)) if match.group(2) else Fraction(int(match.group(3)), int(match.group(4)))
    return -value if match.group(1) == "-" else value


def real_line_minus(text: str) -> str | None:
    """The real line without finitely many numbers (``\\mathbb{R} \\setminus \\{0\\}``, ``ℝ - \\{1, 2\\}``)
    as the union of open intervals it is (``(-\\infty, 0) \\cup (0, \\infty)``), else ``None``; points other
    than plain numbers and fractions are not ordered here, so they are left unread."""
    match = _REAL_LINE_MINUS.match(" ".join(text.split()))
    if match is None:
        return None
    points = [_point_value(point) for point in match.group(1).split(",")]
    if not points or any(point is None for point in points):
        return None
    written = {value: point.strip() for value, point in zip(points, match.group(1).split(","))}
    ends = ["-\\infty", *(written[value] for value in sorted(written)), "\\infty"]
    return " \\cup ".join(f"({low}, {high})" for low, high in zip(ends, ends[1:]))


_FACTORIAL_POWER = re.compile(r"^(\d+)\s*\^\s*\{\s*\\(underline|overline)\s*\{\s*(\d+)\s*\}\s*\}$")
MAX_FACTORIAL_POWER = 1000


def factorial_power(text: str) -> str | None:
    """The value of a falling or rising factorial power of whole numbers, ``6^{\\underline{3}}`` (6·5·4 = 120)
    and ``6^{\\overline{3}}`` (6·7·8 = 336), else ``None``."""
    match = _FACTORIAL_POWER.match(text.strip())
    if match is None or int(match.group(3)) > MAX_FACTORIAL_POWER or int(match.group(1)) > 10**6:
        return None
    n, k = int(match.group(1)), int(match.group(3))
    step = -1 if match.group(2) == "underline" else 1
    return str(math.prod(range(n, n + step * k, step)))


def congruence(text: str) -> tuple[int, int] | None:
    """``(residue, modulus)`` of a residue class (``x \\equiv 3 \\pmod{7}`` -> (3, 7)), else ``None``."""
    match = _CONGRUENCE.match(text.strip())
    if match is None or (match.group(2) is None) != (match.group(4) is None) or int(match.group(3)) == 0:
        return None
    return int(match.group(1)), int(match.group(3))


def _unit_group(unit: str) -> str:
    words = _NOT_UNIT_CHAR.sub(" ", re.sub(r"\\([A-Za-z]+)", r" \1", unit))
    words = " ".join(words.split())
    return f"\\text{{ {words}}}" if words else ""


def _quantity(match: re.Match[str]) -> str:
    number, unit = match.group(1).strip(), match.group(2).strip()
    if unit in ("\\percent", "%", "\\%"):
        return f"{number}\\%"
    if unit == "\\degree":
        return f"{number}^\\circ"
    return number + _unit_group(unit)


def typeset_quantities(text: str) -> str:
    """siunitx macros, temperature units and unicode superscripts rewritten (see the module docstring)."""
    text = _SI_QUANTITY.sub(_quantity, text)
    text = _SI_NUMBER.sub(lambda m: m.group(1).strip(), text)
    text = _SI_UNIT.sub(lambda m: _unit_group(m.group(1)), text)
    text = _TEMPERATURE.sub(lambda m: m.group(1), text)
    return _SUPERSCRIPT.sub(lambda m: "^{" + m.group(0).translate(_SUPERSCRIPT_PLAIN) + "}", text)


def spelled_number(text: str) -> str | None:
    """The plain form of a number in words or with a suffix (see the module docstring), else ``None``."""
    lowered = text.lower()
    fraction = _WORD_FRACTION.match(lowered)
    if fraction and fraction.group(1) in _SMALL and fraction.group(2) in _DENOMINATORS:
        return f"\\frac{{{_SMALL[fraction.group(1)]}}}{{{_DENOMINATORS[fraction.group(2)]}}}"
    ordinal = _ORDINAL_SUFFIX.match(lowered)
    if ordinal:
        return ordinal.group(1)
    word = _ORDINAL_WORD.match(lowered)
    if word and word.group(1) in _ORDINALS:
        return str(_ORDINALS[word.group(1)])
    mixed = _MIXED_WITH_AND.match(text)
    if mixed:
        return f"{mixed.group(1)} {mixed.group(2)}" if "/" in mixed.group(2) else mixed.group(1) + mixed.group(2)
    based = _PARENTHESISED_BASE.match(text)
    if based:
        return based.group(1) + based.group(2)
    return None


_DECIMAL_COMMA = re.compile(r"(?<![\d,.}])(\d+)\{,\}(\d{1,2}|\d{4,})(?![\d{])")


def decimal_comma(text: str) -> str:
    """``text`` with each LaTeX decimal comma ``2{,}5`` as a decimal point (see the module docstring)."""
    return _DECIMAL_COMMA.sub(r"\1.\2", text)


_SET_BUILDER = re.compile(r"^\\\{\s*([A-Za-z])\s*(?:(?:\\in|∈)\s*(\\mathbb\s*\{?\s*[RZN]\s*\}?|ℝ|ℤ|ℕ))?\s*"
                          r"(?::|\\mid|\||\\vert)\s*(.+?)\s*\\\}$")
_RELATION = re.compile(r"<|>|≤|≥|≠|\\(?:le|ge|leq|geq|lt|gt|neq?)(?![A-Za-z])")
_INTEGER_CHAIN = re.compile(r"^([+-]?\d+)\s*(<|\\lt|\\le|\\leq|≤)\s*([A-Za-z])\s*(<|\\lt|\\le|\\leq|≤)\s*([+-]?\d+)$")
_MAX_ELEMENTS = 50  # an integer set listed in full only when it is this small


def set_builder(text: str) -> str | None:
    """The condition of a set in set-builder notation, or the elements of a bounded integer one
    (see the module docstring); ``None`` when ``text`` is no such set."""
    match = _SET_BUILDER.match(text.strip())
    if match is None:
        return None
    variable, domain, condition = match.group(1), (match.group(2) or "R"), match.group(3)
    if variable not in condition or not _RELATION.search(condition):
        return None
    if "R" in domain or "ℝ" in domain:
        return condition
    chain = _INTEGER_CHAIN.match(condition)
    if chain is None or chain.group(3) != variable:
        return None
    low = int(chain.group(1)) + (0 if "e" in chain.group(2) or "≤" in chain.group(2) else 1)
    high = int(chain.group(5)) - (0 if "e" in chain.group(4) or "≤" in chain.group(4) else 1)
    if ("N" in domain or "ℕ" in domain) and low < 1:
        return None  # whether 0 is a natural number is a convention: no single reading
    if high - low + 1 > _MAX_ELEMENTS or high < low:
        return None
    return "\\{" + ",".join(str(n) for n in range(low, high + 1)) + "\\}"


# Common words of the languages that write a decimal comma, none of them an English word.
_DECIMAL_COMMA_LANGUAGE = re.compile(
    r"(?i)(?<![\w'])(?:ist|und|der|das|beträgt|ergibt|wir|mit|für|nicht|eine?|gesuchte|lösung|"
    r"est|et|les|une|soit|donc|vaut|avec|pour|c'est|probabilité|réponse|"
    r"es|el|los|las|por|con|una|entonces|respuesta|"
    r"è|il|della|che|sono|quindi|risposta|"
    r"é|os|não|então|resposta|"
    r"het|een|van|dus|antwoord|"
    r"dan|yang|adalah|jadi|jawaban|dengan|untuk|dari|harga)(?![\w'])")
MIN_LANGUAGE_WORDS = 3
_PLAIN_COMMA_NUMBER = re.compile(r"^([+-]?\d+),(\d+)$")
# Currencies written with dot groups: the rupiah, the real, the euro as most of its countries write it.
_DOT_CURRENCY = re.compile(r"\bRp\.?\s?\d|R\$\s?\d|\d\s?€|€\s?\d")
_DOT_GROUPED = re.compile(r"^(?:Rp\.?\s*|R\$\s*|€\s*)?([+-]?\d{1,3})((?:\.\d{3})+)(?:\s*(?:€|EUR))?$")


# A number alone in parentheses, not a function's argument or a factor ("f(12)", "3(12)").
_ACCOUNTING_VALUE = re.compile(r"(?<![\w)\]}^_])\(\s*\$?\s*(\d[\d,]*(?:\.\d+)?)\s*\)")
_ACCOUNTING_CONVENTION = re.compile(r"(?i)parenthes[ie]s\W{0,3}(?:=|marks?|denotes?|indicates?|means?|for|shows?|are|is)\s+"
                                    r"(?:a\s+)?(?:negative|loss|deficit)|negatives?\s+(?:\w+\s+)?in\s+parenthes[ie]s|"
                                    r"accounting (?:notation|convention|format|style)|\w+\s*/\s*\((?:loss|deficit)\)")


def accounting_negatives(text: str) -> str:
    """``text`` with each number in parentheses negative (``(12)`` -> ``-12``, padded to the same length) when
    ``text`` says it writes negatives so (see the module docstring); else ``text``."""
    if "(" not in text or not _ACCOUNTING_CONVENTION.search(text):
        return text
    return _ACCOUNTING_VALUE.sub(lambda m: ("-" + m.group(1)).ljust(len(m.group(0))), text)


_NEGATIVE_BEFORE = r"(?:an?\s+)?(?:net\s+)?(?:loss|deficit|debt|shortfall|decrease|drop|decline)\s+of\s+\$?\s*"
_NEGATIVE_AFTER = (r"(?:\s*[^\W\d_][\w°.]*){0,2}\s+(?:below\s+(?:zero|sea\s+level|the\s+surface|ground|freezing|par)|"
                   r"in\s+(?:debt|the\s+red)|overdrawn|under\s+water)\b")


def negative_in_words(number: str, response: str) -> bool:
    """Whether ``response``, where it last writes ``number``, gives its sign in words (see the module docstring)."""
    value = re.escape(number.strip().lstrip("+"))
    last = [m.start() for m in re.finditer(rf"(?<![\d.\-−]){value}(?!\.?\d)", response)]
    if not last:
        return False
    before, after = response[: last[-1]], response[last[-1] + len(number.strip().lstrip("+")) :]
    return bool(re.search(rf"(?i)\b{_NEGATIVE_BEFORE}$", before) or re.match(rf"(?i)(?:°)?{_NEGATIVE_AFTER}", after))


def separator_readings(answer: str, response: str) -> tuple[str, ...]:
    """The readings of ``answer`` as a number whose comma or dot is a decimal mark or a thousands group (see the
    module docstring): one, or two when either could be (a thousands group first); none when ``answer`` is
    no such number or ``response`` gives no reason to read it so."""
    plain = answer.strip().strip("$").strip()
    dotted = _DOT_GROUPED.match(plain)
    if dotted is not None and dotted.group(2).count(".") > 1:
        return (dotted.group(1) + dotted.group(2).replace(".", ""),)  # "1.250.000": groups, in any language
    match = _PLAIN_COMMA_NUMBER.match(plain)
    if match is None and dotted is None:
        return ()
    if len(_DECIMAL_COMMA_LANGUAGE.findall(response)) < MIN_LANGUAGE_WORDS and not (dotted and _DOT_CURRENCY.search(response)):
        return ()
    if dotted is not None:
        return dotted.group(1) + dotted.group(2)[1:], dotted.group(1) + dotted.group(2)
    decimal = f"{match.group(1)}.{match.group(2)}"
    return (match.group(1) + match.group(2), decimal) if len(match.group(2)) == 3 else (decimal,)
