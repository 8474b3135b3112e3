"""Running the steps: the one list of them (:mod:`.steps`), the local engine (processes of
the standard library) and the Dask engine (``dask.bag``)."""
