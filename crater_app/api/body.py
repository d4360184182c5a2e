"""Request bodies: JSON or YAML (``application/yaml``), at most 2 MiB, decoded to plain objects."""

from __future__ import annotations

import json
import re

import yaml
from fastapi import Request

from crater_app.domain.errors import CraterError, InvalidInput
from crater_app.domain.naming import is_text

MAX_BODY_BYTES = 2 * 1024 * 1024


class BodyTooLarge(CraterError):
    """The request body is over :data:`MAX_BODY_BYTES`. HTTP 413."""

    kind = "too_large"
    http_status = 413


async def decode_body(request: Request) -> object:
    """Read and decode the body by ``Content-Type`` (YAML for ``*yaml*``, JSON otherwise).

    Raises:
        BodyTooLarge: over 2 MiB. InvalidInput: empty or undecodable body.
    """
    declared = request.headers.get("content-length")
    if declared and declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"request body is {declared} bytes; the limit is {MAX_BODY_BYTES} bytes")
    data = bytearray()  # not bytes: 'data += chunk' would copy the whole body per chunk (tiny chunks: quadratic)
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise BodyTooLarge(f"request body is over the limit of {MAX_BODY_BYTES} bytes")
    data = bytes(data)
    if not data.strip():
        raise InvalidInput("request body is empty; send a JSON (or YAML) object")
    if "yaml" in request.headers.get("content-type", ""):
        try:
            body = yaml.load(data, Loader=_Loader)  # a SafeLoader (no python/* tags)
        except (yaml.YAMLError, ValueError) as exc:  # ValueError: e.g. an integer of over 4300 digits
            raise InvalidInput(f"body is not valid YAML: {str(exc)[:200]}") from None
        except RecursionError:
            raise InvalidInput("body is not valid YAML: nested too deeply") from None
    else:
        try:
            body = json.loads(data, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of over 4300 digits, NaN, a key twice
            raise InvalidInput(f"body is not valid JSON: {str(exc)[:200]}") from None
        except RecursionError:  # e.g. a million '[' fits in 2 MiB
            raise InvalidInput("body is not valid JSON: nested too deeply") from None
    bad = _first_non_text(body)
    if bad is not None:
        raise InvalidInput(
            f"{bad or 'body'}: text must be valid Unicode without NUL characters (no lone surrogate such as \\ud800, "
            "no \\u0000)", bad or None,
        )
    return body


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


# A key given twice is refused, not resolved to its last value: a reader of the document (a reviewer, another
# tool) would otherwise see a different spec than the one that runs.
def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key[:64]!r} appears twice")
        out[key] = value
    return out


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
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"found key '{key_node.value[:64]}' twice", key_node.start_mark,
                        )
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


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


async def decode_object(request: Request, allowed: set[str], what: str) -> dict:
    """The request body (see :func:`decode_body`) as an object with only ``allowed`` keys.

    Raises:
        InvalidInput: not an object (the message says it needs ``what``), or an unknown key (the first one,
            named as the field, with the allowed keys listed); and what :func:`decode_body` raises.
    """
    body = await decode_body(request)
    if not isinstance(body, dict):
        raise InvalidInput(f"body must be an object with {what}")
    unknown = sorted(str(k) for k in set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field '{unknown[0]}'; allowed: {', '.join(sorted(allowed))}", unknown[0])
    return body


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
