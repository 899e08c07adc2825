"""On PostgreSQL, make the audit table append-only in the database itself.

The model and queryset already refuse updates and deletes; the trigger closes the raw-SQL path.
(SQLite, the development default, relies on the model guards.)
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION atlas_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'tenants_auditevent is append-only (% refused)', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER atlas_audit_append_only
    BEFORE UPDATE OR DELETE ON tenants_auditevent
    FOR EACH ROW EXECUTE FUNCTION atlas_audit_append_only();
"""
BACKWARD = """
DROP TRIGGER IF EXISTS atlas_audit_append_only ON tenants_auditevent;
DROP FUNCTION IF EXISTS atlas_audit_append_only();
"""


def _run(sql: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]
    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
