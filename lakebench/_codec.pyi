"""Type stubs of the store core's byte layout (ext/lakebench/_codec.pyx)."""

FORMAT_VERSION: int
DB_NAMES: tuple[str, ...]
INDEX_ORDER: dict[str, str]
ID_LITERAL_BIT: int
KIND_IRI: bytes
KIND_BLANK: bytes
KIND_LITERAL: bytes
KIND_LANG_LITERAL: bytes
KIND_TYPED_LITERAL: bytes

def hash_term(term: bytes) -> int: ...
def stored_literal(term: bytes) -> bytes | None: ...
def expand_stored(value: bytes) -> bytes: ...
