"""domain.volume_claims: the claims a project may mount, and the volumes a backend can mount at all."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_volumes import VolumeSpec
from crater_app.domain.volume_claims import check_claims, check_volume_support, claims_of
from crater_app.settings import Settings

SPACES = "crater-spaces"
REGISTRY = {"imagenet": ["*"], "vision-ckpt": ["vision"], "coco": ["vision", "nlp"], "old": []}


def pvc(claim: str, mount_path: str = "/d") -> VolumeSpec:
    return VolumeSpec(source="pvc", claim=claim, mount_path=mount_path)


def space(source: str = "project") -> VolumeSpec:
    return VolumeSpec(source=source, mount_path="/space")


@pytest.mark.parametrize(("project", "registry", "expected"), [
    ("vision", REGISTRY, ["coco", "imagenet", "vision-ckpt"]),
    ("nlp", REGISTRY, ["coco", "imagenet"]),
    ("default", REGISTRY, ["imagenet"]),  # "*": every project
    ("default", {}, []),
    ("default", {"old": []}, []),  # a claim registered for no project
])
def test_claims_of(project, registry, expected):
    assert claims_of(project, registry) == expected


@pytest.mark.parametrize(("volumes", "project"), [
    ([], "default"),
    ([space(), space("user")], "default"),  # the spaces are the project's and user's own, not a pvc
    ([pvc("imagenet")], "default"),
    ([pvc("vision-ckpt"), pvc("coco", "/c"), space()], "vision"),
])
def test_a_registered_claim_is_mounted(volumes, project):
    check_claims(volumes, project, REGISTRY, SPACES)


@pytest.mark.parametrize(("volumes", "project", "registry", "field", "code", "words"), [
    ([pvc("vision-ckpt")], "nlp", REGISTRY, "volumes[0].claim", "job.volume_claim_not_registered",
     ["'vision-ckpt' is not registered for project nlp", "it may mount coco, imagenet"]),
    ([space(), pvc("imagenet", "/i"), pvc("secret", "/s")], "default", REGISTRY, "volumes[2].claim",
     "job.volume_claim_not_registered", ["it may mount imagenet"]),
    ([pvc("old")], "default", {"old": []}, "volumes[0].claim", "job.volume_claim_none_registered",
     ["no claim is", "CRATER_VOLUME_CLAIMS"]),
    ([pvc("data")], "default", {}, "volumes[0].claim", "job.volume_claim_none_registered", ["'data'"]),
    # the claim of every project's and user's spaces: never, registered or not
    ([pvc(SPACES)], "default", {}, "volumes[0].claim", "job.volume_claim_spaces", ["every project's and user's"]),
    ([pvc(SPACES)], "default", {SPACES: ["*"]}, "volumes[0].claim", "job.volume_claim_spaces", []),
    # registered, yet never offered as one the project may mount
    ([pvc("x")], "default", {SPACES: ["*"], "imagenet": ["*"]}, "volumes[0].claim",
     "job.volume_claim_not_registered", ["may mount imagenet"]),
])
def test_a_claim_not_registered_for_the_project_is_refused(volumes, project, registry, field, code, words):
    with pytest.raises(InvalidInput) as info:
        check_claims(volumes, project, registry, SPACES)
    assert (info.value.code, info.value.field) == (code, field)
    for word in words:
        assert word in info.value.message_in("en"), info.value.message_in("en")
    assert info.value.message_in("zh-CN") != info.value.message_in("en")


@pytest.mark.parametrize(("volumes", "host", "pvc_ok", "refusal"), [
    ([], True, False, None),
    ([space()], False, False, None),
    ([space(), pvc("imagenet")], False, True, None),
    # a backend of host processes mounts nothing: the first volume, whatever its source
    ([space()], True, False, ("job.volume_host_processes", "volumes[0]")),
    ([pvc("imagenet")], True, True, ("job.volume_host_processes", "volumes[0]")),
    # a pvc volume needs a backend that mounts claims
    ([space(), pvc("imagenet")], False, False, ("job.volume_pvc_unsupported", "volumes[1].source")),
])
def test_volume_support_by_capability(volumes, host, pvc_ok, refusal):
    if refusal is None:
        check_volume_support(volumes, host_processes=host, pvc_volumes=pvc_ok)
        return
    with pytest.raises(InvalidInput) as info:
        check_volume_support(volumes, host_processes=host, pvc_volumes=pvc_ok)
    assert (info.value.code, info.value.field) == refusal


def test_the_local_backends_refusal_says_why():
    with pytest.raises(InvalidInput) as info:
        check_volume_support([space()], host_processes=True, pvc_volumes=False)
    message = info.value.message_in("en")
    assert "processes on this machine" in message and "mounts nothing" in message and "later" in message
    assert "本机" in info.value.message_in("zh-CN")


def test_the_registry_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("CRATER_VOLUME_CLAIMS", '{"imagenet": ["*"], "ckpt": ["vision"]}')
    assert Settings().volume_claims == {"imagenet": ["*"], "ckpt": ["vision"]}
    monkeypatch.delenv("CRATER_VOLUME_CLAIMS")
    assert Settings().volume_claims == {} and Settings().kube_spaces_claim == "crater-spaces"


@pytest.mark.parametrize(("claims", "spaces"), [
    ('{"crater-spaces": ["*"]}', None),
    ('{"imagenet": ["*"], "home": ["vision"]}', "home"),  # the spaces claim under another name
])
def test_the_spaces_claim_can_never_be_registered(monkeypatch, claims, spaces):
    monkeypatch.setenv("CRATER_VOLUME_CLAIMS", claims)
    if spaces:
        monkeypatch.setenv("CRATER_KUBE_SPACES_CLAIM", spaces)
    with pytest.raises(ValidationError, match="every project's and user's spaces"):
        Settings()


def test_a_registry_that_is_not_claims_to_project_lists_is_a_settings_error(monkeypatch):
    monkeypatch.setenv("CRATER_VOLUME_CLAIMS", '{"imagenet": "*"}')
    with pytest.raises(ValidationError):
        Settings()


@pytest.mark.parametrize("source, asked, writes, mounted", [
    ("project", False, False, True),   # a member reads the project's space
    ("project", False, True, False),   # its admins write it
    ("project", True, True, True),     # read-only asked stays read-only
    ("user", False, False, False),     # one's own space
    ("pvc", False, False, False),      # a registered claim as registered
])
def test_the_role_decides_whether_the_project_space_is_written(source, asked, writes, mounted):
    from crater_app.domain.volume_claims import by_role

    volume = VolumeSpec(source=source, mount_path="/m", read_only=asked, claim="c" if source == "pvc" else None)
    assert [v.read_only for v in by_role([volume], writes_project_space=writes)] == [mounted]
