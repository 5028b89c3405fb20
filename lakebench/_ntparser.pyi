"""Type stubs of the store core's N-Triples parser (ext/lakebench/_ntparser.pyx)."""

PARSE_MESSAGES: dict[int, str]
