"""Translate the service's English event reasons and status sentences for the console (pure: no Reflex, no I/O).

The services, the placement code and the cluster backend describe what happened to a job in English:
a one-word *reason* on each event (``Completed``, ``Queued``, ...) and a short *message* sentence
(``exited with code 3``, ``queued: position 2, behind 1 earlier job(s)``). The console shows them in the
user's language: a known reason word has an i18n key ``reason.<Word>``; a sentence of a known shape is
matched with a regular expression and rebuilt from a parameterised i18n template (``msg.<name>``).
Anything else, such as an error text from the backend, is shown exactly as the service wrote it.
Parameters (user names, image names, node names) stay as they were; the console renders them escaped.
"""

from __future__ import annotations

import re

from crater_app import i18n
from crater_app.services import admission
from crater_app.state import views

#: Event reasons the services and backends write (an i18n key ``reason.<word>`` exists for each).
KNOWN_REASONS: tuple[str, ...] = (
    "Submitted", "HostEnvironment", "Queued", "Started", "Completed", "Error", "Cancelled", "CancelRequested",
    "DeadlineExceeded", "ProcessLost", "Resubmitted", "Lost", "BackendState", "IgnoredTransition", "Adopted",
    "StartError", "Held", "Admitted", "Preempted", "Reclaiming",
    # crater_app/services/approvals.py
    "RuntimeExtended", "ReclaimLocked", "Approved", "Rejected",
)

# (i18n key, pattern matched against the whole sentence). The first match wins, so a specific shape comes
# before a more general one of the same start. Named groups fill the template's {placeholders}.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern, re.DOTALL))
    for key, pattern in (
        # crater_app/services/jobs.py
        ("msg.waiting_for_placement", r"waiting for placement"),
        ("msg.submitted_by", r"submitted by (?P<user>\S+)"),
        ("msg.host_environment",
         r"image '(?P<image>.*)' recorded; the local backend runs the command in the host environment"),
        ("msg.cancel_requested_by", r"cancel requested by (?P<user>\S+)"),
        ("msg.cancelled_by", r"cancelled by (?P<user>\S+)"),
        # crater_app/domain/placement.py (the reason of a Queued job)
        ("msg.queued_position", r"queued: position (?P<pos>\d+), behind (?P<ahead>\d+) earlier job\(s\)"),
        ("msg.waiting_for_devices", r"waiting for (?P<count>\d+) × (?P<resource>.+?); (?P<free>\d+) free"),
        ("msg.waiting_for_cpu", r"waiting for (?P<amount>\S+) cpu; (?P<free>\S+) free"),
        ("msg.waiting_for_memory", r"waiting for (?P<amount>\S+ \S+) memory; (?P<free>\S+ \S+) free"),
        # crater_app/cluster/local.py
        ("msg.started_on_with_devices", r"started on (?P<node>\S+) with devices (?P<devices>[\d,]+)"),
        ("msg.started_on", r"started on (?P<node>\S+)"),
        ("msg.exited_with_code", r"exited with code (?P<code>-?\d+)"),
        ("msg.max_runtime_exceeded", r"max_runtime of (?P<s>\d+) s exceeded"),
        ("msg.cancelled", r"cancelled"),
        ("msg.process_lost_adopted",
         r"the job's process ended while Crater was not running and left no exit status"),
        ("msg.process_lost", r"the job's process ended without recording an exit status"),
        ("msg.start_error", r"the job could not be started: (?P<detail>.*)"),
        # crater_app/services/approvals.py (the reason of a large job approved, waiting for admission)
        ("msg.admission_approved", r"waiting for admission \(approved\)"),
        # crater_app/services/admission.py
        ("msg.admitted", r"admitted: it fits the project's quota now"),
        # crater_app/services/reconcile.py
        ("msg.started_with_devices", r"started with devices \[(?P<devices>[\d, ]*)\]"),
        ("msg.resubmitted", r"the backend did not know this job; it was handed to it again"),
        ("msg.lost", r"the backend lost this job"),
        ("msg.lost_running", r"the backend has no record of this running job"),
        ("msg.ignored_transition",
         r"backend moved (?P<current>\w+) -> (?P<target>\w+), which Crater does not allow"),
        ("msg.adopted", r"still running after Crater restarted; re-adopted by (?P<holder>\S+)"),
    )
)
_PHASE_PARAMS = frozenset({"current", "target"})  # phase words in a sentence, translated as phases
_PHASES = frozenset({"Held", "Queued", "Running", "Succeeded", "Failed", "Cancelled"})
_STOPPING = re.compile(r"stopping: (?P<inner>.+)", re.DOTALL)

#: The i18n keys of the sentence templates (each exists in every language; tests/unit/test_i18n.py checks).
MESSAGE_KEYS: tuple[str, ...] = tuple(key for key, _ in _PATTERNS) + ("msg.stopping",)


def reason_text(lang: object, reason: str) -> str:
    """The event reason word ``reason`` in ``lang`` (``reason.<word>``), or ``reason`` itself when unknown."""
    if reason in KNOWN_REASONS:
        return i18n.translate(lang, f"reason.{reason}")
    return reason


def job_reason_text(lang: object, row: dict[str, str]) -> str:
    """A job's status sentence in ``lang`` from a console row (``views.job_row``/``views.job_detail``): a hold or
    preemption sentence from its ``reason_code``/``reason_args`` (``services.admission.reason_text``), else the
    backend's sentence through :func:`message_text`."""
    reason = row.get("reason", "")
    code = row.get("reason_code", "")
    if code:
        return admission.reason_text(lang, code, views.reason_args(row), reason)
    return message_text(lang, reason)


def message_text(lang: object, message: str) -> str:
    """The status sentence ``message`` in ``lang`` when it has a known shape, else ``message`` unchanged."""
    if not message:
        return message
    stopping = _STOPPING.fullmatch(message)
    if stopping is not None:
        inner = message_text(lang, stopping["inner"])
        return i18n.translate(lang, "msg.stopping", inner=inner)
    for key, pattern in _PATTERNS:
        found = pattern.fullmatch(message)
        if found is not None:
            params = found.groupdict()
            for name in _PHASE_PARAMS.intersection(params):
                params[name] = i18n.translate(lang, f"phase.{params[name]}") if params[name] in _PHASES else params[name]
            return i18n.translate(lang, key, **params)
    return message
