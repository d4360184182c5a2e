"""The environments of a local job's processes: the job's own (an allowlist, never Crater's environment minus a
blocklist) and the runner's (fixed, with nothing of the job's in it).

Two processes run per job (:mod:`crater_app.cluster.local.runner`): the runner, which in the ``os-account`` trust
model is root until the job's process drops to the job's account between fork and exec, and the job's program.

- **The runner's environment** is :func:`runner_environment`: ``PATH``, ``LANG`` and ``LC_ALL`` and nothing else,
  and the interpreter starts in isolated mode (``python -I -S``: no ``PYTHON*`` variable, no user site, no script
  folder on ``sys.path``). Nothing a user writes reaches a process running as root: the dynamic loader honours
  ``LD_PRELOAD``/``LD_LIBRARY_PATH`` for a root process that is not set-uid, glibc reads ``GCONV_PATH``,
  ``LOCPATH``, ``GLIBC_TUNABLES``, ``HOSTALIASES``..., and Python reads ``PYTHONPATH``, ``PYTHONSTARTUP``,
  ``PYTHONHOME``..., each a way to run code as root.
- **The job's environment** (:func:`job_environment`) is handed to the runner through an inherited file descriptor
  (:func:`encode`), and the runner passes it to ``execve`` of the job's program only, after the privilege drop. So
  a job may set ``LD_LIBRARY_PATH``, ``LD_PRELOAD`` or ``PYTHONPATH`` for its own processes (conda environments and
  CUDA installations need them, and a Kubernetes pod may set any variable too): they act as the job's account,
  with its rights, and never as root. Crater does not refuse them: a list of "dangerous" names is never complete
  (the loader, libc, Python, Perl, OpenSSL... each read their own), while keeping every job variable out of the
  privileged process closes the whole class.

The job's environment is built from an allowlist of Crater's own variables (:data:`INHERITED`,
:data:`INHERITED_PREFIXES`), because a blocklist misses credentials inside values (``REDIS_URL=redis://:pw@...``,
``HTTPS_PROXY=http://user:pw@...``) and files that hold them (``PGPASSFILE``); the console's state store
(``REFLEX_REDIS_URL``) is one of them, and a job that could write there could plant state that Crater's web process
loads.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Crater's own variables a job inherits (locale, time zone and terminal; the search path for programs)
INHERITED = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM")
#: prefixes of Crater's variables a job inherits: the locale categories and the machine's CUDA/NVIDIA settings
#: (``CUDA_HOME``, ``NVIDIA_DRIVER_CAPABILITIES``...), unless the name looks like a credential (:data:`SECRET_MARKERS`)
INHERITED_PREFIXES = ("LC_", "CUDA_", "NVIDIA_")
#: words that mark a variable as a credential (``NVIDIA_API_KEY``, the NGC key, is one): never inherited
SECRET_MARKERS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "PRIVATE_KEY", "API_KEY", "ACCESS_KEY",
                  "KEY_ID", "_URL", "_URI", "_DSN", "AUTH")
#: the variables Crater sets for every job, after its ``env`` (a job cannot override them)
PLATFORM = ("CRATER_JOB_UID", "CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
#: the runner's ``PATH`` (systemd's default search path; the runner itself runs no program by name)
RUNNER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def runner_environment() -> dict[str, str]:
    """The whole environment of a runner process (see the module docstring): fixed, whatever the job asks for."""
    return {"PATH": RUNNER_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _inherited(name: str) -> bool:
    if name in INHERITED:
        return True
    upper = name.upper()
    return name.startswith(INHERITED_PREFIXES) and not any(marker in upper for marker in SECRET_MARKERS)


def job_environment(base: dict[str, str], spec_env: dict[str, str], uid: str, devices: tuple[int, ...], *,
                    account: str, home: Path) -> dict[str, str]:
    """The environment of a job's program.

    From ``base`` (Crater's own environment) only :data:`INHERITED` and the :data:`INHERITED_PREFIXES` variables
    that do not look like credentials; then ``USER``/``LOGNAME`` = ``account`` (the OS account the job runs as) and
    ``HOME`` = ``home``; then the spec's ``env`` (which may replace any of these); then the platform's variables,
    which it cannot: ``CRATER_JOB_UID``, ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (indices as NVML/nvidia-smi number
    them), ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` set to exactly ``devices`` (``""``/``void`` when
    none, so a CPU job sees no GPU).
    """
    env = {k: v for k, v in base.items() if _inherited(k)}
    env["USER"] = env["LOGNAME"] = account
    env["HOME"] = str(home)
    env.update(spec_env)
    visible = ",".join(str(d) for d in devices)
    env["CRATER_JOB_UID"] = uid
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = visible
    env["NVIDIA_VISIBLE_DEVICES"] = visible or "void"
    return env


def encode(env: dict[str, str]) -> bytes:
    """``env`` as the runner reads it from its ``--env-fd``: a JSON object of strings, UTF-8.

    Raises:
        ValueError: a name that is empty or holds ``=`` or NUL, a value with NUL, or text with no UTF-8 form
            (a lone surrogate): no process can take it.
    """
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"environment variable {name!r} cannot be passed to a process")
    return json.dumps(env, ensure_ascii=False).encode("utf-8")

