"""The labelled cases of ``bench/eval.py``: read them, and render each into dump files.

A case file (``tests/eval/cases/*.case``) holds cases written by hand::

    case NAME                       # a case starts; '#' lines are comments
    topic TAG slug=SLUG name=NAME desc=DESCRIPTION      # a real topic (slug '*': unlabelled)
    page FILE topic-page TAG url=URL [lines] [crlf]     # its listings follow, in rank order
      r01                           # the listing IS resource r01 (tests/eval/pool.txt)
      r05~b level=深入               # r05 with a reworded summary, at another level
    page FILE topic-list TAG [crlf]
      r03 notitle | swap | dup | duptitle | title=r07  # damage to the entry's lines
      r06 zhtitle                   # a Chinese original: its Chinese title on the title line
    page FILE item-page
      main r38                      # the page's own resource, then its related reading
      related r39
      related r06 repeat            # a Chinese original: its title again as the original's
    copy FILE OTHER                 # a byte-identical copy of OTHER under another name

What an entry *is* (its resource, its page's topic) is the label; what the page *shows* is
rendered from it, damage included: ``notitle`` drops the title line, ``swap`` puts the
summary line before the title line, ``dup`` writes the entry twice, ``duptitle`` writes its
title line twice, ``title=rNN`` shows another resource's title over this summary. A resource
without an original title in the pool (``en: -``) was written in Chinese: an item page
shows no original-title line for it, or, with ``repeat``, its Chinese title again there.

A page with ``html=N`` is saved HTML in the shape ``bench/corpus_html.py`` draws from the
number N, showing what its text dump shows (no damage but ``notitle`` on it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

import corpus_html  # beside this module: bench/ is on the path of every user of it

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "tests" / "eval" / "pool.txt"
CASES = ROOT / "tests" / "eval" / "cases"
FOOTER = " --- 中文标题与摘要由模型根据原文生成，以原文为准。 来源：LearnMap · 学径（https://oplearnx.com）"
ORDER_NOTE = "按推荐学习顺序：越基础、直观越靠前，越系统、深入越靠后"
KV = "- 分级\n- 值得看\n- 收录时间\n- 2026-10-28"


@dataclass(frozen=True)
class Resource:
    kind: str
    level: str
    zh: str
    en: str | None
    summary: str


def load_pool(path: Path = POOL) -> dict[str, Resource]:
    """alias → resource; a reworded summary ``rNN~x`` is its own entry, the same resource."""
    pool: dict[str, Resource] = {}
    text = "\n".join(x for x in path.read_text("utf-8").splitlines() if not x.startswith("#"))
    for block in filter(None, (b.strip() for b in text.split("\n\n"))):
        head, *rest = block.splitlines()
        alias, _, meta = head[1:].partition(" ")
        fields = dict(line.split(": ", 1) for line in rest)
        base = pool.get(alias.split("~")[0])
        kind, _, level = meta.partition(" · ")
        pool[alias] = Resource(
            kind or (base.kind if base else ""),
            level or (base.level if base else ""),
            fields.get("zh") or (base.zh if base else ""),
            (fields.get("en") or (base.en if base else None)) if fields.get("en") != "-" else None,
            fields["sum"],
        )
    return pool


@dataclass
class Entry:
    token: str  # alias as written, e.g. "r05~b"
    role: str  # "listing" | "main" | "related"
    mods: dict[str, str]

    @property
    def resource(self) -> str:
        return self.token.split("~")[0]


@dataclass
class PageDef:
    file: str
    kind: str  # topic-page | topic-list | item-page | copy
    topic: str = ""
    opts: dict[str, str] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)


@dataclass(frozen=True)
class TopicDef:
    slug: str
    name: str
    desc: str


@dataclass
class Case:
    name: str
    topics: dict[str, TopicDef] = field(default_factory=dict)
    pages: list[PageDef] = field(default_factory=list)


def _kv(tokens: list[str]) -> dict[str, str]:
    return {k: v for k, _, v in (t.partition("=") for t in tokens)}


def load_cases(paths: list[Path]) -> list[Case]:
    cases: list[Case] = []
    for path in paths:
        for raw in path.read_text("utf-8").splitlines():
            line = raw.split(" #", 1)[0].rstrip()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            word, *rest = line.split()
            if line.startswith("  "):
                role = word if word in ("main", "related") else "listing"
                token, *mods = rest if role != "listing" else [word, *rest]
                cases[-1].pages[-1].entries.append(Entry(token, role, _kv(mods)))
            elif word == "case":
                cases.append(Case(rest[0]))
            elif word == "topic":
                kv = _kv(rest[1:])
                cases[-1].topics[rest[0]] = TopicDef(kv["slug"], kv["name"], kv["desc"])
            elif word == "page":
                kind = rest[1]
                tag = rest[2] if kind != "item-page" else ""
                opts = _kv(rest[3:] if tag else rest[2:])
                cases[-1].pages.append(PageDef(rest[0], kind, tag, opts))
            elif word == "copy":
                cases[-1].pages.append(PageDef(rest[0], "copy", opts={"of": rest[1]}))
            else:
                raise ValueError(f"{path}: cannot read {raw!r}")
    return cases


@dataclass(frozen=True)
class Shown:
    """One listing as rendered: what it is, and where it is."""

    file: str
    where: str  # "listing N" (topic page) or "line N"
    resource: str
    title_zh: str | None
    summary: str


@dataclass(frozen=True)
class TopicFile:
    file: str
    topic: str


@dataclass
class Rendered:
    listings: list[Shown] = field(default_factory=list)
    topic_files: list[TopicFile] = field(default_factory=list)
    titles_shown: set[str] = field(default_factory=set)
    chinese_originals: set[str] = field(default_factory=set)  # on an item page, no en line
    pool: dict[str, Resource] = field(default_factory=dict)
    # file → line number → listing index of the summary on that line (line-based pages)
    summary_lines: dict[str, dict[int, int]] = field(default_factory=dict)

    def true_title(self, resource: str) -> str | None:
        r = self.pool[resource]
        if r.en is None:
            return r.zh if resource in self.chinese_originals else None
        return r.en if r.en in self.titles_shown else None

    def find(self, file: str, locator: str, line: int) -> int | None:
        """The listing a source names: by its number on a topic page, else by the first
        summary line at or after the line it starts on."""
        if locator.startswith("listing "):
            hits = [n for n, x in enumerate(self.listings) if (x.file, x.where) == (file, locator)]
            return hits[0] if hits else None
        lines = self.summary_lines.get(file, {})
        after = [k for k in lines if k >= line]
        return lines[min(after)] if after else None


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def render(case: Case, folder: Path, pool: dict[str, Resource] | None = None) -> Rendered:
    pool = pool or load_pool()
    out = Rendered(pool=pool)
    folder.mkdir(parents=True, exist_ok=True)
    texts: dict[str, str] = {}
    for page in case.pages:
        if page.kind == "copy":
            texts[page.file] = texts[page.opts["of"]]
            _copy_listings(out, page.opts["of"], page.file, case)
        else:
            texts[page.file] = _RENDER[page.kind](case, page, pool, out)
            if page.kind != "item-page":
                out.topic_files.append(TopicFile(page.file, page.topic))
            if "html" in page.opts:
                texts[page.file] = _saved(case, page, pool, texts[page.file])
        text = texts[page.file]
        if "crlf" in page.opts:
            text = text.replace("\n", "\r\n")
        (folder / page.file).write_bytes(text.encode("utf-8"))
    return out


def _copy_listings(out: Rendered, of: str, file: str, case: Case) -> None:
    for x in [x for x in out.listings if x.file == of]:
        if x.where.startswith("listing "):
            out.listings.append(Shown(file, x.where, x.resource, x.title_zh, x.summary))
    if of in out.summary_lines:
        out.summary_lines[file] = {}
        for line, n in out.summary_lines[of].items():
            x = out.listings[n]
            out.summary_lines[file][line] = len(out.listings)
            out.listings.append(Shown(file, f"line {line}", x.resource, x.title_zh, x.summary))
    kind = next(p for p in case.pages if p.file == of)
    if kind.kind != "item-page":
        out.topic_files.append(TopicFile(file, kind.topic))


def _topic_page(case: Case, page: PageDef, pool: dict[str, Resource], out: Rendered) -> str:
    t = case.topics[page.topic]
    heads = []
    for n, e in enumerate(page.entries, 1):
        r = pool[e.token]
        meta = f"{e.mods.get('kind', r.kind)} · {e.mods.get('level', r.level)}"
        heads.append(f"{n}. [{_esc(r.zh)}]()（{meta}）：{_esc(r.summary)}")
        out.listings.append(Shown(page.file, f"listing {n}", e.resource, r.zh, r.summary))
    url = page.opts.get("url", f"https://oplearnx.com/topics/{t.slug}")
    head = f"# {t.name} {t.desc} - 所属：[部署与推理优化]() - 网站：[{url}]() ## 推荐学习顺序 "
    text = head + " ".join(heads) + FOOTER
    if "lines" in page.opts:
        text = text.replace(f"# {t.name} ", f"# {t.name}\n", 1).replace(" - ", "\n- ")
        text = text.replace(" ## 推荐学习顺序 ", "\n\n## 推荐学习顺序\n\n")
        text = re.sub(r" (?=[0-9]+\. \[)", "\n", text).replace(" --- ", "\n\n---\n")
    return text + "\n"


def _topic_list(case: Case, page: PageDef, pool: dict[str, Resource], out: Rendered) -> str:
    t = case.topics[page.topic]
    lines = [t.desc, f"{len(page.entries)} 条精选 · {ORDER_NOTE}"]
    spots = out.summary_lines.setdefault(page.file, {})
    for e in page.entries:
        r = pool[e.token]
        title = pool[e.mods["title"]].en if "title" in e.mods else r.en
        title = None if "notitle" in e.mods else title
        if "zhtitle" in e.mods:
            if r.en is not None:
                raise ValueError(f"{case.name}: {e.token} has an original title of its own")
            title = r.zh
            out.chinese_originals.add(e.resource)
        for _ in range(2 if "dup" in e.mods else 1):
            block = [title] * (2 if "duptitle" in e.mods else 1) if title else []
            block = [r.summary, *block] if "swap" in e.mods else [*block, r.summary]
            for x in block:
                lines.append(x)
                if x == r.summary:
                    spots[len(lines)] = len(out.listings)
            out.titles_shown.update(b for b in block if b != r.summary)
            out.listings.append(Shown(page.file, f"line {len(lines)}", e.resource, None, r.summary))
    return "\n".join(lines) + "\n"


def _item_page(case: Case, page: PageDef, pool: dict[str, Resource], out: Rendered) -> str:
    lines = ["Hugging Face··5 个月前"]
    spots = out.summary_lines.setdefault(page.file, {})
    for e in page.entries:
        if e.role == "related" and "推荐阅读" not in lines:
            lines.append("推荐阅读")
        elif e.role == "main" and len(lines) > 1:
            raise ValueError("main must come first")
        r = pool[e.token]
        lines.append(r.zh)
        if r.en:
            lines.append(r.en)
            out.titles_shown.add(r.en)
        else:
            out.chinese_originals.add(e.resource)
            lines += [r.zh] if "repeat" in e.mods else []
        lines.append(r.summary)
        spots[len(lines)] = len(out.listings)
        out.listings.append(Shown(page.file, f"line {len(lines)}", e.resource, r.zh, r.summary))
        if e.role == "main":
            lines.extend(KV.split("\n"))
    return "\n".join(lines) + "\n"


def _saved(case: Case, page: PageDef, pool: dict[str, Resource], dump: str) -> str:
    """The page as saved HTML in shape ``html=N``: what its dump shows, in markup."""
    if any(set(e.mods) - {"notitle", "zhtitle", "repeat", "kind", "level"} for e in page.entries):
        raise ValueError(f"{case.name}: {page.file}: a saved page takes no damage")
    rng = Random(int(page.opts["html"]))
    lines = dump.rstrip("\n").split("\n")
    if page.kind == "topic-page":
        t = case.topics[page.topic]
        url = page.opts.get("url", f"https://oplearnx.com/topics/{t.slug}")
        listings = []
        for e in page.entries:
            r = pool[e.token]
            meta = f"{e.mods.get('kind', r.kind)} · {e.mods.get('level', r.level)}"
            listings.append((r.zh, meta, r.summary))
        head = (t.name, t.desc, "部署与推理优化", url, "推荐学习顺序")
        notice, _, source = FOOTER.removeprefix(" --- ").partition(" 来源：")
        return corpus_html.topic_page(rng, head, listings, (notice, "来源：" + source))
    body = lines[2:] if page.kind == "topic-list" else lines[lines.index("推荐阅读") + 1 :]
    entries = _entries(body)
    if page.kind == "topic-list":
        return corpus_html.topic_list(rng, lines[0], lines[1], entries)
    kv = lines.index("- 分级")
    byline = lines[0].split("··")
    [main] = _entries(lines[1:kv])
    facts = [x[2:] for x in lines[kv : kv + 4]]
    return corpus_html.item_page(rng, (byline[0], byline[1]), main, facts, entries)


def _entries(lines: list[str]) -> list[corpus_html.Entry]:
    """Title lines and a summary (the line that ends with a full stop) each."""
    out: list[corpus_html.Entry] = []
    titles: list[str] = []
    for line in lines:
        if line.endswith("。"):
            out.append((titles, line))
            titles = []
        else:
            titles.append(line)
    return out


_RENDER = {"topic-page": _topic_page, "topic-list": _topic_list, "item-page": _item_page}
