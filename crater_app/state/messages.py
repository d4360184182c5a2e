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

# The end of a hold sentence: the job's place in its project's queue (the domain names the project again, the
# English hold.<code> templates say "the project"); _WHERE_PROJECT where the sentence named no project before.
_WHERE = r"Position (?P<position>\d+) of (?P<held>\d+) held in (?:project (?P=project)|the project)\."
_WHERE_PROJECT = r"Position (?P<position>\d+) of (?P<held>\d+) held in project (?P<project>\S+)\."

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
        # crater_app/services/approvals.py: the reason of a large job approved, waiting for admission, and the
        # events of a decision (" (approval #N: note)" is taken off first, see _VIA_APPROVAL)
        ("msg.admission_approved", r"waiting for admission \(approved\)"),
        ("msg.runtime_extended", r"max_runtime extended from (?P<old>.+?) to (?P<new>.+?) by (?P<by>.+)"),
        ("msg.reclaim_locked", r"locked against automatic reclamation by (?P<by>.+)"),
        ("msg.large_job_approved", r"approved to run with (?P<count>\d+) accelerators by (?P<by>.+)"),
        ("msg.large_job_rejected",
         r"the request to run it with (?P<count>\d+) accelerators was rejected by (?P<by>[^:\s]+)(?:: (?P<note>.*))?"),
        # crater_app/services/admission.py (approval_hold: a large job's Held event and reason)
        ("hold.approval",
         r"[Ww]aiting for approval: it asks for (?P<requested>\d+) accelerators, more than the (?P<threshold>\d+) a "
         r"job may use without an administrator's approval\.?"),
        # crater_app/services/admission.py
        ("msg.admitted", r"admitted: it fits the project's quota now"),
        ("msg.preempted_for",
         r"preempted for job #(?P<id>\d+) '(?P<name>.*?)' of project '(?P<project>[^']*)', which is below its "
         r"deserved share: (?P<detail>.+)"),
        # crater_app/services/admission.preempted_final_message (a preempted job's final reason)
        ("hold.preempted",
         r"preempted: project '(?P<beneficiary_project>[^']*)' reclaimed its deserved share for job "
         r"#(?P<beneficiary_id>\S+)"),
        ("msg.reclaiming",
         r"reclaiming resources for project '(?P<project>[^']*)': stopping job #(?P<id>\d+) '(?P<name>.*?)' of "
         r"project '(?P<victim_project>[^']*)' \(preemptible, its project is above its deserved share\)"),
        # crater_app/domain/admission.py: the sentence of a Preemption, and the Held events' hold sentences - as
        # the domain writes them ("3 jobs", "held in project p.") and as the English hold.<code> template
        # does ("3 job(s)", "held in the project.")
        ("msg.preempted_detail",
         r"Preempted to return capacity to project (?P<beneficiary_project>\S+), below its deserved share "
         r"\((?P<beneficiary_used>.+?) in use of (?P<beneficiary_deserved>.+?) deserved\): project (?P<project>\S+) "
         r"held (?P<used>.+?) with (?P<deserved>.+?) deserved, and this job was preemptible\."),
        ("hold.quota",
         r"Held by the quota of project (?P<project>\S+): its capability is (?P<limit>.+?), (?P<used>.+?) in use by "
         r"(?P<jobs>\d+) job(?:s|\(s\))? of (?P<users>\d+) user(?:s|\(s\))?, and this job asks for (?P<request>.+?)\. "
         + _WHERE),
        ("hold.share",
         r"Held by your share in project (?P<project>\S+): (?P<limit>.+?), of which (?P<used>.+?) is in use by "
         r"(?P<jobs>\d+) job(?:s|\(s\))? of yours, and this job asks for (?P<request>.+?)\. " + _WHERE),
        ("hold.sessions",
         r"Held: you have (?P<used>\d+) interactive session(?:s|\(s\))? running and your limit is (?P<limit>\d+); "
         r"it starts when one ends\. " + _WHERE_PROJECT),
        ("msg.held_approval",
         r"Waiting for approval: jobs of this size need an administrator's approval before they start\. "
         + _WHERE_PROJECT),
        ("hold.queue",
         r"Waiting in the queue of project (?P<project>\S+): position (?P<position>\d+) of (?P<held>\d+); the job "
         r"at position (?P<ahead>\d+) is held \((?P<blocker>[^)]*)\) and jobs of a project start in order\."),
        ("hold.fairshare",
         r"Waiting for the deserved share of project (?P<project>\S+) \((?P<project_used>.+?) in use of "
         r"(?P<deserved>.+?)\): the machine has (?P<limit>.+?), (?P<used>.+?) in use by (?P<jobs>\d+) "
         r"job(?:s|\(s\))? of (?P<users>\d+) user(?:s|\(s\))?(?: and (?P<reserved>.+?) kept for other projects' "
         r"guarantees)?; only (?P<reclaimable>.+?) can be reclaimed from preemptible jobs of projects above their "
         r"deserved share, and this job asks for (?P<request>.+?)\. " + _WHERE),
        ("hold.capacity",
         r"Waiting for capacity: the machine has (?P<limit>.+?), (?P<used>.+?) in use by (?P<jobs>\d+) "
         r"job(?:s|\(s\))? of (?P<users>\d+) user(?:s|\(s\))?(?: and | \()(?P<reserved>.+?) kept for other "
         r"projects' guarantees\)?, and this job asks for (?P<request>.+?)\. " + _WHERE_PROJECT),
        ("msg.held_capacity",
         r"Waiting for capacity: the machine has (?P<limit>.+?), (?P<used>.+?) in use by (?P<jobs>\d+) "
         r"job(?:s|\(s\))? of (?P<users>\d+) user(?:s|\(s\))?, and this job asks for (?P<request>.+?)\. "
         + _WHERE_PROJECT),
        ("hold.reclaim",
         r"Waiting while capacity is reclaimed for project (?P<beneficiary_project>\S+) \((?P<beneficiary_used>.+?) "
         r"in use of (?P<beneficiary_deserved>.+?) deserved\) from project (?P<project>\S+), above its deserved "
         r"share \((?P<used>.+?) in use of (?P<deserved>.+?) deserved\): preemptible jobs are being stopped\."),
        # crater_app/services/approvals.py: the notes of requests closed or approved by the rule (notifications)
        ("msg.auto_approved_note",
         r"approved automatically: an extension under (?P<max_h>\d+) h, at most once per (?P<window_h>\d+) h per user"),
        ("msg.closed_project_gone", r"its project no longer exists"),
        ("msg.closed_project_expired", r"project '(?P<project>[^']*)' has expired"),
        ("msg.closed_job_gone", r"job #(?P<id>\d+) no longer exists"),
        ("msg.closed_job_ended", r"job (?P<name>\S+) \(#(?P<id>\d+)\) is (?P<phase>\w+)"),
        ("msg.closed_job_not_held",
         r"job (?P<name>\S+) \(#(?P<id>\d+)\) no longer waits for approval \(it is (?P<phase>\w+)\)"),
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
_PHASE_PARAMS = frozenset({"current", "target", "phase"})  # phase words in a sentence, translated as phases
_PHASES = frozenset({"Held", "Queued", "Running", "Succeeded", "Failed", "Cancelled"})
_STOPPING = re.compile(r"stopping: (?P<inner>.+)", re.DOTALL)
# The end of a decision's event (services/approvals.py _apply): " (approval #12)" or " (approval #12: the note)".
_VIA_APPROVAL = re.compile(r"(?P<inner>.+?) \(approval #(?P<id>\d+)(?:: (?P<note>.*))?\)", re.DOTALL)
_AUTO_RULE = "the auto-approval rule"  # who decided when the rule did (services/approvals.py _apply)
# A duration as services/approvals.py writes it: "3600 s (1 h 0 min)", "90 s", or "none".
_DURATION = re.compile(r"(?P<s>\d+) s(?: \((?P<h>\d+) h (?P<m>\d+) min\))?")
_DURATION_PARAMS = frozenset({"old", "new"})
# Amounts as domain.quota.format_amount writes them; only CPU cores have an English word ("4 cores").
_CORES = re.compile(r"(?P<n>\d+) cores?")
_AMOUNT_PARAMS = frozenset({"limit", "used", "request", "reserved", "deserved", "project_used", "reclaimable",
                            "beneficiary_used", "beneficiary_deserved"})
#: Keys whose English text is the service's sentence itself (exact plurals, "held in project p."): in English the
#: sentence is shown as written, not rebuilt from the template.
_AS_WRITTEN_IN_ENGLISH = frozenset(key for key, _ in _PATTERNS if key.startswith("hold.")) | {
    "msg.runtime_extended", "msg.reclaim_locked", "msg.large_job_approved", "msg.large_job_rejected",
    "msg.preempted_for", "msg.reclaiming", "msg.preempted_detail", "msg.held_approval", "msg.held_capacity",
    "msg.auto_approved_note", "msg.closed_project_gone", "msg.closed_project_expired", "msg.closed_job_gone",
    "msg.closed_job_ended", "msg.closed_job_not_held",
}

#: The i18n keys of the sentence templates (each exists in every language; tests/unit/test_i18n.py checks).
MESSAGE_KEYS: tuple[str, ...] = tuple(dict.fromkeys(key for key, _ in _PATTERNS)) + (
    "msg.stopping", "msg.via_approval", "msg.via_approval_note", "msg.auto_rule", "msg.note_suffix",
    "msg.duration_s", "msg.duration_hm", "msg.none", "msg.cores")


def reason_text(lang: object, reason: str) -> str:
    """The event reason word ``reason`` in ``lang`` (``reason.<word>``), or ``reason`` itself when unknown."""
    if reason in KNOWN_REASONS:
        return i18n.translate(lang, f"reason.{reason}")
    return reason


def amount_text(lang: object, amount: object) -> str:
    """An amount as ``domain.quota.format_amount`` writes it, in ``lang``: ``4 cores`` -> ``4 核``; memory
    (``16.0 GiB``), millicores (``500m``) and accelerators (``2 × nvidia.com/gpu``) carry no words and stay."""
    text = str(amount)
    found = _CORES.fullmatch(text)
    return i18n.translate(lang, "msg.cores", n=found["n"]) if found else text


def duration_text(lang: object, text: str) -> str:
    """A duration as ``services.approvals`` writes it (``3600 s (1 h 0 min)``, ``90 s``, ``none``) in ``lang``;
    anything else unchanged."""
    if text == "none":
        return i18n.translate(lang, "msg.none")
    found = _DURATION.fullmatch(text)
    if found is None:
        return text
    if found["h"] is None:
        return i18n.translate(lang, "msg.duration_s", s=found["s"])
    return i18n.translate(lang, "msg.duration_hm", s=found["s"], h=found["h"], m=found["m"])


def job_reason_text(lang: object, row: dict[str, str]) -> str:
    """A job's status sentence in ``lang`` from a console row (``views.job_row``/``views.job_detail``): a hold or
    preemption sentence from its ``reason_code``/``reason_args`` (``services.admission.reason_text``, amounts
    through :func:`amount_text`), else the backend's sentence through :func:`message_text`."""
    reason = row.get("reason", "")
    code = row.get("reason_code", "")
    if code:
        args = views.reason_args(row)
        if isinstance(args, dict) and i18n.normalize(lang) != i18n.DEFAULT_LANGUAGE:
            args = {k: amount_text(lang, v) if k in _AMOUNT_PARAMS and isinstance(v, str) else v
                    for k, v in args.items()}
        return admission.reason_text(lang, code, args, reason)
    return message_text(lang, reason)


def _param(lang: object, name: str, value: str | None) -> str:
    """One parameter of a matched sentence in ``lang``: phases, who decided, durations, amounts, the blocking
    hold's code, a decider's note and a nested sentence are translated; names and numbers stay as written."""
    if value is None:
        return ""
    if name in _PHASE_PARAMS:
        return i18n.translate(lang, f"phase.{value}") if value in _PHASES else value
    if name == "by":
        return i18n.translate(lang, "msg.auto_rule") if value == _AUTO_RULE else value
    if name in _DURATION_PARAMS:
        return duration_text(lang, value)
    if name in _AMOUNT_PARAMS:
        return amount_text(lang, value)
    if name == "blocker":
        return i18n.translate(lang, f"holdcode.{value}") if f"holdcode.{value}" in i18n.messages(lang) else value
    if name == "note":
        return i18n.translate(lang, "msg.note_suffix", note=value)
    if name == "detail":
        return message_text(lang, value)
    return value


def message_text(lang: object, message: str) -> str:
    """The status sentence ``message`` in ``lang`` when it has a known shape, else ``message`` unchanged.

    Shapes are the sentences the services, the admission rules and the backends write (the list above, with the
    module that writes each). A decision's event ends in `` (approval #N[: note])``; that end is translated on its
    own (:data:`_VIA_APPROVAL`), the decider's note kept as written. In English a sentence of
    :data:`_AS_WRITTEN_IN_ENGLISH` comes back exactly as the service wrote it."""
    if not message:
        return message
    stopping = _STOPPING.fullmatch(message)
    if stopping is not None:
        inner = message_text(lang, stopping["inner"])
        return i18n.translate(lang, "msg.stopping", inner=inner)
    via = _VIA_APPROVAL.fullmatch(message)
    if via is not None and _match(via["inner"]) is not None:
        if i18n.normalize(lang) == i18n.DEFAULT_LANGUAGE:
            return message
        inner = message_text(lang, via["inner"])
        if via["note"] is None:
            return i18n.translate(lang, "msg.via_approval", inner=inner, id=via["id"])
        return i18n.translate(lang, "msg.via_approval_note", inner=inner, id=via["id"], note=via["note"])
    found = _match(message)
    if found is None:
        return message
    key, groups = found
    if key in _AS_WRITTEN_IN_ENGLISH and i18n.normalize(lang) == i18n.DEFAULT_LANGUAGE:
        return message
    params = {name: _param(lang, name, value) for name, value in groups.items()}
    return i18n.translate(lang, key, **params)


def _match(message: str) -> tuple[str, dict[str, str | None]] | None:
    """``(i18n key, named groups)`` of the first pattern matching the whole ``message``, or ``None``."""
    for key, pattern in _PATTERNS:
        found = pattern.fullmatch(message)
        if found is not None:
            return key, found.groupdict()
    return None


# How services/approvals.py names a request's target in sentences and notifications (job_target, close_orphans).
_TARGETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("msg.target_job", re.compile(r"job (?P<name>\S+) \(#(?P<id>\d+)\)")),
    ("msg.target_job_id", re.compile(r"job #(?P<id>\d+)")),
    ("msg.target_project", re.compile(r"project (?P<name>\S+)")),
)
MESSAGE_KEYS += tuple(key for key, _ in _TARGETS)


def target_text(lang: object, target: str) -> str:
    """A request's target as the approvals service names it (``job train (#12)``, ``job #12``, ``project lab``)
    in ``lang``; anything else unchanged."""
    for key, pattern in _TARGETS:
        found = pattern.fullmatch(target or "")
        if found is not None:
            return i18n.translate(lang, key, **found.groupdict())
    return target
