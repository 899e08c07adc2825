from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0011_audit_expiry_by_retention'),
    ]

    operations = [
        migrations.AddField(
            model_name='platformtoken',
            name='allow_export',
            field=models.BooleanField(default=False),
        ),
    ]
