"""Every state change of the tenants domain. Each service writes one audit event in its
transaction. Import services from their modules:
``from tenants.services.tokens import token_issue``.
"""
