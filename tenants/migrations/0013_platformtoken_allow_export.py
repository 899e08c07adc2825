from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0012_four_eyes_by_default'),
    ]

    operations = [
        migrations.AddField(
            model_name='platformtoken',
            name='allow_export',
            field=models.BooleanField(default=False),
        ),
    ]
