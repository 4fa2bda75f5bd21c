"""`envdoctor check --distributed`: every rank of a job probes its own stack with the normal checks,
then the ranks exchange what they found through torch.distributed on the CPU (a gloo group, with
the launcher's variables) and each builds the same cluster report; rank 0 prints it.

ranks (which rank this is, from the launcher's variables) → the rank's own check → summary (what
one rank says of itself) → gather (the exchange, run in the target interpreter) → cluster (pure
rules over every rank's summary: what is the same said once, what differs named by rank and host).
"""
