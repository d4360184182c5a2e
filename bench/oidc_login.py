"""Benchmark: single sign-on with OpenID Connect, against the test provider (tests/oidc_provider.py) on 127.0.0.1.

Measures, in one process on a fresh SQLite data dir: the whole sign-in of an existing account (start -> the
provider's authorization endpoint -> callback: code exchange, ID token checks, account and group mapping, one-time
code -> redeemed for a console session), and the ID token check alone (signature with the cached JWKS, claims). The
provider runs in the same process (threads), so its time is included in the sign-in figure.

    .venv/bin/python bench/oidc_login.py [--logins 200] [--verifications 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.simplefilter("ignore", DeprecationWarning)

import httpx  # noqa: E402

from crater_app.auth import oidc  # noqa: E402
from crater_app.bootstrap import build_context  # noqa: E402
from crater_app.services import console_sessions, identity, oidc_login, projects, sign_in, users  # noqa: E402
from crater_app.settings import Settings  # noqa: E402
from tests.oidc_provider import CALLBACK, MAPPING, Provider  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logins", type=int, default=200)
    parser.add_argument("--verifications", type=int, default=2000)
    args = parser.parse_args()
    provider = Provider(redirect_uris=[CALLBACK]).start()
    data = Path(tempfile.mkdtemp(prefix="crater-bench-oidc-"))
    settings = Settings(data_dir=data, local_gpus="1", oidc_issuer=provider.issuer, oidc_client_id="crater",
                        oidc_client_secret="crater-secret", oidc_redirect_url=CALLBACK,
                        oidc_scopes="openid profile email groups", oidc_group_mapping=json.dumps(MAPPING))
    ctx = build_context(settings)
    users.ensure_admin(ctx, "bench-admin-password")
    admin = identity.authenticate(ctx, sign_in.login(ctx, "admin", "bench-admin-password").access_token)
    projects.create_project(ctx, admin, "ml", "ML")
    client = httpx.Client(timeout=10)

    def sso() -> None:
        url, sealed = oidc_login.start(ctx)
        location = client.get(url, follow_redirects=False).headers["location"]
        params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        console_sessions.start_from_code(ctx, oidc_login.complete(ctx, sealed, params).code, method="oidc")

    sso()  # first sign-in creates the account; discovery and JWKS get cached
    times = []
    t0 = time.perf_counter()
    for _ in range(args.logins):
        start = time.perf_counter()
        sso()
        times.append(time.perf_counter() - start)
    wall = time.perf_counter() - t0
    print(f"machine: {os.cpu_count()} cores; database: SQLite; provider: tests/oidc_provider.py on 127.0.0.1")
    print(f"whole sign-in (existing account, {args.logins} in a row): {args.logins / wall:.1f} sign-ins/s, "
          f"p50 {statistics.median(times) * 1000:.1f} ms, p95 {pct(times, 0.95) * 1000:.1f} ms")

    # The ID token check alone: a token from the provider, verified again and again (nonce known).
    pending_url, sealed = oidc_login.start(ctx)
    pending = oidc.open_pending(sealed, oidc_login._key(ctx.settings))
    location = client.get(pending_url, follow_redirects=False).headers["location"]
    code = parse_qs(urlsplit(location).query)["code"][0]
    doc = oidc.discover(oidc_login.provider_settings(ctx.settings))
    token = httpx.post(doc["token_endpoint"], auth=("crater", "crater-secret"), data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
        "code_verifier": pending.code_verifier}).json()["id_token"]
    ps = oidc_login.provider_settings(ctx.settings)
    t0 = time.perf_counter()
    for _ in range(args.verifications):
        oidc.verify_id_token(ps, doc, token, pending.nonce)
    wall = time.perf_counter() - t0
    print(f"ID token check alone (RS256, cached JWKS): {args.verifications / wall:.0f} checks/s, "
          f"{wall / args.verifications * 1e6:.0f} us each")
    client.close()
    provider.stop()
    ctx.engine.dispose()


if __name__ == "__main__":
    main()
