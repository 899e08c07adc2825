# The one exactly-once ledger (atlas_platform.ledger); memory's and agents' tables are copied
# into it and dropped by their own migrations (memory 0004, agents 0004).

import django.core.serializers.json
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('atlas_platform', '0001_job_outbox'),
    ]

    operations = [
        migrations.CreateModel(
            name='LedgerEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scope', models.CharField(max_length=64)),
                ('key', models.CharField(max_length=255)),
                ('owner', models.CharField(blank=True, max_length=64)),
                ('tenant_pk', models.BigIntegerField()),
                ('user_pk', models.BigIntegerField(blank=True, null=True)),
                ('request', models.TextField()),
                ('request_hash', models.CharField(max_length=64)),
                ('seed', models.CharField(max_length=255)),
                ('status_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('response', models.JSONField(blank=True, encoder=django.core.serializers.json.DjangoJSONEncoder, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(db_index=True)),
            ],
            options={
                'indexes': [models.Index(fields=['tenant_pk', 'user_pk'], name='ledger_entry_user')],
                'constraints': [models.UniqueConstraint(fields=('scope', 'key'), name='ledger_key_once_per_scope')],
            },
        ),
    ]
