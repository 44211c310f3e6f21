"""Differential fuzzing: random scenarios run on the fit model and on real Kueue, compared.

`generator` makes seeded scenario dicts, `shrink` reduces a disagreement to a minimal file,
`runner` drives both sides, `cli` is `python -m harness fuzz`.
"""
