"""On PostgreSQL, let retention (and only a transaction that says so) delete audit events.

The append-only trigger (0002) refuses every UPDATE and DELETE. Retention
(``tenants.services.audit.audit_expire``) deletes events older than the tenant's audit
retention: it sets ``atlas.audit_expiry = 'on'`` for its own transaction (``SET LOCAL``), and
the trigger lets that transaction's DELETEs through. UPDATEs stay refused, always.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION atlas_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('atlas.audit_expiry', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'tenants_auditevent is append-only (% refused)', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""

BACKWARD = """
CREATE OR REPLACE FUNCTION atlas_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'tenants_auditevent is append-only (% refused)', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""


def _run(sql: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [("tenants", "0010_retention_and_legal_hold")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
