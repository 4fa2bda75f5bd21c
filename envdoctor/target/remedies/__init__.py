"""Remedies as data: the kinds (`kinds`), the builders the rules call (`actions`), and the
command lines generated from an action (`commandline`)."""
