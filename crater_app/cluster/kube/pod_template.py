"""The pod template of one task of a workload (core/v1 ``PodTemplateSpec`` as a dict), for the Volcano Job's
``tasks[].template`` (:mod:`crater_app.cluster.kube.job_manifest`).

What every pod gets, whatever the spec says (the hardening Kubernetes' "restricted" Pod Security Standard asks
for, as kubespawner's ``make_pod`` does with its security options): ``runAsNonRoot`` where the options say so,
``allowPrivilegeEscalation: false``, every capability dropped, the ``RuntimeDefault`` seccomp profile, no
service-account token unless the options ask for one, no service links, never a ``hostPath`` (storage is only the
configured PersistentVolumeClaims, memory ``emptyDir`` for ``/dev/shm``), ``restartPolicy: Never`` (Volcano restarts
through the Job's ``policies``), requests equal to limits.
"""

from __future__ import annotations

from crater_app.cluster.base import Task, Volume, Workload
from crater_app.cluster.kube.object_names import LABEL_KIND, project_slug, user_slug, workload_labels
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_volumes import SHM_PATH, VOLUME_SOURCES
from crater_app.domain.resources import ResourceList

SHM_VOLUME = "dshm"
#: the pod volume of ``options.spaces_claim`` (project and user spaces)
SPACES_VOLUME = "spaces"


def resource_list(resources: ResourceList) -> dict[str, str]:
    """A replica's resources as a Kubernetes resource list: ``cpu`` in millicores (``"2500m"``), ``memory`` in bytes
    (``"17179869184"``), each accelerator as a count (``"8"``); zero amounts left out."""
    out: dict[str, str] = {}
    if resources.cpu_m:
        out["cpu"] = f"{resources.cpu_m}m"
    if resources.memory_bytes:
        out["memory"] = str(resources.memory_bytes)
    for name, count in sorted(resources.accelerators.items()):
        if count:
            out[name] = str(count)
    return out


def _claim_sub_path(volume: Volume, workload: Workload, options: KubeOptions) -> tuple[str, str]:
    """(claim, subPath) of ``volume``: a space is a sub-path of ``options.spaces_claim`` (``projects/<slug>``,
    ``users/<slug>``) with the volume's own sub-path below it; a ``pvc`` volume is its claim and sub-path."""
    if volume.source == "pvc":
        return volume.claim, volume.sub_path
    if volume.source == "project":
        base = options.project_sub_path.format(slug=project_slug(workload.project))
    else:
        base = options.user_sub_path.format(slug=user_slug(workload.user))
    return options.spaces_claim, f"{base}/{volume.sub_path}" if volume.sub_path else base


def volumes(workload: Workload, options: KubeOptions) -> tuple[list[dict], list[dict]]:
    """The pod's ``volumes`` and every container's ``volumeMounts`` for ``workload.volumes`` and its shm.

    One pod volume per claim (``spaces`` for ``options.spaces_claim``, ``claim-<n>`` for the others in order of
    first use), read-only when every mount of it is; one mount per :class:`~crater_app.cluster.base.Volume` with its
    ``subPath`` and ``readOnly``. The shm: an ``emptyDir`` of ``medium: Memory`` and ``sizeLimit`` of
    ``workload.shm_size_bytes`` (else ``options.shm_bytes``; none when that is 0) at ``/dev/shm``; its pages count
    towards the container's memory limit.

    Raises:
        ValueError: a volume of an unknown source, or a ``pvc`` volume without a claim (the job spec's checks
            refuse both before a workload is made).
    """
    names: dict[str, str] = {}
    read_only: dict[str, bool] = {}
    mounts: list[dict] = []
    for i, volume in enumerate(workload.volumes):
        if volume.source not in VOLUME_SOURCES or (volume.source == "pvc" and not volume.claim):
            raise ValueError(f"volumes[{i}]: source {volume.source!r} with claim {volume.claim!r}")
        claim, sub_path = _claim_sub_path(volume, workload, options)
        if claim not in names:
            others = sum(1 for name in names.values() if name != SPACES_VOLUME)
            names[claim] = SPACES_VOLUME if claim == options.spaces_claim else f"claim-{others}"
        read_only[claim] = read_only.get(claim, True) and volume.read_only
        mount = {"name": names[claim], "mountPath": volume.mount_path}
        if sub_path:
            mount["subPath"] = sub_path
        if volume.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    pod_volumes = []
    for claim, name in names.items():
        source: dict = {"claimName": claim}
        if read_only[claim]:
            source["readOnly"] = True
        pod_volumes.append({"name": name, "persistentVolumeClaim": source})
    shm = workload.shm_size_bytes if workload.shm_size_bytes is not None else options.shm_bytes
    if shm:
        pod_volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": str(shm)}})
        mounts.append({"name": SHM_VOLUME, "mountPath": SHM_PATH})
    return pod_volumes, mounts


def model_affinity(task: Task, workload: Workload, options: KubeOptions) -> dict | None:
    """The node affinity placing ``task``'s replicas on nodes of ``workload.accelerator_model``: a required
    ``nodeSelectorTerm`` with ``<model label> In [model]`` for each accelerator the task requests (the label of a
    resource: ``options.model_labels``); ``None`` without a model or without accelerators.

    Raises:
        InvalidInput: ``kube.model_label_unknown`` (field ``accelerator_model``; ``resource``, ``task``) for an
            accelerator the options name no model label for: the cluster cannot place it by model.
    """
    model = workload.accelerator_model
    if not model:
        return None
    expressions = []
    for resource, count in sorted(task.resources.accelerators.items()):
        if not count:
            continue
        label = options.model_label(resource)
        if label is None:
            raise InvalidInput("kube.model_label_unknown", "accelerator_model", field_name="accelerator_model",
                               resource=resource, task=task.name)
        expressions.append({"key": label, "operator": "In", "values": [model]})
    if not expressions:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def security_contexts(options: KubeOptions) -> tuple[dict, dict]:
    """(pod ``securityContext``, container ``securityContext``): in the pod ``runAsUser``/``runAsGroup``/``fsGroup``
    where set and ``seccompProfile: RuntimeDefault``; in the task's container no privilege escalation,
    ``capabilities.drop: [ALL]`` and ``runAsNonRoot`` (where ``options.run_as_non_root``; the kubelet then refuses to
    start an image whose user is root). ``runAsNonRoot`` is the container's, not the pod's: containers Volcano's
    plugins add to the pod (a worker's wait-for-master init container in recent ``pytorch`` plugins) run as their
    images say."""
    pod: dict = {}
    for key, value in (("runAsUser", options.run_as_user), ("runAsGroup", options.run_as_group),
                       ("fsGroup", options.fs_group)):
        if value is not None:
            pod[key] = value
    pod["seccompProfile"] = {"type": "RuntimeDefault"}
    container = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    if options.run_as_non_root:
        container["runAsNonRoot"] = True
    return pod, container


def container(task: Task, options: KubeOptions, mounts: list[dict]) -> dict:
    """The one container of ``task``'s pods, named after the task: image, pull policy, ``command``/``args``
    (the image's entrypoint when ``command`` is empty), ``env`` in the spec's order, ``workingDir``, resources
    (requests = limits, :func:`resource_list`), ports, ``mounts``, the container security context."""
    out: dict = {"name": task.name, "image": task.image}
    if options.image_pull_policy:
        out["imagePullPolicy"] = options.image_pull_policy
    if task.command:
        out["command"] = list(task.command)
    if task.args:
        out["args"] = list(task.args)
    if task.env:
        out["env"] = [{"name": name, "value": value} for name, value in task.env.items()]
    if task.working_dir:
        out["workingDir"] = task.working_dir
    amounts = resource_list(task.resources)
    if amounts:
        out["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    if task.ports:
        out["ports"] = [{"name": p.name, "containerPort": p.port, "protocol": p.protocol} for p in task.ports]
    if mounts:
        out["volumeMounts"] = [dict(m) for m in mounts]
    out["securityContext"] = security_contexts(options)[1]
    return out


def pod_template(workload: Workload, task: Task, options: KubeOptions) -> dict:
    """The ``template`` of ``task`` (one of ``workload.tasks``): labels (:func:`workload_labels` and
    ``crater.io/kind``), the pod spec with :func:`container`, :func:`volumes`, ``nodeSelector``,
    :func:`model_affinity`, ``activeDeadlineSeconds`` from ``workload.max_runtime_s`` (where
    ``options.pod_deadlines``), pull secrets, service account, and the hardening of this module's docstring.

    Raises:
        InvalidInput: see :func:`model_affinity`.
        ValueError: see :func:`volumes`.
    """
    pod_volumes, mounts = volumes(workload, options)
    pod_security, _ = security_contexts(options)
    spec: dict = {"restartPolicy": "Never", "automountServiceAccountToken": options.automount_service_account_token,
                  "enableServiceLinks": False, "securityContext": pod_security,
                  "containers": [container(task, options, mounts)]}
    if options.service_account:
        spec["serviceAccountName"] = options.service_account
    if options.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in options.image_pull_secrets]
    if workload.node_selector:
        spec["nodeSelector"] = dict(sorted(workload.node_selector.items()))
    affinity = model_affinity(task, workload, options)
    if affinity:
        spec["affinity"] = affinity
    if options.pod_deadlines and workload.max_runtime_s:
        spec["activeDeadlineSeconds"] = workload.max_runtime_s
    if pod_volumes:
        spec["volumes"] = pod_volumes
    labels = {**workload_labels(workload.uid, workload.project, workload.user, options), LABEL_KIND: workload.kind}
    return {"metadata": {"labels": labels}, "spec": spec}
