"""The Service of an interactive workload (a session), as a dict: :func:`session_service`.

Volcano's ``svc`` plugin gives every Job a headless Service for its replicas to find each other; a session also
needs a stable ClusterIP address Crater can proxy to, on the ports the session's task declares. The Service
selects the session's pod by the labels Volcano's job controller puts on every pod it makes
(``volcano.sh/job-name``, ``volcano.sh/task-spec``; volcano.sh/apis ``batch/v1alpha1`` labels).
"""

from __future__ import annotations

from crater_app.cluster.base import Workload
from crater_app.cluster.kube.object_names import (VOLCANO_JOB_NAME, VOLCANO_TASK_SPEC, job_name, namespace_of,
                                                  session_service_name, workload_labels)
from crater_app.cluster.kube.options import KubeOptions


def session_service(workload: Workload, options: KubeOptions) -> dict:
    """The ClusterIP Service of interactive ``workload``: name
    :func:`~crater_app.cluster.kube.object_names.session_service_name`, in the Job's namespace, with the workload's
    labels, selecting the pods of its first task (an interactive workload has one), one port per port of that task
    (``targetPort`` the port's name).

    Raises:
        ValueError: ``workload.kind`` is not ``interactive``, or its task declares no port (a Service needs one).
    """
    if workload.kind != "interactive":
        raise ValueError(f"a session Service is for interactive workloads, not {workload.kind!r}")
    task = workload.tasks[0]
    if not task.ports:
        raise ValueError(f"task {task.name!r} declares no port for its session Service")
    ports = [{"name": p.name, "port": p.port, "targetPort": p.name, "protocol": p.protocol} for p in task.ports]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": session_service_name(workload.uid),
                         "namespace": namespace_of(workload.project, options),
                         "labels": workload_labels(workload.uid, workload.project, workload.user, options)},
            "spec": {"type": "ClusterIP", "selector": {VOLCANO_JOB_NAME: job_name(workload.uid),
                                                       VOLCANO_TASK_SPEC: task.name},
                     "ports": ports}}
