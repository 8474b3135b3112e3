"""State: the previous publish read back — what the next run builds on.

Items and topics for the change set, the evidence that keeps ids across re-crawls, the
languages already decided, and the pages of earlier runs for ``--merge``.
"""
