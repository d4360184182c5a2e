"""Paging of list endpoints: the page number and page size a caller may ask for."""

from __future__ import annotations

from crater_app.domain.errors import InvalidInput

#: the largest page number any list accepts (a bound on OFFSET work)
MAX_PAGE = 1_000_000


def check_page(page: object, page_size: object, max_page_size: int) -> None:
    """Check a list request's ``page`` (1..:data:`MAX_PAGE`) and ``page_size`` (1..``max_page_size`` rows).

    Raises:
        InvalidInput: naming ``page`` or ``page_size`` with its range, for a value out of range or not an integer
            (booleans included).
    """
    if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= MAX_PAGE:
        raise InvalidInput(f"page must be between 1 and {MAX_PAGE}", "page")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= max_page_size:
        raise InvalidInput(f"page_size must be between 1 and {max_page_size}", "page_size")
