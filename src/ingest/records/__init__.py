"""The data that flows through a run: vocabularies, internal records, output records.

Everything else imports from here; this package imports nothing of ingest's.
"""
