"""Request bodies: JSON or YAML by ``Content-Type``, at most 2 MiB, decoded to plain objects.

Accepted media types: ``application/json`` (also when the request has no ``Content-Type``) and any ``+json`` type
(RFC 6839 structured syntax suffix, e.g. ``application/merge-patch+json``); ``application/yaml`` (RFC 9512), its
older names ``application/x-yaml`` and ``text/yaml``, and any ``+yaml`` type. Anything else is refused with 415 and
the accepted types. JSON is UTF-8 (RFC 8259 §8.1).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Iterable

import yaml
from fastapi import Request

from crater_app.domain.errors import InvalidInput, TooLarge, UnsupportedMediaType
from crater_app.domain.naming import is_text

MAX_BODY_BYTES = 2 * 1024 * 1024
JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
#: the media types a body may have, as the 415 answer lists them (and its ``Accept`` header)
ACCEPTED_TYPES = JSON_TYPES + YAML_TYPES
MAX_DETAIL_CHARS = 200


def body_format(request: Request) -> str:
    """``"json"`` or ``"yaml"``: how the body of ``request`` is read, from its ``Content-Type`` (parameters such as
    ``charset`` are ignored; no type or an empty one is JSON).

    Raises:
        UnsupportedMediaType: any other media type (the accepted ones in ``accepted``).
    """
    declared = request.headers.get("content-type", "")
    media_type = declared.partition(";")[0].strip().lower()
    if not media_type or media_type in JSON_TYPES or media_type.endswith("+json"):
        return "json"
    if media_type in YAML_TYPES or media_type.endswith("+yaml"):
        return "yaml"
    raise UnsupportedMediaType("http.unsupported_media_type", "Content-Type", content_type=media_type[:100],
                               accepted=list(ACCEPTED_TYPES))


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


async def decode_body(request: Request) -> object:
    """Read and decode the body by ``Content-Type`` (see :func:`body_format`).

    Raises:
        UnsupportedMediaType: a media type other than JSON or YAML. TooLarge: over 2 MiB. InvalidInput: an empty
            body, one that is not valid JSON/YAML (line and column in the arguments), not UTF-8, nested too
            deeply, with a key given twice, ``NaN``/``Infinity``, an integer of over 4300 digits, or text that no
            layer can store (a lone surrogate, NUL; ``field`` is its path).
    """
    kind = body_format(request)
    data = await read_body(request)
    if not data.strip():
        raise InvalidInput("http.body_empty")
    body = _yaml(data) if kind == "yaml" else _json(data)
    bad = _first_non_text(body)
    if bad is not None:
        raise InvalidInput("http.body_text", bad or None, path=bad or "body")
    return body


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
    unknown = sorted(str(k) for k in set(body) - set(names))
    if unknown:
        raise InvalidInput("http.body_unknown_field", unknown[0][:64], name=unknown[0][:64], allowed=names)
    return body


async def decode_optional_object(request: Request, allowed: Iterable[str]) -> dict:
    """The body as :func:`decode_object` reads it, or ``{}`` when the request has no body at all."""
    if request.headers.get("content-length") in (None, "0") and "transfer-encoding" not in request.headers:
        return {}
    return await decode_object(request, allowed)


# ---- JSON --------------------------------------------------------------------------------------------------------
class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_constant(name: str) -> object:
    raise _Constant(name)


# A key given twice is refused, not resolved to its last value: a reader of the document (a reviewer, another
# tool) would otherwise see a different spec than the one that runs.
def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _json(data: bytes) -> object:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("http.body_encoding", None, offset=exc.start) from None
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InvalidInput("http.body_json", None, line=exc.lineno, column=exc.colno,
                           detail=exc.msg[:MAX_DETAIL_CHARS]) from None
    except _DuplicateKey as exc:
        raise InvalidInput("http.body_duplicate_key", None, key=exc.key[:64]) from None
    except _Constant as exc:
        raise InvalidInput("http.body_constant", None, name=exc.name) from None
    except ValueError:  # an integer of over 4300 digits (int() refuses to convert it)
        raise InvalidInput("http.body_number_too_long", None, limit=sys.get_int_max_str_digits()) from None
    except RecursionError:  # e.g. a million '[' fits in 2 MiB
        raise InvalidInput("http.body_nested", None) from None


# ---- YAML --------------------------------------------------------------------------------------------------------
class _DuplicateYamlKey(yaml.constructor.ConstructorError):
    def __init__(self, key: str, node, key_node) -> None:
        super().__init__("while constructing a mapping", node.start_mark, f"found key '{key[:64]}' twice",
                         key_node.start_mark)
        self.key = key


def _yaml(data: bytes) -> object:
    try:
        return yaml.load(data, Loader=_Loader)  # a SafeLoader (no python/* tags)
    except _DuplicateYamlKey as exc:
        raise InvalidInput("http.body_duplicate_key", None, key=exc.key[:64]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        detail = (getattr(exc, "problem", None) or str(exc))[:MAX_DETAIL_CHARS]
        if mark is None:
            raise InvalidInput("http.body_yaml_detail", None, detail=detail) from None
        raise InvalidInput("http.body_yaml", None, line=mark.line + 1, column=mark.column + 1, detail=detail) from None
    except ValueError:  # an integer of over 4300 digits
        raise InvalidInput("http.body_number_too_long", None, limit=sys.get_int_max_str_digits()) from None
    except RecursionError:
        raise InvalidInput("http.body_nested", None) from None


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping key given twice (merge keys ``<<`` may still be overridden), and
    resolves plain scalars as YAML 1.2 does where YAML 1.1 surprises: no base-60 numbers (``1:30`` stays the text
    ``"1:30"``, not 90) and no implicit timestamps (``2030-01-01T00:00:00Z`` stays text, which the field's own
    parser reads). PyYAML implements YAML 1.1; the resolvers removed here are the ones YAML 1.2 dropped."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise _DuplicateYamlKey(key_node.value, node, key_node)
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml12_resolvers() -> dict:
    """SafeLoader's implicit resolvers without the timestamp one and without base-60 ints and floats."""
    int_tag, float_tag, ts_tag = ("tag:yaml.org,2002:" + t for t in ("int", "float", "timestamp"))
    plain_int = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$")
    plain_float = re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    )
    table: dict = {}
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = []
        for tag, regexp in resolvers:
            if tag == ts_tag:
                continue
            kept.append((tag, plain_int if tag == int_tag else plain_float if tag == float_tag else regexp))
        table[first] = kept
    return table


_Loader.yaml_implicit_resolvers = _yaml12_resolvers()


# ---- text that no layer can store ----------------------------------------------------------------------------------
def _first_non_text(body: object) -> str | None:
    """Dotted path of the first string (value or key) in ``body`` that is not :func:`is_text` (``""`` for the
    body itself), else ``None``. Each container is visited once: YAML aliases share objects, and a billion-laughs
    body must not cost a billion steps."""
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(body, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not is_text(node):
                return path
        elif isinstance(node, (dict, list)) and id(node) not in seen:
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, value in items:
                name = key if isinstance(key, str) else str(key)
                if isinstance(key, str) and not is_text(key):
                    return f"{path}.{key!r}".lstrip(".")
                stack.append((value, f"{path}.{name}".lstrip(".")))
    return None
