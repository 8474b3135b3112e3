"""The cross-file steps, each a pure function on one group: topics, exact units,
near-duplicate and order edges, components, merge, identity, records, report."""
