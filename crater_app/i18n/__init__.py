"""Console translations: ``en.json`` and ``zh-CN.json`` hold the same keys (pure Python, no Reflex).

Components look strings up in the state's ``tr`` dict (``t("jobs.title")`` in ``crater_app.ui``);
state code that builds a sentence uses :func:`translate`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DEFAULT_LANGUAGE = "en"
#: language code -> its own name (shown in the language switch)
LANGUAGES: dict[str, str] = {"en": "English", "zh-CN": "简体中文"}

_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def _load(lang: str) -> dict[str, str]:
    with open(_DIR / f"{lang}.json", encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"i18n/{lang}.json must be an object of strings")
    return data


def normalize(lang: object) -> str:
    """``lang`` when it is a supported language code, else :data:`DEFAULT_LANGUAGE`."""
    return lang if isinstance(lang, str) and lang in LANGUAGES else DEFAULT_LANGUAGE


def messages(lang: object) -> dict[str, str]:
    """The translation table for ``lang`` (unknown codes get English). Do not mutate it."""
    return _load(normalize(lang))


def translate(lang: object, key: str, **params: object) -> str:
    """The text for ``key`` in ``lang`` with ``{name}`` placeholders filled from ``params``.

    A key missing from ``lang`` falls back to English, then to the key itself.
    """
    text = messages(lang).get(key) or _load(DEFAULT_LANGUAGE).get(key) or key
    return text.format(**params) if params else text
