"""Paging of list endpoints: the page number and page size a caller may ask for."""

from __future__ import annotations

from crater_app.domain.errors import InvalidInput

#: the largest page number any list accepts (a bound on OFFSET work)
MAX_PAGE = 1_000_000


def check_page(page: object, page_size: object, max_page_size: int) -> None:
    """Check a list request's ``page`` (1..:data:`MAX_PAGE`) and ``page_size`` (1..``max_page_size`` rows).

    Raises:
        InvalidInput: ``page.out_of_range`` (field ``page``) or ``page.size_out_of_range`` (field ``page_size``),
            arguments ``min`` and ``max``, for a value out of range or not an integer (booleans included).
    """
    if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= MAX_PAGE:
        raise InvalidInput("page.out_of_range", "page", min=1, max=MAX_PAGE)
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= max_page_size:
        raise InvalidInput("page.size_out_of_range", "page_size", min=1, max=max_page_size)
