"""The composition root: the URL map and the served applications (ASGI, WSGI) that wire every
app of Atlas together. Nothing imports it; it imports whatever it serves."""
