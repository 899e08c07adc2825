# The applied operations move into the one exactly-once ledger (atlas_platform.LedgerEntry),
# scoped to their user and owned by their agent, with the seed their store writes' memory ids
# derived from, so a replay after the upgrade still answers duplicate; then the table goes.

from datetime import timedelta

from django.conf import settings
from django.db import migrations

BATCH = 1000


def to_ledger(apps, schema_editor):
    Applied = apps.get_model("agents", "AppliedOperation")
    Entry = apps.get_model("atlas_platform", "LedgerEntry")
    ttl = timedelta(days=settings.ATLAS_OPERATION_TTL_DAYS)
    lease = timedelta(seconds=settings.ATLAS_WRITE_LEASE_S)
    rows = Applied.objects.select_related("user").order_by("pk")
    batch = []
    for op in rows.iterator(chunk_size=BATCH):
        done = op.state == "done"
        tenant_id = op.user.tenant_id
        batch.append(
            Entry(
                scope=f"user:{op.user_id}",
                key=op.operation_id,
                owner=f"agent:{op.agent_id}" if op.agent_id is not None else "",
                tenant_pk=tenant_id,
                user_pk=op.user_id,
                request=op.kind,
                request_hash=op.request_hash,
                seed=f"op:{tenant_id}:{op.user_id}:{op.operation_id}:{op.request_hash}",
                status_code=op.status_code if done else None,
                response=op.result if done else None,
                created_at=op.created_at,
                lease_until=None if done else op.created_at + lease,
                expires_at=op.created_at + ttl,
            )
        )
        if len(batch) >= BATCH:
            Entry.objects.bulk_create(batch)
            batch = []
    Entry.objects.bulk_create(batch)


def from_ledger(apps, schema_editor):
    Applied = apps.get_model("agents", "AppliedOperation")
    Agent = apps.get_model("agents", "Agent")
    User = apps.get_model("tenants", "User")
    Entry = apps.get_model("atlas_platform", "LedgerEntry")
    users = set(User.objects.values_list("pk", flat=True))
    agents = set(Agent.objects.values_list("pk", flat=True))
    entries = Entry.objects.filter(scope__startswith="user:")
    batch = []
    for entry in entries.order_by("pk").iterator(chunk_size=BATCH):
        agent_id = int(entry.owner.split(":", 1)[1]) if entry.owner else None
        if entry.user_pk not in users:
            continue
        done = entry.status_code is not None
        batch.append(
            Applied(
                user_id=entry.user_pk,
                agent_id=agent_id if agent_id in agents else None,
                operation_id=entry.key,
                kind=entry.request,
                request_hash=entry.request_hash,
                state="done" if done else "pending",
                status_code=entry.status_code if done else 200,
                result=entry.response if done else {},
                created_at=entry.created_at,
            )
        )
    Applied.objects.bulk_create(batch)
    entries.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_applied_operation_agent'),
        ('atlas_platform', '0002_ledger_entry'),
    ]

    operations = [
        migrations.RunPython(to_ledger, from_ledger),
        migrations.DeleteModel(
            name='AppliedOperation',
        ),
    ]
