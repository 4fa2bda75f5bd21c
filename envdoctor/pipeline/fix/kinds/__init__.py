"""How `fix` applies each remedy kind the kinds table names (envdoctor.target.remedies.kinds):
`prepare_steps(actions, target)` at plan time, an Action that applies and confirms, `undo(step)`."""
