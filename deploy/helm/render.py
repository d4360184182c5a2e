"""Render a Helm chart offline with the real Helm engine and print the manifests as JSON.

Run by the Helm venv's interpreter (``make helm-venv``: a separate venv holding only ``helm-python-sdk``, the Helm v4
Go library behind a C ABI; Crater's own venv does not need it)::

    .venv-helm/bin/python deploy/helm/render.py deploy/helm/crater --values '{"ingress": {"enabled": true}}'

Prints ``{"manifests": {"<chart>/templates/<file>": "<rendered text>", ...}, "helm": "<version>"}`` on stdout and
exits 0, or prints Helm's message on stderr and exits 2 when the chart refuses the values (``values.schema.json``, a
template's ``fail``) or cannot be loaded. With ``--lint``, prints ``helm lint --strict``'s report instead
(``{"total_charts_linted", "messages": [{"severity", "path", "error"}], "errors"}``). No cluster is contacted:
``lookup`` returns nothing, so generated secrets are random each run.
Only the standard library and ``helm_python`` are imported.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    """Parse ``chart --values JSON --name NAME --namespace NS``, render, print; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chart", help="the chart's folder")
    parser.add_argument("--values", default="{}", help="values as a JSON object, merged over the chart's values.yaml")
    parser.add_argument("--name", default="crater", help="the release name")
    parser.add_argument("--namespace", default="crater", help="the release namespace")
    parser.add_argument("--lint", action="store_true", help="print `helm lint --strict`'s report instead")
    args = parser.parse_args(argv)
    try:
        import helm_python as helm
    except ImportError as exc:
        print(f"render.py: the Helm library is missing ({exc}); run `make helm-venv`", file=sys.stderr)
        return 3
    values = json.loads(args.values)
    try:
        if args.lint:
            json.dump(helm.lint(args.chart, values, strict=True, namespace=args.namespace), sys.stdout)
            return 0
        chart = helm.Chart.load(args.chart)
        chart.validate_schema(values)
        manifests = chart.render(values, name=args.name, namespace=args.namespace, is_install=True)
    except helm.HelmError as exc:
        print(f"render.py: {exc}", file=sys.stderr)
        return 2
    json.dump({"manifests": manifests, "helm": helm.helm_sdk_version()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
