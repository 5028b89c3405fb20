"""Type stubs of ext/lakebench/_errors.pyx: the store's errors (re-exported by lakebench._store)."""

class StoreError(Exception): ...

class LmdbError(StoreError):
    code: int
    def __init__(self, code: int, what: str) -> None: ...

class MapFullError(LmdbError): ...

class ParseError(StoreError, ValueError):
    message: str
    position: int | None
    line: int | None
    column: int | None
    def __init__(self, message: str, position: int | None = ..., line: int | None = ...,
                 column: int | None = ...) -> None: ...
