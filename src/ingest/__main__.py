from ingest.cli import entry

entry()
