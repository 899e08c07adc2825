"""Forget requests opened before the global ids kept the user's database primary key in
``user_ref``; the erasure job now reads it as the user's memory id (``User.uid`` hex, what the
documents carry). Rewrite those rows whose user still exists. A row whose user record was
erased already keeps its old reference (nothing of that user is left to find by it)."""

from django.db import migrations


def user_refs_to_uids(apps, schema_editor):  # type: ignore[no-untyped-def]
    ForgetRequest = apps.get_model("erasure", "ForgetRequest")
    rows = ForgetRequest.objects.filter(user__isnull=False).select_related("user")
    for row in rows.iterator():
        if row.user_ref == str(row.user_id):
            row.user_ref = row.user.uid.hex
            row.save(update_fields=["user_ref"])


def uids_to_user_refs(apps, schema_editor):  # type: ignore[no-untyped-def]
    ForgetRequest = apps.get_model("erasure", "ForgetRequest")
    rows = ForgetRequest.objects.filter(user__isnull=False).select_related("user")
    for row in rows.iterator():
        if row.user_ref == row.user.uid.hex:
            row.user_ref = str(row.user_id)
            row.save(update_fields=["user_ref"])


class Migration(migrations.Migration):
    dependencies = [
        ("erasure", "0001_forget_requests"),
        ("tenants", "0006_cluster_ids_statistics_key_expiry"),
    ]

    operations = [migrations.RunPython(user_refs_to_uids, uids_to_user_refs)]
