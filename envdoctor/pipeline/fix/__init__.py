"""`envdoctor fix` and `envdoctor undo`: findings turned into changes that are planned,
applied, proven by re-probing, and undone from a journal.

One file per job:
  choose.py       which remedy of a finding to take (least invasive that can be verified; --prefer)
  plan.py         the numbered plan: a step per chosen remedy, prepared by its kind
  action.py       what every remedy kind's prepared change (Action) offers; FixError
  kinds/          how each kind of the kinds table (envdoctor.target.remedies.kinds) applies:
    config.py     edits at the spans the intent located, re-parsed to prove them
    pip.py        the target interpreter's own pip, torch pinned; replaced distributions
                  stashed so undo needs no network (stash.py)
    env.py        variables written to a file the user sources
  apply.py        apply every step, verify, roll back on any failure
  verify.py       re-run the checks that produced the findings, in a fresh worker
  journal.py      where every step is written before it runs; undo.py reads it back
"""
