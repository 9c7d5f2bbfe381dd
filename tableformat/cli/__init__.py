"""The `tableformat` command line (`parser.py` lists the commands; `tableformat --help`).

One concept a module: `options` (storage options, secrets, the error line),
`values` (typed values from text), `where` (the --where language),
`schemafile` (create --schema), `celltext` and `output` (row formats),
`display` (values for people), `describe`, `alter` (alter steps),
`commands`, `parser`, and `run` (main: one command, one exit status).
"""
from .run import console_main, main

__all__ = ["console_main", "main"]
