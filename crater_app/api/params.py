"""Path parameters of the API: integer ids written as digits only.

pydantic's lax integers read ``"1.0"``, ``" 1"`` and ``"+1"`` as 1, so ``/jobs/1.0`` and ``/jobs/%201`` answered job 1:
one object under many URLs (a cache, an audit log and a client that compares URLs each see several). An id in a
path is its decimal digits and nothing else, as the API writes it; anything else is a 422 naming the parameter.
The parameter is named ``id`` on every route (``/jobs/{id}``, ``/approvals/{id}``), the field a not-found error
names too. Ids are 64-bit in both databases: a larger number names no object (404, as any id that does not exist);
more than 64 digits is not read at all (422).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

#: the largest id an object can have (ids are 64-bit signed integers in both databases)
MAX_ID = 2**63 - 1
#: the most digits an id may be written with: a number that long is read (and names no object); a longer one is
#: refused unread (converting thousands of digits costs, and an error would echo them)
MAX_ID_DIGITS = 64


def _digits(value: object) -> object:
    """``value`` (the path segment) as an ``int`` when it is 1..64 ASCII digits.

    Raises:
        PydanticCustomError: type ``integer_digits`` (``max``: digits), mapped to ``request.integer_digits``.
    """
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= MAX_ID_DIGITS:
        return int(value)
    raise PydanticCustomError("integer_digits", "an id is written with the digits 0-9 only", {"max": MAX_ID_DIGITS})


#: an object's id in a path: 1..64 digits (objects have ids 1..2**63 - 1)
ObjectId = Annotated[int, BeforeValidator(_digits), Path(
    description="the object's id: decimal digits only (no sign, point or space)",
    json_schema_extra={"minimum": 0, "maximum": MAX_ID})]
