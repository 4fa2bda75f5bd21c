"""Training configs → the intent (envdoctor/target/intent.py).

`read_configs(paths)` recognises each file's tool from its content (the extension only
decides which parsers to try first) and returns one Intent; a file that cannot be read
or whose layout is unknown raises ConfigError with one line naming the file (and line).

Nothing here is imported by `envdoctor --help`; the format libraries load only when a
file of theirs is read.
"""
