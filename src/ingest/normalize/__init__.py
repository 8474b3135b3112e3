"""Small pure functions on text: fields (:mod:`.text`), links (:mod:`.urls`), languages
(:mod:`.language`). They import nothing of ingest's but each other."""
