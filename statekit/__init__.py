"""statekit: upgrade OpenClaw legacy state files to SQLite, and back that state up safely.

The core package holds what every part shares: state-dir layout, database
connections and schema, the error hierarchy and the CLI. Work lives in the
sibling packages ``migrate``, ``backup`` and ``legacy_readers``; each is usable
from Python without the CLI.
"""

__version__ = "0.1.0"
