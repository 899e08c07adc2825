"""Erasure: operator forget requests that erase memories at scale.

Flow: ``forget_request_open`` (an operator of the tenant, with a reason and a ticket reference,
or a token that may act for the user; its dry run is kept: ``preview_at_open``) ->
``forget_request_approve`` / ``_reject`` (tenant or platform admins; auditors never; under four
eyes, on by default for a new tenant, never the operator who opened it) -> the ``erasure.run``
Celery task, queued on ``ATLAS_ERASURE_QUEUE`` after the commit ->
``forget_request_execute``: ``done`` with a receipt, or ``failed`` with a reason
(``forget_request_retry`` sends it back to approved; the job resumes where it stopped).

The job, per personal memory type (episodic, semantic, procedural), through memory's public
functions (``memory_ids_page``, ``memory_erase_page``, ``memory_remaining_count``): find a page
of the user's documents with the platform's writer credential (tenant + user filter, ids only),
journal the page's ids, delete them in bulk, count them; then verify that a count per type
finds nothing left, purge the user's entries of the exactly-once ledger
(``atlas_platform.ledger``: stored API responses and operation results quote memory text) and,
if asked, invalidate the user's cluster key and delete the user record.

The dry run (``services/preview.py``): counts per memory type, the time span and a bounded
sample of texts, shown when the request is opened and on the approval page, taken again when the
approval is posted. If the targeted ids changed since the approver looked, nothing is approved
and the new preview is shown. Approving fixes the targets (a query resolved into ids, its text
wiped); the job erases exactly those. The receipt keeps both previews (counts, span, the ids'
hash) beside what was erased, and is downloadable signed (``services/receipts.py``, HMAC-SHA256
under ``ATLAS_RECEIPT_KEY``; ``manage.py receipt_verify FILE``).

Where text could survive, and why it does not:

- audit events: ids, counts and flags only (memory writes' events hold ids and kinds too);
- ``ForgetRequest``: memory ids. A ``query`` scope's text is kept only until it is resolved into
  ids (at approval; requests approved before that resolved it when their job first started), or
  the request is rejected, then it is wiped from the row (its hash stays: ``query_sha256``). The
  previews shown to operators are never stored, only their counts and ids' hash. The query is
  never in audit events, API responses or logs;
- ``ErasureProgress`` and the receipt: ids and counts only;
- the exactly-once ledger's entries of the user (``Idempotency-Key`` responses of their tokens
  and of tenant tokens' requests on the user's paths, their agents' operation results) are
  deleted by every erasure, whatever its scope (the receipt's ``idempotency_records_deleted``);
- Celery messages carry the request id only; the job logs ids and counts only.

Query scope: "matching" is a case-insensitive, whitespace-normalised phrase contained in a
memory's text, name, description or trigger (superseded facts included), over the user's
personal memories.

Resuming: a worker holds a lease on a running request (``ATLAS_ERASURE_LEASE_S``, renewed every
page). With ``acks_late`` a killed worker's message stays unacknowledged until the broker's
visibility timeout (Redis: an hour by default), so the ``erasure.resume_stalled`` beat task
(every 5 minutes; or ``manage.py erasure_resume``) re-queues requests whose lease expired, and
approved requests whose job never started. Duplicate messages are harmless: a job runs only on a
request without a live lease, and a journaled page is finished before anything new is searched,
so counts are exact. A failed request is retried from the admin (button or list action) or with
``manage.py erasure_resume --retry ID --as <operator>``.
"""
