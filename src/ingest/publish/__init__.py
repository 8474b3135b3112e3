"""The output folder: the one door into a publish, its atomic replacement, and signals."""
