"""ingest: raw dumps of curation pages in, canonical bilingual JSON records out.

A site's Python code reads a publish with :func:`read_publish` (see :mod:`ingest.reader`).
"""

__version__ = "0.3.0"
#: Version of the output contract (field names, types and meanings in out/).
SCHEMA_VERSION = "1.3.0"

# After the versions, which the reader reads; it loads the records (msgspec) and no more.
from ingest.reader import Publish, PublishedTopic, read_publish  # noqa: E402

__all__ = ["SCHEMA_VERSION", "Publish", "PublishedTopic", "__version__", "read_publish"]
