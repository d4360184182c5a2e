"""Names and labels of the Kubernetes objects Crater makes: pure functions of Crater's own names.

Every name is deterministic (the same input always gives the same name: a Job's name is the idempotency key of
its uid), a DNS-1123 label of at most 63 characters (RFC 1123, Kubernetes ``IsDNS1123Label``), and starts with a
letter where Kubernetes asks for a DNS-1035 label (a Service's name; Volcano's ``svc`` plugin names a headless
Service after the Job). User and project names reach Kubernetes only as safe slugs
(:func:`crater_app.domain.naming.safe_slug`); the raw names go into annotations.
"""

from __future__ import annotations

import hashlib
import re

from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.naming import DNS1123_LABEL_MAX, LABEL_JOB_UID, LABEL_PROJECT, LABEL_USER, safe_slug

#: label on every object Crater makes (Kubernetes' recommended ``app.kubernetes.io/managed-by``)
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "crater"
#: label on a workload's pods naming its kind (``interactive`` pods are the ones Crater's namespace may reach)
LABEL_KIND = "crater.io/kind"
#: annotations with the raw names and the run a Job belongs to
ANNOTATION_JOB_NAME = "crater.io/job-name"
ANNOTATION_PROJECT = "crater.io/project-name"
ANNOTATION_USER = "crater.io/user-name"
ANNOTATION_ATTEMPT = "crater.io/attempt"

#: pod labels Volcano's job controller sets (volcano.sh/apis ``batch/v1alpha1`` ``JobNameKey``, ``TaskSpecKey``)
VOLCANO_JOB_NAME = "volcano.sh/job-name"
VOLCANO_TASK_SPEC = "volcano.sh/task-spec"

#: a Job's name: this prefix and :data:`JOB_ID_CHARS` hex digits of its uid
JOB_PREFIX = "crater-"
JOB_ID_CHARS = 16
JOB_NAME_CHARS = len(JOB_PREFIX) + JOB_ID_CHARS
#: a session's Service: the Job's name and this suffix
SESSION_SUFFIX = "-session"
#: the longest project queue name, so that ``<queue>.others`` (7 more) still fits in 63 characters
PROJECT_QUEUE_MAX = DNS1123_LABEL_MAX - len(".others")
#: hex digits of the hash in a member queue's name when its readable form is too long
MEMBER_HASH_CHARS = 16

# a Kubernetes label value (apimachinery IsValidLabelValue)
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def job_name(uid: str) -> str:
    """The Volcano Job's name of the workload ``uid``: ``crater-`` and the first 16 hex digits of SHA-256(uid)
    (23 characters; ``kubectl get vcjob -l crater.io/job-uid=<uid>`` finds it by the full uid).

    A hash, not the uid's own digits: whatever the uid scheme (a time-ordered UUID shares its leading digits with
    the uids made in the same millisecond), 64 bits spread evenly, so two uids share a name with probability about
    ``n² / 2⁶⁵`` for ``n`` jobs. The pods are ``<job>-<task>-<index>`` (Volcano's ``MakePodName``); see
    :func:`pod_name`.
    """
    return JOB_PREFIX + hashlib.sha256(uid.encode("utf-8", "surrogatepass")).hexdigest()[:JOB_ID_CHARS]


def pod_name(job: str, task: str, index: int) -> str:
    """The name Volcano gives replica ``index`` of ``task`` of Job ``job`` (``<job>-<task>-<index>``, as Volcano's
    ``MakePodName``); with the ``svc`` plugin it is also the pod's hostname, which Kubernetes limits to 63
    characters."""
    return f"{job}-{task}-{index}"


def max_task_name_chars(replicas: int) -> int:
    """The longest task name whose pods' names (:func:`pod_name`) fit in 63 characters with ``replicas`` replicas
    (the last index has ``len(str(replicas - 1))`` digits): 37 for up to 10 replicas, 36 up to 100."""
    return DNS1123_LABEL_MAX - JOB_NAME_CHARS - 2 - len(str(max(replicas - 1, 0)))


def session_service_name(uid: str) -> str:
    """The Service of an interactive workload: ``<job name>-session`` (31 characters, a DNS-1035 label)."""
    return job_name(uid) + SESSION_SUFFIX


def project_slug(project: str) -> str:
    """The ``crater.io/project`` label value of ``project``: its safe slug (at most 63 characters)."""
    return safe_slug(project)


def user_slug(user: str) -> str:
    """The ``crater.io/user`` label value of ``user``: its safe slug (at most 63 characters)."""
    return safe_slug(user)


def namespace_of(project: str, options: KubeOptions) -> str:
    """The namespace of ``project``'s objects: ``options.namespace`` when namespaces are shared, else
    ``<namespace_prefix><slug>`` with the project's safe slug cut to fit 63 characters (a slug that had to be cut
    ends in a hash of the name, so two projects never share a namespace)."""
    if not options.per_project:
        return options.namespace
    return options.namespace_prefix + safe_slug(project, DNS1123_LABEL_MAX - len(options.namespace_prefix))


def project_queue_name(project: str, options: KubeOptions) -> str:
    """The Volcano Queue of ``project``: ``<queue_prefix><slug>``, at most :data:`PROJECT_QUEUE_MAX` (56)
    characters. A slug holds no ``.``, so no project's queue is named like a member queue."""
    return options.queue_prefix + safe_slug(project, PROJECT_QUEUE_MAX - len(options.queue_prefix))


def member_queue_name(project: str, user: str, options: KubeOptions) -> str:
    """The child queue of member ``user`` in ``project``'s queue: ``<project queue>.u-<user slug>``, or, when that
    is over 63 characters, ``<project queue, cut>.h-<16 hex digits of SHA-256(project NUL user)>``.

    Distinct from every project queue (those hold no ``.``), from :func:`others_queue_name` (its last part starts
    ``u-`` or ``h-``) and, for two different (project, user) pairs, from each other: the readable form is
    injective (slugs hold no ``.``), the hashed one up to its 64-bit hash.
    """
    parent = project_queue_name(project, options)
    readable = f"{parent}.u-{user_slug(user)}"
    if len(readable) <= DNS1123_LABEL_MAX:
        return readable
    digest = hashlib.sha256(f"{project}\0{user}".encode("utf-8", "surrogatepass")).hexdigest()[:MEMBER_HASH_CHARS]
    room = DNS1123_LABEL_MAX - len(".h-") - MEMBER_HASH_CHARS
    return f"{parent[:room].rstrip('-')}.h-{digest}"


def others_queue_name(project: str, options: KubeOptions) -> str:
    """The child queue of ``project``'s members without a share, made beside the members' child queues (Volcano
    places jobs only in leaf queues once a queue has children): ``<project queue>.others``."""
    return project_queue_name(project, options) + ".others"


def check_label_value(value: str, what: str) -> str:
    """Return ``value`` if it is a Kubernetes label value (at most 63 characters of ``A-Za-z0-9-_.``, starting and
    ending with a letter or digit, or empty).

    Raises:
        ValueError: naming ``what`` (a programming error: callers pass uids and slugs).
    """
    if len(value) > DNS1123_LABEL_MAX or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a Kubernetes label value")
    return value


def base_labels(options: KubeOptions) -> dict[str, str]:
    """The labels of every object Crater makes: ``options.labels`` and ``app.kubernetes.io/managed-by: crater``."""
    return {**options.labels, LABEL_MANAGED_BY: MANAGED_BY}


def workload_labels(uid: str, project: str, user: str, options: KubeOptions) -> dict[str, str]:
    """A workload's labels: :func:`base_labels`, ``crater.io/job-uid`` (the full uid), ``crater.io/project`` and
    ``crater.io/user`` (safe slugs, never the raw names).

    Raises:
        ValueError: ``uid`` is not a label value.
    """
    return {**base_labels(options), LABEL_JOB_UID: check_label_value(uid, "uid"),
            LABEL_PROJECT: project_slug(project), LABEL_USER: user_slug(user)}
