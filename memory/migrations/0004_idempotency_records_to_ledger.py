# The Idempotency-Key records move into the one exactly-once ledger (atlas_platform.LedgerEntry):
# each is copied with the seed its write's memory ids derived from, so a retry after the upgrade
# still replays (or takes over with the same ids), then the table goes.

from datetime import timedelta

from django.conf import settings
from django.db import migrations

TTL = timedelta(hours=24)  # an Idempotency-Key's lifetime (memory.api.base.IDEMPOTENCY_TTL)
BATCH = 1000


def to_ledger(apps, schema_editor):
    Record = apps.get_model("memory", "IdempotencyRecord")
    Entry = apps.get_model("atlas_platform", "LedgerEntry")
    lease = timedelta(seconds=settings.ATLAS_WRITE_LEASE_S)
    rows = Record.objects.select_related("token").order_by("pk")
    batch = []
    for record in rows.iterator(chunk_size=BATCH):
        token = record.token
        pending = record.status_code is None
        batch.append(
            Entry(
                scope=f"token:{token.pk}",
                key=record.key,
                tenant_pk=token.tenant_id,
                user_pk=token.user_id,
                request=record.request_line,
                request_hash=record.request_hash,
                seed=f"idem:{token.tenant_id}:{token.pk}:{record.pk}",
                status_code=record.status_code,
                response=record.response_body,
                created_at=record.created_at,
                lease_until=(record.lease_until or record.created_at + lease) if pending else None,
                expires_at=record.created_at + TTL,
            )
        )
        if len(batch) >= BATCH:
            Entry.objects.bulk_create(batch)
            batch = []
    Entry.objects.bulk_create(batch)


def from_ledger(apps, schema_editor):
    Record = apps.get_model("memory", "IdempotencyRecord")
    Token = apps.get_model("tenants", "PlatformToken")
    Entry = apps.get_model("atlas_platform", "LedgerEntry")
    tokens = set(Token.objects.values_list("pk", flat=True))
    entries = Entry.objects.filter(scope__startswith="token:")
    for entry in entries.order_by("pk").iterator(chunk_size=BATCH):
        token_id = int(entry.scope.split(":", 1)[1])
        if token_id not in tokens:  # the token is gone: so would its records have been
            continue
        record = Record.objects.create(
            token_id=token_id,
            key=entry.key,
            request_line=entry.request,
            request_hash=entry.request_hash,
            status_code=entry.status_code,
            response_body=entry.response,
            lease_until=entry.lease_until,
        )
        Record.objects.filter(pk=record.pk).update(created_at=entry.created_at)
    entries.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('atlas_platform', '0002_ledger_entry'),
        ('memory', '0003_write_intents'),
    ]

    operations = [
        migrations.RunPython(to_ledger, from_ledger),
        migrations.DeleteModel(
            name='IdempotencyRecord',
        ),
    ]
