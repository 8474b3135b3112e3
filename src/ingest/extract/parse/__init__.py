"""One parser per page kind; each fills a :class:`~.base.Page` and never raises on bad input."""
