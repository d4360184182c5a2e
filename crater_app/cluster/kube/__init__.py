"""The Kubernetes backend: every workload a Volcano Job (``batch.volcano.sh/v1alpha1``) in its project's namespace,
every project a Volcano Queue (``scheduling.volcano.sh/v1beta1``).

:mod:`.options` holds what the builders need from settings (:class:`~.options.KubeOptions`). The object builders
are pure functions of their inputs returning plain dicts (validated in tests against the Kubernetes schemas and
Volcano's CRDs): :mod:`.object_names` (object names, namespaces, queue names, labels), :mod:`.job_manifest` (the
Volcano Job) with :mod:`.pod_template` (its tasks' pods), :mod:`.queue_manifest` (a project's Queue and its
members' child queues), :mod:`.namespace_manifests` (a project's Namespace and NetworkPolicies) and
:mod:`.session_manifest` (an interactive workload's Service).
"""
