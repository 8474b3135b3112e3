"""State: the last publish read back — what the next run builds on (its records as identity
needs them, the page cache, crawl days) — and what a run changes against it."""
