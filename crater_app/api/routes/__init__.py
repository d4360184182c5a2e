"""The API's routes: one :class:`~fastapi.APIRouter` per resource (``routes/<resource>.py``), each with its full
path under :data:`API_PREFIX`, assembled by :func:`crater_app.api.app.build_api`."""

API_PREFIX = "/api/v1"
