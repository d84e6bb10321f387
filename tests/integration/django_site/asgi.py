"""ASGI entry point of the test Django site, as ``startproject`` writes it."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.integration.django_site.settings")
application = get_asgi_application()
