# lakebench._sparql (Rust, ext/sparql/src/lib.rs): SPARQL Update checked on
# the parse of spargebra, and the confinement of the process evaluating it.

__all__ = ["MAX_DEPTH", "check_update", "confine"]

#: The deepest nesting of graph patterns, expressions and property paths an update may have.
MAX_DEPTH: int

def check_update(update: str, base_iri: str) -> str:
    """The canonical text of ``update`` if the server runs it.

    Raises SyntaxError if it is not SPARQL Update, ValueError (with the
    reason) for a form the server refuses: LOAD, SERVICE, CLEAR, DROP,
    CREATE, ADD/MOVE/COPY, GRAPH, WITH, USING, or nesting past MAX_DEPTH.
    """

def confine() -> None:
    """No socket nor io_uring for this process from now on (seccomp), no new
    privileges, and SIGKILL when the thread that started it ends."""
