"""The tenant's ``key_rotation_days`` (a 90-day "stale" threshold) contradicted the keys' real
lifetime: keys expire after ``ATLAS_SCOPED_KEY_TTL_DAYS`` and the hourly beat renews them. The
settings are the one source now; the column only ever coloured the dashboard."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0013_platformtoken_allow_export'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='tenant',
            name='key_rotation_days',
        ),
    ]
