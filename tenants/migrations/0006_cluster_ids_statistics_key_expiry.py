"""Globally unique cluster ids for tenants and users (nullable -> backfill -> unique, non-null),
the tenant's statistics scope, and scoped keys' expiry."""

import uuid

from django.db import migrations, models


def backfill_uids(apps, schema_editor):  # type: ignore[no-untyped-def]
    for name in ("Tenant", "User"):
        model = apps.get_model("tenants", name)
        for row in model.objects.filter(uid__isnull=True).only("pk"):
            row.uid = uuid.uuid4()
            row.save(update_fields=["uid"])


class Migration(migrations.Migration):
    dependencies = [("tenants", "0005_user_provisioning_and_tenant_settings")]

    operations = [
        migrations.CreateModel(
            name="Deployment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("uid", models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name="tenant",
            name="uid",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="user",
            name="uid",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.RunPython(backfill_uids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="tenant",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AlterField(
            model_name="user",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AddField(
            model_name="tenant",
            name="statistics_scope",
            field=models.CharField(
                choices=[
                    ("tenant", "Per tenant (users of the tenant share term statistics)"),
                    ("user", "Per user (no statistic is shared between users; lower recall)"),
                ],
                default="tenant",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="scopedkey",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
