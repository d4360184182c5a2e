"""api.yaml_loader: plain scalars resolve as the YAML 1.2 core schema says (not PyYAML's YAML 1.1), keys given
twice are refused with their path, and a stream's documents are read one by one."""

from __future__ import annotations

import math

import pytest
import yaml

from crater_app.api.yaml_loader import MAX_DOCUMENTS, DuplicateKey, TooManyDocuments, load_documents

# (plain scalar, value) - YAML 1.2.2 §10.3.2 "Core Schema"; the YAML 1.1 reading in the comment
CORE_SCHEMA = [
    ("0600", 600),  # 1.1: octal 384
    ("010", 10),  # 1.1: 8
    ("0", 0), ("-0", 0), ("+12", 12), ("-17", -17), ("007", 7),
    ("0o17", 15), ("0x1F", 31), ("0xff", 255),
    ("0b101", "0b101"),  # 1.1: 5; 1.2 has no binary integers
    ("1_000", "1_000"),  # 1.1: 1000
    ("1:30", "1:30"),  # 1.1: 90 (base 60)
    ("0o8", "0o8"), ("0x", "0x"), ("--1", "--1"),
    ("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False), ("FALSE", False),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("y", "y"), ("n", "n"),  # 1.1: booleans
    ("Yes", "Yes"), ("NO", "NO"), ("tRUE", "tRUE"),
    ("null", None), ("Null", None), ("NULL", None), ("~", None), ("", None), ("nULL", "nULL"),
    ("1.5", 1.5), (".5", 0.5), ("1.", 1.0), ("-2.5e3", -2500.0), ("1e3", 1000.0), ("+1E-2", 0.01),
    (".inf", math.inf), ("-.Inf", -math.inf), ("+.INF", math.inf),
    ("2030-01-01", "2030-01-01"), ("2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z"),  # 1.1: timestamps
    ("=", "="),  # 1.1: the "value" type (no constructor: an error)
    ("0.1.2", "0.1.2"), ("1e", "1e"), ("abc", "abc"),
]


@pytest.mark.parametrize(("scalar", "value"), CORE_SCHEMA)
def test_plain_scalars_resolve_by_the_yaml_1_2_core_schema(scalar, value):
    [document] = load_documents(f"v: {scalar}\n")
    assert document == {"v": value} and type(document["v"]) is type(value)
    if scalar:  # keys resolve the same way (a top-level 'on:' stays 'on')
        [as_key] = load_documents(f"{scalar}: v\n")
        assert list(as_key) == [value]


def test_nan_and_quoted_scalars():
    [document] = load_documents("a: .nan\nb: .NaN\nc: '0600'\nd: \"yes\"\ne: !!str 12\nf: !!int 0600\ng: !!int 0x10\n")
    assert math.isnan(document["a"]) and math.isnan(document["b"])
    assert {k: document[k] for k in "cdefg"} == {"c": "0600", "d": "yes", "e": "12", "f": 600, "g": 16}


@pytest.mark.parametrize("text", ["a: !!int 1_000\n", "a: !!int yes\n", "a: !!bool yes\n", "a: !!bool 1\n",
                                  "a: !!python/object/apply:os.system [id]\n"])
def test_explicit_tags_outside_the_core_schema_are_refused(text):
    with pytest.raises(yaml.YAMLError):
        load_documents(text)


@pytest.mark.parametrize(("text", "path", "key", "line"), [
    ("a: 1\na: 2\n", "a", "a", 1),
    ("env:\n  A: 1\n  B: 2\n  A: 3\n", "env.A", "A", 3),
    ("tasks:\n- name: x\n- name: y\n  resources: {cpu: 1, cpu: 2}\n", "tasks[1].resources.cpu", "cpu", 3),
    ("'': 1\n\"\": 2\n", '[""]', "", 1),
])
def test_a_key_given_twice_is_named_by_its_full_path(text, path, key, line):
    with pytest.raises(DuplicateKey) as caught:
        load_documents(text)
    assert (caught.value.path, caught.value.key, caught.value.problem_mark.line) == (path, key, line)


def test_keys_that_only_look_alike_and_merge_keys_are_not_duplicates():
    [document] = load_documents("1: int\n'1': text\nbase: &b {x: 1}\nm:\n  <<: *b\n  <<: {y: 2}\n")
    assert document[1] == "int" and document["1"] == "text" and document["m"] == {"x": 1, "y": 2}


def test_a_stream_is_read_document_by_document():
    assert load_documents("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    assert load_documents("") == [None] and load_documents("a: 1\n---\n") == [{"a": 1}, None]
    assert len(load_documents("---\nx: 1\n" * MAX_DOCUMENTS)) == MAX_DOCUMENTS
    with pytest.raises(TooManyDocuments):
        load_documents("---\nx: 1\n" * (MAX_DOCUMENTS + 1))
