"""Finding the final answer in a response, for ``math_answer``.

Each data_source has a convention for marking the final answer: ``#### 42``
(GSM8K), ``Answer: 42`` (DAPO / AIME) or ``\\boxed{42}`` (MATH and the
default). The row's convention is tried first, then the other two, then an
"the answer is ..." phrase, then the final sentence. Only the text after the
last ``</think>`` is read when a reasoning block precedes the answer.

Consecutive boxes joined only by "and", "or" or commas are read together
(``\\boxed{2} and \\boxed{3}`` -> ``2, 3``; ``\\boxed{2} or \\boxed{3}`` ->
``2 or 3``, which the judge treats as a hedge). An empty marker (``\\boxed{}``,
a bare ``Answer:``) is no answer: the last one with content counts. A
correction after the marked answer ("... \\boxed{1/2}. Wait, no: it is 1/3")
is the answer the response commits to.

The response is read as a reader sees it (:func:`visible_text`): markup that
hides or disables text (``\\phantom{}``, ``%`` comment lines, HTML comments,
``\\iffalse``, white text), questions and quoted questions are removed first.
Every other answer the response commits to after its last correction
(other boxes, ``####`` values, ``Answer:`` lines, "the answer is" phrases) is
returned in ``FinalAnswer.others``: a grader pays only when they all agree.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from rewardsmith.reward_fns.latex_boxes import brace_partners

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
_HASH = re.compile(r"####\s*((?:(?!####)[^\n])+)")
_ANSWER_COLON = re.compile(r"(?i)\banswer\**\s*[:：]\**\s*([^\n]+)")
_ANSWER_IS = re.compile(r"(?i)\banswer\s+(?:is|would be|will be|should be)\s*:?\s*([^\n]+)")
# An ellipsis ("2...") does not end a sentence: it belongs to the answer.
_SENTENCE_END = re.compile(r"(?<!\.\.)[.!?](?=\s|$)")
_BLANK = re.compile(r"\\(?:boxed|fbox|text|mathrm|textbf|[lc]?dots|quad)\b|\\[,;:! ]|[\s$*{}_.:?()\[\]]")
# Words after a marked answer that take it back ("Wait, no: it is 1/3").
_CORRECTION_CUE = re.compile(
    r"(?i)\b(?:wait|actually|correction|oops|hmm+|scratch that|on second thought|let me correct|"
    r"I made (?:a|an) (?:mistake|error)|that(?:'s| is| was) (?:wrong|incorrect|not right))\b|\bno\s*[,:;!]"
)
_VALUE_CHAR = re.compile(r"[\d\\]")
_REASON = re.compile(r"\s+(?:since|because|as)\s+")  # "it is -3 since x < 0": the value comes first
_NUMBER = re.compile(r"(?<![\w.])[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?%?|(?<![\w.])[+-]?\.\d+%?")
_NEGATED_NUMBER = re.compile(r"(?i)\b(?:not|rather than|instead of)\s+\$?[+-]?\d[\d,]*(?:\.\d+)?")
_HEDGE_WORDS = re.compile(r"(?i)\b(?:or|maybe|perhaps|possibly|might|could be|not sure|unsure)\b")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z' -]*$")
# Inline "$..$" by pandoc's rule (no space just inside either "$", no digit just after the
# closing one), so that currency ("costs $2 = $18") is not read as math.
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(?!\s)(.+?)(?<!\s)\$(?!\d)|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


# Markup a reader never sees: its content is no answer.
_HIDING_COMMANDS = re.compile(r"\\(?:[hv]?phantom|textcolor\s*\{\s*white\s*\}|color\s*\{\s*white\s*\})\s*\{")
_HIDDEN_SPANS = re.compile(r"<!--.*?(?:-->|$)|\\iffalse\b.*?(?:\\fi\b|$)|\\begin\{comment\}.*?(?:\\end\{comment\}|$)"
                           r"|(?m:^[ \t]*%.*$)", re.DOTALL)
# A question commits to nothing ("Is the answer \\boxed{3}?"); nor does a quoted one. A sentence
# starts at a line start or after ". ", "! " or ": "; a "." not followed by a space (3.5) stays inside.
_QUESTION = re.compile(r"(?:^|(?<=[.!:]\s)|(?<=\n))[^\n.!?]*(?:\.(?!\s)[^\n.!?]*)*\?(?=[\s\"”$*]|$)")
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
_MARKER = re.compile(r"\\boxed|\\fbox|####|(?i:\banswer\b)|\?")


@dataclass(frozen=True)
class FinalAnswer:
    """The final-answer span of a response, which rule found it, and the other answers it commits to."""

    text: str
    rule: str  # a convention, "answer is", "correction" or "final sentence"
    others: tuple[str, ...] = ()


def visible_text(response: str) -> str:
    """``response`` as a reader sees its commitments: hidden markup, questions and quoted questions removed."""
    text = _HIDDEN_SPANS.sub("", response)
    if _HIDING_COMMANDS.search(text):
        partners, kept, at = brace_partners(text), [], 0
        for match in _HIDING_COMMANDS.finditer(text):
            if match.start() < at:
                continue  # inside a group already dropped
            kept.append(text[at : match.start()])
            end = partners.get(match.end() - 1)
            at = len(text) if end is None else end + 1
        text = "".join(kept) + text[at:]
    text = _QUOTED.sub(lambda m: "" if _MARKER.search(m.group(0)) else m.group(0), text)
    return _QUESTION.sub("", text)


def convention_for(data_source: str) -> str:
    """The answer-marking convention of a data_source (``####``, ``Answer:`` or ``boxed``)."""
    lowered = str(data_source).lower()
    for pattern, convention in _CONVENTION_BY_SOURCE:
        if fnmatch.fnmatchcase(lowered, pattern):
            return convention
    return BOXED


def after_reasoning(response: str) -> str:
    """The text after the last ``</think>``, when that is not blank; else the whole response."""
    _, sep, tail = response.rpartition("</think>")
    return tail if sep and tail.strip() else response


def boxed_groups(text: str) -> list[tuple[int, int, str]]:
    """Every outermost ``\\boxed{..}`` / ``\\fbox{..}`` / ``\\boxed X`` as ``(start, end, content)``."""
    partners = brace_partners(text) if "{" in text else {}
    groups: list[tuple[int, int, str]] = []
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
    return groups


def _is_blank(answer: str) -> bool:
    return not _BLANK.sub("", answer)


def _last_boxed_span(text: str) -> tuple[str, int] | None:
    """The last non-empty box (with the boxes joined to it) and where it ends."""
    groups = [group for group in boxed_groups(text) if not _is_blank(group[2])]
    if not groups:
        return None
    contents, joiners = [groups[-1][2]], []
    for previous, current in zip(reversed(groups[-MAX_JOINED_BOXES:-1]), reversed(groups)):
        joiner = _BOX_JOINER.match(text, previous[1], current[0])
        if joiner is None:
            break
        contents.insert(0, previous[2])
        joiners.append(joiner.group(1) or joiner.group(2) or ",")
    separator = " or " if "or" in joiners else ", "
    return separator.join(contents), groups[-1][1]


def _last_boxed(text: str) -> str | None:
    span = _last_boxed_span(text)
    return span[0] if span else None


def _last_line_match(pattern: re.Pattern[str], text: str) -> tuple[str, int] | None:
    for match in reversed(list(pattern.finditer(text))):
        if not _is_blank(match.group(1)):
            return match.group(1).strip(), match.end()
    return None


def _first_sentence(text: str) -> str:
    # Cut at a sentence end outside math spans ("$3.5$." keeps its decimal point).
    text = text[:MAX_SENTENCE_CHARS]
    masked = _MATH_SPAN.sub(lambda m: "x" * len(m.group(0)), text)
    match = _SENTENCE_END.search(masked)
    return text[: match.start()] if match else text


def _answer_is_span(text: str) -> tuple[str, int] | None:
    for match in reversed(list(_ANSWER_IS.finditer(text))):
        stated = _first_sentence(match.group(1)).strip()
        if stated and not _is_blank(stated):
            return stated, match.end()
    return None


def _answer_is(text: str) -> str | None:
    span = _answer_is_span(text)
    return span[0] if span else None


def _last_sentence(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[-1][-MAX_SENTENCE_CHARS:]
    masked = _MATH_SPAN.sub(lambda m: "x" * len(m.group(0)), line)
    cuts = [m.end() for m in _SENTENCE_END.finditer(masked) if m.end() < len(masked)]
    return line[cuts[-1]:].strip() if cuts else line


def _sentence_value(sentence: str) -> str | None:
    spans = [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(sentence)]
    if spans:
        return spans[-1].strip()
    if "=" in sentence:
        # "9 * 2 = $18 every day": the value right after the last "=".
        rhs = sentence.rsplit("=", 1)[1].strip()
        leading = _NUMBER.match(rhs.lstrip("$"))
        return leading.group(0).strip() if leading else rhs
    # "8, not 9": a number the sentence rules out is no candidate.
    numbers = [n.strip() for n in _NUMBER.findall(_NEGATED_NUMBER.sub(" ", sentence))]
    if not numbers:
        # A bare word answer ("Tuesday.") may stand alone; a longer sentence is no answer.
        words = sentence.rstrip(".!?").split()
        answer = " ".join(words)
        return answer if 0 < len(words) <= MAX_WORD_ANSWER and _WORDS.match(answer) else None
    if len(set(numbers)) > 1 and _HEDGE_WORDS.search(sentence):
        # "It is 7 or maybe 8": hand the judge every candidate so it can see the hedge.
        return " or ".join(dict.fromkeys(numbers))
    return numbers[-1]


def _final_sentence(text: str) -> str | None:
    sentence = _last_sentence(text)
    return _sentence_value(sentence) if sentence else None


def _correction(rest: str) -> str | None:
    """The value a response switches to after its marked answer, if it takes that answer back."""
    cue = _CORRECTION_CUE.search(rest)
    if cue is None:
        return None
    tail = rest[cue.start() :]
    stated = _answer_is(tail)
    if stated:
        return stated
    # Otherwise the last sentence must end on the new value ("Wait, no: it is 1/3."), so that
    # a check that merely mentions numbers ("Wait, 6 of the 10 cases ...") changes nothing.
    sentence = _REASON.split(_last_sentence(tail) or "", maxsplit=1)[0]
    value = _sentence_value(sentence) if sentence else None
    if not value or not _VALUE_CHAR.search(value) or value not in sentence:
        return None
    if "=" not in sentence and not _MATH_SPAN.search(sentence) and len(set(_NUMBER.findall(sentence))) > 1:
        return None  # "which is 5 out of 10 options": no single new value
    after = sentence.rsplit(value, 1)[1].strip(" $.!")
    return value if len(after.split()) <= MAX_WORD_ANSWER and not _VALUE_CHAR.search(after) else None


_EXTRACTORS = {
    BOXED: _last_boxed_span,
    HASH: lambda text: _last_line_match(_HASH, text),
    ANSWER_COLON: lambda text: _last_line_match(_ANSWER_COLON, text),
}


def find_final_answer(response: str, convention: str = BOXED) -> FinalAnswer | None:
    """The final answer of ``response`` under ``convention`` (see the module docstring)."""
    if convention not in _EXTRACTORS:
        raise ValueError(f"unknown answer convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    text = after_reasoning(visible_text(response))
    for rule in (convention, *(c for c in CONVENTIONS if c != convention)):
        span = _EXTRACTORS[rule](text)
        if span:
            found, end = span
            if rule != BOXED and _ANSWER_IS.search(found):
                # Minerva style: "Final Answer: The final answer is $5$. I hope it is correct."
                found = _answer_is(found) or found
            elif rule != BOXED and boxed_groups(found):
                found = _last_boxed(found) or found
            return _unless_corrected(FinalAnswer(found, rule), text, end)
    span = _answer_is_span(text)
    if span:
        return _unless_corrected(FinalAnswer(span[0], "answer is"), text, span[1])
    found = _final_sentence(text)
    return FinalAnswer(found, "final sentence") if found else None


def _unless_corrected(found: FinalAnswer, text: str, end: int) -> FinalAnswer:
    rest = text[end:]
    corrected = _correction(rest)
    if corrected:
        return FinalAnswer(corrected, "correction", _committed(rest[_CORRECTION_CUE.search(rest).start():], corrected))
    cues = list(_CORRECTION_CUE.finditer(text, 0, end))
    return FinalAnswer(found.text, found.rule, _committed(text[cues[-1].end() if cues else 0 :], found.text))


def _committed(text: str, final: str) -> tuple[str, ...]:
    """Every answer ``text`` marks (boxes, ``####``, ``Answer:``, "the answer is") other than ``final``."""
    values = [content for _, _, content in boxed_groups(text)]
    for pattern in (_HASH, _ANSWER_COLON):
        values += [m.group(1) for m in pattern.finditer(text)]
    # "the answer is found" states nothing: a phrase counts only when it holds a value.
    values += [v for v in (_first_sentence(m.group(1)) for m in _ANSWER_IS.finditer(text)) if _VALUE_CHAR.search(v)]
    values = [v.strip() for v in values if not _is_blank(v) and not boxed_groups(v) and not _ANSWER_IS.search(v)]
    # Boxes joined into the final answer ("\\boxed{2} or \\boxed{-2}") are part of it.
    same = {final.strip(), _plain(final)} | {_plain(part) for part in re.split(r",| or ", final)}
    return tuple(dict.fromkeys(v for v in values if v not in same and _plain(v) not in same))


def _plain(answer: str) -> str:
    return re.sub(r"[\s$*]|\.$", "", answer)


def gold_answer(ground_truth: str) -> str:
    """The answer part of a ground truth: after ``####``, inside the last box, else all of it."""
    if "####" in ground_truth:
        return ground_truth.rsplit("####", 1)[1].strip()
    boxed = _last_boxed(ground_truth)
    return boxed if boxed is not None else ground_truth.strip()
