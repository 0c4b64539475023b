"""Text search shared by every domain that searches what its users wrote (documents, chat sessions).

One notion of a match: a query is split on whitespace into terms, and a row matches when every term
occurs in it as a substring once both are folded the same way (``fold``: Unicode NFKC, so full-width
Latin letters and digits are their ASCII forms and half-width katakana full-width ones; then case
folding; PostgreSQL folds case with its ``lower()``, which differs from Python's ``casefold()`` on a
few letters such as "ß", and compares its folding only with itself). Traditional and simplified Chinese
characters stay different characters (NFKC does not merge them). No word segmentation anywhere, so a
term is found wherever it occurs, also across what a segmenter would split.

Two indexes serve that match, on each database, and every term uses one of them:

- **trigrams**, for terms of three characters or more: SQLite FTS5's ``trigram`` tokenizer, PostgreSQL's
  ``pg_trgm`` GIN, both over the folded text. Substring matching suits Chinese and finds "migrat" inside
  "migration".
- **grams**, for terms of one or two characters, which trigrams cannot see: every character and every
  pair of adjacent characters of the folded text that holds no whitespace (nor control character),
  each one token (``grams``).
  A two-character term is one token lookup that finds every row holding that exact pair, a
  one-character term every row holding that character. Most Chinese words are two characters long;
  Japanese kana, Hangul and short Latin terms ("AI", "5%") are served the same way.

The database keeps both indexes in step with the rows. SQLite: triggers feed two contentless FTS5 tables
through ``agentloft_fold`` and ``agentloft_grams``, Python functions that ``register_sqlite_functions``
installs on every connection the app opens (another program writing those tables gets "no such
function", not a stale index). PostgreSQL: IMMUTABLE SQL functions of the same names, a generated column
``search_text`` holding the folded text where it differs from ``lower()`` (so the trigram index's
candidates are checked without normalizing them again), and expression indexes (migration 0007). A
contentless FTS5 table deletes a row by re-tokenizing what was indexed, so whoever changes what ``fold``
or ``grams`` return must ship a migration that rebuilds the indexes.

SQLite index rowids are ``(user_id << 32) + (2**32 - 1 - rowid)``: one user's entries are one rowid
range, so FTS5 reads only that slice of each token's list (a search costs what the user's own matches
cost, not what the instance holds), and within it newer rows come first in ascending order, which FTS5
walks two to three times faster than descending.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, String, bindparam, func, literal_column, or_, text
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

log = logging.getLogger(__name__)

MIN_TRIGRAM_TERM = 3
MAX_TERMS = 10
ROWID_BITS = 32
ROWID_MASK = (1 << ROWID_BITS) - 1

# What separates words: ASCII control characters and space, and every other character Python calls
# whitespace (``str.isspace``). Spelled out so that PostgreSQL's gram function (migration 0007) splits on
# exactly the same characters, and so that SQLite's ``ascii`` tokenizer (which treats ASCII control
# characters as separators) agrees; the tests check both.
SEPARATOR_RANGES = ((0x00, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_WS_SPLIT = re.compile(
    "[" + "".join(f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in SEPARATOR_RANGES) + "]+"
)


# --- folding, grams, queries -------------------------------------------------------------------------


def fold(text: str) -> str:
    """The form both the indexes and the queries are compared in: NFKC, then case-folded."""
    if text.isascii():  # NFKC leaves ASCII as it is; its case folding is lower()
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def gram_set(*texts: str | None) -> set[str]:
    """Every character and every pair of adjacent characters of the folded texts that are not
    separators (``SEPARATOR_RANGES``), each text on its own: no pair spans two of them."""
    out: set[str] = set()
    for value in texts:
        if not value:
            continue
        for word in _WS_SPLIT.split(fold(value)):
            out.update(word)
            out.update(word[i:i + 2] for i in range(len(word) - 1))
    out.discard("")
    return out


def grams(*texts: str | None) -> str:
    """``gram_set`` as the one string the SQLite gram index tokenizes: sorted, space-separated (sorted so
    that the same text always gives the same string, which a contentless FTS5 delete relies on)."""
    return " ".join(sorted(gram_set(*texts)))


@dataclass(frozen=True)
class Term:
    """One search term: ``typed`` as typed (quotes dropped), ``text`` in NFKC (case kept), and ``key``,
    the folded form the indexes are compared in."""

    typed: str
    text: str
    key: str

    @property
    def short(self) -> bool:
        """Too short for trigrams: served by the gram index."""
        return len(self.key) < MIN_TRIGRAM_TERM


@dataclass(frozen=True)
class Query:
    """A parsed search; every term must match (AND)."""

    text: str
    terms: tuple[Term, ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def long_terms(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if not t.short)

    @property
    def short_terms(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.short)

    def only(self, term: Term) -> Query:
        return Query(self.text, (term,))


def parse_query(q: str | None, max_terms: int = MAX_TERMS) -> Query:
    """Terms separated by whitespace (full-width spaces too) or control characters, quotes around a term
    dropped, duplicates (after folding) dropped, at most ``max_terms``."""
    terms: list[Term] = []
    for raw in _WS_SPLIT.split((q or "").strip()):
        typed = raw.strip('"')
        normal = unicodedata.normalize("NFKC", typed)
        for part in _WS_SPLIT.split(normal):  # NFKC rarely makes a space (U+00A8 gives " \u0308")
            part = part.strip('"')
            key = fold(part)
            if key and all(t.key != key for t in terms):
                terms.append(Term(typed if part == normal else part, part, key))
    return Query(unicodedata.normalize("NFKC", (q or "").strip()), tuple(terms[:max_terms]))


# --- SQLite ------------------------------------------------------------------------------------------


def _sql_fold(value: object) -> str | None:
    return None if value is None else fold(str(value))


def _sql_grams(*values: object) -> str:
    return grams(*(None if v is None else str(v) for v in values))


def register_sqlite_functions(dbapi_connection: Any) -> None:
    """Install ``agentloft_fold(text)`` and ``agentloft_grams(text, ...)`` on a SQLite connection: the
    index triggers call them (migration 0007). Called for every connection the app opens."""
    dbapi_connection.create_function("agentloft_fold", 1, _sql_fold, deterministic=True)
    dbapi_connection.create_function("agentloft_grams", -1, _sql_grams, deterministic=True)


def index_rowid_sql(user_sql: str, rowid_sql: str) -> str:
    """The index rowid of a row, as SQL (the triggers of migration 0007 write the same expression)."""
    return f"(({user_sql}) << {ROWID_BITS}) + ({ROWID_MASK} - ({rowid_sql}))"


def table_rowid_sql(index_rowid: str) -> str:
    """The table rowid behind an index rowid, as SQL (the inverse of ``index_rowid_sql``)."""
    return f"({ROWID_MASK} - ({index_rowid} & {ROWID_MASK}))"


def table_rowid(index_rowid: int) -> int:
    return ROWID_MASK - (index_rowid & ROWID_MASK)


def user_range(user_id: int) -> tuple[int, int]:
    """The first and last index rowid a user's rows can have."""
    lo = user_id << ROWID_BITS
    return lo, lo + ROWID_MASK


def fts5_and(keys: Iterable[str]) -> str:
    """An FTS5 MATCH string: each key a quoted string (quotes doubled), all required."""
    return " AND ".join('"' + k.replace('"', '""') + '"' for k in keys)


@dataclass(frozen=True)
class FtsIndex:
    """The two contentless FTS5 tables of one searchable thing on SQLite: ``trigrams`` (tokenizer
    ``trigram``, the folded text) and ``grams`` (one column of ``grams()`` output, ``detail=none``)."""

    trigrams: str
    grams: str


@dataclass(frozen=True)
class FtsMatch:
    """The rows of one user that match a query, as SQL: ``FROM {table} WHERE {where}``; ``rowid`` is
    the index rowid column. The range parameters are ``lo``/``hi`` (``user_range``)."""

    table: str
    where: str
    params: dict[str, Any]

    @property
    def rowid(self) -> str:
        return f"{self.table}.rowid"


def fts_match(index: FtsIndex, query: Query, user_id: int, tag: str = "",
              gram_tokens: Sequence[str] = ()) -> FtsMatch:
    """Long terms go to the trigram table, short ones to the gram table; with both, the trigram table
    drives and the list of the gram matches (in the user's range) filters it. ``gram_tokens``: further
    tokens the gram rows must hold (other than grams, e.g. a document's type), applied with the short
    terms. ``tag`` keeps parameter names apart when several matches share a statement."""
    lo, hi = user_range(user_id)
    params: dict[str, Any] = {"lo": lo, "hi": hi}
    long_keys = [t.key for t in query.long_terms]
    short_keys = [t.key for t in query.short_terms]
    gram_keys = [*short_keys, *gram_tokens] if short_keys else []
    table = index.trigrams if long_keys else index.grams
    params[f"m{tag}"] = fts5_and(long_keys or gram_keys)
    where = f"{table} MATCH :m{tag} AND {table}.rowid BETWEEN :lo AND :hi"
    if long_keys and gram_keys:
        # A list of the gram matches, checked per trigram match; the "+" keeps SQLite from handing the
        # list to FTS5 as rowids to look up one by one (a full MATCH per rowid: 100x slower).
        params[f"g{tag}"] = fts5_and(gram_keys)
        where += (f" AND +{table}.rowid IN (SELECT rowid FROM {index.grams} "
                  f"WHERE {index.grams} MATCH :g{tag} AND rowid BETWEEN :lo AND :hi)")
    return FtsMatch(table, where, params)


def sqlite_holds(column_sql: str, term: Term, name: str) -> tuple[str, dict[str, str]]:
    """SQL that is 1 if the column holds the term as typed or in NFKC, any ASCII case, else 0, and its
    parameters. For ranking the rows the index found: plain ``instr`` on the stored text, because
    folding every candidate row in Python cost ten times the rest of the search; a term that matched
    only through folding (full-width text, typed in ASCII) still matches, it just earns no column
    weight."""
    forms = dict.fromkeys((term.typed, term.text))
    params = {f"{name}_{i}": form for i, form in enumerate(forms)}
    col = f"lower(coalesce({column_sql}, ''))"
    return "(" + " OR ".join(f"instr({col}, lower(:{p})) > 0" for p in params) + ")", params


async def rebuild_sqlite_index(
    db: AsyncSession, index: FtsIndex, *, rows: str, rowid: str, columns: Sequence[str], values: Sequence[str],
    gram_extra: str = "",
) -> None:
    """Empty both tables of ``index`` and index again what ``rows`` (``FROM ... [WHERE ...]``) holds, as
    the triggers of migration 0007 write it: ``rowid`` is each row's index rowid, ``values`` the indexed
    text for the trigram table's ``columns``, ``gram_extra`` SQL appended to the gram string."""
    for table in (index.trigrams, index.grams):
        await db.execute(text(f"INSERT INTO {table}({table}) VALUES ('delete-all')"))
    folded = ", ".join(f"agentloft_fold({v})" for v in values)
    await db.execute(text(f"INSERT INTO {index.trigrams}(rowid, {', '.join(columns)}) SELECT {rowid}, {folded} {rows}"))
    grams_sql = f"agentloft_grams({', '.join(values)})" + (f" || {gram_extra}" if gram_extra else "")
    await db.execute(text(f"INSERT INTO {index.grams}(rowid, grams) SELECT {rowid}, {grams_sql} {rows}"))


# --- PostgreSQL --------------------------------------------------------------------------------------


def like_pattern(text: str) -> str:
    """``%text%`` with LIKE's wildcards and the escape character escaped (escape ``\\``)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _pg_fold(value: ColumnElement[Any]) -> ColumnElement[str]:
    return func.agentloft_fold(value, type_=String)


def pg_holds(folded_sql: str, term: Term, name: str) -> ColumnElement[bool]:
    """The folded text contains the term; served by a ``pg_trgm`` index on ``folded_sql`` (which must be
    that index's expression)."""
    pattern = bindparam(name, like_pattern(term.text), type_=String)
    return literal_column(folded_sql).like(_pg_fold(pattern), escape="\\")


def pg_rank_holds(column: ColumnElement[Any], term: Term, name: str) -> ColumnElement[bool]:
    """The column holds the term as typed or in NFKC, any case: for ranking the rows the indexes found,
    on the stored text as ``sqlite_holds`` does (cheaper than folding every candidate row)."""
    forms = dict.fromkeys((term.typed, term.text))
    return or_(*(func.coalesce(column, "").ilike(bindparam(f"{name}_{i}", like_pattern(form), type_=String),
                                                 escape="\\") for i, form in enumerate(forms)))


# What ``pg_custom_plans`` sets for a search's transaction.
PG_PLAN_SETTINGS = {"plan_cache_mode": "force_custom_plan", "random_page_cost": "1.1", "jit": "off",
                    "max_parallel_workers_per_gather": "0"}


async def pg_custom_plans(db: AsyncSession) -> None:
    """Plan this transaction's statements for their actual parameters, pricing rows read at random like
    an SSD or cached data (``random_page_cost`` 1.1), without JIT or parallel workers.

    One user may own a fifth of all rows and another ten: after five runs PostgreSQL would switch a
    prepared search to a generic plan made for the average user, which filters the user's rows one by
    one through the gram function (seconds) instead of using the indexes (milliseconds). At the default
    random-read price it would rather combine a rare gram's few rows with a bitmap of all of a heavy
    user's documents (~15 ms) than read those rows (~1 ms). And the gram function's high cost (which
    keeps it out of per-row filters) would make every search look worth compiling (~30 ms) and worth
    starting workers for (more than the scan they share)."""
    await db.execute(text("SELECT " + ", ".join(f"set_config('{k}', '{v}', true)"
                                                for k, v in PG_PLAN_SETTINGS.items())))


# A searched table that no ANALYZE has seen once this many rows changed (``pg_plan_statistics``), or
# whose changes since the last one reach half its rows, gets its plain columns analysed; looked at no
# more often than every PG_STATISTICS_CHECK_SECONDS per table and process (the look costs ~0.3 ms).
PG_ANALYZE_FROM_CHANGES = 100
PG_STATISTICS_CHECK_SECONDS = 5.0
_statistics_checked: dict[str, float] = {}
_STALE_SQL = (
    "SELECT n_mod_since_analyze >= GREATEST(:least, CASE WHEN last_analyze IS NULL AND last_autoanalyze IS NULL "
    "THEN 0 ELSE n_live_tup / 2 END) FROM pg_stat_user_tables WHERE relid = CAST(:table AS regclass)"
)


async def pg_plan_statistics(db: AsyncSession, tables: Mapping[str, Sequence[str]]) -> None:
    """Give PostgreSQL the statistics a search's plan depends on: ``ANALYZE table (columns)`` for each
    table that has none yet (or changed by more than half since it had them), before the search plans.

    Without statistics PostgreSQL assumes that one user holds 0.5 % of a table's rows, and a search on a
    freshly filled table read all of a user's rows through the (user, date) index and filtered each one
    through the trigram LIKE or the gram function, instead of reading the text indexes' entries: 20,000
    documents of one user created through the service, searched at once, took 2.2 s for a common
    character, 211 ms for a common word, 149 ms for a rare one, against 26 / 37 / 7 ms after an ANALYZE
    (docs/benchmarks.md); autovacuum analyses a table only after its naptime, and then for as long as
    the gram index's statistics (1,000 per column, migration 0007) take: 20 s for those 20,000 rows.
    The plain columns alone (the user, the date, the type) take 126 ms and were all the plans needed:
    18 / 42 / 7 ms. Candidates measured and left (same data): the gram function at a higher ``COST``
    fixed the short terms only where PostgreSQL expected more of the user's rows than of the matches;
    where it expected one of each it still filtered (3,000 documents), and at ``COST 1000000`` an
    analysed search of a common pair with a type took 14.5 s. The gram terms added to long terms' LIKEs
    made an analysed search recheck every match through the gram function (4.7 s). Per-table
    autovacuum settings still wait for the naptime and pay the full 20 s each time.

    Runs in a transaction of its own that gives up after ``lock_timeout`` rather than wait behind
    autovacuum's own ANALYZE; later changes are left to autovacuum, whose full ANALYZE also gathers the
    index statistics."""
    engine = db.bind
    if not isinstance(engine, AsyncEngine):  # a session on one connection: no second transaction
        return
    now = time.monotonic()
    for table, columns in tables.items():
        if now - _statistics_checked.get(table, float("-inf")) < PG_STATISTICS_CHECK_SECONDS:
            continue
        _statistics_checked[table] = now
        stale = (await db.execute(text(_STALE_SQL), {"least": PG_ANALYZE_FROM_CHANGES, "table": table})).scalar()
        if not stale:
            continue
        try:
            async with AsyncSession(engine) as own, own.begin():
                await own.execute(text("SET LOCAL lock_timeout = '200ms'"))
                await own.execute(text(f"ANALYZE {table} ({', '.join(columns)})"))
        except DBAPIError as exc:  # autovacuum holds the table: it is analysing it already
            log.info("ANALYZE %s skipped: %s", table, str(exc.orig).strip().splitlines()[0])


def pg_has_grams(text_sql: str, terms: Sequence[Term], name: str) -> ColumnElement[bool]:
    """The grams of ``text_sql`` include every short term; served by a GIN index on
    ``agentloft_grams(text_sql)``. Keys are folded by PostgreSQL, as the index is."""
    keys = [_pg_fold(bindparam(f"{name}{i}", t.text, type_=String)) for i, t in enumerate(terms)]
    return literal_column(f"agentloft_grams({text_sql})").op("@>")(array(keys))


def pg_match(text_sql: str, folded_sql: str, query: Query, name: str) -> list[ColumnElement[bool]]:
    """Conditions for every term of ``query``: trigram LIKEs on ``folded_sql`` (the folded form of
    ``text_sql`` as the trigram index holds it) for the long terms, one gram containment on ``text_sql``
    for the short ones."""
    conds = [pg_holds(folded_sql, t, f"{name}l{i}") for i, t in enumerate(query.long_terms)]
    if query.short_terms:
        conds.append(pg_has_grams(text_sql, query.short_terms, f"{name}s"))
    return conds


# --- snippets ----------------------------------------------------------------------------------------
#
# A snippet marks the terms in the text folded character by character (``fold_each``), so any cut of the
# text between two characters folds to a cut of the folded text: a piece of a long message is folded and
# marked on its own, and offsets found in the piece are the message's, shifted by where the piece
# starts. (A search matches on the whole text folded, ``fold``, which differs only where NFKC composes
# neighbours, such as a letter and a combining accent; the snippet then shows the place unmarked.)

SNIPPET_WIDTH = 120  # characters of text a snippet shows, "…" aside
SNIPPET_BEFORE = 30  # of which before the first hit
# A text longer than this is not read whole for its snippet: its first SNIPPET_HEAD characters are looked
# at for the first hit (folding stops at the first hit), and if none is there, a piece of
# SNIPPET_PIECE characters around the first place the database finds a term as typed (``raw_forms``),
# SNIPPET_AROUND of them before it. A long message's snippet is then what a short message's would be when
# its first hit is in the head; when it is not, it is cut around the first hit the database sees.
SNIPPET_HEAD = 4_000
SNIPPET_AROUND = 100
SNIPPET_PIECE = 400
# Snippet and best-message work over more characters than this runs on a worker thread (``off_loop``).
# Folding costs 15-55 ns a character (plain to full-width text, measured here), a snippet's scan up to
# ~100: below this a search holds the loop a few milliseconds at most, about what a thread hop costs on a
# busy machine (the 400 short messages of a page, 18,600 characters, fold in 0.3 ms).
OFF_LOOP_CHARS = 50_000
_SCAN_BLOCK = 512  # characters folded at a time while looking for the first hit
_CHAR_FOLDS_MAX = 65_536
_T = TypeVar("_T")


class _CharFolds(dict[int, str]):
    """``fold`` of each character met so far, by code point: ``str.translate`` folds a text character by
    character through it at C speed (~50 ns a character). Calling ``fold`` per character in a Python loop
    cost ~7 us a character: 0.7 s for the snippet of one 99,000-character message. Starts over at
    ``_CHAR_FOLDS_MAX`` entries, so a text of every code point cannot grow it without end."""

    def __missing__(self, code: int) -> str:
        if len(self) >= _CHAR_FOLDS_MAX:
            self.clear()
        folded = self[code] = fold(chr(code))
        return folded


_CHAR_FOLDS = _CharFolds()


def fold_each(text: str) -> str:
    """``text`` folded character by character: ``fold`` of each character, joined."""
    return text.lower() if text.isascii() else text.translate(_CHAR_FOLDS)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def raw_forms(terms: Sequence[Term]) -> list[str]:
    """The forms of the terms a database looks for in the stored text under its ``lower()`` to find where
    a long text's first hit is: as typed, in NFKC, and folded; one of those that only ASCII case tells
    apart (SQLite's ``lower()`` folds only ASCII; each form costs a pass over the text)."""
    forms = {form.translate(_ASCII_LOWER): form for t in terms for form in (t.key, t.text, t.typed)}
    return list(forms.values())


@dataclass(frozen=True)
class Snippet:
    """A short plain-text excerpt and where the terms are in it (``[start, end)`` character offsets)."""

    text: str
    highlights: list[tuple[int, int]]

    def pieces(self) -> list[tuple[str, bool]]:
        """The text cut at the highlights, in order: (piece, is a hit); no empty pieces."""
        out: list[tuple[str, bool]] = []
        at = 0
        for start, end in self.highlights:
            out += [(self.text[at:start], False), (self.text[start:end], True)]
            at = end
        out.append((self.text[at:], False))
        return [(piece, hit) for piece, hit in out if piece]


def _folded_with_map(text: str) -> tuple[str, list[int]]:
    """``fold_each(text)``, with the index in ``text`` of every folded character."""
    where: list[int] = []
    for i, ch in enumerate(text):
        where.extend([i] * len(_CHAR_FOLDS[ord(ch)]))
    return fold_each(text), where


def first_hit(text: str, keys: Sequence[str]) -> int | None:
    """The index in ``text`` of the character where the first occurrence of any key begins (in
    ``fold_each(text)``), or None. Folds a block at a time and stops at the block of the first hit, so a
    hit near the start of a long text costs what a short text costs."""
    longest = max((len(k) for k in keys), default=0)
    if not longest:
        return None
    tail = ""  # the end of the text folded so far, where a key may begin that ends in the next block
    for at in range(0, len(text), _SCAN_BLOCK):
        folded = tail + fold_each(text[at:at + _SCAN_BLOCK])
        found = [i for i in (folded.find(k) for k in keys) if i >= 0]
        if found:
            return _source_index(text, at, min(found) - len(tail))
        tail = folded[len(folded) - longest + 1:] if longest > 1 else ""
    return None


def _source_index(text: str, at: int, offset: int) -> int:
    """The index of the character of ``text`` whose folding holds the folded character ``offset`` places
    from where ``text[at]``'s folding begins (a negative offset: before it)."""
    i = at
    while offset < 0:  # a hit that began in the previous block's tail
        i -= 1
        offset += len(_CHAR_FOLDS[ord(text[i])])
    while offset >= (size := len(_CHAR_FOLDS[ord(text[i])])):
        offset -= size
        i += 1
    return i


def _spans(text: str, lo: int, hi: int, keys: Sequence[str]) -> list[tuple[int, int]]:
    """Every key's occurrences in ``text[lo:hi]`` (folded), as merged ``[start, end)`` spans of ``text``."""
    folded, where = _folded_with_map(text[lo:hi])
    spans: list[tuple[int, int]] = []
    for key in keys:
        start = folded.find(key)
        while start >= 0:
            end = start + len(key)
            spans.append((lo + where[start], lo + where[end - 1] + 1))
            start = folded.find(key, end)
    return _merge(sorted(spans))


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def snippet(text: str, terms: Sequence[Term], width: int = SNIPPET_WIDTH, before: int = SNIPPET_BEFORE, *,
            cut_before: bool = False, cut_after: bool = False) -> Snippet:
    """About ``width`` characters of ``text`` (whitespace folded to single spaces) starting a little
    before the first term found, "…" where it was cut, with every term's occurrences marked. ``text`` may
    be a piece of a longer text: ``cut_before``/``cut_after`` say that the text went on before/after it.

    Only the text up to the first hit and a window after it are folded (``first_hit``, ``_spans``): every
    occurrence that can show lies within ``width`` plus the longest key of the first hit (no character
    folds to nothing, so a key covers at most its own length of text)."""
    flat = " ".join(text.split())
    keys = [t.key for t in terms]
    first = first_hit(flat, keys)
    spans = [] if first is None else _spans(flat, first, first + width + max(map(len, keys)), keys)
    start = max(0, spans[0][0] - before) if spans else 0
    if start and spans and spans[0][1] - start > width:  # a long first hit: show it from its start
        start = spans[0][0]
    end = min(len(flat), start + width)
    prefix = "…" if start > 0 or cut_before else ""
    suffix = "…" if end < len(flat) or cut_after else ""
    shift = len(prefix) - start
    marks = [(max(s, start) + shift, min(e, end) + shift) for s, e in spans if s < end and e > start]
    return Snippet(prefix + flat[start:end] + suffix, marks)


async def off_loop(chars: int, work: Callable[[], _T]) -> _T:
    """``work()``, on a worker thread when it handles more than ``OFF_LOOP_CHARS`` characters of text, so
    that a search over long texts does not hold up other requests; in place otherwise."""
    if chars <= OFF_LOOP_CHARS:
        return work()
    return await asyncio.to_thread(work)
