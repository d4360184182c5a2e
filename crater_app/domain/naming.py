"""Names and labels: user names (Unicode, as organisations give them), their uniqueness key and the DNS-1123 slug
derived from them, DNS-1123 labels (RFC 1123, as Kubernetes validates object names) and ``crater.io/*`` labels.

Errors are codes in the ``name.`` namespace (catalogue ``i18n/identity``) with ``field_name`` (the input's full
path) and the limit as arguments.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from crater_app.domain.errors import InvalidInput

DNS1123_LABEL_MAX = 63  # RFC 1123 / Kubernetes IsDNS1123Label
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# RFC 1035 label (Kubernetes IsDNS1035Label: Services and other objects whose name must start with a letter)
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

LABEL_JOB_UID = "crater.io/job-uid"
LABEL_PROJECT = "crater.io/project"
LABEL_USER = "crater.io/user"

#: the longest user name, in characters (after NFC normalisation)
MAX_USERNAME_CHARS = 64
#: the longest uniqueness key of a user name, in characters (the ``users.username_key`` column): NFKC expands some
#: characters (U+FDFA, one Arabic ligature, becomes 18 letters), so a 64-character name may have a longer key
MAX_USERNAME_KEY_CHARS = 256
#: the punctuation a user name may hold besides Unicode letters, marks and decimal digits
USERNAME_PUNCTUATION = "._-@"
#: names no account may take (``system`` is the operation log's actor for the platform itself), by their key
RESERVED_USERNAMES = frozenset({"system"})
#: hex digits of the SHA-256 suffix of a slug whose name had to be changed (kubespawner uses 8 too)
SLUG_HASH_CHARS = 8
_SLUG_SEPARATOR = "---"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def username_key(name: str) -> str:
    """The identity of a user name for uniqueness: NFKC case folding (Unicode's ``NFKC_Casefold`` as approximated
    by NFKC, ``str.casefold``, NFKC again; UAX #15, UTS #39 §5), so ``Zhang.San``, ``zhang.san`` and ``ｚｈａｎｇ.san``
    (full-width) are one name. Stored in ``users.username_key`` (unique); every lookup by name compares keys."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


#: Letters that look like a lower-case Latin letter in common fonts, and that letter: a small subset of Unicode's
#: confusables data (UTS #39 "Unicode Security Mechanisms", §4 and ``confusables.txt``) for the Cyrillic, Greek and
#: Latin look-alikes of ASCII letters, as they are after NFKC case folding (capitals fold to these). Look-alikes
#: within ASCII (``rn``/``m``, ``l``/``1``/``I``) and other scripts are not in it: see :func:`username_skeleton`.
CONFUSABLES = {
    "\u0430": "a", "\u0435": "e", "\u0456": "i", "\u0458": "j", "\u043e": "o", "\u0440": "p", "\u0441": "c",
    "\u0443": "y", "\u0445": "x", "\u0455": "s", "\u0501": "d", "\u04bb": "h", "\u051b": "q", "\u051d": "w",
    # Cyrillic а е і ј о р с у х ѕ ԁ һ ԛ ԝ
    "\u03b1": "a", "\u03bf": "o", "\u03bd": "v", "\u03c1": "p", "\u03b9": "i", "\u03c5": "u", "\u03b3": "y",
    # Greek α ο ν ρ ι υ γ
    "\u0131": "i", "\u0251": "a", "\u0261": "g", "\u0269": "i",
    # Latin dotless ı, alpha ɑ, script ɡ, iota ɩ
}
_DOT_ABOVE = "\u0307"


def username_skeleton(name: str) -> str:
    """What ``name`` looks like, for telling names apart that people cannot (UTS #39 §4's *skeleton*, on Crater's
    key): :func:`username_key`, decomposed (NFD), each letter of :data:`CONFUSABLES` replaced by the Latin letter it
    looks like and a combining dot above an ``i`` or ``j`` dropped (``İ`` folds to ``i`` + U+0307, which shows as
    ``i``), composed again (NFC). ``alice``, ``аlice`` (Cyrillic а), ``alıce`` (dotless ı) and ``ALİCE`` share the
    skeleton ``alice``; ``Élodie`` and ``elodie`` do not (an accent is visible). Not covered: look-alikes within
    ASCII (``rn``/``m``, ``l``/``1``), which existing names already use side by side, and scripts outside the
    table."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", username_key(name)):
        if ch == _DOT_ABOVE and out and out[-1] in ("i", "j"):
            continue
        out.append(CONFUSABLES.get(ch, ch))
    return unicodedata.normalize("NFC", "".join(out))


def _username_char(ch: str, first: bool) -> bool:
    """Whether ``ch`` may stand in a user name (``first``: as its first character)."""
    category = unicodedata.category(ch)
    if category[0] == "L" or category == "Nd":  # letters of every script, decimal digits of every script
        return True
    if first:
        return ch == "_"
    return category[0] == "M" or ch in USERNAME_PUNCTUATION  # combining marks (Devanagari vowel signs, accents)


def _first_bad_char(name: str) -> int | None:
    """The index of the first character of ``name`` that a user name may not hold there, or ``None``."""
    for i, ch in enumerate(name):
        if not _username_char(ch, i == 0):
            return i
    return None


def shown_char(ch: str) -> str:
    """A character as a message shows it: itself when it is visible, else its code point (``U+0020`` for a space,
    ``U+202E`` for a bidirectional override)."""
    return ch if ch.isprintable() and not ch.isspace() and unicodedata.category(ch) != "Cf" else f"U+{ord(ch):04X}"


def is_username(value: object) -> bool:
    """Whether ``value`` is an acceptable user name as given (see :func:`check_username`; NFC form, not reserved)."""
    if not (isinstance(value, str) and 0 < len(value) <= MAX_USERNAME_CHARS
            and unicodedata.normalize("NFC", value) == value and _first_bad_char(value) is None):
        return False
    key = username_key(value)
    return len(key) <= MAX_USERNAME_KEY_CHARS and key not in RESERVED_USERNAMES


def check_username(value: object, field: str = "username") -> str:
    """``value`` as a user name in NFC form (``"E\\u0301lodie"`` -> ``"Élodie"``).

    A user name is 1..64 characters: Unicode letters (any script), combining marks and decimal digits, and ``.``,
    ``_``, ``-``, ``@`` (so ``张三``, ``Élodie``, ``_alice`` and ``alice@example.org`` are names); it starts with a
    letter, a digit or ``_`` (not with ``-``, ``.``, ``@`` or a mark: no command-line flags, hidden files or
    mentions). Unique after :func:`username_key`, which must fit in 256 characters (:data:`MAX_USERNAME_KEY_CHARS`,
    the database column; both databases then refuse the same names). ``system`` is reserved.

    Raises:
        InvalidInput: naming ``field``: ``name.not_string``, ``name.empty``, ``name.too_long`` (``length``,
            ``max``), ``name.username_start`` (a first character that cannot start a name: ``char``),
            ``name.username_chars`` (the first character a name cannot hold: ``char`` as :func:`shown_char` writes
            it and its 1-based ``position``), ``name.username_key_too_long`` (``length`` of the key, ``max``),
            ``name.username_reserved``.
    """
    if not isinstance(value, str):
        raise InvalidInput("name.not_string", field, field_name=field)
    name = unicodedata.normalize("NFC", value)
    if not name:
        raise InvalidInput("name.empty", field, field_name=field)
    if len(name) > MAX_USERNAME_CHARS:
        raise InvalidInput("name.too_long", field, field_name=field, length=len(name), max=MAX_USERNAME_CHARS)
    bad = _first_bad_char(name)
    if bad == 0:
        raise InvalidInput("name.username_start", field, field_name=field, char=shown_char(name[0]))
    if bad is not None:
        raise InvalidInput("name.username_chars", field, field_name=field, char=shown_char(name[bad]),
                           position=bad + 1)
    key = username_key(name)
    if len(key) > MAX_USERNAME_KEY_CHARS:
        raise InvalidInput("name.username_key_too_long", field, field_name=field, length=len(key),
                           max=MAX_USERNAME_KEY_CHARS)
    if key in RESERVED_USERNAMES:
        raise InvalidInput("name.username_reserved", field, field_name=field, name=name)
    return name


def derive_username(text: str, fallback: str = "user") -> str:
    """A user name made from ``text`` (an OIDC ``preferred_username`` or e-mail claim): ``text`` itself (NFC,
    trimmed) when it is a user name, else every run of characters a name cannot hold becomes one ``-``, characters
    that cannot start a name are dropped from the front, ``-`` from the end, and the result is cut to 64
    characters (and further while its key is over :data:`MAX_USERNAME_KEY_CHARS`). Text with no usable character (or a reserved one) gives ``fallback``.
    ``"Zhang San"`` -> ``"Zhang-San"``; ``"alice@example.org"`` stays.
    """
    name = unicodedata.normalize("NFC", text).strip()
    if is_username(name):
        return name
    chars = [ch if _username_char(ch, False) else "-" for ch in name]
    derived = re.sub("-{2,}", "-", "".join(chars))
    while derived and not _username_char(derived[0], True):
        derived = derived[1:]
    derived = derived[:MAX_USERNAME_CHARS].rstrip("-")
    while derived and len(username_key(derived)) > MAX_USERNAME_KEY_CHARS:  # characters NFKC expands (U+FDFA)
        derived = derived[:-1].rstrip("-")
    return derived if is_username(derived) else fallback


def _hash_suffix(name: str, size: int = SLUG_HASH_CHARS) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def safe_slug(name: str, max_length: int = DNS1123_LABEL_MAX, *, hash_chars: int = SLUG_HASH_CHARS,
              always_hash: bool = False) -> str:
    """A stable, collision-free DNS label for ``name`` (a user name), for Kubernetes object names and label values.

    Modelled on JupyterHub kubespawner's ``safe_slug`` (kubespawner/slugs.py): a name that already is an RFC 1035
    label (lower-case ASCII letters, digits and ``-``, starting with a letter; valid for every Kubernetes name and
    label value) of at most ``max_length`` characters, without ``--``, is its own slug. Any other name becomes
    ``<safe part>---<first 8 hex digits of SHA-256(name)>``: the safe part is the name folded to ASCII (NFKD,
    accents dropped: ``Élodie`` -> ``elodie``), lower-cased, each run of other characters made one ``-``, cut to
    fit, starting with a letter (``x`` when nothing is left: ``张三`` -> ``x---<hash>``). A kept name never
    contains ``--`` and a changed one always ends in ``---`` + hash, so two different names never share a slug
    (up to the 32-bit hash): ``Alice`` -> ``alice---<hash>`` while ``alice`` -> ``alice``.

    ``hash_chars`` (default 8) hex digits of the hash, and ``always_hash`` (the hashed form even for a name that
    could be kept), give the further candidates of one scheme where a slug is already taken by something that is
    not the name's (an OS account name, :mod:`crater_app.cluster.local.accounts`).

    Raises:
        ValueError: ``max_length`` below ``hash_chars + 5`` (13 by default: no room for a safe part and the hash).
    """
    room = max_length - len(_SLUG_SEPARATOR) - hash_chars
    if room < 2:
        raise ValueError(f"a slug needs at least {len(_SLUG_SEPARATOR) + hash_chars + 2} characters")
    if not always_hash and "--" not in name and len(name) <= max_length and _DNS1035_LABEL.fullmatch(name):
        return name
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    safe = _NOT_SLUG.sub("-", folded).strip("-")
    if safe and not safe[0].isalpha():
        safe = "x-" + safe
    safe = safe[:room].rstrip("-") or "x"
    return f"{safe}{_SLUG_SEPARATOR}{_hash_suffix(name, hash_chars)}"


def check_dns1123_label(value: object, field: str) -> str:
    """Return ``value`` if it is a DNS-1123 label (lower-case alphanumerics and '-', 1..63 chars).

    Raises:
        InvalidInput: naming ``field``: ``name.not_string``, ``name.empty``, ``name.too_long`` (``length``,
            ``max``) or ``name.dns1123`` (``max``).
    """
    if not isinstance(value, str):
        raise InvalidInput("name.not_string", field, field_name=field)
    if not value:
        raise InvalidInput("name.empty", field, field_name=field)
    if len(value) > DNS1123_LABEL_MAX:
        raise InvalidInput("name.too_long", field, field_name=field, length=len(value), max=DNS1123_LABEL_MAX)
    if not _DNS1123_LABEL.fullmatch(value):  # fullmatch: '$' would also accept a trailing newline
        raise InvalidInput("name.dns1123", field, field_name=field, max=DNS1123_LABEL_MAX)
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


#: Unicode's explicit bidirectional formatting characters that override or isolate the order text is shown in
#: (UAX #9 §2: embeddings and overrides U+202A..U+202E, isolates U+2066..U+2069). In a name they make it read
#: differently from what it holds ("Trojan Source", CVE-2021-42574): ``"\u202eexe.txt"`` shows as ``txt.exe``.
BIDI_CONTROLS = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))


def check_bidi(value: str, field: str) -> None:
    """Refuse ``value`` when it holds a character of :data:`BIDI_CONTROLS`.

    Raises:
        InvalidInput: ``name.text_bidi`` naming ``field``, with the first such ``char`` (``U+202E``) and its 1-based
            ``position``.
    """
    for i, ch in enumerate(value):
        if ch in BIDI_CONTROLS:
            raise InvalidInput("name.text_bidi", field, field_name=field, char=shown_char(ch), position=i + 1)


def check_text(value: object, field: str, limit: int) -> str:
    """Return ``value`` if it is a string of at most ``limit`` characters that :func:`is_text` accepts (empty
    allowed), without bidirectional overrides or isolates (:data:`BIDI_CONTROLS`): a display name, a description.

    Raises:
        InvalidInput: ``name.text`` naming ``field`` and ``max`` (``limit``); ``name.text_bidi`` (see
            :func:`check_bidi`).
    """
    if not isinstance(value, str) or len(value) > limit or not is_text(value):
        raise InvalidInput("name.text", field, field_name=field, max=limit)
    check_bidi(value, field)
    return value


#: An accelerator model name as NVML and the Kubernetes GPU feature discovery label ``nvidia.com/gpu.product``
#: spell it (``NVIDIA-A100-SXM4-80GB``, ``NVIDIA H100 80GB HBM3``): letters, digits, ``. _ -`` and spaces.
ACCELERATOR_MODEL = re.compile(r"[A-Za-z0-9._ -]+")
MAX_MODEL_CHARS = 128


def is_model_name(text: str) -> bool:
    """Whether ``text`` is an accelerator model name (:data:`ACCELERATOR_MODEL`, 1..128 characters)."""
    return 0 < len(text) <= MAX_MODEL_CHARS and ACCELERATOR_MODEL.fullmatch(text) is not None
