"""Validation and pruning of custom objects against their CRD's ``openAPIV3Schema``, as the API server does.

The API server prunes fields the schema does not declare (unless ``x-kubernetes-preserve-unknown-fields``) and
answers ``422 Invalid`` with one cause per violated rule (``field`` like ``spec.tasks[0].replicas``). This is the
mock's own small validator (``jsonschema``'s Draft 7 on the structural schema); it checks what the schema says,
not the server's CEL rules or formats.
"""

from __future__ import annotations

from dataclasses import dataclass

import jsonschema

_TOP = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class Cause:
    """One violation: ``field`` path, ``reason`` (``FieldValueInvalid``, ``FieldValueRequired``, ...),
    ``message`` in the API server's words."""

    field: str
    reason: str
    message: str


def field_path(parts) -> str:
    """``("spec", "tasks", 0, "replicas")`` -> ``spec.tasks[0].replicas``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def prune(schema: dict, value):
    """``value`` without the object fields ``schema`` does not declare (a new value; the input is not changed)."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return value
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            if props is not None and key in props:
                out[key] = prune(props[key], item)
            elif isinstance(extra, dict):
                out[key] = prune(extra, item)
            elif props is None or schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
                out[key] = item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(schema["items"], item) for item in value]
    return value


def prune_object(schema: dict, obj: dict) -> dict:
    """A custom object pruned as the API server prunes it (``apiVersion``, ``kind``, ``metadata`` kept)."""
    body = prune(schema, {k: v for k, v in obj.items() if k not in _TOP})
    return {**{k: obj[k] for k in _TOP if k in obj}, **body}


def validate_object(schema: dict, obj: dict) -> list[Cause]:
    """The violations of ``obj`` (``metadata`` excluded) against ``schema``; ``[]`` when valid."""
    body = {k: v for k, v in obj.items() if k != "metadata"}
    causes = []
    errors = _validator(schema).iter_errors(body)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else ""
            where = field_path([*path, missing])
            causes.append(Cause(where, "FieldValueRequired", "Required value"))
        elif error.validator == "type":
            where = field_path(path)
            causes.append(Cause(where, "FieldValueTypeInvalid",
                                f'Invalid value: "{_kind_of(error.instance)}": {where} in body must be of type '
                                f'{error.validator_value}: "{_kind_of(error.instance)}"'))
        elif error.validator == "enum":
            where = field_path(path)
            allowed = ", ".join(f'"{v}"' for v in error.validator_value)
            causes.append(Cause(where, "FieldValueNotSupported",
                                f'Unsupported value: "{error.instance}": supported values: {allowed}'))
        else:
            where = field_path(path)
            causes.append(Cause(where, "FieldValueInvalid", f"Invalid value: {error.message}"))
    return causes


_VALIDATORS: dict[int, tuple[dict, jsonschema.Draft7Validator]] = {}  # id(schema) -> (schema kept alive, validator)


def _validator(schema: dict) -> jsonschema.Draft7Validator:
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        sub = dict(schema)
        sub["properties"] = {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}
        hit = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft7Validator(sub))
    return hit[1]


def _kind_of(value) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object", type(None): "null"}.get(type(value), "unknown")
