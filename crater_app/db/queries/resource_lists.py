"""Stored resource lists (a job's ``resources``, a project's quota lists, a member's share: JSON columns) as
admission's usages, parsed once per distinct text (the rows are read with a text cast: the text is the cache key)."""

from __future__ import annotations

import json
from functools import lru_cache

from crater_app.domain import quota as q
from crater_app.domain.admission import ProjectQuota
from crater_app.domain.resources import parse_resources


def usage_of_shape(resources_json: str | dict, model: str | None) -> tuple[tuple[str, int], ...]:
    """Usage of a stored ``resources`` JSON text (the cache key: rows read with a text cast are parsed once per
    distinct text). A dict (drivers that decode JSON themselves) goes through sorted-key JSON text."""
    if not isinstance(resources_json, str):
        resources_json = json.dumps(resources_json or {}, sort_keys=True)
    return _usage_of_text(resources_json, model)


@lru_cache(maxsize=4096)
def _usage_of_text(resources_json: str, model: str | None) -> tuple[tuple[str, int], ...]:
    resources = parse_resources(json.loads(resources_json) if resources_json else {})
    return tuple(sorted(q.usage_of(resources, model).items()))


def job_usage(resources: dict, model: str | None) -> q.Usage:
    """What a job with this ``resources`` list (as stored) and ``accelerator_model`` holds, as a usage (cpu
    millicores, memory bytes, devices under the resource name and under ``name:model``). Cached per shape."""
    return dict(usage_of_shape(resources, model))


@lru_cache(maxsize=4096)
def _parsed_list(text: str, section: str) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(q.parse_quota_list(json.loads(text) if text else {}, section).items()))


def quota_list(raw: object, section: str) -> q.Usage:
    """A stored quota list as a usage: ``raw`` is the JSON text (a column read through a text cast: the cache key,
    parsed once per distinct text) or the decoded dict."""
    if not isinstance(raw, str):
        raw = json.dumps(raw or {}, sort_keys=True)
    return dict(_parsed_list(raw, section))


def project_quota(project_id: int, name: str, guarantee: object, deserved: object, capability: object) -> ProjectQuota:
    """A project's stored quota (resource lists as JSON) as the domain's :class:`ProjectQuota`."""
    return ProjectQuota(project_id=project_id, name=name, guarantee=quota_list(guarantee, "guarantee"),
                        deserved=quota_list(deserved, "deserved"), capability=quota_list(capability, "capability"))
