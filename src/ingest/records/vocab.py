"""The page kinds and the site's vocabularies (kinds and levels), in one place."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    """The page kinds; also the value of ``sources[].format``."""

    TOPIC_PAGE = "topic-page"
    TOPIC_LIST = "topic-list"
    ITEM_PAGE = "item-page"


#: Field precedence when merging listings of one resource (lower wins).
PRECEDENCE = {Format.ITEM_PAGE: 0, Format.TOPIC_PAGE: 1, Format.TOPIC_LIST: 2}
#: Within one page kind: the page's own item before its listings, related reading, orphans.
ROLE_ORDER = {"main": 0, "listing": 1, "related": 2, "orphan": 3}

#: Kind labels as the pages show them → ``kind``.
KINDS = {
    "博客": "blog",
    "帖子": "post",
    "项目": "project",
    "教程": "tutorial",
    "课程": "course",
    "书籍": "book",
    "视频": "video",
    "论文": "paper",
    "播客": "podcast",
    "演讲": "talk",
}
#: Level labels as the pages show them → ``level``.
LEVELS = {"入门": "beginner", "进阶": "intermediate", "深入": "advanced"}


def kind_of(label: str | None) -> str | None:
    """The ``kind`` of a label: a known kind, ``other`` for any other label, or None.

    >>> kind_of("博客"), kind_of("播客"), kind_of("杂谈"), kind_of(None)
    ('blog', 'podcast', 'other', None)
    """
    if label is None:
        return None
    return KINDS.get(label, "other")
