"""Request bodies: JSON or YAML by ``Content-Type``, UTF-8, at most 2 MiB, decoded to plain objects.

Accepted media types: ``application/json`` (also when the request has no ``Content-Type``) and any ``+json`` type
(RFC 6839 structured syntax suffix, e.g. ``application/merge-patch+json``); ``application/yaml`` (RFC 9512), its
older names ``application/x-yaml`` and ``text/yaml``, and any ``+yaml`` type. The header is read as RFC 9110 §8.3.1
writes it (``type/subtype`` tokens, then ``; name=value`` parameters): anything else - another type, a malformed
header such as ``;;;``, a ``charset`` other than ``utf-8`` (JSON is UTF-8, RFC 8259 §8.1; Crater reads YAML as
UTF-8 too) - is refused with 415 and what Crater reads, whether or not a body was sent. YAML is read with the YAML 1.2
core schema (:mod:`crater_app.api.yaml_loader`). Errors name the field by its full path
(:mod:`crater_app.domain.field_paths`) and give decoding problems as line, column and a reason code, in the
caller's language.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Iterable

import yaml
from fastapi import Request

from crater_app.api import yaml_loader
from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput, TooLarge, UnsupportedMediaType, echo
from crater_app.domain.naming import is_text

MAX_BODY_BYTES = 2 * 1024 * 1024
JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
#: the media types a body may have, as the 415 answer lists them (and its ``Accept`` header)
ACCEPTED_TYPES = JSON_TYPES + YAML_TYPES
#: the one character encoding Crater reads (a ``charset`` parameter may name it, in any case, or be left out)
CHARSETS = ("utf-8",)
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §5.6.2
_PARAMETER = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)=("(?:[^"\\]|\\.)*"|[!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*')

# CPython's json messages (json/decoder.py, Modules/_json.c) -> the reason codes the catalogues translate
# (``http.json_reason.<code>``): a client reads the code, a person the sentence, never the parser's English.
_JSON_REASONS = (
    ("Expecting value", "value_expected"), ("Expecting property name", "name_expected"),
    ("Expecting ':'", "colon_expected"), ("Expecting ','", "comma_expected"),
    ("Unterminated string", "unterminated_string"), ("Invalid control character", "control_character"),
    ("Invalid \\uXXXX", "unicode_escape"), ("Invalid \\escape", "escape"), ("Extra data", "extra_data"),
    ("Illegal trailing comma", "trailing_comma"),
)
# PyYAML's problems -> ``http.yaml_reason.<code>`` (first match wins; anything else is ``syntax``)
_YAML_REASONS = (
    ("mapping values are not allowed", "mapping_value"), ("that cannot start any token", "character"),
    ("could not find expected ':'", "colon_expected"), ("expected ',' or ']'", "sequence_end"),
    ("expected ',' or '}'", "mapping_end"), ("expected <block end>", "indentation"), ("did not find expected", "indentation"),
    ("undefined alias", "alias"), ("duplicate anchor", "anchor"), ("unexpected end of stream", "unterminated"),
    ("unknown escape", "escape"), ("could not determine a constructor", "tag"), ("unhashable key", "complex_key"),
    ("is not an integer", "integer"), ("is not a boolean", "boolean"), ("expected a mapping", "merge"),
    ("special characters are not allowed", "character"),
)


def _media_type(declared: str) -> tuple[str, dict[str, str]] | None:
    """``(type/subtype in lower case, parameters)`` of a ``Content-Type`` value, or ``None`` when it is not one
    (RFC 9110 §8.3.1: ``type "/" subtype *( OWS ";" OWS [ parameter ] )``)."""
    head, _, rest = declared.partition(";")
    kind, slash, subtype = head.strip(" \t").partition("/")
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(subtype):
        return None
    params: dict[str, str] = {}
    for part in rest.split(";") if rest else ():
        if not part.strip(" \t"):
            continue
        found = _PARAMETER.fullmatch(part)
        if found is None:
            return None
        value = found[2]
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[found[1].lower()] = value
    return f"{kind}/{subtype}".lower(), params


def body_format(request: Request) -> str:
    """``"json"`` or ``"yaml"``: how the body of ``request`` is read, from its ``Content-Type`` (no header, or an
    empty one, is JSON).

    Raises:
        UnsupportedMediaType: ``http.unsupported_media_type`` (a malformed header or a type Crater does not read;
            ``content_type`` as sent, the readable types in ``accepted``), ``http.unsupported_charset``
            (``charset`` as sent; ``charsets``, ``accepted``). Field ``Content-Type``.
    """
    declared = request.headers.get("content-type")
    if declared is None or not declared.strip(" \t"):
        return "json"
    parsed = _media_type(declared)
    media_type = parsed[0] if parsed else ""
    if media_type in JSON_TYPES or media_type.endswith("+json"):
        kind = "json"
    elif media_type in YAML_TYPES or media_type.endswith("+yaml"):
        kind = "yaml"
    else:
        shown = echo(media_type if parsed else declared.strip(" \t"))
        raise UnsupportedMediaType("http.unsupported_media_type", "Content-Type", content_type=shown,
                                   accepted=list(ACCEPTED_TYPES))
    charset = parsed[1].get("charset") if parsed else None
    if charset is not None and charset.lower() not in CHARSETS:
        raise UnsupportedMediaType("http.unsupported_charset", "Content-Type", charset=echo(charset),
                                   charsets=list(CHARSETS), accepted=list(ACCEPTED_TYPES))
    return kind


async def read_body(request: Request) -> bytes:
    """The raw body of ``request``, read once (later calls get the same bytes) and at most :data:`MAX_BODY_BYTES`.

    Raises:
        TooLarge: over 2 MiB (by ``Content-Length`` before reading, or while reading a streamed body).
    """
    cached = getattr(request.state, "crater_body", None)
    if cached is not None:
        return cached
    declared = request.headers.get("content-length")
    if declared and declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise TooLarge("http.body_too_large", None, limit=MAX_BODY_BYTES)
    data = bytearray()  # not bytes: 'data += chunk' would copy the whole body per chunk (tiny chunks: quadratic)
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise TooLarge("http.body_too_large", None, limit=MAX_BODY_BYTES)
    body = bytes(data)
    request.state.crater_body = body
    return body


async def decode_documents(request: Request) -> list[object]:
    """Read and decode the body by ``Content-Type`` (see :func:`body_format`): one object for JSON, every document
    of a YAML stream (``---`` separated, at most 100; empty documents of a stream of several are dropped, as
    ``kubectl`` does).

    Raises:
        UnsupportedMediaType: see :func:`body_format`. TooLarge: over 2 MiB. InvalidInput: an empty body, one that
            is not valid JSON/YAML (``line``, ``column`` and a ``reason`` code), not UTF-8 (``offset``), nested too
            deeply, with a key given twice (field: the key's path), ``NaN``/``Infinity``, an integer of over 4300
            digits, or text that no layer can store (a lone surrogate, NUL; field: its path).
    """
    kind = body_format(request)
    data = await read_body(request)
    if not data.strip():
        raise InvalidInput("http.body_empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("http.body_encoding", None, offset=exc.start) from None
    return decode_text(text, kind)


def decode_text(text: str, kind: str = "yaml") -> list[object]:
    """The documents of ``text`` read as ``kind`` (``"json"``: one; ``"yaml"``: every document of the stream, empty
    ones of a stream of several dropped), as a request body is read (:func:`decode_documents`): the console's YAML
    editor submits through this too.

    Raises:
        InvalidInput: not valid JSON/YAML (``line``, ``column``, ``reason``), nested too deeply, a key given twice
            (field: the key's path), ``NaN``/``Infinity``, an integer of over 4300 digits, more than 100 documents,
            or text that no layer can store (field: its path).
    """
    documents = _yaml(text) if kind == "yaml" else [_json(text)]
    if len(documents) > 1:
        documents = [d for d in documents if d is not None] or [None]
    for document in documents:
        bad = _first_non_text(document)
        if bad is not None:
            raise InvalidInput("http.body_text", bad or None, path=bad or "body")
    return documents


def one_document(documents: list[object]) -> object:
    """The only document of ``documents`` (see :func:`decode_documents`).

    Raises:
        InvalidInput: ``http.body_documents`` (``count``): a YAML stream of several documents.
    """
    if len(documents) != 1:
        raise InvalidInput("http.body_documents", None, count=len(documents))
    return documents[0]


async def decode_body(request: Request) -> object:
    """The body as one decoded object (:func:`decode_documents`, then :func:`one_document`)."""
    return one_document(await decode_documents(request))


async def decode_object(request: Request, allowed: Iterable[str]) -> dict:
    """The request body (see :func:`decode_body`) as an object with only ``allowed`` keys.

    Raises:
        InvalidInput: not an object (the allowed fields in ``fields``), or an unknown key (the first one, named as
            the field, with the allowed keys in ``allowed``); and what :func:`decode_body` raises.
    """
    names = sorted(allowed)
    body = await decode_body(request)
    if not isinstance(body, dict):
        raise InvalidInput("http.body_object", None, fields=names)
    unknown = sorted((k for k in body if k not in names), key=str)
    if unknown:
        raise InvalidInput("http.body_unknown_field", field_paths.key(None, unknown[0]),
                           name=field_paths.shown(unknown[0]), allowed=names)
    return body


async def decode_optional_object(request: Request, allowed: Iterable[str]) -> dict:
    """The body as :func:`decode_object` reads it, or ``{}`` when the request has no body at all. A declared
    ``Content-Type`` is checked either way (a 415 for a type Crater does not read, with or without a body)."""
    body_format(request)
    if request.headers.get("content-length") in (None, "0") and "transfer-encoding" not in request.headers:
        return {}
    return await decode_object(request, allowed)


# ---- JSON --------------------------------------------------------------------------------------------------------
class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_constant(name: str) -> object:
    raise _Constant(name)


class _Duplicate(ValueError):
    """A key given twice (raised from inside the parser, which does not know where the object is)."""


class _WithDuplicate(dict):
    """An object whose key ``duplicate`` was given twice (the second, slow parse that finds its path)."""

    duplicate: str = ""


# A key given twice is refused, not resolved to its last value: a reader of the document (a reviewer, another
# tool) would otherwise see a different spec than the one that runs.
def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate()
    return out


def _marking_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    marked = _WithDuplicate(out)
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            marked.duplicate = name
            break
        seen.add(name)
    return marked


def _duplicate_path(text: str) -> tuple[str, str]:
    """``(path, key)`` of the first key given twice in the JSON ``text`` (document order)."""
    stack: list[tuple[object, str]] = [(json.loads(text, object_pairs_hook=_marking_duplicates), "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _WithDuplicate):
            return field_paths.key(path, node.duplicate), node.duplicate
        if isinstance(node, dict):
            stack.extend(reversed([(v, field_paths.key(path, k)) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([(v, field_paths.item(path, i)) for i, v in enumerate(node)]))
    return "", ""


def _json(text: str) -> object:
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        reason = next((code for prefix, code in _JSON_REASONS if exc.msg.startswith(prefix)), "syntax")
        raise InvalidInput("http.body_json", None, line=exc.lineno, column=exc.colno, reason=reason) from None
    except _Duplicate:
        path, key = _duplicate_path(text)
        raise InvalidInput("http.body_duplicate_key", path or None, key=field_paths.shown(key),
                           path=path) from None
    except _Constant as exc:
        raise InvalidInput("http.body_constant", None, name=exc.name) from None
    except ValueError:  # an integer of over 4300 digits (int() refuses to convert it)
        raise InvalidInput("http.body_number_too_long", None, limit=sys.get_int_max_str_digits()) from None
    except RecursionError:  # e.g. a million '[' fits in 2 MiB
        raise InvalidInput("http.body_nested", None) from None


# ---- YAML --------------------------------------------------------------------------------------------------------
def _yaml(text: str) -> list[object]:
    try:
        return yaml_loader.load_documents(text)
    except yaml_loader.DuplicateKey as exc:
        raise InvalidInput("http.body_duplicate_key", exc.path, key=field_paths.shown(exc.key),
                           path=exc.path) from None
    except yaml_loader.TooManyDocuments:
        raise InvalidInput("http.body_documents_max", None, max=yaml_loader.MAX_DOCUMENTS) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, other control characters)
        before = text[:exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        raise InvalidInput("http.body_yaml", None, line=line, column=column, reason="character") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = f"{getattr(exc, 'problem', None) or ''} {getattr(exc, 'context', None) or ''}"
        reason = next((code for words, code in _YAML_REASONS if words in problem), "syntax")
        if mark is None:
            raise InvalidInput("http.body_yaml_anywhere", None, reason=reason) from None
        raise InvalidInput("http.body_yaml", None, line=mark.line + 1, column=mark.column + 1, reason=reason) from None
    except ValueError:  # an integer of over 4300 digits
        raise InvalidInput("http.body_number_too_long", None, limit=sys.get_int_max_str_digits()) from None
    except RecursionError:
        raise InvalidInput("http.body_nested", None) from None


# ---- text that no layer can store ----------------------------------------------------------------------------------
def _first_non_text(body: object) -> str | None:
    """Path of the first string (value or key) in ``body`` that is not :func:`is_text` (``""`` for the body
    itself), else ``None``. Each container is visited once: YAML aliases share objects, and a billion-laughs body
    must not cost a billion steps."""
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(body, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not is_text(node):
                return path
        elif isinstance(node, (dict, list)) and id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, list):
                stack.extend((value, field_paths.item(path, i)) for i, value in enumerate(node))
                continue
            for key, value in node.items():
                if isinstance(key, str) and not is_text(key):
                    return field_paths.key(path, key)
                stack.append((value, field_paths.key(path, key)))
    return None
