"""What the Kubernetes object builders need from settings: :class:`KubeOptions`.

A frozen value, built once from settings by the backend and passed to every builder in
:mod:`crater_app.cluster.kube` (the builders read nothing else), so a golden file depends only on its inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

NAMESPACE_SHARED = "shared"
NAMESPACE_PER_PROJECT = "per-project"
NAMESPACE_MODES = (NAMESPACE_SHARED, NAMESPACE_PER_PROJECT)

#: accelerator extended resource names discovered on nodes by default: NVIDIA's device plugin, AMD's device plugin
#: (ROCm/k8s-device-plugin) and Huawei's Ascend device plugin (Ascend/ascend-device-plugin)
DEFAULT_ACCELERATORS = ("nvidia.com/gpu", "amd.com/gpu", "huawei.com/Ascend910")

#: the node label that names a node's accelerator model, per resource: NVIDIA GPU Feature Discovery's
#: ``nvidia.com/gpu.product`` (``NVIDIA-A100-SXM4-80GB``); AMD's node labeller (ROCm/k8s-device-plugin,
#: ``cmd/k8s-node-labeller``) ``amd.com/gpu.product-name``; Huawei's Ascend device plugin (MindCluster's node label
#: reference) ``node.kubernetes.io/npu.chip.name`` (``910B3``; its ``accelerator`` label only says
#: ``huawei-Ascend910``, the family the resource name already gives)
DEFAULT_MODEL_LABELS: Mapping[str, str] = MappingProxyType({
    "nvidia.com/gpu": "nvidia.com/gpu.product",
    "amd.com/gpu": "amd.com/gpu.product-name",
    "huawei.com/Ascend910": "node.kubernetes.io/npu.chip.name",
})

#: the port PyTorch's rendezvous (``MASTER_PORT``) listens on, Volcano's ``pytorch`` plugin default (23456)
DEFAULT_RENDEZVOUS_PORT = 23456
#: a memory-backed ``/dev/shm`` of 1 GiB when a workload gives no ``shm_size_bytes`` (Docker's default is 64 MiB,
#: too small for PyTorch's DataLoader workers)
DEFAULT_SHM_BYTES = 1 << 30
#: the longest ``namespace_prefix``/``queue_prefix``: a slug of at least 32 characters must still fit in a
#: 63-character name
MAX_PREFIX_CHARS = 16
_PREFIX = re.compile(r"(?:[a-z][-a-z0-9]*)?")
#: image pull policies Kubernetes knows (core/v1 Container.imagePullPolicy)
PULL_POLICIES = ("Always", "IfNotPresent", "Never")


@dataclass(frozen=True)
class KubeOptions:
    """Settings of the Kubernetes object builders (defaults in brackets).

    Attributes:
        namespace_mode: ``shared`` (every project's objects in ``namespace``) or ``per-project`` (one namespace per
            project, ``<namespace_prefix><project slug>``, created with labels and a default-deny NetworkPolicy)
            [``shared``].
        namespace: the shared namespace (settings ``CRATER_KUBE_NAMESPACE``) [``crater-jobs``].
        namespace_prefix: prefix of per-project namespaces [``crater-``].
        crater_namespace: the namespace Crater itself runs in; a per-project NetworkPolicy lets it reach session
            pods (``kubernetes.io/metadata.name`` label, set by Kubernetes on every namespace) [``crater``].
        scheduler_name: ``schedulerName`` of every Volcano Job [``volcano``].
        queue_prefix: prefix of every Volcano Queue Crater makes (Queues are cluster-wide: the prefix keeps them
            apart from Volcano's ``default``/``root`` and from another Crater's) [``crater-``].
        accelerators: extended resource names discovered as accelerators [:data:`DEFAULT_ACCELERATORS`].
        model_labels: resource name -> the node label naming the model [:data:`DEFAULT_MODEL_LABELS`]; a resource
            without one cannot be placed by model (``accelerator_model`` gives no affinity for it).
        run_as_non_root: pods' ``securityContext.runAsNonRoot`` (the kubelet refuses an image whose user is root)
            [``True``].
        run_as_user / run_as_group / fs_group: uid/gid the containers run as, ``None`` for the image's own [``None``].
        automount_service_account_token: mount the pod's service-account token [``False``].
        service_account: the pods' ServiceAccount, ``""`` for the namespace's default [``""``].
        spaces_claim: the PersistentVolumeClaim holding project and user spaces [``crater-spaces``].
        project_sub_path / user_sub_path: the space's sub-path inside ``spaces_claim``, ``{slug}`` the project's or
            the user's safe slug [``projects/{slug}``, ``users/{slug}``].
        shm_bytes: size of ``/dev/shm`` when a workload gives none, bytes; ``0`` for no shm volume [1 GiB].
        image_pull_policy: ``Always``, ``IfNotPresent``, ``Never`` or ``""`` (Kubernetes' default) [``IfNotPresent``].
        image_pull_secrets: Secret names in the job's namespace for pulling images [``()``].
        rendezvous_port: PyTorch ``MASTER_PORT`` [23456].
        labels: extra labels put on every object Crater makes (``app.kubernetes.io/managed-by`` is always set)
            [``{}``].
        priority_class: ``priorityClassName`` of every Job, ``""`` for none [``""``].
        ttl_after_finished_s: ``ttlSecondsAfterFinished`` of a workload that gives none; ``None`` keeps the Job
            until Crater deletes it [``None``].
        member_queues: make member shares child queues of the project's Queue (``spec.parent``); this needs Volcano's
            ``capacity`` plugin with hierarchical queues on (without it ``parent`` is not read and the children would
            be flat queues deserving the project's resources a second time) [``True``].
        pod_deadlines: put a workload's ``max_runtime_s`` on its pods as ``activeDeadlineSeconds`` (the kubelet
            stops a pod that long after it started) [``True``]. Kubernetes lets a pod's deadline only be lowered, so a
            backend that moves deadlines later (``ClusterBackend.extend``) turns this off and stops workloads
            itself.

    Raises:
        ValueError: on construction, for an unknown ``namespace_mode`` or ``image_pull_policy``, a port outside
            1..65535, a negative ``shm_bytes``, or a prefix that is not the start of a DNS-1035 label (lower-case
            letters, digits, ``-``, starting with a letter, at most :data:`MAX_PREFIX_CHARS` characters).
    """

    namespace_mode: str = NAMESPACE_SHARED
    namespace: str = "crater-jobs"
    namespace_prefix: str = "crater-"
    crater_namespace: str = "crater"
    scheduler_name: str = "volcano"
    queue_prefix: str = "crater-"
    accelerators: tuple[str, ...] = DEFAULT_ACCELERATORS
    model_labels: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_MODEL_LABELS), hash=False)
    run_as_non_root: bool = True
    run_as_user: int | None = None
    run_as_group: int | None = None
    fs_group: int | None = None
    automount_service_account_token: bool = False
    service_account: str = ""
    spaces_claim: str = "crater-spaces"
    project_sub_path: str = "projects/{slug}"
    user_sub_path: str = "users/{slug}"
    shm_bytes: int = DEFAULT_SHM_BYTES
    image_pull_policy: str = "IfNotPresent"
    image_pull_secrets: tuple[str, ...] = ()
    rendezvous_port: int = DEFAULT_RENDEZVOUS_PORT
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    priority_class: str = ""
    ttl_after_finished_s: int | None = None
    member_queues: bool = True
    pod_deadlines: bool = True

    def __post_init__(self) -> None:
        if self.namespace_mode not in NAMESPACE_MODES:
            raise ValueError(f"namespace_mode must be one of {NAMESPACE_MODES}, not {self.namespace_mode!r}")
        if self.image_pull_policy and self.image_pull_policy not in PULL_POLICIES:
            raise ValueError(f"image_pull_policy must be one of {PULL_POLICIES} or '', not {self.image_pull_policy!r}")
        if not 1 <= self.rendezvous_port <= 65535:
            raise ValueError(f"rendezvous_port must be in 1..65535, not {self.rendezvous_port}")
        if self.shm_bytes < 0:
            raise ValueError(f"shm_bytes must be >= 0, not {self.shm_bytes}")
        for name, prefix in (("namespace_prefix", self.namespace_prefix), ("queue_prefix", self.queue_prefix)):
            if len(prefix) > MAX_PREFIX_CHARS or not _PREFIX.fullmatch(prefix):
                raise ValueError(f"{name} must be lower-case letters, digits and '-', starting with a letter, at "
                                 f"most {MAX_PREFIX_CHARS} characters, not {prefix!r}")

    @property
    def per_project(self) -> bool:
        """True when every project has its own namespace."""
        return self.namespace_mode == NAMESPACE_PER_PROJECT

    def model_label(self, resource: str) -> str | None:
        """The node label naming ``resource``'s model (``nvidia.com/gpu`` -> ``nvidia.com/gpu.product``), or
        ``None`` when none is configured."""
        return self.model_labels.get(resource)
