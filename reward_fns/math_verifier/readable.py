"""What part of an answer the verifier cannot read: the guard of the rule that ``wrong`` needs a reading.

math-verify's LaTeX parser drops a command it does not know (``\\weird 7``
parses as 7, ``2\\operatorname{cis}\\frac{\\pi}{2}`` as 2), so a value parsed
from such an answer is not what it says: comparing it proves nothing either
way. :func:`unread_notation` names the first such part of an answer (a LaTeX
command outside :data:`KNOWN_COMMANDS`, a function named by ``\\operatorname``
/ ``\\mathrm`` / ``\\text`` that is not in :data:`KNOWN_FUNCTIONS`, or a
symbol beyond ASCII that canonical form did not rewrite, Greek letters
aside, or a prime after a number that no reader consumed: ``30'`` is 30
minutes or feet, not 30); ``None`` when every part is notation the verifier reads.
:func:`code_notation` names code that the parsers misread (``3//4`` is 0 to
Python and 3/4 to Julia).
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rewardsmith.reward_fns.math_verifier.constructs import VALUE_WORDS, dropped_marks
from rewardsmith.reward_fns.math_verifier.normalize import dropped_words
from rewardsmith.reward_fns.math_verifier.notation import plain_typesetting

# Special functions the symbolic judge evaluates (``symbolic.SPECIAL_FUNCTIONS``); cis t is e^{it}.
SPECIAL_FUNCTION_NAMES = frozenset({"Gamma", "zeta", "erf", "erfc", "erfi", "Ei", "Si", "Ci", "li", "digamma", "B",
                                    "Beta", "cis"})
# Functions the verifier evaluates, however they are named (\sin, \operatorname{sin}, \mathrm{sin}).
KNOWN_FUNCTIONS = frozenset({
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "arccot", "arcsec", "arccsc",
    "sinh", "cosh", "tanh", "coth", "sech", "csch", "arsinh", "arcosh", "artanh", "arcsinh", "arccosh", "arctanh",
    "log", "ln", "lg", "exp", "det", "gcd", "lcm", "max", "min", "floor", "ceil", "abs", "sgn", "sign", "mod",
    "lim", "sum", "prod", "int",
}) | SPECIAL_FUNCTION_NAMES
_GREEK = frozenset({
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "varpi", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon", "phi", "varphi",
    "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega",
})
# LaTeX commands the verifier reads: what canonical form removes or rewrites, what math-verify's
# parser reads into a value, and layout that carries no value.
KNOWN_COMMANDS = KNOWN_FUNCTIONS | _GREEK | frozenset({
    "frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "tbinom", "choose", "sqrt", "cdot", "times", "div", "pm",
    "mp", "ldots", "cdots", "dots", "dotsc", "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl",
    "Bigr", "middle", "displaystyle", "textstyle", "quad", "qquad", "text", "textbf", "textit", "textrm", "mathrm",
    "mathbf", "mathit", "mbox", "operatorname", "boxed", "fbox", "phantom", "mathbb", "le", "leq", "ge", "geq", "lt",
    "gt", "ne", "neq", "equiv", "approx", "in", "notin", "cup", "cap", "setminus", "emptyset", "varnothing",
    "infty", "pmod", "bmod", "lor", "land", "vee", "wedge", "to", "rightarrow", "Rightarrow", "circ", "degree",
    "prime", "overline", "bar", "lfloor", "rfloor", "lceil", "rceil", "lvert", "rvert", "vert", "Vert", "mid",
    "lbrace", "rbrace", "lbrack", "rbrack", "langle", "rangle", "begin", "end", "hline", "percent", "ast", "cdotp",
    "subset", "subseteq", "supset", "supseteq", "neg", "lnot", "forall", "exists", "colon", "leqslant", "geqslant",
    "dot", "over",
})
_COMMAND = re.compile(r"\\([A-Za-z]+)")
# A named function: any \operatorname, or a \mathrm / \text name applied to a parenthesis (not a unit).
_NAMED = re.compile(r"\\operatorname\*?\s*\{\s*([A-Za-z]+)\s*\}|\\(?:mathrm|text|textrm)\s*\{\s*([A-Za-z]+)\s*\}\s*(?=\()")
# Canonical form writes the symbols it reads in LaTeX (π, ∞, √, ², ½, ≤ ...); math-verify reads Greek
# letters (and the micro sign) and ±. Any other visible character beyond ASCII is one it drops ("3∠45°"
# parses as 3); invisible ones (zero-width spaces, soft hyphens, combining marks) carry no value.
_READ_SYMBOLS = re.compile(r"[\x00-\x7f\u0370-\u03ff\u00b5\u00b1\u2213]")
_INVISIBLE = ("Cf", "Zs", "Mn")
# A run of three or more letters outside a command is a word, not a product of variables ("where x is
# real" parses as w*h*e*r*e*...); the names of functions and constants are read.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_NAMED_GROUP = re.compile(r"\\(?:operatorname\*?|mathrm|mathbb|mathbf|mathit|begin|end)\s*\{[^{}]*\}")
_TEXT = re.compile(r"\\(?:text|textbf|textit|textrm|mbox)\s*\{[^{}]*\}")


def unread_notation(answer: str, canonical: str) -> str | None:
    """The first part of ``answer`` (in canonical form: ``canonical``) the verifier cannot read, else ``None``.

    Named functions are looked for as written (canonical form keeps only the
    text of ``\\text{foo}``); commands in canonical form, which has read or
    dropped the layout ones (delimiters, siunitx, spacing).
    """
    for match in _NAMED.finditer(plain_typesetting(answer)):  # \operatorname{arctg} is \arctan
        name = match.group(1) or match.group(2)
        if name not in KNOWN_FUNCTIONS:
            return f"the unknown function {name!r}"
    math = _TEXT.sub(" ", canonical)
    mark = dropped_marks(math)
    if mark is not None:
        return mark
    for match in _COMMAND.finditer(math):
        if match.group(1) not in KNOWN_COMMANDS:
            return f"the unknown command \\{match.group(1)}"
    for char in math:
        if not _READ_SYMBOLS.match(char) and unicodedata.category(char) not in _INVISIBLE:
            return f"the unknown symbol {char!r}"
    return None


def unread_words(answer: str) -> str | None:
    """The first word (three or more letters outside a command, ``\\text{}`` or a named group) in ``answer``
    that is no known name, else ``None``: a math parser reads it as a product of variables."""
    for word in _WORD.findall(_NAMED_GROUP.sub(" ", _TEXT.sub(" ", answer))):
        if word not in KNOWN_COMMANDS and word != "and":  # math-verify reads "and" as a comma
            return f"the words {word!r}, which no math parser reads"
    return None


# Code that a math parser misreads: operators that mean different things in different languages, names
# that mean nothing to it, a word where an operator stands. Looked for in canonical form, where the
# readers of Python, Mathematica and spoken math have already read what they know.
_CODE_NOTATION = (
    (re.compile(r"[\w)]\s*//\s*[\w(]"), "the operator '//' (floor division in Python, a fraction in Julia)"),
    (re.compile(r"(?<![\\\w])[A-Za-z]{2,}\.[A-Za-z_]{2,}"), "a dotted code name"),
    (re.compile(r"(?<![\\\w])[A-Za-z]+_[A-Za-z]{2,}(?!\w*\})"), "a code name with an underscore"),
    (re.compile(r"\d\s*(?!(?:and|or|to|by|times|plus|minus|over|of)\b)[A-Za-z]{2,}\s+[+-]?\d+"),
     "a word between two numbers"),
)
# Canonical form reads a '%' as a percent and drops what follows it: looked for as written.
_PERCENT_BEFORE_OPERAND = re.compile(r"(?<!\\)%(?:\s*[\d(]|[A-Za-z])")


def code_notation(answer: str, canonical: str) -> str | None:
    """What in ``answer`` (in canonical form: ``canonical``) is code a math parser misreads (``3//4``,
    ``3 % 4``, ``Math.pow``, ``M_PI``, ``2 sup 10``), named with the text it is in; else ``None``."""
    percent = _PERCENT_BEFORE_OPERAND.search(answer)
    if percent:
        return f"a '%' before an operand (a remainder, a ratio in Haskell, a prefix percent): {percent.group(0)!r}"
    for pattern, name in _CODE_NOTATION:
        match = pattern.search(canonical)
        if match:
            return f"{name}: {match.group(0).strip()!r}"
    return None


# Currencies read as units: the number is the amount ("18 dollars" is 18).
CURRENCY_WORDS = frozenset({"dollar", "dollars", "euro", "euros", "pound", "pounds", "yen", "yuan", "rupee", "rupees",
                            "usd", "eur", "gbp", "bucks", "francs", "franc"})
# Words after a number that read as the rest of a sentence, not as what it counts ("31 since ...").
_PROSE_WORDS = frozenset({"since", "because", "as", "which", "so", "where", "when", "given", "in", "for", "total",
                          "altogether", "each", "all", "only", "exactly", "of", "is", "are", "and", "or", "percent",
                          "degree", "degrees", "radian", "radians"})


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    """English words (Webster's 2nd and GCIDE, lower case), loaded on first use."""
    from english_words import get_english_words_set

    return frozenset(get_english_words_set(["web2", "gcide"], lower=True, alpha=True))


def _singulars(word: str) -> tuple[str, ...]:
    """``word`` and the singulars it may be the plural of (the word lists hold few plurals)."""
    forms = [word]
    if word.endswith("ies"):
        forms.append(word[:-3] + "y")
    if word.endswith("es"):
        forms.append(word[:-2])
    if word.endswith("s"):
        forms.append(word[:-1])
    return tuple(forms)


def unconsumed_words(answer: str, response: str, gold: str = "") -> str | None:
    """The words after the number of ``answer`` that canonical form dropped and nothing read, named; else
    ``None``. A word is read as the unit or the noun counted when it is a physical unit (pint), a
    currency, an English word (a dictionary list), or named elsewhere in the response; a word that
    changes the value ("5 factorial", "3 lakh") is never read as a noun. An unknown word ("5 qzxv") or
    a value word leaves the number unread: comparing it proves nothing, unless ``gold`` writes the same
    words."""
    from rewardsmith.reward_fns.math_verifier.units import read_quantity  # brings in pint only when needed

    words = dropped_words(answer)
    if words is None or words.lower() in gold.lower():  # the gold writes the same words: compared as written
        return None
    tokens = [w.strip(".,;:").lower() for w in words.split()]
    if any(t in VALUE_WORDS for t in tokens):
        return f"the words {words!r} after the number, which change its value"
    first = tokens[0]
    if first in _PROSE_WORDS or first in CURRENCY_WORDS or read_quantity(answer) is not None:
        return None
    if any(form in _english_words() for form in _singulars(first)):
        return None
    if len(re.findall(rf"\b{re.escape(first)}\b", response, re.IGNORECASE)) >= 2:
        return None
    return f"the word {words.split()[0]!r} after the number, which no reader consumed"
