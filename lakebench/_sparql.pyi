# lakebench._sparql (Rust, ext/sparql/src/lib.rs): SPARQL Update checked on
# the parse of spargebra, and the confinement of the process evaluating it.

__all__ = ["MAX_DEPTH", "MAX_NESTING", "MAX_PATTERNS", "check_update", "confine", "prepare_update"]

#: The deepest nesting of graph patterns, expressions and property paths an update may have.
MAX_DEPTH: int
#: The deepest nesting of brackets, and the longest run of prefix operators, the text may have.
MAX_NESTING: int
#: The most triple patterns an update's WHERE clauses may have (a path: one per step).
MAX_PATTERNS: int

def check_update(update: str, base_iri: str) -> str:
    """The canonical text of ``update`` if the server runs it.

    Raises SyntaxError if it is not SPARQL Update, ValueError (with the
    reason) for a form the server refuses: LOAD, SERVICE, CLEAR, DROP,
    CREATE, ADD/MOVE/COPY, GRAPH, WITH, USING, text nested past MAX_NESTING
    (checked before the parser sees it), an algebra past MAX_DEPTH, or more
    than MAX_PATTERNS triple patterns.  Run
    it on a thread with a large stack: a long chain of UNIONs is dropped
    recursively.
    """

def prepare_update(update: str, base_iri: str, before: bytes) -> tuple[bytes, bytes] | str:
    """What the helper runs: (removed, added) N-Triples for an update made only of
    INSERT DATA and DELETE DATA whose literals are simple or language-tagged (a
    typed one may be stored in a canonical form: the engine's business), applied from the checked parse to ``before`` (the
    resource's N-Triples); for any other update it accepts, its canonical text, for
    the engine.  Raises as check_update does (OSError if ``before`` does not parse)."""

def confine() -> None:
    """No socket nor io_uring for this process from now on (seccomp), no new
    privileges, and SIGKILL when the thread that started it ends."""
