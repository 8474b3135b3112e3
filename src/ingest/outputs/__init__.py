"""Outputs: writers, which the command line only chooses between.

A writer is entered before any input is read (so it can refuse early: a folder that is
not ingest's, a locked output, a database of another application), receives the finished
run once (the folder writer also the state the run built on, to carry its pages over),
and is left at the end: ``folder.FolderWriter``, ``database.DatabaseWriter``.
"""
