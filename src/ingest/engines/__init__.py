"""Engines run the steps of :mod:`ingest.steps`; each only forms groups.

:mod:`.local` uses lists, dicts and a process pool; :mod:`.dask` uses Dask bags and shuffles.
"""
