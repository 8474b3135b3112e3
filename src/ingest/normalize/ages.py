"""Relative ages (``5 个月前``) → the range of dates they can mean, given the crawl date D.

``N unit前`` is an elapsed time of at least N − ½ and less than N + 1 units (a site that
truncates or one that rounds), from some time on D: published between D − (N + 1) units and
the end of D less N − ½ units. Months and years are calendar ones (half a month is 15 days,
half a year 6 months); ``刚刚`` is under a minute, ``昨天``/``前天`` the days before D.
Never the wall clock: without a crawl date there is no estimate.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_LABEL = re.compile(r"^\s*([0-9]{1,4})\s*(秒|分钟|小时|天|周|星期|个月|月|年)\s*前\s*$")
_SPANS = {
    "秒": dt.timedelta(seconds=1),
    "分钟": dt.timedelta(minutes=1),
    "小时": dt.timedelta(hours=1),
    "天": dt.timedelta(days=1),
    "周": dt.timedelta(weeks=1),
    "星期": dt.timedelta(weeks=1),
}
_MONTHS = {"个月": 1, "月": 1, "年": 12}
_DAYS_BEFORE = {"昨天": 1, "前天": 2}


def crawl_day(text: str) -> dt.date | None:
    """A crawl day as ingest takes one: ``YYYY-MM-DD`` only (not the other forms ISO 8601
    and ``date.fromisoformat`` take, ``20261102`` or ``2026-W45-1``); None if it is none."""
    try:
        return dt.date.fromisoformat(text) if _DAY.fullmatch(text) else None
    except ValueError:
        return None


def estimate(label: str | None, crawled: dt.date | None) -> tuple[dt.date, dt.date] | None:
    """(earliest, latest) publication date ``label`` can mean, crawled on ``crawled``.

    >>> d = dt.date(2026, 11, 30)
    >>> [str(x) for x in estimate("5 个月前", d)]
    ['2026-05-30', '2026-07-15']
    >>> [str(x) for x in estimate("2 天前", d)]
    ['2026-11-27', '2026-11-29']
    >>> [str(x) for x in estimate("3 小时前", d)]
    ['2026-11-29', '2026-11-30']
    >>> [str(x) for x in estimate("刚刚", d)], estimate("很久以前", d), estimate("2 天前", None)
    (['2026-11-29', '2026-11-30'], None, None)
    >>> estimate("3000 年前", d), estimate("2 天前", dt.date(1, 1, 1))  # before the calendar
    (None, None)
    """
    if label is None or crawled is None:
        return None
    try:
        return _estimate(label.strip(), crawled)
    except (OverflowError, ValueError):  # a window before the calendar's first day
        return None


def _estimate(text: str, crawled: dt.date) -> tuple[dt.date, dt.date] | None:
    if text == "刚刚":
        return _timed(crawled, dt.timedelta(0), dt.timedelta(minutes=1))
    if text in _DAYS_BEFORE:
        day = crawled - dt.timedelta(days=_DAYS_BEFORE[text])
        return day, day
    m = _LABEL.match(text)
    if m is None:
        return None
    n, unit = int(m.group(1)), m.group(2)
    if unit in _MONTHS:
        return _calendar(crawled, n * _MONTHS[unit], _MONTHS[unit])
    span = _SPANS[unit]
    return _timed(crawled, max(n - 0.5, 0) * span, (n + 1) * span)


def _timed(crawled: dt.date, least: dt.timedelta, most: dt.timedelta) -> tuple[dt.date, dt.date]:
    """Elapsed time in [least, most) before some moment of the day ``crawled``."""
    start = dt.datetime.combine(crawled, dt.time())
    end = start + dt.timedelta(days=1) - dt.timedelta(microseconds=1)
    return (start - most).date(), (end - least).date()


def _calendar(crawled: dt.date, months: int, unit: int) -> tuple[dt.date, dt.date]:
    """``months`` ago in units of ``unit`` months (1: months, 12: years)."""
    earliest = _months_before(crawled, months + unit)
    if months == 0:
        return earliest, crawled
    if unit == 1:  # half a month: 15 days
        latest = _months_before(crawled, months) + dt.timedelta(days=15)
    else:  # half a year: 6 months
        latest = _months_before(crawled, months - unit // 2)
    return earliest, min(latest, crawled)


def _months_before(day: dt.date, months: int) -> dt.date:
    """The same day of the month ``months`` earlier (clamped to the month's last day)."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))
