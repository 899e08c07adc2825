"""The scoping holds over a real socket too: a live server, a cookie jar, plain HTTP."""

import http.cookiejar
import re
import urllib.parse
import urllib.request

import pytest

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(base: str, username: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login_page = opener.open(f"{base}/admin/login/").read().decode()
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page)
    assert match is not None
    csrf = match.group(1)
    form = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": csrf, "username": username, "password": PASSWORD, "next": "/admin/"}
    ).encode()
    request = urllib.request.Request(f"{base}/admin/login/", data=form, headers={"Referer": base})
    assert "Log out" in opener.open(request).read().decode()
    return opener


def test_over_http_a_tenant_admin_sees_only_their_tenant(live_server, alice, charlie, acme_admin):
    opener = signed_in(live_server.url, "acme-admin")

    users = opener.open(f"{live_server.url}/admin/tenants/user/").read().decode()
    other = opener.open(f"{live_server.url}/admin/tenants/user/{charlie.pk}/change/")

    assert "alice" in users and "charlie" not in users
    # redirected away ("doesn't exist") to the index, which sends a tenant admin to their
    # own tenant's dashboard
    assert other.geturl().endswith(f"/admin/tenants/tenant/{alice.tenant_id}/dashboard/")
    assert "charlie" not in other.read().decode()
