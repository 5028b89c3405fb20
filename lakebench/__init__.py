"""lakebench: a performance comparator for RDF repositories."""

__version__ = "0.1.0"
