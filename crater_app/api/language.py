"""The language of an API answer, from the request's ``Accept-Language`` header (RFC 9110 §12.5.4)."""

from __future__ import annotations

from crater_app import i18n


def preferred_language(header: str | None) -> str:
    """The supported language (``en`` or ``zh-CN``) the client prefers most, by quality value; ``en`` when the
    header is absent, unparseable or names neither. Any ``zh`` tag (``zh``, ``zh-CN``, ``zh-Hans``, ``zh-TW``)
    picks Simplified Chinese, the only Chinese Crater has; ``*`` counts as English. Ties go to the earlier entry."""
    best, best_q = i18n.DEFAULT_LANGUAGE, 0.0
    for entry in (header or "")[:512].split(","):
        tag, _, params = entry.strip().partition(";")
        tag = tag.strip().lower()
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if not 0.0 < quality <= 1.0:
            continue
        lang = "zh-CN" if tag == "zh" or tag.startswith("zh-") else "en" if tag in ("*", "en") or tag.startswith("en-") else None
        if lang is not None and quality > best_q:
            best, best_q = lang, quality
    return best
