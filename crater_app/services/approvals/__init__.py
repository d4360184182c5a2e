"""Approval requests (Crater's "approval orders"): ask, list, read, approve or reject, and close the orphans.

Rules (the permission checks are in :mod:`crater_app.domain.policy`):

- A request has a kind (see :mod:`crater_app.domain.approvals`), a reason (1..1,000 characters) and a target: a
  project (``quota``) or a job (``extend_runtime``, ``reclaim_lock``, ``large_job``). One pending request per
  requester, kind and target at a time.
- Platform admins decide every request; a project's admins decide the requests of their project except
  ``quota`` and except their own. A decision may carry a note (at most 1,000 characters); a request is decided
  once (a second decision is a 409).
- Approving applies the request at once, in the decision's transaction: the project's quota sections take the
  payload's entries; the job's ``max_runtime`` grows (and the backend's deadline with it); the job gets its
  reclaim lock; a held large job goes on to admission (``ctx.kick``). Rejecting a large job cancels it.
- Auto-approval (``settings.auto_extend_max_s``/``auto_extend_window_s``, Crater's default: an extension under
  12 h, at most once per 48 h per user): such an ``extend_runtime`` request is approved when it is made,
  ``auto=True``, with no decider. It never grants beyond the user's own ``max_runtime`` ceiling.
- A pending request whose target is gone (the job finished, was cancelled or deleted, a large job no longer
  waits; the project expired) is closed: by :func:`close_orphans` from the leader loop, and when someone tries
  to decide it (409).
- Every change writes an operation-log row, and every decision (and closing) a notification for the requester,
  in the same transaction; a new pending request notifies who may decide it (platform admins, and the project's
  admins except for quota). Every message (errors, job events, operation-log details, notifications, the notes
  Crater writes on a request) is a code with arguments, read in the reader's language.

Modules: :mod:`.reading` (list, read), :mod:`.requests` (ask, the auto rule), :mod:`.decisions` (approve, reject,
effects, close), :mod:`.orphans` (the leader loop's sweep), :mod:`.notices` (targets, reasons, notifications,
notes).
"""

from crater_app.services.approvals.decisions import approve, decide, reject
from crater_app.services.approvals.notices import job_target, note_text, notify_deciders, project_target
from crater_app.services.approvals.orphans import close_orphans
from crater_app.services.approvals.reading import MAX_PAGE_SIZE, get_approval, list_approvals
from crater_app.services.approvals.requests import create_request

__all__ = [
    "MAX_PAGE_SIZE", "approve", "close_orphans", "create_request", "decide", "get_approval", "job_target",
    "list_approvals", "note_text", "notify_deciders", "project_target", "reject",
]
