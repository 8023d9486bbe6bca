"""The math verifier behind ``math_answer``: what a response commits to, the
answer's type, and the comparison by type, with a three-valued verdict
(correct, wrong, undecided)."""
