"""Token estimates that hold for Chinese as well as English, without a tokenizer dependency.

The seed's rule (1 token ≈ 4 characters) is right for English and about 4× wrong for Chinese, where
common tokenizers spend roughly one token per character. So: every CJK character (Han, kana, Hangul,
full-width punctuation) counts as one token and the rest counts as one token per four characters. The
estimate errs towards more tokens for CJK text, which keeps budgets on the safe side.
"""

from __future__ import annotations

import math
import re

_CJK = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    "\u3200-\u4dbf"  # enclosed CJK, compatibility, Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms
    "\U00020000-\U0003134f"  # Extensions B to G
    "]"
)

LATIN_CHARS_PER_TOKEN = 4


def cjk_chars(text: str) -> int:
    return len(_CJK.findall(text))


def estimate_tokens(text: str | None) -> int:
    """Roughly how many tokens ``text`` costs a model: CJK chars ≈ 1 token, other chars ≈ 1/4 token."""
    if not text:
        return 0
    cjk = cjk_chars(text)
    return cjk + math.ceil((len(text) - cjk) / LATIN_CHARS_PER_TOKEN)
