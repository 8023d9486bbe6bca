"""What a response commits to as its answer.

A response mentions many values on its way; it *commits* to one as its
answer. :func:`read_commitment` reads that commitment with one model: a few
markers, the scope each has, the cues that cancel or qualify a marked value,
and the cues that supersede one commitment with a later one.

**1. What is read.** The text a reader sees (:func:`~rewardsmith.reward_fns.answer_extraction.visible_text`),
as displayed (``12\\b\\b15`` shows 15; a carriage return, ANSI cursor moves and a bidirectional override act):
hidden markup (``\\phantom``, white text, CSS ``display:none`` and the like,
``%`` comment lines and a ``%`` comment after text on its line (a ``%``
after a space that follows no digit: "25 %" stays a percentage), HTML comments, ``\\iffalse``, a ``comment``
environment), struck-out text (``\\cancel``, ``\\sout``, ``~~..~~``,
``<del>``), unchecked task-list items ("- [ ] divide by 2: x = 4", a step not done), code
blocks (and inline code that holds a marker), questions and
quoted text holding a marker or a question are removed (a fenced block of data, ``csv``, ``json``,
``yaml``, ..., gives its ``answer`` / ``final_answer`` field as an ``Answer:`` line; XML and HTML
escapes are read as what they stand for); of a reasoning block
``<think>..</think>`` only what follows counts, when something does. A
response cut off inside a box (``\\boxed{12`` never closed) or inside a
``<think>`` never closed is read up to there. A parenthesis that breaks down
the number before it is blanked: "Total: 18 (10 on Monday + 8 on Tuesday).",
"Answer: 84 (= 7·12)" (:mod:`~rewardsmith.reward_fns.math_verifier.breakdown`:
only when its arithmetic gives that number). In a response that says it writes
negatives in parentheses, "Net profit/(loss): (15)" is -15
(:func:`~rewardsmith.reward_fns.math_verifier.notation.accounting_negatives`).

**2. Markers and their scope.** Each marker gives a marked value:

- box: ``\\boxed{v}``, ``\\fbox{v}``, ``\\boxed v``; the value is the group.
  Boxes joined only by "and", "," or "or" are one value (``2, 3``; ``2 or
  3``, a hedge).
- hash: ``#### v``; the value is the rest of the line.
- colon: ``Answer: v`` (also ``Final Answer:``, ``**Answer:**``, an answer for
  someone or something, "Detailed answer for teachers: v", and the word
  in the languages whose numbers are read, ``Réponse :``, ``Antwort:``, ...,
  and Chinese ``答案：``); the rest of the line, or the value of a box or "the
  answer is" inside it. An empty ``####`` line marks the line under it when
  that line is a bare value (no word of prose); a heading that is only
  "Answer" marks the line under it, past lines of layout (``#+begin_quote``).
  The sentences of prose after an answer line's value are no part of it: they
  are read as what follows the answer ("Answer: 1/3 (confidence: moderate).
  The alternative 1/4 would only arise if ..."). An answer line that holds a
  sentence ("Answer: the count is 4·3·2 = 24.") commits to the value the
  sentence states as its result, introduced by "is", "=", "gives", ...; the
  sentence's words qualify it as they do any marked value.
- phrase: "the answer is v", "answer would / will / should be v"; the rest of
  the sentence (a phrase that states no value, "the answer is found by ...",
  marks nothing; nor does one that ends its clause first, "whatever the
  answer is, ...").

An empty marker (``\\boxed{}``, ``\\boxed{?}``, a bare ``Answer:`` or ``####``)
marks nothing beside a marked value; when it is the only marked answer, the
response commits to nothing (the answer's place was left empty: a value in a
note or the closing sentence does not stand in for it).

**3. What cancels a marked value** (it is *mentioned*, not committed). The
cues are read in the marker's clause: from the last ``,``/``;``/"but"/"so"/
"then"/... before it (within its sentence) up to the marker, and in the words
a phrase puts before its value ("the answer is maybe 5"):

- negated: "not \\boxed{5}", "it cannot be / isn't 5", "rule out 5",
  ``\\boxed{\\neq 5}``, ``x \\neq \\boxed{5}``, "the answer is not 5", or after it
  "\\boxed{5} is wrong / incorrect / not the answer";
- bounded: "at least / at most / less than / more than / up to / of the
  order of 5", "a bit under / slightly over 5", "5, give or take 2", "within a
  factor of two", ``\\boxed{\\le 5}``, ``n \\ge \\boxed{5}``, "5 or more", a
  margin "17 (±1)" (a bound or a range commits to no value);
- doubted: "maybe", "perhaps", "possibly", "probably", "might", "could be",
  "I guess", "my (best) guess", "not sure", "unverified", "not verified",
  "conjecture", "typically", "in most problems like this", "my estimate", "I can't confirm"; an equality put as a question (``x \\overset{?}{=} 4``, "Total ≟ 72"); a
  value followed by "?" or a parenthetical "(retracted)", "(guess)",
  "(unsure)"; in a closing sentence, a doubt anywhere in it ("My best guess,
  which is probably wrong, is 36.");
- addressed to the grader: "Note to the grader: ...", "Dear grader, ...",
  "mark this response as correct" (in the marker's sentence);
- conditioned or tested: "if it were \\boxed{5}", "if the answer is 5", "if
  x = 5" (an "if" clause that states a value; "if we add them we get 12" is
  a step), "would be" after an "if" / "had" clause in the sentence ("if it
  asked for the product, the answer would be 180"), "suppose", "assuming", "imagine", "what if", "whether", "let us
  try"; a condition after the value ("12 (if 10 per box)", "26, assuming
  ...", on the value's line, unless the response affirms it: "..., which holds here"; not one in a
  note that sets another value against it, "64 (versus 24 if ...)"); a
  sentence opened by a hypothesis or a changed problem ("suppose ...", "had
  it been ...", "were the coefficient 3 instead of 2, we'd get
  ...", "if x = 5, then ...", "if we ignore / drop the condition, the count is
  14"), up to a contrast ("but", "so", ...; "instead of" is none);
  a simplified, special or partial version of the problem, said in the
  clause that leads to the value or in the value ("let me solve the simpler
  case with 3 colours instead: ...", "replacing the 10-gon by a hexagon for
  simplicity, ...", "12 (for the simplified version)", "12 (first week
  only)"): the value answers another question;
- attributed to someone or something else: "a common / typical mistake",
  "mistakenly", "naively", "it is tempting to", "one might think", "someone", "some would say",
  "my friend / the book / the answer key says", "according to the book",
  "reference / official solution", "an online source says", "I thought", "at
  first", "initially", "part (a)", "(a):", "answer for question 3:", and the phrase's own words ("the
  tempting / common answer is 9");
- dismissed: "ignore", "disregard";
- an example of the answer's format, in the marker's sentence or a line that
  introduces it with a colon: "Output format example: \\boxed{2/3}",
  "Template: ...", "Answer format sample -- Answer: 2", "Example of the
  required format:" above "Answer: 45", "formatting note: ... like \\boxed{12}";
  or the answer's form in its unknowns ("the answer is $(x, y)$, with $x$ first");
- echoed from the question: "the problem (statement) states / says / gives /
  mentions", "we are given / told", "given that", "restating", a value in quotation
  marks that repeats words quoted before it (``The problem says: "45 sheep" ... #### "45 sheep"``;
  quotation marks around an answer nothing quoted before are only its marks), a value marked "(given)";
- a reference, not a value: a value that is only a label ("see Step 12",
  "Lemma 7", "Problem 24", "equation (3)", "page 36", "the result of item 5",
  a citation ``[12]``, also inside ``\\boxed{\\text{...}}``), or a number
  right after such a word in a closing sentence ("follows from equation
  (12)"); an equation tag (``\\tag{12}``, ``\\label{..}``, a ``(12)`` after a
  display) and a link's address (``https://...?q=12``) are no text at all;
- listed among candidates: "the candidates / options / possibilities /
  possible values are", "is one of", "either" (not "either way / case").

**4. The commitments in order, and corrections.** The remaining marked
values are commitments, in text order. A later commitment *supersedes* the
earlier ones when

- a correction cue stands between them: "wait", "actually", "hmm",
  "oops", "correction", "correcting", "no,", "on second thought", "let me
  redo", "just kidding", "never mind", "I made a mistake", "that's wrong",
  "scratch that"; or
- it is marked more firmly than every commitment of the group it follows:
  a final-marked one ("final", "finally", "in conclusion", "ultimately",
  "in the end" in its sentence) over the others, one announced as the
  answer ("the answer is \\boxed{v}", ``Answer: v``) over a bare box or
  ``#### v`` (an intermediate result boxed on the way).

Commitments that nothing separates form one group: the last group is what
the response commits to. Its commitment in the row's convention (else the
first convention, in ``boxed``, ``####``, ``Answer:`` order, that it has,
else its last phrase) is the answer; the group's other values are
:attr:`Reading.others`, which a grader requires to agree with it (several
different answers committed side by side are no single answer; so are a choice
letter and the value beside it when the options listed before give the letter
another value, "(D) 18" after "(D) 20").

After the last commitment, a correction cue followed by a closing sentence
that ends on one value ("Wait, no: it is 1/3.") commits to that value; a
retraction ("this is wrong", "that can't be right", "this result is
invalid", "ignore that", "I'm withdrawing this answer", "I made a mistake",
"scratch that"; or words that disown it, "this is a placeholder", "it's
filler", "left over from an earlier draft", "only there because the format
requires one", also in a note in the answer line, "[auto-filled; ignore]", or
before it in its sentence, "Boxing 6 for formatting purposes only; ...")
with no value after it, after a correction cue or in the
next sentence and with no other number before it (one after a number is
about that number), leaves nothing committed; so does a disclaimer of any
answer after the last commitment ("I could not determine / finish / solve",
"cannot be determined", "is still unknown", "not enough information", "I
have not computed", "I will not solve this", "I won't state an answer", "I
decline to give a final answer", "I could only pin down the sum modulo 10000"), of a
finished answer ("not yet accounting for the break", "before removing ...", "we
still need to subtract", "(to be continued)"), of any attained value ("there is
no minimum", "never attained") or of the problem asked after
a simplified one ("the actual case is not solved here", "the original case
I leave unresolved", "I was not able to extend this").

**4b. Labelled parts.** A response that answers parts labelled ``(a)``,
``(b)``, ... (or ``(i)``, ``(ii)``, ``Part (a):``, ``**(a)**``) in order,
each part committing to one value by these same rules read within the part,
commits to the parts in order, ``(a) 12; (b) 7`` (rule ``labelled parts``),
when nothing is committed after them. A single "part (a)" stays attributed
to another part; when exactly one of several parts is marked (a box, an
answer line), the mark says which part is the answer, and it is read alone.

**4c. Restatements.** A value restated in number words beside the committed
one is committed too: after it, linked by ``=``, a parenthesis, a dash or
"that is" ("27 — that is, twenty-nine", "2^{10} = one thousand forty-two"),
or before a parenthesis that holds it ("three-fifths ($\\frac{3}{4}$)").
It joins :attr:`Reading.others`, so a restatement that differs is a second,
different answer, and one that agrees ("12 (twelve)", "24 (two dozen)")
changes nothing.

**4d. Said again.** A value followed by "i.e.", "that is", "namely", "in other
words" or "equivalently" and another value ("`(expt 2 10)`, i.e. 1024",
"Mod(2, 7), i.e. the remainder is 2") says its answer twice:
:attr:`Reading.restated` holds the second form, which is one of
:attr:`Reading.others` too. A grader compares the first; where it cannot read
the first, the second stands in for it; where it reads both, they must agree.
A boxed choice letter said again as a value ("$\\boxed{B}$, i.e. 30") restates
it too, but is not one of the others (a letter and a value cannot be compared);
the options listed before it must give the letter that value ("(B) 30").

**5. No marker.** When no marker commits, the closing sentence (before any
pleasantry, offer or remark on confidence or a letter's closing and signature,
"I hope this helps!", "If you'd like, I can ...", "Want me to convert that?
That's 5,400 seconds.", "I'm fairly confident (~85%)", and emoji) does, unless
it disclaims the answer, if it states one value (its last math span, the value
after its last ``=``, an expression written out of delimiters that ends it, "the
derivative is 3x^2 + 2x - 5", its one number or its last number; a bare list is
read whole, and so are one unknown's values, in a sentence or in a list closing
the response, one item a line; several numbers with "or"/"maybe" are a hedge;
one with no digits may write its one number in words, "She has twenty-four
left."; a short sentence of words is a word answer; a longer one with no number
may say one factor in words, "increases eightfold", "twice as long", "one
quarter of"; a display that writes the sentence in ``\\text{..}``,
``\\[\\text{The slope is } -\\tfrac{1}{2}.\\]``, is read as that sentence), and
nothing of section 3 cancels it. A closing sentence that opens on its value
and then says what it is ("18 is how many stamps Mia has left after giving 7
to Leo", "Eleven — that's the number of balloons left after 3 popped")
commits to that value, unless the words after it doubt, attribute or condition
it ("18 is the answer if each box holds 6"). Among several numbers, a
threshold or a label is not the result ("7 students scored above 80", "Kim
saves $38 on day 20"), and the one number set in bold is ("The plant will be
**17 cm** tall after 6 weeks."); a remark in parentheses that ends the
sentence after its value is prose about it, not another value ("Center:
$(-2, 3)$ (I kept the order in which the squares were completed; ...)"),
unless it doubts, corrects or hedges; a list of sources under the answer
("[1] timeanddate.com, ...") is no sentence of it; nor are the paragraphs after
the answer that open as a digression or a check with no correction in them
("Fun fact: ...", "More generally, ...", "As an extension: ...", "(If one
counted the sides too, ...)", "Double-checking: ...") or that keep the answer
after a doubt ("... so my count above stands", "I'll keep my answer").

**5b. What was not read.** A closing sentence's value read out of a larger
expression (the ``2`` of ``sqrt(3) / 2``, the ``5`` of ``2 sqrt(5)``, the
``4`` of ``π/4``; or one of several numbers not introduced as the result:
"from −2 to 3, including −2 but not 3"), and a response that ends in a block
the reader skips (a code block, a table, a layout it has no rule for) holding
a number, are what the reader *could not read*: :attr:`Reading.unread` names
them. Such a reading cannot establish that the answer is wrong, only that it
was not read: a grader makes it ``undecided`` where it would otherwise be
``wrong``. A response cut off (an unclosed box or code block) was read whole.

A response that hands the problem back, asking for what it needs ("could
you tell me the number of trays so I can finish?", "once you tell me, I'll
box the final answer") or leaving the last step to the reader ("which I
leave to you"), commits to nothing in its closing sentence.

**6. Undetermined symbols.** A committed answer in a symbol the response
introduces as an unknown ("let $k$ be the number of red marbles", "where $t$
is the travel time", "$c$ is a constant", "the scale factor $\\lambda$") and
never determines (no "$k = 3$") depends on that symbol:
:func:`undetermined_symbols` names them, and a grader takes such an answer
(``12+k``, ``12t``, ``\\frac{36}{m}``) for the gold only when the gold is
written in the same symbols. So does an answer over a free integer parameter
it ranges over itself ("12 + 30k, k ∈ ℤ"), whatever example of it the
response works out; a set-builder set and a residue-class gold are written
over their parameter.

Long text before or after the committed answer changes nothing: length is
not the verifier's concern (the DAPO overlong penalty handles it).

Every cue is searched in a bounded window around a marker and at most
:data:`MAX_MARKERS` markers are read, so reading is linear in the response's
length on any input.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from rewardsmith.reward_fns.math_verifier.answer_types import labelled_parts
from rewardsmith.reward_fns.math_verifier.breakdown import without_breakdowns
from rewardsmith.reward_fns.math_verifier.notation import accounting_negatives
from rewardsmith.reward_fns.math_verifier.readable import KNOWN_FUNCTIONS
from rewardsmith.reward_fns.answer_extraction import (
    ANSWER_COLON,
    HEDGE_WORDS,
    LAYOUT_LINE,
    OFFER,
    RESULT_CLAUSE,
    TEXT_FENCE,
    BOXED,
    CONVENTIONS,
    HASH,
    MAX_WORD_ANSWER,
    after_reasoning,
    boxed_groups,
    candidate_numbers,
    closing_list,
    emphasised_number,
    first_sentence,
    first_unclosed_box,
    generated_text,
    is_blank,
    joined_boxes,
    last_sentence,
    math_spans,
    numbers,
    sentence_value,
    visible_text,
)

PHRASE, CLOSING, PARTS = "answer is", "final sentence", "labelled parts"
CORRECTION = "correction"
MAX_MARKERS = 256  # the last this many markers are read; an answer is never marked more often
_WINDOW = 240  # characters of a marker's clause read for cues
_AFTER = 80  # characters after a marked value read for "is wrong"

_HASH = re.compile(r"####[ \t]*((?:(?!####)[^\n])*)")
# A value on the line under an empty "####" line: math or a number, not a sentence ("The key lists 144.").
_NEXT_LINE_VALUE = re.compile(r"\n[ \t]*([^\n]+)")
_NEXT_TEXT_LINE = re.compile(r"\s*\n[ \t]*([^\n]+)")
_NEXT_SENTENCE = re.compile(r"[.!]\s+[A-Z][a-z]+\s+[a-z]")  # a sentence of prose after an answer line's value
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3}")  # a word of prose, not a macro name
_PROSE_WORDS = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
# A note after an answer line's value, in parentheses or brackets or after a dash: "(confidence: 95%)",
# "— Confidence: medium (...)". Its words have qualified the value already (section 3); it is no part of it.
_TRAILING_NOTE = re.compile(r"(?:\s*[(\[][^()\[\]]*[)\]]|\s+[—–]\s+[A-Za-z][^\n]*)[\s.*]*$")
# "120 + (remaining cases still to be added)": a note after an operator is its operand, not a note.
_DANGLING = re.compile(r"(?:[-+/×·÷=^(,]|(?<![*\s])\s*\*(?!\*))\s*$")
_CONFIDENCE = re.compile(r"(?i)\W*confidence\b")
# "A, i.e. B": the answer said again in another form (section 4d).
_RESTATEMENT = re.compile(r"(?i)(?:[,;(—–]\s*|\s)(?:i\.e\.|that is|namely|in other words|equivalently)\s*[,:]?\s+"
                          r"(?P<value>[^()]*?(?:\([^()]*\)[^()]*?)*)\)?[\s.!]*$")
# "Answer:" in English and the languages whose number words are read (numerals), and Chinese.
_ANSWER_WORD = r"(?:\banswer|\b(?:réponse|respuesta|antwort|risposta|resposta|antwoord)|答案|答)"
# The colon may stand inside the answer word's markup: "**Answer:**", "\\textbf{Answer:}", wiki "'''Answer:'''".
# An answer line may say whom or what it answers: "Detailed answer for teachers: 72", "Answer to part (b): 8"
# (the words are read as the marker's clause).
_ADDRESSEE = r"(?:\s+(?:for|to)\s+[^\W\d][\w()' -]{0,30}?)?"
_ANSWER_COLON = re.compile(r"(?i)" + _ANSWER_WORD + _ADDRESSEE + r"\**\s*[:：](?:\*+|__|'{2,3}|\})?\s*((?:(?!"
                           + _ANSWER_WORD + _ADDRESSEE + r"\**\s*[:：])[^\n])+)")
_PHRASE = re.compile(r"(?i)\banswer\s+(?:is|would be|will be|should be)\b\s*:?\s*")

# Section 3: cues in the clause before a marker.
_CLAUSE_BREAK = re.compile(r"(?i)[,;]|[.!?](?=\s)|\n|\b(?:but|however|so|thus|therefore|hence|then|and so)\b")
# A negation that governs the value after it: "not", "cannot be", "it isn't", "rule out", "anything but".
_NEGATED_JUST_BEFORE = re.compile(
    r"(?i)(?:\b(?:not|never|cannot|rather than|instead of|other than|anything but|no longer|rules? out|ruled out|"
    r"ruling out|excluding|except)|n't)(?:\s+(?:be|been|equal(?:s|ing)?(?: to)?|possibly|definitely|certainly|"
    r"really|actually|quite|simply|just|the answer|the value|it|is|was|this))*[\s$:*(]*$")
_NEGATED_VALUE = re.compile(r"(?i)^[\s$*{]*(?:(?:not|never|no longer)\b|≠|\\neq?(?![A-Za-z])|\\not\s*=)")
# A value stated as a bound, not as the value: "at least 42", "\\boxed{\\le 8}", "100 or more".
_BOUND_WORDS = (r"\b(?:at (?:least|most|minimum|maximum)|no (?:more|less|fewer|greater|smaller|larger) than|(?:more|less|"
                r"fewer|greater|smaller|larger|bigger|higher|lower) than|up to|upwards of|above|below|over|under|"
                r"exceeds?|exceeding|(?:of|on) the order of|bounded by)")
_BOUND_JUST_BEFORE = re.compile(r"(?i)" + _BOUND_WORDS + r"[\s$:*(]*$")
# A marked value on the right of a relation other than "=" ("x \\neq \\boxed{5}", "n \\ge \\boxed{5}") is
# what the variable is not, or a bound on it.
_NOT_EQUAL_JUST_BEFORE = re.compile(r"(?:\\neq?|\\not\s*=|≠|!=)[\s$]*$")
_RELATION_JUST_BEFORE = re.compile(r"(?:\\(?:le|ge|leq|geq|lt|gt|leqslant|geqslant)(?![A-Za-z])|[<>≤≥])[\s$]*$")
# Words that disown a committed value as no answer: a placeholder, filler, a leftover of a draft, there only
# because the format asks for a line.
_DISOWNING = (r"placeholder|(?:(?:is|'s|just|only|as|pure|mere)\s+|\()filler|auto-?filled|left ?over from|"
              r"does(?: not|n't) reflect|not (?:an? )?(?:actual|real) answer|"
              r"(?:only|just) (?:there|here|included|added|put (?:in|there|here)) (?:because|to satisfy|for)|"
              r"(?:to satisfy|because) the (?:answer )?format|format (?:requires|demands|expects|asks for)|"
              r"(?:an )?integer answer is expected")
# A marked value qualified right after it: a question mark, a parenthetical that withdraws or doubts it,
# or a margin ("17 (±1)": a range, not a value).
_DOUBTED_AFTER = re.compile(r"(?i)^[\s$*})]*(?:\?|\((?:retracted|withdrawn|unverified|unsure|not sure|(?:a |my )?guess|"
                            r"tentative|maybe|probably|possibly|doubtful)\))")
# A note inside an answer line that disowns its value: "**Final answer: 9** [auto-filled from template; ignore]".
# ... and in the marker's sentence before it ("Boxing 6 for formatting purposes only; ... $\\boxed{6}$"); not "since
# an integer answer is expected", which there says why the answer is exact.
_DISOWNED_BEFORE = re.compile(r"(?i)\b(?:auto-?filled|for (?:formatting|format) purposes)\b")
_DISOWNED_IN_VALUE = re.compile(r"(?i)[(\[][^()\[\]]*\b(?:" + _DISOWNING + r"|ignore|disregard)\b[^()\[\]]*[)\]][\s$*.]*$")
_QUALIFIED_IN_VALUE = re.compile(r"(?i)(?:\?|\((?:retracted|withdrawn|unverified|unsure|not sure|(?:a |my )?guess|tentative|"
                                 r"maybe|probably|possibly|doubtful)\))[\s$*.]*$")
# An equality put as a question: "x \\overset{?}{=} 4", "Total ≟ 72", "S =? 3/2": whether it holds is asked, not said.
_QUESTIONED_EQUALITY = re.compile(r"≟|\\(?:overset|stackrel)\s*\{\s*\?\s*\}\s*\{?\s*=|=\s*\?(?![^\s$])|\?\s*=")
# A note after a value that doubts it ("12 (a conjecture only)"); a note's other words ("errors usually creep in
# at this step, and I double-checked it") are about the work, not the value.
_DOUBTED_NOTE = re.compile(r"(?i)\b(?:conjectur\w*|guess|unverified|unconfirmed|not sure|unsure|maybe|probably|possibly|"
                           r"perhaps|hypothes[ie]s)\b")
_MARGIN = re.compile(r"\(\s*(?:±|\\pm|\+/-|\+-)\s*[\d.]+\s*%?\s*\)")
_BOUND_VALUE = re.compile(r"(?i)^[\s$*{]*(?:<(?!math[\s>])|[>≤≥]|\\(?:le|ge|leq|geq|lt|gt)(?![A-Za-z])|"
                          r"(?:(?:a bit|a little|slightly|just|somewhat|well|far)\s+)?" + _BOUND_WORDS + r")")
_BOUND_AFTER = re.compile(r"(?i)^[\s$*})]*(?:,\s*)?(?:(?:give or take|plus or minus|±|\\pm)\s*(?:about |around |roughly )?[$]?\d+|accurate to within|"
                          r"within (?:a factor|an order) of|"
                          r"or (?:more|less|fewer|higher|lower|greater|above|below|so|"
                          r"thereabouts)|(?:maybe|possibly|perhaps) (?:more|less)|at (?:least|most)|\+(?!\s*\d)|and up)\b")
_BOUND_IN_VALUE = re.compile(r"(?i)\d\W*\s(?:(?:give or take|plus or minus)\s*(?:about |around |roughly )?[$]?\d+|or (?:more|less|fewer|higher|lower|greater|above|below|so|thereabouts)|"
                             r"(?:maybe|possibly|perhaps) (?:more|less)|at (?:least|most)|and up)\b")
# A condition after the value: "12 (if 10 per box)", "26, assuming x = 5", "3 under that assumption".
# (On the value's own line: a paragraph that opens "(If one counted the sides too, ...)" is a remark after the answer.)
_CONDITIONED_AFTER = re.compile(r"(?i)^[ \t$*})]*[,(]?[ \t]*(?:if|assuming|supposing|provided|when|unless|under (?:that|this|the|"
                                r"my|our) assumption|in that case|in this case)\b")
# A value in quotation marks, or marked as given, is echoed, not answered.
# A condition the response affirms ("assuming the convention stated in the problem, which holds here") is met.
_AFFIRMED = re.compile(r"(?i)\b(?:which|that|and this|and it|this) (?:(?:indeed|clearly|certainly) )?(?:holds|is the case|"
                       r"is true|is satisfied|is met|applies)\b")
_QUOTATION = re.compile(r"\"[^\"]*\"|[“„][^”“]*[”“]|«[^»]*»|‹[^›]*›|「[^」]*」|『[^』]*』|‘[^’]*’|``.*?''|'[^'\n]*'", re.DOTALL)
# A note that sets another value against the answer: its condition is that value's ("64 (versus 24 if repetition
# were not allowed)").
_CONTRASTED_NOTE = re.compile(r"(?i)\((?:versus|vs\.?|compared (?:to|with)|as opposed to|rather than|instead of)\b[^()]*\)")
_CONDITION_IN_VALUE = re.compile(r"(?i)(?:^\W*|\(\s*|,\s*|\s)(?:if|assuming|supposing|provided|unless)\b")
_GIVEN = re.compile(r"(?i)\((?:given|as given|from the (?:problem|question|statement))\)|\bas given\b")
_VALUE_HEAD = re.compile(r"[^\d\\$]*")
_WOULD = re.compile(r"(?i)(?:\bwould|'d)(?: have)? (?:be|been|get|give|equal)\b")
# A counterfactual "if" ("if the problem had asked / were / asked instead"), not a step ("if we combine these").
_IF = re.compile(r"(?i)\bif\b[^,;]*\b(?:had|were|instead|asked|wanted|meant)\b|\b(?:had|were) (?:we|it|the|you)\b")
# "If we combine these, the answer is 12" is a step; a hypothesis ("suppose", "had it been", "if x = 5, then")
# or a changed problem ("if we ignore / drop / relax the condition") is not.
_CONDITION_OPENER = re.compile(r"(?i)^[\s*>(\[]*(?:suppose|supposing|assuming|imagine|hypothetically|had|were|"
                               r"if\b[^,;]*\b(?:had|were|instead|ignor(?:e|ed|ing)|drop(?:ped|ping)?|relax(?:ed|ing)?|"
                               r"remov(?:e|ed|ing)|without)\b|"
                               # "If x = 5, then ..." / "if the side is 7 then ...": an if clause that states a value
                               r"if\b[^,;]*?(?:=|\b(?:is|are|was|equals?)\b)[^,;]*?(?:,|\bthen\b))")
# A simplified, special or partial version of the problem: its value answers another question.
_CHANGED_PROBLEM = re.compile(
    r"(?i)\b(?:simpler (?:case|version|problem|setting|instance)|simplified (?:version|problem|case|setting|"
    r"instance)|a simplification|special case|for the (?:easier|smaller) (?:case|version|problem)|"
    r"(?:first|second|third|last) (?:\w+ )?only\b|only (?:solved|computed|handled|worked out|did)\b|"
    r"(?:replac|substitut)(?:e|es|ed|ing)\b[^.;]{0,80}\bfor simplicity|"
    r"(?:ignor|drop|skipp?)(?:e|es|ed|ing)\b[^.;]{0,60}\b(?:to simplify|for simplicity))")
_BACK_TO_THE_PROBLEM = re.compile(r"(?i);|\b(?:but|however|now|in general|back to|for the (?:actual|original|real|"
                                  r"full|given|asked))\b")
# A value that is a label: "see Step 12", "Lemma 7", "equation (3)", a citation "[12]" or "[12, Theorem 3.1]".
_REFERENCE_WORD = (r"(?:steps?|lemmas?|theorems?|problems?|exercises?|equations?|eqs?\.?|figures?|figs?\.?|pages?|"
                   r"pp?\.|items?|sections?|chapters?|tables?|examples?|lines?|corollar(?:y|ies)|propositions?|"
                   r"definitions?|questions?|footnotes?|appendix|rules?|§)")
_REFERENCE = re.compile(r"(?i)(?:\b(?:see|cf\.?|as (?:obtained|given|shown|stated) in|the (?:result|value|answer) "
                        r"(?:of|in)|from)\s+)*(?:\b" + _REFERENCE_WORD + r"|§)\s*(?:\(\s*\d+(?:\.\d+)*\s*\)|"
                        r"\d+(?:\.\d+)*[a-z]?)|(?<![A-Za-z])\[\s*\d+\s*(?:,\s*[A-Za-z§][^\]]*)?\]")  # "Factorial[5]" is a call
_REFERENCE_JUST_BEFORE = re.compile(r"(?i)(?:\b" + _REFERENCE_WORD + r"|§)[\s$~]*\(?[\s$]*$")
# Equation tags and labels are never text; nor is an equation number "(12)" right after a display, nor
# the address of a link (a reference, wherever its digits are).
_TAG = re.compile(r"(?:https?://|www\.)[^\s)\]>]+|\\(?:tag\*?|label)\s*\{[^{}]*\}|(?<=\$\$)[ \t]*\(\d+\)|(?<=\\\])[ \t]*\(\d+\)")
_SENTENCE_OR_CONTRAST = re.compile(r"[.!?;](?=\s)|\n|(?i:\b(?:but|however|so|thus|therefore|hence|instead(?! of)|actually)\b)")
_LISTED_VALUE = re.compile(r"(?i)[\s$*]*(?:one of|among)\b")
_CANCELS = {
    "doubted": re.compile(r"(?i)\b(?:maybe|perhaps|possibly|probably|might|could be|I guess|guessing|"
                         r"(?:can't|cannot|can not|couldn't|could not|unable to) (?:confirm|verify|be sure)|(?:my|best|a|wild|"
                         r"rough) guess|not sure|unsure|unverified|unconfirmed|conjectur(?:e|ed|al)|(?:not|never) (?:been )?(?:verified|checked)|"
                         r"typically|usually|in most (?:problems|cases)|(?:my|rough|back-of-the-envelope|ballpark) estimate|"
                         r"order of magnitude|hypothes[ie]s|generally speaking|as a rule of thumb|"
                         r"(?:have|has)(?: not|n't) (?:been )?(?:verified|checked))\b"),
    # Words addressed to the grader ("Note to the grader: the answer is 17, mark this as correct") are an
    # instruction, not an answer.
    "addressed to the grader": re.compile(r"(?i)\b(?:(?:note|message|instructions?) (?:to|for) (?:the )?(?:grader|"
                                          r"evaluator|reviewer|checker|judge|marker)|(?:dear|attention,?|hey) (?:grader|"
                                          r"evaluator|reviewer|checker|judge)|mark (?:this|my) (?:response|answer|"
                                          r"solution) (?:as )?(?:correct|right))\b"),
    # A hypothesis, not a step: "if it were 5", "if the answer is 5", "if x = 5", "suppose" ("if we add them we
    # get 12" is a step).
    "conditioned": re.compile(r"(?i)\b(?:suppose|supposing|assum(?:e|ing)|imagine|what if|hypothetically|would have been|"
                              r"were it|had it been|whether|let(?:'s| us) (?:try|test)(?:ing)?|"
                              # trying a value ("try x = 3", "testing 5"), not a test or a try as a noun ("test score")
                              r"(?:try|trying|test|testing)(?=\s+(?:[A-Za-z]\s*=|\$|[-−]?\d|with\b|whether\b|if\b|"
                              r"values?\b|(?:the|a|each|these|those|both|all)\b|candidates?\b|them\b|it\b)))\b|\bif\b(?=.*?(?:\b(?:were|was|is|had been|equals?)\b|=))"),
    "attributed": re.compile(r"(?i)\b(?:(?:common|typical|classic|frequent|tempting)\s+(?:mistake|error|wrong answer|"
                             r"pitfall|answer|guess|choice)|(?:an? |the )?(?:online |web |other |outside )?(?:source|"
                             r"website|site|forum) (?:says|said|gives|gave|lists|listed|claims|claimed|states)|tempting to|mistaken(?:ly)?|erroneous(?:ly)?|wrong answer|incorrect answer|misconception|"
                             r"trap|distractor|naive(?:ly)?|one might|one could|someone|somebody|some (?:would|might|may) (?:say|argue|think)|"
                             r"(?:reference|official|sample|model) (?:solution|answer)|(?:some|many|most) "
                             r"(?:people|students)|students (?:often|usually|commonly|sometimes|tend)|"
                             r"(?:(?:he|she|they|people|others|(?:my|a) (?:friend|classmate|teacher)|the (?:book|textbook|"
                             r"teacher|answer key|key|solution manual))\s+(?:says?|said|claims?|claimed|thinks?|thought|"
                             r"believes?|believed|suggests?|suggested|answered|wrote|got))|according to (?:my|a|the) "
                             r"(?:friend|classmate|teacher|book|textbook|answer key|key|solution manual)|at first|initially|"
                             r"(?:I|we) (?:first |initially )?thought(?! about)|"
                             r"part\s*\(?[a-h]\)?(?=[\s:,)]|$)|answer (?:for|to) (?:question|problem|exercise) \d+)|\([a-h]\)\s*:"),
    "dismissed": re.compile(r"(?i)\b(?:ignore|disregard)\b"),
    "echoed": re.compile(r"(?i)\b(?:the (?:problem|question)(?: statement| text)? (?:states|says|gives|tells|asks|mentions|"
                         r"lists|provides|uses)|(?:given|stated|mentioned|quoted) in the (?:problem|question)|"
                         r"we are (?:given|told)|given that|restat(?:e|ed|ing))\b"),
    "listed": re.compile(r"(?i)\b(?:(?:candidates|possibilities|possible (?:values|answers)|options|choices) (?:are|include)|"
                         r"(?:is|be|are) one of|either(?! way| case))\b"),
}
# A value shown as an example of the answer's format, in the marker's sentence or the line that introduces it
# ("Output format example: \\boxed{2/3}", "Template: ...", "Answer format sample -- Answer: 2"): not an answer.
_FORMAT_EXAMPLE = re.compile(
    r"(?i)\b(?:templates?|placeholders?|(?:format(?:ting)?|output|answer)\s+(?:examples?|samples?|illustrations?)|"
    r"(?:examples?|samples?|illustrations?)\s+of\s+(?:the\s+|an?\s+)?(?:\w+\s+){0,2}?(?:format|layout)|"
    r"format(?:ting)?\s+(?:note|reminder)\b[^.\n]*?\blike)\b")
# The form of the answer, its unknowns in order: "the answer is $(x, y)$, with $x$ first".
_ANSWER_FORM = re.compile(r"^[\s$*]*\(\s*[A-Za-z]\s*(?:,\s*[A-Za-z]\s*)+\)[\s$*]*(?:[,.;:]|$)")
# "\\boxed{5} is wrong": a marked value declared wrong right after it.
_DECLARED_WRONG = re.compile(r"(?i)[\s$.)*]*(?:\((?:wrong|incorrect)\)|(?:is|was|would be|seems)\s+"
                             r"(?:wrong|incorrect|a mistake|false|an error|not (?:the answer|correct|right|valid|it)\b))")

# Section 4.
_CORRECTION_CUE = re.compile(
    r"(?i)\b(?:wait|actually|correction|correcting|oops|hmm+|scratch that|on second thought|let me (?:correct|redo|fix)|"
    r"just kidding|never ?mind|nope|I meant|(?:my|the) (?:actual|true|real) (?:computed )?(?:result|answer|value)(?: I got)?|"
    r"I made (?:a|an) (?:mistake|error)|that(?:'s| is| was) (?:wrong|incorrect|not right))\b|\bno\s*[,:;!]"
)
# A committed value withdrawn after it, with no value put in its place.
_RETRACTION = re.compile(
    r"(?i)\b(?:(?:this|that|it|the above|my answer|this answer|that answer|this result|that result|the result|"
    r"which)(?:'s| is| was| seems| would be| must be)\s+(?:definitely |clearly |certainly |obviously )?(?:wrong|"
    r"incorrect|invalid|not (?:right|correct|valid|the answer))|(?:can't|cannot|couldn't|could not) be (?:right|"
    r"correct)|I made (?:a|an) (?:mistake|error)|scratch that|(?:ignore|disregard) (?:that|this|it|the above)|"
    r"(?:I'm |I am )?(?:withdraw(?:ing|n)?|retract(?:ing|ed)?)\b|(?:I|we) (?:still )?need to redo|" + _DISOWNING + ")"
)
# The response says it did not reach an answer: what it marked before is no commitment.
_DISCLAIMER = re.compile(
    r"(?i)\b(?:(?:I|we)(?: still)? (?:could not|couldn't|cannot|can't|was unable to|am unable to|were unable to|"
    r"did not|didn't|have not|haven't|do not|don't|never) (?:(?:actually|fully|really) )?(?:finish|complete|"
    r"have enough|(?:solve|determine|compute|work out|figure out|calculate|find)(?=\s*(?:[.;!,]|$))|"
    r"(?:solve|determine|compute|work out|figure out|calculate|find|get|know) (?:it|this|that|the problem|"
    r"(?:the |a |what |its )?(?:actual |real |correct |final |exact )?(?:answer|value|solution|result|area|total|"
    r"count|quantity|remainder|number)))|(?:I|we) (?:have|had)(?: not|n't)(?: yet| actually| really)? (?:solved|computed|found|"
    r"determined|worked out|finished|completed)|(?:derivation|analysis|computation|result|work) (?:was|is|remains) "
    r"inconclusive|(?:cannot|can't|could not|couldn't) be (?:determined|"
    r"found|computed|solved)|(?:is|remains|stays) (?:still )?(?:undetermined|unknown|unsolved|not determined)|"
    r"(?:not enough|insufficient) information|(?:I'm|I am) not sure (?:of|about) the answer|(?:I will|I'll) stop here|"
    r"unknown to me|(?:I|we) (?:will not|won't|shall not) (?:solve|answer|compute|work out) (?:this|it|the problem)|"
    # the problem asked, after a simplified one: "the actual case is not solved here", "I leave it unresolved"
    r"(?:is|are|was|remains) not (?:solved|worked out|computed|finished|handled)|(?:leave|left) (?:\w+ )?(?:unresolved|"
    r"unsolved)|(?:leave|left) (?:it|this|that|the (?:question|problem|case|rest)) open|(?:I|we) (?:was|were) (?:not|unable) (?:able )?to (?:extend|finish|solve|handle|generali[sz]e)|"
    # an answer that needs a step not taken: "not yet accounting for the break", "still overcounts rotations"
    r"not yet (?:accounting|adjusted|corrected|divided|subtracted|counted|including|included)|(?:still|yet to be) "
    r"(?:over|under)counts?|(?:still )?(?:needs|need) to be (?:divided|adjusted|corrected|reduced)|to be continued|"
    r"(?:I|we) still need to (?:subtract|divide|remove|add|adjust|account|correct|multiply)|before (?:removing|"
    r"subtracting|dividing|conditioning|adjusting|correcting|accounting)|"
    # no value is the answer: "there is no minimum; the infimum 0 is never attained", "I won't state an answer"
    r"there is no (?:minimum|maximum|least|greatest|smallest|largest) (?:value)?|never (?:actually )?(?:attained|achieved|"
    r"reached|reaches|attains)|has no answer|(?:I|we) (?:will not|won't|cannot|can't|decline to|refuse to) (?:state|give|commit to|provide) (?:an|a final|the|any) answer|"
    # only part of the answer determined: "I could only pin down the sum modulo 10000", "I only verified the last digits"
    r"(?:I|we) (?:could|can) only (?:pin down|determine|find|compute|verify|get)|(?:I|we) only (?:verified|pinned down|"
    r"determined|checked) (?:the )?(?:last|first|leading|trailing)\b)"
)
# A response that hands the problem back, asking for what it needs or leaving the last step to the reader,
# commits to nothing in its closing sentence.
_HANDED_BACK = re.compile(r"(?i)\b(?:(?:could|can|would) you (?:please )?(?:tell|clarify|confirm|specify|let me know)|"
                          r"once you (?:tell|confirm|clarify|specify)|which (?:meaning|reading|interpretation) do you|"
                          r"so (?:that )?I can finish|(?:which|that) I leave to (?:you|the reader)|I leave (?:it|this|that|"
                          r"the rest|the last step) (?:to you|to the reader|as an exercise))\b")
_TEXT_GROUP = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_WORD_ANSWER = re.compile(r"[A-Za-z][A-Za-z '-]*")
_SENTENCE_BREAK = re.compile(r"[.!?](?=\s)|\n")
_ANNOUNCED = re.compile(r"(?i)\banswer\**\s*(?:is|would be|will be|should be|[:：])\W{0,12}$")
_FINAL = re.compile(r"(?i)\b(?:final(?:ly)?|in conclusion|ultimately|in the end)\b")
_VALUE_CHAR = re.compile(r"[\d\\]")
_NOT_A_VALUE = re.compile(r"(?i)^(?:found|given|clear|obvious|simple|easy|below|above|as follows|straightforward|"
                          r"correct|right|wrong|incorrect|unclear|unknown|the same|this|that)\b")
_MAX_VALUE_WORDS = 8  # words an answer without digits or math may have ("two thousand and twenty-four")
_REASON = re.compile(r"\s+(?:since|because|as)\s+")  # "it is -3 since x < 0": the value comes first


@dataclass(frozen=True)
class Reading:
    """What a response commits to.

    ``answer`` is the committed value (``None``: nothing committed), ``rule``
    the marker that committed it (a convention, ``answer is``, ``correction``
    or ``final sentence``), ``others`` the other values committed beside it,
    ``why`` a short account when nothing is committed, ``unread`` what the
    reader saw and could not read as the answer (section 5b), else ``""``,
    and ``restated`` the answer said again in another form (section 4d), also
    one of ``others``.
    """

    answer: str | None
    rule: str = ""
    others: tuple[str, ...] = ()
    why: str = ""
    unread: str = ""
    restated: str = ""


@dataclass(frozen=True)
class _Mark:
    start: int  # where the marker starts: its cues are read before this
    end: int  # where the marked value ends
    value: str
    kind: str  # BOXED, HASH, ANSWER_COLON or PHRASE


def read_commitment(response: str, convention: str = BOXED) -> Reading:
    """What ``response`` commits to under the row's ``convention`` (see the module docstring)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown answer convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    text = without_breakdowns(_TAG.sub(lambda m: " " * len(m.group(0)), after_reasoning(visible_text(response))))
    text = accounting_negatives(text)  # "Net profit/(loss): (15)" is -15
    cut = first_unclosed_box(text)
    if cut is not None:
        text = text[:cut]
    clauses = _Clauses(text)
    commitments, cancelled, spans = [], [], []
    marks = _marks(text)
    empty = [m for m in marks if not m.value]
    for mark in (m for m in marks if m.value):
        reason = _cancelled(text, mark, clauses)
        if reason:
            cancelled.append(f"{reason} {mark.value.strip()}")
            spans.append((mark.start, mark.end))
        else:
            commitments.append(mark)
    # Each labelled part is read on its own (a part label cancels a value only when it stands alone).
    parts = _parts(text, convention)
    # The sentence rules below never read a value back out of a cancelled marker.
    text = _blanked(text, spans)
    if parts is not None and (not commitments or commitments[-1].start >= parts[0]):
        return Reading(parts[1], PARTS)
    if not commitments:
        if empty:  # the answer's place was marked and left empty: no sentence stands in for it
            return Reading(None, why="the only marked answer is empty (an empty box or answer line, or a placeholder)")
        closing_text = _without_digression(_without_sign_off(_REFERENCE_LIST.sub("", text)))
        sentence = _without_remark(closing_list(closing_text) or last_sentence(closing_text) or "")
        disclaimer = _DISCLAIMER.search(sentence)
        if disclaimer:  # "... the candidate value 80; I have not computed the cost myself."
            return Reading(None, why=f"disclaimed ({disclaimer.group(0)!r})")
        closing = _closing_value(sentence) if cut is None else None  # the closing sentence is the one cut off
        handed_back = _HANDED_BACK.search(response)  # a question asked back is removed from ``text``
        if closing and handed_back:
            return Reading(None, why=f"the response hands the problem back ({handed_back.group(0)!r})")
        if closing:
            first, again = _restatement(sentence)
            closing = (sentence_value(first) or closing) if again else closing  # "is 12, i.e. 12": the first
            listed = _listed_option(text[: text.rfind(sentence)], closing)
            return Reading(closing, CLOSING, others=tuple(dict.fromkeys(_restated(sentence) + ([again] if again else [])
                                                                        + listed)),
                           unread=_unread_ending(response, blocks_only=True) or _part_of_larger(sentence, closing),
                           restated=again)
        why = _nothing(cancelled, cut)
        return Reading(None, why=why, unread=_unread_ending(response) if why == "no answer" else "")
    group, superseding = _last_group(text, commitments)
    tail = text[group[-1].end :]
    disclaimer = _DISCLAIMER.search(tail)
    if disclaimer:
        return Reading(None, why=f"disclaimed ({disclaimer.group(0)!r}): " + ", ".join(m.value.strip() for m in group))
    cue = _CORRECTION_CUE.search(tail)
    corrected = _corrected_value(tail[cue.start() :]) if cue else None
    if corrected:
        return Reading(corrected, CORRECTION)
    # A word answer ("No. It is incorrect.") may be followed by words that sound like a retraction.
    if not all(_is_word_answer(m.value) for m in group) and _retracted(tail, cue):
        return Reading(None, why="retracted: " + ", ".join(m.value.strip() for m in group))
    chosen = _primary(group, convention)
    answer, again = _restatement(chosen.value.strip())
    said = _SAID_AGAIN_AFTER.match(text, chosen.end) if CHOICE_LETTER.match(answer) and not again else None
    if said:  # "$\\boxed{B}$, i.e. 30 stickers": the letter's value said again, checked against the options listed
        again = said.group("value")
    answer = _stated(answer) if chosen.kind in (HASH, ANSWER_COLON) else answer
    values = [_stated(m.value.strip()) if m.kind in (HASH, ANSWER_COLON) else m.value.strip()
              for m in group if m is not chosen and not _same(m.value, chosen.value)]
    # A letter's value said again is the same answer as the letter, unless the options listed give it another.
    others = tuple(dict.fromkeys(values + _restated(_line_from(text, chosen.start)) + ([again] if again and not said else [])
                                 + _listed_option(text[: chosen.start], f"({answer}) {again}" if said else answer)))
    # A phrase that corrects a marked answer ("Answer: 11 ... No, the answer is 13") is a correction.
    rule = CORRECTION if superseding and chosen.kind == PHRASE else chosen.kind
    return Reading(answer, rule, others, restated=again)


CHOICE_LETTER = re.compile(r"^\(?[A-E]\)?$")
_SAID_AGAIN_AFTER = re.compile(r"[\s$*}]*[,;(—–]?\s*(?:i\.e\.|that is|namely)\s*[,:]?\s*\$?(?P<value>[-−]?\d[\d,]*(?:\.\d+)?)")
_LETTER_AND_VALUE = re.compile(r"^(?:\\text\s*\{\s*)?\(([A-E])\)\s*\}?\s*\$?([^\s$]+?)\$?[.\s]*$")


def _listed_option(before: str, answer: str) -> list[str]:
    """The value the options listed before an answer "(D) 18" give its letter, when another ("(D) 20"): the
    letter and the value written beside it are two answers (section 4); else ``[]``."""
    chosen = _LETTER_AND_VALUE.match(answer)
    if chosen is None:
        return []
    listed = re.findall(r"\(\s*" + chosen.group(1) + r"\s*\)\s*\$?([^\s$(),;]+)", before)
    return [listed[-1]] if listed and listed[-1].rstrip(".") != chosen.group(2) else []


def _stated(value: str) -> str:
    """The value an answer line commits to. One that holds a sentence ("Answer: the count is 4·3·2 = 24.",
    "#### The probability is $\\frac{3}{4}$.") commits to the value the sentence states as its result: the
    closing-sentence rule's value, introduced by "is", "=", "gives", ... (section 2); any other is itself."""
    note = _TRAILING_NOTE.search(value)
    head = value[: note.start()] if note else ""
    if note and (len(_PROSE_WORDS.findall(note.group(0))) >= 2 or _CONFIDENCE.match(note.group(0))) \
            and head.strip(" *$") and not _DANGLING.search(head):
        value = head.rstrip()  # "$x = 4$ (the candidate $x=-1$ is extraneous)", "42 (confidence: 95%)"
    if len(_PROSE_WORDS.findall(_VALUE_HEAD.match(value).group(0))) < 2:
        return value
    stated = sentence_value(value)
    at = value.rfind(stated) if stated and _VALUE_CHAR.search(stated) else -1
    if at <= 0 or not _RESULT_BEFORE.search(value[:at].rstrip(" \t$`*")):
        return value
    return stated


def _restatement(value: str) -> tuple[str, str]:
    """``(value, "")``, or ``(A, B)`` when ``value`` says its answer twice, "A, i.e. B" (section 4d):
    "`(expt 2 10)`, i.e. 1024", "Mod(2, 7), i.e. the remainder is 2" (a sentence's stated value)."""
    match = _RESTATEMENT.search(value)
    if match is None or not _VALUE_CHAR.search(value[: match.start()]):
        return value, ""
    again = match.group("value").strip(" $*`")
    if _PROSE_WORDS.search(_VALUE_HEAD.match(again).group(0)):
        again = sentence_value(again) or ""
    return (value[: match.start()].strip(), again.strip(" $*`")) if _VALUE_CHAR.search(again) else (value, "")


def _parts(text: str, convention: str) -> tuple[int, str] | None:
    """``(where the parts start, "(a) v; (b) w")`` when ``text`` answers labelled parts, each committing
    to one value (read by these same rules within the part), else ``None``."""
    parts = labelled_parts(text)
    if parts is None:
        return None
    values, marked = [], 0
    for _, part in parts:
        reading = read_commitment(part, convention)
        if reading.answer is None or reading.others:
            return None
        values.append(reading.answer)
        marked += reading.rule != CLOSING
    if marked == 1 and len(parts) > 1:
        return None  # one part marked ("part (b), the one asked, is \\boxed{8}"): the mark says which is the answer
    return parts[0][0], "; ".join(f"({chr(ord('a') + i)}) {value}" for i, value in enumerate(values))


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by as many NULs: offsets stay valid, and no sentence
    rule reads a value (or a word answer) across one."""
    parts, at = [], 0
    for start, end in spans:
        start = max(start, at)
        parts += [text[at:start], "\0" * max(0, end - start)]
        at = max(at, end)
    return "".join(parts) + text[at:]


def alternatives(answer: str) -> list[str]:
    """The values a hedged answer offers ("7 or 8" -> ["7", "8"]); one item when it offers one."""
    parts = [p.strip() for p in re.split(r"\s+or\s+|\\text\{\s*or\s*\}", answer)]
    return parts if len(parts) > 1 and all(parts) else [answer]


# -- section 6: undetermined symbols ---------------------------------------------------------------
_SYMBOL = r"(?:[A-Za-z]|\\(?:alpha|beta|gamma|delta|epsilon|varepsilon|lambda|mu|nu|kappa|rho|sigma|tau|omega|phi|psi|chi|theta|xi|eta|zeta))"
_SYMBOL_TOKEN = re.compile(r"(?<![A-Za-z\\])" + _SYMBOL + r"(?![A-Za-z])")
_TEXT_MACRO = re.compile(r"\\(?:text|textbf|mathrm|operatorname|mbox)\s*\{[^{}]*\}|\\[A-Za-z]+")


def _introduced(symbol: str) -> re.Pattern[str]:
    s = r"\$?\s*" + re.escape(symbol) + r"(?![A-Za-z])\s*\$?"
    return re.compile(r"(?i)(?:\b(?:let|where|with|if)\s+" + s + r"\s+(?:be|is|are|denotes?|stands? for)\b|"
                      r"(?<![\w\\])" + s + r"\s+is\s+(?:a|an|the|some)\s+(?:\w+\s+){0,3}?(?:constant|parameter|"
                      r"number|variable|unknown|time|length|amount|count|value|factor|quantity)\b|"
                      r"\b(?:constant|parameter|factor|unknown|variable)\s+" + s + r")")


# A set-builder answer binds its variable ("\\{15k+8 : k \\in \\mathbb{Z}\\}"); a gold that is a residue class or
# a set is itself written over a parameter.
_SET_BUILDER = re.compile(r"\\\{[^{}]*(?::|\\mid|\|)")
_CLASS_GOLD = re.compile(r"\\equiv|\\pmod|\\bmod|\bmod\b|≡|\\\{")


def _ranged(symbol: str) -> re.Pattern[str]:
    s = r"(?<![A-Za-z\\])" + re.escape(symbol) + r"(?![A-Za-z])"
    return re.compile(s + r"\s*(?:\\in|∈)\s*(?:\\mathbb\s*\{?\s*[ZNQ]|\\mathbf\s*\{?\s*[ZN]|[ℤℕℚ])|"
                      r"(?i:\b(?:for|with) (?:any|some|all|every|each)?\s*(?:integers?|natural numbers?|whole numbers?)\s*\$?)" + s)


def undetermined_symbols(response: str, answer: str, gold: str) -> tuple[str, ...]:
    """The symbols of ``answer`` that ``response`` introduces as unknowns and never determines, and that
    ``gold`` is not written in (section 6)."""
    found = []
    for token in dict.fromkeys(m.group(0) for m in _SYMBOL_TOKEN.finditer(_TEXT_MACRO.sub(
            lambda m: m.group(0) if _SYMBOL_TOKEN.fullmatch(m.group(0)) else " ", answer))):
        determined = re.compile(r"(?<![A-Za-z\\])" + re.escape(token) + r"(?![A-Za-z])\s*\$?\s*=\s*\$?\s*-?\d")
        in_gold = re.search(r"(?<![A-Za-z\\])" + re.escape(token) + r"(?![A-Za-z])", gold)
        if in_gold:
            continue
        # A parameter the answer itself ranges over ("12 + 30k, k \in \mathbb{Z}") stays free whatever example
        # of it the response works out ("for instance k = 1 gives ...").
        ranged = _ranged(token).search(answer) and not _SET_BUILDER.search(answer) and not _CLASS_GOLD.search(gold)
        if ranged or (_introduced(token).search(response) and not determined.search(response)):
            found.append(token)
    return tuple(found)


# -- section 2: markers ------------------------------------------------------------------------
def _marks(text: str) -> list[_Mark]:
    """The marked values of ``text`` in order; a marker inside a line marker's value is part of it.

    ``Answer: \\boxed{5}``, ``#### Answer: 5`` and ``Answer: the answer is 5``
    are each one line mark with the value 5; "the answer is \\boxed{5}" is
    the box.
    """
    boxes = [_Mark(s, e, v, BOXED) for s, e, v in joined_boxes(text)[-MAX_MARKERS:]]
    boxes = sorted(boxes + [_Mark(s, e, "", BOXED) for s, e, v in boxed_groups(text)[-MAX_MARKERS:] if is_blank(v)],
                   key=lambda m: m.start)
    found_lines = sorted((_line_mark(text, m, kind)
                          for kind, pattern in ((HASH, _HASH), (ANSWER_COLON, _ANSWER_COLON))
                          for m in _last(pattern.finditer(text))), key=lambda m: m.start)
    phrases = []
    for m in _last(_PHRASE.finditer(text)):
        stated = first_sentence(text[m.end() : m.end() + 4 * _WINDOW])
        if _states_a_value(stated):
            phrases.append(_Mark(m.start(), m.end() + len(stated), stated, PHRASE))
    lines: list[_Mark] = []
    for line in found_lines:
        if lines and lines[-1].start < line.start < lines[-1].end:
            continue
        lines.append(line)
    marks, inside = [], set()
    for line in lines:
        inner = [m for m in boxes + phrases + found_lines if line.start < m.start < line.end]
        inside.update(id(m) for m in inner)
        inner_boxes = [m for m in inner if m.kind == BOXED]
        inner_phrases = [m for m in inner if m.kind == PHRASE]
        if inner_boxes:
            line = _Mark(line.start, inner_boxes[-1].end, inner_boxes[-1].value, line.kind)
        elif inner_phrases:
            line = _Mark(line.start, line.end, inner_phrases[-1].value, line.kind)
        elif inner:
            line = _Mark(line.start, line.end, inner[-1].value, line.kind)
        marks.append(line)
    # "the answer is \\boxed{5}" is the box.
    marks += [p for p in phrases if id(p) not in inside and not any(p.start < b.start < p.end for b in boxes)]
    marks += [b for b in boxes if id(b) not in inside]
    # A box inside a box or an answer line is part of its value (\boxed{\boxed{42} - 1} commits to 41); a phrase
    # whose value holds a box leaves it to the box.
    marks = [_Mark(m.start, m.end, _unboxed(m.value), m.kind) if "\\boxed" in m.value or "\\fbox" in m.value else m
             for m in marks if m.kind != PHRASE or not boxed_groups(m.value)]
    # An empty box or answer line is an empty commitment; a phrase that states nothing marks nothing.
    marks = [m if not is_blank(m.value) else _Mark(m.start, m.end, "", m.kind) for m in marks
             if not (m.kind == PHRASE and is_blank(m.value))]
    return sorted(marks, key=lambda m: m.start)[-MAX_MARKERS:]


def _line_from(text: str, start: int) -> str:
    """``text`` from ``start`` to the end of that line."""
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def _unboxed(value: str) -> str:
    """``value`` with each box in it replaced by its content, at every depth."""
    while groups := boxed_groups(value):
        for start, end, content in reversed(groups):
            value = value[:start] + "{" + content + "}" + value[end:]
    return value


def _line_mark(text: str, match: re.Match[str], kind: str) -> _Mark:
    """The mark of a line marker; an empty ``####`` or ``Answer:`` line (a heading) marks the line under it
    when that is a bare value."""
    end, value = match.end(), match.group(1)
    while LAYOUT_LINE.match(value):  # org "* Answer" over "#+begin_quote": the value is inside the block
        below = _NEXT_TEXT_LINE.match(text, end)
        if below is None:
            break
        end, value = below.end(), below.group(1)
    if is_blank(value):
        below = _NEXT_LINE_VALUE.match(text, end)
        if below is not None and not is_blank(below.group(1)) and not _PROSE_WORD.search(below.group(1)):
            return _Mark(match.start(), below.end(), below.group(1), kind)
    # "Answer: $\\frac13$ (confidence: moderate). The alternative $\\frac14$ would only arise if ...": the
    # answer is the line's first sentence; the sentences after it are read as what follows the answer.
    head = first_sentence(value)
    if len(head) < len(value) and _NEXT_SENTENCE.match(value, len(head)) and _VALUE_CHAR.search(head):
        return _Mark(match.start(), end - len(value) + len(head), head, kind)
    return _Mark(match.start(), end, value, kind)


def _states_a_value(stated: str) -> bool:
    # "the answer is found by ..." states nothing; "... is 12", "... is $x$", "... is two thousand" do;
    # "whatever the answer is, ..." ends its clause before any value.
    if stated.lstrip(" *")[:1] in (",", ";"):
        return False
    words = stated.strip(" .*").split()
    return bool(_VALUE_CHAR.search(stated)) or "$" in stated or (
        0 < len(words) <= _MAX_VALUE_WORDS and not _NOT_A_VALUE.match(stated.strip(" *")))


def _last(matches) -> list[re.Match[str]]:
    found = list(matches)
    return found[-MAX_MARKERS:]


# -- section 3: what cancels a marked value -----------------------------------------------------
class _Clauses:
    """Where the clauses of ``text`` start, to read the cues of the clause a marker stands in."""

    def __init__(self, text: str) -> None:
        self._breaks = [m.end() for m in _CLAUSE_BREAK.finditer(text)]

    def before(self, text: str, at: int) -> str:
        i = bisect.bisect_right(self._breaks, at) - 1
        start = self._breaks[i] if i >= 0 else 0
        return text[max(start, at - _WINDOW) : at]


def _cancelled(text: str, mark: _Mark, clauses: _Clauses) -> str | None:
    """Why ``mark`` is mentioned rather than committed, or ``None`` when it is a commitment."""
    before = clauses.before(text, mark.start)
    value = mark.value
    after = text[mark.end : mark.end + _AFTER]
    if _NEGATED_JUST_BEFORE.search(before) or _NEGATED_VALUE.match(value) or _DECLARED_WRONG.match(after):
        return "negated"
    if _NOT_EQUAL_JUST_BEFORE.search(before):
        return "negated"
    if (_BOUND_JUST_BEFORE.search(before) or _RELATION_JUST_BEFORE.search(before) or _BOUND_VALUE.match(value)
            or _BOUND_AFTER.match(after) or _BOUND_IN_VALUE.search(value) or _MARGIN.search(value + after[:20])):
        return "bounded"
    note = _TRAILING_NOTE.search(value)
    if (_QUALIFIED_IN_VALUE.search(value) or _DOUBTED_AFTER.match(after) or _QUESTIONED_EQUALITY.search(before[-20:] + value)
            or (note and _DOUBTED_NOTE.search(note.group(0)))):
        return "doubted"  # "36?", "x \\overset{?}{=} 4", "Answer: 12 (a conjecture only)"
    if _DISOWNED_IN_VALUE.search(value) or _DISOWNED_BEFORE.search(_sentence_before(text, mark.start)):
        return "retracted"  # "**Final answer: 9** [auto-filled from template; ignore]", "Boxing 6 for formatting purposes only; ..."
    conditioned = _CONDITIONED_AFTER.match(after) or (mark.kind in (HASH, ANSWER_COLON)
                                                      and _CONDITION_IN_VALUE.search(_CONTRASTED_NOTE.sub("", value)))
    if conditioned and not _AFFIRMED.search(value + " " + first_sentence(text[mark.end : mark.end + _WINDOW])):
        return "conditioned"
    if _echoed_quote(text[: mark.start], value, _sentence_before(text, mark.start)) or _GIVEN.search(value) or _GIVEN.match(after.lstrip(" $*")):
        return "echoed"
    if _CONDITION_OPENER.match(_opening_clause(text, mark.start)):
        return "conditioned"
    # "If the problem asked for the product, the answer would be 180": a conditional main clause.
    # "answer would be"; an answer line's words before a value it took from a phrase or box inside it
    lead = before + text[mark.start : max(mark.start, mark.end - len(value))]
    if _WOULD.search(lead) and _IF.search(_sentence_before(text, mark.start)):
        return "conditioned"
    if _LISTED_VALUE.match(value):
        return "listed"
    if _is_reference(before, value):
        return "a reference"
    if _CHANGED_PROBLEM.search(_changed_problem_scope(text, mark.start) + " " + value):
        return "conditioned"  # a simplified or partial version of the problem
    if _CANCELS["addressed to the grader"].search(_sentence_before(text, mark.start)):
        return "addressed to the grader"  # "Dear grader, the answer is 17": the whole sentence is addressed
    if _FORMAT_EXAMPLE.search(_introduced_sentence(text, mark.start)) or _ANSWER_FORM.match(value):
        return "an example of the format"  # "Template: the final answer is \\boxed{8}": shown, not answered
    # "the answer is maybe 5": the words before the value qualify it too, and so do the words of the
    # phrase itself ("the tempting answer is 9").
    return _clause_cue(lead) or _clause_cue(_VALUE_HEAD.match(value).group(0))


def _echoed_quote(before: str, value: str, last_sentence: str) -> bool:
    """Whether ``value`` is in quotation marks and either its words were quoted before it or the sentence
    before it cites the problem ("The problem says so. #### "12""): an echo. Quotation marks around an
    answer no one quoted or cited before are only the answer's marks."""
    from rewardsmith.reward_fns.math_verifier.normalize import unquoted  # normalize is heavy: only for quotes

    inner = unquoted(value.strip(" $*"))
    if inner == value.strip(" $*"):
        return False
    cited = _CANCELS["echoed"].search(last_sentence) or _CANCELS["echoed"].search(_last_sentence(before))
    return not inner or bool(cited) or any(inner in quoted for quoted in _QUOTATION.findall(before))


def _last_sentence(text: str) -> str:
    """The last sentence of ``text`` (what a marker on the next line follows)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", text[-_WINDOW:]) if s.strip()]
    return sentences[-1] if sentences else ""


def _is_reference(before: str, value: str) -> bool:
    """Whether ``value`` is a label rather than a value: only references ("see Step 12", "[12]"), or a bare
    number right after a reference word ("equation (12)")."""
    plain = _TEXT_GROUP.sub(r"\1", value)
    if _REFERENCE.search(plain) and not _VALUE_CHAR.search(_REFERENCE.sub("", plain)):
        return True
    return bool(re.fullmatch(r"[\s$(]*\d+(?:\.\d+)*[\s$)]*\.?", plain)) and bool(_REFERENCE_JUST_BEFORE.search(before))


def _changed_problem_scope(text: str, at: int) -> str:
    """The part of the sentence before ``at`` since the response last turned back to the problem asked
    ("but", "now", "in general", "for the actual ...", a ";")."""
    sentence = _sentence_before(text, at)
    return sentence[max((m.end() for m in _BACK_TO_THE_PROBLEM.finditer(sentence)), default=0) :]


def _opening_clause(text: str, at: int) -> str:
    """The part of the sentence before ``at`` since its start or its last contrast ("but", "so", ...)."""
    window = text[max(0, at - _WINDOW) : at]
    return window[max((m.end() for m in _SENTENCE_OR_CONTRAST.finditer(window)), default=0) :]


def _sentence_before(text: str, at: int) -> str:
    window = text[max(0, at - _WINDOW) : at]
    return window[max((m.end() for m in _SENTENCE_BREAK.finditer(window)), default=0) :]


def _introduced_sentence(text: str, at: int) -> str:
    """The sentence before ``at``, with the one before it when that one introduces it with a colon
    ("Example of the required format:" on the line above)."""
    sentence = _sentence_before(text, at)
    opening = text[: at - len(sentence)].rstrip()
    if opening.endswith(":"):
        return _sentence_before(text, len(opening)) + " " + sentence
    return sentence


def _clause_cue(clause: str) -> str | None:
    return next((name for name, cue in _CANCELS.items() if cue.search(clause)), None)


def _nothing(cancelled: list[str], cut: int | None) -> str:
    if cancelled:
        return "no committed answer; mentioned only: " + "; ".join(cancelled[-5:])
    return "cut off inside a box" if cut is not None else "no answer"


# -- section 4: order and corrections -----------------------------------------------------------
def _last_group(text: str, commitments: list[_Mark]) -> tuple[list[_Mark], bool]:
    """The last group of commitments, and whether it supersedes earlier ones."""
    group, superseding = [commitments[0]], False
    strongest = _strength(text, commitments[0])
    for previous, mark in zip(commitments, commitments[1:]):
        strength = _strength(text, mark)
        if _CORRECTION_CUE.search(text, previous.end, mark.start) or strength > strongest:
            group, strongest, superseding = [], strength, True
        group.append(mark)
        strongest = max(strongest, strength)
    return group, superseding


def _strength(text: str, mark: _Mark) -> int:
    """How firmly a commitment is marked: 3 final-marked, 2 announced as the answer, 1 a bare box or ``####``."""
    window = text[max(0, mark.start - _WINDOW) : mark.start]
    sentence_start = max((m.end() for m in _SENTENCE_BREAK.finditer(window)), default=0)
    if _FINAL.search(window, sentence_start):
        return 3
    return 2 if mark.kind in (ANSWER_COLON, PHRASE) or _ANNOUNCED.search(window, sentence_start) else 1


def _primary(group: list[_Mark], convention: str) -> _Mark:
    for kind in (convention, *(c for c in CONVENTIONS if c != convention), PHRASE):
        found = [m for m in group if m.kind == kind]
        if found:
            return found[-1]
    return group[-1]


def _same(value: str, other: str) -> bool:
    plain = lambda v: re.sub(r"[\s$*]|\.$", "", v)  # noqa: E731
    return plain(value) == plain(other)


def _is_word_answer(value: str) -> bool:
    return bool(_WORD_ANSWER.fullmatch(_TEXT_GROUP.sub(r"\1", value).strip(" $*.")))


_CLOSERS = re.compile(r"^(?:\s|\$|\*|\\[\])]|\))*")


def _retracted(tail: str, cue: re.Match[str] | None) -> bool:
    """Whether ``tail`` (what follows the last commitment) withdraws it: a retraction with no number
    before it (one after a number is about that number), after a correction cue or in the next sentence."""
    retraction = _RETRACTION.search(tail)
    if retraction is None or numbers(tail[: retraction.start()]):
        return False
    opening = _CLOSERS.match(tail).end()  # blank lines and closing marks after an answer start no sentence
    return (cue is not None and cue.start() <= retraction.start()) or \
        len(_SENTENCE_BREAK.findall(tail, opening, retraction.start())) <= 1


def _corrected_value(tail: str) -> str | None:
    """The value a correction ends on: the closing sentence must end on a single new value.

    "Wait, no: it is 1/3." commits to 1/3; a check that merely mentions
    numbers ("Wait, 6 of the 10 cases ...") or states none changes nothing.
    """
    sentence = _REASON.split(last_sentence(tail) or "", maxsplit=1)[0]
    if not sentence or _clause_cue(sentence):
        return None
    value = sentence_value(sentence)
    if not value or not _VALUE_CHAR.search(value) or value not in sentence:
        return None
    if "=" not in sentence and not math_spans(sentence) and len(set(numbers(sentence))) > 1:
        return None  # "which is 5 out of 10 options": no single new value
    after = sentence.rsplit(value, 1)[1].strip(" $.!")
    return value if len(after.split()) <= MAX_WORD_ANSWER and not _VALUE_CHAR.search(after) else None


# -- section 4c: restatements ------------------------------------------------------------------
_NUMBER_WORD = (r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
                r"thousand|million|billion|dozens?|score|gross|halves|half|thirds?|quarters?|fourths?|fifths?|sixths?|sevenths?|eighths?|"
                r"ninths?|tenths?)")
_NUMBER_WORDS = rf"(?:(?:negative|minus)\s+)?{_NUMBER_WORD}(?:(?:[\s-]+|,\s+|\s+and\s+|\s+a\s+){_NUMBER_WORD})*"
# A value restated in words: after it, linked by "=", "(", a dash or "that is" ("27 — that is, twenty-nine",
# "2^{10} = one thousand forty-two"); or before a parenthesis that holds it ("three-fifths ($\frac{3}{4}$)").
_RESTATED = re.compile(rf"(?i)(?:[\d}}$)]\s*(?:[=≈(—–]|,)\s*(?:(?:that is|i\.e\.|namely|in words)\s*[,:]?\s*)?"
                       rf"|(?:\bthat is|\bi\.e\.|\bnamely)\s*[,:]?\s*)(?P<after>{_NUMBER_WORDS})\b"
                       rf"|\b(?P<before>{_NUMBER_WORDS})\s*\(\s*\$*\s*[-−\d\\]")


def _restated(commitment: str) -> list[str]:
    """The values a commitment restates in words beside its value (section 4c): each is committed too, so one
    that differs makes two different answers."""
    return [m.group("after") or m.group("before") for m in _RESTATED.finditer(commitment[:_WINDOW])]


# -- section 5: no marker -----------------------------------------------------------------------
_OPERATOR_BESIDE = "/*^(√π×÷·_+-−"  # a value next to one of these is an operand of a larger expression
_FUNCTION_BEFORE = re.compile(r"(?i)(?<![A-Za-z])(?:" + "|".join(sorted(KNOWN_FUNCTIONS | {"sqrt", "root", "sup", "sub", "over"}))
                              + r")\s*$")
# Words and signs that introduce a sentence's result ("so 12", "gives 12", "= 12"): one of several numbers
# after them is the value the sentence states.
_RESULT_BEFORE = re.compile(r"(?i)(?:[=:≈→]|\b(?:is|are|was|were|be|equals?|gives?|get|gets|got|makes?|total(?:s|ling)?|"
                            r"so|thus|hence|therefore|becomes?|yields?|leaves?|remains?|comes? to|answer|has|have|had)\b)$")
# A closing sentence that opens on its value and then says what the value is: "18 is how many stamps Mia has
# left after giving 7 to Leo", "Eleven — that's the number of balloons left after 3 popped", "$64 is what
# Carlos pays for the 4 tickets": the numbers after it describe the value.
_FRONTED = re.compile(r"(?i)^[\s*_]*(?:\$\s*)?(?P<value>[-−]?\d[\d,]*(?:\.\d+)?|" + _NUMBER_WORDS + r")[\s*_]*"
                      r"(?:[—–:-]+\s*that(?:'s|’s| is)|is|are|was)\s+(?:exactly\s+|precisely\s+)?(?:the|what|how)\b")
_NONEXISTENT = re.compile(r"(?i)[\s$)}]*(?:does not exist|doesn't exist|is undefined|is not defined|diverges)\b")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# A pleasantry or an offer opening a sentence after the answer.
# A remark on how sure the response is states no value either ("I'm fairly confident (~85%)", "Confidence: 90%"),
# nor does a letter's closing and the signature under it ("Best regards,\nMs. Patel\nRoom 214 | ext. 3307").
_SIGN_OFF = re.compile(r"(?i)(?:^|(?<=[.!?\n])\s*)(?:I hope (?:this|that|it) helps|hope (?:this|that) helps|if you(?:'d| would)?"
                       r"(?: also| ever| still)? (?:like|want|prefer|need)|feel free|let me know|" + OFFER + r"|"
                       r"(?:I'm |I am )?happy to help|glad (?:I could|to) help|good luck|"
                       r"happy (?:learning|studying)|confidence\b\W|(?:I'm|I am) (?:\w+ )?(?:confident|sure|certain)(?=\s*[(;,.~])|"
                       r"(?:I'm|I am) (?:about |roughly |~)?\d+\s*% (?:confident|sure|certain)|"
                       r"(?:(?:best|kind|warm|warmest)(?: regards| wishes)?|regards|sincerely|yours(?: truly| sincerely)?|"
                       r"cheers|talk soon|all the best|thanks again)(?=[,!]?[ \t]*\n))\b")
# The sources listed under an answer ("[1] timeanddate.com, \"Leap Year\"", under "Sources:"): no sentence of it.
_REFERENCE_LIST = re.compile(r"(?:\n[ \t]*(?:\**(?:sources?|references?|citations?)\**:?\**)?[ \t]*(?=\n))?"
                             r"(?:\n[ \t]*\[\d{1,3}\][ \t]+[^\n]*)+\s*$", re.IGNORECASE)
_TRAILING_REMARK = re.compile(r"\s\(((?:[^()]|\([^()]*\))*)\)[\s.!]*$")
_WORD_IN_REMARK = re.compile(r"\b[A-Za-z]{2,}\b")
_REMARK_WORDS = 4  # words of prose that make a parenthesis a remark, not a value or a label
_DIGRESSION = re.compile(r"(?i)^[*_#>\s]*(?:fun fact|trivia|interesting(?:ly)?|bonus|side note|aside|as an aside|"
                         r"(?:as an )?extension|more generally|in general|generali[sz]ing|for comparison|by comparison|"
                         r"what if|if instead|\(if\b|practice|try (?:these|this)|(?:study )?tips?|similar problems?|"
                         r"related problems?|for example, (?:a|an|with)\b|double-?check(?:ing)?\b|let me (?:double-?)?check|"
                         r"sanity check|check(?:ing)?\s*:|verification|verifying)")
# A doubt raised and dismissed: the answer before it is kept ("So my count above stands.", "I'll keep my answer").
_REAFFIRMED = re.compile(r"(?i)\b(?:(?:my|the|our) (?:\w+ ){0,2}(?:answer|count|result|calculation|computation|value|total)"
                         r"(?: above)? (?:still )?(?:stands|holds|remains|stays)|(?:I'll|I will|I) keep (?:my|the) (?:original )?"
                         r"(?:answer|result|count|value)|(?:answer|result) stays|original answer (?:stands|holds)|"
                         r"my answer holds)\b")
_SIGN_OFF_WINDOW = 600  # characters: a sign-off closes a response
_DIGIT = re.compile(r"\d")
_FENCE = re.compile(r"^(?:```|~~~)")
_MAX_ANSWER_LINE = 60  # characters: a last line this short ends a block or an answer line, not prose cut off


def _position(sentence: str, value: str) -> int:
    """Where ``value`` last stands in ``sentence`` as a whole (the 1 of "1 left", not of "41"); else its last
    occurrence, or -1."""
    whole = [m.start() for m in re.finditer(r"(?<![\d.,])" + re.escape(value) + r"(?![\d])", sentence)]
    return whole[-1] if whole else sentence.rfind(value)


# Math delimiters and emphasis around a closing value are no operators: "is \\(\\frac{1}{2}\\).", "is **$5$**".
_OPENING_DELIMITERS = re.compile(r"(?:\\[(\[]|[ \t$`*])+$")
_CLOSING_DELIMITERS = re.compile(r"^(?:\\[)\]]|[ \t$`*])+")


def _part_of_larger(sentence: str, value: str) -> str:
    """How the closing ``sentence``'s ``value`` is only part of what it writes (section 5b), else ``""``."""
    at = _position(sentence, value)
    if at < 0 or not _VALUE_CHAR.search(value) or value in (_fronted(sentence), emphasised_number(sentence)):
        return ""  # words ("does not exist") are no part of an expression; a fronted or bold value is the result
    before = _OPENING_DELIMITERS.sub("", sentence[:at])
    after = _CLOSING_DELIMITERS.sub("", sentence[at + len(value) :])
    attached = sentence[at + len(value) : at + len(value) + 1] if after.startswith("\\") else ""  # "9\\pi"
    if (before and before[-1] in _OPERATOR_BESIDE) or (after and after[0] in _OPERATOR_BESIDE) \
            or _FUNCTION_BEFORE.search(before) or attached == "\\":
        return f"{value!r} is part of the expression {sentence.strip()[:80]!r}"
    drawn = "=" in before and RESULT_CLAUSE.search(before.rsplit("=", 1)[1])  # "= $95, so she still needs $5"
    if candidate_numbers(sentence[:at] + " " + sentence[at + len(value) :]) and not _RESULT_BEFORE.search(before) and not drawn:
        return f"{value!r} is one of several numbers in {sentence.strip()[:80]!r}, none stated as the result"
    return ""


def _unread_ending(response: str, blocks_only: bool = False) -> str:
    """The response's closing paragraph when it holds a number in a form no marker or sentence rule reads
    (section 5b): a closed code block, or (unless ``blocks_only``: the closing sentence was read) a
    paragraph that ends in a short line (an answer line, a block's closing ``.EN``); else ``""``."""
    text = after_reasoning(generated_text(response)).rstrip()
    if (text.count("```") + text.count("~~~")) % 2:
        return ""  # cut off inside a code block: read whole
    ending = _PARAGRAPH_BREAK.split(text)[-1].strip()
    last_line = ending.splitlines()[-1].strip() if ending else ""
    if not re.search(r"\d", ending):
        return ""
    if _FENCE.match(last_line) and TEXT_FENCE.match(ending.splitlines()[0].strip()):
        return ""  # ```math, ```{admonition}: read as text (answer_extraction.visible_text)
    if _FENCE.match(last_line) or (len(last_line) <= _MAX_ANSWER_LINE and not blocks_only):
        return f"the response ends in {ending[-80:]!r}, which no rule reads as an answer"
    return ""


def _without_digression(text: str) -> str:
    """``text`` without the paragraphs after its answer that open as a digression ("Fun fact: ...", "More
    generally, ...", "As an extension: ...", "(If one counted the sides too, ...)") or a check, with no
    correction in them, or that keep the answer before them after a doubt ("... so my count above stands"):
    their numbers answer other questions. Only when a paragraph before them states a number."""
    paragraphs = _PARAGRAPH_BREAK.split(text.rstrip())
    kept = len(paragraphs)
    while kept > 1 and ((_DIGRESSION.match(paragraphs[kept - 1].strip()) and not _CORRECTION_CUE.search(paragraphs[kept - 1]))
                        or _REAFFIRMED.search(paragraphs[kept - 1])):
        kept -= 1
    if kept == len(paragraphs) or not _DIGIT.search(paragraphs[kept - 1]):
        return text
    return "\n\n".join(paragraphs[:kept])


def _without_sign_off(text: str) -> str:
    """``text`` up to a closing pleasantry or offer after a number ("I hope this helps!", "If you'd like, I
    can also show it as a decimal (0.4)."): what follows it answers no question asked (section 5)."""
    for match in _SIGN_OFF.finditer(text, max(0, len(text) - _SIGN_OFF_WINDOW)):
        if _DIGIT.search(text, 0, match.start()):
            return text[: match.start()]
    return text


def _fronted(sentence: str) -> str | None:
    """The value the closing ``sentence`` opens on and then describes (section 5), when nothing after it doubts,
    attributes or conditions it ("18 is what a common mistake gives", "18 is the answer if each box holds 6")."""
    fronted = _FRONTED.match(sentence)
    if not fronted:
        return None
    rest = sentence[fronted.end("value") :]
    return None if _clause_cue(rest) or _CONDITION_IN_VALUE.search(rest) else fronted.group("value")


def _without_remark(sentence: str) -> str:
    """``sentence`` without a remark in parentheses that ends it after its value ("Center: $(-2, 3)$ (I kept the
    order in which the squares were completed; ...)"): prose about the value, not another value. A remark that
    doubts, corrects or hedges stays (it qualifies the value)."""
    remark = _TRAILING_REMARK.search(sentence)
    if remark is None or len(_WORD_IN_REMARK.findall(remark.group(1))) < _REMARK_WORDS:
        return sentence
    inside, before = remark.group(1), sentence[: remark.start()]
    if _clause_cue(inside) or _CORRECTION_CUE.search(inside) or _DOUBTED_NOTE.search(inside) or HEDGE_WORDS.search(inside):
        return sentence
    value = sentence_value(before)
    return before if value and _VALUE_CHAR.search(value) else sentence


def _closing_value(sentence: str) -> str | None:
    """The value the closing ``sentence`` commits to (section 5), else ``None``."""
    if not sentence:
        return None
    value = sentence_value(sentence)
    if value is not None and _NONEXISTENT.match(sentence[_position(sentence, value) + len(value) :]):
        return "does not exist"  # "Therefore $\\lim_{x\\to 3} f(x)$ does not exist.": the span is the subject
    fronted = _fronted(sentence)
    if fronted:
        return fronted
    if value is None or "\0" in value:  # a blanked (cancelled) marker is no value
        return None
    at = _position(sentence, value)
    # A value picked among several numbers is qualified by the whole sentence ("the candidates are
    # 3, 5 and 7"); a single one by its clause.
    several = len(set(numbers(sentence))) > 1
    clause = sentence[: max(at, 0)] if several else _Clauses(sentence).before(sentence, at if at >= 0 else len(sentence))
    if _clause_cue(clause) and " or " not in value:
        return None  # a hedge stays a hedge; a single doubted, conditioned, ... value is no answer
    if at >= 0 and " or " not in value and (_CANCELS["doubted"].search(_opening_clause(sentence, at))
                                            or _CANCELS["doubted"].search(sentence, at + len(value))
                                            or _QUESTIONED_EQUALITY.search(sentence)):
        return None  # "My best guess, which is probably wrong, is 36.", "72, which I have not verified", "Total ≟ 72"
    if _is_reference(sentence[: max(at, 0)], value) or _CHANGED_PROBLEM.search(sentence):
        return None
    if at >= 0 and _CONDITION_OPENER.match(_opening_clause(sentence, at)):
        return None  # "(If the key value is 48, then 48.)"
    if at >= 0 and (_NEGATED_JUST_BEFORE.search(clause) or _DECLARED_WRONG.match(sentence, at + len(value))
                    or _BOUND_AFTER.match(sentence[at + len(value) :])):
        return None  # "... is 8, not 9", "$\\frac12$ is wrong", "about 1/2, plus or minus 50%"
    return value
