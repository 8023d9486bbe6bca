"""The math verifier behind ``math_answer``: what a response commits to, the
answer's type, and the comparison by type, with a three-valued verdict
(correct, wrong, undecided).

Modules: ``compare`` (the entry point: :func:`compare.compare`), ``judges``
(the verdict, the grading policy and the judges that need no symbolic
algebra), ``symbolic`` (math-verify and sympy, run under a hard timeout),
``normalize`` (canonical form and plain numbers), ``notation`` (siunitx,
superscripts, numbers with suffixes and magnitudes, chances in words,
special solution sets, residue classes), ``numerals`` (number words, Roman and
Chinese numerals, Unicode digits), ``units`` (quantities, through pint),
``clock`` and ``dates`` (times of day, weekdays and calendar dates) and
``answer_types`` (the type of an answer, labelled parts and the type rules).
"""
