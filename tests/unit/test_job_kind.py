"""JobSpec ``kind`` (batch | interactive) and ``preemptible`` (issue 3)."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import validate_spec

BASE = {"name": "nb", "command": ["jupyter", "lab"]}


def test_defaults_and_accepted_values():
    spec = validate_spec(BASE)
    assert (spec.kind, spec.preemptible) == ("batch", False)
    spec = validate_spec({**BASE, "kind": "interactive", "preemptible": True})
    assert (spec.kind, spec.preemptible) == ("interactive", True)


@pytest.mark.parametrize("raw, field, words", [
    ({"kind": "service"}, "kind", "must be one of batch, interactive"),
    ({"kind": 1}, "kind", "kind"),
    ({"preemptible": "yes"}, "preemptible", "preemptible"),
    ({"preemptible": 1}, "preemptible", "preemptible"),
])
def test_bad_values_name_the_field(raw, field, words):
    with pytest.raises(InvalidInput) as err:
        validate_spec({**BASE, **raw})
    assert err.value.field == field and words in err.value.message
