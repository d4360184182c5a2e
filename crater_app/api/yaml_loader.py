"""YAML request bodies read with the YAML 1.2 core schema (PyYAML implements YAML 1.1), safely.

PyYAML's ``SafeLoader`` resolves plain scalars by YAML 1.1's rules, which surprise people who write YAML 1.2 (the
version since 2009, and what Kubernetes tooling writes): ``0600`` is the octal 384, ``yes``/``no``/``on``/``off``
are booleans (``name: no`` is ``False``, a top-level ``on:`` key is ``True``), ``1:30`` is 90 (base 60),
``2030-01-01`` a date and ``=`` a "value". This loader resolves them as the YAML 1.2.2 core schema (§10.3.2) does:

=========  ====================================================================  ==========================
tag        plain scalar                                                          value
=========  ====================================================================  ==========================
null       ``null``, ``Null``, ``NULL``, ``~``, nothing                              ``None``
bool       ``true``, ``True``, ``TRUE``, ``false``, ``False``, ``FALSE``             ``True`` / ``False``
int        ``[-+]?[0-9]+`` (decimal: ``0600`` is 600), ``0o[0-7]+``, ``0x[0-9a-fA-F]+``   ``int``
float      ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?``, ``.inf``, ``.nan``   ``float``
str        anything else (``yes``, ``on``, ``1_000``, ``1:30``, ``2030-01-01``)       ``str``
=========  ====================================================================  ==========================

Explicit tags (``!!int 0600``) read the same way. Merge keys (``<<``, a YAML 1.1 type that Kubernetes manifests
use) still merge. Only the safe tags construct anything: ``!!python/...`` is refused. A mapping key given twice is
refused with its full path (:mod:`crater_app.domain.field_paths`), checked on the node graph before construction
(each node once: an alias bomb costs no more than its text).

:func:`dump` writes YAML that reads back the same with this loader and with YAML 1.1 readers (PyYAML, older
tools): a string that either would read as something else (``yes``, ``0o17``, ``1e3``, ``0600``) is quoted.
"""

from __future__ import annotations

import re
import sys
from typing import Callable

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from crater_app.domain import field_paths

_TAG = "tag:yaml.org,2002:"
MERGE_TAG = _TAG + "merge"
#: the most documents one body may hold (``---`` separated): what would a request do with more
MAX_DOCUMENTS = 100
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")


class DuplicateKey(yaml.YAMLError):
    """A mapping key given twice: ``key`` as written, ``path`` its full field path, ``mark`` where (line/column)."""

    def __init__(self, key: str, path: str, mark) -> None:
        super().__init__(f"found key {key[:64]!r} twice")
        self.key, self.path, self.problem_mark = key, path, mark


class TooManyDocuments(yaml.YAMLError):
    """The stream holds more than :data:`MAX_DOCUMENTS` documents."""


def _construct_int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    """A core-schema integer: decimal (leading zeros are decimal), ``0o`` octal or ``0x`` hexadecimal.

    Raises:
        yaml.constructor.ConstructorError: anything else (``!!int 1_000``). ValueError: over Python's limit of
        4300 digits (``sys.get_int_max_str_digits``).
    """
    text = loader.construct_scalar(node)
    if not _INT.fullmatch(text):
        raise yaml.constructor.ConstructorError(None, None, f"{text[:32]!r} is not an integer", node.start_mark)
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    if len(text) > sys.get_int_max_str_digits():
        raise ValueError("too many digits")
    return int(text, 10)


def _construct_bool(loader: yaml.SafeLoader, node: ScalarNode) -> bool:
    """``true``/``false`` in any of the core schema's cases (an explicit ``!!bool yes`` is refused)."""
    text = loader.construct_scalar(node)
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    raise yaml.constructor.ConstructorError(None, None, f"{text[:32]!r} is not a boolean", node.start_mark)


class Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the YAML 1.2 core schema's resolvers (see the module) and duplicate keys refused."""

    yaml_implicit_resolvers: dict = {}

    def construct_document(self, node):
        """Refuse a duplicated key anywhere in the document, then construct it as ``SafeLoader`` does."""
        check_unique_keys(node)
        return super().construct_document(node)


Loader.add_constructor(_TAG + "int", _construct_int)
Loader.add_constructor(_TAG + "bool", _construct_bool)
for _tag, _pattern, _first in (
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+.0123456789")),
    ("merge", r"^(?:<<)$", ["<"]),
):
    Loader.add_implicit_resolver(_TAG + _tag, re.compile(_pattern), _first)


def check_unique_keys(root) -> None:
    """Raise :class:`DuplicateKey` for the first mapping (in document order) that gives a key twice; keys are the
    same when their resolved tag and text are (``1`` and ``"1"`` differ). Merge keys (``<<``) may repeat."""
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        children: list[tuple[object, str]] = []
        if isinstance(node, MappingNode):
            keys: set[tuple[str, str]] = set()
            for key_node, value in node.value:
                if not isinstance(key_node, ScalarNode):
                    children.append((value, field_paths.key(path, "?")))
                    continue
                if key_node.tag == MERGE_TAG:
                    children.append((value, path))
                    continue
                ident = (key_node.tag, key_node.value)
                if ident in keys:
                    raise DuplicateKey(key_node.value, field_paths.key(path, key_node.value), key_node.start_mark)
                keys.add(ident)
                children.append((value, field_paths.key(path, key_node.value)))
        elif isinstance(node, SequenceNode):
            children = [(value, field_paths.item(path, i)) for i, value in enumerate(node.value)]
        stack.extend(reversed(children))


def load_documents(text: str, loader: Callable[[str], Loader] = Loader) -> list[object]:
    """Every document of the YAML stream ``text`` (``---`` separated; an empty stream is ``[None]``).

    Raises:
        yaml.YAMLError: not valid YAML (``problem_mark`` where), :class:`DuplicateKey`, :class:`TooManyDocuments`;
        ValueError: an integer of over 4300 digits; RecursionError: nested too deeply.
    """
    reader = loader(text)
    try:
        documents: list[object] = []
        while reader.check_data():
            if len(documents) == MAX_DOCUMENTS:
                raise TooManyDocuments(f"more than {MAX_DOCUMENTS} documents")
            documents.append(reader.get_data())
        return documents or [None]
    finally:
        reader.dispose()


class Dumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that quotes a string whenever the core schema (:class:`Loader`) or YAML 1.1 (PyYAML's own
    resolvers) would read its plain form as another type, and writes no aliases (the data must hold no cycle)."""

    yaml_implicit_resolvers: dict = {
        first: [*yaml.SafeDumper.yaml_implicit_resolvers.get(first, []), *Loader.yaml_implicit_resolvers.get(first, [])]
        for first in set(yaml.SafeDumper.yaml_implicit_resolvers) | set(Loader.yaml_implicit_resolvers)
    }

    def ignore_aliases(self, data: object) -> bool:
        """Never an anchor and alias (``&id001``/``*id001``): an object given twice is written out twice, as a
        person writes it."""
        return True


def dump(data: object) -> str:
    """``data`` (plain dicts, lists, strings, numbers, booleans, ``None``) as block-style YAML, keys in their order,
    non-ASCII text as is; :func:`load_documents` reads it back equal."""
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
