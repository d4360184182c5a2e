"""Translations of the console and of every service message: ``en.json`` and ``zh-CN.json`` hold the same keys
(pure Python, no Reflex).

An area of the console may keep its strings in ``i18n/<area>/en.json`` and ``i18n/<area>/zh-CN.json``; they are
merged into the language's table (a key defined twice is an error).

Components look strings up in the state's ``tr`` dict (``t("jobs.title")`` in ``crater_app.ui``);
state code that builds a sentence uses :func:`translate`. Service messages (errors, job reasons, events,
operation-log details) are a code plus JSON arguments; :func:`render` writes them in a language, with values
formatted as that language writes them (``{limit:duration}``, ``{request:resources}``: see
:mod:`crater_app.i18n.format`); an argument may itself be a message (:func:`part`, written ``{why:message}``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from crater_app.i18n.format import MessageFormatter, part

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES", "lookup", "messages", "normalize", "part", "render", "translate"]

DEFAULT_LANGUAGE = "en"
#: language code -> its own name (shown in the language switch)
LANGUAGES: dict[str, str] = {"en": "English", "zh-CN": "简体中文"}

_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def _load(lang: str) -> dict[str, str]:
    data: dict[str, str] = {}
    for path in [_DIR / f"{lang}.json", *sorted(_DIR.glob(f"*/{lang}.json"))]:
        with open(path, encoding="utf-8") as fh:
            part = json.load(fh)
        name = path.relative_to(_DIR)
        if not isinstance(part, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in part.items()):
            raise ValueError(f"i18n/{name} must be an object of strings")
        twice = sorted(set(part) & set(data))
        if twice:
            raise ValueError(f"i18n/{name} defines keys already defined elsewhere: {', '.join(twice[:5])}")
        data.update(part)
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


def lookup(lang: object, key: str) -> str | None:
    """The template of ``key`` in ``lang``, else in English, else ``None``."""
    return messages(lang).get(key) or _load(DEFAULT_LANGUAGE).get(key)


def render(lang: object, key: str, args: Mapping[str, object] | None = None, fallback: str | None = None) -> str:
    """The message ``key`` in ``lang`` (English when ``lang`` lacks it) filled from ``args``, each value written
    as its placeholder's format says (see :mod:`crater_app.i18n.format`).

    Args:
        fallback: returned when no catalogue has ``key`` or ``args`` do not fit its template (default: ``key``
            itself), so a message is never lost.
    """
    language = normalize(lang)
    template = lookup(language, key)
    if template is None:
        return key if fallback is None else fallback
    if not args:
        args = {}
    try:
        return MessageFormatter(language, lambda k: lookup(language, k)).vformat(template, (), dict(args))
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return key if fallback is None else fallback
