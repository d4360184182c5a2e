"""The Kubernetes backend: every workload a Volcano Job (``batch.volcano.sh/v1alpha1``) in its project's namespace,
every project a Volcano Queue (``scheduling.volcano.sh/v1beta1``).

:mod:`.options` holds what the builders need from settings (:class:`~.options.KubeOptions`); the object builders
are pure functions returning plain dicts: :mod:`.naming` (object and namespace names), :mod:`.job_manifest` (the
Volcano Job), :mod:`.queue_manifest` (a project's Queue and its members' child queues), :mod:`.namespace_manifests`
(a project's Namespace and NetworkPolicy) and :mod:`.service_manifest` (a session's Service).
"""
