"""JobSpec ``kind`` (batch | interactive), ``preemptible`` and ``requeue_on_preemption``."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import validate_spec

BASE = {"name": "nb", "command": ["jupyter", "lab"]}


def test_defaults_and_accepted_values():
    spec = validate_spec(BASE)
    assert (spec.kind, spec.preemptible, spec.requeue_on_preemption) == ("batch", False, True)
    spec = validate_spec({**BASE, "kind": "interactive", "preemptible": True, "requeue_on_preemption": False})
    assert (spec.kind, spec.preemptible, spec.requeue_on_preemption) == ("interactive", True, False)


@pytest.mark.parametrize("raw, field, words", [
    ({"kind": "service"}, "kind", "must be one of batch, pytorch, mpi, interactive"),
    ({"kind": 1}, "kind", "kind"),
    ({"preemptible": "yes"}, "preemptible", "preemptible"),
    ({"preemptible": 1}, "preemptible", "preemptible"),
    ({"requeue_on_preemption": "no"}, "requeue_on_preemption", "requeue_on_preemption must be a boolean"),
    ({"requeue_on_preemption": None}, "requeue_on_preemption", "requeue_on_preemption must be a boolean"),
])
def test_bad_values_name_the_field(raw, field, words):
    with pytest.raises(InvalidInput) as err:
        validate_spec({**BASE, **raw})
    assert err.value.field == field and words in err.value.message, err.value.message


def test_a_wrong_type_reads_in_chinese():
    with pytest.raises(InvalidInput) as err:
        validate_spec({**BASE, "requeue_on_preemption": "no"})
    assert err.value.message_in("zh-CN") == "requeue_on_preemption 必须是布尔值（true 或 false）"
