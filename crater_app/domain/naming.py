"""Names and labels: DNS-1123 labels (RFC 1123, as Kubernetes validates object names) and ``crater.io/*`` labels."""

from __future__ import annotations

import re
import unicodedata

from crater_app.domain.errors import InvalidInput

DNS1123_LABEL_MAX = 63  # RFC 1123 / Kubernetes IsDNS1123Label
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

LABEL_JOB_UID = "crater.io/job-uid"
LABEL_PROJECT = "crater.io/project"
LABEL_USER = "crater.io/user"


def username_key(name: str) -> str:
    """The identity of a user name for uniqueness: NFKC case folding (Unicode's ``NFKC_Casefold`` as approximated
    by NFKC, ``str.casefold``, NFKC again; UAX #15, UTS #39 §5), so ``Zhang.San``, ``zhang.san`` and ``ｚｈａｎｇ.san``
    (full-width) are one name. Stored in ``users.username_key`` (unique)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def check_dns1123_label(value: object, field: str) -> str:
    """Return ``value`` if it is a DNS-1123 label (lower-case alphanumerics and '-', 1..63 chars).

    Raises:
        InvalidInput: naming ``field``, when the value is not a string or breaks the rule.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field)
    if not value:
        raise InvalidInput(f"{field} must not be empty", field)
    if len(value) > DNS1123_LABEL_MAX:
        raise InvalidInput(
            f"{field} is {len(value)} characters; the limit is {DNS1123_LABEL_MAX}", field
        )
    if not _DNS1123_LABEL.fullmatch(value):  # fullmatch: '$' would also accept a trailing newline
        raise InvalidInput(
            f"{field} must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit",
            field,
        )
    return value


def is_text(value: str) -> bool:
    """Whether ``value`` is text every layer can store: encodable as UTF-8 and without NUL. A JSON ``"\\ud800"``
    escape decodes to a lone surrogate, which no file, database driver, process argument or response body can
    carry; ``"\\u0000"`` is refused by PostgreSQL text columns and by process arguments."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(value: object, field: str, limit: int) -> str:
    """Return ``value`` if it is a string of at most ``limit`` characters that :func:`is_text` accepts (empty
    allowed): a display name, a description.

    Raises:
        InvalidInput: naming ``field`` and ``limit``.
    """
    if not isinstance(value, str) or len(value) > limit or not is_text(value):
        raise InvalidInput(f"{field} must be a string of at most {limit} characters", field)
    return value


_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


def to_dns1123_label(text: str, fallback: str = "user", max_length: int = DNS1123_LABEL_MAX) -> str:
    """A DNS-1123 label made from ``text`` (e.g. an OIDC ``preferred_username`` or an e-mail's local part).

    Lower-cased; an e-mail address keeps only its local part; every run of other characters (``.``, ``_``, ``@``,
    spaces, non-ASCII) becomes one ``-``; ``-`` is stripped from both ends; cut to ``max_length``. Text with no
    usable character gives ``fallback``. ``"Zhang.San@corp"`` -> ``"zhang-san"``.
    """
    local = text.split("@", 1)[0] if "@" in text else text
    label = _NOT_LABEL.sub("-", local.lower()).strip("-")
    label = re.sub("-{2,}", "-", label)[:max_length].strip("-")
    return label or fallback


#: An accelerator model name as NVML and the Kubernetes GPU feature discovery label ``nvidia.com/gpu.product``
#: spell it (``NVIDIA-A100-SXM4-80GB``, ``NVIDIA H100 80GB HBM3``): letters, digits, ``. _ -`` and spaces.
ACCELERATOR_MODEL = re.compile(r"[A-Za-z0-9._ -]+")
MAX_MODEL_CHARS = 128


def is_model_name(text: str) -> bool:
    """Whether ``text`` is an accelerator model name (:data:`ACCELERATOR_MODEL`, 1..128 characters)."""
    return 0 < len(text) <= MAX_MODEL_CHARS and ACCELERATOR_MODEL.fullmatch(text) is not None
