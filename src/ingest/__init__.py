"""ingest: raw dumps of curation pages in, canonical bilingual JSON records out."""

__version__ = "0.1.0"
#: Version of the output contract (field names, types and meanings in out/).
SCHEMA_VERSION = "1.2.0"
