"""The parts a response is read with, for ``math_answer``: conventions, visible text, boxes, sentences.

What the response commits to is decided by one model built from these parts:
:mod:`rewardsmith.reward_fns.math_verifier.commitment`. This module knows
only how the text is written: which answer-marking convention a data_source
uses, what a reader sees (:func:`visible_text`), where the boxes are, where
sentences and clauses end, and which value a plain sentence states.
"""
from __future__ import annotations

import bisect
import csv
import fnmatch
import html
import itertools
import re

from rewardsmith.reward_fns.latex_boxes import brace_partners
from rewardsmith.reward_fns.math_verifier.answer_types import TRANSPOSE_MARK
from rewardsmith.reward_fns.math_verifier.numerals import DIGIT_GROUPS, MYRIAD_UNITS, keycap_digits, myriad_numbers

BOXED, HASH, ANSWER_COLON = "boxed", "####", "Answer:"
CONVENTIONS = (BOXED, HASH, ANSWER_COLON)
MAX_WORD_ANSWER = 3  # words a final sentence without numbers or math may have to count as an answer
MAX_JOINED_BOXES = 10
# The sentence rules read at most this much of a line: their regexes are not linear on
# adversarial text (thousands of "$"), and a final answer is never that long.
MAX_SENTENCE_CHARS = 2000

# data_source patterns -> convention; anything else reads \boxed{} first.
_CONVENTION_BY_SOURCE = (
    ("*gsm8k*", HASH),
    ("math_dapo*", ANSWER_COLON),
    ("*dapo*", ANSWER_COLON),
    ("math", ANSWER_COLON),
    ("aime*", ANSWER_COLON),
)

_BOX_START = re.compile(r"\\(?:boxed|fbox)\s*\{|\\boxed ")
_BARE_BOX_CONTENT = re.compile(r"[^\s$]*")
_BOX_JOINER = re.compile(r"[\s$,.]*(?:\\text\{\s*(or|and)\s*\}|\b(or|and)\b|,)?[\s$,]*$")
# An ellipsis ("2...") does not end a sentence: it belongs to the answer.
# An abbreviation's dot ("i.e.", "e.g.", "cf.", "vs.") ends no sentence.
_SENTENCE_END = re.compile(r"(?<!\.\.)(?<!\bi\.e)(?<!\be\.g)(?<!\bcf)(?<!\bvs)[.!?](?=\s|$)")
_BLANK = re.compile(r"\\(?:boxed|fbox|text|mathrm|textbf|[lc]?dots|quad)\b|\\[,;:! ]|[\s$*{}_.:?()\[\]`]")
# A sign is "+", "-" or the minus sign "−" (U+2212): "dropped by −18 degrees" is −18, not 18.
_NUMBER = re.compile(r"(?<![\w.])[+\-−]?(?:" + DIGIT_GROUPS + r"|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?%?|(?<![\w.])[+\-−]?\.\d+%?")
# A LaTeX command with its arguments ending a sentence outside math delimiters (a closing tag may follow).
_TRAILING_LATEX = re.compile(r"(?:^|[\s>:])((?:[+-]\s*)?\\[A-Za-z]+(?:\s*\{[^{}]*\})+)\s*(?:</[A-Za-z_]+>)?\s*[.!?]?\s*$")
# A number the sentence rules out or sets its value against: "8, not 9", "5 left, down from 7 at lunch", "12
# compared with 10 last year".
_NOT_THE_VALUE = re.compile(r"(?i)\b(?:not|rather than|instead of|(?:down|up) from|compared (?:to|with)|versus|vs\.?)"
                            r"\s+\$?[+-]?\d[\d,]*(?:\.\d+)?")
# Numbers a sentence writes as a threshold or a label beside its result: "7 students scored above 80", "Kim
# saves $38 on day 20".
_CONTEXT_NUMBER = re.compile(r"(?i)\b(?:above|below|over|under|(?:more|less|fewer|greater|higher|lower) than|at (?:least|most)|"
                             r"exceeding|day|week|month|round|level|floor|row|column|cell|lap|stage|game)\s+\$?[+-]?\d[\d,]*(?:\.\d+)?")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")  # Markdown's: no space inside
HEDGE_WORDS = re.compile(r"(?i)\b(?:or|maybe|perhaps|possibly|might|could be|not sure|unsure)\b")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z' -]*$")
# An expression written out of math delimiters that ends a sentence after "is", "to", ":" ...: "the derivative
# is 3x^2 + 2x - 5.", "Nested form: (6x + 7)x − 3", "It simplifies to 2(x + 1)." (numbers, one-letter variables,
# operators and brackets only: a word of prose ends it).
_MATH_TOKEN = r"(?:\d+(?:\.\d+)?|(?<![A-Za-z])[A-Za-z](?![A-Za-z])|[()+\-−*/^·×÷²³√]|[ \t]+)"
_TRAILING_EXPRESSION = re.compile(r"(?:^|[:=]|\b(?:is|are|equals|to|gives|becomes|be))[ \t]+((?:" + _MATH_TOKEN + r")+?)[ \t]*[.!]?[ \t]*$")
_OPERATOR = re.compile(r"[+\-−*/^×÷²³√]|\d\s*\(|\)\s*[\w(]")
RESULT_CLAUSE = re.compile(r"(?i)(?:[,;]|\.\.\.|…)\s*(?:and\s+)?(?:so|thus|hence|therefore|which means|meaning)\b")
_MAGNITUDE_AFTER = re.compile(r"(?i)\s*(hundred|thousand|million|billion|trillion|lakhs?|crores?)\b")
# A factor said in words, in a sentence that writes no number: "the volume increases eightfold", "twice as
# long", "three times as heavy", "it triples", "one quarter of the original", "a third as long".
_FACTORS = {"twice": "2", "thrice": "3", "double": "2", "doubles": "2", "doubled": "2", "triple": "3", "triples": "3",
            "tripled": "3", "quadruple": "4", "quadruples": "4", "quadrupled": "4", "halve": "1/2", "halves": "1/2",
            "halved": "1/2"}
# A number in words: "three", "twenty-four", "one hundred and five" (not "one" alone: "the red one"; not the
# count of a fraction, "two-thirds").
_CARDINAL = (r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
             r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million)")
_SPELLED_NUMBER = re.compile(rf"(?i)\b(?:(?:negative|minus)\s+)?{_CARDINAL}(?:(?:[\s-]+|(?<=hundred)\s+and\s+|"
                             rf"(?<=thousand)\s+and\s+){_CARDINAL})*\b(?![\s-]*(?:halves|half|thirds?|quarters?|"
                             rf"(?:four|fif|six|seven|eigh|nin|ten)ths?|fold|times)\b)")
_FOLD = {word: str(n) for n, word in enumerate("two three four five six seven eight nine ten".split(), start=2)}
_PARTS = {word: f"1/{n}" for n, word in enumerate("half third fourth fifth sixth seventh eighth ninth tenth".split(), start=2)}
_PARTS["quarter"] = "1/4"
_FACTOR = re.compile(r"(?i)\b(?:(" + "|".join(_FACTORS) + r")|(" + "|".join(_FOLD) + r"|hundred|thousand)(?:-?fold|"
                     r" times (?=as|the|larger|bigger|longer|more|greater|heavier|faster|taller|higher|wider|older))|(?:a|one)[ -]("
                     + "|".join(_PARTS) + r") (?=of|as))")
# A line that is only layout closes or opens a block and states nothing: a LaTeX environment's \\begin / \\end,
# an Org directive (#+end_src, #+NAME:), an AsciiDoc or reST delimiter (****, ++++, ----), a [stem] block title.
# A Pandoc fenced div's ":::" line, a Jira macro line ({panel:title=Result}, {code}).
LAYOUT_LINE = re.compile(r"^\s*(?:\\(?:begin|end)\s*\{[^{}]*\}(?:\[[^\]]*\])?|#\+[A-Za-z_]+(?::[^\n]*)?|[*+=\-_.~]{4,}"
                          r"|\[[A-Za-z]+\]|:{3,}[^\n]*"
                          r"|\{(?:panel|code|quote|noformat|note|info|tip|warning|expand)(?::[^{}\n]*)?\})\s*$")
# A tuple, point or interval of numbers ending a sentence is one value: "The midpoint is (2, -1)."
_TRAILING_TUPLE = re.compile(r"[(\[]\s*[+\-−]?\d[\d.,/\s+\-−]*?\s*[)\]](?:\s*" + TRANSPOSE_MARK + r")?(?=[\s$`*.!]*$)")
# One unknown given several values, joined only by commas and "and" ("x = 3 and x = −2").
# One unknown, maybe numbered ("x = 3", "x_1 = 3", "x₂ = -5", Jira's "x~1~ = 3"), given a number.
_ASSIGNMENT = re.compile(r"(?<![\w\\])([A-Za-z])(?:_\{?\d\}?|[₀-₉]|~\d~)?\s*=\s*([+\-−]?\d+(?:\.\d+)?(?:/\d+)?)(?![\d.]\d)")
_JOINER = re.compile(r"\s*\$?\s*(?:,|,?\s*and|;?\s*\n\s*(?:[-*•+]|\d[.)])?)\s*\$?\s*")
# A list closing a response, one item a line: "- x₁ = 3", "* $x_2 = -5$", "2. x = -5".
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d[.)])\s+\S")
# What a bare list of numbers ("3, 5 and 7") holds besides its numbers.
_LIST_SEPARATORS = re.compile(r"[\s$,;.!]|\band\b")
# Inline "$..$" by pandoc's rule (no space just inside either "$", no digit just after the
# closing one), so that currency ("costs $2 = $18") is not read as math.
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(?!\s)(.+?)(?<!\s)\$(?!\d)|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


# Markup a reader never sees: its content is no answer.
# Struck-out text is taken back: a reader sees it crossed out (\\cancel, \\sout, ~~..~~, <del>); so is an
# unchecked task-list item, a step the response says it has not done.
_HIDING_COMMANDS = re.compile(r"\\(?:[hv]?phantom|textcolor\s*\{\s*white\s*\}|color\s*\{\s*white\s*\}|[bx]?cancel|sout|xout|st)"
                              r"\s*\{")
# A LaTeX macro written without its backslash, before its group ("frac{3}{4}", "boxed{2sqrt{5}}").
_BARE_MACRO = re.compile(r"(?<![\\A-Za-z])(frac|dfrac|tfrac|sqrt|boxed|binom)(?=\s*\{)")
_BARE_PI = re.compile(r"(?<=[{\d])pi(?![A-Za-z])")  # and pi without its backslash beside them: "frac{pi}{6}"
# A response whose LaTeX is escaped twice, as a JSON string holds it ("\\\\frac{1}{2}", "\\\\(x\\\\)"): a doubled
# backslash before a command or a math delimiter, and no single one before a command.
_DOUBLED_ESCAPE = re.compile(r"\\\\(?:frac|dfrac|sqrt|boxed|left|right|cdot|times|pi|text|[()\[\]$])")
_SINGLE_COMMAND = re.compile(r"(?<!\\)\\[A-Za-z]")
# Emphasis around prose is layout: its text is read as if plain.
# (Not an underline in an exponent: 6^{\\underline{3}} is a falling factorial.)
_EMPHASIS_COMMANDS = re.compile(r"(?<!\^\{)(?<!\^)\\(?:emph|textit|textsl|textsc|textup|underline|uline)\s*\{")
_MAX_EMPHASIS = 32  # emphasis commands unwrapped per response; a real answer has a few
_HIDDEN_SPANS = re.compile(r"<!--.*?(?:-->|$)|\\iffalse\b.*?(?:\\fi\b|$)|\\begin\{comment\}.*?(?:\\end\{comment\}|$)"
                           r"|(?m:^[ \t]*%.*$)"
                           # a "%" comment after text on its line: after a space that follows no digit ("25 %" is a percentage)
                           r"|(?<=[^\\\d\s])[ \t]+%[^\n]*|<(del|s|strike)>.*?(?:</\1>|$)|~~(?!~)[^~\n]{1,500}~~"
                           # an unchecked item of a task list: a step said not done ("- [ ] divide by 2 -> x = 4")
                           r"|(?m:^[ \t]*[-*+][ \t]+\[ \][^\n]*$)"
                           r"|<(\w{1,10})\s[^>]{0,200}?style\s*=\s*[\"'][^\"'>]{0,200}?(?:display\s*:\s*none|visibility\s*:\s*hidden"
                           r"|font-size\s*:\s*0|color\s*:\s*(?:white|#fff(?:fff)?)\b)[^>]{0,200}>.*?(?:</\2>|$)"
                           # a tool call or its result: an agent's action and what came back, not its answer
                           r"|<(tool_call|tool_response|function_call)>.*?(?:</\3>|$)", re.DOTALL)
# Code is not prose: a fenced block (closed or cut off) is dropped whole, an inline span
# when it holds a marker (an answer written as `5` stays).
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.DOTALL)
# A block of data (```csv, ```json, ```yaml, ...) is no program: a field named "answer" or "final_answer" in it,
# a "key,value" row or a column under that name, is an answer line.
_DATA_FENCE = re.compile(r"(?:```|~~~)[ \t]*(csv|tsv|json|jsonc|yaml|yml|toml|ini)[ \t]*\n(.*?)(?:```|~~~|$)",
                         re.DOTALL | re.IGNORECASE)
_ANSWER_KEY = re.compile(r"[\"']?(?:final[ _-]?)?answer[\"']?", re.IGNORECASE)
_ANSWER_FIELD = re.compile(r"^[ \t\-{,]*" + _ANSWER_KEY.pattern + r"[ \t]*[:=][ \t]*(.+?)[ \t]*,?[ \t]*$",
                           re.IGNORECASE | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Inline markup of HTML and forum BBCode, after hidden spans went: a superscript or subscript is the
# LaTeX one ("2<sup>10</sup>", "2[sup]10[/sup]" are 2^{10}); formatting carries no value ("<b>Answer:</b> 5").
_SCRIPT_TAGS = re.compile(r"<(sup|sub)>([^<>\n]{1,100})</\1>|\[(sup|sub)\]([^\[\]\n]{1,100})\[/\3\]", re.IGNORECASE)
_FORMAT_TAGS = re.compile(r"</?(?:b|strong|i|em|u|span|font|p|div|br|center|details|summary|section|article|h[1-6]|li|ul|ol"
                          r"|blockquote|table|thead|tbody|tr|td|th)\b[^<>]{0,200}?/?>|\[/?(?:b|i|u|center)\]", re.IGNORECASE)
_BLOCK_TAG = re.compile(r"^</?(?:p|div|br|details|summary|section|article|h[1-6]|li|ul|ol|blockquote|table|thead|tbody|tr"
                        r"|td|th)\b", re.IGNORECASE)
# Tokens a chat template or a tokenizer left in decoded text ("42<|im_end|>", "27</s>"). The sequence ends
# at the first end-of-sequence token: text after it was never generated as this response. A "</s>" after
# an "<s>" closes a strike-out, not the sequence.
# DeepSeek's tokens use fullwidth bars and "▁" for spaces: <｜end▁of▁sentence｜>.
_END_OF_SEQUENCE = re.compile(r"<[|｜](?:im_end|endoftext|end_of_text|eot_id|eot|eos|end|end▁of▁sentence)[|｜]>|<eos>"
                              r"|<end_of_turn>|</s>")
_SPECIAL_TOKENS = re.compile(r"<[|｜][A-Za-z_][\w.▁-]{0,40}[|｜]>|\[(?:EOS|BOS|PAD|SEP|CLS)\]")
# An end-of-proof mark after the last sentence closes it and carries no value ("... is 2. ∎").
_END_OF_PROOF = re.compile(r"(?:\s*(?:[∎□■▪◼]|\$?\\(?:qed|blacksquare|square|Box|qedsymbol)\b\$?|\(?Q\.?\s?E\.?\s?D\.?\)?))+\s*$")
# XML and HTML character references and CDATA sections, as a browser or an XML parser reads them.
_ENTITY = re.compile(r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
# Math in wiki markup: <math>..</math> is a LaTeX math span (MathML, with tags inside, is read elsewhere).
_WIKI_MATH = re.compile(r"<math(?:\s[^<>]{0,100})?>([^<]{1,2000})</math>", re.IGNORECASE)
# An answer element (R1-style "<answer>..</answer>", "<answer unit=''>13</answer>", "<final_answer>") is an
# answer line, however many lines it spans; a heading or a summary that is only the word "Answer" (org
# "* Answer", markdown "## Answer", wiki "== Answer ==", "<summary>Answer</summary>") is an empty one.
_ANSWER_ELEMENT = re.compile(r"<((?:final_)?answer)(?:\s[^<>]{0,200})?>((?:(?!</?(?:final_)?answer\b).){0,2000}?)</\1>",
                             re.IGNORECASE | re.DOTALL)
_ANSWER_HEADING = re.compile(r"(?im)^[ \t]*(?:[#*=]+[ \t]*|<summary>[ \t]*|h[1-6]\.[ \t]+|:{3,}[ \t]*\{?[ \t]*\.?)"
                             r"((?:final[ \t]+)?answer)[ \t]*:?[ \t]*(?:=+|</summary>|\})?[ \t]*$")
# Display math in a fence (GitHub's ```math) is math, not code (```latex is LaTeX source, a listing); a MyST
# directive (```{admonition} Answer, ```{note}) is a block of text under a title, its ":class: tip" options
# layout; a fence of plain text, Markdown or Gherkin ("Then she earns $18 per day") holds prose. TEXT_FENCE is
# the opening line of any of them.
_PROSE_LANGUAGES = r"(?:text|txt|plaintext|plain|markdown|md|gherkin|feature|cucumber)"
TEXT_FENCE = re.compile(r"(?i)^(?:```|~~~)[ \t]*(?:math\b|\{|" + _PROSE_LANGUAGES + r"[ \t]*$)")
_PROSE_FENCE = re.compile(r"(?:```|~~~)[ \t]*" + _PROSE_LANGUAGES + r"[ \t]*\n(.*?)(?:```|~~~|$)", re.DOTALL | re.IGNORECASE)
_MATH_FENCE = re.compile(r"(?:```|~~~)[ \t]*math[ \t]*\n(.*?)(?:```|~~~|$)", re.DOTALL | re.IGNORECASE)
_DIRECTIVE_FENCE = re.compile(r"(?:```|~~~)[ \t]*\{([A-Za-z-]+)\}[ \t]*([^\n]*)\n(.*?)(?:```|~~~|$)", re.DOTALL)
_DIRECTIVE_OPTION = re.compile(r"(?m)^[ \t]*:[A-Za-z-]+:[^\n]*\n?")
# A question commits to nothing ("Is the answer \\boxed{3}?"); nor does a quoted one. A sentence
# starts at a line start, after ". ", "! ", "? " or ": ", or after a "!" or "?"; a "." not followed
# by a space (3.5) stays inside.
_QUESTION_MARK = re.compile(r"\?(?=[\s\"”$*]|$)")
_SENTENCE_START = re.compile(r"[.!:?]\s|\n|[!?]")
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
_MARKER = re.compile(r"\\boxed|\\fbox|####|(?i:\banswer\b)|\?")
# An offer asked after the answer ("Want me to convert that into seconds?") is kept: it is no question about
# the answer, and it tells the commitment reader that what follows it answers no question asked.
OFFER = r"(?:would you like|do you want|want me to|shall I|should I)\b"
_OFFER_QUESTION = re.compile(r"(?i)\s*(?:\w+,?\s+)?" + OFFER + r"[^\d\\#$]*$")


def visible_text(response: str) -> str:
    """``response`` as a reader sees its commitments: as displayed (carriage returns, backspaces and ANSI
    cursor moves overwrite, bidirectional overrides reverse), hidden markup, code, questions and quoted questions removed,
    HTML and BBCode superscripts and subscripts in LaTeX, their formatting tags dropped; what follows an
    end-of-sequence token (:func:`generated_text`), other special tokens and a closing end-of-proof mark
    dropped; XML and HTML escapes (``&gt;``, ``<![CDATA[..]]>``) unescaped; wiki ``<math>`` spans as ``$..$``;
    an answer element (``<answer>..</answer>``) as an ``Answer:`` line and a heading that is only "Answer" as
    an empty one; display math, MyST directives and fences of plain text, Markdown or Gherkin as text, a data
    block's answer field as an ``Answer:`` line."""
    text = _END_OF_PROOF.sub("", generated_text(response))
    if _DOUBLED_ESCAPE.search(text) and not _SINGLE_COMMAND.search(text.replace("\\\\", "")):
        text = text.replace("\\\\", "\\")
    if _DISPLAY_CONTROLS.search(text):
        text = _displayed(text)  # "12\b\b15" shows 15; "Answer: 36\rAnswer: 63" shows Answer: 63
    text = keycap_digits(_HIDDEN_SPANS.sub("", text))
    if MYRIAD_UNITS.search(text):
        text = myriad_numbers(text)  # "12万" is 120000
    if "&" in text or "<![" in text:  # XML and HTML escapes read as what they stand for ("x &gt;= 3")
        text = _ENTITY.sub(lambda m: html.unescape(m.group(0)), _CDATA.sub(r"\1", text))
    if "<" in text:
        text = _WIKI_MATH.sub(r"$\1$", text)
        text = _ANSWER_ELEMENT.sub(lambda m: "\nAnswer: " + " ".join(m.group(2).split()) + "\n", text)
    text = _ANSWER_HEADING.sub(r"\1:", text)
    if "<" in text or "[" in text:
        text = _FORMAT_TAGS.sub(lambda m: "\n" if _BLOCK_TAG.match(m.group(0)) else "",
                                _SCRIPT_TAGS.sub(_latex_script, text))
    if "```" in text or "~~~" in text:
        text = _MATH_FENCE.sub(lambda m: "\n$$" + " ".join(m.group(1).split()) + "$$\n", text)
        text = _DIRECTIVE_FENCE.sub(_directive_text, _PROSE_FENCE.sub(lambda m: "\n" + m.group(1) + "\n", text))
        text = _CODE_BLOCK.sub("", _DATA_FENCE.sub(_data_answer, text))
    if _BARE_MACRO.search(text):  # "boxed{2sqrt{5}}", "frac{pi}{6}": macros whose backslash was dropped
        text = _BARE_PI.sub(r"\\pi", _BARE_MACRO.sub(r"\\\1", text))
    text = _without_emphasis(text)  # "\\emph{The final answer is $3\\sqrt{2}$.}": the sentence, emphasised
    if _HIDING_COMMANDS.search(text):
        partners, kept, at = brace_partners(text), [], 0
        for match in _HIDING_COMMANDS.finditer(text):
            if match.start() < at:
                continue  # inside a group already dropped
            kept.append(text[at : match.start()])
            end = partners.get(match.end() - 1)
            at = len(text) if end is None else end + 1
        text = "".join(kept) + text[at:]
    hides_marker = lambda m: "" if _MARKER.search(m.group(0)) else m.group(0)  # noqa: E731
    text = _INLINE_CODE.sub(hides_marker, _QUOTED.sub(hides_marker, text))
    return _without_questions(text)


# Characters that change what a terminal or a text renderer shows: a carriage return or backspace (the next
# characters overwrite), ANSI escape sequences (colours; cursor moves; line erasure), and bidirectional
# overrides (U+202E shows "18" as "81").
_DISPLAY_CONTROLS = re.compile("[\r\b\x1b\u202a-\u202e\u2066-\u2069]")
_ANSI = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])")
_OVERRIDDEN = re.compile("\u202e([^\u202c\n]*)\u202c?")


def _as_displayed(line: str) -> str:
    """``line`` as a terminal shows it: each character written at the cursor, which a carriage return sends to
    the line's start, a backspace or ``ESC[nD`` back, and ``ESC[2K`` blanks the line; colours are dropped."""
    shown: list[str] = []
    cursor, at = 0, 0
    while at < len(line):
        char = line[at]
        ansi = _ANSI.match(line, at) if char == "\x1b" else None
        if ansi:
            count = int(ansi.group(1)) if ansi.group(1).isdigit() else 1
            if ansi.group(2) == "D":
                cursor = max(0, cursor - count)
            elif ansi.group(2) == "K":
                shown, cursor = ([] if ansi.group(1) == "2" else shown[:cursor]), (0 if ansi.group(1) == "2" else cursor)
            at = ansi.end()
            continue
        if char == "\r":
            cursor = 0
        elif char == "\b":
            cursor = max(0, cursor - 1)
        elif char != "\x1b":
            shown[cursor : cursor + 1] = [char]
            cursor += 1
        at += 1
    return "".join(shown)


def _displayed(text: str) -> str:
    """``text`` as it is displayed (see :data:`_DISPLAY_CONTROLS`), line by line."""
    text = _OVERRIDDEN.sub(lambda m: m.group(1)[::-1], text)
    text = re.sub("[\u202a-\u202e\u2066-\u2069]", "", text)
    return "\n".join(_as_displayed(line) if _DISPLAY_CONTROLS.search(line) else line for line in text.split("\n"))


def _without_emphasis(text: str) -> str:
    """``text`` with each emphasis command (:data:`_EMPHASIS_COMMANDS`) replaced by its group's content, innermost
    first; an unclosed one stays."""
    for _ in range(_MAX_EMPHASIS):
        matches = list(_EMPHASIS_COMMANDS.finditer(text))
        ends = brace_partners(text) if matches else {}
        closed = [(m, ends[m.end() - 1]) for m in matches if m.end() - 1 in ends]
        if not closed:
            return text
        match, end = closed[-1]
        text = text[: match.start()] + text[match.end() : end] + text[end + 1 :]
    return text


def _directive_text(block: re.Match[str]) -> str:
    """A MyST directive's title and body as text; a title (or name) "Answer" as an empty ``Answer:`` line."""
    name, title, body = block.group(1), block.group(2).strip(), _DIRECTIVE_OPTION.sub("", block.group(3))
    heading = "Answer:" if _ANSWER_KEY.fullmatch(title or name) else title
    return f"\n{heading}\n{body}\n"


def _data_answer(block: re.Match[str]) -> str:
    """A data block's answer field as an ``Answer:`` line (the block itself is dropped as code is), else the block."""
    language, body = block.group(1).lower(), block.group(2)
    if language in ("csv", "tsv"):
        rows = [row for row in csv.reader(body.splitlines(), delimiter="\t" if language == "tsv" else ",") if row]
        keyed = [row[1] for row in rows if len(row) == 2 and _ANSWER_KEY.fullmatch(row[0].strip())]
        columns = [i for i, name in enumerate(rows[0]) if _ANSWER_KEY.fullmatch(name.strip())] if len(rows) > 1 else []
        value = keyed[-1] if keyed else rows[-1][columns[-1]] if columns and len(rows[-1]) == len(rows[0]) else None
    else:
        fields = _ANSWER_FIELD.findall(body)
        value = fields[-1] if fields else None
        if value is not None:
            value = (value.rstrip("} ,") if value.count("}") > value.count("{") else value).strip("\"'")  # {"answer": 42}
    return block.group(0) if value is None or not value.strip() else f"\nAnswer: {value.strip()}\n"


def generated_text(response: str) -> str:
    """``response`` up to its first end-of-sequence token, the other special tokens of a chat template dropped."""
    for match in _END_OF_SEQUENCE.finditer(response):
        if match.group(0) != "</s>" or "<s>" not in response[: match.start()]:
            response = response[: match.start()]
            break
    return _SPECIAL_TOKENS.sub("", response)


def _latex_script(match: re.Match[str]) -> str:
    tag, content = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return ("^{" if tag.lower() == "sup" else "_{") + content + "}"


def _without_questions(text: str) -> str:
    # One pass over the sentence starts (a regex per question would rescan a line per start).
    if "?" not in text:
        return text
    starts = [m.end() for m in _SENTENCE_START.finditer(text)]
    kept, at = [], 0
    for mark in _QUESTION_MARK.finditer(text):
        i = bisect.bisect_right(starts, mark.start()) - 1
        start = max(starts[i] if i >= 0 else 0, at)
        if _OFFER_QUESTION.match(text, start, mark.start()):
            continue
        kept.append(text[at:start])
        at = mark.end()
    kept.append(text[at:])
    return "".join(kept)


def convention_for(data_source: str) -> str:
    """The answer-marking convention of a data_source (``####``, ``Answer:`` or ``boxed``)."""
    lowered = str(data_source).lower()
    for pattern, convention in _CONVENTION_BY_SOURCE:
        if fnmatch.fnmatchcase(lowered, pattern):
            return convention
    return BOXED


def after_reasoning(response: str) -> str:
    """The text after the last ``</think>``, when that is not blank; else the whole response.

    A ``<think>`` never closed means the response was cut off while reasoning:
    only the text before it is read.
    """
    _, sep, tail = response.rpartition("</think>")
    text = tail if sep and tail.strip() else response
    opened = text.rfind("<think>")
    return text[:opened] if opened >= 0 and text.find("</think>", opened) < 0 else text


def boxed_groups(text: str) -> list[tuple[int, int, str]]:
    """Every outermost ``\\boxed{..}`` / ``\\fbox{..}`` / ``\\boxed X`` as ``(start, end, content)``."""
    return _boxes(text)[0]


def first_unclosed_box(text: str) -> int | None:
    """Where the first ``\\boxed{`` that never closes starts: the response was cut off there."""
    return _boxes(text)[1]


def _boxes(text: str) -> tuple[list[tuple[int, int, str]], int | None]:
    partners = brace_partners(text) if "{" in text else {}
    groups: list[tuple[int, int, str]] = []
    unclosed = None
    for match in _BOX_START.finditer(text):
        if groups and match.start() < groups[-1][1]:
            continue  # a box nested in another box is part of the outer one
        if match.group(0) == "\\boxed ":
            end = _BARE_BOX_CONTENT.match(text, match.end()).end()
            groups.append((match.start(), end, text[match.end() : end]))
            continue
        end = partners.get(match.end() - 1)
        if end is not None:
            groups.append((match.start(), end + 1, text[match.end() : end]))
        elif unclosed is None:
            unclosed = match.start()
    return groups, unclosed


def joined_boxes(text: str) -> list[tuple[int, int, str]]:
    """The non-empty boxes, consecutive ones joined only by "and", "or" or commas read as one.

    ``\\boxed{2} and \\boxed{3}`` -> ``2, 3``; ``\\boxed{2} or \\boxed{3}`` ->
    ``2 or 3`` (a hedge). A run keeps its last :data:`MAX_JOINED_BOXES` boxes.
    """
    runs: list[list[tuple[int, int, str]]] = []
    joiners: list[list[str]] = []
    for group in (g for g in boxed_groups(text) if not is_blank(g[2])):
        joiner = _BOX_JOINER.match(text, runs[-1][-1][1], group[0]) if runs else None
        if joiner is None:
            runs.append([group])
            joiners.append([])
        else:
            runs[-1].append(group)
            joiners[-1].append(joiner.group(1) or joiner.group(2) or ",")
    joined = []
    for run, words in zip(runs, joiners):
        kept = run[-MAX_JOINED_BOXES:]
        separator = " or " if "or" in words[-MAX_JOINED_BOXES + 1 :] else ", "
        joined.append((run[0][0], run[-1][1], separator.join(content for _, _, content in kept)))
    return joined


def is_blank(answer: str) -> bool:
    """Whether ``answer`` holds nothing but markup, spaces and punctuation (an empty marker)."""
    return not _BLANK.sub("", answer)


def first_sentence(text: str) -> str:
    """The start of ``text`` up to its first sentence end outside math spans (``$3.5$.`` keeps its point)."""
    text = text[:MAX_SENTENCE_CHARS]
    masked = _MATH_SPAN.sub(lambda m: "x" * len(m.group(0)), text)
    match = _SENTENCE_END.search(masked)
    return text[: match.start()] if match else text


# Emoji and pictographs state nothing: "So Sam has 14 marbles left. 😊" ends on its sentence.
_PICTOGRAPHS = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200D]+")


def last_sentence(text: str) -> str | None:
    """The last sentence of the last line of ``text`` that holds text (not only layout: ``\\end{proof}``)."""
    # From the end: only the last line that holds text is read.
    line = next((line for line in (_PICTOGRAPHS.sub("", raw).strip() for raw in reversed(text.splitlines()))
                 if line and not LAYOUT_LINE.match(line)), None)
    if line is None:
        return None
    line = line[-MAX_SENTENCE_CHARS:]
    masked = _MATH_SPAN.sub(lambda m: "x" * len(m.group(0)), line)
    cuts = [m.end() for m in _SENTENCE_END.finditer(masked) if m.end() < len(masked)]
    return line[cuts[-1]:].strip() if cuts else line


def math_spans(text: str) -> list[str]:
    """The contents of the ``$..$``, ``$$..$$``, ``\\(..\\)`` and ``\\[..\\]`` spans of ``text``."""
    return [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(text)]


def numbers(text: str) -> list[str]:
    """The numbers written in ``text`` (``1,250``, ``-3.5``, ``3/4``, ``25%``), in order."""
    return [n.strip() for n in _NUMBER.findall(text)]


def _factor(sentence: str) -> str | None:
    """The one factor ``sentence`` says in words ("increases eightfold": 8), else ``None``."""
    found = _FACTOR.findall(sentence)
    if len(found) != 1:
        return None
    word, fold, part = (w.lower() for w in found[0])
    if word:
        return _FACTORS[word]
    if part:
        return _PARTS[part]
    return _FOLD.get(fold) or {"hundred": "100", "thousand": "1000"}[fold]


# A display that writes a whole sentence in ``\\text{..}`` groups (and no equation) is read as that sentence.
_TEXT_GROUP = re.compile(r"\\(?:text|textrm|mbox|mathrm)\s*\{([^{}]*)\}")
_PROSE_WORDS = 3


def sentence_value(sentence: str) -> str | None:
    """The value a plain sentence states: its last math span, the value after its last ``=``, a LaTeX
    command ending it (``\\frac{3}{4}``), an expression out of delimiters ending it ("is 3x^2 + 2x - 5"),
    its number.

    A number the sentence rules out ("8, not 9") is no candidate; several
    numbers with hedge words ("7 or maybe 8") are handed on as a hedge ("7 or
    8"); a bare list of numbers ("3, 5 and 7"), the values of one unknown
    ("x = 3 and x = −2") and a closing tuple or interval ("(2, -1).") are
    handed on whole; a sentence with no digits may write its one number in words ("She
    has twenty-four left."); a short sentence of words ("Tuesday.") is a word answer; a
    longer one may say a factor in words ("the volume increases eightfold": 8).
    """
    solutions = _solutions(sentence)
    if solutions:
        return solutions
    spans = math_spans(sentence)
    if spans:
        prose = _TEXT_GROUP.findall(spans[-1])
        # "\\[\\text{The slope is } -\\tfrac{1}{2}.\\]" is a sentence; "P(\\text{not a heart}) = 3/4" an equation
        if len(" ".join(prose).split()) >= _PROSE_WORDS and "=" not in _TEXT_GROUP.sub("", spans[-1]):
            return sentence_value(_TEXT_GROUP.sub(r" \1 ", spans[-1]).strip())
        return spans[-1].strip()
    tuple_ = _TRAILING_TUPLE.search(sentence)
    if tuple_ and "," in tuple_.group(0) and "=" not in sentence[tuple_.end() :]:
        return tuple_.group(0)
    equals = _last_outside_parentheses(sentence, "=")  # "(b = −1, c = −6) gives the roots −2 and 3": a remark
    if equals >= 0:
        # "9 * 2 = $18 every day": the value right after the last "="; "50 + 15 + 30 = $95, so Betty still
        # needs $5": the number of the clause that draws the result from it.
        rhs = sentence[equals + 1 :].strip()
        then = RESULT_CLAUSE.search(rhs)
        drawn = numbers(_NOT_THE_VALUE.sub(" ", rhs[then.end() :])) if then else []
        if len(drawn) == 1:
            return drawn[0]
        leading = _NUMBER.match(rhs.lstrip("$"))
        return leading.group(0).strip() if leading else rhs
    latex = _TRAILING_LATEX.search(sentence)
    before = sentence[: latex.start(1)] if latex else ""
    # "\\frac{3}{4}" outside math delimiters is one value, not the numbers 3 and 4; but only as the sentence's
    # one value: beside another value or a hedge ("\\frac{3}{2} or \\frac{1}{2}") it is one of several.
    if latex and not HEDGE_WORDS.search(before) and not numbers(before) and "\\" not in before:
        return latex.group(1).strip()
    expression = _TRAILING_EXPRESSION.search(sentence)
    if (expression and _OPERATOR.search(expression.group(1)) and not HEDGE_WORDS.search(sentence)
            and expression.group(1).count("(") == expression.group(1).count(")")):
        return expression.group(1).strip()
    emphasised = emphasised_number(sentence)
    if emphasised:
        return emphasised  # "The plant will be **17 cm** tall after 6 weeks."
    # A threshold or a label is the value only when the sentence has no other number ("She is done on day 20.").
    found = candidate_numbers(sentence) or numbers(_NOT_THE_VALUE.sub(" ", sentence))
    if not found:
        spelled = {m.group(0).lower(): m.group(0) for m in _SPELLED_NUMBER.finditer(sentence) if m.group(0).lower() != "one"}
        if len(spelled) == 1:
            return next(iter(spelled.values()))
        words = sentence.rstrip(".!?").split()
        answer = " ".join(words)
        if 0 < len(words) <= MAX_WORD_ANSWER and _WORDS.match(answer):
            return answer
        return _factor(sentence)
    if len(set(found)) > 1 and HEDGE_WORDS.search(sentence):
        return " or ".join(dict.fromkeys(found))
    if len(set(found)) > 1 and not _LIST_SEPARATORS.sub("", _NUMBER.sub("", sentence)):
        return ", ".join(found)
    magnitude = _MAGNITUDE_AFTER.match(sentence, sentence.rfind(found[-1]) + len(found[-1]))
    return found[-1] + (" " + magnitude.group(1) if magnitude else "")  # "25 million", "₹25 lakh"


def emphasised_number(sentence: str) -> str | None:
    """The one number a sentence of several sets in bold ("**6 students** scored 80 or higher"), else ``None``."""
    spans = [a or b for a, b in _BOLD.findall(sentence)]
    if len(spans) != 1:
        return None
    inside = numbers(spans[0])
    return inside[0] if len(inside) == 1 and len(numbers(sentence)) > 1 else None


def candidate_numbers(sentence: str) -> list[str]:
    """The numbers of ``sentence`` that may be its result: not one it rules out or sets the result against ("8,
    not 9", "down from 7"), nor a threshold or a label ("above 80", "on day 20")."""
    return numbers(_CONTEXT_NUMBER.sub(" ", _NOT_THE_VALUE.sub(" ", sentence)))


def _last_outside_parentheses(text: str, char: str) -> int:
    """Where ``char`` last stands in ``text`` outside parentheses, else -1."""
    depth, found = 0, -1
    for at, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        elif c == char and depth == 0:
            found = at
    return found


def closing_list(text: str) -> str | None:
    """The list that closes ``text`` (two or more item lines at its end), when its items give the values of one
    unknown ("- x₁ = 3" / "- x₂ = −5"): the lines as one sentence for :func:`sentence_value`; else ``None``."""
    lines = text.rstrip().splitlines()
    items = list(itertools.takewhile(_LIST_ITEM.match, reversed(lines)))
    if len(items) < 2:
        return None
    joined = "\n".join(reversed(items))
    return joined if _solutions(joined) else None


def _solutions(sentence: str) -> str | None:
    """The values of one unknown the sentence lists ("the solutions are x = 3 and x = −2", "$x_1 = 3$ and
    $x_2 = -5$": ``3, −2``), else ``None``."""
    found = list(_ASSIGNMENT.finditer(sentence))
    if len(found) < 2 or len({m.group(1) for m in found}) > 1:
        return None
    if any(not _JOINER.fullmatch(sentence[a.end() : b.start()]) for a, b in zip(found, found[1:])):
        return None
    return ", ".join(m.group(2) for m in found)


def last_boxed(text: str) -> str | None:
    """The content of the last non-empty box of ``text`` (with the boxes joined to it)."""
    joined = joined_boxes(text)
    return joined[-1][2] if joined else None


def gold_answer(ground_truth: str) -> str:
    """The answer part of a ground truth: after ``####``, inside the last box, else all of it."""
    if "####" in ground_truth:
        return ground_truth.rsplit("####", 1)[1].strip()
    boxed = last_boxed(ground_truth)
    return boxed if boxed is not None else ground_truth.strip()
