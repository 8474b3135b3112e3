"""The per-file map: discover, read, decode, render HTML, detect the page kind, parse."""
